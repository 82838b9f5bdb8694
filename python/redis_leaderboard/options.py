"""Client options in one place: the names, their defaults, Redis URLs, redis-py clients.

The options are declared once, by the compiled clients: one table (``_core.option_table()``,
``cpp/bindings/conversions.cpp``) gives each option's name, default, the clients that take it and
how its value is read, and every client constructor reads its arguments through it.
``ClientOptions`` (``redis_leaderboard.Client``'s options) and
``AsyncClientOptions`` (two more, ``redis_leaderboard.asyncio.Client``'s) are that table
as typed dataclasses, and the stub's ``_ClientOptions`` TypedDicts type the constructors' keyword
arguments; ``tests/test_option_table.py`` fails if either drifts from the table.
``parse_url`` reads a Redis URL into them, ``client_options_from_redis_py`` a redis-py
client, and ``make_client`` turns the leaderboards' ``redis_client``/``url`` arguments into a
client. The clients check the values (types, ranges) when they are built.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
from typing import (
    Any,
    Callable,
    Concatenate,
    Mapping,
    NamedTuple,
    Optional,
    ParamSpec,
    TypeVar,
    Union,
)
from urllib.parse import unquote

from ._core import Client as CoreClient
from ._core import ClusterClient as CoreClusterClient
from ._core import has_hash_tag, option_table

__all__ = [
    "DEFAULT_SENTINEL_PORT",
    "DEFAULT_URL",
    "SENTINEL_QUERY_ARGUMENT_PARSERS",
    "URL_QUERY_ARGUMENT_PARSERS",
    "AsyncClientOptions",
    "ClientOptions",
    "board_client",
    "client_options_from_redis_py",
    "make_client",
    "parse_url",
    "resolve_client_options",
    "sentinel_options",
    "url_options",
]

#: What a leaderboard connects to when given no client, no ``url`` and no ``$REDIS_URL``.
DEFAULT_URL = "redis://localhost:6379/0"
#: A sentinel's port when a ``redis+sentinel://`` URL gives none.
DEFAULT_SENTINEL_PORT = 26379
# upsert_many and run_pipelined: requests written ahead of their replies (both APIs).
CHUNKS_IN_FLIGHT = 4


@dataclasses.dataclass(frozen=True)
class ClientOptions:
    """Where and how ``redis_leaderboard.Client`` connects (redis-py's names)."""

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
    # Durable acknowledgements (docs: Deployment, Durability): off by default.
    #: A write is acknowledged once this many replicas confirm having it (``WAIT``); fewer
    #: within ``replica_timeout`` raise ``NotReplicatedError`` (applied on the primary, not
    #: resent). 0: the primary's acknowledgement alone (nothing more is sent). Reads never wait.
    min_replicas: int = 0
    #: Seconds the server waits for those replicas (``WAIT``'s timeout), added to
    #: ``socket_timeout`` for a write's reply. 2 s: a replica acknowledges its AOF fsync
    #: about once a second (``wait_aof``), and a fork (``BGSAVE``) may stall it briefly.
    replica_timeout: float = 2.0
    #: Wait until the replicas have the write in their append-only file (``WAITAOF 0
    #: <min_replicas> <ms>``: Redis 7.2+, Valkey 7.2+; a server without it is refused at
    #: connect), not only in memory (``WAIT``). Needs ``min_replicas`` >= 1.
    wait_aof: bool = False
    # TLS, as redis-py: ``ssl=True`` (``rediss://``) and the ``ssl_*`` settings.
    ssl: bool = False
    #: A PEM file of the CAs to trust; none of the three: the system's trust store.
    ssl_ca_certs: Optional[str] = None
    #: A directory of CA files (``c_rehash``/``openssl rehash``).
    ssl_ca_path: Optional[str] = None
    #: PEM text of the CAs to trust.
    ssl_ca_data: Optional[str] = None
    #: The client's certificate (chain), PEM, for servers with ``tls-auth-clients yes``.
    ssl_certfile: Optional[str] = None
    #: Its private key (PEM); None: in ``ssl_certfile``.
    ssl_keyfile: Optional[str] = None
    #: The password of an encrypted ``ssl_keyfile``.
    ssl_password: Optional[str] = None
    #: ``"required"`` (default), ``"optional"`` (the same for a client, as Python's ssl) or
    #: ``"none"`` (no verification: encrypted, not authenticated), or an ``ssl.VerifyMode``.
    ssl_cert_reqs: Union[str, int] = "required"
    #: The certificate must name the host connected to (ignored with ``ssl_cert_reqs="none"``).
    ssl_check_hostname: bool = True
    #: ``"TLSv1.2"`` or ``"TLSv1.3"`` (or an ``ssl.TLSVersion``); None: OpenSSL's default.
    ssl_min_version: Union[str, int, None] = None
    #: An OpenSSL cipher list (TLS 1.2).
    ssl_ciphers: Optional[str] = None
    # Sentinel (see Client.from_sentinel): host and port are those of the primary it names.
    sentinels: Optional[tuple[tuple[str, int], ...]] = None
    service_name: Optional[str] = None
    sentinel_username: Optional[str] = None
    sentinel_password: Optional[str] = None
    #: Talk TLS to the sentinels too, with the ``ssl_*`` settings.
    sentinel_ssl: bool = False
    # Client-side caching of metadata (README, "Client-side caching"): off by default.
    client_cache: bool = False
    #: Metadata hashes the cache keeps (least recently used go first).
    client_cache_size: int = 10000
    #: The bytes their keys, fields and values may take (plus 96 per hash).
    client_cache_max_bytes: int = 64 << 20

    def kwargs(self) -> dict[str, Any]:
        """The options as the clients' keyword arguments."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    def cluster_kwargs(self) -> dict[str, Any]:
        """The options a cluster client gives each node's connections (its keyword arguments
        beside ``startup_nodes``): those of the option table that the cluster clients take, so
        a new connection option reaches them too. The others name one server (host, port, db,
        socket path: ``startup_nodes`` instead, database 0 only) or a feature a cluster client
        has not (Sentinel, the client-side cache, the asyncio client's queue)."""
        return {name: getattr(self, name) for name in _CLUSTER_FIELDS}


@dataclasses.dataclass(frozen=True)
class AsyncClientOptions(ClientOptions):
    """``ClientOptions`` plus the asyncio client's back-pressure."""

    #: Requests written and unanswered at once.
    max_in_flight: int = 1024
    #: Requests handed to the transport; beyond them, calls wait in the client.
    max_pending: int = 10000
    #: Bytes the replies of the requests in flight are expected to take (learnt per operation
    #: from its last replies); beyond them no more are written (a request alone may exceed
    #: it). Big reads stop there while cheap ones keep the deep pipeline. 0: no limit.
    max_bytes_in_flight: int = 0


# --- the compiled clients' option table ----------------------------------------------------------


class CoreOption(NamedTuple):
    """One row of the compiled clients' option table (``_core.option_table()``)."""

    name: str
    default: Any
    #: May be given by position (in table order) to ``Client`` and ``AsyncCore``, else
    #: keyword-only; the cluster clients take ``startup_nodes`` by position, every option by
    #: keyword.
    positional: bool
    #: The ``_core`` classes that take it: ``"Client"``, ``"AsyncCore"`` (the asyncio
    #: client's), ``"ClusterClient"`` (both cluster clients').
    clients: tuple[str, ...]


#: Every client option, in ``AsyncClientOptions``' order, then the cluster clients' own.
OPTION_TABLE: tuple[CoreOption, ...] = tuple(CoreOption(*row) for row in option_table())

_CLUSTER_FIELDS = tuple(
    option.name
    for option in OPTION_TABLE
    if "ClusterClient" in option.clients and option.name in ClientOptions.__dataclass_fields__
)


def constructor_signature(client: str, *leading: inspect.Parameter) -> inspect.Signature:
    """The signature of a client class taking the options of ``client`` (a ``_core`` class
    name of ``CoreOption.clients``) after ``leading``, annotated as
    ``AsyncClientOptions``' fields: for ``help()`` and ``inspect.signature``."""
    fields = AsyncClientOptions.__dataclass_fields__
    parameters = list(leading)
    for option in OPTION_TABLE:
        if client not in option.clients:
            continue
        field = fields.get(option.name)
        by_position = option.positional and client != "ClusterClient"
        kind = (
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if by_position
            else inspect.Parameter.KEYWORD_ONLY
        )
        annotation = field.type if field is not None else type(option.default).__name__
        parameters.append(
            inspect.Parameter(option.name, kind, default=option.default, annotation=annotation)
        )
    return inspect.Signature(parameters, return_annotation="None")


_P = ParamSpec("_P")


def takes_options_of(
    core: Callable[_P, Any], signature: inspect.Signature
) -> Callable[[Callable[..., None]], Callable[Concatenate[Any, _P], None]]:
    """Declares that an ``__init__(self, *args, **options)`` takes exactly ``core``'s
    arguments (it passes them on): for type checkers, those of ``core``'s stub; at run time,
    ``signature`` (``constructor_signature``). The options are listed by neither."""

    def declare(init: Callable[..., None]) -> Callable[Concatenate[Any, _P], None]:
        self = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        parameters = [self, *signature.parameters.values()]
        init.__dict__["__signature__"] = signature.replace(parameters=parameters)
        return init

    return declare


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


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _boolean(value: str) -> bool:
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"must be true or false, not {value!r}")


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, not {value!r}")
        return value

    return parse


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
    "min_replicas": _whole_number,
    "replica_timeout": _seconds,
    "wait_aof": _boolean,
    "ssl": _boolean,
    "ssl_ca_certs": _text,
    "ssl_ca_path": _text,
    "ssl_certfile": _text,
    "ssl_keyfile": _text,
    "ssl_password": _text,
    "ssl_cert_reqs": _choice("required", "optional", "none"),
    "ssl_check_hostname": _boolean,
    "ssl_min_version": _choice("TLSv1.2", "TLSv1.3", "TLSv1_2", "TLSv1_3"),
    "ssl_ciphers": _text,
}
#: The query keys a ``redis+sentinel://`` URL may carry besides those.
SENTINEL_QUERY_ARGUMENT_PARSERS: Mapping[str, Callable[[str], Any]] = {
    "sentinel_username": _text,
    "sentinel_password": _text,
    "sentinel_ssl": _boolean,
}
_SCHEMES = "redis:// or unix:// (or rediss://, redis+sentinel://, rediss+sentinel://)"


def _decode(text: str, what: str) -> str:
    try:
        decoded = unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f"Redis URL: the {what} is not percent-encoded UTF-8") from None
    if "\0" in decoded:
        # A C API would read the text only up to it ("h%00x" would reach host "h").
        raise ValueError(f"Redis URL: the {what} must not contain a NUL character")
    return decoded


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


def _sentinel_hosts(hosts: str) -> tuple[tuple[str, int], ...]:
    """``host[:port],host[:port],...`` (``[v6]:port`` too); the port defaults to 26379."""
    sentinels = []
    for hostport in hosts.split(","):
        if not hostport:
            raise ValueError("Redis URL: an empty sentinel address (host[:port],host[:port])")
        parsed = _host_and_port(hostport)
        sentinels.append((parsed["host"], parsed.get("port", DEFAULT_SENTINEL_PORT)))
    return tuple(sentinels)


def parse_url(url: str) -> ClientOptions:
    """The options a Redis URL gives.

    ``redis://[[username]:password@]host[:port][/db][?key=value&...]`` (``[::1]`` for an IPv6
    host), ``rediss://...`` (the same over TLS: ``ssl=True``),
    ``unix://[[username]:password@]/path/to/socket[?db=N&...]``, or
    ``redis+sentinel://[[username]:password@]host[:port][,host[:port]...]/service_name[/db]``
    (``rediss+sentinel://``: TLS to the data nodes): the sentinels (port 26379 unless given)
    name the primary of ``service_name``; the credentials are the data nodes',
    ``?sentinel_username=&sentinel_password=`` the sentinels'. The query keys are those of
    ``URL_QUERY_ARGUMENT_PARSERS`` (``?db=`` wins over the path's db, ``?password=`` over
    the one before ``@``), and ``SENTINEL_QUERY_ARGUMENT_PARSERS`` for Sentinel URLs. User,
    password, host, socket path and query values are percent-decoded; the last ``@`` ends the
    credentials, so a password may hold ``/``, ``:`` or ``@`` unencoded. Unknown keys, a key
    given twice and malformed values raise ``ValueError`` naming what is wrong.
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    if "\0" in url:
        raise ValueError("Redis URL must not contain a NUL character (%00 in a part neither)")
    scheme, separator, rest = url.partition("://")
    scheme = scheme.lower()
    if not separator:
        raise ValueError(f"Redis URL must start with {_SCHEMES}")
    if scheme not in ("redis", "rediss", "unix", "redis+sentinel", "rediss+sentinel"):
        raise ValueError(f"Redis URL must start with {_SCHEMES}, not {scheme}://")
    sentinel = scheme.endswith("+sentinel")
    rest, _, query = rest.partition("?")

    options: dict[str, Any] = {}
    if scheme.startswith("rediss"):
        options["ssl"] = True
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
        hostport, _, path = rest.partition("/")
        if sentinel:
            options["sentinels"] = _sentinel_hosts(hostport)
            service, _, path = path.partition("/")
            if not service:
                raise ValueError(
                    "Redis URL: a Sentinel URL names its service: "
                    "redis+sentinel://host:port[,host:port]/service_name[/db]"
                )
            options["service_name"] = _decode(service, "service name")
        else:
            options.update(_host_and_port(hostport))
        if path:
            try:
                options["db"] = _whole_number(path)
            except ValueError as exc:
                raise ValueError(f"Redis URL: invalid db in the path: {exc}") from None

    parsers = dict(URL_QUERY_ARGUMENT_PARSERS)
    if sentinel:
        parsers.update(SENTINEL_QUERY_ARGUMENT_PARSERS)
    seen: set[str] = set()
    for pair in query.split("&") if query else ():
        if not pair:
            continue  # "a=1&&b=2", a trailing "&"
        raw_key, _, raw_value = pair.partition("=")
        key = _decode(raw_key, "query")
        if key in seen:
            raise ValueError(f"Redis URL: query key {key!r} is given twice")
        seen.add(key)
        parser = parsers.get(key)
        if parser is None:
            known = ", ".join(sorted(parsers))
            raise ValueError(f"Redis URL: unknown query key {key!r} (known: {known})")
        value = _decode(raw_value, f"value of query key {key!r}")
        try:
            options[key] = parser(value)
        except ValueError as exc:
            raise ValueError(f"Redis URL: query key {key!r}: {exc}") from None
    if options.get("ssl") is False and scheme.startswith("rediss"):
        raise ValueError("Redis URL: rediss:// is TLS: ?ssl=false contradicts it")
    if "unix_socket_path" in options and options.get("ssl"):
        raise ValueError("Redis URL: TLS (ssl) is for TCP, not unix:// sockets")
    return ClientOptions(**options)


_FIELDS = frozenset(field.name for field in dataclasses.fields(AsyncClientOptions))


def url_options(url: str, **overrides: Any) -> dict[str, Any]:
    """``parse_url(url)`` as keyword arguments, with each of ``overrides`` that is not None."""
    unknown = sorted(set(overrides) - _FIELDS)
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
    options = parse_url(url).kwargs()
    options.update((name, value) for name, value in overrides.items() if value is not None)
    return options


# --- redis-py clients ----------------------------------------------------------------------------


#: redis-py's TLS settings that carry over, with redis-py's ``SSLConnection`` defaults.
_REDIS_PY_TLS_DEFAULTS: Mapping[str, Any] = {
    "ssl_ca_certs": None,
    "ssl_ca_path": None,
    "ssl_ca_data": None,
    "ssl_certfile": None,
    "ssl_keyfile": None,
    "ssl_password": None,
    "ssl_cert_reqs": "required",
    "ssl_check_hostname": True,
    "ssl_min_version": None,
    "ssl_ciphers": None,
}


def _redis_py_tls(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    options = {name: kwargs.get(name, default) for name, default in _REDIS_PY_TLS_DEFAULTS.items()}
    if options["ssl_cert_reqs"] is None:  # redis-py reads None as "none"
        options["ssl_cert_reqs"] = "none"
    for name in ("ssl_min_version", "ssl_cert_reqs"):
        value = options[name]
        if hasattr(value, "value") and not isinstance(value, (str, int)):
            options[name] = value.value
    return options


def client_options_from_redis_py(redis_client: Any) -> ClientOptions:
    """The connection options of a redis-py ``Redis`` (or ``redis.asyncio.Redis``) client.

    redis-py is not a dependency: the client is read duck-typed through its connection pool:
    host, port or unix socket, db, credentials, timeouts, client name, the ``ssl_*`` settings of
    a TLS client, and the sentinels and service name of a ``Sentinel.master_for`` client.
    Anything else without a connection pool raises ``TypeError``.
    """
    try:
        pool = redis_client.connection_pool
        kwargs = dict(pool.connection_kwargs)
    except (AttributeError, TypeError, ValueError):
        raise TypeError(
            "redis_client must be a redis_leaderboard Client, a redis-py Redis client or None, "
            f"not {public_name(type(redis_client))}"
        ) from None
    connection_class = getattr(getattr(pool, "connection_class", None), "__name__", "")
    options: dict[str, Any] = {
        "db": int(kwargs.get("db") or 0),
        "username": kwargs.get("username"),
        "password": kwargs.get("password"),
        "socket_timeout": kwargs.get("socket_timeout"),
        "socket_connect_timeout": kwargs.get("socket_connect_timeout"),
        "client_name": kwargs.get("client_name"),
    }
    if kwargs.get("ssl") or "SSL" in connection_class:
        options["ssl"] = True
        options.update(_redis_py_tls(kwargs))
    if "Sentinel" in type(pool).__name__ or "Sentinel" in connection_class:
        # A Sentinel.master_for client: its pool asks the sentinels for the primary.
        manager = getattr(pool, "sentinel_manager", None)
        service_name = getattr(pool, "service_name", None)
        if manager is None or not service_name or not getattr(pool, "is_master", True):
            raise ValueError(
                "redis_leaderboard reads a redis-py Sentinel client made by master_for(); "
                "replicas (slave_for) cannot take writes"
            )
        sentinels = []
        sentinel_kwargs: dict[str, Any] = {}
        for sentinel in manager.sentinels:
            sentinel_kwargs = dict(sentinel.connection_pool.connection_kwargs)
            sentinels.append((sentinel_kwargs["host"], int(sentinel_kwargs["port"])))
        options["sentinels"] = tuple(sentinels)
        options["service_name"] = service_name
        options["sentinel_username"] = sentinel_kwargs.get("username")
        options["sentinel_password"] = sentinel_kwargs.get("password")
        return ClientOptions(**options)
    if kwargs.get("path"):
        options["unix_socket_path"] = kwargs["path"]
    else:
        options["host"] = kwargs.get("host") or "localhost"
        options["port"] = int(kwargs.get("port") or 6379)
    return ClientOptions(**options)


# --- what a leaderboard connects to --------------------------------------------------------------


def sentinel_options(
    sentinels: Any,
    service_name: str,
    sentinel_username: Optional[str],
    sentinel_password: Optional[str],
    sentinel_ssl: bool,
    client_options: Mapping[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of a client made by ``from_sentinel``."""
    for name in ("host", "port", "unix_socket_path", "sentinels", "service_name"):
        if name in client_options:
            raise TypeError(f"from_sentinel: {name!r} is given by the sentinels")
    pairs = []
    for sentinel in sentinels:
        host, port = sentinel
        pairs.append((str(host), int(port)))
    return {
        **client_options,
        "sentinels": tuple(pairs),
        "service_name": service_name,
        "sentinel_username": sentinel_username,
        "sentinel_password": sentinel_password,
        "sentinel_ssl": sentinel_ssl,
    }


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
    core_client = issubclass(client_class, CoreClient) and isinstance(redis_client, CoreClient)
    if isinstance(redis_client, client_class) or core_client:
        if url is not None:
            raise TypeError("pass either redis_client or url, not both")
        return redis_client  # type: ignore[no-any-return]
    given = type(redis_client)
    if redis_client is not None and given.__module__.startswith("redis_leaderboard"):
        # One of ours, of the other API (a blocking client for an asyncio board, or the
        # reverse): both are called Client, so the message names their modules.
        expected, got = public_name(client_class), public_name(given)
        raise TypeError(
            f"redis_client must be a {expected}, a redis-py Redis client or None, not a {got}"
            + _api_hint(client_class, given)
        )
    return client_class(**resolve_client_options(redis_client, url).kwargs())


def board_client(
    board_name: str,
    redis_client: Any,
    url: Optional[str],
    key: str,
    client_class: type[_Client],
    cluster_client_class: type,
    *,
    needs_hash_tag: bool = True,
) -> Any:
    """The client a board (``board_name`` in errors) runs on: a cluster client of the board's
    API as it is (its ``key`` then needs a hash tag, so that the board is in one slot, unless
    ``needs_hash_tag`` is False), else :func:`make_client`'s."""
    if getattr(type(redis_client), "is_cluster", False) or isinstance(
        redis_client, CoreClusterClient
    ):
        if not isinstance(redis_client, cluster_client_class):
            raise TypeError(
                f"{board_name} runs on a {public_name(cluster_client_class)}, "
                f"not a {public_name(type(redis_client))}"
            )
        if url is not None:
            raise TypeError("pass either redis_client or url, not both")
        if needs_hash_tag:
            require_hash_tag(key)
        return redis_client
    return make_client(redis_client, url, client_class)


def public_name(cls: type) -> str:
    """A class by the name it is imported under: ``redis_leaderboard.Client`` (the blocking
    client), ``redis_leaderboard.asyncio.Client``, ``redis_leaderboard.asyncio.ClusterClient``
    (defined as ``cluster.AsyncClusterClient``); another class by its module and name."""
    module, name = cls.__module__, cls.__qualname__
    if module == "builtins":
        return name
    if not module.startswith("redis_leaderboard"):
        return f"{module}.{name}"
    if module == "redis_leaderboard.asyncio" or module.startswith(
        ("redis_leaderboard._seasons", "redis_leaderboard._async")
    ):
        return f"redis_leaderboard.asyncio.{name}"
    if name.startswith("Async"):
        return f"redis_leaderboard.asyncio.{name[len('Async') :]}"
    return f"redis_leaderboard.{name}"


def _api_hint(expected: type, given: type) -> str:
    asyncio_given = public_name(given).startswith("redis_leaderboard.asyncio.")
    asyncio_expected = public_name(expected).startswith("redis_leaderboard.asyncio.")
    if asyncio_given and not asyncio_expected:
        return " (an asyncio client: a blocking board needs a blocking client)"
    if asyncio_expected and not asyncio_given:
        return " (a blocking client: an asyncio board needs an asyncio client)"
    return ""


def require_hash_tag(key: str) -> None:
    """``ValueError`` unless ``key`` has a hash tag: on a cluster, every key of a board (the
    sorted set, ``f"{key}:user:{user_id}"``, ``f"{key}:options"``...) must be in one slot, which
    only a hash tag guarantees. Keys are never renamed: the caller chooses the name."""
    if not has_hash_tag(key):
        raise ValueError(
            f"a board on Redis Cluster needs a hash tag in its key, so that its sorted set, "
            f"metadata hashes and option keys are in one slot: use key='{{{key}}}' or "
            f"key='{{lb}}:{key}' (the part between the first '{{' and the next '}}' is hashed, "
            f"and must not be empty) instead of {key!r}; keys are never renamed for you"
        )
