"""Clients whose clocks are off the server's (issue 39, item 6): the server's clock decides.

Every board type written by a client whose clock is right (the server's: a FakeClock moves the
test server's clock with it) and by clients whose clocks are off by seconds at a boundary, by
hours and by more than a period's archive lives: an acknowledged write is always in the period
(bucket) the server's clock was in, and still there afterwards; a refused one is
``ClockSkewError`` and changed nothing; the correct client's view and writes are never moved by
another's clock; no script fails with a Lua error.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable, Optional

import pytest

from apis import Api, sync_and_one_loop
from helpers import UTC, FakeClock, snapshot
from redis_leaderboard import MAX_CLOCK_SKEW, ClockSkewError

# Two seconds before a Monday (a new day, week and month of 2031).
SERVER_TIME = datetime(2031, 9, 1, tzinfo=UTC) - timedelta(seconds=2)
SKEWS = [
    timedelta(seconds=-3),
    timedelta(seconds=3),  # across the boundary: the next day, week and month
    timedelta(hours=-2),
    timedelta(hours=2),
    timedelta(days=-40),  # older than any kept period
    timedelta(days=40),
]


def write(skew: timedelta, call: Callable[[], Any]) -> Optional[Any]:
    """The skewed client's write: its result, or None if refused with ClockSkewError (only when
    its clock is off by more than MAX_CLOCK_SKEW)."""
    try:
        return call()
    except ClockSkewError as refused:
        assert abs(skew) > MAX_CLOCK_SKEW, refused
        assert refused.server_time == SERVER_TIME
        return None


@sync_and_one_loop
@pytest.mark.parametrize("skew", SKEWS, ids=str)
def test_a_periodic_board(api: Api, board_key: str, r: Any, skew: timedelta) -> None:
    server = FakeClock(SERVER_TIME)
    right = api.periodic(board_key, "day", clock=server)
    off = api.periodic(board_key, "day", clock=FakeClock(SERVER_TIME + skew, server=False))
    right.increment_score("ann", 1)
    before = snapshot(r, board_key)
    got = write(skew, lambda: off.submit("bob", 5, mode="incr"))
    if got is None:
        assert snapshot(r, board_key) == before
        assert [e["user_id"] for e in right.get_top()] == ["ann"]
    else:  # the server's period, whatever the client's clock says
        assert got["period"] == right.period_id() == "2031-08-31"
        assert [(e["user_id"], e["score"]) for e in right.get_top()] == [
            ("bob", 5.0),
            ("ann", 1.0),
        ]
        # A client within the bound now follows the server's clock, reads included.
        assert off.period_id() == "2031-08-31"
    # The correct client is unmoved, and an acknowledged write stays kept past the boundary.
    right.increment_score("ann", 1)
    server.advance(timedelta(seconds=5))
    assert right.previous().get_user_entry("ann")["score"] == 2.0
    if got is not None:
        assert right.previous().get_user_entry("bob")["score"] == 5.0


@sync_and_one_loop
@pytest.mark.parametrize("skew", SKEWS, ids=str)
def test_a_rolling_window(api: Api, board_key: str, skew: timedelta) -> None:
    server = FakeClock(SERVER_TIME)
    options: dict[str, Any] = dict(window=timedelta(minutes=10), bucket=timedelta(minutes=1))
    right = api.rolling(board_key, clock=server, **options)
    off = api.rolling(board_key, clock=FakeClock(SERVER_TIME + skew, server=False), **options)
    right.increment_score("ann", 10)
    # The bucket is the server's: the skewed client neither moves the window (ahead) nor
    # writes where it expires at once (behind); its reads see the server's window.
    off.increment_score("bob", 5)
    assert [(e["user_id"], e["score"]) for e in off.get_top(5)] == [("ann", 10.0), ("bob", 5.0)]
    assert [(e["user_id"], e["score"]) for e in right.get_top(5)] == [("ann", 10.0), ("bob", 5.0)]
    server.advance(timedelta(minutes=9))  # both still in the window
    assert right.get_rank("bob") == 2 and right.get_user_entry("ann")["score"] == 10.0


@sync_and_one_loop
@pytest.mark.parametrize("skew", SKEWS, ids=str)
def test_a_group_write(api: Api, board_key: str, r: Any, skew: timedelta) -> None:
    server = FakeClock(SERVER_TIME)
    off_clock = FakeClock(SERVER_TIME + skew, server=False)

    def boards(clock: FakeClock) -> list[Any]:
        return [
            api.leaderboard(key=f"{board_key}:all"),
            api.periodic(key=f"{board_key}:daily", period="day", clock=clock),
            api.rolling(key=f"{board_key}:recent", clock=clock, window=timedelta(hours=1)),
        ]

    right = boards(server)
    group = api.group(boards(off_clock))
    before = snapshot(r, board_key)
    got = write(skew, lambda: group.submit("bob", 3, mode="incr", submission_id="m1"))
    if got is None:  # nothing written on any board
        assert snapshot(r, board_key) == before
        return
    assert got[f"{board_key}:daily"]["period"] == "2031-08-31"
    assert right[1].get_user_entry("bob")["score"] == 3.0
    assert right[2].get_user_entry("bob")["score"] == 3.0
    # Its resend answers the first result, whatever either clock says now.
    server.advance(timedelta(seconds=5))
    again = group.submit("bob", 3, mode="incr", submission_id="m1")
    assert again == {k: {**v, "duplicate": True} for k, v in got.items()}


@sync_and_one_loop
@pytest.mark.parametrize("skew", SKEWS, ids=str)
def test_a_league(api: Api, board_key: str, skew: timedelta) -> None:
    server = FakeClock(SERVER_TIME)
    options: dict[str, Any] = dict(
        tiers=("bronze", "silver"), cohort_size=4, promote=1, demote=1, period="day"
    )
    right = api.league(board_key, server, **options)
    off = api.league(board_key, FakeClock(SERVER_TIME + skew, server=False), **options)
    api.call(right.submit, "ann", 1)
    # A skewed client's settle never closes the server's current period early.
    write(skew, lambda: api.call(off.settle))
    got = write(skew, lambda: api.call(off.submit, "bob", 5))
    if got is not None:
        assert got["period"] == "2031-08-31"
    seen = api.call(right.standings, "ann")
    assert seen["period"] == "2031-08-31" and seen["settled"] is False
    assert api.call(right.submit, "ann", 2)["period"] == "2031-08-31"  # still open
    server.advance(timedelta(seconds=5))
    settled = api.call(right.settle)
    assert settled["periods"] == ["2031-08-31"]
    assert api.call(right.results, "ann", "2031-08-31")["score"] == 3.0  # mode "incr"
    if got is not None:
        assert api.call(right.results, "bob", "2031-08-31")["score"] == 5.0


@sync_and_one_loop
@pytest.mark.parametrize("skew", SKEWS, ids=str)
def test_a_tournament(api: Api, board_key: str, r: Any, skew: timedelta) -> None:
    server = FakeClock(SERVER_TIME)
    options: dict[str, Any] = dict(schedule="day", max_size=3, max_attempts=2)
    right = api.tournament(board_key, server, **options)
    off = api.tournament(board_key, FakeClock(SERVER_TIME + skew, server=False), **options)
    api.call(right.submit, "ann", 1)
    before = snapshot(r, board_key)
    joined = write(skew, lambda: api.call(off.join, "bob"))
    granted = write(skew, lambda: api.call(off.add_attempts, "bob", 1))
    got = write(skew, lambda: api.call(off.submit, "bob", 5))
    if got is None:
        assert (joined, granted) == (None, None)
        assert snapshot(r, board_key) == before
    else:
        assert got["period"] == joined["period"] == "2031-08-31"
        assert (granted, got["attempts_left"]) == (3, 2)
    status = api.call(right.status, "ann")
    assert (status["period"], status["size"]) == ("2031-08-31", 1 if got is None else 2)
    server.advance(timedelta(seconds=5))  # a new day: the old one's entries are kept
    assert api.call(right.submit, "ann", 1)["period"] == "2031-09-01"
