"""Periodic boards: period boundaries in UTC and in zones with daylight saving, month ends, ISO
week 53, keep expiry (a deadline on every key, metadata included), grace, the clock rule, a
differential test against a plain-Python model, and every query of a plain board forwarded to
the current period (``events()`` too), sync and asyncio."""

from __future__ import annotations

import inspect
import random
import time
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import redis_leaderboard
import redis_leaderboard.asyncio as aio
from apis import Api, sync_and_one_loop
from helpers import (
    UTC,
    FakeClock,
    board_keys,
    has_stored_metadata,
    keys_under,
    metadata_keys,
    millis,
    recorded_options,
)
from redis_leaderboard import PeriodicLeaderboard, RedisLeaderboard
from redis_leaderboard.seasons import Periods

AMS = ZoneInfo("Europe/Amsterdam")
NYC = ZoneInfo("America/New_York")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def walk(periods: Periods, start: datetime, n: int) -> list[tuple[str, datetime]]:
    """n periods from the one holding `start`: (id, start in UTC)."""
    out = []
    moment = periods.start_of(start)
    for _ in range(n):
        out.append((periods.period_id(moment), moment))
        moment = periods.next_start(moment)
    return out


# --- boundaries ---------------------------------------------------------------------------------


def test_day_boundaries_in_utc_and_across_both_amsterdam_transitions() -> None:
    assert walk(Periods("day", "UTC"), utc(2026, 3, 28, 12), 3) == [
        ("2026-03-28", utc(2026, 3, 28)),
        ("2026-03-29", utc(2026, 3, 29)),
        ("2026-03-30", utc(2026, 3, 30)),
    ]
    days = Periods("day", "Europe/Amsterdam")
    # Spring forward (29 March 2026, 02:00 CET -> 03:00 CEST): a day of 23 hours.
    spring = walk(days, utc(2026, 3, 28, 12), 3)
    assert spring == [
        ("2026-03-28", utc(2026, 3, 27, 23)),
        ("2026-03-29", utc(2026, 3, 28, 23)),
        ("2026-03-30", utc(2026, 3, 29, 22)),
    ]
    # Fall back (25 October 2026, 03:00 CEST -> 02:00 CET): a day of 25 hours.
    fall = walk(days, utc(2026, 10, 24, 12), 3)
    assert fall == [
        ("2026-10-24", utc(2026, 10, 23, 22)),
        ("2026-10-25", utc(2026, 10, 24, 22)),
        ("2026-10-26", utc(2026, 10, 25, 23)),
    ]
    assert fall[2][1] - fall[1][1] == timedelta(hours=25)
    assert spring[2][1] - spring[1][1] == timedelta(hours=23)
    # Every instant of a day is in it, up to the last microsecond.
    last = utc(2026, 10, 25, 23) - timedelta(microseconds=1)
    assert days.period_id(days.start_of(last)) == "2026-10-25"
    assert days.period_id(days.start_of(utc(2026, 10, 25, 23))) == "2026-10-26"


def test_hour_boundaries_across_both_transitions_in_two_zones() -> None:
    hours = Periods("hour", "Europe/Amsterdam")
    # Fall back: the hour 02:00-03:00 happens twice, two periods with two ids.
    assert walk(hours, utc(2026, 10, 25, 0, 30), 3) == [
        ("2026-10-25T02+0200", utc(2026, 10, 25, 0)),
        ("2026-10-25T02+0100", utc(2026, 10, 25, 1)),
        ("2026-10-25T03+0100", utc(2026, 10, 25, 2)),
    ]
    # Spring forward: 02:00 does not exist; 01:00 CET is followed by 03:00 CEST.
    assert walk(hours, utc(2026, 3, 29, 0, 30), 2) == [
        ("2026-03-29T01+0100", utc(2026, 3, 29, 0)),
        ("2026-03-29T03+0200", utc(2026, 3, 29, 1)),
    ]
    ny = Periods("hour", "America/New_York")  # 1 November 2026: 02:00 EDT -> 01:00 EST
    assert walk(ny, utc(2026, 11, 1, 5, 10), 2) == [
        ("2026-11-01T01-0400", utc(2026, 11, 1, 5)),
        ("2026-11-01T01-0500", utc(2026, 11, 1, 6)),
    ]
    # A zone whose offset is not whole hours: hours begin at local HH:00.
    india = Periods("hour", "Asia/Kolkata")
    assert walk(india, utc(2026, 1, 1, 8, 45), 2) == [
        ("2026-01-01T14+0530", utc(2026, 1, 1, 8, 30)),
        ("2026-01-01T15+0530", utc(2026, 1, 1, 9, 30)),
    ]


def test_a_midnight_skipped_by_daylight_saving_begins_the_day_at_the_gap_end() -> None:
    # Santiago springs forward at 24:00 on 5 September 2026: 6 September has no 00:00.
    days = Periods("day", "America/Santiago")
    assert walk(days, utc(2026, 9, 5, 12), 3) == [
        ("2026-09-05", utc(2026, 9, 5, 4)),
        ("2026-09-06", utc(2026, 9, 6, 4)),
        ("2026-09-07", utc(2026, 9, 7, 3)),
    ]


@pytest.mark.parametrize("tz", ["UTC", "Europe/Amsterdam", "America/New_York"])
def test_month_ends_and_leap_years(tz: str) -> None:
    months = Periods("month", tz)
    zone = ZoneInfo(tz)

    def local(*args: int) -> datetime:
        return datetime(*args, tzinfo=zone).astimezone(UTC)  # type: ignore[misc]

    # 31 January -> February (28 days in 2026, 29 in 2028) -> March.
    assert walk(months, local(2026, 1, 31, 23, 59), 3) == [
        ("2026-01", local(2026, 1, 1)),
        ("2026-02", local(2026, 2, 1)),
        ("2026-03", local(2026, 3, 1)),
    ]
    assert months.period_id(months.start_of(local(2028, 2, 29, 23, 59, 59))) == "2028-02"
    assert months.period_id(months.start_of(local(2028, 3, 1))) == "2028-03"
    assert months.next_start(local(2028, 2, 1)) == local(2028, 3, 1)
    assert months.next_start(local(2026, 12, 1)) == local(2027, 1, 1)
    days = Periods("day", tz)
    assert [i for i, _ in walk(days, local(2028, 2, 28, 12), 3)] == [
        "2028-02-28",
        "2028-02-29",
        "2028-03-01",
    ]


@pytest.mark.parametrize("tz", ["UTC", "Europe/Amsterdam"])
def test_iso_week_53(tz: str) -> None:
    weeks = Periods("week", tz)
    zone = ZoneInfo(tz)

    def local(*args: int) -> datetime:
        return datetime(*args, tzinfo=zone).astimezone(UTC)  # type: ignore[misc]

    # 2026 has 53 ISO weeks: W53 runs Monday 28 December 2026 to Sunday 3 January 2027.
    assert walk(weeks, local(2026, 12, 27, 23, 59), 3) == [
        ("2026-W52", local(2026, 12, 21)),
        ("2026-W53", local(2026, 12, 28)),
        ("2027-W01", local(2027, 1, 4)),
    ]
    assert weeks.period_id(weeks.start_of(local(2027, 1, 3, 23, 59))) == "2026-W53"
    # A year with 52 weeks: W52 then W01.
    assert [i for i, _ in walk(weeks, local(2025, 12, 25), 2)] == ["2025-W52", "2026-W01"]
    # Weeks begin Monday 00:00 local, also across a transition (a 167-hour week).
    ams = Periods("week", "Europe/Amsterdam")
    [(_, w13), (_, w14)] = walk(ams, utc(2026, 3, 25), 2)
    assert w14 - w13 == timedelta(hours=167)


def test_timedelta_periods_count_from_the_anchor() -> None:
    anchor = datetime(2026, 1, 1, 9, 0, tzinfo=AMS)
    shifts = Periods(timedelta(hours=8), "Europe/Amsterdam", anchor)
    assert walk(shifts, datetime(2026, 1, 2, 2, 0, tzinfo=AMS), 2) == [
        ("2026-01-02T010000+0100", datetime(2026, 1, 2, 1, 0, tzinfo=AMS)),
        ("2026-01-02T090000+0100", datetime(2026, 1, 2, 9, 0, tzinfo=AMS)),
    ]
    with pytest.raises(ValueError, match="anchor"):
        Periods(timedelta(hours=1), "UTC")
    with pytest.raises(ValueError, match="aware"):
        Periods(timedelta(hours=1), "UTC", datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="period must be"):
        Periods("fortnight", "UTC")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown time zone"):
        Periods("day", "Mars/Olympus_Mons")


# --- boards -------------------------------------------------------------------------------------


def test_writes_and_reads_go_to_the_current_period(api: Api, board_key: str, r: Any) -> None:
    # Keys expire by the server's real clock: the tests that keep them use dates to come.
    clock = FakeClock(datetime(2027, 11, 28, 23, 30, tzinfo=AMS))  # Sunday of 2027-W47
    weekly = api.periodic(key=board_key, period="week", tz="Europe/Amsterdam", keep=8, clock=clock)
    assert weekly.submit("ada", 10, {"name": "Ada"})["rank"] == 1
    assert weekly.current().key == f"{board_key}:2027-W47"
    assert weekly.next_reset() == datetime(2027, 11, 29, tzinfo=AMS)
    assert weekly.next_reset().tzinfo is not None
    clock.advance(timedelta(hours=1))  # Monday 00:30: week 48
    assert weekly.get_top() == []
    weekly.increment_score("ada", 3)
    weekly.upsert_user("bob", 5, {"name": "Bob"})
    assert [(e["user_id"], e["score"]) for e in weekly.get_top()] == [("bob", 5.0), ("ada", 3.0)]
    assert weekly.previous().get_top() == [
        {"rank": 1, "user_id": "ada", "score": 10.0, "metadata": {"name": "Ada"}}
    ]
    assert weekly.at(datetime(2027, 11, 23, tzinfo=UTC)).key == f"{board_key}:2027-W47"
    assert weekly.periods() == [f"2027-W{w}" for w in range(48, 40, -1)]
    assert weekly.get_rank("ada") == 2
    assert weekly.get_user_entry("bob") == {
        "rank": 1,
        "user_id": "bob",
        "score": 5.0,
        "metadata": {"name": "Bob"},
    }
    assert weekly.get_size() == 2
    week_47 = board_keys(weekly.previous(), ["ada"])
    week_48 = board_keys(weekly.current(), ["bob"])  # ada's increment carried no metadata
    assert set(r.keys(f"{board_key}*")) == week_47 | week_48
    assert weekly.previous().key == f"{board_key}:2027-W47"
    assert weekly.current().key == f"{board_key}:2027-W48"


def every_key(r: Any, key: str) -> list[str]:
    return sorted(keys_under(r, key))


@pytest.mark.parametrize("ties", ["lexicographic", "first", "dense"])
def test_every_key_of_a_period_carries_its_deadline(
    api: Api, board_key: str, r: Any, ties: str
) -> None:
    clock = FakeClock(datetime(2027, 1, 31, 22, tzinfo=AMS))
    daily = api.periodic(
        key=board_key,
        period="day",
        tz="Europe/Amsterdam",
        keep=3,
        max_entries=2,
        ties=ties,  # type: ignore[arg-type]
        grace=timedelta(minutes=5),
        clock=clock,
    )
    daily.submit("ada", 1, {"name": "Ada"})
    daily.upsert_user("bob", 2, {"name": "Bob"})
    daily.increment_score("cy", 3, {"name": "Cy"})  # trims ada, and her hash
    daily.current().upsert_many([("dee", 4, {"name": "Dee"})])  # trims bob
    keys = every_key(r, board_key)
    period = daily.current()
    assert period.key == f"{board_key}:2027-01-31"
    assert metadata_keys(period, ["cy"]) | recorded_options(period) <= set(keys)
    assert has_stored_metadata(r, period, "cy") and has_stored_metadata(r, period, "dee")
    assert not has_stored_metadata(r, period, "ada")
    if ties != "lexicographic":
        assert f"{board_key}:2027-01-31:options" in keys
    # keep=3: 31 January stays readable through 1 and 2 February, gone when 3 February begins.
    deadline = millis(datetime(2027, 2, 3, tzinfo=AMS))
    assert daily.current().expires == datetime(2027, 2, 3, tzinfo=AMS)
    assert {k: r.pexpiretime(k) for k in keys} == {k: deadline for k in keys}
    assert all(0 < r.ttl(k) for k in keys)


@sync_and_one_loop  # its cost is its waits
def test_keys_of_an_old_period_expire_by_themselves(api: Api, board_key: str, r: Any) -> None:
    """Real time, real expiry: periods of 300 ms, keep=2."""
    anchor = datetime.now(UTC)
    ticks = api.periodic(key=board_key, period=timedelta(milliseconds=300), anchor=anchor, keep=2)
    board = ticks.current()
    board.submit("ada", 1, {"name": "Ada"})
    keys = sorted(board_keys(board, ["ada"]))  # the sorted set and the metadata (and options)
    assert every_key(r, board.key) == keys
    deadline = board.expires
    assert board.end + timedelta(milliseconds=300) == deadline
    while datetime.now(UTC) < deadline - timedelta(milliseconds=20):
        time.sleep(0.01)
    # Racing the deadline: the period's keys share it, so they are all there or all gone.
    assert every_key(r, board.key) in ([], keys)
    while datetime.now(UTC) < deadline + timedelta(milliseconds=50):
        time.sleep(0.01)
    assert every_key(r, board.key) == []
    assert board.get_top() == []


def test_grace_accepts_a_late_write_and_refuses_a_later_one(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(datetime(2027, 3, 28, 23, 59, 50, tzinfo=AMS))  # a 23-hour day
    daily = api.periodic(
        key=board_key,
        period="day",
        tz="Europe/Amsterdam",
        grace=timedelta(seconds=30),
        clock=clock,
    )
    stamp = clock()  # a game ending 10 s before midnight
    clock.advance(timedelta(seconds=25))  # its result arrives 15 s after midnight
    assert daily.current().key == f"{board_key}:2027-03-29"
    late = daily.at(stamp)
    assert late.key == f"{board_key}:2027-03-28"
    assert late.submit("ada", 7)["score"] == 7.0
    clock.advance(timedelta(seconds=15))  # 30 s after midnight: the grace is over
    for write in (
        lambda: late.submit("bob", 8),
        lambda: late.upsert_user("bob", 8),
        lambda: late.increment_score("bob", 8),
        lambda: late.upsert_many([("bob", 8)]),
        lambda: daily.previous().submit("bob", 8),
    ):
        with pytest.raises(ValueError, match="takes no writes after"):
            write()
    assert r.zrange(f"{board_key}:2027-03-28", 0, -1, withscores=True) == [("ada", 7.0)]
    assert late.get_top()[0]["user_id"] == "ada"  # reads stay allowed
    # A period that has not begun takes no writes either.
    with pytest.raises(ValueError, match="begins at"):
        daily.at(clock() + timedelta(days=1)).submit("bob", 1)
    assert every_key(r, f"{board_key}:2027-03-30") == []


def test_arguments_are_checked_before_anything_is_sent(api: Api, board_key: str) -> None:
    with pytest.raises(ValueError, match="keep"):
        api.periodic(key=board_key, keep=0)
    with pytest.raises(ValueError, match="grace"):
        api.periodic(key=board_key, grace=timedelta(seconds=-1))
    with pytest.raises(ValueError, match="order"):
        api.periodic(key=board_key, order="up")  # type: ignore[arg-type]
    naive = api.periodic(key=board_key, clock=lambda: datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="aware"):
        naive.submit("ada", 1)
    board = api.periodic(key=board_key)
    with pytest.raises(ValueError, match="aware"):
        board.at(datetime(2026, 1, 1))


def apply_mode(old: Any, score: float, mode: str, desc: bool) -> float:
    if old is None or mode == "set":
        return score
    if mode == "incr":
        return float(old + score)
    return max(old, score) if desc else min(old, score)


@sync_and_one_loop
def test_differential_against_a_model(api: Api, board_key: str, r: Any) -> None:
    """Random writes at random times of a month (hours in Amsterdam across the fall-back
    transition) against a dict per period; every kept period read back, every expiry checked."""
    rng = random.Random(16)
    clock = FakeClock(datetime(2027, 10, 30, 20, tzinfo=AMS))
    order = "asc"
    hourly = api.periodic(
        key=board_key, period="hour", tz="Europe/Amsterdam", keep=3, order=order,
        max_entries=1000, clock=clock,
    )  # fmt: skip
    model: dict[str, dict[str, float]] = {}
    starts: dict[str, datetime] = {}
    for _ in range(300):
        clock.advance(timedelta(minutes=rng.randrange(0, 12)))
        user = f"u{rng.randrange(8)}"
        score = float(rng.randrange(-5, 20))
        mode = rng.choice(["set", "best", "incr"])
        period = hourly.period_id()
        starts[period] = hourly.periods_of.start_of(clock())
        result = hourly.submit(user, score, {"seen": period}, mode=mode)
        board = model.setdefault(period, {})
        board[user] = apply_mode(board.get(user), score, mode, desc=False)
        assert result["score"] == board[user]
        assert result["rank"] == 1 + sum((v, u) < (board[user], user) for u, v in board.items())
        # The period this write's clock (the server's: FakeClock moves it) is in: its keys,
        # and those of the periods before it, live until their deadlines.
        key = f"{board_key}:{period}"
        deadline = millis(hourly.expire_at(starts[period]))
        assert deadline == millis(starts[period] + timedelta(hours=3))  # no 30-minute hours here
        assert {k: r.pexpiretime(k) for k in every_key(r, key)} == {
            k: deadline for k in board_keys(key, board) | {f"{key}:options"}
        }
    assert len(model) > 10
    assert "2027-10-31T02+0200" in model and "2027-10-31T02+0100" in model
    kept = hourly.periods()
    assert kept == sorted(model, key=lambda p: starts[p], reverse=True)[:3]
    for period, scores in model.items():
        key = f"{board_key}:{period}"
        if period not in kept:  # expired on the server's clock: every key gone
            assert every_key(r, key) == []
            continue
        expected = sorted(scores.items(), key=lambda item: (item[1], item[0]))
        assert r.zrange(key, 0, -1, withscores=True) == expected
    expected_top = sorted(model[kept[0]].items(), key=lambda item: (item[1], item[0]))
    assert [(e["user_id"], e["score"]) for e in hourly.list_all()] == expected_top


def test_week_53_across_new_year_in_new_york(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(datetime(2032, 12, 31, 23, 59, 59, tzinfo=NYC))
    weekly = api.periodic(
        key=board_key, period="week", tz="America/New_York", keep=2,
        grace=timedelta(seconds=5), clock=clock,
    )  # fmt: skip
    assert weekly.submit("ada", 1, {"n": "a"})["rank"] == 1
    assert weekly.current().key == f"{board_key}:2032-W53"
    stamp = clock()
    clock.advance(timedelta(days=3))  # Monday 3 January 2033, 23:59:59
    assert weekly.period_id() == "2033-W01"
    with pytest.raises(ValueError, match="takes no writes after"):
        weekly.at(stamp).submit("bob", 1)
    weekly.upsert_user("bob", 2)
    weekly.increment_score("bob", 2)
    assert [e["user_id"] for e in weekly.get_top()] == ["bob"]
    assert weekly.previous().get_user_entry("ada")["metadata"] == {"n": "a"}
    assert weekly.get_rank("bob") == 1
    assert weekly.get_size() == 1
    assert weekly.next_reset() == datetime(2033, 1, 10, tzinfo=NYC)
    assert weekly.delete_user("bob")
    deadline = millis(datetime(2033, 1, 10, tzinfo=NYC))
    (ada_metadata,) = metadata_keys(f"{board_key}:2032-W53", ["ada"])
    assert r.pexpiretime(ada_metadata) == deadline


# --- every query of a plain board, on the current period ----------------------------------------

# Public methods of RedisLeaderboard a periodic board does not forward, and why: writes that
# act on a whole board, reached on a period's board (``board.current()``, ``board.at(...)``).
NOT_FORWARDED = {
    "clear": "clears one period: current().clear() or at(when).clear()",
    "set_max_entries": "a period's limit: current().set_max_entries(n)",
    "upsert_many": "a bulk load into one period: current().upsert_many(...)",
    "convert_layout": "converts one period's board: current().convert_layout() (a new periodic "
    "board's periods take layout= from the start)",
}

# (method, args, kwargs) of every query, called on the periodic board and on current().
QUERIES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("get_top", (5,), {}),
    ("get_around_rank", (3, 3), {}),
    ("get_rank", ("p4",), {}),
    ("get_user_metadata", ("p4",), {}),
    ("get_user_entry", ("p4",), {}),
    ("list_all", (), {}),
    ("get_size", (), {}),
    ("get_around_user", ("p4", 3), {}),
    ("get_page", (2, 3), {}),
    ("get_entries", (["p1", "absent", "p7"],), {}),
    ("get_by_score", (2, 8), {"offset": 1, "limit": 4}),
    ("count_by_score", (2, 8), {}),
    ("rank_for_score", (5,), {}),
    ("get_percentile", ("p4",), {}),
    ("score_at_percentile", (40,), {}),
    ("get_histogram", (4,), {"min_score": 0, "max_score": 12}),
]


def public_methods(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and callable(member) and not isinstance(member, type)
    }


@pytest.mark.parametrize(
    ("plain", "periodic"),
    [(RedisLeaderboard, PeriodicLeaderboard), (aio.RedisLeaderboard, aio.PeriodicLeaderboard)],
    ids=["sync", "asyncio"],
)
def test_a_periodic_board_has_every_query_of_a_plain_board(plain: type, periodic: type) -> None:
    missing = public_methods(plain) - public_methods(periodic)
    assert missing == set(NOT_FORWARDED), (
        "a method of RedisLeaderboard a periodic board neither forwards to its current period "
        "nor lists in NOT_FORWARDED with a reason"
    )
    for name, *_ in QUERIES:  # same parameters as the plain board's
        assert inspect.signature(getattr(periodic, name)).parameters.keys() == (
            inspect.signature(getattr(plain, name)).parameters.keys()
        ), name
    assert inspect.signature(periodic.events).parameters.keys() == (
        inspect.signature(plain.events).parameters.keys()
    )


def fill(board: Any) -> None:
    for i in range(10):
        board.upsert_user(f"p{i}", i + (i % 3) * 0.5, {"n": str(i)})


def test_queries_go_to_the_current_period(api: Api, board_key: str) -> None:
    clock = FakeClock(datetime.now(UTC))
    board = api.periodic(board_key, "day", clock=clock)
    fill(board)
    current = board.current()
    for name, args, kwargs in QUERIES:
        expected = getattr(current, name)(*args, **kwargs)
        assert getattr(board, name)(*args, **kwargs) == expected, name
    assert board.get_percentile("p0") == 0.0
    assert board.count_by_score(float("-inf"), float("inf")) == 10
    # The next day: the queries see the new (empty) period, the old one stays readable.
    clock.now += timedelta(days=1)
    assert board.count_by_score(float("-inf"), float("inf")) == 0
    assert board.get_entries(["p1"]) == [None]
    assert board.get_histogram(3) == []
    assert board.previous().count_by_score(float("-inf"), float("inf")) == 10


def test_events_follow_the_current_period(api: Api, board_key: str) -> None:
    clock = FakeClock(datetime.now(UTC))
    board = api.periodic(board_key, "day", clock=clock, events=True)
    board.upsert_user("a", 1)
    with board.events("0", block=0) as stream:
        assert [e["user_id"] for e in stream] == ["a"]
    clock.now += timedelta(days=1)  # a rollover: the new period has its own stream
    board.upsert_user("b", 2)
    assert [e["user_id"] for e in board.events("0", block=0)] == ["b"]
    assert [e["user_id"] for e in board.previous().events("0", block=0)] == ["a"]


def test_periodic_query_arguments_are_checked_before_sending(api: Api, board_key: str) -> None:
    board = api.periodic(board_key, "day")
    with pytest.raises(ValueError):
        board.score_at_percentile(101)
    with pytest.raises(ValueError):
        board.get_histogram(0)
    with pytest.raises(TypeError):
        board.get_entries("p1")


def test_exports() -> None:
    assert redis_leaderboard.PeriodicLeaderboard is PeriodicLeaderboard
    assert aio.PeriodicLeaderboard._board_class.__module__ == "redis_leaderboard._async"
