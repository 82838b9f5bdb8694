"""ACL users in production: the README's minimal rule (tested method by method in
tests/test_atomicity.py) over TLS and in URLs, and what it never grants.

A deployment gives the leaderboard an ACL user limited to its board keys and the commands
listed in README's "ACL" paragraph; the user name and password travel in a ``rediss://`` URL
as a hosted Redis gives them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

import redis_leaderboard
from conftest import Certificates, RedisServer
from redis_leaderboard import Client, RedisLeaderboard
from redis_leaderboard import asyncio as rl_asyncio
from test_atomicity import PASSWORD, minimal_rule


@pytest.fixture
def user(tls_redis_server: RedisServer) -> Iterator[tuple[str, str]]:
    """(user name, board key): a user with the README's minimal rule for ``lb:*``."""
    name = f"app-{uuid.uuid4().hex[:8]}"
    key = f"lb:{uuid.uuid4().hex[:8]}"
    with tls_redis_server.redis_py() as admin:
        admin.execute_command("ACL", "SETUSER", name, "reset", *minimal_rule())
    yield name, key
    with tls_redis_server.redis_py() as admin:
        admin.acl_deluser(name)
        names = list(admin.scan_iter(match=f"{key}*"))
        if names:
            admin.delete(*names)


def rediss_url(server: RedisServer, certificates: Certificates, name: str, password: str) -> str:
    # As a hosted Redis gives it: user and password in the URL, percent-encoded.
    return (
        f"rediss://{quote(name)}:{quote(password, safe='')}@localhost:{server.tls_port}/0"
        f"?ssl_ca_certs={quote(certificates.ca)}&socket_timeout=5"
    )


def test_the_minimal_rule_in_a_rediss_url(
    tls_redis_server: RedisServer, certificates: Certificates, user: tuple[str, str]
) -> None:
    name, key = user
    url = rediss_url(tls_redis_server, certificates, name, PASSWORD)
    board = RedisLeaderboard(url=url, key=key, max_entries=2)
    assert board.upsert_user("ada", 3, {"name": "Ada"})["rank"] == 1
    assert board.upsert_many([("bob", 1), ("cy", 2)])["trimmed_user_ids"] == ["bob"]
    assert [entry["user_id"] for entry in board.get_top(5)] == ["ada", "cy"]
    assert board.redis.ping() is True

    async def main() -> None:
        async with rl_asyncio.Client.from_url(url) as client:
            aboard = rl_asyncio.RedisLeaderboard(client, key=key, max_entries=2)
            results = await asyncio.gather(*(aboard.increment_score("cy", 1) for _ in range(100)))
            assert results[-1]["score"] == 102.0

    asyncio.run(main())


@pytest.mark.parametrize("command", [("KEYS", "*"), ("FLUSHDB",), ("CONFIG", "GET", "maxmemory"),
                                     ("SCRIPT", "FLUSH"), ("FLUSHALL",)])  # fmt: skip
def test_the_minimal_rule_grants_no_administration(
    tls_redis_server: RedisServer,
    certificates: Certificates,
    user: tuple[str, str],
    command: tuple[str, ...],
) -> None:
    # The package never needs them, so the rule can leave them out.
    name, _ = user
    with Client.from_url(rediss_url(tls_redis_server, certificates, name, PASSWORD)) as client:
        with pytest.raises(redis_leaderboard.NoPermissionError, match=command[0].lower()):
            client.execute_command(*command)


def test_a_wrong_password_is_an_authentication_error(
    tls_redis_server: RedisServer, certificates: Certificates, user: tuple[str, str]
) -> None:
    name, key = user
    url = rediss_url(tls_redis_server, certificates, name, "wrong/pass@word")
    with pytest.raises(redis_leaderboard.AuthenticationError, match="WRONGPASS"):
        RedisLeaderboard(url=url, key=key).get_size()
    assert "wrong" not in repr(Client.from_url(url))  # the password is never shown

    async def main() -> None:
        async with rl_asyncio.Client.from_url(url) as client:
            await rl_asyncio.RedisLeaderboard(client, key=key).get_size()

    with pytest.raises(redis_leaderboard.AuthenticationError, match="WRONGPASS"):
        asyncio.run(main())


def test_without_evalsha_and_eval_every_write_is_refused_by_name_and_changes_nothing(
    tls_redis_server: RedisServer, certificates: Certificates, user: tuple[str, str]
) -> None:
    name, key = user
    with tls_redis_server.redis_py() as admin:
        admin.execute_command("ACL", "SETUSER", name, "-evalsha", "-eval")
        admin.zadd(key, {"ada": 1})
    url = rediss_url(tls_redis_server, certificates, name, PASSWORD)
    board = RedisLeaderboard(url=url, key=key)
    for call in (lambda: board.upsert_user("bob", 2), lambda: board.get_top(3)):
        with pytest.raises(redis_leaderboard.NoPermissionError, match="evalsha"):
            call()

    async def main() -> None:
        async with rl_asyncio.Client.from_url(url) as client:
            aboard = rl_asyncio.RedisLeaderboard(client, key=key)
            with pytest.raises(redis_leaderboard.NoPermissionError, match="evalsha"):
                await aboard.increment_score("ada", 5)

    asyncio.run(main())
    with tls_redis_server.redis_py() as admin:
        assert admin.zrange(key, 0, -1, withscores=True) == [("ada", 1.0)]
