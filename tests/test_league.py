"""Leagues (redis_leaderboard.League, sync and asyncio): placement with the first write,
zones, settlement exactly once (also lazily, and under faults), and a differential test against
the plain-Python model in ``league_model.py`` over random seeded sequences."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from apis import Api
from conftest import RedisServer, unique_key
from helpers import FakeClock, ReplyDropper, keys_under, seeds_in_both_layouts, snapshot
from league_model import Closed, LeagueModel
from redis_leaderboard import Client, League, OptionsMismatch, PeriodClosed, ResponseError

UTC = timezone.utc
# Noon on Monday of the current ISO week (a period's keys expire by the real clock: the test's
# weeks must be now or later), and that week's id.
_today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
MONDAY = _today - timedelta(days=_today.weekday())
W0 = "{}-W{:02d}".format(*MONDAY.isocalendar()[:2])
W2 = "{}-W{:02d}".format(*(MONDAY + timedelta(days=14)).isocalendar()[:2])
TIERS = ("bronze", "silver", "gold", "diamond")


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "league") as k:
        yield k


# -- stories ---------------------------------------------------------------------------------


def test_first_write_places_then_settlement_promotes_and_demotes(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1)
    results = [api.call(league.submit, f"p{i}", 10 * i, {"n": str(i)}) for i in range(6)]
    assert [(r["tier"], r["cohort"], r["size"]) for r in results] == [
        ("bronze", 1, 1), ("bronze", 1, 2), ("bronze", 1, 3), ("bronze", 1, 4),
        ("bronze", 2, 1), ("bronze", 2, 2),
    ]  # fmt: skip
    assert results[3]["rank"] == 1 and results[3]["zone"] == "promote"
    assert results[3]["period"] == W0 and results[3]["metadata"] == {"n": "3"}
    standings = api.call(league.standings, "p0")
    assert [(e["user_id"], e["rank"], e["zone"]) for e in standings["entries"]] == [
        ("p3", 1, "promote"),
        ("p2", 2, "stay"),
        ("p1", 3, "stay"),
        ("p0", 4, "stay"),
    ]  # fmt: skip  (the lowest tier has no demote zone)
    again = api.call(league.submit, "p0", 100)  # incr: 0 + 100
    assert (again["score"], again["rank"], again["zone"]) == (100.0, 1, "promote")
    with pytest.raises(ValueError, match="has not ended"):
        api.call(league.settle, W0)
    clock.now += timedelta(days=7)
    summary = api.call(league.settle)
    assert summary == {
        "periods": [W0], "cohorts": 2, "settled": 2, "already_settled": 0,
        "promoted": 2, "demoted": 0,
    }  # fmt: skip
    assert api.call(league.tier_of, "p0") == "silver"
    assert api.call(league.tier_of, "p5") == "silver"
    assert api.call(league.tier_of, "p3") == "bronze"
    assert api.call(league.tier_of, "nobody") is None
    assert api.call(league.tiers) == [
        {"tier": "bronze", "players": 4}, {"tier": "silver", "players": 2},
        {"tier": "gold", "players": 0}, {"tier": "diamond", "players": 0},
    ]  # fmt: skip
    assert api.call(league.results, "p0", W0) == {
        "period": W0, "cohort": 1, "tier": "bronze", "new_tier": "silver",
        "zone": "promote", "rank": 1, "score": 100.0,
    }  # fmt: skip
    assert api.call(league.settle) == {
        "periods": [], "cohorts": 0, "settled": 0, "already_settled": 0, "promoted": 0,
        "demoted": 0,
    }  # fmt: skip
    past = api.call(league.standings, "p0", W0)
    assert past["settled"] is True and past["entries"][0]["zone"] == "promote"
    # The next week: p0 plays in silver.
    assert api.call(league.submit, "p0", 1)["tier"] == "silver"
    with pytest.raises(PeriodClosed):  # a client whose clock lags writes into the settled week
        api.call(api.league(key, FakeClock(MONDAY), tiers=TIERS, cohort_size=4, promote=1,
                            demote=1).submit, "p1", 5)  # fmt: skip


def test_lazy_settlement_on_the_first_write_of_the_next_period(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=3, promote=1, demote=1)
    for i in range(3):
        api.call(league.submit, f"p{i}", i)
    clock.now += timedelta(days=14)  # a week with nobody in between
    result = api.call(league.submit, "p0", 1)
    assert result["tier"] == "bronze" and result["period"] == W2
    assert api.call(league.tier_of, "p2") == "silver"
    assert api.call(league.results, "p2", W0)["new_tier"] == "silver"


def test_idle_players_brackets_and_fractions(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    options = dict(tiers=TIERS, cohort_size=4, promote=0.5, demote=0.25, demote_idle=True)
    league = api.league(key, clock, **options)
    for i in range(4):
        api.call(league.submit, f"eu{i}", i, bracket="eu")
    us = api.call(league.submit, "us0", 1, bracket="us")
    assert us["cohort"] == 2 and us["bracket"] == "us"
    clock.now += timedelta(days=7)
    api.call(league.settle)
    assert [api.call(league.tier_of, f"eu{i}") for i in range(4)] == [
        "bronze", "bronze", "silver", "silver"]  # fmt: skip
    # Week 2: silver players, one idle (joined, never scored): demoted with demote_idle.
    api.call(league.join, "eu2", bracket="eu")
    api.call(league.submit, "eu3", 5, bracket="eu")
    standings = api.call(league.standings, "eu2")
    assert standings["tier"] == "silver"
    assert [(e["user_id"], e["rank"], e["zone"]) for e in standings["entries"]] == [
        ("eu3", 1, "promote"), ("eu2", None, "demote")]  # fmt: skip
    clock.now += timedelta(days=7)
    api.call(league.settle)
    assert api.call(league.tier_of, "eu2") == "bronze"
    assert api.call(league.tier_of, "eu3") == "gold"


def test_ties_at_a_cutoff_follow_the_tie_rule(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=5, promote=1, demote=0,
                        ties="competition")  # fmt: skip
    for user, score in [("a", 5), ("b", 5), ("c", 1)]:
        api.call(league.submit, user, score)
    clock.now += timedelta(days=7)
    assert api.call(league.settle)["promoted"] == 2  # a shared first place moves both up


def test_bad_input_raises_before_anything_is_sent(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS)
    with pytest.raises(TypeError):
        api.call(league.submit, 5.5, 1)
    with pytest.raises(ValueError):
        api.call(league.submit, "", 1)
    with pytest.raises(ValueError):
        api.call(league.submit, "u", float("nan"))
    with pytest.raises(ValueError):
        api.call(league.submit, "u", 1, bracket="")
    with pytest.raises(ValueError):
        api.call(league.standings, "u", "1999-W01")
    for bad in (dict(tiers=()), dict(tiers=("a", "a")), dict(cohort_size=1),
                dict(promote=1.5), dict(promote=31), dict(keep=1), dict(mode="max"),
                dict(partitions=0)):  # fmt: skip
        with pytest.raises((ValueError, TypeError)):
            api.league(key, clock, **bad)
    assert redis_server.redis_py().keys(f"{key}*") == []


def test_options_are_recorded_so_two_clients_cannot_disagree(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    api.call(api.league(key, clock, tiers=TIERS, cohort_size=10).submit, "a", 1)
    with pytest.raises(OptionsMismatch, match="size=10"):
        api.call(api.league(key, clock, tiers=TIERS, cohort_size=20).submit, "b", 1)


def test_submission_ids_apply_once(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS)
    first = api.call(league.submit, "a", 5, submission_id="s1")
    again = api.call(league.submit, "a", 5, submission_id="s1")
    assert first["duplicate"] is False and again["duplicate"] is True
    assert api.call(league.standings, "a")["entries"][0]["score"] == 5.0


# -- resends answer the first result (rules 1, 2 and 5 of DESIGN.md's "a resend") ----------------


def test_a_resend_answers_the_first_result_field_for_field(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1)
    first = api.call(league.submit, "ann", 120, {"n": "1"}, submission_id="ann:m1")
    assert (first["duplicate"], first["zone"], first["size"], first["rank"]) == (
        False, "promote", 1, 1,
    )  # fmt: skip
    api.call(league.submit, "bob", 200)  # ann's zone and her cohort's size are not 1's now
    again = api.call(league.submit, "ann", 120, {"n": "1"}, submission_id="ann:m1")
    assert again == {**first, "duplicate": True}
    entries = api.call(league.standings, "ann")["entries"]
    assert [(e["user_id"], e["score"]) for e in entries] == [("bob", 200.0), ("ann", 120.0)]


def test_a_resend_after_the_week_boundary_answers_the_first_week(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY + timedelta(days=6, hours=11))  # Sunday 23:00
    league = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1)
    first = api.call(league.submit, "ann", 120, submission_id="ann:m1")
    assert first["period"] == W0
    clock.now += timedelta(hours=2)  # the next week: W0 has ended, not settled yet
    assert api.call(league.submit, "ann", 120, submission_id="ann:m1") == {
        **first, "duplicate": True,
    }  # fmt: skip
    assert api.call(league.submit, "bob", 5)["period"] != W0  # W0 settled lazily, bob placed
    assert api.call(league.submit, "ann", 120, submission_id="ann:m1") == {
        **first, "duplicate": True,
    }  # fmt: skip
    assert api.call(league.standings, "ann") is None  # the resends placed her in no new cohort
    # A client whose clock lags (W0 is settled and closed there) gets the first answer too.
    lagging = api.league(key, FakeClock(MONDAY), tiers=TIERS, cohort_size=4, promote=1, demote=1)
    assert api.call(lagging.submit, "ann", 120, submission_id="ann:m1") == {
        **first, "duplicate": True,
    }  # fmt: skip
    assert api.call(league.results, "ann", W0)["score"] == 120.0


def test_a_lost_reply_resent_by_the_library_is_not_a_duplicate(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = FakeClock(MONDAY)
    options: dict[str, Any] = dict(tiers=TIERS, cohort_size=4, promote=1, demote=1)
    league = api.league(key, clock, **options)
    api.call(league.submit, "warm", 1)  # the script is cached: the first attempt runs
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        lossy = api.connect(port=proxy.port, socket_timeout=5)
        result = api.call(
            api.make("League", key, client=lossy, clock=clock, **options).submit,
            "ann", 120, submission_id="ann:m1",
        )  # fmt: skip
    finally:
        proxy.close()
    assert proxy.dropped == 1  # the first send applied; its reply was lost, the library resent
    assert (result["duplicate"], result["zone"], result["size"], result["score"]) == (
        False, "promote", 2, 120.0,
    )  # fmt: skip
    # Another call with the same id is a duplicate, answered the same.
    again = api.call(league.submit, "ann", 120, submission_id="ann:m1")
    assert again == {**result, "duplicate": True}
    assert api.call(league.standings, "ann")["entries"][0]["score"] == 120.0


class SettlementDropper(ReplyDropper):
    """A ReplyDropper whose dropped connection passes the server's bytes through until the
    first reply of a cohort's settlement (a 7-element array), then closes: the settlements in
    flight ran, their replies are lost."""

    @staticmethod
    def drops_at(data: bytes) -> bool:
        return data.startswith(b"*7\r\n")


def test_settle_counts_its_own_resent_cohorts_as_settled(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = FakeClock(MONDAY)
    options: dict[str, Any] = dict(tiers=TIERS, cohort_size=5, promote=1, demote=1)
    league = api.league(key, clock, **options)
    for i in range(15):
        api.call(league.submit, f"p{i:02d}", i)
    clock.now += timedelta(days=7)
    proxy = SettlementDropper(redis_server.port, drops=1)
    try:
        lossy = api.connect(port=proxy.port, socket_timeout=5)
        summary = api.call(api.make("League", key, client=lossy, clock=clock, **options).settle)
    finally:
        proxy.close()
    assert proxy.dropped == 1
    assert summary == {
        "periods": [W0], "cohorts": 3, "settled": 3, "already_settled": 0,
        "promoted": 3, "demoted": 0,
    }  # fmt: skip
    # Another settler's call finds the work done by this one: already settled, nothing moved.
    again = api.call(league.settle, W0)
    assert (again["settled"], again["already_settled"], again["promoted"]) == (0, 3, 0)
    assert [t["players"] for t in api.call(league.tiers)] == [12, 3, 0, 0]


def test_a_period_anchored_between_milliseconds_settles(api: Api, key: str) -> None:
    """A timedelta period's anchor is taken to the millisecond (before, a start read back from
    the keys, in unix ms, named the period before it, and settle() found 0 cohorts)."""
    anchor = datetime(2031, 3, 2, 10, 0, 0, 123456, tzinfo=UTC)
    clock = FakeClock(anchor + timedelta(seconds=1))
    league = api.league(key, clock, tiers=TIERS, cohort_size=3, promote=1, demote=1,
                        period=timedelta(minutes=1), anchor=anchor)  # fmt: skip
    for user, score in [("ann", 3), ("bob", 2), ("cy", 1)]:
        api.call(league.submit, user, score)
    clock.advance(timedelta(minutes=1))
    settled = api.call(league.settle)
    assert (settled["cohorts"], settled["settled"], settled["promoted"]) == (1, 1, 1)


def test_settled_events_one_per_cohort(api: Api, key: str, redis_server: RedisServer) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=2, promote=1, demote=0)
    watching = league.events(block=0)  # "$": what comes from now on
    assert watching.read() == []
    for i in range(5):
        api.call(league.submit, f"p{i}", i, bracket="eu" if i == 4 else None)
    clock.now += timedelta(days=7)
    api.call(league.settle)
    api.call(league.settle)  # exactly once: nothing more on the stream
    raw = redis_server.redis_py().xrange(league.events_key())
    assert len(raw) == 3 and [e[1]["kind"] for e in raw] == ["settled"] * 3
    with league.events("0", block=0) as stream:
        events = list(stream)
    assert [(e["kind"], e["period"], e["cohort"], e["tier"], e["bracket"], e["promoted"],
             e["demoted"]) for e in events] == [
        ("settled", W0, 1, "bronze", None, ["p1"], []),
        ("settled", W0, 2, "bronze", None, ["p3"], []),
        ("settled", W0, 3, "bronze", "eu", ["p4"], []),
    ]  # fmt: skip
    assert [e["id"] for e in events] == [e[0] for e in raw]
    assert [e["cohort"] for e in watching.read()] == [1, 2, 3]  # resumed where it stood
    watching.close()
    with pytest.raises(ValueError, match="partition must be from 0 to 0"):
        league.events(partition=1)
    with pytest.raises(ValueError, match="last_id must not be empty"):
        league.events("")
    with pytest.raises(ValueError, match="count must be between 1 and 1000"):
        league.events(count=0)


def test_partitions_put_each_in_its_own_hash_tag(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, partitions=3, cohort_size=3, promote=1, demote=1)
    for i in range(12):
        api.call(league.submit, f"p{i}", i)
    assert sum(t["players"] for t in api.call(league.tiers)) == 12
    names = redis_server.redis_py().keys(f"{{{key}*")
    assert {n[: n.index("}") + 1] for n in names} == {f"{{{key}:{i}}}" for i in range(3)}
    for name in names:
        redis_server.redis_py().delete(name)
    with pytest.raises(ValueError, match="braces"):
        api.league("{x}", clock, partitions=2)


# -- differential ---------------------------------------------------------------------------

CONFIGS = [
    dict(cohort_size=4, promote=1, demote=1, demote_idle=True, mode="incr", order="desc",
         ties="lexicographic"),
    dict(cohort_size=5, promote=0.4, demote=0.2, demote_idle=False, mode="best", order="asc",
         ties="first"),
    dict(cohort_size=3, promote=1, demote=1, demote_idle=True, mode="set", order="desc",
         ties="competition"),
    dict(cohort_size=6, promote=2, demote=2, demote_idle=True, mode="incr", order="desc",
         ties="dense"),
]  # fmt: skip


@pytest.mark.parametrize(("seed", "layout"), seeds_in_both_layouts(12))
def test_differential_against_the_model(
    api: Api, redis_server: RedisServer, seed: int, layout: str
) -> None:
    rng = random.Random(seed)
    config = CONFIGS[seed % len(CONFIGS)]
    model = LeagueModel(len(TIERS), **config)  # type: ignore[arg-type]
    mismatches: list[str] = []
    with unique_key(redis_server, "league-diff") as key:
        clock = FakeClock(MONDAY)
        # Submission ids kept for the whole run (its four weeks of the server's clock): a resend
        # weeks later answers the first result.
        league = api.league(
            key, clock, tiers=TIERS, submission_ttl=60 * 86400, layout=layout, **config
        )
        users = [f"u{i:02d}" for i in range(rng.randint(8, 20))]
        home = {u: rng.choice(["", "", "eu"]) for u in users}
        sent: list[tuple[str, int, str, Any]] = []  # writes with an id: (user, score, id, answer)
        for week in range(4):
            period = (week, league.period_id())
            for _ in range(rng.randint(15, 40)):
                user = rng.choice(users)
                roll = rng.random()
                if roll < 0.1:
                    model_pending(model, period)
                    got = api.call(league.standings, user)
                    want = model.standings(period, user)
                    if not same_standings(got, want):
                        mismatches.append(f"week {week} standings {user}: {got} != {want}")
                elif roll < 0.15:
                    api.call(league.join, user, bracket=home[user] or None)
                    model.join(period, user, home[user])
                elif roll < 0.2 and sent:  # a resend, maybe weeks later: the first answer
                    user, score, sid, first = rng.choice(sent)
                    again = api.call(league.submit, user, score, bracket=home[user] or None,
                                     submission_id=sid)  # fmt: skip
                    if again != {**first, "duplicate": True}:
                        mismatches.append(f"week {week} resend {sid}: {again} != {first}")
                else:
                    score = rng.randint(-3, 9)
                    sid = f"s{len(sent)}" if rng.random() < 0.3 else None
                    got = api.call(league.submit, user, score, bracket=home[user] or None,
                                   submission_id=sid)  # fmt: skip
                    if sid is not None:
                        sent.append((user, score, sid, got))
                    want = model.submit(period, user, score, home[user])
                    seen = {k: got[k] for k in ("cohort", "rank", "score", "zone", "size")}
                    seen["tier"] = TIERS.index(got["tier"])
                    if seen != want:
                        mismatches.append(f"week {week} submit {user} {score}: {seen} != {want}")
            model_pending(model, period)
            counts = [t["players"] for t in api.call(league.tiers)]
            if counts != model.tier_counts():
                mismatches.append(f"week {week} tiers {counts} != {model.tier_counts()}")
            clock.now += timedelta(days=7)
            if rng.random() < 0.5:  # else lazily, by the next week's first write or read
                api.call(league.settle)
                model.settle(period[1])
                for user in users:
                    got_result = api.call(league.results, user, period[1])
                    want_result = model.periods[period[1]].results.get(user)
                    seen_result = (
                        None if got_result is None
                        else (TIERS.index(got_result["new_tier"]), got_result["zone"],
                              got_result["rank"], got_result["score"])
                    )  # fmt: skip
                    if seen_result != want_result:
                        mismatches.append(f"week {week} results {user}: {seen_result} != "
                                          f"{want_result}")  # fmt: skip
    assert mismatches == []


def model_pending(model: LeagueModel, period: tuple[int, str]) -> None:
    """A read of the current period settles a pending earlier one first (as the league)."""
    pending = model.pending(period)
    if pending is not None:
        model.settle(pending)


def same_standings(got: Any, want: Any) -> bool:
    if got is None or want is None:
        return got is None and want is None
    entries = [(e["user_id"], e["score"], e["rank"], e["zone"]) for e in got["entries"]]
    return (
        TIERS.index(got["tier"]) == want["tier"]
        and got["cohort"] == want["cohort"]
        and got["size"] == want["size"]
        and got["settled"] == want["settled"]
        and entries
        == [(u, None if s is None else float(s), r, z) for u, s, r, z in want["entries"]]
    )


# -- settlement under faults ------------------------------------------------------------------


def fill(client: Client, key: str, players: int, cohort_size: int) -> tuple[League, FakeClock]:
    clock = FakeClock(MONDAY)
    league = League(client, key, clock=clock, tiers=TIERS, cohort_size=cohort_size, promote=1,
                    demote=1)  # fmt: skip
    rng = random.Random(7)
    for i in range(players):
        league.submit(f"p{i:04d}", rng.randint(0, 1000))
    clock.now += timedelta(days=7)
    return league, clock


def expected_tiers(league: League, players: int) -> dict[str, str]:
    """Each player's tier after the first week, from the standings (every cohort's zones)."""
    out: dict[str, str] = {}
    for i in range(players):
        user = f"p{i:04d}"
        if user in out:
            continue
        standings = league.standings(user, W0)
        for entry in standings["entries"]:
            out[entry["user_id"]] = "silver" if entry["zone"] == "promote" else "bronze"
    return out


def check_settled_once(server: RedisServer, league: League, players: int, cohorts: int,
                       expected: dict[str, str]) -> None:  # fmt: skip
    r = server.redis_py()
    assert {f"p{i:04d}": league.tier_of(f"p{i:04d}") for i in range(players)} == expected
    assert sum(t["players"] for t in league.tiers()) == players  # nobody counted twice
    events = r.xrange(league.events_key())
    assert sorted(int(e[1]["cohort"]) for e in events) == list(range(1, cohorts + 1))


def settle_in_process(host: str, port: int, key: str) -> None:
    client = Client(host=host, port=port)
    league = League(client, key, clock=FakeClock(MONDAY + timedelta(days=7)), tiers=TIERS,
                    cohort_size=5, promote=1, demote=1)  # fmt: skip
    league.settle()
    client.close()


@pytest.mark.slow
def test_four_processes_settling_at_once(client: Client, redis_server: RedisServer,
                                         key: str) -> None:  # fmt: skip
    players = 400
    league, _ = fill(client, key, players, 5)
    expected = expected_tiers(league, players)
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=settle_in_process, args=(redis_server.host, redis_server.port, key))
        for _ in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    check_settled_once(redis_server, league, players, players // 5, expected)


@pytest.mark.parametrize("k", [0, 1, 7, 40])
def test_a_crash_after_k_cohorts_then_settle_again(client: Client, redis_server: RedisServer,
                                                   key: str, k: int) -> None:  # fmt: skip
    players = 200
    league, _ = fill(client, key, players, 5)
    expected = expected_tiers(league, players)
    # What a process that died after k cohorts had done: closed the period, settled k cohorts.
    partition = league._leagues[0]
    period = league._period(league._start_of(W0))
    client.run(partition.close(period))
    for cohort in range(1, k + 1):
        client.run(partition.settle(period, cohort))
    summary = league.settle()
    # A period whose every cohort is settled is done: settle() has nothing left to visit.
    assert (summary["settled"], summary["already_settled"]) == ((40 - k, k) if k < 40 else (0, 0))
    check_settled_once(redis_server, league, players, 40, expected)


@pytest.mark.slow
def test_a_client_killed_mid_settlement_then_settle_again(client: Client,
                                                          redis_server: RedisServer,
                                                          key: str) -> None:  # fmt: skip
    players = 2000
    league, _ = fill(client, key, players, 5)
    expected = expected_tiers(league, players)
    code = (
        "import sys; sys.path.insert(0, 'tests'); import test_league as t; "
        f"t.settle_in_process({redis_server.host!r}, {redis_server.port}, {key!r})"
    )
    process = subprocess.Popen([sys.executable, "-c", code], cwd=os.path.dirname(os.path.dirname(
        __file__)))  # fmt: skip
    r = redis_server.redis_py()
    deadline = time.monotonic() + 30
    while r.xlen(league.events_key()) < 20 and time.monotonic() < deadline:
        time.sleep(0.001)
    process.send_signal(signal.SIGKILL)
    process.wait()
    league.settle()
    check_settled_once(redis_server, league, players, players // 5, expected)


def test_a_wrongtype_key_in_one_cohort(client: Client, redis_server: RedisServer,
                                       key: str) -> None:  # fmt: skip
    players = 50
    league, _ = fill(client, key, players, 5)
    expected = expected_tiers(league, players)
    r = redis_server.redis_py()
    placed = f"{key}:{W0}:c:3:placed"
    members = sorted(r.smembers(placed))
    r.rename(placed, placed + ":aside")
    r.set(placed, "not a set")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        league.settle()
    # Nothing of cohort 3 was settled; every other cohort was. (Read in Redis: the league's own
    # reads of the current period settle the pending period first, and raise until it can.)
    tier_of = {u: TIERS[int(t)] for u, t in r.hgetall(f"{key}:tier").items()}
    assert all(tier_of[u] == "bronze" for u in members)
    assert all(league.results(u, W0) is None for u in members)
    others = {u: t for u, t in expected.items() if u not in members}
    assert {u: tier_of[u] for u in others} == others
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        league.tier_of(members[0])
    assert r.xlen(league.events_key()) == 9
    r.delete(placed)
    r.rename(placed + ":aside", placed)
    assert league.settle()["settled"] == 1
    check_settled_once(redis_server, league, players, 10, expected)


def test_closed_models_agree_on_a_lagging_writer() -> None:
    model = LeagueModel(2, 3, 1, 1, True, "incr", "desc", "lexicographic")
    model.submit((0, "a"), "x", 1)
    model.submit((1, "b"), "y", 1)
    with pytest.raises(Closed):
        model.submit((0, "a"), "z", 1)


# -- fair play: hidden players ----------------------------------------------------------------


def test_a_hidden_player_has_no_seat_and_keeps_their_tier(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1)
    for i in range(4):
        api.call(league.submit, f"p{i}", 10 * i)
    assert api.call(league.hide, "p3") is True and api.call(league.hide, "p3") is False
    assert api.call(league.hidden) == ["p3"]
    assert api.call(league.standings, "p3") is None
    standings = api.call(league.standings, "p0")
    assert [e["user_id"] for e in standings["entries"]] == ["p2", "p1", "p0"]
    assert standings["size"] == 3  # p3's seat went with them
    hidden_write = api.call(league.submit, "p3", 5)  # incr, judged and kept aside
    assert (hidden_write["score"], hidden_write["rank"], hidden_write["cohort"]) == (35.0, None, 0)
    assert api.call(league.join, "p3")["cohort"] == 0  # no seat while hidden
    clock.now += timedelta(days=7)
    summary = api.call(league.settle)
    assert (summary["settled"], summary["promoted"]) == (1, 1)  # p2 promoted, not p3
    assert api.call(league.tier_of, "p2") == "silver"
    assert api.call(league.tier_of, "p3") == "bronze"  # unchanged: not settled
    # A later period: still no seat; unhide seats the kept score of this period.
    assert api.call(league.submit, "p3", 7)["cohort"] == 0
    assert api.call(league.unhide, "p3") is True and api.call(league.hidden) == []
    standings = api.call(league.standings, "p3")
    assert [(e["user_id"], e["score"]) for e in standings["entries"]] == [("p3", 7.0)]
    assert api.call(league.unhide, "p3") is False


def test_tiers_counts_no_hidden_player(api: Api, key: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1)
    for i in range(4):
        api.call(league.submit, f"p{i}", 10 * i)
    api.call(league.hide, "p3")
    api.call(league.hide, "ghost")  # hidden before any seat: no tier at all
    api.call(league.submit, "ghost", 1)
    assert [t["players"] for t in api.call(league.tiers)] == [3, 0, 0, 0]
    assert api.call(league.tier_of, "p3") == "bronze"  # their own tier is kept and answered
    clock.now += timedelta(days=7)
    api.call(league.settle)  # p2 promoted; p3 had no seat
    assert [t["players"] for t in api.call(league.tiers)] == [2, 1, 0, 0]
    api.call(league.unhide, "p3")
    assert [t["players"] for t in api.call(league.tiers)] == [3, 1, 0, 0]


@pytest.mark.parametrize("layout", ["guide", "compact"])
def test_a_hidden_players_metadata_and_resends_follow_them(api: Api, key: str, layout: str) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1, layout=layout)
    api.call(league.submit, "b", 3, {"name": "Bob"})  # promoted: the best of the cohort
    api.call(league.submit, "c", 2)
    clock.now += timedelta(days=7)
    api.call(league.settle)
    api.call(league.submit, "b", 1)  # a new period: b is silver now
    api.call(league.hide, "b")
    first = api.call(league.submit, "b", 5, {"name": "Bobby"}, submission_id="s1")
    again = api.call(league.submit, "b", 5, {"name": "Bobby"}, submission_id="s1")
    assert (first["tier"], again["tier"], again["duplicate"]) == ("silver", "silver", True)
    assert api.call(league.unhide, "b") is True
    [entry] = api.call(league.standings, "b")["entries"]
    assert (entry["score"], entry["metadata"]) == (6.0, {"name": "Bobby"})


def test_a_compact_league_keeps_a_cohorts_metadata_in_one_hash(api: Api, key: str, r: Any) -> None:
    clock = FakeClock(MONDAY)
    league = api.league(
        key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1, layout="compact"
    )
    assert league.layout == "compact" and "layout='compact'" in repr(league)
    api.call(league.submit, "a", 3, {"name": "Ann", "team": "red"})
    api.call(league.submit, "b", 5, {"name": "Bob"})
    api.call(league.submit, "a", 1, {"team": "blue"})  # incr: merged into her field
    cohort = f"{key}:{league.period_id()}:c:1"
    assert {k for k in keys_under(r, key) if ":user:" in k} == set()
    assert sorted(r.hkeys(f"{cohort}:meta")) == ["a", "b"]
    entries = api.call(league.standings, "a")["entries"]
    assert [(e["user_id"], e["score"], e["metadata"]) for e in entries] == [
        ("a", 4.0, {"name": "Ann", "team": "blue"}),
        ("b", 5.0, {"name": "Bob"}),
    ] or [(e["user_id"], e["score"], e["metadata"]) for e in entries] == [
        ("b", 5.0, {"name": "Bob"}),
        ("a", 4.0, {"name": "Ann", "team": "blue"}),
    ]
    # Hidden: their field moves to cohort 0's hash; shown again: back to a cohort's.
    assert api.call(league.hide, "a") is True
    zero = f"{key}:{league.period_id()}:c:0"
    assert r.hkeys(f"{cohort}:meta") == ["b"] and r.hkeys(f"{zero}:meta") == ["a"]
    api.call(league.submit, "a", 2, {"level": "3"})
    assert api.call(league.unhide, "a") is True
    assert r.hkeys(f"{zero}:meta") == []
    [seat] = [e for e in api.call(league.standings, "a")["entries"] if e["user_id"] == "a"]
    assert (seat["score"], seat["metadata"]) == (6.0, {"name": "Ann", "team": "blue", "level": "3"})
    # A client of the other layout is refused, nothing changed.
    before = snapshot(r, key)
    guide = api.league(key, clock, tiers=TIERS, cohort_size=4, promote=1, demote=1)
    with pytest.raises(OptionsMismatch, match="layout=compact"):
        api.call(guide.submit, "c", 1, {"name": "Cid"})
    assert snapshot(r, key) == before
