"""The demo's query views in headless Chromium: the top table's pages (previous/next, "page 3
of 5"), the window around a player found with "Find a player", and the histogram's bars, read
from the SVG the page draws (no CSP violation, no script error: the page fixture checks)."""

from __future__ import annotations

from typing import Any

import test_demo_browser as shared
from test_demo_browser import Demo, expect, rows

pytestmark = shared.pytestmark
# The page's fixtures (Chromium, the demo server, a page that must see no script error and no
# CSP violation), shared with tests/test_demo_browser.py.
browser = shared.browser
demo = shared.demo
page = shared.page

BARS_JS = """bars => bars.map(b => [
  Number(b.getAttribute("data-min")), Number(b.getAttribute("data-max")),
  Number(b.getAttribute("data-count")), b.querySelector("title").textContent])"""


def add_players(demo: Demo, count: int) -> None:
    demo.board.upsert_many(
        (f"extra-{i:02d}", 100 + 10 * i, {"name": f"Extra {i}"}) for i in range(count)
    )


def test_the_top_table_pages_through_the_board(page: Any, demo: Demo) -> None:
    add_players(demo, 17)  # 23 players: 5 pages of 5
    page.reload()
    expect(page.locator("#top-page-label")).to_have_text("page 1 of 5")
    expect(page.locator("#top-prev")).to_be_disabled()
    page.click("#top-next")
    expect(page.locator("#top-page-label")).to_have_text("page 2 of 5")
    want = [(str(e["rank"]), e["user_id"]) for e in demo.board.get_page(2, 5)["entries"]]
    expect(page.locator("#top-table tbody tr .rank")).to_have_text([r for r, _ in want])
    assert [(r[0], r[2]) for r in rows(page, "top-table")] == want
    for label in ("page 3 of 5", "page 4 of 5", "page 5 of 5"):
        page.click("#top-next")
        expect(page.locator("#top-page-label")).to_have_text(label)
    expect(page.locator("#top-table tbody tr")).to_have_count(3)  # the last page: 21-23
    expect(page.locator("#top-table tbody tr .rank")).to_have_text(["21", "22", "23"])
    expect(page.locator("#top-next")).to_be_disabled()
    page.click("#top-prev")
    expect(page.locator("#top-page-label")).to_have_text("page 4 of 5")
    expect(page.locator("#top-table tbody tr .rank")).to_have_text(["16", "17", "18", "19", "20"])
    # A new page size starts from the top again.
    page.fill("#top-count", "10")
    page.locator("#top-form").get_by_role("button", name="View").click()
    expect(page.locator("#top-page-label")).to_have_text("page 1 of 3")
    expect(page.locator("#top-table tbody tr")).to_have_count(10)
    # The board shrinks under a later page: the page follows.
    page.click("#top-next")
    page.click("#top-next")
    expect(page.locator("#top-page-label")).to_have_text("page 3 of 3")
    demo.board.set_max_entries(12)
    expect(page.locator("#top-page-label")).to_have_text("page 2 of 2", timeout=10_000)
    expect(page.locator("#top-table tbody tr")).to_have_count(2)


def test_find_a_player_shows_the_window_around_them(page: Any, demo: Demo) -> None:
    page.fill("#lookup-user-id", "player-1")  # the last of the six
    page.click("#lookup-button")
    expect(page.locator("#lookup-around")).to_be_visible()
    expect(page.locator("#lookup-around-table tbody tr .player-id")).to_have_text(
        ["player-2", "player-6", "player-3", "player-5", "player-1"]
    )
    expect(page.locator("#lookup-around-table tbody tr.is-target .player-id")).to_have_text(
        "player-1"
    )
    page.fill("#lookup-user-id", "player-4")  # the first
    page.click("#lookup-button")
    expect(page.locator("#lookup-around-table tbody tr .rank")).to_have_text(
        ["1", "2", "3", "4", "5"]
    )
    expect(page.locator("#lookup-around-table tbody tr.is-target .player-id")).to_have_text(
        "player-4"
    )
    page.fill("#lookup-user-id", "nobody")
    page.click("#lookup-button")
    expect(page.locator("#lookup-status")).to_contain_text(
        "no player with id 'nobody' on the board"
    )
    expect(page.locator("#lookup-around")).to_be_hidden()


def test_the_histogram_draws_the_score_distribution(page: Any, demo: Demo) -> None:
    bars = page.locator("#histogram rect.bar")
    expect(bars).to_have_count(10)
    want = demo.board.get_histogram(10)
    got = page.eval_on_selector_all("#histogram rect.bar", BARS_JS)
    assert [(b[0], b[1], b[2]) for b in got] == [(w["min"], w["max"], w["count"]) for w in want]
    assert sum(b[2] for b in got) == 6
    assert got[0][3] == "[980, 1,025.5): 1 player"
    assert got[-1][3] == "[1,389.5, 1,435]: 1 player"
    heights = [float(h) for h in bars.evaluate_all("bs => bs.map(b => b.getAttribute('height'))")]
    assert heights[0] > 0 and max(heights) == heights[got.index(max(got, key=lambda b: b[2]))]
    expect(page.locator("#histogram-caption")).to_have_text(
        "6 players in 10 equal score ranges from 980 to 1,435."
    )
    # Another client's writes show up on the next poll.
    add_players(demo, 4)  # scores 100-130
    expect(page.locator("#histogram-caption")).to_have_text(
        "10 players in 10 equal score ranges from 100 to 1,435.", timeout=10_000
    )
    expect(page.locator("#histogram rect.bar").first).to_have_attribute("data-count", "4")
    # An empty board says so.
    demo.board.clear()
    expect(page.locator("#histogram rect.bar")).to_have_count(0, timeout=10_000)
    expect(page.locator("#histogram text")).to_have_text(["No players on the board yet."])
