"""What the command line and the demo share: the options naming a Redis and a board, and
connecting to the Redis they name.

``--redis-url``, else ``--redis-host``/``--redis-port``, else ``$REDIS_URL``: that Redis, which
must answer PING (:class:`StartupError` otherwise, never a silent fallback). What to do when
none is given is each command's own choice (the CLI: localhost:6379; the demo: that, else a
private ``redis-server``).
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlsplit, urlunsplit

from ._core import AuthenticationError, RedisError, ResponseError
from ._redis_server import RedisServer
from .client import Client

log = logging.getLogger("redis_leaderboard.demo")

DEFAULT_REDIS_HOST = "localhost"
DEFAULT_REDIS_PORT = 6379
SOCKET_TIMEOUT = 3.0  # seconds; a Redis that stops answering gives errors, not hung commands
#: The largest ``--max-entries`` the demo takes (its form too); the CLI's import suggests it.
MAX_MAX_ENTRIES = 1_000_000


class StartupError(Exception):
    """A problem reaching Redis or starting a command, reported as one line and exit status 1."""


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 included (any free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, not {value}")
    return value


def board_key(text: str) -> str:
    """An argparse type: a board key, not empty."""
    if not text:
        raise argparse.ArgumentTypeError("the key must not be empty")
    return text


def add_redis_arguments(
    parser: argparse.ArgumentParser,
    *,
    key: str = "leaderboard:demo",
    key_help: str = "the board's sorted set",
) -> tuple[argparse._ArgumentGroup, argparse._ArgumentGroup]:
    """Options naming the Redis and the board (for every command that uses a board); returns
    the "Redis" and "board" option groups so a command can add its own options to them."""
    redis = parser.add_argument_group("Redis")
    redis.add_argument(
        "--redis-url",
        metavar="URL",
        help="redis://[[user]:password@]host[:port][/db] or unix:///path (default: $REDIS_URL)",
    )
    redis.add_argument(
        "--redis-host", metavar="HOST", help=f"Redis host (default: {DEFAULT_REDIS_HOST})"
    )
    redis.add_argument(
        "--redis-port",
        metavar="PORT",
        type=port_number,
        help=f"Redis port (default: {DEFAULT_REDIS_PORT})",
    )
    board = parser.add_argument_group("board")
    board.add_argument(
        "--key",
        default=key,
        type=board_key,
        help=f"{key_help} (default: %(default)s)",
    )
    return redis, board


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***``, for logs and messages."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        userinfo = f"{parts.username or ''}:***"
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}"))
    except ValueError:
        return "(unparsable URL)"


@dataclass
class RedisTarget:
    """A client on the Redis a command uses, what to call that Redis in messages, and the
    private ``redis-server`` started for it, if any (stopped by :meth:`close`)."""

    client: Client
    description: str
    embedded: Optional[RedisServer] = None

    def close(self) -> None:
        self.client.close()
        if self.embedded is not None:
            pid, port = self.embedded.pid, self.embedded.port
            self.embedded.cleanup()
            log.info("Stopped the private redis-server (pid %s, port %s).", pid, port)


def ping(client: Client, where: str) -> None:
    """PING through ``client``; closes it and raises :class:`StartupError` if that fails."""
    try:
        client.ping()
    except AuthenticationError as exc:
        client.close()
        raise StartupError(f"Redis at {where} refused the credentials: {exc}") from None
    except ResponseError as exc:
        client.close()
        raise StartupError(f"Redis at {where} refused PING: {exc}") from None
    except RedisError as exc:
        client.close()
        raise StartupError(f"cannot reach Redis at {where}: {exc}") from None


def connect_configured(
    args: argparse.Namespace,
    *,
    client_name: str = "redis-leaderboard-demo",
    default_host: str = DEFAULT_REDIS_HOST,
    default_port: int = DEFAULT_REDIS_PORT,
) -> Optional[RedisTarget]:
    """The Redis that --redis-url, --redis-host/--redis-port or $REDIS_URL name, answering PING;
    None if none of them is given."""
    explicit_host = args.redis_host is not None or args.redis_port is not None
    if args.redis_url and explicit_host:
        raise StartupError("give either --redis-url or --redis-host/--redis-port, not both")
    options: dict[str, Any] = {
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": SOCKET_TIMEOUT,
        "client_name": client_name,
    }
    url = args.redis_url or (None if explicit_host else os.environ.get("REDIS_URL"))
    if url:
        try:
            client = Client.from_url(url, **options)
        except ValueError as exc:
            raise StartupError(f"invalid Redis URL {redact(url)}: {exc}") from None
        ping(client, redact(url))
        return RedisTarget(client, redact(url))
    if explicit_host:
        host = args.redis_host or default_host
        port = args.redis_port if args.redis_port is not None else default_port
        client = Client(host=host, port=port, **options)
        ping(client, f"{host}:{port}")
        return RedisTarget(client, f"redis://{host}:{port}/0")
    return None
