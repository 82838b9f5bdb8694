"""A client of the other API (a blocking client for an asyncio board, or the reverse): both
classes are called ``Client``, so the error names their modules."""

from __future__ import annotations

from typing import Any, Callable

import pytest

import redis_leaderboard.asyncio as aio
from conftest import RedisServer
from launchers import RedisCluster
from redis_leaderboard import (
    Client,
    ClusterClient,
    PeriodicLeaderboard,
    RedisLeaderboard,
    ShardedLeaderboard,
)


def test_a_blocking_client_for_an_asyncio_board(client: Client) -> None:
    for make in (
        lambda: aio.RedisLeaderboard(client, "k"),
        lambda: aio.PeriodicLeaderboard(client, "k", "day"),
    ):
        with pytest.raises(TypeError) as error:
            make()
        message = str(error.value)
        assert "must be a redis_leaderboard.asyncio.Client" in message
        assert "not a redis_leaderboard.Client (a blocking client" in message


def test_an_asyncio_client_for_a_blocking_board(
    redis_server: RedisServer, arun: Callable[..., Any]
) -> None:
    async def main() -> list[str]:
        async with aio.Client(port=redis_server.port) as aclient:
            messages = []
            for make in (
                lambda: RedisLeaderboard(aclient, "k"),
                lambda: PeriodicLeaderboard(aclient, "k", "day"),
            ):
                with pytest.raises(TypeError) as error:
                    make()
                messages.append(str(error.value))
            return messages

    for message in arun(main()):
        assert "must be a redis_leaderboard.Client" in message
        assert "not a redis_leaderboard.asyncio.Client (an asyncio client" in message


def test_something_else_is_named_with_its_module() -> None:
    with pytest.raises(TypeError, match=r"not collections\.OrderedDict$"):
        RedisLeaderboard(__import__("collections").OrderedDict(), "k")
    with pytest.raises(TypeError, match=r"not int$"):
        RedisLeaderboard(5, "k")  # type: ignore[arg-type]


def test_a_cluster_client_of_the_other_api(redis_cluster: RedisCluster) -> None:
    cluster = ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    try:
        with pytest.raises(TypeError) as error:
            aio.RedisLeaderboard(cluster, "{k}")
    finally:
        cluster.close()
    assert str(error.value) == (
        "redis_leaderboard.asyncio.RedisLeaderboard runs on a "
        "redis_leaderboard.asyncio.ClusterClient, not a redis_leaderboard.ClusterClient"
    )


def test_a_sharded_board_on_a_cluster_client_of_the_other_api(
    redis_cluster: RedisCluster, arun: Callable[..., Any]
) -> None:
    cluster = ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    try:
        with pytest.raises(TypeError) as error:
            aio.ShardedLeaderboard(cluster, "lb")
    finally:
        cluster.close()
    assert str(error.value) == (
        "redis_leaderboard.asyncio.ShardedLeaderboard runs on a "
        "redis_leaderboard.asyncio.ClusterClient, not a redis_leaderboard.ClusterClient"
    )

    async def main() -> str:
        async with aio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            with pytest.raises(TypeError) as error:
                ShardedLeaderboard(c, "lb")
            return str(error.value)

    assert arun(main()) == (
        "ShardedLeaderboard runs on a redis_leaderboard.ClusterClient, "
        "not a redis_leaderboard.asyncio.ClusterClient"
    )
