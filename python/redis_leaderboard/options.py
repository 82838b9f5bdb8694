"""Client options in one place: the names, their defaults, Redis URLs, redis-py clients.

Both clients take these options as keyword arguments: :class:`ClientOptions` for
:class:`redis_leaderboard.Client`, :class:`AsyncClientOptions` (two more) for
:class:`redis_leaderboard.asyncio.Client`. :func:`parse_url` reads a Redis URL into them,
:func:`client_options_from_redis_py` a redis-py client, and :func:`make_client` turns the
leaderboards' ``redis_client``/``url`` arguments into a client. The clients check the values
(ranges, types) when they are built.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Callable, Mapping, Optional, TypeVar
from urllib.parse import unquote

from . import _core

__all__ = [
    "DEFAULT_URL",
    "TLS_QUERY_KEYS",
    "URL_QUERY_ARGUMENT_PARSERS",
    "AsyncClientOptions",
    "ClientOptions",
    "client_options_from_redis_py",
    "make_client",
    "parse_url",
    "resolve_client_options",
    "url_options",
]

#: What a leaderboard connects to when given no client, no ``url`` and no ``$REDIS_URL``.
DEFAULT_URL = "redis://localhost:6379/0"


@dataclasses.dataclass(frozen=True)
class ClientOptions:
    """Where and how :class:`redis_leaderboard.Client` connects (redis-py's names)."""

    host: str = "localhost"
    port: int = 6379
    db: int = 0
    username: Optional[str] = None
    password: Optional[str] = None
    #: Seconds; None waits without limit (as redis-py).
    socket_timeout: Optional[float] = None
    #: Seconds; None: ``socket_timeout``, else no limit.
    socket_connect_timeout: Optional[float] = None
    client_name: Optional[str] = None
    #: When set, ``host`` and ``port`` are unused.
    unix_socket_path: Optional[str] = None
    #: The memory one reply may take; None: 512 MiB.
    max_reply_bytes: Optional[int] = None

    def kwargs(self) -> dict[str, Any]:
        """The options as the clients' keyword arguments."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


@dataclasses.dataclass(frozen=True)
class AsyncClientOptions(ClientOptions):
    """:class:`ClientOptions` plus the asyncio client's back-pressure."""

    #: Requests written and unanswered at once.
    max_in_flight: int = 1024
    #: Requests handed to the transport; beyond them, calls wait in the client.
    max_pending: int = 10000


# --- URLs ----------------------------------------------------------------------------------------

_DIGITS = re.compile(r"[0-9]{1,9}")
_SECONDS = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _whole_number(value: str) -> int:
    if not _DIGITS.fullmatch(value):
        raise ValueError(f"must be a whole number of at most 9 digits, not {value!r}")
    return int(value)


def _seconds(value: str) -> float:
    if not _SECONDS.fullmatch(value):
        raise ValueError(f"must be a number of seconds, not {value!r}")
    seconds = float(value)
    if not 0 < seconds < float("inf"):
        raise ValueError(f"must be a positive number of seconds, not {value!r}")
    return seconds


def _text(value: str) -> str:
    return value


#: The query keys a URL may carry, each with the parser of its (percent-decoded) value; as
#: redis-py's ``redis.asyncio.connection.URL_QUERY_ARGUMENT_PARSERS``, but any other key is an
#: error rather than passed on.
URL_QUERY_ARGUMENT_PARSERS: Mapping[str, Callable[[str], Any]] = {
    "db": _whole_number,
    "username": _text,
    "password": _text,
    "client_name": _text,
    "socket_timeout": _seconds,
    "socket_connect_timeout": _seconds,
}
#: redis-py's TLS keys: refused by name (TLS is not supported yet), never ignored.
TLS_QUERY_KEYS = frozenset(
    {
        "ssl",
        "ssl_keyfile",
        "ssl_certfile",
        "ssl_cert_reqs",
        "ssl_ca_certs",
        "ssl_ca_path",
        "ssl_ca_data",
        "ssl_check_hostname",
        "ssl_password",
        "ssl_min_version",
        "ssl_ciphers",
    }
)


def _decode(text: str, what: str) -> str:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f"Redis URL: the {what} is not percent-encoded UTF-8") from None


def _port(text: str) -> int:
    try:
        port = _whole_number(text)
    except ValueError as exc:
        raise ValueError(f"Redis URL: invalid port: {exc}") from None
    if not 1 <= port <= 65535:
        raise ValueError("Redis URL: port must be between 1 and 65535")
    return port


def _host_and_port(hostport: str) -> dict[str, Any]:
    """``host``, ``[v6 address]``, either with ``:port``; an empty host is localhost."""
    port = ""
    if hostport.startswith("["):
        host, bracket, after = hostport[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise ValueError("Redis URL: invalid host: an IPv6 address is written [address]:port")
        port = after[1:]
    else:
        host, colon, port = hostport.rpartition(":")
        if not colon:
            host, port = hostport, ""
        if ":" in host:
            raise ValueError("Redis URL: invalid host: an IPv6 address is written [address]:port")
    options: dict[str, Any] = {"host": _decode(host, "host") or "localhost"}
    if port:
        options["port"] = _port(port)
    return options


def parse_url(url: str) -> ClientOptions:
    """The options a Redis URL gives.

    ``redis://[[username]:password@]host[:port][/db][?key=value&...]`` (``[::1]`` for an IPv6
    host) or ``unix://[[username]:password@]/path/to/socket[?db=N&...]``. The query keys are
    those of :data:`URL_QUERY_ARGUMENT_PARSERS` (``?db=`` wins over the path's db,
    ``?password=`` over the one before ``@``). User, password, host, socket path and query
    values are percent-decoded; the last ``@`` ends the credentials, so a password may hold
    ``/``, ``:`` or ``@`` unencoded. ``rediss://``, TLS keys, unknown keys, a key given twice
    and malformed values raise ``ValueError`` naming what is wrong.
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    scheme, separator, rest = url.partition("://")
    scheme = scheme.lower()
    if not separator:
        raise ValueError("Redis URL must start with redis:// or unix://")
    if scheme == "rediss":
        raise ValueError("TLS is not supported yet (rediss://)")
    if scheme not in ("redis", "unix"):
        raise ValueError(f"Redis URL must start with redis:// or unix://, not {scheme}://")
    rest, _, query = rest.partition("?")

    options: dict[str, Any] = {}
    userinfo, at, rest = rest.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        if user:
            options["username"] = _decode(user, "username")
        if colon:
            options["password"] = _decode(password, "password")

    if scheme == "unix":
        if not rest.startswith("/"):
            raise ValueError("Redis URL: unix:// needs an absolute socket path (unix:///path)")
        options["unix_socket_path"] = _decode(rest, "socket path")
    else:
        hostport, _, db = rest.partition("/")
        options.update(_host_and_port(hostport))
        if db:
            try:
                options["db"] = _whole_number(db)
            except ValueError as exc:
                raise ValueError(f"Redis URL: invalid db in the path: {exc}") from None

    seen: set[str] = set()
    for pair in query.split("&") if query else ():
        if not pair:
            continue  # "a=1&&b=2", a trailing "&"
        raw_key, _, raw_value = pair.partition("=")
        key = _decode(raw_key, "query")
        if key in seen:
            raise ValueError(f"Redis URL: query key {key!r} is given twice")
        seen.add(key)
        if key in TLS_QUERY_KEYS:
            raise ValueError(f"Redis URL: query key {key!r}: TLS is not supported yet")
        parser = URL_QUERY_ARGUMENT_PARSERS.get(key)
        if parser is None:
            known = ", ".join(sorted(URL_QUERY_ARGUMENT_PARSERS))
            raise ValueError(f"Redis URL: unknown query key {key!r} (known: {known})")
        value = _decode(raw_value, f"value of query key {key!r}")
        try:
            options[key] = parser(value)
        except ValueError as exc:
            raise ValueError(f"Redis URL: query key {key!r}: {exc}") from None
    return ClientOptions(**options)


def url_options(url: str, **overrides: Any) -> dict[str, Any]:
    """``parse_url(url)`` as keyword arguments, with each of ``overrides`` that is not None."""
    options = parse_url(url).kwargs()
    options.update((name, value) for name, value in overrides.items() if value is not None)
    return options


# --- redis-py clients ----------------------------------------------------------------------------


def client_options_from_redis_py(redis_client: Any) -> ClientOptions:
    """The connection options of a redis-py ``Redis`` (or ``redis.asyncio.Redis``) client.

    redis-py is not a dependency: the client is read duck-typed through its connection pool.
    TLS and Sentinel clients raise ``ValueError`` (not supported yet), anything else without a
    connection pool ``TypeError``.
    """
    try:
        pool = redis_client.connection_pool
        kwargs = dict(pool.connection_kwargs)
    except (AttributeError, TypeError, ValueError):
        raise TypeError(
            "redis_client must be a redis_leaderboard Client, a redis-py Redis client or None, "
            f"not {type(redis_client).__name__}"
        ) from None
    connection_class = getattr(getattr(pool, "connection_class", None), "__name__", "")
    if (
        kwargs.get("ssl")
        or "ssl_keyfile" in kwargs
        or "ssl_cert_reqs" in kwargs
        or "SSL" in connection_class
    ):
        raise ValueError("TLS (rediss://) is not supported yet by redis_leaderboard")
    if "Sentinel" in connection_class or "Sentinel" in type(pool).__name__:
        # Its pool asks the sentinels for the master; its kwargs name no server.
        raise ValueError("Sentinel is not supported yet by redis_leaderboard")
    options: dict[str, Any] = {
        "db": int(kwargs.get("db") or 0),
        "username": kwargs.get("username"),
        "password": kwargs.get("password"),
        "socket_timeout": kwargs.get("socket_timeout"),
        "socket_connect_timeout": kwargs.get("socket_connect_timeout"),
        "client_name": kwargs.get("client_name"),
    }
    if kwargs.get("path"):
        options["unix_socket_path"] = kwargs["path"]
    else:
        options["host"] = kwargs.get("host") or "localhost"
        options["port"] = int(kwargs.get("port") or 6379)
    return ClientOptions(**options)


# --- what a leaderboard connects to --------------------------------------------------------------


def resolve_client_options(redis_client: Any, url: Optional[str]) -> ClientOptions:
    """What to connect to, as the leaderboards document: a redis-py client's options, else
    ``url``, else ``$REDIS_URL``, else ``redis://localhost:6379/0``."""
    if redis_client is not None:
        if url is not None:
            raise TypeError("pass either redis_client or url, not both")
        return client_options_from_redis_py(redis_client)
    return parse_url(url if url is not None else os.environ.get("REDIS_URL") or DEFAULT_URL)


_Client = TypeVar("_Client")


def make_client(redis_client: Any, url: Optional[str], client_class: type[_Client]) -> _Client:
    """A ``client_class`` (the sync or the asyncio Client) for a leaderboard's arguments; a
    ``client_class`` given as ``redis_client`` is used as it is."""
    # The sync Client subclasses _core.Client: one made by _core.Client.from_url is as good.
    core_client = issubclass(client_class, _core.Client) and isinstance(redis_client, _core.Client)
    if isinstance(redis_client, client_class) or core_client:
        if url is not None:
            raise TypeError("pass either redis_client or url, not both")
        return redis_client  # type: ignore[no-any-return]
    return client_class(**resolve_client_options(redis_client, url).kwargs())
