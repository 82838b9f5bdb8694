"""The demo's tabs (issue 16): "Today / This week / All time" fed by one group write, with the
time to the next reset: over HTTP (an injected clock), and in headless Chromium."""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import redis_leaderboard
from helpers import FakeClock
from redis_leaderboard.demo import DemoServer, make_server

AMS = ZoneInfo("Europe/Amsterdam")
CHROMIUM = "/usr/bin/chromium"


class Running:
    def __init__(self, redis_server: Any, key: str, clock: Any = None) -> None:
        client = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
        self.board = redis_leaderboard.RedisLeaderboard(client, key=key, max_entries=100)
        self.server: DemoServer = make_server(
            self.board, "127.0.0.1", 0, tz="Europe/Amsterdam", clock=clock
        )
        self.server.app.seed_if_empty()
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return json.loads(response.read())

    def post(self, path: str, fields: dict[str, str]) -> Any:
        data = urllib.parse.urlencode(fields).encode()
        request = urllib.request.Request(self.url + path, data=data, method="POST")
        request.add_header("Origin", self.url)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
        self.board.redis.close()


@contextmanager
def demo_page(redis_server: Any, key: str, clock: Any = None) -> Iterator[tuple[Any, Any]]:
    """The demo of board `key`, seeded, open in headless Chromium: (its page, playwright's
    `expect`). A script error on the page fails the test when the block ends."""
    sync_api = pytest.importorskip("playwright.sync_api")
    demo = Running(redis_server, key, clock)
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--headless", "--no-sandbox"]
            )
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(demo.url + "/")
            yield page, sync_api.expect
            assert errors == []
            browser.close()
    finally:
        demo.close()


def tab(answer: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in answer["tabs"] if t["name"] == name)


def ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["user_id"] for e in entries]


def test_one_write_feeds_every_tab_and_today_resets_at_midnight(
    redis_server: Any, board_key: str
) -> None:
    # Sunday 22:30 in Amsterdam (a date to come: keys expire by the server's clock).
    clock = FakeClock(datetime(2031, 6, 1, 22, 30, tzinfo=AMS))
    demo = Running(redis_server, board_key, clock)
    try:
        answer = demo.get("/api/periods?top=3")
        assert [t["label"] for t in answer["tabs"]] == ["Today", "This week", "All time"]
        today, week, alltime = (tab(answer, n) for n in ("daily", "weekly", "all"))
        assert ids(today["entries"]) == ids(week["entries"]) == ids(alltime["entries"])
        assert ids(today["entries"]) == ["player-4", "player-2", "player-6"]
        assert today["key"] == f"{board_key}:daily:2031-06-01"
        assert week["key"] == f"{board_key}:weekly:2031-W22"
        assert today["next_reset"] == "2031-06-02T00:00:00+02:00"
        assert today["seconds_to_reset"] == 90 * 60
        assert week["seconds_to_reset"] == 90 * 60  # Monday 00:00 is also a new week
        assert alltime["next_reset"] is None
        written = demo.post("/api/increment", {"user_id": "player-1", "amount": "500"})
        assert written["entry"]["score"] == 1480.0 and written["entry"]["rank"] == 1
        answer = demo.get("/api/periods?top=1")
        assert [ids(t["entries"]) for t in answer["tabs"]] == [["player-1"]] * 3
        clock.now += timedelta(hours=2)  # Monday 00:30: a new day and a new week
        demo.post("/api/players", {"user_id": "kai", "score": "5", "name": "Kai"})
        answer = demo.get("/api/periods?top=3")
        assert ids(tab(answer, "daily")["entries"]) == ["kai"]
        assert tab(answer, "daily")["entries"][0]["metadata"]["name"] == "Kai"
        assert ids(tab(answer, "weekly")["entries"]) == ["kai"]
        assert ids(tab(answer, "all")["entries"]) == ["player-1", "player-4", "player-2"]
        assert tab(answer, "weekly")["next_reset"] == "2031-06-09T00:00:00+02:00"
        demo.post("/api/reset", {})
        answer = demo.get("/api/periods?top=10")
        assert len(tab(answer, "daily")["entries"]) == 6  # the sample players, through the group
        assert "kai" not in ids(tab(answer, "daily")["entries"])
    finally:
        demo.close()


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed")
def test_the_tabs_in_a_browser(redis_server: Any, board_key: str) -> None:
    with demo_page(redis_server, board_key) as (page, expect):
        rows = page.locator("#season-table tbody tr")
        expect(rows).to_have_count(5)
        expect(page.locator("#tab-daily")).to_have_attribute("aria-selected", "true")
        expect(page.locator("#season-reset")).to_contain_text("Today (")
        expect(page.locator("#season-reset")).to_contain_text("resets in")
        # A write on the page shows on every tab.
        page.fill("#upsert-user-id", "zed")
        page.fill("#upsert-score", "9999")
        page.fill("#upsert-name", "Zed")
        page.click("#upsert-form button[type=submit]")
        expect(rows.first.locator(".player-id")).to_have_text("zed")
        for name, text in (("weekly", "This week ("), ("all", "All time: never resets")):
            page.click(f"#tab-{name}")
            expect(page.locator(f"#tab-{name}")).to_have_attribute("aria-selected", "true")
            expect(page.locator("#season-reset")).to_contain_text(text)
            expect(rows.first.locator(".player-id")).to_have_text("zed")
