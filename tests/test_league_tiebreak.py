"""Tie-break columns on leagues (``League(..., tiebreak=...)``, sync and asyncio): a cohort is a
plain board with the league's columns, written by the plain board's write, so its order is pinned
against the plain-Python ranking model (``ranking_model.py``); the zones and the settlement's cut
follow that order (every player has a rank of their own); the columns are recorded with the
league's options (a client with others is refused, a league without columns records what it
always did); a resend answers the first result; bad values raise before anything is sent."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from apis import Api
from conftest import RedisServer, unique_key
from helpers import FakeClock, ReplyDropper, snapshot
from ranking_model import RankingModel
from redis_leaderboard import OptionsMismatch, SubmissionIdReused

UTC = timezone.utc
_today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
MONDAY = _today - timedelta(days=_today.weekday())
W0 = "{}-W{:02d}".format(*MONDAY.isocalendar()[:2])
TIERS = ("bronze", "silver", "gold")
COLUMNS = (("wins", "desc"), ("seconds", "asc"))


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "league") as k:
        yield k


def test_the_cut_follows_the_columns(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(
        key, clock, tiers=TIERS, cohort_size=5, promote=1, demote=1, tiebreak=COLUMNS
    )
    assert league.tiebreak == COLUMNS
    # Everyone in silver (a cohort with both zones): one settled week of promotions first.
    for i, user in enumerate(["ann", "bob", "cid", "dan", "eve"]):
        league.submit(user, 100, tiebreak={"wins": 2, "seconds": 50 + i})  # equal wins
    league.join("fay")  # placed, never scored: last, its columns None
    standings = league.standings("ann")
    assert [(e["user_id"], e["rank"], e["zone"], e["tiebreak"]) for e in standings["entries"]] == [
        ("ann", 1, "promote", {"wins": 2.0, "seconds": 50.0}),
        ("bob", 2, "stay", {"wins": 2.0, "seconds": 51.0}),
        ("cid", 3, "stay", {"wins": 2.0, "seconds": 52.0}),
        ("dan", 4, "stay", {"wins": 2.0, "seconds": 53.0}),
        ("eve", 5, "stay", {"wins": 2.0, "seconds": 54.0}),
    ]  # fmt: skip  (the lowest tier has no demote zone)
    idle = league.standings("fay")  # cohort_size 5: fay opened cohort 2, never scored
    assert (idle["cohort"], idle["entries"][0]["rank"]) == (2, None)
    assert idle["entries"][0]["tiebreak"] == {"wins": None, "seconds": None}
    # A better second column moves eve to the top: the submit's rank and zone say so.
    moved = league.submit("eve", 0, tiebreak={"wins": 2, "seconds": 10})
    assert (moved["rank"], moved["zone"], moved["score"]) == (1, "promote", 100.0)
    clock.now += timedelta(days=7)
    assert league.settle()["promoted"] == 1
    assert league.tier_of("eve") == "silver" and league.tier_of("ann") == "bronze"
    assert league.results("ann", W0)["rank"] == 2


def test_results_give_the_columns_the_score_was_ranked_by(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(
        key, clock, tiers=TIERS, cohort_size=5, promote=1, demote=1, tiebreak=COLUMNS
    )
    for i, user in enumerate(["ann", "bob", "cid"]):
        league.submit(user, 100, tiebreak={"wins": 3 - i, "seconds": 40 + i})
    league.join("dan")  # placed, never scored
    clock.now += timedelta(days=7)
    league.settle()
    results = {user: league.results(user, W0) for user in ("ann", "bob", "cid", "dan")}
    assert {user: (r["rank"], r["tiebreak"]) for user, r in results.items()} == {
        "ann": (1, {"wins": 3.0, "seconds": 40.0}),
        "bob": (2, {"wins": 2.0, "seconds": 41.0}),
        "cid": (3, {"wins": 1.0, "seconds": 42.0}),
        "dan": (None, {"wins": None, "seconds": None}),
    }
    # The standings of the settled week agree, entry for entry.
    entries = league.standings("ann", W0)["entries"]
    assert [(e["user_id"], e["tiebreak"]) for e in entries] == [
        (user, results[user]["tiebreak"]) for user in ("ann", "bob", "cid", "dan")
    ]
    # A league without columns answers what it always did: no "tiebreak".
    plain = api.league(f"{key}:plain", clock, tiers=TIERS, cohort_size=5)
    plain.submit("ann", 1)
    clock.now += timedelta(days=7)
    plain.settle()
    assert "tiebreak" not in plain.results("ann", MONDAY + timedelta(days=7))


def test_a_later_settlement_cuts_by_the_columns(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(
        key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1, tiebreak=COLUMNS
    )
    for user in ["p1", "p2", "p3", "p4"]:  # week 0: p1 goes up to silver
        league.submit(user, 1 if user == "p1" else 0)
    clock.now += timedelta(days=7)
    league.settle()
    # Week 1: bronze's cohort of three with equal scores and wins: the seconds decide the cut.
    for user, seconds in [("p2", 9), ("p3", 7), ("p4", 8)]:
        league.submit(user, 5, tiebreak={"wins": 3, "seconds": seconds})
    entries = league.standings("p2")["entries"]
    assert [(e["user_id"], e["zone"]) for e in entries] == [
        ("p3", "promote"), ("p4", "stay"), ("p2", "stay"),
    ]  # fmt: skip
    clock.now += timedelta(days=7)
    league.settle()
    assert [league.tier_of(u) for u in ["p3", "p4", "p2"]] == ["silver", "bronze", "bronze"]


@pytest.mark.parametrize("seed", range(3))
def test_a_cohort_against_the_ranking_model(api: Api, key: str, seed: int) -> None:
    rng = random.Random(seed)
    order = "desc" if seed % 2 == 0 else "asc"
    mode = ("incr", "best", "set")[seed % 3]
    clock = FakeClock(MONDAY)
    league = api.league(
        key, clock, tiers=TIERS, cohort_size=50, promote=3, demote=3, mode=mode, order=order,
        tiebreak=COLUMNS,
    )  # fmt: skip
    model = RankingModel(10**6, order, tiebreak=COLUMNS)
    for _ in range(80):
        user = f"p{rng.randrange(12)}"
        score = float(rng.randrange(4))
        values = None
        if rng.random() < 0.8:
            values = {"wins": float(rng.randrange(3)), "seconds": rng.choice([0.5, 1.0, -2.0])}
        result = league.submit(user, score, tiebreak=values)
        expected = model.submit(user, score, mode=mode, tiebreak=values)
        assert (result["score"], result["rank"]) == (expected["score"], expected["rank"])
    entries = league.standings("p0" if model.get_rank("p0") else model.get_top(1)[0]["user_id"])
    assert [
        {k: e[k] for k in ("rank", "user_id", "score", "metadata", "tiebreak")}
        for e in entries["entries"]
    ] == model.get_top(100)
    # The zones are the cut of that order: the first 3 up (the lowest tier has no demote zone).
    assert [e["zone"] for e in entries["entries"]] == [
        "promote" if i < 3 else "stay" for i in range(len(entries["entries"]))
    ]


def test_the_columns_are_recorded_with_the_league(api: Api, key: str, r: Any) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(
        key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1, tiebreak=COLUMNS
    )
    league.submit("ann", 1, tiebreak={"wins": 1, "seconds": 2})
    assert r.hget(f"{key}:options", "config") == (
        "tiers=3 size=4 promote=1 demote=1 idle=1 order=desc "
        "ties=tb:wins.desc,seconds.asc mode=incr"
    )
    before = snapshot(r, key)
    for other in [{}, {"tiebreak": (("wins", "desc"),)}]:
        stranger = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1, **other)
        with pytest.raises(OptionsMismatch, match=r"ties=tb:wins.desc,seconds.asc"):
            stranger.submit("ann", 5)
        with pytest.raises(OptionsMismatch):
            stranger.standings("ann")
    assert snapshot(r, key) == before


def test_a_league_without_columns_records_what_it_always_did(api: Api, key: str, r: Any) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1)
    league.submit("ann", 1)
    assert r.hget(f"{key}:options", "config") == (
        "tiers=3 size=4 promote=1 demote=1 idle=1 order=desc ties=lexicographic mode=incr"
    )
    assert "tiebreak" not in league.standings("ann")["entries"][0] and league.tiebreak is None
    with pytest.raises(OptionsMismatch):
        api.league(
            key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1, tiebreak=COLUMNS
        ).submit("ann", 2)


def test_a_resend_answers_the_first_result(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(
        key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1, mode="best",
        tiebreak=COLUMNS, submission_ttl=30 * 86400,
    )  # fmt: skip
    # (submission_ttl: the test server's clock follows the test's, a week passes for the record)
    values = {"wins": 2, "seconds": 30}
    first = league.submit("ann", 50, submission_id="m1:ann", tiebreak=values)
    league.submit("bob", 50, tiebreak={"wins": 2, "seconds": 10})  # ranks ahead of ann now
    again = league.submit("ann", 50, submission_id="m1:ann", tiebreak=values)
    assert again == {**first, "duplicate": True}
    with pytest.raises(SubmissionIdReused):  # the columns are part of the payload
        league.submit("ann", 50, submission_id="m1:ann", tiebreak={"wins": 3, "seconds": 30})
    clock.now += timedelta(days=7)  # the next week: the first result still
    assert league.submit("ann", 50, submission_id="m1:ann", tiebreak=values) == again


def test_bad_values_raise_before_anything_is_sent(api: Api, key: str, r: Any) -> None:
    clock = FakeClock(MONDAY)
    with pytest.raises(ValueError, match="ties must be 'lexicographic'"):
        api.league(key, clock, tiers=TIERS, ties="competition", tiebreak=COLUMNS)
    with pytest.raises(ValueError):
        api.league(key, clock, tiers=TIERS, tiebreak=(("a", "sideways"),))
    league = api.league(key, clock, tiers=TIERS, tiebreak=COLUMNS)
    for values in [
        {"wins": 1},
        {"wins": 1, "seconds": 2, "deaths": 3},
        {"wins": 1, "seconds": float("nan")},
        {"wins": float("-inf"), "seconds": 1},
        [1, 2],
    ]:
        with pytest.raises((ValueError, TypeError)):
            league.submit("u", 1, tiebreak=values, submission_id="s1")
    plain = api.league(f"{key}:plain", clock, tiers=TIERS)
    with pytest.raises(ValueError, match="without tie-break columns"):
        plain.submit("u", 1, tiebreak={"wins": 1})
    assert r.keys(f"{key}*") == []


def test_hidden_players_keep_their_columns(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(
        key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1, mode="set",
        tiebreak=COLUMNS,
    )  # fmt: skip
    league.submit("ann", 10, tiebreak={"wins": 1, "seconds": 5})
    league.submit("bob", 10, tiebreak={"wins": 1, "seconds": 7})
    assert league.hide("ann") is True
    assert [e["user_id"] for e in league.standings("bob")["entries"]] == ["bob"]
    assert league.unhide("ann") is True  # the kept score and columns come back
    assert [
        (e["user_id"], e["tiebreak"]["seconds"]) for e in league.standings("bob")["entries"]
    ] == [("ann", 5.0), ("bob", 7.0)]


def test_a_lost_reply_is_resent_and_answers_this_call(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = FakeClock(MONDAY)
    options: dict[str, Any] = {
        "tiers": TIERS, "cohort_size": 4, "promote": 1, "demote": 1, "tiebreak": COLUMNS,
    }  # fmt: skip
    values = {"wins": 3, "seconds": 8.5}
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        client = api.connect(port=proxy.port, socket_timeout=5)
        league = api.make("League", key, client=client, clock=clock, **options)
        result = league.submit("ann", 7, submission_id="lost", tiebreak=values)
    finally:
        proxy.close()
    assert proxy.dropped == 1 and result["duplicate"] is False  # the library's own resend
    assert (result["score"], result["rank"], result["zone"]) == (7.0, 1, "promote")
    direct = api.league(key, clock, **options)
    again = direct.submit("ann", 7, submission_id="lost", tiebreak=values)  # another call
    assert again == {**result, "duplicate": True}
    assert direct.standings("ann")["entries"][0]["tiebreak"] == {"wins": 3.0, "seconds": 8.5}
