// Redis leaderboard demo page.
//
// Every piece of data (ids, names, descriptions, error messages) reaches the page through
// textContent or DOM properties, never as markup: a name like <img onerror=...> is shown as
// the text it is.
"use strict";

(function () {
  const POLL_MS = 2000;
  const SEASONS_MS = 30000; // live: how often the seasons card refreshes without a change
  const POLL_FAILING_MS = 4000;
  const FRESH_MS = 4000;
  const FEED_ITEMS = 8;
  const METRICS_MS = 2000; // the latency panel's refresh

  const $ = (id) => document.getElementById(id);
  const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 6 });
  const msFormat = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3 });

  // The query's parameters, the state's fields that answer them, and their inputs.
  const QUERY = {
    top: { field: "top_count", input: "top-count" },
    rank: { field: "around_rank", input: "around-rank" },
    around: { field: "around_count", input: "around-count" },
  };

  const view = {
    query: { top: 5, rank: 3, around: 5 }, // the guide's defaults
    version: null,
    fresh: null, // user_id written last, highlighted for a moment
    freshUntil: 0,
    freshTimer: null,
    lookupId: null,
    page: 1, // the top table's page (its size: the "Show" count)
    live: false, // the event stream is open (guards): no polling
    tab: "daily", // the seasons card's tab: daily, weekly or all
    seasons: null, // the last /api/periods answer
    league: null, // the last /api/league answer, and when it came
    leagueAt: 0,
    seasonsAt: 0,
    totalPages: 1,
    timer: null,
    inFlight: 0,
    failing: false,
    metricsTimer: null, // the latency panel's next refresh
    metricsBusy: false,
    metricsOff: false, // the server has no metrics (404): nothing to poll until it restarts
  };

  class ApiError extends Error {
    constructor(message, status, field) {
      super(message);
      this.status = status;
      this.field = field; // the API name of the field at fault, if the server named one
    }
  }

  // ---- helpers -------------------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function formatScore(score) {
    return typeof score === "number" ? numberFormat.format(score) : String(score);
  }

  // A score that may break after any thousands separator, so that a long one (1e15) wraps
  // in a narrow column instead of squeezing the player's name.
  function scoreNodes(score) {
    const nodes = [];
    formatScore(score).split(",").forEach((group, i) => {
      if (i > 0) nodes.push(document.createTextNode(","), document.createElement("wbr"));
      nodes.push(document.createTextNode(group));
    });
    return nodes;
  }

  // A sentence, ended with a full stop unless it already ends with one.
  function sentence(text) {
    return /[.!?…]$/.test(text) ? text : text + ".";
  }

  function labelOf(inputId) {
    return $(inputId).labels[0].textContent.trim();
  }

  function displayName(entry) {
    const meta = entry.metadata || {};
    return meta.name ? String(meta.name) : String(entry.user_id);
  }

  function avatarClass(userId) {
    let hash = 0;
    for (const ch of String(userId)) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
    return "avatar avatar-" + (hash % 8);
  }

  function initial(text) {
    const first = Array.from(text.trim())[0];
    return first ? first.toUpperCase() : "?";
  }

  async function api(method, path, fields) {
    const init = { method, headers: { Accept: "application/json" }, cache: "no-store" };
    if (fields) init.body = new URLSearchParams(fields); // form-encoded, as the guide's page
    let response;
    try {
      response = await fetch(path, init);
    } catch (err) {
      throw new ApiError("The demo server cannot be reached.", 0);
    }
    let data = null;
    try {
      data = await response.json();
    } catch (err) {
      data = null;
    }
    if (!response.ok) {
      const message = data && typeof data.error === "string" ? data.error : "HTTP " + response.status;
      throw new ApiError(message, response.status, data && data.field);
    }
    return data;
  }

  // What the user filled in: blank fields, and fields folded away in a closed <details>,
  // are not sent.
  function formFields(form) {
    const fields = {};
    for (const control of form.elements) {
      if (!control.name || control.closest("details:not([open])")) continue;
      const value = String(control.value).trim();
      if (value) fields[control.name] = value;
    }
    return fields;
  }

  // Marks the input the server's error is about (and clears earlier marks).
  function markInvalid(form, field) {
    for (const control of form.elements) {
      if (control.name && control.name === field) {
        control.setAttribute("aria-invalid", "true");
        control.closest("details")?.setAttribute("open", "");
        control.focus();
      } else {
        control.removeAttribute("aria-invalid");
      }
    }
  }

  function chipList(ids) {
    const list = el("ul", "chips");
    for (const id of ids) list.append(el("li", "chip", id));
    return list;
  }

  function setStatus(id, kind, message, trimmed) {
    const node = $(id);
    node.replaceChildren();
    node.className = "form-status" + (kind ? " is-" + kind : "");
    if (!message) return;
    node.append(el("div", null, message));
    if (trimmed && trimmed.length) {
      node.append(el("div", "trim-label", "Trimmed from the board:"));
      node.append(chipList(trimmed));
    }
  }

  function showTrimmed(ids, what) {
    const notice = $("trim-notice");
    if (!ids || !ids.length) {
      notice.hidden = true;
      return;
    }
    $("trim-notice-label").textContent = "Trimmed by " + what + ":";
    $("trim-notice-list").replaceChildren(...ids.map((id) => el("li", "chip", id)));
    notice.hidden = false;
  }

  function markFresh(userId) {
    view.fresh = userId;
    view.freshUntil = Date.now() + FRESH_MS;
    clearTimeout(view.freshTimer);
    view.freshTimer = setTimeout(() => {
      view.fresh = null;
      document.querySelectorAll("tr.is-fresh").forEach((row) => row.classList.remove("is-fresh"));
    }, FRESH_MS);
  }

  async function busy(form, work) {
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => (b.disabled = true));
    try {
      await work();
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  }

  // ---- rendering -----------------------------------------------------------------------

  function playerCell(entry) {
    const td = el("td", "col-player");
    const wrap = el("div", "player");
    const name = displayName(entry);
    wrap.append(el("span", avatarClass(entry.user_id), initial(name)));
    const text = el("div", "player-text");
    text.append(el("div", "player-name", name));
    text.append(el("div", "player-id", entry.user_id));
    const meta = entry.metadata || {};
    if (meta.description) text.append(el("div", "player-desc", meta.description));
    wrap.append(text);
    td.append(wrap);
    return td;
  }

  function renderTable(table, entries, targetRank, targetUserId) {
    const tbody = table.tBodies[0];
    const rows = [];
    if (!entries.length) {
      const tr = el("tr", "empty");
      const td = el("td", null, "No players on the board yet.");
      td.colSpan = 3;
      tr.append(td);
      rows.push(tr);
    }
    const fresh = Date.now() < view.freshUntil ? view.fresh : null;
    for (const entry of entries) {
      const tr = el("tr");
      tr.dataset.userId = entry.user_id;
      if (entry.rank === targetRank || entry.user_id === targetUserId) tr.classList.add("is-target");
      if (fresh !== null && entry.user_id === fresh) tr.classList.add("is-fresh");
      const rankCell = el("td", "col-rank");
      const badgeClass = entry.rank <= 3 ? "rank rank-" + entry.rank : "rank";
      rankCell.append(el("span", badgeClass, entry.rank));
      const scoreCell = el("td", "col-score");
      scoreCell.append(...scoreNodes(entry.score));
      tr.append(rankCell, playerCell(entry), scoreCell);
      rows.push(tr);
    }
    tbody.replaceChildren(...rows);
  }

  function render(state) {
    view.version = state.version;
    $("board-key").textContent = state.leaderboard_key;
    $("footer-key").textContent = state.leaderboard_key;
    $("footer-hash").textContent = state.leaderboard_key + ":user:<id>";
    $("stat-size").textContent = numberFormat.format(state.size);
    $("stat-max").textContent = numberFormat.format(state.max_entries);
    const maxInput = $("config-max-entries");
    if (document.activeElement !== maxInput && !maxInput.dataset.touched) {
      maxInput.value = String(state.max_entries);
    }
    view.totalPages = Math.max(1, Math.ceil(state.size / state.top_count));
    if (view.page > view.totalPages) view.page = view.totalPages;
    if (view.page === 1) {
      renderTable($("top-table"), state.top_entries, null);
      renderPager();
    } else {
      loadTopPage();
    }
    renderTable($("around-table"), state.around_entries, state.around_rank);
    loadHistogram();
    loadSeasons();
    loadLeague("GET", null, true);
  }

  // ---- seasons: Today / This week / All time (one group write feeds them) ------------------

  async function loadSeasons() {
    try {
      const params = new URLSearchParams({ top: String(view.query.top) });
      view.seasons = await api("GET", "/api/periods?" + params.toString());
      view.seasonsAt = Date.now();
      renderSeason();
    } catch (err) {
      $("season-reset").textContent = sentence(err.message);
    }
  }

  function untilText(seconds) {
    const s = Math.max(0, Math.round(seconds));
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d) return d + " d " + h + " h";
    if (h) return h + " h " + m + " min";
    if (m) return m + " min " + (s % 60) + " s";
    return (s % 60) + " s";
  }

  function renderSeason() {
    if (!view.seasons) return;
    const tab = view.seasons.tabs.find((t) => t.name === view.tab) || view.seasons.tabs[0];
    for (const button of document.querySelectorAll("#seasons-card .tab")) {
      const selected = button.dataset.tab === tab.name;
      button.setAttribute("aria-selected", selected ? "true" : "false");
      if (selected) $("season-panel").setAttribute("aria-labelledby", button.id);
    }
    if (tab.seconds_to_reset === null) {
      $("season-reset").textContent = "All time: never resets (" + tab.key + ").";
    } else {
      const left = tab.seconds_to_reset - (Date.now() - view.seasonsAt) / 1000;
      $("season-reset").textContent =
        tab.label + " (" + tab.period + ") resets in " + untilText(left) + ", at " +
        new Date(tab.next_reset).toLocaleString() + ".";
    }
    $("season-reset").dataset.key = tab.key;
    renderTable($("season-table"), tab.entries, null);
  }

  // ---- the league: a player's cohort, zones coloured, the time to settlement ----------------

  const ZONES = { promote: "Promotion", stay: "Stays", demote: "Relegation" };

  // method "GET" by the card's View button (explicit: its status is cleared) or by a refresh
  // of the page (quiet: a status shown stays); "POST" plays a match. True if it succeeded.
  async function loadLeague(method, fields, quiet) {
    const userId = $("league-user-id").value.trim();
    try {
      if (method === "POST") {
        view.league = await api("POST", "/api/league", fields);
        const done = view.league.submitted;
        setStatus("league-status", "ok",
          "Played: " + done.user_id + " is #" + done.rank + " of cohort " + done.cohort +
          " in " + done.tier + ".");
      } else {
        const params = new URLSearchParams(userId ? { user_id: userId } : {});
        view.league = await api("GET", "/api/league?" + params.toString());
        if (!quiet) setStatus("league-status", null, "");
      }
      view.leagueAt = Date.now();
      renderLeague();
      return true;
    } catch (err) {
      if (quiet) return false; // the page's own banner tells when the server is unreachable
      setStatus("league-status", "error", sentence(err.message));
      if (err.field) markInvalid($("league-form"), err.field);
      return false;
    }
  }

  function renderLeague() {
    const league = view.league;
    if (!league) return;
    const left = league.seconds_to_settlement - (Date.now() - view.leagueAt) / 1000;
    const standings = league.standings;
    const tbody = $("league-table").tBodies[0];
    if (!standings) {
      $("league-summary").textContent = (league.user_id ? league.user_id + " has not played" :
        "Nobody chosen") + " this week (" + league.period + "); settles in " + untilText(left) + ".";
      const tr = el("tr", "empty");
      const td = el("td", null, "Play a match to join a cohort.");
      td.colSpan = 4;
      tr.append(td);
      tbody.replaceChildren(tr);
    } else {
      $("league-summary").textContent =
        "Tier " + standings.tier + ", cohort " + standings.cohort + " (" + standings.size +
        " of 5), " + league.period + ": settles in " + untilText(left) + ", at " +
        new Date(league.next_settlement).toLocaleString() + ".";
      const rows = standings.entries.map((entry) => {
        const tr = el("tr", "zone-" + entry.zone);
        tr.dataset.userId = entry.user_id;
        tr.dataset.zone = entry.zone;
        if (entry.user_id === league.user_id) tr.classList.add("is-target");
        const rankCell = el("td", "col-rank");
        rankCell.append(el("span", "rank", entry.rank === null ? "–" : entry.rank));
        const scoreCell = el("td", "col-score");
        if (entry.score === null) scoreCell.textContent = "–";
        else scoreCell.append(...scoreNodes(entry.score));
        tr.append(rankCell, playerCell(entry), scoreCell, el("td", "col-zone", ZONES[entry.zone] || entry.zone));
        return tr;
      });
      tbody.replaceChildren(...rows);
    }
    $("league-tiers").textContent = "Players per tier: " + league.tiers.slice().reverse()
      .map((t) => t.tier + " " + numberFormat.format(t.players)).join(", ") + ".";
  }

  // ---- the top table's pages ----------------------------------------------------------------

  function renderPager() {
    $("top-page-label").textContent =
      "page " + numberFormat.format(view.page) + " of " + numberFormat.format(view.totalPages);
    $("top-prev").disabled = view.page <= 1;
    $("top-next").disabled = view.page >= view.totalPages;
  }

  // Page 1 is the guide's top table (from the state); later pages come from /api/page, with
  // the "Show" count as their size.
  async function loadTopPage() {
    const page = view.page;
    try {
      const params = new URLSearchParams({ page: String(page), page_size: String(view.query.top) });
      const data = await api("GET", "/api/page?" + params.toString());
      if (page !== view.page) return; // another page was asked for meanwhile
      view.totalPages = Math.max(1, data.total_pages);
      if (!data.entries.length && page > 1) {
        view.page = view.totalPages; // the board shrank under us
        if (view.page !== page) return loadTopPage();
      }
      renderTable($("top-table"), data.entries, null);
      renderPager();
    } catch (err) {
      setStatus("top-status", "error", err.message);
    }
  }

  function goToPage(page) {
    view.page = Math.min(Math.max(1, page), view.totalPages);
    setStatus("top-status", null, "");
    if (view.page === 1) refresh(true);
    else loadTopPage();
  }

  // ---- the histogram (SVG made here, every label as text) -------------------------------------

  const SVG_NS = "http://www.w3.org/2000/svg";

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  async function loadHistogram() {
    try {
      const data = await api("GET", "/api/histogram?bins=10");
      drawHistogram(data.bins);
    } catch (err) {
      $("histogram-caption").textContent = sentence(err.message);
    }
  }

  function drawHistogram(bins) {
    const chart = $("histogram");
    const width = 600, height = 240, left = 8, right = 8, top = 20, bottom = 36;
    const nodes = [];
    if (!bins.length) {
      nodes.push(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle" }, "No players on the board yet."));
      chart.replaceChildren(...nodes);
      $("histogram-caption").textContent = "Players per score range, lowest scores on the left.";
      return;
    }
    const largest = Math.max(1, ...bins.map((b) => b.count));
    const slot = (width - left - right) / bins.length;
    const plot = height - top - bottom;
    bins.forEach((bin, i) => {
      const barHeight = bin.count ? Math.max(2, (bin.count / largest) * plot) : 0;
      const x = left + i * slot;
      const y = top + plot - barHeight;
      const close = i === bins.length - 1 ? "]" : ")";
      const range = "[" + formatScore(bin.min) + ", " + formatScore(bin.max) + close;
      const players = bin.count === 1 ? " player" : " players";
      const rect = svg("rect", {
        class: "bar", x: x + 2, y: y, width: Math.max(1, slot - 4), height: barHeight,
        "data-count": bin.count, "data-min": bin.min, "data-max": bin.max,
      });
      rect.append(svg("title", {}, range + ": " + numberFormat.format(bin.count) + players));
      nodes.push(rect);
      if (bin.count) {
        nodes.push(svg("text", { class: "bar-count", x: x + slot / 2, y: y - 4, "text-anchor": "middle" }, numberFormat.format(bin.count)));
      }
    });
    nodes.push(svg("line", { class: "axis", x1: left, x2: width - right, y1: top + plot + 0.5, y2: top + plot + 0.5 }));
    nodes.push(svg("text", { x: left, y: height - 12, "text-anchor": "start" }, formatScore(bins[0].min)));
    nodes.push(svg("text", { x: width - right, y: height - 12, "text-anchor": "end" }, formatScore(bins[bins.length - 1].max)));
    chart.replaceChildren(...nodes);
    const total = bins.reduce((sum, b) => sum + b.count, 0);
    $("histogram-caption").textContent =
      numberFormat.format(total) + (total === 1 ? " player" : " players") + " in " + bins.length +
      " equal score ranges from " + formatScore(bins[0].min) + " to " + formatScore(bins[bins.length - 1].max) + ".";
  }

  // ---- latency: calls, p50 and p99 per board method, from the library's metrics --------------

  const COUNTER_LABELS = [
    ["round_trips", "round trips"],
    ["commands", "commands"],
    ["reconnects", "reconnects"],
    ["connection_lost", "connections lost"],
    ["timeouts", "timeouts"],
  ];

  function scheduleMetrics() {
    clearTimeout(view.metricsTimer);
    if (document.hidden || view.metricsOff) return;
    view.metricsTimer = setTimeout(loadMetrics, METRICS_MS);
  }

  async function loadMetrics() {
    if (view.metricsBusy) return;
    view.metricsBusy = true;
    try {
      renderMetrics(await api("GET", "/api/metrics"));
    } catch (err) {
      // 404: metrics are off, and the message says why (and how to get them). Other errors:
      // the server is unreachable, which the banner says; try again later.
      if (err.status === 404) {
        view.metricsOff = true;
        latencyMessage(sentence(err.message.charAt(0).toUpperCase() + err.message.slice(1)));
        $("latency-counters").textContent = "";
      }
    } finally {
      view.metricsBusy = false;
      scheduleMetrics();
    }
  }

  function latencyMessage(text) {
    const tr = el("tr", "empty");
    const td = el("td", null, text);
    td.colSpan = 5;
    tr.append(td);
    $("latency-table").tBodies[0].replaceChildren(tr);
  }

  function msText(value) {
    return value === null || value === undefined ? "–" : msFormat.format(value);
  }

  function renderMetrics(data) {
    if (!data.methods.length) {
      latencyMessage("No board calls yet.");
    } else {
      const rows = data.methods.map((row) => {
        const tr = el("tr");
        tr.dataset.method = row.method;
        const errors = el("td", "col-num col-errors", numberFormat.format(row.errors));
        if (row.errors) errors.classList.add("has-errors");
        const method = el("td", "col-method");
        // A long name (get_around_rank) may break after an underscore in a narrow column.
        row.method.split("_").forEach((part, i) => {
          if (i > 0) method.append(document.createTextNode("_"), document.createElement("wbr"));
          method.append(document.createTextNode(part));
        });
        if (row.boards && row.boards.length) method.title = "Called on " + row.boards.join(", ");
        tr.append(
          method,
          el("td", "col-num col-calls", numberFormat.format(row.calls)),
          el("td", "col-num col-p50", msText(row.p50_ms)),
          el("td", "col-num col-p99", msText(row.p99_ms)),
          errors,
        );
        return tr;
      });
      $("latency-table").tBodies[0].replaceChildren(...rows);
    }
    const counters = data.counters || {};
    $("latency-counters").textContent = "Clients: " + COUNTER_LABELS
      .map(([name, label]) => numberFormat.format(counters[name] || 0) + " " + label)
      .join(", ") + ".";
  }

  function setLive(ok, message) {
    const live = $("live");
    live.classList.toggle("is-live", ok);
    live.classList.toggle("is-down", !ok);
    $("live-text").textContent = ok ? "Live" : "Unavailable";
    const banner = $("banner");
    if (ok) {
      banner.hidden = true;
      banner.textContent = "";
    } else {
      banner.textContent = sentence(message) + " Retrying automatically…";
      banner.hidden = false;
    }
  }

  // ---- state polling ---------------------------------------------------------------------

  function stateUrl(query) {
    return "/api/state?" + new URLSearchParams(query).toString();
  }

  function schedule() {
    clearTimeout(view.timer);
    if (document.hidden) return;
    if (view.live) {
      // Live: the event stream says when the board changed; the seasons' countdown and a
      // period that ended without a write still move on.
      view.timer = setTimeout(() => loadSeasons().finally(schedule), SEASONS_MS);
      return;
    }
    view.timer = setTimeout(() => refresh(false), view.failing ? POLL_FAILING_MS : POLL_MS);
  }

  // Fetches the state for the current query; re-renders when it changed (or when forced).
  async function refresh(force) {
    const ticket = ++view.inFlight;
    try {
      const state = await api("GET", stateUrl(view.query));
      if (ticket !== view.inFlight) return; // a newer refresh has started
      view.failing = false;
      setLive(true);
      if (force || state.version !== view.version) {
        render(state);
        if (view.lookupId !== null && !force) lookup(view.lookupId, true);
      } else {
        loadSeasons(); // a period may have ended; the countdown moves on
      }
    } catch (err) {
      if (ticket !== view.inFlight) return;
      view.failing = true;
      setLive(false, err.message);
    } finally {
      if (ticket === view.inFlight) schedule();
    }
  }

  // Shows a new view. The server uses its default for a value that is not a whole number of
  // at least 1, and lowers one above its limit; the inputs then show what it used, and the
  // status says why, in the page's words.
  async function changeQuery(params, statusId) {
    const query = Object.assign({}, view.query);
    for (const param of params) query[param] = $(QUERY[param].input).value;
    const ticket = ++view.inFlight; // responses of earlier polls are now stale
    try {
      const state = await api("GET", stateUrl(query));
      const notes = [];
      for (const [param, { field, input }] of Object.entries(QUERY)) {
        const used = state[field];
        view.query[param] = used;
        if (!params.includes(param) || Number(query[param]) === used) continue;
        $(input).value = String(used);
        const label = labelOf(input);
        const usedText = numberFormat.format(used);
        notes.push(
          field in state.clamped
            ? label + " can be at most " + usedText + ", so " + usedText + " is used."
            : label + " must be a whole number of at least 1, so the default " + usedText + " is used."
        );
      }
      setStatus(statusId, notes.length ? "error" : null, notes.join(" "));
      if (ticket === view.inFlight) {
        render(state);
        setLive(true);
      }
    } catch (err) {
      setStatus(statusId, "error", err.message);
    } finally {
      if (ticket === view.inFlight) schedule();
    }
  }

  // ---- player lookup -----------------------------------------------------------------------

  function renderProfile(entry) {
    const dl = $("lookup-result");
    const meta = entry.metadata || {};
    const rows = [
      ["Player id", entry.user_id],
      ["Rank", entry.rank],
      ["Score", formatScore(entry.score)],
      ["Name", meta.name || "—"],
      ["Description", meta.description || "—"],
    ];
    for (const key of Object.keys(meta).sort()) {
      if (key !== "name" && key !== "description") rows.push([key, meta[key]]);
    }
    const nodes = [];
    for (const [label, value] of rows) nodes.push(el("dt", null, label), el("dd", null, value));
    dl.replaceChildren(...nodes);
    dl.hidden = false;
  }

  async function lookup(userId, quiet) {
    try {
      const data = await api("GET", "/api/players/" + encodeURIComponent(userId));
      view.lookupId = userId;
      renderProfile(data.entry);
      if (!quiet) setStatus("lookup-status", null, "");
      const params = new URLSearchParams({ user_id: userId, count: "5" });
      const around = await api("GET", "/api/around-user?" + params.toString());
      if (view.lookupId !== userId) return;
      renderTable($("lookup-around-table"), around.entries, null, userId);
      $("lookup-around").hidden = false;
    } catch (err) {
      if (quiet && err.status !== 404) return;
      view.lookupId = null;
      hideLookup();
      setStatus("lookup-status", "error", err.message);
    }
  }

  function hideLookup() {
    $("lookup-result").hidden = true;
    $("lookup-around").hidden = true;
  }

  // ---- writes ----------------------------------------------------------------------------

  function describeWrite(result, verb) {
    const entry = result.entry;
    const who = displayName(entry) === entry.user_id ? entry.user_id : displayName(entry) + " (" + entry.user_id + ")";
    if (!("rank" in entry)) {
      return (
        verb + " " + who + " with " + formatScore(entry.score) +
        ", but that is below every kept score, so the board trimmed it right away."
      );
    }
    return verb + " " + who + ": rank " + entry.rank + ", score " + formatScore(entry.score) + ".";
  }

  async function afterWrite(trimmed, statusId, message, what) {
    setStatus(statusId, "ok", message, trimmed);
    showTrimmed(trimmed, what);
    await refresh(true);
  }

  // Runs a form's handler; an error is shown in the form's status, its field marked.
  function onSubmit(id, statusId, handler) {
    const form = $(id);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      busy(form, async () => {
        markInvalid(form, null);
        try {
          await handler(form);
        } catch (err) {
          setStatus(statusId, "error", err.message);
          markInvalid(form, err.field);
        }
      });
    });
  }

  function setup() {
    onSubmit("upsert-form", "upsert-status", async (form) => {
      const result = await api("POST", "/api/players", formFields(form));
      markFresh(result.entry.user_id);
      const message = describeWrite(result, "Saved");
      await afterWrite(result.entry.trimmed_user_ids, "upsert-status", message, "the last save");
    });

    onSubmit("increment-form", "increment-status", async (form) => {
      const result = await api("POST", "/api/increment", formFields(form));
      // The name and description were for this player: never resend them for the next one.
      $("increment-name").value = "";
      $("increment-description").value = "";
      markFresh(result.entry.user_id);
      const message = describeWrite(result, "Updated");
      await afterWrite(result.entry.trimmed_user_ids, "increment-status", message, "the last increment");
    });

    onSubmit("lookup-form", "lookup-status", async () => {
      const userId = $("lookup-user-id").value.trim();
      if (!userId) {
        setStatus("lookup-status", "error", "Enter a player id.");
        return;
      }
      await lookup(userId, false);
    });

    $("delete-button").addEventListener("click", () => {
      const form = $("lookup-form");
      busy(form, async () => {
        const userId = $("lookup-user-id").value.trim();
        if (!userId) {
          setStatus("lookup-status", "error", "Enter a player id.");
          return;
        }
        try {
          await api("DELETE", "/api/players/" + encodeURIComponent(userId));
          view.lookupId = null;
          hideLookup();
          setStatus("lookup-status", "ok", "Deleted " + userId + " and its metadata.");
          await refresh(true);
        } catch (err) {
          setStatus("lookup-status", "error", err.message);
        }
      });
    });

    $("config-max-entries").addEventListener("input", (event) => {
      event.target.dataset.touched = "1";
    });

    onSubmit("config-form", "config-status", async (form) => {
      const result = await api("POST", "/api/config", formFields(form));
      delete $("config-max-entries").dataset.touched;
      const message = "The board now keeps at most " + numberFormat.format(result.max_entries) + " players.";
      await afterWrite(result.trimmed_user_ids, "config-status", message, "the new limit");
    });

    onSubmit("reset-form", "reset-status", async () => {
      const result = await api("POST", "/api/reset", {});
      delete $("config-max-entries").dataset.touched;
      view.lookupId = null;
      hideLookup();
      const message = "Board reset: " + result.size + " sample players, at most " + result.max_entries + ".";
      await afterWrite(result.trimmed_user_ids, "reset-status", message, "the reset");
    });

    onSubmit("top-form", "top-status", () => {
      view.page = 1; // a new page size starts from the top
      return changeQuery(["top"], "top-status");
    });

    for (const button of document.querySelectorAll("#seasons-card .tab")) {
      button.addEventListener("click", () => {
        view.tab = button.dataset.tab;
        renderSeason();
      });
    }
    $("top-prev").addEventListener("click", () => goToPage(view.page - 1));
    $("top-next").addEventListener("click", () => goToPage(view.page + 1));

    onSubmit("around-form", "around-status", () => changeQuery(["rank", "around"], "around-status"));

    onSubmit("league-form", "league-status", () => loadLeague("GET"));
    $("league-play").addEventListener("click", () => {
      const form = $("league-form");
      busy(form, async () => {
        markInvalid(form, null);
        if (await loadLeague("POST", formFields(form))) await refresh(true);
      });
    });

    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) {
        refresh(false);
        if (!view.metricsOff) loadMetrics();
      } else {
        clearTimeout(view.timer);
        clearTimeout(view.metricsTimer);
      }
    });

    refresh(true);
    loadMetrics();
    listen();
  }

  // ---- live events (guards) -----------------------------------------------------------------
  // Server-Sent Events from the board's change stream: each change (a write, a deletion, a
  // trim, a page of a clear) refreshes the view at once and adds a line to the feed (as text). Without them (404: the board has no events, or an
  // old browser) the page keeps polling every 2 s; while the stream reconnects, it polls too.

  function addFeedItem(item) {
    const list = $("feed-list");
    const li = document.createElement("li");
    li.textContent = item.text; // names are data: never markup
    li.dataset.kind = item.kind || "score"; // score, delete, trim or clear
    list.insertBefore(li, list.firstChild);
    while (list.children.length > FEED_ITEMS) list.removeChild(list.lastChild);
    $("feed-card").hidden = false;
  }

  function listen() {
    if (typeof EventSource !== "function") return;
    const source = new EventSource("/api/events");
    source.onopen = () => {
      view.live = true;
      document.body.dataset.updates = "events";
      clearTimeout(view.timer);
      refresh(false); // what changed while the stream was down
    };
    source.onmessage = (message) => {
      let item = null;
      try {
        item = JSON.parse(message.data);
      } catch (err) {
        return;
      }
      addFeedItem(item);
      refresh(false);
    };
    source.onerror = () => {
      view.live = false; // poll meanwhile; EventSource reconnects unless it was refused
      document.body.dataset.updates = "polling";
      if (source.readyState === EventSource.CLOSED) source.close();
      schedule();
    };
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
