"""Shared fixtures: a private redis-server for the whole test session.

Every test talks to a real ``redis-server`` started here (by the package's launcher,
``redis_leaderboard._redis_server``) on a free port, in a temporary directory, and stopped at
the end. The machine's own Redis (port 6379) is never touched.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Iterator, Optional

import pytest

from redis_leaderboard import _redis_server

ROOT = Path(__file__).resolve().parent.parent
# The guide's reference algorithm lives in benchmarks/ and is shared with the tests.
sys.path.insert(0, str(ROOT))


class RedisServer(_redis_server.RedisServer):
    """The package's private redis-server (free 127.0.0.1 port, a unix socket, temporary
    directory, no persistence), started at once, with a redis-py client for checks."""

    def __init__(self, *, password: Optional[str] = None, extra_args: Sequence[str] = ()) -> None:
        try:
            super().__init__(
                password=password,
                unix_socket=True,
                extra_args=extra_args,
                dir_prefix="redis-leaderboard-test-",
            )
        except _redis_server.RedisServerError as exc:
            pytest.exit(f"{exc} (apt-get install -y redis-server)", returncode=2)
        self.start()

    def redis_py(self, **kwargs: object):  # -> redis.Redis
        """A redis-py client on this server (decode_responses, as the guide uses)."""
        import redis

        return redis.Redis(
            host=self.host,
            port=self.port,
            password=self.password,
            decode_responses=True,
            **kwargs,  # type: ignore[arg-type]
        )


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """The session's shared private redis-server."""
    server = RedisServer()
    yield server
    server.cleanup()


@pytest.fixture
def fresh_redis_server() -> Iterator[RedisServer]:
    """A private redis-server for one test: for tests that kill, pause or restart it."""
    server = RedisServer()
    yield server
    server.cleanup()


@pytest.fixture
def password_redis_server() -> Iterator[RedisServer]:
    """A private redis-server that requires a password."""
    server = RedisServer(password="s3cret-pass")
    yield server
    server.cleanup()


@pytest.fixture
def board_key(redis_server: RedisServer) -> Iterator[str]:
    """A board key unique to the test; the board and its metadata hashes are removed after."""
    key = f"test:{uuid.uuid4().hex[:12]}"
    yield key
    r = redis_server.redis_py()
    try:
        names = list(r.scan_iter(match=f"{key}*", count=1000))
        if names:
            r.delete(*names)
    finally:
        r.close()


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[object]:
    """A redis_leaderboard.Client on the session's server."""
    import redis_leaderboard

    c = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    yield c
    c.close()


@pytest.fixture
def board(client: object, board_key: str) -> object:
    """A RedisLeaderboard with the guide's default max_entries=100 on a fresh key."""
    import redis_leaderboard

    return redis_leaderboard.RedisLeaderboard(client, key=board_key, max_entries=100)
