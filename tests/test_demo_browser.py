"""The demo page end to end in headless Chromium (Debian's ``chromium``, driven by Playwright
for Python): every form, the tables, markup in names shown as text, live updates from other
clients, a Redis outage, and screenshots in tests/artifacts/ (desktop and phone).

Playwright's sync API runs its own event loop in this thread; these tests are plain functions,
so pytest-asyncio (strict mode) never has a loop running here at the same time.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

import redis_leaderboard
from redis_leaderboard.demo import DemoServer, make_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)",
    ),
]

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright for Python is not installed (pip install playwright)"
)
expect = sync_api.expect

SEEDED = [
    ("1", "Priya", "player-4", "1,435"),
    ("2", "Mina", "player-2", "1,310"),
    ("3", "Rin", "player-6", "1,240"),
    ("4", "Noah", "player-3", "1,175"),
    ("5", "Jules", "player-5", "1,080"),
    ("6", "Avery", "player-1", "980"),
]

ROWS_JS = """rows => rows.map(r => {
  const q = s => { const n = r.querySelector(s); return n ? n.textContent : ""; };
  return [q(".rank"), q(".player-name"), q(".player-id"), q(".col-score")];
})"""


@dataclass
class Demo:
    server: DemoServer
    board: redis_leaderboard.RedisLeaderboard
    thread: threading.Thread
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
        self.board.redis.close()


def start_demo(host: str, port: int, key: str) -> Demo:
    client = redis_leaderboard.Client(
        host=host, port=port, socket_timeout=3, socket_connect_timeout=3
    )
    board = redis_leaderboard.RedisLeaderboard(client, key=key, max_entries=100)
    server = make_server(board, "127.0.0.1", 0)
    server.app.seed_if_empty()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return Demo(server, board, thread)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        # launch() gives every run a fresh temporary profile.
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture
def demo(redis_server: Any, board_key: str) -> Iterator[Demo]:
    running = start_demo(redis_server.host, redis_server.port, board_key)
    yield running
    running.close()


class PageErrors:
    """Script errors and console errors (CSP violations among them) seen by a page."""

    def __init__(self, page: Any) -> None:
        self.messages: list[str] = []
        page.on("pageerror", lambda exc: self.messages.append(f"pageerror: {exc}"))
        page.on("console", self._console)

    def _console(self, message: Any) -> None:
        # Chromium logs every 4xx/5xx fetch; the tests cause those on purpose.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.messages.append(message.text)


def open_page(browser: Any, url: str, **context_options: Any) -> tuple[Any, Any, PageErrors]:
    context = browser.new_context(**context_options)
    page = context.new_page()
    errors = PageErrors(page)
    page.goto(url)
    return context, page, errors


@pytest.fixture
def page(browser: Any, demo: Demo) -> Iterator[Any]:
    context, page, errors = open_page(browser, demo.url, viewport={"width": 1280, "height": 900})
    expect(page.locator("#top-table tbody tr")).to_have_count(5)
    yield page
    context.close()
    assert errors.messages == []


def rows(page: Any, table: str) -> list[tuple[str, str, str, str]]:
    return [tuple(r) for r in page.eval_on_selector_all(f"#{table} tbody tr", ROWS_JS)]


def expect_rows(page: Any, table: str, expected: list[tuple[str, str, str, str]]) -> None:
    locator = page.locator(f"#{table} tbody tr")
    expect(locator).to_have_count(len(expected))
    expect(locator.locator(".player-id")).to_have_text([r[2] for r in expected])
    assert rows(page, table) == expected


def test_the_page_opens_on_the_six_sample_players_with_the_guides_views(
    page: Any, demo: Demo
) -> None:
    # The guide's views: the top 5, and 5 around rank 3.
    expect(page.locator("#top-count")).to_have_value("5")
    expect(page.locator("#around-rank")).to_have_value("3")
    expect(page.locator("#around-count")).to_have_value("5")
    expect_rows(page, "top-table", SEEDED[:5])
    expect_rows(page, "around-table", SEEDED[:5])
    expect(page.locator("#around-table tbody tr.is-target .player-id")).to_have_text("player-6")
    expect(page.locator("#stat-size")).to_have_text("6")
    expect(page.locator("#stat-max")).to_have_text("100")
    expect(page.locator("#live-text")).to_have_text("Live")
    expect(page.locator("#board-key")).to_have_text(demo.board.key)
    expect(page.locator("#config-max-entries")).to_have_value("100")
    expect(page.locator("#top-table .player-desc")).to_have_text(
        [
            "Current pace-setter with a ruthless endgame.",
            "Always finds a way into the top three.",
            "Moves fast after every weekly reset.",
            "Takes big swings and occasionally lands them.",
            "Quietly consistent and hard to catch.",
        ]
    )


def test_every_form_changes_the_board(page: Any) -> None:
    # Add a player.
    page.fill("#upsert-user-id", "player-7")
    page.fill("#upsert-score", "1500")
    page.fill("#upsert-name", "Zed")
    page.fill("#upsert-description", "Fresh face")
    page.get_by_role("button", name="Save player").click()
    expect(page.locator("#upsert-status")).to_have_text(
        "Saved Zed (player-7): rank 1, score 1,500."
    )
    expect(page.locator("#stat-size")).to_have_text("7")
    expect_rows(page, "top-table", [("1", "Zed", "player-7", "1,500"), *renumber(SEEDED[:4], 2)])
    expect(page.locator("#top-table tbody tr").first).to_have_class("is-fresh")

    # Increment a score.
    page.fill("#increment-user-id", "player-1")
    page.fill("#increment-amount", "500")
    page.get_by_role("button", name="Add to score").click()
    expect(page.locator("#increment-status")).to_have_text(
        "Updated Avery (player-1): rank 2, score 1,480."
    )
    expect(page.locator("#top-table tbody tr").nth(1).locator(".player-name")).to_have_text("Avery")
    expect(page.locator("#top-table tbody tr").nth(1).locator(".player-desc")).to_have_text(
        "Steady climber who never wastes a turn."
    )

    # Top N.
    page.fill("#top-count", "3")
    page.locator("#top-form").get_by_role("button", name="View").click()
    expect_rows(
        page,
        "top-table",
        [
            ("1", "Zed", "player-7", "1,500"),
            ("2", "Avery", "player-1", "1,480"),
            ("3", "Priya", "player-4", "1,435"),
        ],
    )

    # Around a rank.
    page.fill("#around-rank", "5")
    page.fill("#around-count", "3")
    page.locator("#around-form").get_by_role("button", name="View").click()
    expect_rows(
        page,
        "around-table",
        [
            ("4", "Mina", "player-2", "1,310"),
            ("5", "Rin", "player-6", "1,240"),
            ("6", "Noah", "player-3", "1,175"),
        ],
    )
    expect(page.locator("#around-table tbody tr.is-target .player-id")).to_have_text("player-6")

    # A count the server cannot use: its default, and the page says why in its own words.
    page.fill("#around-count", "0")
    page.locator("#around-form").get_by_role("button", name="View").click()
    expect(page.locator("#around-status")).to_have_text(
        "Count must be a whole number of at least 1, so the default 5 is used."
    )
    expect(page.locator("#around-count")).to_have_value("5")
    expect(page.locator("#around-table tbody tr")).to_have_count(5)
    page.fill("#around-count", "3")
    page.locator("#around-form").get_by_role("button", name="View").click()
    expect(page.locator("#around-status")).to_be_empty()
    expect(page.locator("#around-table tbody tr")).to_have_count(3)

    # Look up one player.
    page.fill("#lookup-user-id", "player-4")
    page.get_by_role("button", name="Look up").click()
    profile = page.locator("#lookup-result")
    expect(profile).to_be_visible()
    expect(profile.locator("dt")).to_have_text(
        ["Player id", "Rank", "Score", "Name", "Description"]
    )
    expect(profile.locator("dd")).to_have_text(
        ["player-4", "3", "1,435", "Priya", "Current pace-setter with a ruthless endgame."]
    )
    page.fill("#lookup-user-id", "nobody")
    page.get_by_role("button", name="Look up").click()
    expect(page.locator("#lookup-status")).to_have_text("no player with id 'nobody' on the board")
    expect(profile).to_be_hidden()

    # Delete a player.
    page.fill("#lookup-user-id", "player-7")
    page.get_by_role("button", name="Delete player").click()
    expect(page.locator("#lookup-status")).to_have_text("Deleted player-7 and its metadata.")
    expect(page.locator("#top-table .player-id")).to_have_text(["player-1", "player-4", "player-2"])
    expect(page.locator("#stat-size")).to_have_text("6")

    # Lower the size limit: the two lowest are trimmed, and the page says which.
    page.fill("#config-max-entries", "4")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#config-status > div").first).to_have_text(
        "The board now keeps at most 4 players."
    )
    expect(page.locator("#config-status .chip")).to_have_text(["player-5", "player-3"])
    expect(page.locator("#trim-notice-label")).to_have_text("Trimmed by the new limit:")
    expect(page.locator("#trim-notice-list .chip")).to_have_text(["player-5", "player-3"])
    expect(page.locator("#stat-max")).to_have_text("4")
    expect(page.locator("#stat-size")).to_have_text("4")

    # A write that pushes the lowest player out.
    page.fill("#upsert-user-id", "player-8")
    page.fill("#upsert-score", "5000")
    page.fill("#upsert-name", "Kai")
    page.fill("#upsert-description", "")
    page.get_by_role("button", name="Save player").click()
    expect(page.locator("#upsert-status > div").first).to_have_text(
        "Saved Kai (player-8): rank 1, score 5,000."
    )
    expect(page.locator("#upsert-status .chip")).to_have_text(["player-6"])
    expect(page.locator("#trim-notice-list .chip")).to_have_text(["player-6"])

    # A write below every kept score is trimmed at once.
    page.fill("#upsert-user-id", "player-9")
    page.fill("#upsert-score", "3")
    page.fill("#upsert-name", "")
    page.get_by_role("button", name="Save player").click()
    expect(page.locator("#upsert-status > div").first).to_have_text(
        "Saved player-9 with 3, but that is below every kept score, so the board trimmed it "
        "right away."
    )
    expect(page.locator("#upsert-status .chip")).to_have_text(["player-9"])

    # Bad input is refused with the server's message, which names the field as the page does.
    page.fill("#upsert-score", "nan")
    page.get_by_role("button", name="Save player").click()
    status = page.locator("#upsert-status")
    expect(status).to_have_text("Score must be a number, like 1200 or 12.5")
    expect(status).to_have_class("form-status is-error")
    expect(page.locator("#upsert-score")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#upsert-score")).to_be_focused()

    # Reset to the guide's sample players and the startup limit.
    page.get_by_role("button", name="Reset to the six sample players").click()
    expect(page.locator("#reset-status")).to_have_text(
        "Board reset: 6 sample players, at most 100."
    )
    expect(page.locator("#stat-size")).to_have_text("6")
    expect(page.locator("#stat-max")).to_have_text("100")
    expect(page.locator("#config-max-entries")).to_have_value("100")
    expect(page.locator("#trim-notice")).to_be_hidden()
    expect_rows(page, "top-table", SEEDED[:3])
    expect_rows(page, "around-table", SEEDED[3:6])


def renumber(entries: list[tuple[str, str, str, str]], first: int) -> list[tuple[str, ...]]:
    return [(str(first + i), *entry[1:]) for i, entry in enumerate(entries)]


XSS_NAME = '<img src=x onerror="window.__xss=1">'
XSS_DESCRIPTION = "<script>window.__xss=2</script><i>hi</i>"
XSS_ID = "<b>id</b>"


def test_markup_in_ids_names_and_descriptions_is_shown_as_text(page: Any) -> None:
    page.fill("#upsert-user-id", XSS_ID)
    page.fill("#upsert-score", "2000")
    page.fill("#upsert-name", XSS_NAME)
    page.fill("#upsert-description", XSS_DESCRIPTION)
    page.get_by_role("button", name="Save player").click()
    expect(page.locator("#upsert-status")).to_have_text(
        f"Saved {XSS_NAME} ({XSS_ID}): rank 1, score 2,000."
    )
    first = page.locator("#top-table tbody tr").first
    expect(first.locator(".player-name")).to_have_text(XSS_NAME)
    expect(first.locator(".player-id")).to_have_text(XSS_ID)
    expect(first.locator(".player-desc")).to_have_text(XSS_DESCRIPTION)

    page.fill("#lookup-user-id", XSS_ID)
    page.get_by_role("button", name="Look up").click()
    expect(page.locator("#lookup-result dd")).to_have_text(
        [XSS_ID, "1", "2,000", XSS_NAME, XSS_DESCRIPTION]
    )

    page.wait_for_timeout(500)  # time for an onerror to fire, were there an image
    for tag in ("img", "script", "b", "i"):
        assert page.locator(f"main {tag}").count() == 0, tag
    assert page.evaluate("typeof window.__xss") == "undefined"


def test_the_page_follows_changes_made_by_other_clients(page: Any, demo: Demo) -> None:
    # Another client writes straight to the board; the page polls and catches up.
    demo.board.upsert_user("player-9", 9999, {"name": "<svg onload=window.__xss=3>Remote"})
    first = page.locator("#top-table tbody tr").first
    expect(first.locator(".player-name")).to_have_text(
        "<svg onload=window.__xss=3>Remote", timeout=8000
    )
    expect(first.locator(".col-score")).to_have_text("9,999")
    expect(page.locator("#stat-size")).to_have_text("7")
    demo.board.delete_user("player-9")
    expect(first.locator(".player-id")).to_have_text("player-4", timeout=8000)
    assert page.evaluate("typeof window.__xss") == "undefined"


@pytest.mark.slow
def test_a_redis_outage_shows_a_banner_and_the_page_recovers(
    browser: Any, fresh_redis_server: Any
) -> None:
    demo = start_demo(fresh_redis_server.host, fresh_redis_server.port, "demo:browser-outage")
    context, page, errors = open_page(browser, demo.url)
    try:
        expect(page.locator("#top-table tbody tr")).to_have_count(5)
        fresh_redis_server.stop()
        banner = page.locator("#banner")
        expect(banner).to_be_visible(timeout=10000)
        # Says once that it retries: "Redis is unavailable (...). Retrying automatically…".
        expect(banner).to_have_text(
            re.compile(r"^Redis is unavailable \([^)]+\)\. Retrying automatically…$")
        )
        assert banner.inner_text().lower().count("retry") == 1
        expect(page.locator("#live-text")).to_have_text("Unavailable")

        fresh_redis_server.start()  # back, empty
        expect(banner).to_be_hidden(timeout=15000)
        expect(page.locator("#live-text")).to_have_text("Live")
        expect(page.locator("#top-table tbody tr")).to_have_text(["No players on the board yet."])
        page.get_by_role("button", name="Reset to the six sample players").click()
        expect(page.locator("#top-table tbody tr")).to_have_count(5)
    finally:
        context.close()
        demo.close()
    assert errors.messages == []


def save_artifact(name: str, page: Any) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    ignore = ARTIFACTS / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    return path


def test_screenshots_on_a_desktop_and_a_phone(browser: Any, page: Any, demo: Demo) -> None:
    # A board with some history: a new leader, a lower limit that trimmed someone.
    page.fill("#upsert-user-id", "player-7")
    page.fill("#upsert-score", "1510")
    page.fill("#upsert-name", "Zed")
    page.fill("#upsert-description", "New challenger from the qualifiers.")
    page.get_by_role("button", name="Save player").click()
    page.fill("#config-max-entries", "6")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#trim-notice-list .chip")).to_have_text(["player-1"])
    page.fill("#lookup-user-id", "player-2")
    page.get_by_role("button", name="Look up").click()
    expect(page.locator("#lookup-result")).to_be_visible()
    page.fill("#around-rank", "4")
    page.locator("#around-form").get_by_role("button", name="View").click()
    expect(page.locator("#around-table tbody tr.is-target .player-id")).to_have_text("player-6")
    page.wait_for_timeout(FRESH_WAIT_MS)  # let the "just written" highlight fade
    assert save_artifact("demo.png", page).stat().st_size > 10_000

    phone, phone_page, errors = open_page(
        browser,
        demo.url,
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    try:
        expect(phone_page.locator("#top-table tbody tr")).to_have_count(5)
        # Nothing wider than the screen: no sideways scrolling on a phone.
        assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
        assert save_artifact("demo-phone.png", phone_page).stat().st_size > 10_000
    finally:
        phone.close()
    assert errors.messages == []


FRESH_WAIT_MS = 4500


# -- the guide's page against our API --------------------------------------------------------

# A page that does what the guide's demo page (demo_server.py's HTML) does, written for this
# test: the same element ids and pre-filled form values, the same requests (its forms posted
# whole as URLSearchParams(new FormData(form)), the state asked for with top, around and rank),
# the same fields read from the answers and the same banner texts, "Failed to load leaderboard
# state: ..." included. Only its rendering differs (textContent rather than innerHTML), which
# does not touch the API. The guide's source is not vendored here: the seed document has the
# guide's text but not demo_server.py itself.
GUIDE_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>guide-shaped client</title></head><body>
<div id="banner">Ready.</div>
<form id="upsert-form">
  <input name="user_id" value="player-7"><input name="name" value="Kai">
  <input name="score" value="1125">
  <textarea name="description">New challenger climbing into contention.</textarea>
  <button type="submit">Save player</button>
</form>
<form id="increment-form">
  <input name="user_id" value="player-2"><input name="amount" value="25">
  <input name="name" value=""><textarea name="description"></textarea>
  <button type="submit">Add points</button>
</form>
<form id="config-form">
  <input id="top-count" value="5"><input id="around-count" value="5">
  <input id="around-rank" value="3"><input name="max_entries" id="max-entries" value="100">
  <button type="submit">Apply max size</button>
</form>
<button id="refresh-button" type="button">Refresh view</button>
<button id="reset-button" type="button">Reset sample data</button>
<strong id="leaderboard-key">leaderboard:demo</strong>
<strong id="leaderboard-size">0</strong>
<strong id="leaderboard-limit">100</strong>
<table><tbody id="top-table"></tbody></table>
<table><tbody id="around-table"></tbody></table>
<script>
const banner = document.getElementById("banner");
function setBanner(message) { banner.textContent = message; }
function renderRows(id, entries) {
  const rows = entries.map((entry) => {
    const metadata = entry.metadata || {};
    const tr = document.createElement("tr");
    for (const text of ["#" + entry.rank, entry.user_id + " " + (metadata.name || entry.user_id),
                        String(entry.score), metadata.description || ""]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  });
  document.getElementById(id).replaceChildren(...rows);
}
async function refreshState() {
  const value = (id, fallback) => document.getElementById(id).value || fallback;
  const query = "top=" + encodeURIComponent(value("top-count", "5"))
    + "&around=" + encodeURIComponent(value("around-count", "5"))
    + "&rank=" + encodeURIComponent(value("around-rank", "3"));
  const data = await (await fetch("/api/state?" + query)).json();
  document.getElementById("leaderboard-key").textContent = data.leaderboard_key;
  document.getElementById("leaderboard-size").textContent = data.size;
  document.getElementById("leaderboard-limit").textContent = data.max_entries;
  document.getElementById("max-entries").value = data.max_entries;
  renderRows("top-table", data.top_entries);
  renderRows("around-table", data.around_entries);
}
async function postForm(url, form) {
  const body = new URLSearchParams(new FormData(form));
  const response = await fetch(url, { method: "POST", body });
  return response.json();
}
const trimmedText = (ids) => (ids || []).length ? " Trimmed: " + ids.join(", ") + "." : "";
function onSubmit(id, url, describe) {
  document.getElementById(id).addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = await postForm(url, event.target);
    if (data.error) { setBanner(data.error); return; }
    setBanner(describe(data));
    await refreshState();
  });
}
onSubmit("upsert-form", "/api/players", (d) => "Saved " + d.entry.user_id + " at rank #"
  + d.entry.rank + " with score " + d.entry.score + "." + trimmedText(d.entry.trimmed_user_ids));
onSubmit("increment-form", "/api/increment", (d) => "Updated " + d.entry.user_id + " to score "
  + d.entry.score + " at rank #" + d.entry.rank + "." + trimmedText(d.entry.trimmed_user_ids));
onSubmit("config-form", "/api/config", (d) => "Leaderboard limit set to " + d.max_entries + "."
  + trimmedText(d.trimmed_user_ids));
document.getElementById("refresh-button").addEventListener("click", refreshState);
document.getElementById("reset-button").addEventListener("click", async () => {
  const data = await (await fetch("/api/reset", { method: "POST" })).json();
  setBanner(data.message);
  await refreshState();
});
refreshState().catch((error) => setBanner("Failed to load leaderboard state: " + error));
</script></body></html>
"""

GUIDE_ROWS_JS = "rows => rows.map(r => [...r.cells].map(c => c.textContent))"


def guide_rows(page: Any, table: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"#{table} tr", GUIDE_ROWS_JS)


def guide_row(rank: int, user_id: str, name: str, score: str) -> list[str]:
    return [f"#{rank}", f"{user_id} {name}", score, DESCRIPTIONS[user_id]]


DESCRIPTIONS = {
    "player-1": "Steady climber who never wastes a turn.",
    "player-2": "Always finds a way into the top three.",
    "player-3": "Takes big swings and occasionally lands them.",
    "player-4": "Current pace-setter with a ruthless endgame.",
    "player-5": "Quietly consistent and hard to catch.",
    "player-6": "Moves fast after every weekly reset.",
}
GUIDE_SEEDED = [
    guide_row(1, "player-4", "Priya", "1435"),
    guide_row(2, "player-2", "Mina", "1310"),
    guide_row(3, "player-6", "Rin", "1240"),
    guide_row(4, "player-3", "Noah", "1175"),
    guide_row(5, "player-5", "Jules", "1080"),
    guide_row(6, "player-1", "Avery", "980"),
]


def test_the_guides_page_works_against_our_api(browser: Any, demo: Demo) -> None:
    context = browser.new_context()
    # Served from the demo's own origin, as the guide's server serves its page.
    context.route(
        demo.url + "guide.html",
        lambda route: route.fulfill(status=200, content_type="text/html", body=GUIDE_PAGE),
    )
    page = context.new_page()
    errors = PageErrors(page)
    try:
        page.goto(demo.url + "guide.html")
        banner = page.locator("#banner")
        top, around = page.locator("#top-table tr"), page.locator("#around-table tr")

        # Loading: the state's fields fill the page (no "Failed to load leaderboard state").
        expect(top).to_have_count(5)
        expect(banner).to_have_text("Ready.")
        expect(page.locator("#leaderboard-key")).to_have_text(demo.board.key)
        expect(page.locator("#leaderboard-size")).to_have_text("6")
        expect(page.locator("#leaderboard-limit")).to_have_text("100")
        assert guide_rows(page, "top-table") == GUIDE_SEEDED[:5]
        assert guide_rows(page, "around-table") == GUIDE_SEEDED[:5]

        # "Save player", as pre-filled.
        page.get_by_role("button", name="Save player").click()
        expect(banner).to_have_text("Saved player-7 at rank #5 with score 1125.")
        expect(page.locator("#leaderboard-size")).to_have_text("7")
        expect(top.nth(4)).to_have_text(
            "#5player-7 Kai1125New challenger climbing into contention."
        )

        # "Add points", as pre-filled: the player keeps its name and description.
        page.get_by_role("button", name="Add points").click()
        expect(banner).to_have_text("Updated player-2 to score 1335 at rank #2.")
        expect(top.nth(1)).to_have_text("#2player-2 Mina1335Always finds a way into the top three.")

        # Other views.
        page.fill("#top-count", "3")
        page.fill("#around-rank", "6")
        page.fill("#around-count", "2")
        page.get_by_role("button", name="Refresh view").click()
        expect(top).to_have_count(3)
        expect(around).to_have_count(2)
        assert [r[0] for r in guide_rows(page, "around-table")] == ["#5", "#6"]
        # Blank and zero inputs: the guide's defaults, not an error.
        page.fill("#top-count", "")
        page.fill("#around-count", "0")
        page.fill("#around-rank", "")
        page.get_by_role("button", name="Refresh view").click()
        expect(top).to_have_count(5)
        expect(around).to_have_count(5)

        # "Apply max size": the trimmed players are listed.
        page.fill("#max-entries", "4")
        page.get_by_role("button", name="Apply max size").click()
        expect(banner).to_have_text(
            "Leaderboard limit set to 4. Trimmed: player-1, player-5, player-7."
        )
        expect(page.locator("#leaderboard-size")).to_have_text("4")
        expect(page.locator("#leaderboard-limit")).to_have_text("4")
        expect(top).to_have_count(4)

        # A refused write shows the server's error.
        page.locator("#upsert-form [name=score]").fill("nan")
        page.get_by_role("button", name="Save player").click()
        expect(banner).to_have_text("Score must be a number, like 1200 or 12.5")

        # "Reset sample data".
        page.get_by_role("button", name="Reset sample data").click()
        expect(banner).to_have_text("Demo leaderboard reset.")
        expect(page.locator("#leaderboard-size")).to_have_text("6")
        expect(page.locator("#max-entries")).to_have_value("100")
        expect(top).to_have_count(5)
        assert guide_rows(page, "top-table") == GUIDE_SEEDED[:5]
        assert "Failed to load" not in page.inner_text("body")
    finally:
        context.close()
    assert errors.messages == []


# -- what the page sends and says ------------------------------------------------------------


def test_an_increment_sends_only_the_fields_the_user_filled_in(page: Any, demo: Demo) -> None:
    sent: list[dict[str, str]] = []
    page.on(
        "request",
        lambda request: (
            sent.append(dict(parse_qsl(request.post_data or "")))
            if request.url.endswith("/api/increment")
            else None
        ),
    )
    # A new player, named in the optional fields.
    page.get_by_text("Name and description (optional)").click()
    page.fill("#increment-user-id", "player-9")
    page.fill("#increment-amount", "50")
    page.fill("#increment-name", "Rookie")
    page.get_by_role("button", name="Add to score").click()
    expect(page.locator("#increment-status")).to_have_text(
        "Updated Rookie (player-9): rank 7, score 50."
    )
    assert sent[-1] == {"user_id": "player-9", "amount": "50", "name": "Rookie"}
    assert demo.board.get_user_metadata("player-9") == {
        "name": "Rookie",
        "description": "Created during score increment.",
    }
    # The name was for that player: it is cleared, and the next increment sends only what is
    # filled in, so Priya stays Priya.
    expect(page.locator("#increment-name")).to_have_value("")
    page.fill("#increment-user-id", "player-4")
    page.fill("#increment-amount", "10")
    page.get_by_role("button", name="Add to score").click()
    expect(page.locator("#increment-status")).to_have_text(
        "Updated Priya (player-4): rank 1, score 1,445."
    )
    assert sent[-1] == {"user_id": "player-4", "amount": "10"}
    assert demo.board.get_user_metadata("player-4") == {
        "name": "Priya",
        "description": "Current pace-setter with a ruthless endgame.",
    }
    # Fields folded away in the closed section are not sent.
    page.fill("#increment-name", "Hidden")
    page.get_by_text("Name and description (optional)").click()  # closes it
    expect(page.locator("#increment-name")).to_be_hidden()
    page.get_by_role("button", name="Add to score").click()
    expect(page.locator("#increment-status")).to_have_text(
        "Updated Priya (player-4): rank 1, score 1,455."
    )
    assert sent[-1] == {"user_id": "player-4", "amount": "10"}
    assert demo.board.get_user_metadata("player-4")["name"] == "Priya"


def test_forms_start_with_real_values_and_placeholders_look_like_hints(
    page: Any, demo: Demo
) -> None:
    # Pre-filled as the guide's page: one click saves a real player or adds real points.
    values = page.eval_on_selector_all(
        "form input[value]", "inputs => inputs.map(i => [i.id, i.value])"
    )
    assert dict(values) == {
        "league-user-id": "player-1",
        "league-score": "1500",
        "top-count": "5",
        "around-rank": "3",
        "around-count": "5",
        "upsert-user-id": "player-7",
        "upsert-score": "1125",
        "upsert-name": "Kai",
        "upsert-description": "New challenger climbing into contention.",
        "increment-user-id": "player-2",
        "increment-amount": "25",
    }
    page.get_by_role("button", name="Save player").click()
    expect(page.locator("#upsert-status")).to_have_text(
        "Saved Kai (player-7): rank 5, score 1,125."
    )
    page.get_by_role("button", name="Add to score").click()
    expect(page.locator("#increment-status")).to_have_text(
        "Updated Mina (player-2): rank 2, score 1,335."
    )

    # Every placeholder reads as a hint ("Blank: ...", "e.g. ..."), in italics.
    hints = page.eval_on_selector_all(
        "input[placeholder]",
        """inputs => inputs.map(i => [i.id, i.placeholder,
            getComputedStyle(i, "::placeholder").fontStyle])""",
    )
    assert [h[0] for h in hints] == [
        "upsert-name",
        "upsert-description",
        "increment-name",
        "increment-description",
        "lookup-user-id",
    ]
    for input_id, text, style in hints:
        assert text.startswith(("Blank: ", "e.g. ")), input_id
        assert style == "italic", input_id
    # A blank name and description get what the hints promise.
    page.fill("#upsert-user-id", "player-8")
    page.fill("#upsert-name", "")
    page.fill("#upsert-description", "")
    page.get_by_role("button", name="Save player").click()
    expect(page.locator("#upsert-status")).to_have_text("Saved player-8: rank 5, score 1,125.")
    assert demo.board.get_user_metadata("player-8") == {
        "name": "player-8",
        "description": "No description provided.",
    }


def test_error_messages_use_the_pages_labels(page: Any) -> None:
    def label(input_id: str) -> str:
        return page.locator(f"label[for={input_id}]").inner_text().strip()

    # Views: "Show" and "Count" as labelled, never "top" or "around".
    assert (label("top-count"), label("around-rank"), label("around-count")) == (
        "Show",
        "Rank",
        "Count",
    )
    page.fill("#top-count", "0")
    page.locator("#top-form").get_by_role("button", name="View").click()
    expect(page.locator("#top-status")).to_have_text(
        "Show must be a whole number of at least 1, so the default 5 is used."
    )
    expect(page.locator("#top-count")).to_have_value("5")
    page.fill("#top-count", "5000")
    page.locator("#top-form").get_by_role("button", name="View").click()
    expect(page.locator("#top-status")).to_have_text("Show can be at most 1,000, so 1,000 is used.")
    expect(page.locator("#top-count")).to_have_value("1000")
    expect(page.locator("#top-table tbody tr")).to_have_count(6)

    # Writes: each field's error starts with its label.
    cases = [
        ("upsert-form", "upsert-user-id", "", "Save player", "is required"),
        ("upsert-form", "upsert-score", "abc", "Save player",
         "must be a number, like 1200 or 12.5"),
        ("upsert-form", "upsert-name", "x" * 101, "Save player", "must be at most 100 characters"),
        ("increment-form", "increment-amount", "1e99", "Add to score",
         "must be a finite number between -1e15 and 1e15"),
        ("config-form", "config-max-entries", "0", "Apply", "must be at least 1"),
    ]  # fmt: skip
    for form_id, input_id, value, button, problem in cases:
        form = page.locator(f"#{form_id}")
        saved = page.input_value(f"#{input_id}")
        page.fill(f"#{input_id}", value)
        form.get_by_role("button", name=button).click()
        expect(form.locator(".form-status")).to_have_text(f"{label(input_id)} {problem}")
        expect(page.locator(f"#{input_id}")).to_have_attribute("aria-invalid", "true")
        page.fill(f"#{input_id}", saved)


def test_a_long_score_does_not_squeeze_the_phone_layout(browser: Any, demo: Demo) -> None:
    demo.board.upsert_user("player-9", 1e15, {"name": "Anastasia", "description": "Big."})
    demo.board.upsert_user("player-10", -999_999_999_999_999.5, {"name": "Bartholomew"})
    context, page, errors = open_page(
        browser,
        demo.url,
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    try:
        page.fill("#top-count", "10")
        page.locator("#top-form").get_by_role("button", name="View").click()
        expect(page.locator("#top-table tbody tr")).to_have_count(8)
        scores = page.locator("#top-table tbody .col-score")
        expect(scores.first).to_have_text("1,000,000,000,000,000")
        expect(scores.last).to_have_text("-999,999,999,999,999.5")
        measured = page.eval_on_selector_all(
            "#top-table tbody tr",
            """rows => rows.map(r => {
              const name = r.querySelector(".player-name"), score = r.querySelector(".col-score");
              const em = parseFloat(getComputedStyle(name).fontSize);
              return {name: name.textContent, width: name.getBoundingClientRect().width / em,
                      lines: Math.round(name.getBoundingClientRect().height
                                        / parseFloat(getComputedStyle(name).lineHeight)),
                      clipped: score.scrollWidth > score.clientWidth};
            })""",
        )
        for row in measured:
            # Room for about a dozen characters of a name, and every name on one line.
            assert row["width"] >= 7, row
            assert row["lines"] == 1, row
            assert not row["clipped"], row
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        save_artifact("demo-phone-long-scores.png", page)
    finally:
        context.close()
    assert errors.messages == []
