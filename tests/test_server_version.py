"""A server older than the scripts need (Redis 7.0, Valkey 7.2: script flags) is refused at
connect, with its version and the minimum named, before any request is sent (issue 39, item 8):
Redis 6.2 answered every call with ``ERR Error compiling script ... unexpected symbol near
'#'``. Each connection's handshake carries ``HELLO 2`` (RESP2, as before), whose reply names the
server and its version; a HELLO refused (an ACL without it) checks nothing."""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

import redis_leaderboard as rl
import redis_leaderboard.asyncio as aio
from conftest import RedisServer
from hostile import HostileServer, hello_reply

# The address: host:port, or "'mymaster' via Sentinel".
TOO_OLD = r"Redis 6\.2\.0 at \S.* is too old: redis_leaderboard needs Redis 7\.0\+"


def refuse_everything(connection: int, argv: list[bytes]) -> bytes:
    return b"-ERR no request may reach this server\r\n"


def sentinel_of(server: HostileServer) -> HostileServer:
    """A sentinel naming ``server`` the primary of 'mymaster' (and saying nothing else)."""

    def respond(connection: int, argv: list[bytes]) -> bytes | None:
        if argv[0].upper() == b"SENTINEL":
            port = str(server.port).encode()
            return b"*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n" % (len(port), port)
        return None  # SUBSCRIBE +switch-master: no event ever comes

    return HostileServer(respond)


def write_with(kind: str, server: HostileServer, sentinel: HostileServer) -> None:
    """One write to ``server`` through a client of ``kind``."""
    address = [(server.host, server.port)]
    if kind == "sync":
        with rl.Client(host=server.host, port=server.port) as client:
            rl.RedisLeaderboard(client, key="lb").upsert_user("ada", 1)
    elif kind == "sentinel":
        with rl.Client.from_sentinel([(sentinel.host, sentinel.port)], "mymaster") as client:
            rl.RedisLeaderboard(client, key="lb").upsert_user("ada", 1)
    elif kind == "cluster":
        with rl.ClusterClient(startup_nodes=address) as cluster:
            rl.RedisLeaderboard(cluster, key="{lb}").upsert_user("ada", 1)
    else:

        async def main() -> None:
            if kind == "asyncio":
                client: Any = aio.Client(host=server.host, port=server.port)
            elif kind == "asyncio-sentinel":
                client = aio.Client.from_sentinel([(sentinel.host, sentinel.port)], "mymaster")
            else:
                client = aio.ClusterClient(startup_nodes=address)
            async with client:
                await aio.RedisLeaderboard(client, key="{lb}").upsert_user("ada", 1)

        asyncio.run(main())


KINDS = ["sync", "asyncio", "cluster", "asyncio-cluster", "sentinel", "asyncio-sentinel"]


@pytest.mark.parametrize("kind", KINDS)
def test_redis_6_2_is_refused_at_connect_naming_its_version_and_the_minimum(kind: str) -> None:
    with (
        HostileServer(refuse_everything, hello=hello_reply("6.2.0")) as server,
        sentinel_of(server) as sentinel,
    ):
        with pytest.raises(rl.ConnectionError, match=TOO_OLD):
            write_with(kind, server, sentinel)
        assert server.hellos >= 1
        assert server.commands == []  # nothing but the handshake reached it


@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_valkey_older_than_7_2_is_refused_and_7_2_is_not(kind: str) -> None:
    with (
        HostileServer(refuse_everything, hello=hello_reply("7.0.0", "valkey")) as server,
        sentinel_of(server) as sentinel,
    ):
        with pytest.raises(rl.ConnectionError, match=r"Valkey 7\.0\.0 at .* needs Valkey 7\.2\+"):
            write_with(kind, server, sentinel)
        assert server.commands == []
    with (
        HostileServer(refuse_everything, hello=hello_reply("7.2.4", "valkey")) as server,
        sentinel_of(server) as sentinel,
    ):
        # Accepted: the request reaches the server (which refuses it, as scripted).
        with pytest.raises(rl.ResponseError, match="no request may reach"):
            write_with(kind, server, sentinel)


def test_a_hello_refused_by_an_acl_checks_nothing(redis_server: RedisServer) -> None:
    # A user without HELLO (an ACL written before the client sent it) still connects.
    user = f"nohello-{uuid.uuid4().hex[:8]}"
    admin = redis_server.redis_py()
    admin.execute_command("ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-hello")
    try:
        key = f"nohello:{uuid.uuid4().hex[:8]}"
        options: dict[str, Any] = {
            "host": redis_server.host,
            "port": redis_server.port,
            "username": user,
            "password": "pw",
        }
        with rl.Client(**options) as client:
            assert rl.RedisLeaderboard(client, key=key).upsert_user("ada", 1)["rank"] == 1

        async def main() -> int:
            async with aio.Client(**options) as client:
                return (await aio.RedisLeaderboard(client, key=key).get_rank("ada")) or 0

        assert asyncio.run(main()) == 1
    finally:
        admin.execute_command("ACL", "DELUSER", user)


# ---- A real old server ---------------------------------------------------------------------------


def redis_6_binary() -> Path:
    """Redis 6.0: ``$REDIS_LEADERBOARD_OLD_SERVER``, else ``tests/servers/fetch.sh redis-6.0``'s."""
    named = os.environ.get("REDIS_LEADERBOARD_OLD_SERVER")
    if named:
        return Path(named)
    servers = os.environ.get("REDIS_LEADERBOARD_SERVERS_DIR") or (
        Path.home() / ".cache" / "redis-leaderboard" / "servers"
    )
    return Path(servers) / "redis-6.0" / "bin" / "redis-server"


@pytest.fixture(scope="module")
def redis_6() -> Any:
    binary = redis_6_binary()
    if not os.access(binary, os.X_OK):
        pytest.skip(
            f"no Redis 6 server at {binary}: `bash tests/servers/fetch.sh redis-6.0` fetches "
            "Debian 11's (needs deb.debian.org)"
        )
    server = RedisServer(binary=str(binary))
    yield server
    server.stop()


@pytest.mark.parametrize("api", ["sync", "asyncio"])
def test_a_real_redis_6_is_refused_and_keeps_nothing(redis_6: RedisServer, api: str) -> None:
    admin = redis_6.redis_py()
    version = admin.info("server")["redis_version"]
    assert version.startswith("6.")
    key = f"old:{uuid.uuid4().hex[:8]}"
    expected = rf"Redis {re.escape(version)} at .* is too old: redis_leaderboard needs Redis 7\.0\+"
    if api == "sync":
        with rl.Client(host=redis_6.host, port=redis_6.port) as client:
            with pytest.raises(rl.ConnectionError, match=expected):
                rl.RedisLeaderboard(client, key=key).increment_score("ada", 5)
    else:

        async def main() -> None:
            async with aio.Client(host=redis_6.host, port=redis_6.port) as client:
                await aio.RedisLeaderboard(client, key=key).increment_score("ada", 5)

        with pytest.raises(rl.ConnectionError, match=expected):
            asyncio.run(main())
    assert admin.exists(key, f"{key}:user:ada") == 0
