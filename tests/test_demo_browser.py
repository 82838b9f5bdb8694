"""The demo page end to end in headless Chromium (Debian's ``chromium``, driven by Playwright
for Python): every form, the tables, markup in names shown as text, live updates from other
clients, a Redis outage, and screenshots in tests/artifacts/ (desktop and phone).

Playwright's sync API runs its own event loop in this thread; these tests are plain functions,
so pytest-asyncio (strict mode) never has a loop running here at the same time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    expect(page.locator("#top-table tbody tr")).to_have_count(6)
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


def test_the_page_opens_on_the_six_sample_players(page: Any, demo: Demo) -> None:
    expect_rows(page, "top-table", SEEDED)
    expect_rows(page, "around-table", SEEDED[:5])
    expect(page.locator("#around-table tbody tr.is-target .player-id")).to_have_text("player-4")
    expect(page.locator("#stat-size")).to_have_text("6")
    expect(page.locator("#stat-max")).to_have_text("100")
    expect(page.locator("#live-text")).to_have_text("Live")
    expect(page.locator("#board-key")).to_have_text(demo.board.key)
    expect(page.locator("#config-max-entries")).to_have_value("100")
    descriptions = page.locator("#top-table .player-desc")
    expect(descriptions.first).to_have_text("Reigning champion of the weekly cup.")


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
    expect_rows(page, "top-table", [("1", "Zed", "player-7", "1,500"), *renumber(SEEDED, 2)])
    expect(page.locator("#top-table tbody tr").first).to_have_class("is-fresh")

    # Increment a score.
    page.fill("#increment-user-id", "player-1")
    page.fill("#increment-amount", "500")
    page.get_by_role("button", name="Add to score").click()
    expect(page.locator("#increment-status")).to_have_text(
        "Updated Avery (player-1): rank 2, score 1,480."
    )
    expect(page.locator("#top-table tbody tr").nth(1).locator(".player-name")).to_have_text("Avery")

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

    # A refused query says why and keeps the table.
    page.fill("#around-count", "0")
    page.locator("#around-form").get_by_role("button", name="View").click()
    expect(page.locator("#around-status")).to_have_text("around must be at least 1")
    assert len(rows(page, "around-table")) == 3

    # Look up one player.
    page.fill("#lookup-user-id", "player-4")
    page.get_by_role("button", name="Look up").click()
    profile = page.locator("#lookup-result")
    expect(profile).to_be_visible()
    expect(profile.locator("dt")).to_have_text(
        ["Player id", "Rank", "Score", "Name", "Description"]
    )
    expect(profile.locator("dd")).to_have_text(
        ["player-4", "3", "1,435", "Priya", "Reigning champion of the weekly cup."]
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

    # Bad input is refused with the server's message.
    page.fill("#upsert-score", "nan")
    page.get_by_role("button", name="Save player").click()
    status = page.locator("#upsert-status")
    expect(status).to_have_text("score must be a number, like 1200 or 12.5")
    expect(status).to_have_class("form-status is-error")

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
        expect(page.locator("#top-table tbody tr")).to_have_count(6)
        fresh_redis_server.stop()
        banner = page.locator("#banner")
        expect(banner).to_be_visible(timeout=10000)
        expect(banner).to_contain_text("Redis is unavailable")
        expect(banner).to_contain_text("Retrying automatically")
        expect(page.locator("#live-text")).to_have_text("Unavailable")

        fresh_redis_server.start()  # back, empty
        expect(banner).to_be_hidden(timeout=15000)
        expect(page.locator("#live-text")).to_have_text("Live")
        expect(page.locator("#top-table tbody tr")).to_have_text(["No players on the board yet."])
        page.get_by_role("button", name="Reset to the six sample players").click()
        expect(page.locator("#top-table tbody tr")).to_have_count(6)
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
        expect(phone_page.locator("#top-table tbody tr")).to_have_count(6)
        # Nothing wider than the screen: no sideways scrolling on a phone.
        assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
        assert save_artifact("demo-phone.png", phone_page).stat().st_size > 10_000
    finally:
        phone.close()
    assert errors.messages == []


FRESH_WAIT_MS = 4500
