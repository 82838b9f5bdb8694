"""``max_entries=None`` on sharded boards (a cluster's): no write trims, and
``set_shard_max_entries(None)`` lifts a limit, sync and asyncio. The other board types:
tests/boards/test_limits.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, Callable

import pytest

import redis_leaderboard.asyncio as aio
from launchers import RedisCluster
from redis_leaderboard import ClusterClient, ShardedLeaderboard

PLAYERS = 150


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
