"""The compiled core: RESP codec, leaderboard operations and transports (C++)."""

import asyncio
from typing import Any, Callable, Iterable, Literal, Mapping, Optional, Sequence, Union

class RedisError(Exception):
    """Base of every error this package raises for Redis (mirrors redis-py)."""

class ConnectionError(RedisError):
    """The connection failed, dropped, or a reply was lost (the call is not retried)."""

class AuthenticationError(ConnectionError):
    """The server refused the username or password."""

class BusyLoadingError(ConnectionError):
    """LOADING: the server is loading its dataset; retry in a moment."""

class TimeoutError(RedisError):
    """The server did not answer within the configured timeout."""

class ResponseError(RedisError):
    """The server answered with an error reply."""

class NoScriptError(ResponseError):
    """NOSCRIPT: the server does not keep scripts."""

class ReadOnlyError(ResponseError):
    """READONLY: a write was sent to a replica."""

class NoPermissionError(ResponseError):
    """NOPERM: the ACL user may not run this command."""

class OutOfMemoryError(ResponseError):
    """OOM: the server is at maxmemory and refused the write."""

class ExecAbortError(ResponseError):
    """EXECABORT: a transaction was discarded."""

class Operation:
    """One leaderboard operation: the requests it sends and how it reads their replies.

    Built by :class:`Board`, run by a client; it carries no connection of its own.
    """

    @property
    def name(self) -> str: ...
    @property
    def cached_metadata_prefix(self) -> Optional[str]:
        """The metadata prefix a client-side cache serves this read from; None if it cannot."""
    def request(self) -> bytes:
        """RESP bytes of the next round trip (scripts as EVALSHA)."""
    def feed(self, data: bytes) -> bool:
        """Feed the RESP replies to the last request; True when the operation is finished."""
    def result(self) -> Any:
        """The operation's return value, once feed() returned True."""

class Board:
    """A board's key, size limit and ranking rules; builds validated operations, does no I/O."""

    def __init__(
        self,
        key: str,
        max_entries: int,
        *,
        order: Literal["desc", "asc"] = "desc",
        ties: Literal["lexicographic", "first", "competition", "dense"] = "lexicographic",
    ) -> None:
        """ValueError for an unknown ``order`` or ``ties``, TypeError if not a str."""
    @property
    def key(self) -> str: ...
    @property
    def max_entries(self) -> int: ...
    @property
    def order(self) -> Literal["desc", "asc"]: ...
    @property
    def ties(self) -> Literal["lexicographic", "first", "competition", "dense"]: ...
    @property
    def options_checked(self) -> bool:
        """True once a reply showed the board's recorded options are this object's."""
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: Literal["set", "best", "incr"] = "set",
    ) -> Operation:
        """The full write; its result is ``{"user_id", "score", "rank", "previous_score",
        "previous_rank", "changed", "metadata", "trimmed_user_ids"}``."""
    def check_options(self) -> Operation:
        """Checks the board's recorded options (ValueError naming both if they differ)."""
    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Operation: ...
    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Operation: ...
    def set_max_entries(self, max_entries: int) -> Operation:
        """Validates and returns the trim to run; :attr:`max_entries` changes once it has
        finished."""
    def get_top(self, count: int = 10) -> Operation: ...
    def get_around_rank(self, rank: int, count: int = 5) -> Operation: ...
    def get_rank(self, user_id: str) -> Operation: ...
    def get_user_metadata(self, user_id: str) -> Operation: ...
    def get_user_entry(self, user_id: str) -> Operation: ...
    def list_all(self) -> Operation: ...
    def get_size(self) -> Operation: ...
    def delete_user(self, user_id: str) -> Operation: ...
    def clear(self) -> Operation: ...
    def get_around_user(self, user_id: str, count: int = 5) -> Operation:
        """Result: ``count`` entries centred on the user (``[]`` if absent)."""
    def get_entries(self, user_ids: Iterable[str]) -> Operation:
        """Result: one entry or None per id, in order (at most 1,000 ids)."""
    def get_page(self, page: int, page_size: int = 10) -> Operation:
        """Result: ``{"page", "page_size", "total_pages", "size", "entries"}``."""
    def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> Operation:
        """Result: the entries with ``min_score <= score <= max_score``, best first."""
    def count_by_score(self, min_score: float, max_score: float) -> Operation:
        """Result: an int (ZCOUNT)."""
    def rank_for_score(self, score: float) -> Operation:
        """Result: 1 + the entries strictly better than ``score``."""
    def get_percentile(self, user_id: str) -> Operation:
        """Result: a float 0-100, or None if the user is absent."""
    def score_at_percentile(self, p: float) -> Operation:
        """Result: the nearest-rank score, or None on an empty board."""
    def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> Operation:
        """Result: ``[{"min", "max", "count"}, ...]``, ascending scores."""
    def upsert_chunk(self, entries: Iterable[Any], first_index: int = 0) -> Operation:
        """upsert_many's request for one chunk (validated here; errors name ``first_index + i``)."""
    def trim_to_max_entries(self, report: int = 1000) -> Operation:
        """Trim to :attr:`max_entries` in pages; the result lists at most ``report`` ids."""

def ping() -> Operation:
    """The PING operation (True when the server answers)."""

def encode_command(*args: str | bytes | int | float) -> bytes:
    """RESP bytes of one command."""

def decode_replies(data: bytes) -> list[Any]:
    """Every reply in ``data``; error replies become :class:`ResponseError` instances."""

class AsyncCore:
    """The asyncio client's core; use :class:`redis_leaderboard.asyncio.Client`."""

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        username: Optional[str] = None,
        password: Optional[str] = None,
        socket_timeout: Optional[float] = None,
        socket_connect_timeout: Optional[float] = None,
        client_name: Optional[str] = None,
        unix_socket_path: Optional[str] = None,
        max_in_flight: int = 1024,
        max_pending: int = 10000,
        max_reply_bytes: Optional[int] = None,
        *,
        ssl: bool = False,
        ssl_ca_certs: Optional[str] = None,
        ssl_ca_path: Optional[str] = None,
        ssl_ca_data: Optional[str] = None,
        ssl_certfile: Optional[str] = None,
        ssl_keyfile: Optional[str] = None,
        ssl_password: Optional[str] = None,
        ssl_cert_reqs: Union[str, int] = "required",
        ssl_check_hostname: bool = True,
        ssl_min_version: Union[str, int, None] = None,
        ssl_ciphers: Optional[str] = None,
        sentinels: Optional[Sequence[tuple[str, int]]] = None,
        service_name: Optional[str] = None,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        sentinel_ssl: bool = False,
    ) -> None: ...
    def submit(self, operation: Operation, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
        """Run ``operation``; returns an asyncio future created on ``loop``."""
    def run_pipelined(
        self,
        operations: Iterable[Operation],
        on_result: Callable[[Any], object],
        window: int,
        loop: Any,
    ) -> Any:
        """Run one-round-trip operations in order, ``window`` in flight; ``on_result`` gets each
        result in order; the returned future gets None, or the first error."""
    def drain(self) -> None:
        """Settle every finished request (the event loop calls it when fileno() is readable)."""
    def close(self) -> None: ...
    def fileno(self) -> int: ...
    @property
    def pending(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def stats(self) -> dict[str, int]: ...
    def address(self) -> str: ...

class Client:
    """A blocking, pipelined Redis client (Boost.Asio sockets, hiredis codec).

    Safe to share between threads: each call borrows a pooled connection and releases the
    GIL while it waits. A dropped connection is reopened on the next call; a call whose
    reply was lost raises :class:`ConnectionError` and is never retried.
    Timeouts are in seconds; None waits without limit (as redis-py). ``max_reply_bytes``
    (default 512 MiB) caps the memory one reply may take; a larger reply drops the connection
    with :class:`ConnectionError`.
    """

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        username: Optional[str] = None,
        password: Optional[str] = None,
        socket_timeout: Optional[float] = None,
        socket_connect_timeout: Optional[float] = None,
        client_name: Optional[str] = None,
        unix_socket_path: Optional[str] = None,
        *,
        max_reply_bytes: Optional[int] = None,
        ssl: bool = False,
        ssl_ca_certs: Optional[str] = None,
        ssl_ca_path: Optional[str] = None,
        ssl_ca_data: Optional[str] = None,
        ssl_certfile: Optional[str] = None,
        ssl_keyfile: Optional[str] = None,
        ssl_password: Optional[str] = None,
        ssl_cert_reqs: Union[str, int] = "required",
        ssl_check_hostname: bool = True,
        ssl_min_version: Union[str, int, None] = None,
        ssl_ciphers: Optional[str] = None,
        sentinels: Optional[Sequence[tuple[str, int]]] = None,
        service_name: Optional[str] = None,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        sentinel_ssl: bool = False,
        client_cache: bool = False,
        client_cache_size: int = 10000,
        client_cache_max_bytes: int = 67108864,
    ) -> None: ...
    def ping(self) -> bool: ...
    def run(self, operation: Operation) -> Any:
        """Run a :class:`Board` operation and return its result (the guide's shapes)."""
    def run_pipelined(
        self,
        operations: Iterable[Operation],
        on_result: Callable[[Any], object],
        window: int = 4,
    ) -> None:
        """Run one-round-trip operations in order on one connection, ``window`` requests ahead
        of their replies; ``on_result`` gets each result in order. If anything raises, the
        replies already asked for are read first."""
    def execute_command(self, *args: str | bytes | int | float) -> Any:
        """Send one command; bulk strings come back as ``bytes``."""
    def stats(self) -> dict[str, int]:
        """``round_trips``, ``commands``, ``reconnects``, ``connections`` so far."""
    def cache_info(self) -> Optional[dict[str, Any]]:
        """The client-side cache's counters and size, or None if the cache is off."""
    def close(self) -> None: ...
    def __enter__(self) -> Client: ...
    def __exit__(self, *exc: object) -> None: ...

class ClientCache:
    """The asyncio client's client-side cache of metadata and its invalidation connection."""

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        username: Optional[str] = None,
        password: Optional[str] = None,
        socket_timeout: Optional[float] = None,
        socket_connect_timeout: Optional[float] = None,
        client_name: Optional[str] = None,
        unix_socket_path: Optional[str] = None,
        *,
        max_reply_bytes: Optional[int] = None,
        ssl: bool = False,
        ssl_ca_certs: Optional[str] = None,
        ssl_ca_path: Optional[str] = None,
        ssl_ca_data: Optional[str] = None,
        ssl_certfile: Optional[str] = None,
        ssl_keyfile: Optional[str] = None,
        ssl_password: Optional[str] = None,
        ssl_cert_reqs: Union[str, int] = "required",
        ssl_check_hostname: bool = True,
        ssl_min_version: Union[str, int, None] = None,
        ssl_ciphers: Optional[str] = None,
        sentinels: Optional[Sequence[tuple[str, int]]] = None,
        service_name: Optional[str] = None,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        sentinel_ssl: bool = False,
        client_cache_size: int = 10000,
        client_cache_max_bytes: int = 67108864,
    ) -> None: ...
    def begin(self, prefix: str) -> Optional[tuple[int, int]]:
        """A barrier, (generation, token) of a PING written on the invalidation connection for a
        read now (never blocks); None: read uncached."""
    def needs_setup(self, prefix: str) -> bool: ...
    def setup(self, prefix: str) -> None:
        """Sets the invalidation connection up (blocking: run it on an executor)."""
    def passed(self, barrier: tuple[int, int]) -> bool: ...
    def poll(self, barrier: tuple[int, int]) -> bool: ...
    def drain(self) -> bool: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...
    def info(self) -> dict[str, Any]: ...

class CachedRead:
    """One read through the client-side cache (see connection/cache.hpp)."""

    def __init__(self, cache: ClientCache, operation: Operation) -> None: ...
    def query(self) -> Operation: ...
    def fetch(self, barrier: Optional[tuple[int, int]]) -> Optional[Operation]: ...
    def result(self) -> Any: ...

class ConnectionCore:
    """The connection core without I/O (for tests): feed it events, bytes and time (seconds on
    any clock); read what it wants written, closed and completed."""

    def __init__(
        self,
        *,
        username: Optional[str] = None,
        password: Optional[str] = None,
        db: int = 0,
        client_name: Optional[str] = None,
        socket_timeout: Optional[float] = None,
        max_reply_bytes: Optional[int] = None,
        max_in_flight: int = 1024,
    ) -> None: ...
    def submit(self, id: int, operation: Operation, started: float = 0.0) -> None: ...
    def submit_raw(self, id: int, wire: bytes, count: int, started: float = 0.0) -> None: ...
    def cancel(self, id: int) -> None: ...
    def connected(self, now: float) -> None: ...
    def connect_failed(self, message: str) -> None: ...
    def received(self, data: bytes, now: float) -> None: ...
    def wrote(self) -> None: ...
    def lost(self, message: str, now: float) -> None: ...
    def tick(self, now: float) -> None: ...
    def abort(self, message: str) -> None: ...
    def take_write(self) -> bytes: ...
    def take_close(self) -> bool: ...
    def take_completions(self) -> list[tuple[int, Any]]:
        """``(id, result)`` for each request finished since the last call: the operation's
        result, a raw request's replies, or an exception instance."""
    @property
    def next_deadline(self) -> Optional[float]: ...
    @property
    def is_connected(self) -> bool: ...
    @property
    def wants_connection(self) -> bool: ...
    @property
    def outstanding(self) -> int: ...
    def stats(self) -> dict[str, int]: ...
