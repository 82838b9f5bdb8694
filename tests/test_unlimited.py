"""``max_entries=None``: an unlimited board, which no write trims, on every board type that
takes ``max_entries`` (plain, periodic, rolling, sharded, and boards in a group), sync and
asyncio; ``set_max_entries(None)`` lifts a limit. The default stays the guide's 100: the 101st
player trims the worst."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest

import redis_leaderboard.asyncio as aio
from conftest import RedisServer, unique_key
from launchers import RedisCluster
from redis_leaderboard import (
    Client,
    ClusterClient,
    LeaderboardGroup,
    PeriodicLeaderboard,
    RedisLeaderboard,
    RollingLeaderboard,
    ShardedLeaderboard,
    _core,
)

PLAYERS = 150
NOW = datetime.now(timezone.utc)  # periods in the past would expire at once


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "unlimited") as k:
        yield k


def test_the_default_trims_the_101st_player(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key)
    assert board.max_entries == 100
    for i in range(100):
        assert board.upsert_user(f"p{i}", i + 1)["trimmed_user_ids"] == []
    assert board.upsert_user("p100", 500)["trimmed_user_ids"] == ["p0"]
    assert board.get_size() == 100


def test_an_unlimited_board_keeps_every_player(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, None)
    assert board.max_entries is None
    assert "max_entries=None" in repr(board)
    for i in range(PLAYERS):
        assert board.upsert_user(f"p{i}", i)["trimmed_user_ids"] == []
    assert board.submit("late", -1)["trimmed_user_ids"] == []
    assert board.upsert_many((f"bulk{i}", i) for i in range(50))["trimmed"] == 0
    assert board.get_size() == PLAYERS + 51
    assert board.get_rank("late") == PLAYERS + 51  # the worst, still on the board
    assert board.set_max_entries(None) == []  # no limit to trim to


def test_set_max_entries_none_lifts_a_limit(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10)
    for i in range(20):
        board.upsert_user(f"p{i}", i)
    assert board.get_size() == 10
    assert board.set_max_entries(None) == []
    assert board.max_entries is None
    for i in range(20, PLAYERS):
        board.upsert_user(f"p{i}", i)
    assert board.get_size() == PLAYERS - 10
    assert len(board.set_max_entries(100)) == PLAYERS - 110
    assert board.max_entries == 100


@pytest.mark.parametrize("bad", [0, -1])
def test_a_limit_below_one_is_still_refused(key: str, bad: int) -> None:
    with pytest.raises(ValueError, match="max_entries"):
        _core.Board(key, bad)
    with pytest.raises(TypeError, match="max_entries"):
        _core.Board(key, "100")  # type: ignore[arg-type]


def test_an_unlimited_async_board(
    redis_server: RedisServer, key: str, arun: Callable[..., Any]
) -> None:
    async def main() -> tuple[Any, int, list[str]]:
        async with aio.Client(port=redis_server.port) as aclient:
            board = aio.RedisLeaderboard(aclient, key, max_entries=None)
            trimmed: list[str] = []
            for i in range(PLAYERS):
                trimmed += (await board.upsert_user(f"p{i}", i))["trimmed_user_ids"]
            return board.max_entries, await board.get_size(), trimmed

    assert arun(main()) == (None, PLAYERS, [])


def test_unlimited_periodic_rolling_and_group_boards(client: Client, key: str) -> None:
    periodic = PeriodicLeaderboard(
        client, f"{key}:daily", "day", max_entries=None, clock=lambda: NOW
    )
    rolling = RollingLeaderboard(
        client,
        f"{key}:recent",
        timedelta(hours=2),
        timedelta(hours=1),
        max_entries=None,
        clock=lambda: NOW,
    )
    plain = RedisLeaderboard(client, f"{key}:alltime", None)
    group = LeaderboardGroup(client, [plain, periodic, rolling])
    assert periodic.max_entries is None and periodic.current().max_entries is None
    assert rolling.max_entries is None
    for i in range(PLAYERS):
        results = group.submit(f"p{i}", i)
        assert all(r["trimmed_user_ids"] == [] for r in results.values())
    assert plain.get_size() == periodic.get_size() == rolling.get_size() == PLAYERS
    for i in range(PLAYERS, PLAYERS + 5):
        periodic.upsert_user(f"p{i}", i)
        rolling.increment_score(f"p{i}", i)
    assert periodic.get_size() == rolling.get_size() == PLAYERS + 5


def test_unlimited_async_periodic_and_rolling(
    redis_server: RedisServer, key: str, arun: Callable[..., Any]
) -> None:
    async def main() -> list[int]:
        async with aio.Client(port=redis_server.port) as aclient:
            periodic = aio.PeriodicLeaderboard(
                aclient, f"{key}:daily", "day", max_entries=None, clock=lambda: NOW
            )
            rolling = aio.RollingLeaderboard(
                aclient,
                f"{key}:recent",
                timedelta(hours=2),
                timedelta(hours=1),
                max_entries=None,
                clock=lambda: NOW,
            )
            group = aio.LeaderboardGroup(aclient, [periodic, rolling])
            for i in range(PLAYERS):
                await group.submit(f"p{i}", i)
            return [await periodic.get_size(), await rolling.get_size()]

    assert arun(main()) == [PLAYERS, PLAYERS]


@pytest.fixture
def cluster_client(redis_cluster: RedisCluster) -> Iterator[ClusterClient]:
    client = ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    yield client
    client.close()


def test_an_unlimited_sharded_board(cluster_client: ClusterClient) -> None:
    board = ShardedLeaderboard(
        cluster_client, f"unl{uuid.uuid4().hex[:8]}", shards=1, max_entries=None
    )
    assert board.max_entries is None
    for i in range(PLAYERS):
        assert board.upsert_user(f"p{i}", i)["trimmed_user_ids"] == []
    assert board.get_size() == PLAYERS
    assert len(board.set_shard_max_entries(100)) == PLAYERS - 100
    assert board.set_shard_max_entries(None) == []
    assert board.max_entries is None
    board.clear()


def test_an_unlimited_async_sharded_board(
    redis_cluster: RedisCluster, arun: Callable[..., Any]
) -> None:
    async def main() -> tuple[Any, int]:
        async with aio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            board = aio.ShardedLeaderboard(
                c, f"unl{uuid.uuid4().hex[:8]}", shards=2, max_entries=None
            )
            for i in range(PLAYERS):
                await board.upsert_user(f"p{i}", i)
            size = await board.get_size()
            await board.clear()
            return board.max_entries, size

    assert arun(main()) == (None, PLAYERS)
