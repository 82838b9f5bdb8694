"""Seasons (issue 16) meet guards (issue 17): a group write honours each board's rate limit and
events (all or nothing: a rate-limited board stops the whole write), a periodic board carries
guards, its events stream expires with its period, and a duplicate submission id on a period
writes nothing."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, Iterator

import pytest

import redis_leaderboard.asyncio as aio
from redis_leaderboard import (
    LeaderboardGroup,
    PeriodicLeaderboard,
    RateLimited,
    RedisLeaderboard,
)

UTC = timezone.utc


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def r(redis_server: Any) -> Iterator[Any]:
    client = redis_server.redis_py()
    yield client
    client.close()


def snapshot(r: Any, key: str) -> dict[str, Any]:
    """Every key under `key`, with its type and content (streams: their entries)."""
    out: dict[str, Any] = {}
    for name in sorted(r.scan_iter(match=f"{key}*", count=1000)):
        kind = r.type(name)
        if kind == "zset":
            out[name] = r.zrange(name, 0, -1, withscores=True)
        elif kind == "hash":
            out[name] = r.hgetall(name)
        elif kind == "stream":
            out[name] = [fields for _, fields in r.xrange(name)]
        else:
            out[name] = (kind, r.dump(name))
    return out


def test_group_write_honours_rate_limits_and_events_all_or_nothing(
    client: Any, board_key: str, r: Any
) -> None:
    clock = FakeClock(datetime.now(UTC))
    alltime = RedisLeaderboard(client, key=f"{board_key}:all", events=True, rate_limit=(2, 60))
    daily = PeriodicLeaderboard(
        client, key=f"{board_key}:daily", period="day", clock=clock, events=True
    )
    group = LeaderboardGroup(client, [alltime, daily])
    for score in (10, 20):
        results = group.submit("ada", score, {"name": "Ada"})
        assert results[alltime.key]["score"] == score
    period_key = daily.current().key
    assert [e["score"] for e in alltime.events(last_id="0", block=0.01)] == [10.0, 20.0]
    assert [e["score"] for e in daily.current().events(last_id="0", block=0.01)] == [10.0, 20.0]
    # The period's events stream expires with the period, like its other keys.
    assert 0 < r.pttl(f"{period_key}:events") <= r.pttl(period_key) + 1000
    before = snapshot(r, board_key)
    with pytest.raises(RateLimited) as refused:
        group.submit("ada", 30, {"name": "Ada Lovelace"})
    assert 0 < refused.value.retry_after <= 60
    assert snapshot(r, board_key) == before  # nothing written to any board


def test_group_write_without_a_boards_recorded_events_is_refused(
    client: Any, board_key: str, r: Any
) -> None:
    RedisLeaderboard(client, key=board_key, events=True).submit("ada", 1)
    plain = RedisLeaderboard(client, key=board_key)  # no events: the recorded guard differs
    other = RedisLeaderboard(client, key=f"{board_key}:other")
    before = snapshot(r, board_key)
    with pytest.raises(ValueError, match="events"):
        LeaderboardGroup(client, [other, plain]).submit("bob", 5)
    assert snapshot(r, board_key) == before


def test_a_periods_submission_id_applies_once(client: Any, board_key: str, r: Any) -> None:
    clock = FakeClock(datetime.now(UTC))
    weekly = PeriodicLeaderboard(
        client, key=board_key, period="week", clock=clock, submission_ttl=30
    )
    first = weekly.submit("ada", 5, mode="incr", submission_id="match-1")
    again = weekly.submit("ada", 5, mode="incr", submission_id="match-1")
    assert (first["duplicate"], again["duplicate"]) == (False, True)
    assert weekly.get_user_entry("ada")["score"] == 5.0
    # The id is the periodic board's, whatever the period (see test_submission_ownership.py).
    key = f"{board_key}:submission:match-1"
    assert 0 < r.pttl(key) <= 30_000


def test_asyncio_group_write_appends_each_boards_event(
    redis_server: Any, board_key: str, arun: Callable[..., Any]
) -> None:
    async def main() -> None:
        async with aio.Client(host=redis_server.host, port=redis_server.port) as client:
            clock = FakeClock(datetime.now(UTC))
            alltime = aio.RedisLeaderboard(client, key=f"{board_key}:all", events=True)
            daily = aio.PeriodicLeaderboard(
                client, key=f"{board_key}:daily", period="day", clock=clock, events=True
            )
            group = aio.LeaderboardGroup(client, [alltime, daily])
            await group.submit("ada", 3)
            await group.submit("bob", 4)
            async with alltime.events(last_id="0", block=0.05) as stream:
                seen = [(e["user_id"], e["rank"], e["overtaken"]) async for e in stream]
            assert seen == [("ada", 1, []), ("bob", 1, ["ada"])]

    arun(main())
