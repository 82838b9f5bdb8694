"""Rate limits (``rate_limit=(max_writes, seconds)``), sync and asyncio: per user, inside the
write (a refused write writes nothing and raises ``RateLimited`` with ``retry_after``), a sliding
window whose key leaves with an idle user, duplicates not counted, the limit recorded with the
board (a client without it is refused), and a group's write all or nothing."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from typing import Any

import pytest

from apis import Api, asyncio_only, sync_and_one_loop, unwrap
from helpers import UTC, FakeClock, snapshot
from redis_leaderboard import ConnectionError, RateLimited, ResponseError


def test_rate_limited_is_a_response_error_not_a_connection_error() -> None:
    assert issubclass(RateLimited, ResponseError)
    assert not issubclass(RateLimited, ConnectionError)


@sync_and_one_loop  # its cost is its sleeps
def test_a_burst_gets_exactly_max_writes(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10, rate_limit=(5, 2.0))
    for i in range(5):
        board.submit("spammer", i)
    board.submit("other", 1)  # per user
    with pytest.raises(RateLimited) as raised:
        board.submit("spammer", 99, {"x": "y"})
    assert 1.0 < raised.value.retry_after <= 2.0
    # Nothing was written.
    assert board.get_user_entry("spammer") == {
        "user_id": "spammer",
        "score": 4.0,
        "rank": 1,
        "metadata": {},
    }
    # The window slides: still full a little before retry_after, room after it.
    waited = time.monotonic()
    time.sleep(raised.value.retry_after - 0.5)
    with pytest.raises(RateLimited) as again:
        board.submit("spammer", 100)
    assert again.value.retry_after <= raised.value.retry_after - (time.monotonic() - waited) + 0.05
    time.sleep(again.value.retry_after + 0.01)
    board.submit("spammer", 100)


@asyncio_only
def test_tasks_at_once_get_exactly_max_writes(api: Api, board_key: str) -> None:
    board = unwrap(api.leaderboard(board_key, 10, rate_limit=(3, 30)))

    async def main() -> list[Any]:
        return await asyncio.gather(
            *(board.submit("u", i) for i in range(10)), return_exceptions=True
        )

    outcomes = api.run(main())
    assert sum(not isinstance(o, BaseException) for o in outcomes) == 3
    assert all(isinstance(o, RateLimited) for o in outcomes[3:])


@sync_and_one_loop
def test_an_idle_user_leaves_no_key(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 10, rate_limit=(3, 0.2))
    board.upsert_user("u", 1)
    board.increment_score("u", 1)
    assert 0 < r.pttl(f"{board_key}:rate:u") <= 200
    time.sleep(0.3)
    assert r.exists(f"{board_key}:rate:u") == 0


@sync_and_one_loop
def test_a_periodic_boards_limit_is_not_restarted_by_a_boundary(
    api: Api, board_key: str, r: Any
) -> None:
    """One write an hour: 23:59:59 and 00:00:01 are two (before, each period's board had its
    own window, and both were taken)."""
    clock = FakeClock(datetime(2031, 5, 4, 23, 59, 59, tzinfo=UTC))
    daily = api.periodic(board_key, "day", clock=clock, rate_limit=(1, 3600))
    daily.submit("ann", 1)
    clock.advance(timedelta(seconds=2))
    before = snapshot(r, board_key)
    with pytest.raises(RateLimited) as limited:
        daily.submit("ann", 2)
    assert 3590 < limited.value.retry_after <= 3598
    assert snapshot(r, board_key) == before
    assert r.exists(f"{board_key}:rate:ann") == 1  # the periodic board's, not a period's
    assert daily.submit("bob", 1)["period"] == "2031-05-05"  # another user's own window


def test_a_duplicate_does_not_count_against_the_limit(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10, rate_limit=(1, 60))
    board.submit("u", 1, submission_id="a")
    assert board.submit("u", 1, submission_id="a")["duplicate"] is True
    with pytest.raises(RateLimited):
        board.submit("u", 2, submission_id="b")


def test_guards_are_recorded_and_a_client_without_them_is_refused(
    api: Api, board_key: str, r: Any
) -> None:
    api.leaderboard(board_key, 10, rate_limit=(5, 60), events=True).submit("u", 1)
    plain = api.leaderboard(board_key, 10)
    with pytest.raises(ValueError, match=r"rate_limit=\(5, 60\), events=True"):
        plain.upsert_user("v", 1)
    with pytest.raises(ValueError, match="rate_limit"):
        plain.upsert_many([("v", 1)])
    with pytest.raises(ValueError):
        api.leaderboard(board_key, 10, rate_limit=(6, 60), events=True).submit("v", 1)
    assert plain.get_top(10)[0]["user_id"] == "u"  # reads are not refused
    assert r.zscore(board_key, "v") is None


# --- groups --------------------------------------------------------------------------------------


@sync_and_one_loop
def test_group_write_honours_rate_limits_and_events_all_or_nothing(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(datetime.now(UTC))
    alltime = api.leaderboard(key=f"{board_key}:all", events=True, rate_limit=(2, 60))
    daily = api.periodic(key=f"{board_key}:daily", period="day", clock=clock, events=True)
    group = api.group([alltime, daily])
    for score in (10, 20):
        results = group.submit("ada", score, {"name": "Ada"})
        assert results[alltime.key]["score"] == score
    period_key = daily.current().key
    assert [e["score"] for e in alltime.events(last_id="0", block=0)] == [10.0, 20.0]
    assert [e["score"] for e in daily.current().events(last_id="0", block=0)] == [10.0, 20.0]
    # The period's events stream expires with the period, like its other keys.
    assert 0 < r.pttl(f"{period_key}:events") <= r.pttl(period_key) + 1000
    before = snapshot(r, board_key)
    with pytest.raises(RateLimited) as refused:
        group.submit("ada", 30, {"name": "Ada Lovelace"})
    assert 0 < refused.value.retry_after <= 60
    assert snapshot(r, board_key) == before  # nothing written to any board


def test_rate_limited_from_a_group_names_the_board(api: Api, board_key: str) -> None:
    calm = api.leaderboard(f"{board_key}:calm")
    strict = api.leaderboard(f"{board_key}:strict", rate_limit=(1, 60))
    group = api.group([calm, strict])
    group.submit("a", 1)
    with pytest.raises(RateLimited, match=f"{board_key}:strict") as raised:
        group.submit("a", 2)
    assert raised.value.retry_after > 0
    assert calm.get_user_entry("a")["score"] == 1.0
