"""Change-event streams (``board.events()``): every argument is checked when ``events()`` is
called, before any state or connection exists, so a bad one raises there and nothing is left
for ``__del__`` to trip on; ``read(0)`` answers at once (XREAD without BLOCK), sync and asyncio."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest

from conftest import RedisServer, unique_key
from redis_leaderboard import Client, RedisLeaderboard
from redis_leaderboard.asyncio import Client as AsyncClient
from redis_leaderboard.asyncio import RedisLeaderboard as AsyncRedisLeaderboard

BAD_ARGUMENTS = [
    ({"count": -5}, ValueError, "count"),
    ({"count": 0}, ValueError, "count"),
    ({"count": "x"}, TypeError, "count"),
    ({"block": "x"}, TypeError, "block"),
    ({"block": -1}, ValueError, "block"),
    ({"block": True}, TypeError, "block"),
    ({"last_id": ""}, ValueError, "last_id"),
]


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "events-args") as k:
        yield k


@pytest.fixture
def unraisable() -> Iterator[list[Any]]:
    """What ``sys.unraisablehook`` saw during the test (an exception in ``__del__``)."""
    seen: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        yield seen
    finally:
        sys.unraisablehook = previous


@pytest.mark.parametrize(("kwargs", "error", "name"), BAD_ARGUMENTS)
def test_events_checks_every_argument_when_called(
    client: Client, key: str, unraisable: list[Any], kwargs: dict[str, Any], error: type, name: str
) -> None:
    board = RedisLeaderboard(client, key, 10, events=True)
    with pytest.raises(error, match=name):
        board.events(**kwargs)  # raises here, not at the first iteration
    gc.collect()  # the half-made stream (if any) is gone: its __del__ has run
    assert [str(u.exc_value) for u in unraisable] == []


@pytest.mark.parametrize(("kwargs", "error", "name"), BAD_ARGUMENTS)
def test_async_events_checks_every_argument_when_called(
    redis_server: RedisServer,
    key: str,
    unraisable: list[Any],
    arun: Callable[..., Any],
    kwargs: dict[str, Any],
    error: type,
    name: str,
) -> None:
    async def main() -> None:
        async with AsyncClient(port=redis_server.port) as aclient:
            board = AsyncRedisLeaderboard(aclient, key, 10, events=True)
            with pytest.raises(error, match=name):
                board.events(**kwargs)

    arun(main())
    gc.collect()
    assert [str(u.exc_value) for u in unraisable] == []


def test_read_checks_block(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, events=True)
    with board.events("0") as stream:
        with pytest.raises(TypeError, match="block"):
            stream.read("x")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="block"):
            stream.read(-1)


def timed(read: Callable[[], Any], times: int = 5) -> float:
    """The median seconds of ``times`` calls of ``read``."""
    took = []
    for _ in range(times):
        started = time.perf_counter()
        assert read() == []
        took.append(time.perf_counter() - started)
    return statistics.median(took)


def test_read_zero_does_not_block(client: Client, key: str) -> None:
    # An idle stream: "XREAD BLOCK 1" would wait for the server's timer (about 100 ms at the
    # default hz 10); block=0 is "what is there now": XREAD without BLOCK.
    board = RedisLeaderboard(client, key, 10, events=True)
    board.upsert_user("a", 1)
    with board.events("$") as stream:
        assert stream.read(0) == []  # resolves "$" and connects
        assert timed(lambda: stream.read(0)) < 0.03
        assert timed(lambda: stream.read(None)) < 0.03
        board.upsert_user("b", 2)
        assert [e["user_id"] for e in stream.read(0)] == ["b"]


def test_async_read_zero_does_not_block(
    redis_server: RedisServer, key: str, arun: Callable[..., Any]
) -> None:
    async def main() -> tuple[float, list[str]]:
        async with AsyncClient(port=redis_server.port) as aclient:
            board = AsyncRedisLeaderboard(aclient, key, 10, events=True)
            await board.upsert_user("a", 1)
            async with board.events("$") as stream:
                assert await stream.read(0) == []
                took = []
                for _ in range(5):
                    started = time.perf_counter()
                    assert await stream.read(0) == []
                    took.append(time.perf_counter() - started)
                await board.upsert_user("b", 2)
                return statistics.median(took), [e["user_id"] for e in await stream.read(0)]

    median, users = arun(main())
    assert median < 0.03
    assert users == ["b"]
