"""Guards on sharded boards: ``submit(submission_id=..., retries=...)`` goes to the user's
shard, a plain board with submission ids, and applies once; ``rate_limit`` is per user (each
shard board enforces it: a user's writes all go to its shard); ``events`` are refused by name,
with the reason. Sync and asyncio, on the session's cluster."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any, Callable

import pytest

import redis_leaderboard.asyncio as aio
from launchers import RedisCluster
from redis_leaderboard import ClusterClient, ConnectionError, RateLimited, ShardedLeaderboard, _core


@pytest.fixture
def cluster_client(redis_cluster: RedisCluster) -> Iterator[ClusterClient]:
    client = ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    yield client
    client.close()


def name() -> str:
    return f"guards{uuid.uuid4().hex[:8]}"


def test_sharded_submit_with_a_submission_id_applies_once(cluster_client: ClusterClient) -> None:
    board = ShardedLeaderboard(cluster_client, name(), shards=4)
    first = board.submit("ann", 10, {"n": "1"}, mode="incr", submission_id="run-1")
    again = board.submit("ann", 10, {"n": "1"}, mode="incr", submission_id="run-1", retries=0)
    assert first["duplicate"] is False and again["duplicate"] is True
    assert {k: v for k, v in again.items() if k != "duplicate"} == {
        k: v for k, v in first.items() if k != "duplicate"
    }
    assert first["shard"] == again["shard"]
    assert board.get_user_entry("ann")["score"] == 10.0  # applied once
    assert board.submit("ann", 5, mode="incr", submission_id="run-2")["score"] == 15.0
    with pytest.raises(ValueError, match="retries"):
        board.submit("ann", 1, submission_id="run-3", retries=-1)
    with pytest.raises(TypeError, match="submission_id"):
        board.submit("ann", 1, submission_id=7)  # type: ignore[arg-type]
    board.clear()


def test_sharded_rate_limit_is_per_user(cluster_client: ClusterClient) -> None:
    board = ShardedLeaderboard(cluster_client, name(), shards=4, rate_limit=(2, 60))
    assert board.rate_limit == (2, 60.0)
    board.submit("ann", 1)
    board.upsert_user("ann", 2)
    with pytest.raises(RateLimited):
        board.increment_score("ann", 1)
    for user in ("bob", "cy", "dee"):  # other users, other shards or not: their own budgets
        board.submit(user, 1)
        board.submit(user, 2)
    assert board.get_user_entry("ann")["score"] == 2.0
    # upsert_many's shard boards are opened with the same options (a bulk load is not limited).
    assert board.upsert_many([("ann", 9), ("eve", 3)])["written"] == 2
    board.clear()


def test_sharded_events_are_refused_by_name(cluster_client: ClusterClient) -> None:
    with pytest.raises(NotImplementedError, match=r"events.*own stream"):
        ShardedLeaderboard(cluster_client, name(), events=True)
    board = ShardedLeaderboard(cluster_client, name())
    with pytest.raises(NotImplementedError, match=r"events.*XREAD"):
        board.events()


def test_async_sharded_guards(redis_cluster: RedisCluster, arun: Callable[..., Any]) -> None:
    async def main() -> None:
        async with aio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            board = aio.ShardedLeaderboard(c, name(), shards=3, rate_limit=(3, 60))
            first = await board.submit("ann", 10, mode="incr", submission_id="run-1")
            again = await board.submit("ann", 10, mode="incr", submission_id="run-1", retries=1)
            assert (first["duplicate"], again["duplicate"]) == (False, True)
            assert again["score"] == 10.0
            assert (await board.get_user_entry("ann"))["score"] == 10.0
            for score in range(3):
                await board.submit("bob", score)
            with pytest.raises(RateLimited):
                await board.submit("bob", 9)
            with pytest.raises(NotImplementedError, match="events"):
                board.events()
            with pytest.raises(NotImplementedError, match="events"):
                aio.ShardedLeaderboard(c, name(), events=True)
            await board.clear()

    arun(main())


def cut_while_paused(redis_cluster: RedisCluster, shard: str) -> threading.Thread:
    """Pauses writes on the node serving ``shard`` for 1 s and, 0.3 s in, kills its normal
    connections: a write sent meanwhile was never applied, and its connection is gone."""
    node = redis_cluster.owner(_core.key_slot(shard))
    redis_cluster.node_command(node, "CLIENT", "PAUSE", "1000", "WRITE")

    def cut() -> None:
        time.sleep(0.3)
        redis_cluster.node_command(node, "CLIENT", "KILL", "TYPE", "normal")

    thread = threading.Thread(target=cut)
    thread.start()
    return thread


def test_sharded_submit_with_an_id_is_resent_after_a_lost_connection(
    redis_cluster: RedisCluster, cluster_client: ClusterClient
) -> None:
    board = ShardedLeaderboard(cluster_client, name(), shards=4)
    board.submit("ann", 1)  # connected to the shard's node
    shard = board.shard_key("ann")
    resends = cluster_client.stats()["resends"]
    cut = cut_while_paused(redis_cluster, shard)
    try:
        result = board.submit("ann", 5, mode="incr", submission_id="r1", retries=2)
    finally:
        cut.join()
    assert cluster_client.stats()["resends"] > resends  # its connection was cut: sent again
    assert (result["duplicate"], result["score"]) == (False, 6.0)
    assert board.get_user_entry("ann")["score"] == 6.0  # applied once
    # retries=0: the lost reply is not resent.
    cut = cut_while_paused(redis_cluster, shard)
    try:
        with pytest.raises(ConnectionError):
            board.submit("ann", 5, mode="incr", submission_id="r2", retries=0)
    finally:
        cut.join()
    time.sleep(0.8)  # the pause is over
    assert board.get_user_entry("ann")["score"] == 6.0  # the killed write never ran
    board.clear()


def test_async_sharded_submit_with_an_id_is_resent_after_a_lost_connection(
    redis_cluster: RedisCluster, arun: Callable[..., Any]
) -> None:
    async def main() -> tuple[Any, ...]:
        async with aio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            board = aio.ShardedLeaderboard(c, name(), shards=4)
            await board.submit("ann", 1)
            cut = cut_while_paused(redis_cluster, board.shard_key("ann"))
            resends = c.stats()["resends"]
            try:
                result = await board.submit("ann", 5, mode="incr", submission_id="r1")
            finally:
                await asyncio.to_thread(cut.join)
            entry = await board.get_user_entry("ann")
            await board.clear()
            return (
                c.stats()["resends"] > resends,
                result["duplicate"],
                result["score"],
                entry["score"],
            )

    assert arun(main()) == (True, False, 6.0, 6.0)
