// Redis leaderboard demo page.
//
// Every piece of data (ids, names, descriptions, error messages) reaches the page through
// textContent or DOM properties, never as markup: a name like <img onerror=...> is shown as
// the text it is.
"use strict";

(function () {
  const POLL_MS = 2000;
  const POLL_FAILING_MS = 4000;
  const FRESH_MS = 4000;

  const $ = (id) => document.getElementById(id);
  const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 6 });

  const view = {
    query: { top: 10, rank: 1, around: 5 },
    version: null,
    fresh: null, // user_id written last, highlighted for a moment
    freshUntil: 0,
    freshTimer: null,
    lookupId: null,
    timer: null,
    inFlight: 0,
    failing: false,
  };

  class ApiError extends Error {
    constructor(message, status) {
      super(message);
      this.status = status;
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
      throw new ApiError(message, response.status);
    }
    return data;
  }

  function formFields(form) {
    const fields = {};
    for (const [name, value] of new FormData(form)) fields[name] = String(value);
    return fields;
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

  function renderTable(table, entries, targetRank) {
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
      if (entry.rank === targetRank) tr.classList.add("is-target");
      if (fresh !== null && entry.user_id === fresh) tr.classList.add("is-fresh");
      const rankCell = el("td", "col-rank");
      const badgeClass = entry.rank <= 3 ? "rank rank-" + entry.rank : "rank";
      rankCell.append(el("span", badgeClass, entry.rank));
      tr.append(rankCell, playerCell(entry), el("td", "col-score", formatScore(entry.score)));
      rows.push(tr);
    }
    tbody.replaceChildren(...rows);
  }

  function render(state) {
    view.version = state.version;
    $("board-key").textContent = state.key;
    $("footer-key").textContent = state.key;
    $("footer-hash").textContent = state.key + ":user:<id>";
    $("stat-size").textContent = numberFormat.format(state.size);
    $("stat-max").textContent = numberFormat.format(state.max_entries);
    const maxInput = $("config-max-entries");
    if (document.activeElement !== maxInput && !maxInput.dataset.touched) {
      maxInput.value = String(state.max_entries);
    }
    renderTable($("top-table"), state.top, null);
    renderTable($("around-table"), state.around, state.query.rank);
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
      banner.textContent = message + " Retrying automatically…";
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
      }
    } catch (err) {
      if (ticket !== view.inFlight) return;
      if (err.status === 400) {
        // The query itself was refused: go back to the defaults.
        view.query = { top: 10, rank: 1, around: 5 };
      } else {
        view.failing = true;
        setLive(false, err.message);
      }
    } finally {
      if (ticket === view.inFlight) schedule();
    }
  }

  // Tries a new query; keeps it only if the server accepts it.
  async function changeQuery(changes, statusId) {
    const query = Object.assign({}, view.query, changes);
    const ticket = ++view.inFlight; // responses of earlier polls are now stale
    try {
      const state = await api("GET", stateUrl(query));
      view.query = state.query;
      setStatus(statusId, null, "");
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
    } catch (err) {
      if (quiet && err.status !== 404) return;
      view.lookupId = null;
      $("lookup-result").hidden = true;
      setStatus("lookup-status", "error", err.message);
    }
  }

  // ---- writes ----------------------------------------------------------------------------

  function describeWrite(result, verb) {
    const entry = result.entry;
    const who = displayName(entry) === entry.user_id ? entry.user_id : displayName(entry) + " (" + entry.user_id + ")";
    if (!result.on_board) {
      return (
        verb + " " + who + " with " + formatScore(entry.score) +
        ", but that is below every kept score, so the board trimmed it right away."
      );
    }
    return verb + " " + who + ": rank " + entry.rank + ", score " + formatScore(entry.score) + ".";
  }

  async function afterWrite(result, statusId, message, what) {
    setStatus(statusId, "ok", message, result.trimmed_user_ids);
    showTrimmed(result.trimmed_user_ids, what);
    await refresh(true);
  }

  function onSubmit(id, handler) {
    const form = $(id);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      busy(form, () => handler(form));
    });
  }

  function setup() {
    onSubmit("upsert-form", async (form) => {
      try {
        const result = await api("POST", "/api/players", formFields(form));
        markFresh(result.entry.user_id);
        await afterWrite(result, "upsert-status", describeWrite(result, "Saved"), "the last save");
      } catch (err) {
        setStatus("upsert-status", "error", err.message);
      }
    });

    onSubmit("increment-form", async (form) => {
      try {
        const result = await api("POST", "/api/increment", formFields(form));
        markFresh(result.entry.user_id);
        await afterWrite(result, "increment-status", describeWrite(result, "Updated"), "the last increment");
      } catch (err) {
        setStatus("increment-status", "error", err.message);
      }
    });

    onSubmit("lookup-form", async (form) => {
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
          $("lookup-result").hidden = true;
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

    onSubmit("config-form", async (form) => {
      try {
        const result = await api("POST", "/api/config", formFields(form));
        delete $("config-max-entries").dataset.touched;
        const message = "The board now keeps at most " + numberFormat.format(result.max_entries) + " players.";
        await afterWrite(result, "config-status", message, "the new limit");
      } catch (err) {
        setStatus("config-status", "error", err.message);
      }
    });

    onSubmit("reset-form", async () => {
      try {
        const result = await api("POST", "/api/reset", {});
        delete $("config-max-entries").dataset.touched;
        view.lookupId = null;
        $("lookup-result").hidden = true;
        const message = "Board reset: " + result.size + " sample players, at most " + result.max_entries + ".";
        await afterWrite(result, "reset-status", message, "the reset");
      } catch (err) {
        setStatus("reset-status", "error", err.message);
      }
    });

    onSubmit("top-form", async () => {
      await changeQuery({ top: $("top-count").value }, "top-status");
    });

    onSubmit("around-form", async () => {
      await changeQuery({ rank: $("around-rank").value, around: $("around-count").value }, "around-status");
    });

    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) refresh(false);
      else clearTimeout(view.timer);
    });

    refresh(true);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
