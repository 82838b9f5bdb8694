"""A periodic board answers every query of a plain board, on its current period: each equals
the same query on ``current()``'s board (sync and asyncio), and the set of public methods of
``RedisLeaderboard`` that a ``PeriodicLeaderboard`` lacks is pinned, so a query added to one
and not the other fails here. ``events()`` follows the current period's stream."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest

import redis_leaderboard.asyncio as aio
from conftest import RedisServer, unique_key
from redis_leaderboard import Client, PeriodicLeaderboard, RedisLeaderboard

UTC = timezone.utc

# Public methods of RedisLeaderboard a periodic board does not forward, and why: writes that
# act on a whole board, reached on a period's board (``board.current()``, ``board.at(...)``).
NOT_FORWARDED = {
    "clear": "clears one period: current().clear() or at(when).clear()",
    "set_max_entries": "a period's limit: current().set_max_entries(n)",
    "upsert_many": "a bulk load into one period: current().upsert_many(...)",
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


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "periodic-queries") as k:
        yield k


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


def test_queries_go_to_the_current_period(client: Client, key: str) -> None:
    clock = FakeClock(datetime.now(UTC))
    board = PeriodicLeaderboard(client, key, "day", clock=clock)
    fill(board)
    current = board.current()
    for name, args, kwargs in QUERIES:
        assert getattr(board, name)(*args, **kwargs) == getattr(current, name)(*args, **kwargs)
    assert board.get_percentile("p0") == 0.0
    assert board.count_by_score(float("-inf"), float("inf")) == 10
    # The next day: the queries see the new (empty) period, the old one stays readable.
    clock.now += timedelta(days=1)
    assert board.count_by_score(float("-inf"), float("inf")) == 0
    assert board.get_entries(["p1"]) == [None]
    assert board.get_histogram(3) == []
    assert board.previous().count_by_score(float("-inf"), float("inf")) == 10


def test_async_queries_go_to_the_current_period(
    redis_server: RedisServer, key: str, arun: Callable[..., Any]
) -> None:
    clock = FakeClock(datetime.now(UTC))

    async def main() -> None:
        async with aio.Client(port=redis_server.port) as aclient:
            board = aio.PeriodicLeaderboard(aclient, key, "day", clock=clock)
            for i in range(10):
                await board.upsert_user(f"p{i}", i + (i % 3) * 0.5, {"n": str(i)})
            current = board.current()
            for name, args, kwargs in QUERIES:
                expected = await getattr(current, name)(*args, **kwargs)
                assert await getattr(board, name)(*args, **kwargs) == expected, name
            clock.now += timedelta(days=1)
            assert await board.count_by_score(float("-inf"), float("inf")) == 0

    arun(main())


def test_events_follow_the_current_period(client: Client, key: str) -> None:
    clock = FakeClock(datetime.now(UTC))
    board = PeriodicLeaderboard(client, key, "day", clock=clock, events=True)
    board.upsert_user("a", 1)
    with board.events("0", block=0) as stream:
        assert [e["user_id"] for e in stream] == ["a"]
    clock.now += timedelta(days=1)  # a rollover: the new period has its own stream
    board.upsert_user("b", 2)
    assert [e["user_id"] for e in board.events("0", block=0)] == ["b"]
    assert [e["user_id"] for e in board.previous().events("0", block=0)] == ["a"]


def test_async_events_follow_the_current_period(
    redis_server: RedisServer, key: str, arun: Callable[..., Any]
) -> None:
    clock = FakeClock(datetime.now(UTC))

    async def main() -> list[list[str]]:
        async with aio.Client(port=redis_server.port) as aclient:
            board = aio.PeriodicLeaderboard(aclient, key, "day", clock=clock, events=True)
            await board.upsert_user("a", 1)
            first = [e["user_id"] async for e in board.events("0", block=0)]
            clock.now += timedelta(days=1)
            await board.upsert_user("b", 2)
            second = [e["user_id"] async for e in board.events("0", block=0)]
            return [first, second]

    assert arun(main()) == [["a"], ["b"]]


def test_periodic_query_arguments_are_checked_before_sending(client: Client, key: str) -> None:
    board = PeriodicLeaderboard(client, key, "day")
    with pytest.raises(ValueError):
        board.score_at_percentile(101)
    with pytest.raises(ValueError):
        board.get_histogram(0)
    with pytest.raises(TypeError):
        board.get_entries("p1")
