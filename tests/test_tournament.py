"""Tournaments (redis_leaderboard.Tournament, sync and asyncio): capacity, join-required,
attempts, the active window, the stale-client guard, cron schedules, past standings, every query
of a board on the current period, atomicity, and a differential test against the plain-Python
model in ``tournament_model.py`` over random seeded sequences."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any, Callable, Optional

import pytest

import redis_leaderboard.asyncio as aio
from apis import Api
from conftest import RedisServer, unique_key
from helpers import (
    FakeClock,
    ReplyDropper,
    keys_under,
    millis,
    seeds_in_both_layouts,
    snapshot,
)
from redis_leaderboard import (
    AttemptsExhausted,
    ClockSkewError,
    NotJoined,
    OptionsMismatch,
    PeriodClosed,
    ResponseError,
    StalePeriod,
    TournamentFull,
)
from tournament_model import Now, Refused, TournamentModel

UTC = timezone.utc
# Today's midnight (UTC): a period's keys expire by the real clock, so the test's days must be
# today or later.
DAY0 = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
REFUSALS: dict[str, type[Exception]] = {
    "clock": ClockSkewError,
    "closed": PeriodClosed,
    "stale": StalePeriod,
    "not_joined": NotJoined,
    "full": TournamentFull,
    "exhausted": AttemptsExhausted,
}


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "tournament") as k:
        yield k


# -- stories ---------------------------------------------------------------------------------


def test_capacity_first_come_first_served_then_attempts(api: Api, key: str) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    t = api.tournament(key, clock, schedule="day", max_size=2, max_attempts=2)
    assert api.call(t.join, "ann")["joined_now"] is True
    assert api.call(t.join, "ann")["joined_now"] is False  # joining twice: nothing more
    first = api.call(t.submit, "bob", 10)  # a first submission joins
    assert (first["rank"], first["attempts_used"], first["attempts_left"], first["size"]) == (
        1, 1, 1, 2,
    )  # fmt: skip
    with pytest.raises(TournamentFull, match="max_size"):
        api.call(t.join, "cid")
    with pytest.raises(TournamentFull):
        api.call(t.submit, "cid", 99)
    assert api.call(t.submit, "bob", 5)["score"] == 10  # "best": the better stays
    with pytest.raises(AttemptsExhausted):
        api.call(t.submit, "bob", 50)
    assert api.call(t.get_user_entry, "bob")["score"] == 10  # the refused write changed nothing
    assert api.call(t.add_attempts, "bob", 1) == 1
    assert api.call(t.submit, "bob", 50)["attempts_left"] == 0
    status = api.call(t.status, "bob")
    assert (status["active"], status["joined"], status["attempts_left"], status["size"]) == (
        True, True, 0, 2,
    )  # fmt: skip
    assert status["period"] == DAY0.strftime("%Y-%m-%d")
    assert status["starts_at"] == DAY0 and status["ends_at"] == DAY0 + timedelta(days=1)
    assert api.call(t.status, "cid")["joined"] is False
    # The next day: a new board, nobody in it, attempts anew; yesterday's final standings kept.
    clock.now += timedelta(days=1)
    assert api.call(t.status, "bob")["size"] == 0
    assert api.call(t.submit, "cid", 1)["size"] == 1
    yesterday = DAY0.strftime("%Y-%m-%d")
    assert [e["user_id"] for e in api.call(t.standings, yesterday)] == ["bob"]
    assert api.call(t.at(yesterday).get_size) == 1
    assert api.call(t.get_top) == api.call(t.standings)


def test_join_required(api: Api, key: str) -> None:
    t = api.tournament(key, FakeClock(DAY0), schedule="day", join_required=True)
    with pytest.raises(NotJoined, match="has not joined"):
        api.call(t.submit, "ann", 1)
    assert api.call(t.status, "ann")["joined"] is False  # nothing recorded
    api.call(t.join, "ann")
    assert api.call(t.submit, "ann", 1)["attempts_left"] is None  # unlimited


def test_active_window_refuses_outside_it(api: Api, key: str) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=12, minutes=30))
    t = api.tournament(key, clock, schedule="0 12 * * *", duration=timedelta(hours=1))
    assert api.call(t.submit, "ann", 3)["period"] == (DAY0 + timedelta(hours=12)).strftime(
        "%Y-%m-%dT%H%M%z"
    )
    clock.now += timedelta(hours=1)  # 13:30: the day's hour is over
    with pytest.raises(PeriodClosed, match="window closed"):
        api.call(t.submit, "ann", 4)
    with pytest.raises(PeriodClosed):
        api.call(t.join, "bob")
    status = api.call(t.status, "ann")
    assert status["active"] is False and status["joined"] is True
    assert status["ends_at"] == DAY0 + timedelta(hours=13)
    # A submission id is sent anyway: the script refuses it too (its clock is the client's).
    with pytest.raises(PeriodClosed, match="not active"):
        api.call(t.submit, "ann", 4, submission_id="late")
    assert api.call(t.get_user_entry, "ann")["score"] == 3
    clock.now = DAY0 + timedelta(days=1, hours=12)  # the next day's window
    assert api.call(t.submit, "ann", 4)["rank"] == 1


def test_stale_client_guard(api: Api, key: str) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    t = api.tournament(key, clock, schedule="day")
    period = api.call(t.status, "ann")["period"]
    api.call(t.submit, "ann", 1, period=period)
    clock.now += timedelta(days=1)
    with pytest.raises(StalePeriod, match="meant for"):
        api.call(t.submit, "ann", 2, period=period)
    # A client whose clock lags: its period is the old one, which a newer one replaced.
    api.call(t.submit, "bob", 1)
    lagging = api.tournament(key, FakeClock(DAY0 + timedelta(hours=2)), schedule="day")
    with pytest.raises(StalePeriod):
        api.call(lagging.submit, "cid", 2, period=period)
    with pytest.raises(PeriodClosed, match="has begun"):
        api.call(lagging.submit, "cid", 2)
    assert api.call(t.at(period).get_user_entry, "cid") is None


def test_resend_uses_no_attempt_and_returns_the_first_result(api: Api, key: str) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    t = api.tournament(key, clock, schedule="day", max_attempts=1)
    first = api.call(t.submit, "ann", 7, submission_id="s1")
    assert first["duplicate"] is False and first["attempts_left"] == 0
    again = api.call(t.submit, "ann", 7, submission_id="s1")
    assert again["duplicate"] is True and again["score"] == 7 and again["attempts_used"] == 1
    clock.now += timedelta(days=1)  # across the boundary, naming the old period: the first result
    late = api.call(t.submit, "ann", 7, submission_id="s1", period=first["period"])
    assert late["duplicate"] is True and late["period"] == first["period"]


@pytest.mark.parametrize("layout", ["guide", "compact"])
def test_a_resend_after_the_period_boundary_answers_the_first_result(
    api: Api, key: str, layout: str
) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=23))
    t = api.tournament(key, clock, schedule="day", max_attempts=2, layout=layout)
    first = api.call(t.submit, "ann", 7, {"name": "Ann"}, submission_id="s1")
    assert (first["attempts_used"], first["attempts_left"], first["size"]) == (1, 1, 1)
    clock.advance(timedelta(hours=2))  # the next day: a new period, nobody in it yet
    api.call(t.submit, "bob", 3)
    api.call(t.join, "cid")
    for named in (None, first["period"]):  # with or without the period it was meant for
        again = api.call(t.submit, "ann", 7, {"name": "Ann"}, submission_id="s1", period=named)
        assert again["duplicate"] is True
        assert {**again, "duplicate": False} == first  # field for field; nothing recomputed
    # The player's state in the new period is untouched: no attempt used, no join.
    status = api.call(t.status, "ann")
    assert (status["joined"], status["attempts_left"], status["size"]) == (False, 2, 2)


def test_a_calls_own_resend_is_not_a_duplicate(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    direct = api.tournament(key, clock, schedule="day", max_attempts=3)
    api.call(direct.submit, "warm", 1, submission_id="warm")  # the script is cached: the first
    # sending runs, not NOSCRIPT
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        client = api.connect(port=proxy.port, socket_timeout=5)
        t = api.tournament(key, clock, client=client, schedule="day", max_attempts=3)
        result = api.call(t.submit, "ann", 7, submission_id="lost")
    finally:
        proxy.close()
    assert proxy.dropped == 1  # the first sending applied; its reply was lost; the library
    # resent it, and the record answered: this call applied it, so no duplicate
    assert result["duplicate"] is False
    assert (result["score"], result["attempts_used"], result["size"]) == (7.0, 1, 2)
    again = api.call(direct.submit, "ann", 7, submission_id="lost")  # another call, same id
    assert again["duplicate"] is True and {**again, "duplicate": False} == result
    assert api.call(direct.status, "ann")["attempts_left"] == 2  # one attempt used, once


@pytest.mark.parametrize("layout", ["guide", "compact"])
def test_every_key_of_a_period_expires_with_it(
    api: Api, key: str, redis_server: RedisServer, layout: str
) -> None:
    r = redis_server.redis_py()
    clock = FakeClock(DAY0 + timedelta(hours=1))
    t = api.tournament(key, clock, schedule="day", max_attempts=2, keep=2, layout=layout)
    deadline = millis(DAY0 + timedelta(days=2))  # when the 2nd period after it begins
    # Each period's first call is another write: a join, a submission, a grant.
    writes = [
        partial(api.call, t.join, "ann"),
        partial(api.call, t.submit, "bob", 1, {"name": "Bob"}),
        partial(api.call, t.add_attempts, "cid", 1),
    ]
    for day, write in enumerate(writes):
        write()
        period = (DAY0 + timedelta(days=day)).strftime("%Y-%m-%d")
        names = keys_under(r, f"{key}:{period}")
        assert names, period
        if day == 1:  # the player's metadata: their hash, or the period's
            meta = f"{key}:{period}:" + ("meta" if layout == "compact" else "user:bob")
            assert meta in names and {n for n in names if ":user:" in n or n.endswith(":meta")} == {
                meta
            }
        assert {n: r.pexpiretime(n) for n in names} == dict.fromkeys(
            names, deadline + day * 86_400_000
        )
        clock.advance(timedelta(days=1))
    # On the server's clock (FakeClock moves it), the first two periods have expired.
    assert keys_under(r, f"{key}:{DAY0.strftime('%Y-%m-%d')}") == set()


def test_a_grant_is_kept_until_its_period_expires(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    r = redis_server.redis_py()
    t = api.tournament(key, None, schedule="hour", max_attempts=1)  # the system clock
    assert api.call(t.add_attempts, "ann", 2) == 3
    assert api.call(t.submit, "ann", 1)["attempts_left"] == 2
    assert api.call(t.add_attempts, "ann", 1) == 3
    assert api.call(t.status, "ann")["attempts_left"] == 3
    period = api.call(t.status, "ann")["period"]
    bonus = f"{key}:{period}:bonus"
    assert r.hget(bonus, "ann") == "3"
    seconds, _ = r.time()
    assert r.pexpiretime(bonus) == r.pexpiretime(f"{key}:{period}:entrants") > seconds * 1000


def test_a_client_clock_far_behind_the_servers_is_refused(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    r = redis_server.redis_py()
    # A client's clock 13 days behind the server's (the real one).
    behind = FakeClock(datetime.now(UTC) - timedelta(days=13), server=False)
    t = api.tournament(key, behind, schedule="day", max_size=3, max_attempts=2)
    period = t.period_id(behind.now)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    calls: list[Callable[[], Any]] = [
        *(partial(api.call, t.join, f"p{i}") for i in range(4)),
        partial(api.call, t.submit, "p0", 5),
        partial(api.call, t.submit, "p0", 5, submission_id="s"),
        partial(api.call, t.add_attempts, "p0", 1),
    ]
    for call in calls:
        # Refused before anything is written, naming the period and the server's time.
        with pytest.raises(
            ClockSkewError, match=f"MAX_CLOCK_SKEW .*period {period} .*which says {today}"
        ) as refused:
            call()
        assert abs(refused.value.server_time - datetime.now(UTC)) < timedelta(minutes=1)
    assert keys_under(r, key) == set()  # never acknowledged and then deleted: nothing written
    # A correct clock's writes are taken, and the late client's refusals changed nothing there.
    now = api.tournament(key, None, schedule="day", max_size=3, max_attempts=2)
    assert api.call(now.join, "p0")["size"] == 1
    before = snapshot(r, key)
    with pytest.raises(ClockSkewError):
        api.call(t.join, "p1")
    assert snapshot(r, key) == before


def test_every_query_of_a_board_on_the_current_period(api: Api, key: str) -> None:
    t = api.tournament(key, FakeClock(DAY0), schedule="week", order="asc", ties="competition")
    for user, score in [("a", 3), ("b", 1), ("c", 3), ("d", 2)]:
        api.call(t.submit, user, score, {"name": user.upper()})
    assert [(e["user_id"], e["rank"]) for e in api.call(t.get_top, 4)] == [
        ("b", 1), ("d", 2), ("a", 3), ("c", 3),
    ]  # fmt: skip
    assert api.call(t.get_rank, "c") == 3
    assert api.call(t.get_size) == 4
    assert api.call(t.get_user_metadata, "a") == {"name": "A"}
    assert api.call(t.count_by_score, 2, 3) == 3
    assert api.call(t.rank_for_score, 2.5) == 3
    assert [e["user_id"] for e in api.call(t.get_page, 2, 2)["entries"]] == ["a", "c"]
    assert [e["user_id"] for e in api.call(t.get_around_user, "d", 3)] == ["b", "d", "a"]
    assert api.call(t.get_percentile, "b") is not None
    assert api.call(t.get_histogram, 2)


def test_options_are_recorded_and_bad_input_raises_first(api: Api, key: str) -> None:
    clock = FakeClock(DAY0)
    t = api.tournament(key, clock, schedule="day", max_size=3)
    api.call(t.join, "ann")
    other = api.tournament(key, clock, schedule="day", max_size=4)
    with pytest.raises(OptionsMismatch, match="max_size=3"):
        api.call(other.join, "bob")
    with pytest.raises(ValueError, match="cron"):
        api.tournament(key, clock, schedule="every day")
    with pytest.raises(ValueError, match="max_attempts"):
        api.tournament(key, clock, schedule="day", max_attempts=0)
    with pytest.raises(TypeError):
        api.call(t.submit, 5.5, 1)
    with pytest.raises(ValueError, match="unlimited"):
        api.call(t.add_attempts, "ann", 1)
    with pytest.raises(ValueError, match="finite"):
        api.call(t.submit, "ann", float("nan"))


def test_a_refused_write_changes_nothing_on_a_wrongtype_key(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = FakeClock(DAY0)
    t = api.tournament(key, clock, schedule="day", max_attempts=3)
    api.call(t.submit, "ann", 1)
    r = redis_server.redis_py()
    period = api.call(t.status, "ann")["period"]
    board = f"{key}:{period}"
    r.set(f"{board}:user:bob", "not a hash")  # bob's metadata hash: another type
    before = {k: r.dump(k) for k in r.scan_iter(match=f"{key}*")}
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        api.call(t.submit, "bob", 5, {"x": "1"})
    # No attempt used, no join recorded, no score: every key as it was.
    assert {k: r.dump(k) for k in r.scan_iter(match=f"{key}*")} == before
    assert api.call(t.status, "bob")["joined"] is False


def test_cron_periods() -> None:
    from redis_leaderboard.boards.tournament import CronPeriods

    every_6h = CronPeriods("0 */6 * * *", "Europe/Paris")
    moment = datetime(2026, 3, 10, 13, 59, tzinfo=UTC)  # 14:59 in Paris
    start = every_6h.start_of(moment)
    assert start == datetime(2026, 3, 10, 11, 0, tzinfo=UTC)  # 12:00 Paris
    assert every_6h.start_of(start) == start  # a start is in its own period
    assert every_6h.next_start(start) == datetime(2026, 3, 10, 17, 0, tzinfo=UTC)
    assert every_6h.previous_start(start) == datetime(2026, 3, 10, 5, 0, tzinfo=UTC)
    assert every_6h.period_id(start) == "2026-03-10T1200+0100"
    with pytest.raises(ValueError):
        CronPeriods("61 * * * *")


# -- the differential test --------------------------------------------------------------------

CONFIGS: list[dict[str, Any]] = [
    dict(schedule="day", duration=timedelta(hours=6), max_size=4, join_required=False,
         max_attempts=3, mode="best", order="desc", ties="lexicographic"),
    dict(schedule="day", duration=None, max_size=None, join_required=True, max_attempts=2,
         mode="incr", order="asc", ties="competition"),
    dict(schedule="0 */8 * * *", duration=timedelta(hours=3), max_size=3, join_required=False,
         max_attempts=None, mode="set", order="desc", ties="first"),
    dict(schedule=timedelta(hours=10), duration=timedelta(hours=4), max_size=5,
         join_required=True, max_attempts=3, mode="best", order="desc", ties="dense"),
]  # fmt: skip


def _now(t: Any, named: Optional[str] = None, server: Optional[Any] = None) -> Now:
    """The moment of a call by tournament object ``t`` (its clock); ``server``: the tournament
    object whose clock is the server's, when ``t``'s is not."""
    now = t.now()
    start = t.periods_of.start_of(now)
    _, end = t.window(now)
    on_server = None if server is None else _now(server)
    return Now(t.periods_of.period_id(start), int(start.timestamp()), now < end, named, on_server)


def _expect(fn: Callable[[], Any], model_fn: Callable[[], Any]) -> tuple[Any, Any]:
    """(got, want): each a result, or the refusal's code."""
    try:
        want = model_fn()
    except Refused as refused:
        want = refused.code
    try:
        got = fn()
    except tuple(REFUSALS.values()) as error:
        got = next(code for code, cls in REFUSALS.items() if type(error) is cls)
    return got, want


@pytest.mark.parametrize(("seed", "layout"), seeds_in_both_layouts(12))
def test_differential_against_the_model(
    api: Api, redis_server: RedisServer, seed: int, layout: str
) -> None:
    rng = random.Random(seed)
    config = dict(CONFIGS[seed % len(CONFIGS)])
    options = {k: config.pop(k) for k in ("schedule", "duration")}
    if isinstance(options["schedule"], timedelta):
        options["anchor"] = DAY0
    model = TournamentModel(**config)
    mismatches: list[str] = []
    with unique_key(redis_server, "tournament-diff") as key:
        clock = FakeClock(DAY0 + timedelta(minutes=rng.randint(0, 120)))
        t = api.tournament(key, clock, **options, **config, layout=layout)
        # A client whose clock lags (its own: the server's clock is `clock`'s).
        lag_clock = FakeClock(clock.now, server=False)
        lagging = api.tournament(key, lag_clock, **options, **config, layout=layout)
        users = [f"u{i}" for i in range(rng.randint(4, 9))]
        sids: list[tuple[str, float, str]] = []
        for step in range(rng.randint(60, 110)):
            user = rng.choice(users)
            roll = rng.random()
            if roll < 0.1:
                clock.now += timedelta(minutes=rng.choice([20, 45, 90, 200, 600]))
                continue
            client = t
            if roll < 0.15:  # a client whose clock lags by a while
                lag_clock.now = clock.now - timedelta(hours=rng.choice([1, 5, 9]))
                client = lagging
            named: Optional[str] = None
            if rng.random() < 0.2:  # names a period: the current one, or one it read earlier
                named = rng.choice(
                    [_now(client).period, t.period_id(clock.now - timedelta(days=1))]
                )
            now = _now(client, named, t if client is lagging else None)
            op = rng.random()
            if op < 0.15:
                got, want = _expect(
                    partial(api.call, client.join, user), partial(model.join, now, user)
                )
            elif op < 0.22 and config["max_attempts"] is not None:
                got, want = _expect(
                    partial(api.call, client.add_attempts, user, 1),
                    partial(model.add_attempts, now, user, 1),
                )
            elif op < 0.3:
                got = api.call(client.status, user)
                got = {k: got[k] for k in ("active", "period", "joined", "attempts_left", "size")}
                want = model.status(now, user)
            else:
                sid: Optional[str]
                if op < 0.4 and sids:  # a resend, exactly as sent
                    user, score, sid = rng.choice(sids)
                else:
                    score = float(rng.randint(-3, 9))
                    sid = f"s{step}" if rng.random() < 0.3 else None
                    if sid is not None:
                        sids.append((user, score, sid))
                got, want = _expect(
                    partial(api.call, client.submit, user, score, submission_id=sid, period=named),
                    partial(model.submit, now, user, score, sid),
                )
            if isinstance(got, dict) and "score" in got:  # a submit's result
                got = {k: got.get(k) for k in want}
            if got != want:
                mismatches.append(f"step {step} {now}: {got} != {want}")
            if step % 10 == 0:
                top = [(e["user_id"], e["score"], e["rank"]) for e in api.call(t.get_top, 20)]
                if top != model.top(_now(t).period, 20):
                    mismatches.append(f"step {step} top {top} != {model.top(_now(t).period, 20)}")
    assert mismatches == []


def test_with_the_system_clock_the_server_checks_the_window(api: Api, key: str) -> None:
    open_now = api.tournament(key, None, schedule="hour")
    assert api.call(open_now.submit, "ann", 1)["rank"] == 1
    # A window of one millisecond from each hour: closed now (but within that millisecond).
    closed = api.tournament(key + ":closed", None, schedule="hour",
                            duration=timedelta(milliseconds=1))  # fmt: skip
    if not api.call(closed.status, "ann")["active"]:
        with pytest.raises(PeriodClosed, match="window closed"):  # the client's check
            api.call(closed.submit, "ann", 1)
        # A submission id is sent anyway: the script refuses it on the server's clock.
        with pytest.raises(PeriodClosed, match="not active"):
            api.call(closed.submit, "ann", 1, submission_id="s")
        assert api.call(closed.get_size) == 0


def test_two_players_racing_for_the_last_place(redis_server: RedisServer, key: str) -> None:
    async def race() -> list[Any]:
        clients = [aio.Client(host=redis_server.host, port=redis_server.port) for _ in range(2)]
        boards = [aio.Tournament(c, key, schedule="day", max_size=5) for c in clients]
        joins = [boards[i % 2].join(f"p{i}") for i in range(20)]
        results = await asyncio.gather(*joins, return_exceptions=True)
        for c in clients:
            c.close()
        return results

    results = asyncio.run(race())
    assert sum(1 for r in results if isinstance(r, dict)) == 5
    assert all(isinstance(r, (dict, TournamentFull)) for r in results)


def test_the_refusals_are_value_errors_of_their_own() -> None:
    import redis_leaderboard

    for error in (TournamentFull, NotJoined, AttemptsExhausted, StalePeriod):
        assert issubclass(error, ValueError) and error.__module__ == "redis_leaderboard._core"
        assert getattr(redis_leaderboard, error.__name__) is error
        assert error.__doc__ and "nothing was changed" in error.__doc__


# -- fair play: hidden players ----------------------------------------------------------------


def test_a_hidden_player_is_hidden_from_every_period(api: Api, key: str) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=12))
    tournament = api.tournament(key, clock, schedule="day", mode="best", max_attempts=5)
    api.call(tournament.submit, "cheat", 99)
    api.call(tournament.submit, "fair", 10)
    assert (
        api.call(tournament.hide, "cheat") is True and api.call(tournament.hide, "cheat") is False
    )
    assert [e["user_id"] for e in api.call(tournament.get_top)] == ["fair"]
    kept = api.call(tournament.submit, "cheat", 120)  # judged (an attempt used) and kept aside
    assert (kept["score"], kept["rank"], kept["attempts_left"]) == (120.0, None, 3)
    clock.advance(timedelta(days=1))
    api.call(tournament.submit, "cheat", 50)  # a later period: hidden there too
    assert api.call(tournament.get_top) == [] and api.call(tournament.hidden) == ["cheat"]
    assert api.call(tournament.unhide, "cheat") is True and api.call(tournament.hidden) == []
    assert [(e["user_id"], e["score"]) for e in api.call(tournament.get_top)] == [("cheat", 50.0)]
    assert api.call(tournament.unhide, "cheat") is False


def test_a_compact_tournament_keeps_a_periods_metadata_in_one_hash(
    api: Api, key: str, r: Any
) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    t = api.tournament(key, clock, schedule="day", max_attempts=3, layout="compact")
    assert t.layout == "compact" and "layout='compact'" in repr(t)
    first = api.call(t.submit, "ann", 7, {"name": "Ann", "team": "red"}, submission_id="s1")
    api.call(t.submit, "bob", 9, {"name": "Bob"})
    api.call(t.submit, "ann", 5, {"team": "blue"})  # not better: the metadata merged all the same
    period = first["period"]
    assert {n for n in keys_under(r, f"{key}:{period}") if "user" in n or "meta" in n} == {
        f"{key}:{period}:meta"
    }
    assert r.hget(f"{key}:{period}:options", "layout") == "compact"
    ann = {"name": "Ann", "team": "blue"}
    assert [(e["user_id"], e["metadata"]) for e in api.call(t.get_top, 5)] == [
        ("bob", {"name": "Bob"}),
        ("ann", ann),
    ]
    assert api.call(t.get_user_entry, "ann") == {
        "rank": 2, "user_id": "ann", "score": 7.0, "metadata": ann
    }  # fmt: skip
    again = api.call(t.submit, "ann", 7, {"name": "Ann", "team": "red"}, submission_id="s1")
    assert again["duplicate"] is True and {**again, "duplicate": False} == first
    # Hidden and shown again: the metadata stays in its field.
    api.call(t.hide, "ann")
    assert [e["user_id"] for e in api.call(t.get_top, 5)] == ["bob"]
    api.call(t.unhide, "ann")
    assert api.call(t.get_user_entry, "ann")["metadata"] == ann
    # A client of the other layout is refused, nothing changed.
    before = snapshot(r, key)
    guide = api.tournament(key, clock, schedule="day", max_attempts=3)
    with pytest.raises(
        OptionsMismatch, match="ties=lexicographic layout=compact \\(recorded in Redis\\)"
    ):
        api.call(guide.submit, "cid", 1, {"name": "Cid"})
    assert snapshot(r, key) == before
