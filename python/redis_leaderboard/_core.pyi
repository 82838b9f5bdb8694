"""The compiled core: RESP codec, leaderboard operations and transports (C++)."""

import asyncio
import datetime
from typing import (
    Any,
    Callable,
    ClassVar,
    Generic,
    Iterable,
    Literal,
    Mapping,
    Optional,
    Sequence,
    TypedDict,
    TypeVar,
    Union,
)

# Unpack is typing's from Python 3.11; a stub is never run, so typing_extensions (bundled with
# type checkers, not a dependency) serves every Python the package supports.
from typing_extensions import Unpack

from ._types import (
    Entry,
    EventBatch,
    HistogramBin,
    Page,
    SubmitResult,
    TrimSummary,
    WriteResult,
)

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)

# The clients' keyword options, typed: the compiled constructors read every option through one
# table (option_table(); cpp/bindings/conversions.cpp), which these follow name for name, with
# redis_leaderboard.options.ClientOptions' types (tests/test_option_table.py checks both). The
# positional options (host ... unix_socket_path) are the constructors' own parameters.

class _TlsOptions(TypedDict, total=False):
    ssl: bool
    ssl_ca_certs: Optional[str]
    ssl_ca_path: Optional[str]
    ssl_ca_data: Optional[str]
    ssl_certfile: Optional[str]
    ssl_keyfile: Optional[str]
    ssl_password: Optional[str]
    ssl_cert_reqs: Union[str, int]
    ssl_check_hostname: bool
    ssl_min_version: Union[str, int, None]
    ssl_ciphers: Optional[str]

class _NodeOptions(_TlsOptions, total=False):
    max_reply_bytes: Optional[int]
    min_replicas: int
    replica_timeout: float
    wait_aof: bool

class _ClientOptions(_NodeOptions, total=False):
    """Client's keyword-only options."""

    sentinels: Optional[Iterable[tuple[str, int]]]
    service_name: Optional[str]
    sentinel_username: Optional[str]
    sentinel_password: Optional[str]
    sentinel_ssl: bool
    client_cache: bool
    client_cache_size: int
    client_cache_max_bytes: int

class _AsyncClientOptions(_ClientOptions, total=False):
    """AsyncCore's keyword-only options: Client's and the asyncio client's back-pressure."""

    max_in_flight: int
    max_pending: int
    max_bytes_in_flight: int

class _ClusterOptions(_NodeOptions, total=False):
    """The cluster clients' options (all keyword-only)."""

    username: Optional[str]
    password: Optional[str]
    socket_timeout: Optional[float]
    socket_connect_timeout: Optional[float]
    client_name: Optional[str]
    read_from_replicas: bool

def option_table() -> list[tuple[str, Any, bool, tuple[str, ...]]]:
    """Every client option: ``(name, default, positional, (the _core classes that take it,
    ...))``, in ClientOptions' order; the clients' constructors read their arguments through
    this one table."""

class RedisError(Exception):
    """Base of every error this package raises for Redis (mirrors redis-py)."""

class ConnectionError(RedisError):
    """The connection failed, dropped, or a reply was lost (a write is not retried)."""

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

class NotReplicatedError(RedisError):
    """A write the primary applied, but fewer replicas than min_replicas confirmed having it
    (WAIT, or WAITAOF with wait_aof) within replica_timeout; it was not resent. replicas is
    how many confirmed, min_replicas how many were required. Sending it again applies it
    again, unless it carries a submission_id (then it returns the first result)."""

    replicas: int
    """How many replicas confirmed the write within replica_timeout."""
    min_replicas: int
    """How many were required (the client's min_replicas)."""

class RateLimited(ResponseError):
    """RATELIMITED: the board's rate_limit refused the write, which changed nothing;
    retry_after is the seconds until the user's window has room."""

    retry_after: float
    """Seconds until the user's sliding window has room for another write."""

class ClockSkewError(ResponseError):
    """The server's clock says the write does not belong to the period (bucket, window) the
    client's clock named, and the client's clock is further off than the board accepts
    (redis_leaderboard.MAX_CLOCK_SKEW); nothing was changed. server_time is the server's clock
    then (an aware datetime, UTC)."""

    server_time: datetime.datetime
    """The server's clock when it refused the write."""

class OptionsMismatch(ValueError):
    """The board's options (order, ties, rate_limit, events) differ from those recorded in
    Redis for it; nothing was changed. A ValueError."""

class ScoreRejected(ValueError):
    """The board's score_range or max_increment refused the write; nothing was changed (no
    rate-limit count, no event, no submission record). A ValueError."""

class PeriodClosed(ValueError):
    """A write to a period that no longer (or not yet) takes writes on the server's clock; nothing
    was changed. A ValueError."""

class SubmissionIdReused(ValueError):
    """The submission id was applied before for another user or another payload (score, mode,
    metadata); nothing was changed. A resend repeating the write exactly returns the first
    result instead. A ValueError."""

class TournamentFull(ValueError):
    """The tournament's period has its max_size players: a join (or a first submission) is
    refused, first come first served; nothing was changed. A ValueError."""

class NotJoined(ValueError):
    """A submission from a player who has not joined a join_required tournament; nothing was
    changed. A ValueError."""

class AttemptsExhausted(ValueError):
    """The player has used every attempt of the period (max_attempts plus those granted with
    add_attempts); nothing was changed. A ValueError."""

class StalePeriod(ValueError):
    """A submission meant for a period that is not the current one (the stale-client guard);
    nothing was changed. A ValueError."""

class Operation(Generic[_T_co]):
    """One leaderboard operation: the requests it sends and how it reads their replies.

    Built by ``Board``, run by a client; it carries no connection of its own. Generic in
    the stub only (``Operation[list[Entry]]``): what its result is, for a type checker.
    """

    @property
    def name(self) -> str: ...
    @property
    def cached_metadata_prefix(self) -> Optional[str]:
        """The metadata prefix a client-side cache serves this read from; None if it cannot."""
    def in_one_trip(self) -> None:
        """Make a read of many entries, which takes the guide's two steps on one Redis, one
        round trip: its script, one snapshot. Nothing for other operations. Before request()."""
    def request(self) -> bytes:
        """RESP bytes of the next round trip (scripts as EVALSHA; a read of many entries in
        one round trip, its script)."""
    def feed(self, data: bytes, stream: bool = True) -> bool:
        """Feed the RESP replies to the last request; True when the operation is finished."""
    def result(self) -> _T_co:
        """The operation's return value, once feed() returned True."""

class Board:
    """A board's key, size limit and ranking rules; builds validated operations, does no I/O."""

    def __init__(
        self,
        key: str,
        max_entries: Optional[int],
        *,
        order: Literal["desc", "asc"] = "desc",
        ties: Literal["lexicographic", "first", "competition", "dense"] = "lexicographic",
        submission_ttl: float = 86400,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        events_maxlen: int = 10000,
        expire_at: Optional[int] = None,
        submission_scope: Optional[str] = None,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
        tiebreak: Optional[Sequence[tuple[str, str]]] = None,
        open_span: Optional[tuple[int, int]] = None,
        layout: Literal["guide", "compact"] = "guide",
    ) -> None:
        """ValueError for an unknown ``order``, ``ties`` or ``layout``, TypeError if not a str;
        the guards checked too. ``expire_at`` (unix ms): every write PEXPIREATs the board's keys
        at it (seasons). ``submission_scope``: where submission ids are recorded
        (``f"{submission_scope}:submission:{id}"``; default the key); a period's board is
        ``f"{scope}:{period id}"`` and records its ids under its periodic board's key.
        ``open_span`` (from, until), unix ms: when, on the server's clock, the board's writes
        belong to its period; outside it the server refuses them (ClockSkewError)."""
    @property
    def key(self) -> str: ...
    @property
    def expire_at(self) -> Optional[int]: ...
    @property
    def open_span(self) -> Optional[tuple[int, int]]: ...
    @property
    def submission_scope(self) -> str: ...
    @property
    def period(self) -> Optional[str]:
        """A period's board: its period id (its key after the scope); else None."""
    @property
    def max_entries(self) -> Optional[int]:
        """None: an unlimited board (no write trims it)."""
    @property
    def order(self) -> Literal["desc", "asc"]: ...
    @property
    def ties(self) -> Literal["lexicographic", "first", "competition", "dense"]: ...
    @property
    def layout(self) -> Literal["guide", "compact"]:
        """Where the metadata lives: a hash per player (guide) or one for the board."""
    @property
    def options_checked(self) -> bool:
        """True once a reply showed the board's recorded options are this object's."""
    @property
    def ties_word(self) -> str:
        """The tie rule as the scripts read it (tie-break columns: ``"tb:<name>.<dir>,..."``;
        a compact board's ends ``"+compact"``)."""
    @property
    def option_keys(self) -> list[str]:
        """The board's option keys, as a declared script takes them (board_spec)."""
    def tiebreak_word(self, values: Optional[Mapping[str, float]]) -> str:
        """A write's tie-break word, ``"tb:<ranked member's key>"`` ('' for None); ValueError
        for a bad value, as ``submit``'s."""
    @property
    def tiebreak(self) -> Optional[tuple[tuple[str, str], ...]]:
        """The tie-break columns, or None."""
    @property
    def bulk_checked(self) -> bool:
        """upsert_many's check_options() ran (once per object; its hide/unhide clear it)."""
    @property
    def submission_ttl(self) -> float: ...
    @property
    def rate_limit(self) -> Optional[tuple[int, float]]: ...
    @property
    def score_range(self) -> Optional[tuple[Optional[float], Optional[float]]]: ...
    @property
    def max_increment(self) -> Optional[float]: ...
    @property
    def guarded(self) -> bool:
        """Whether the board has guards a write must carry (rate_limit, events, score limits)."""
    @property
    def events(self) -> bool: ...
    @property
    def events_maxlen(self) -> int: ...
    def read_events(
        self, last_id: str = "$", count: int = 100, block: Optional[float] = None
    ) -> Operation[EventBatch]:
        """XREAD of ``f"{key}:events"``: ``{"last_id", "events": [...]}``, each event
        ``{"id", "kind", "user_id", "score", "rank", "previous_score", "previous_rank",
        "trimmed_user_ids", "overtaken"}`` (``"kind"``: ``"score"``, ``"delete"``, ``"trim"``
        or ``"clear"``; ``"user_id"`` and ``"score"`` None for trims and clears), plus
        ``"removed"`` and ``"size"`` for ``"clear"``."""
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: Literal["set", "best", "incr"] = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> Operation[SubmitResult]:
        """The full write; its result is ``{"user_id", "score", "rank", "previous_score",
        "previous_rank", "changed", "metadata", "trimmed_user_ids"}`` (and ``"duplicate"``
        with a ``submission_id``)."""
    def check_options(self) -> Operation[None]:
        """Checks the board's recorded options (ValueError naming both if they differ)."""
    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Operation[WriteResult]: ...
    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Operation[WriteResult]: ...
    def set_max_entries(self, max_entries: Optional[int]) -> Operation[list[str]]:
        """Validates and returns the trim to run; ``max_entries`` changes once it has
        finished. With ``events``, each page appends ``"trim"`` events."""
    def get_top(self, count: int = 10) -> Operation[list[Entry]]: ...
    def get_around_rank(self, rank: int, count: int = 5) -> Operation[list[Entry]]: ...
    def get_rank(self, user_id: str) -> Operation[Optional[int]]: ...
    def get_user_metadata(self, user_id: str) -> Operation[dict[str, str]]: ...
    def get_user_entry(self, user_id: str) -> Operation[Optional[Entry]]: ...
    def list_all(self) -> Operation[list[Entry]]: ...
    def get_size(self) -> Operation[int]: ...
    def delete_user(self, user_id: str) -> Operation[bool]:
        """remove.lua; with ``events``, a removal appends a ``"delete"`` event."""
    def clear(self) -> Operation[None]:
        """clear.lua in pages; with ``events``, one ``"clear"`` event a page."""
    def convert_layout(self, page: int = 1000) -> Operation[int]:
        """layout.lua a page per round trip until the board at key is compact (ValueError on
        a board of the guide's layout); the result is how many players' metadata moved."""
    def hide(self, user_id: str, *, scope: bool = False) -> Operation[bool]:
        """hide.lua: the user off every rank, their score kept aside; with ``events``, a
        ``"hide"`` event if they were on the board. ``scope``: a period's board hides them
        from every later period of its periodic board too."""
    def unhide(self, user_id: str, *, scope: bool = False) -> Operation[bool]:
        """hide.lua: the kept score back on the board, as a write (trim, ``"score"`` event)."""
    def hidden(self, *, scope: bool = False) -> Operation[list[str]]:
        """hide.lua: the hidden user ids, in byte order."""
    def is_hidden(self, user_id: str, *, scope: bool = False) -> Operation[bool]:
        """hide.lua: whether the user is hidden (as ``hidden`` lists them)."""
    def get_around_user(self, user_id: str, count: int = 5) -> Operation[list[Entry]]:
        """Result: ``count`` entries centred on the user (``[]`` if absent)."""
    def get_entries(self, user_ids: Iterable[str]) -> Operation[list[Optional[Entry]]]:
        """Result: one entry or None per id, in order (at most 1,000 ids)."""
    def get_page(self, page: int, page_size: int = 10) -> Operation[Page]:
        """Result: ``{"page", "page_size", "total_pages", "size", "entries"}``."""
    def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> Operation[list[Entry]]:
        """Result: the entries with ``min_score <= score <= max_score``, best first."""
    def count_by_score(self, min_score: float, max_score: float) -> Operation[int]:
        """Result: an int (ZCOUNT)."""
    def rank_for_score(self, score: float) -> Operation[int]:
        """Result: 1 + the entries strictly better than ``score``."""
    def get_percentile(self, user_id: str) -> Operation[Optional[float]]:
        """Result: a float 0-100, or None if the user is absent."""
    def score_at_percentile(self, p: float) -> Operation[Optional[float]]:
        """Result: the nearest-rank score, or None on an empty board."""
    def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> Operation[list[HistogramBin]]:
        """Result: ``[{"min", "max", "count"}, ...]``, ascending scores."""
    def upsert_chunk(
        self, entries: Iterable[Any], first_index: int = 0, retries: int = 2
    ) -> Operation[int]:
        """upsert_many's request for one chunk (validated here; errors name ``first_index + i``)."""
    def trim_to_max_entries(self, report: int = 1000) -> Operation[TrimSummary]:
        """Trim to ``max_entries`` in pages; the result lists at most ``report`` ids. With
        ``events``, each page appends ``"trim"`` events."""

class Window:
    """A rolling window's buckets and union (seasons); builds validated operations, no I/O."""

    def __init__(
        self,
        key: str,
        bucket_ms: int,
        window_ms: int,
        *,
        aggregate: Literal["sum", "max", "min"] = "sum",
        max_entries: Optional[int] = 100,
        order: Literal["desc", "asc"] = "desc",
        submission_ttl: float = 86400,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        events_maxlen: int = 10000,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
    ) -> None: ...
    @property
    def key(self) -> str: ...
    @property
    def bucket_ms(self) -> int: ...
    @property
    def window_ms(self) -> int: ...
    @property
    def buckets(self) -> int: ...
    @property
    def max_entries(self) -> Optional[int]:
        """None: an unlimited board (no write trims it)."""
    @property
    def aggregate(self) -> Literal["sum", "max", "min"]: ...
    @property
    def order(self) -> Literal["desc", "asc"]: ...
    @property
    def submission_ttl(self) -> float:
        """Seconds the result of a write with a submission id is kept (guards)."""
    @property
    def rate_limit(self) -> Optional[tuple[int, float]]:
        """``(max_writes, per_seconds)`` per user, or None (guards)."""
    @property
    def events(self) -> bool:
        """Whether writes append change events to ``f"{key}:events"`` (guards)."""
    @property
    def events_maxlen(self) -> int: ...
    @property
    def score_range(self) -> Optional[tuple[Optional[float], Optional[float]]]:
        """The lowest and highest score a write may leave in the user's bucket (fair play)."""
    @property
    def max_increment(self) -> Optional[float]:
        """The most one write may improve the user's bucket score by (fair play)."""
    def bucket_key(self, bucket: int) -> str: ...
    def refreshed(self, read: Operation[_T]) -> Operation[_T]:
        """``read`` (a ``Board`` operation on the window's key), led by the refresh of the
        window for the server's bucket now and followed by a check of its marker, in the same
        round trip; sent again (its replies dropped) while the window's transition takes more
        steps."""
    def delete_user(self, user_id: str) -> Operation[bool]:
        """Result: True if the user was in the window (sent again while the window's transition
        takes more steps)."""
    def clear(self) -> Operation[None]: ...

def group_write(
    members: Iterable[tuple[Union[Board, Window], str, int]],
    user_id: str,
    score: float,
    metadata: Optional[Mapping[str, Any]] = None,
    submission_id: Optional[str] = None,
    retries: int = 2,
) -> Operation[list[SubmitResult]]:
    """One write to several boards (``(board or window, mode, bucket)``), atomically; its
    result is submit()'s result for each, in order. With ``submission_id`` each board applies
    it once (as ``Board.submit``: its results then carry ``"duplicate"``), and a lost reply is
    resent at most ``retries`` times."""

def ping() -> Operation[bool]:
    """The PING operation (True when the server answers)."""

def encode_command(*args: str | bytes | int | float) -> bytes:
    """RESP bytes of one command."""

def decode_replies(data: bytes) -> list[Any]:
    """Every reply in ``data``; error replies become ``ResponseError`` instances."""

class AsyncCore:
    """The asyncio client's core; use ``redis_leaderboard.asyncio.Client``."""

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
        **options: Unpack[_AsyncClientOptions],
    ) -> None: ...
    def client_cache(self) -> Optional[ClientCache]:
        """The client-side cache the core was made with (``client_cache=True``), whose
        invalidation connection has this core's options (every one of them: TLS, ACL,
        Sentinel, db...); None if the cache is off."""
    def run(self, operation: Operation[_T]) -> asyncio.Future[_T]:
        """Run ``operation`` on the running event loop; returns its future."""
    def submit(
        self, operation: Operation[_T], loop: asyncio.AbstractEventLoop
    ) -> asyncio.Future[_T]:
        """Run ``operation``; returns an asyncio future created on ``loop``."""
    def run_pipelined(
        self,
        operations: Iterable[Operation[Any]],
        on_result: Callable[[Any], object],
        window: int,
        loop: Any,
    ) -> asyncio.Future[None]:
        """Run one-round-trip operations in order, ``window`` in flight; ``on_result`` gets each
        result in order; the returned future gets None, or the first error."""
    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run on ``loop`` from now on: it watches the connection's socket."""
    def close(self) -> None: ...
    @property
    def pending(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def stats(self) -> dict[str, int]: ...
    def address(self) -> str: ...
    def server(self) -> Optional[tuple[str, int, str, int]]:
        """(host, port, unix socket path, number) of the connection in place (the number
        changes with every connection), or None while not connected."""
    def dedicated(self) -> AsyncCore:
        """A new core with this one's options (its own connection)."""

class Client:
    """A blocking, pipelined Redis client (Boost.Asio sockets, hiredis codec).

    Safe to share between threads: each call borrows a pooled connection and releases the
    GIL while it waits. A dropped connection is reopened on the next call; a write whose
    reply was lost raises ``ConnectionError`` and is never resent, unless it carries an
    idempotency key (a ``submission_id``): then it is resent on a new connection, at most
    ``retries`` times, and raises ``ConnectionError`` after the last attempt. A read may
    be retried once on a fresh connection within its timeout.
    Timeouts are in seconds; None waits without limit (as redis-py). ``max_reply_bytes``
    (default 512 MiB) caps the memory one reply may take; a larger reply drops the connection
    with ``ConnectionError``.
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
        **options: Unpack[_ClientOptions],
    ) -> None: ...
    def ping(self) -> bool:
        """PING; True when answered."""
    def run(self, operation: Operation[_T]) -> _T:
        """Run a ``Board`` operation and return its result (the guide's shapes)."""
    def run_pipelined(
        self,
        operations: Iterable[Operation[Any]],
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
    def address(self) -> str:
        """Where the client connects: host:port, a Unix socket's path, or 'name' via
        Sentinel."""
    def dedicated(self) -> Client:
        """A new client with this one's options (TLS, ACL, Sentinel)."""
    def cache_info(self) -> Optional[dict[str, Any]]:
        """The client-side cache's counters and size, or None if the cache is off."""
    def close(self) -> None:
        """Close every connection of the pool (idle or not); the client is not used after."""
    def __enter__(self) -> Client: ...
    def __exit__(self, *exc: object) -> None: ...

class ClientCache:
    """The asyncio client's client-side cache of metadata and its invalidation connection
    (``AsyncCore.client_cache`` makes one with the core's own options)."""

    def begin(self, prefix: str) -> Optional[tuple[int, int]]:
        """A barrier, (generation, token) of a PING written on the invalidation connection for a
        read now (never blocks); None: read uncached."""
    def needs_setup(self, prefix: str) -> bool: ...
    def setup(self, prefix: str) -> None:
        """Sets the invalidation connection up (blocking: run it on an executor)."""
    def passed(self, barrier: tuple[int, int]) -> bool: ...
    def poll(self, barrier: tuple[int, int]) -> bool: ...
    def drain(self) -> bool: ...
    def on_server(self, host: str, port: int, unix_socket_path: str) -> bool:
        """Whether the invalidation connection is on this server (else it is dropped, the cache
        flushed, and set up again where the resolver points); never blocks (False while it is
        being set up)."""
    def fileno(self) -> int: ...
    def close(self) -> None: ...
    def info(self) -> dict[str, Any]: ...

class CachedRead(Generic[_T_co]):
    """One read through the client-side cache, its steps and decisions (see
    connection/cache.hpp); the asyncio client does its I/O."""

    RUN: ClassVar[int]
    AWAIT_BARRIER: ClassVar[int]
    DONE: ClassVar[int]

    def __init__(
        self, cache: ClientCache, operation: Operation[_T_co], barrier: tuple[int, int]
    ) -> None: ...
    def next(self, on_barrier_server: Callable[[], bool]) -> int:
        """What the driver does next: RUN (operation()), AWAIT_BARRIER (then barrier_passed())
        or DONE (result()). on_barrier_server(): whether the data connection is on the
        invalidation connection's server now."""
    def operation(self) -> Operation[Any]: ...
    def barrier_passed(self, passed: bool) -> None: ...
    def result(self) -> _T_co: ...

class ConnectionCore:
    """The connection core without I/O (for tests): feed it events, bytes and time (seconds on
    any clock); read what it wants written, closed and completed."""

    def __init__(self, **options: Unpack[_AsyncClientOptions]) -> None:
        """The asyncio client's options (those of the handshake and the window matter)."""
    def submit(self, id: int, operation: Operation[Any], started: float = 0.0) -> None: ...
    def submit_raw(self, id: int, wire: bytes, count: int, started: float = 0.0) -> None: ...
    def cancel(self, id: int) -> None: ...
    def assume_scripts_loaded(self) -> None:
        """For tests of other behaviour: treat every script as one the server has run for
        this connection, so no request holds the ones behind it until its reply."""
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

def key_slot(key: str) -> int:
    """The Redis Cluster hash slot of ``key`` (CRC16 of its hash tag, else of the key)."""

def has_hash_tag(key: str) -> bool:
    """True when ``key`` has a non-empty hash tag (the first ``{`` to the next ``}``)."""

class ClusterClient:
    """A blocking Redis Cluster client, safe to share between threads: one connection pool
    per node, requests routed by their keys' hash slot; MOVED/ASK followed, TRYAGAIN,
    CLUSTERDOWN and failovers waited out within ``socket_timeout`` (10 s without one)."""

    def __init__(
        self, startup_nodes: Iterable[tuple[str, int]], **options: Unpack[_ClusterOptions]
    ) -> None: ...
    def run(self, operation: Operation[_T]) -> _T:
        """Run a ``Board`` operation on the node serving its slot; its result."""
    def run_many(self, operations: Iterable[Operation[Any]]) -> list[Any]:
        """Run operations at once (one pipelined batch per node, every node written before any
        reply is read); their results in order. The first error is raised once all are done."""
    def run_pipelined(
        self,
        operations: Iterable[Operation[Any]],
        on_result: Callable[[Any], object],
        window: int = 4,
    ) -> None:
        """As ``Client.run_pipelined``, each operation on the node serving its slot (one
        connection per node, ``window`` requests ahead of their replies on each)."""
    def execute_command(self, *args: str | bytes | int | float) -> Any:
        """One command, routed by its key (a keyless one to any primary)."""
    def ping(self) -> bool:
        """PING one primary; True when answered."""
    def refresh(self) -> None:
        """Read the slot map again now."""
    def shards(self) -> list[dict[str, Any]]:
        """``[{"primary": (host, port), "replicas": [...], "slots": [(first, last)...]}...]``."""
    def node_for_key(self, key: str) -> tuple[str, int]:
        """The primary serving ``key``'s slot now."""
    def stats(self) -> dict[str, int]:
        """``round_trips``, ``commands``, ``reconnects``, ``connections``, ``redirects``,
        ``retries``, ``calls``."""
    def dedicated(self) -> ClusterClient:
        """A new client with this one's options (its own connections)."""
    def close(self) -> None:
        """Close every connection of the pool (idle or not); the client is not used after."""
    def __enter__(self) -> ClusterClient: ...
    def __exit__(self, *exc: object) -> None: ...

class AsyncClusterCore:
    """The asyncio cluster client's core; use ``redis_leaderboard.asyncio.ClusterClient``."""

    def __init__(
        self, startup_nodes: Iterable[tuple[str, int]], **options: Unpack[_ClusterOptions]
    ) -> None: ...
    def run(self, operation: Operation[_T]) -> asyncio.Future[_T]:
        """Runs ``operation`` on the running event loop; the future gets its result."""
    def submit(
        self, operation: Operation[_T], loop: asyncio.AbstractEventLoop
    ) -> asyncio.Future[_T]: ...
    def run_pipelined(
        self,
        operations: Iterable[Operation[Any]],
        on_result: Callable[[Any], object],
        window: int,
        loop: asyncio.AbstractEventLoop,
    ) -> asyncio.Future[None]: ...
    def bind(self, loop: asyncio.AbstractEventLoop) -> None: ...
    def close(self) -> None: ...
    @property
    def pending(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def refresh(self) -> None: ...
    def shards(self) -> list[dict[str, Any]]: ...
    def stats(self) -> dict[str, int]: ...
    def dedicated(self) -> AsyncClusterCore:
        """A new core with this one's options (its own connections)."""
    def address(self) -> str: ...

# --- calls built by name (board types written in Python alone: leagues, tournaments, teams) ---

class Scripts:
    """One board's calls of its scripts, built by name: what they share (how a refusal names
    the board; its tie-break columns and order, for a declared ``tiebreak``; whether a reply
    may be a league's 'UNSETTLED' status or nil)."""

    def __init__(
        self,
        noun: str,
        board: str,
        config: str,
        *,
        tiebreak: Optional[Sequence[tuple[str, str]]] = None,
        order: str = "desc",
        unsettled: bool = False,
    ) -> None: ...
    def call(
        self, name: str, what: str, values: Mapping[str, Any], *, resends: int = 0
    ) -> Operation[Any]:
        """The declared call ``name`` ("team.submit": a script's call whose ``--: REPLY`` its
        script declares) with the keys and arguments ``values`` names (each declared one, an
        optional one may be left out: TypeError otherwise); a str is sent as it is, a number
        as a score, a list or mapping as a declared list. The result is the reply read as
        declared (a dict for an array of fields). ``what`` names it in errors."""

    def prepare(
        self, name: str, what: str, fixed: Mapping[str, Any], *, resends: int = 0
    ) -> ScriptCall:
        """The declared call ``name``, the values ``fixed`` for the board (its keys, its
        options) made text once: calling it with the others gives the operation."""

class ScriptCall:
    """A board's declared call, prepared (``Scripts.prepare``)."""

    def __call__(self, values: Mapping[str, Any], resends: int = -1) -> Operation[Any]:
        """The operation with the values not fixed (each exactly once; TypeError otherwise);
        ``resends``: how often it may be resent after a lost reply (-1: as prepared)."""

class Guards:
    """The guards of a board's writes (as a plain board's), validated."""

    def __init__(
        self,
        *,
        submission_ttl: float = 86400,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        events_maxlen: int = 10000,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
    ) -> None: ...
    @property
    def submission_ttl(self) -> float: ...
    @property
    def rate_limit(self) -> Optional[tuple[int, float]]: ...
    @property
    def events(self) -> bool: ...
    @property
    def events_maxlen(self) -> int: ...
    @property
    def score_range(self) -> Optional[tuple[Optional[float], Optional[float]]]: ...
    @property
    def max_increment(self) -> Optional[float]: ...
    def status_text(self) -> str:
        """The guards as an 'OPTIONS ...' refusal names them."""
    def write_words(
        self, scope: str, events_stream: str, user_id: str, submission_id: Optional[str] = None
    ) -> tuple[str, list[str]]:
        """A score write's guard words (lib/guards.lua) and the keys they name, in order: a
        submission id's record (with this call's token), a rate window, the events stream."""
    def limit_words(self) -> str:
        """The score limits' words, keyless ('range:<min>:<max> maxinc:<n>', or '')."""
    def rule_words(self) -> str:
        """The score limits', rate limit's and events' words without their keys (' range:...',
        ...; '' for none): a league's or a tournament's write rule, after its mode."""
    def event_words(self) -> str:
        """'' or 'events:<maxlen>': the words of a change that is not a score write."""

def call_token() -> str:
    """A new call token: one per call, the same in each of its sendings, so that a script tells
    the call's own resend from another call (a league's settlement)."""

def read_events(
    stream: str, last_id: str = "$", count: int = 100, block: Optional[float] = None
) -> Operation[EventBatch]:
    """XREAD of the change events of ``stream`` after ``last_id`` (as Board.read_events)."""

def observed() -> dict[str, int]:
    """The process's totals: every client's counters (round_trips, commands, connections,
    reconnects; live clients and closed ones), each observed event's count (connection_lost,
    reconnected, failover, ...) and open_connections (now)."""

def records_fd() -> int:
    """The pipe a byte arrives on when observed events wait in take_records() (the first call
    starts keeping them)."""

def take_records() -> tuple[list[tuple[str, str]], int]:
    """([(event, detail), ...], dropped): the events observed since the last call, oldest first,
    and how many were dropped (more than 1,024 waiting)."""
