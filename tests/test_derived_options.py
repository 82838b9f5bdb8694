"""Clients derived from another client's options get every one of them: the asyncio client's
client-side cache is built by its core from the core's own options object, and the cluster
clients take every connection option of :class:`ClientOptions` but those naming one server
(``ClientOptions.cluster_kwargs``). A connection option forgotten on the way shows here: a
non-default value that does not survive into the derived client."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from typing import Any

import pytest

import redis_leaderboard.asyncio as aio
from redis_leaderboard import _core
from redis_leaderboard.cluster import AsyncClusterClient, ClusterClient, cluster_url_options
from redis_leaderboard.options import (
    URL_QUERY_ARGUMENT_PARSERS,
    ClientOptions,
    parse_url,
)

# A non-default value for every query key of a URL that a cluster client takes.
CLUSTER_URL_SAMPLES = {
    "username": "someone",
    "password": "secret",
    "client_name": "derived",
    "socket_timeout": "2.5",
    "socket_connect_timeout": "1.5",
    "ssl": "true",
    "ssl_ca_certs": "/ca.pem",
    "ssl_ca_path": "/ca-dir",
    "ssl_certfile": "/client.pem",
    "ssl_keyfile": "/client.key",
    "ssl_password": "key-secret",
    "ssl_cert_reqs": "none",
    "ssl_check_hostname": "false",
    "ssl_min_version": "TLSv1.3",
    "ssl_ciphers": "HIGH",
    "min_replicas": "1",
    "replica_timeout": "0.5",
    "wait_aof": "true",
}
NOT_FOR_CLUSTER_URL = {"db", "sentinel_username", "sentinel_password", "sentinel_ssl"}


def test_the_asyncio_cache_connection_has_every_option_of_the_client(redis_server: Any) -> None:
    name = f"derived-{uuid.uuid4().hex[:8]}"
    key = f"derived:{uuid.uuid4().hex[:8]}"
    raw = redis_server.redis_py(db=3)

    async def main() -> None:
        client = aio.Client(
            host=redis_server.host,
            port=redis_server.port,
            password=redis_server.password,
            db=3,
            client_name=name,
            client_cache=True,
        )
        board = aio.RedisLeaderboard(client, key=key)
        await board.upsert_user("ada", 1, {"name": "Ada"})
        deadline = time.monotonic() + 5
        while not client.cache_info()["tracking"]:  # the invalidation connection is set up
            assert time.monotonic() < deadline, "the cache never turned on"
            await board.get_top(1)
            await asyncio.sleep(0.01)
        named = [c for c in raw.client_list() if c["name"] == name]
        # The client's connection and the cache's, both on database 3 under the client's name.
        assert len(named) == 2, named
        assert {c["db"] for c in named} == {"3"}
        for _ in range(2):  # a miss fills the cache, then a hit
            assert (await board.get_top(1))[0]["metadata"] == {"name": "Ada"}
        assert client.cache_info()["hits"] >= 1
        await client.aclose()

    try:
        asyncio.run(main())
    finally:
        raw.delete(key, f"{key}:user:ada")
        raw.close()


def test_every_cluster_option_of_a_url_reaches_the_cluster_client() -> None:
    assert set(CLUSTER_URL_SAMPLES) == set(URL_QUERY_ARGUMENT_PARSERS) - NOT_FOR_CLUSTER_URL, (
        "a new URL query key: give it a non-default sample here"
    )
    query = "&".join(f"{k}={v}" for k, v in CLUSTER_URL_SAMPLES.items())
    single = parse_url(f"redis://h1:7000?{query}")
    derived = cluster_url_options(f"redis://h1:7000,h2:7001?cluster=true&{query}")
    for name in CLUSTER_URL_SAMPLES:
        assert derived[name] == getattr(single, name) != getattr(ClientOptions(), name), name
    assert derived["startup_nodes"] == [("h1", 7000), ("h2", 7001)]


def test_the_cluster_clients_take_every_cluster_option() -> None:
    # Every option ClientOptions.cluster_kwargs() hands on, a non-default value each where one
    # can be given without files: the constructors refuse an unknown keyword (TypeError).
    options = dataclasses.replace(
        ClientOptions(),
        username="someone",
        password="secret",
        socket_timeout=2.5,
        socket_connect_timeout=1.5,
        client_name="derived",
        max_reply_bytes=1 << 20,
        ssl_check_hostname=False,
        ssl_ciphers="HIGH",
    )
    kwargs = options.cluster_kwargs()
    changed = {
        f.name
        for f in dataclasses.fields(ClientOptions)
        if getattr(options, f.name) != getattr(ClientOptions(), f.name)
    }
    assert changed <= set(kwargs)
    ClusterClient(startup_nodes=[("127.0.0.1", 1)], **kwargs).close()
    AsyncClusterClient([("127.0.0.1", 1)], **kwargs).close()
    with pytest.raises(TypeError):
        AsyncClusterClient([("127.0.0.1", 1)], no_such_option=1)  # type: ignore[call-arg]


def named_connections(cluster: Any, name: str) -> int:
    """How many connections named ``name`` the cluster's nodes have."""
    seen = 0
    for host, port in cluster.startup_nodes:
        raw = _core.Client(host=host, port=port, password=cluster.password)
        listing = raw.execute_command("CLIENT", "LIST")
        text = listing.decode() if isinstance(listing, bytes) else str(listing)
        seen += text.count(f"name={name} ")
        raw.close()
    return seen


def test_a_non_default_option_survives_into_the_cluster_clients(redis_cluster: Any) -> None:
    name = f"derived-{uuid.uuid4().hex[:8]}"
    url = f"{redis_cluster.url}&client_name={name}"
    with ClusterClient.from_url(url) as client:
        assert client.ping()
        assert named_connections(redis_cluster, name) >= 1

    async def main() -> None:
        client = AsyncClusterClient.from_url(url)
        assert await client.ping()
        assert named_connections(redis_cluster, name) >= 1
        await client.aclose()

    asyncio.run(main())
