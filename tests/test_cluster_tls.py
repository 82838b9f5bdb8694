"""Redis Cluster over TLS (the common hosted setup): a 3+3 cluster whose nodes listen on TLS
ports, with the cluster bus and replication over TLS (``tls-cluster yes``,
``tls-replication yes``); the cluster client learns the nodes' TLS ports from CLUSTER SHARDS and
verifies every node's certificate. Every guide method on a hash-tagged board (sync and asyncio,
against the same calls on a single node), certificate failures, and an ACL user."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any, Callable

import pytest

import redis_leaderboard
from conftest import Certificates
from launchers import RedisCluster
from redis_leaderboard import ClusterClient, RedisLeaderboard
from redis_leaderboard import asyncio as rl_asyncio
from redis_leaderboard._redis_server import RedisServerError, TlsUnsupported
from test_cluster import outcome, random_calls


@pytest.fixture(scope="module")
def tls_cluster(certificates: Certificates) -> Iterator[RedisCluster]:
    try:
        cluster = RedisCluster(
            3,
            1,
            node_timeout_ms=5000,
            tls=certificates.server_files(),
            dir_prefix="redis-leaderboard-test-tls-cluster-",
        )
    except RedisServerError as exc:
        pytest.exit(f"{exc} (apt-get install -y redis-server redis-tools)", returncode=2)
    try:
        cluster.start()
    except TlsUnsupported as exc:
        pytest.skip(str(exc))
    yield cluster
    cluster.cleanup()


def tls_options(certificates: Certificates, **options: Any) -> dict[str, Any]:
    return {"ssl": True, "ssl_ca_certs": certificates.ca, "socket_timeout": 5, **options}


def tagged_key() -> str:
    return f"{{tls{uuid.uuid4().hex[:10]}}}:board"


def test_the_map_names_tls_ports_and_the_links_are_tls(
    tls_cluster: RedisCluster, certificates: Certificates
) -> None:
    tls_ports = {port for _, port in tls_cluster.tls_startup_nodes}
    with ClusterClient(tls_cluster.tls_startup_nodes, **tls_options(certificates)) as client:
        # A write to every shard: a replica reports "online" (not "loading") in CLUSTER SHARDS
        # once its replication offset has moved.
        for i in range(30):
            client.execute_command("SET", f"tls-warmup-{i}", i)
        deadline = time.monotonic() + 20
        while True:
            client.refresh()
            shards = client.shards()
            named = {shard["primary"][1] for shard in shards}
            named |= {replica[1] for shard in shards for replica in shard["replicas"]}
            if len(named) == 6 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert named == tls_ports, shards
        assert client.ping()
    # The bus and replication are TLS too: the replicas' links to their primaries are up.
    for node in tls_cluster.nodes:
        info = str(tls_cluster.node_command(node, "INFO", "replication"))
        if "role:slave" in info:
            assert "master_link_status:up" in info
            assert f"master_port:{node.tls_port}" not in info  # its primary's TLS port
            primary_port = int(info.split("master_port:")[1].split()[0])
            assert primary_port in tls_ports


def test_certificates_are_verified(tls_cluster: RedisCluster, certificates: Certificates) -> None:
    nodes = tls_cluster.tls_startup_nodes
    with ClusterClient(nodes, **tls_options(certificates, ssl_ca_certs=certificates.other_ca)) as c:
        with pytest.raises(redis_leaderboard.ConnectionError, match="certificate"):
            c.ping()
    # Plaintext to a TLS port: no answer that makes sense, within the timeout.
    with ClusterClient(nodes, socket_timeout=1) as c:
        with pytest.raises((redis_leaderboard.ConnectionError, redis_leaderboard.TimeoutError)):
            c.ping()


@pytest.mark.parametrize("options", [{}, {"ties": "competition"}, {"ties": "first"}])
def test_every_method_over_tls_matches_a_single_node(
    tls_cluster: RedisCluster,
    certificates: Certificates,
    client: redis_leaderboard.Client,
    board_key: str,
    options: dict[str, Any],
) -> None:
    single = RedisLeaderboard(client, key=board_key, max_entries=12, **options)
    with ClusterClient(tls_cluster.tls_startup_nodes, **tls_options(certificates)) as c:
        on_cluster = RedisLeaderboard(c, key=tagged_key(), max_entries=12, **options)
        for name, args, kwargs in random_calls(len(options) * 11 + 3):
            expected = outcome(single, name, args, kwargs)
            assert outcome(on_cluster, name, args, kwargs) == expected, (name, args, kwargs)
        # An id-carrying submit, and the same id again: applied once.
        first = on_cluster.submit("x", 5, mode="incr", submission_id="tls-1")
        again = on_cluster.submit("x", 5, mode="incr", submission_id="tls-1")
        assert not first["duplicate"] and again["duplicate"]
        assert on_cluster.get_user_entry("x")["score"] == 5


def test_every_method_over_tls_asyncio(
    tls_cluster: RedisCluster,
    certificates: Certificates,
    client: redis_leaderboard.Client,
    board_key: str,
    arun: Callable[..., Any],
) -> None:
    single = RedisLeaderboard(client, key=board_key, max_entries=12)
    calls = random_calls(211)

    async def main() -> list[Any]:
        async with rl_asyncio.ClusterClient(
            tls_cluster.tls_startup_nodes, **tls_options(certificates)
        ) as c:
            board = rl_asyncio.RedisLeaderboard(c, key=tagged_key(), max_entries=12)
            results = []
            for name, args, kwargs in calls:
                try:
                    results.append(("ok", await getattr(board, name)(*args, **kwargs)))
                except Exception as exc:
                    results.append(("error", type(exc).__name__))
            # Many tasks at once on many slots, over TLS.
            boards = [rl_asyncio.RedisLeaderboard(c, key=tagged_key()) for _ in range(12)]
            done = await asyncio.gather(
                *(b.increment_score(f"u{i}", 1) for b in boards for i in range(20))
            )
            assert len(done) == 240
            assert [await b.get_size() for b in boards] == [20] * 12
            return results

    got = arun(main())
    for (name, args, kwargs), result in zip(calls, got):
        assert result == outcome(single, name, args, kwargs), name


def test_acl_user_over_tls(tls_cluster: RedisCluster, certificates: Certificates) -> None:
    key = tagged_key()
    writer, reader = f"w{uuid.uuid4().hex[:6]}", f"r{uuid.uuid4().hex[:6]}"
    password = "pw-" + uuid.uuid4().hex
    rules = {
        writer: ["on", f">{password}", "~*", "&*", "+@all"],
        # Reads only: the board's read commands and scripts flagged no-writes.
        reader: ["on", f">{password}", "~*", "+@read", "+evalsha", "+eval", "+cluster", "+ping"],
    }
    for node in tls_cluster.nodes:
        for user, rule in rules.items():
            tls_cluster.node_command(node, "ACL", "SETUSER", user, *rule)
    nodes = tls_cluster.tls_startup_nodes
    try:
        with ClusterClient(
            nodes, **tls_options(certificates, username=writer, password=password)
        ) as c:
            board = RedisLeaderboard(c, key=key)
            assert board.upsert_user("a", 1)["rank"] == 1
            assert board.submit("b", 2)["rank"] == 1
        with ClusterClient(
            nodes, **tls_options(certificates, username=reader, password=password)
        ) as c:
            board = RedisLeaderboard(c, key=key)
            assert [e["user_id"] for e in board.get_top(2)] == ["b", "a"]
            with pytest.raises(redis_leaderboard.NoPermissionError):
                board.upsert_user("c", 3)
        with ClusterClient(nodes, **tls_options(certificates, username=writer, password="no")) as c:
            with pytest.raises(redis_leaderboard.AuthenticationError):
                c.ping()
    finally:
        for node in tls_cluster.nodes:
            for user in rules:
                tls_cluster.node_command(node, "ACL", "DELUSER", user)
