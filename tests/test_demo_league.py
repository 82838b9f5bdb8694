"""The demo's League card: ``GET/POST /api/league`` (a weekly league of cohorts of 5, the sample
players placed with the seed) over HTTP with an injected clock, through a settlement; bad input
a 4xx naming the field, nothing written; and the card in headless Chromium (zones coloured, a
match played from the page)."""

from __future__ import annotations

import os
import urllib.error
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from helpers import FakeClock
from test_demo_seasons import CHROMIUM, Running, demo_page

AMS = ZoneInfo("Europe/Amsterdam")


def zones(standings: dict[str, Any]) -> list[tuple[str, Any, str]]:
    return [(e["user_id"], e["rank"], e["zone"]) for e in standings["entries"]]


def test_the_league_over_http_through_a_settlement(redis_server: Any, board_key: str) -> None:
    # Sunday 22:30 in Amsterdam (a week to come: keys expire by the server's clock).
    clock = FakeClock(datetime(2031, 6, 1, 22, 30, tzinfo=AMS))
    demo = Running(redis_server, board_key, clock)
    try:
        # The six sample players, placed by the seed: a full cohort of 5, then one alone.
        answer = demo.get("/api/league?user_id=player-4")
        assert answer["period"] == "2031-W22" and answer["key"] == f"{board_key}:league"
        assert answer["next_settlement"] == "2031-06-02T00:00:00+02:00"
        assert answer["seconds_to_settlement"] == 90 * 60
        assert answer["tiers"] == [
            {"tier": "bronze", "players": 6}, {"tier": "silver", "players": 0},
            {"tier": "gold", "players": 0}]  # fmt: skip
        standings = answer["standings"]
        assert (standings["tier"], standings["cohort"], standings["size"]) == ("bronze", 1, 5)
        assert zones(standings) == [
            ("player-4", 1, "promote"),
            ("player-2", 2, "stay"),
            ("player-3", 3, "stay"),
            ("player-5", 4, "stay"),
            ("player-1", 5, "stay"),
        ]  # fmt: skip (bronze: no demotion)
        assert standings["entries"][0]["metadata"]["name"] == "Priya"
        assert demo.get("/api/league")["standings"] is None  # nobody asked for
        # A match: the best score of the week counts, a worse one changes nothing.
        played = demo.post("/api/league", {"user_id": "player-1", "score": "2000"})
        assert played["submitted"]["rank"] == 1 and played["submitted"]["zone"] == "promote"
        assert (
            demo.post("/api/league", {"user_id": "player-1", "score": "5"})["submitted"]["score"]
            == 2000.0
        )
        newcomer = demo.post("/api/league", {"user_id": "kai", "score": "1"})
        assert (newcomer["standings"]["cohort"], newcomer["standings"]["size"]) == (2, 2)
        # Monday 00:30: the week is settled by the first read of the next one.
        clock.now += timedelta(hours=2)
        after = demo.get("/api/league?user_id=player-1")
        assert after["period"] == "2031-W23" and after["standings"] is None
        assert [t["players"] for t in after["tiers"]] == [5, 2, 0]  # each cohort's best went up
        placed = demo.post("/api/league", {"user_id": "player-1", "score": "10"})
        assert placed["standings"]["tier"] == "silver"
    finally:
        demo.close()


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"score": "1"}, "user_id"), ({"user_id": "a"}, "score"),
     ({"user_id": "a", "score": "lots"}, "score"), ({"user_id": "a", "score": "nan"}, "score")],
)  # fmt: skip
def test_bad_input_is_a_4xx_naming_the_field_and_writes_nothing(
    redis_server: Any, board_key: str, fields: dict[str, str], field: str
) -> None:
    demo = Running(redis_server, board_key)
    try:
        before = demo.get("/api/league")["tiers"]
        with pytest.raises(urllib.error.HTTPError) as refused:
            demo.post("/api/league", fields)
        assert refused.value.code == 400
        assert f'"field": "{field}"' in refused.value.read().decode()
        assert demo.get("/api/league")["tiers"] == before
    finally:
        demo.close()


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed")
def test_the_league_card_in_a_browser(redis_server: Any, board_key: str) -> None:
    with demo_page(redis_server, board_key) as (page, expect):
        rows = page.locator("#league-table tbody tr")
        expect(rows).to_have_count(5)  # player-1's cohort, shown from the start
        expect(page.locator("#league-summary")).to_contain_text("Tier bronze, cohort 1")
        expect(page.locator("#league-summary")).to_contain_text("settles in")
        expect(rows.first).to_have_attribute("data-zone", "promote")
        expect(page.locator("#league-table tr.is-target .player-id")).to_have_text("player-1")
        # A match played from the card: player-1 goes to the top of the cohort.
        page.fill("#league-score", "5000")
        page.click("#league-play")
        expect(page.locator("#league-status")).to_contain_text("player-1 is #1 of cohort 1")
        expect(rows.first.locator(".player-id")).to_have_text("player-1")
        expect(rows.first.locator(".col-zone")).to_have_text("Promotion")
        # Someone who has not played: the card says so.
        page.fill("#league-user-id", "nobody")
        page.click("#league-view")
        expect(page.locator("#league-summary")).to_contain_text("nobody has not played")
        page.fill("#league-score", "")
        page.click("#league-play")
        expect(page.locator("#league-status")).to_have_text("Score is required.")
        expect(page.locator("#league-score")).to_have_attribute("aria-invalid", "true")
