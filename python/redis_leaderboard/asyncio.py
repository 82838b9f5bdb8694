"""The asyncio twin of :class:`redis_leaderboard.RedisLeaderboard`.

Same constructor, methods, results and errors; each method is a coroutine. Many coroutines share
one connection: requests made while a write is in flight go out together in the next write
(automatic pipelining). The event loop drives the connection itself: it watches the socket,
and C++ code reads, writes, encodes and decodes on the loop's thread, with no thread hand-off.
"""

from __future__ import annotations

import asyncio
import atexit
import weakref
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional, TypeVar, Union

from . import _core
from ._types import (
    AsyncRun,
    BulkEntry,
    Entry,
    Event,
    HistogramBin,
    ImportSummary,
    Page,
    SubmitResult,
    WriteMode,
    WriteResult,
)
from .cluster import AsyncClusterClient as ClusterClient
from .leaderboard import (
    CHUNKS_IN_FLIGHT,
    DEFAULT_CHUNK_SIZE,
    EVENTS_BATCH,
    MAX_REPORTED_TRIMMED,
    BoardBase,
    ChunkOperations,
    check_bulk_arguments,
    check_events_arguments,
    events_slices,
    import_summary,
    note_failed_trim,
    read_events_operation,
)
from .options import sentinel_options, url_options
from .sharded import AsyncShardedLeaderboard as ShardedLeaderboard

__all__ = [
    "Client",
    "ClusterClient",
    "LeaderboardGroup",
    "PeriodicLeaderboard",
    "RedisLeaderboard",
    "RollingLeaderboard",
    "ShardedLeaderboard",
]

_open_clients: weakref.WeakSet[Client] = weakref.WeakSet()
# How long a cached read waits for its barrier's PONG (normally there before the query's reply)
# before it doubts the invalidation connection.
BARRIER_TIMEOUT = 1.0
T = TypeVar("T")


class Client:
    """A multiplexed asyncio Redis client: one socket driven by the event loop, any number of
    tasks.

    Options as :class:`redis_leaderboard.Client`. ``max_in_flight`` caps the requests written
    and unanswered at once; ``max_pending`` caps those handed to the transport, beyond which
    calls wait in the client (back-pressure). A client is bound to the event loop it is first
    used on.

    When the connection drops: a write already written fails with ``ConnectionError`` and is
    never resent, unless it carries an idempotency key (``submit(..., submission_id=...)``, a
    group write with a ``submission_id``, an ``upsert_many`` chunk whose entries all carry
    ids), which cannot apply twice: it is resent first on the next connection, with a new
    ``socket_timeout``, at most ``retries`` times (default 2: three attempts), then fails with
    ``ConnectionError`` ("no reply after 3 attempts"). A read may be retried once on a fresh
    connection within its timeout. A call unanswered ``socket_timeout`` seconds after it was
    made (waiting its turn included), or after its latest resend, fails with
    ``TimeoutError``.
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
        max_in_flight: int = 1024,
        max_pending: int = 10000,
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
        sentinels: Optional[Iterable[tuple[str, int]]] = None,
        service_name: Optional[str] = None,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        sentinel_ssl: bool = False,
        client_cache: bool = False,
        client_cache_size: int = 10000,
        client_cache_max_bytes: int = 64 << 20,
        _core_client: Optional[_core.AsyncCore] = None,
    ) -> None:
        self._core = _core_client or _core.AsyncCore(
            host=host,
            port=port,
            db=db,
            username=username,
            password=password,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_connect_timeout,
            client_name=client_name,
            unix_socket_path=unix_socket_path,
            max_in_flight=max_in_flight,
            max_pending=max_pending,
            max_reply_bytes=max_reply_bytes,
            ssl=ssl,
            ssl_ca_certs=ssl_ca_certs,
            ssl_ca_path=ssl_ca_path,
            ssl_ca_data=ssl_ca_data,
            ssl_certfile=ssl_certfile,
            ssl_keyfile=ssl_keyfile,
            ssl_password=ssl_password,
            ssl_cert_reqs=ssl_cert_reqs,
            ssl_check_hostname=ssl_check_hostname,
            ssl_min_version=ssl_min_version,
            ssl_ciphers=ssl_ciphers,
            sentinels=None if sentinels is None else [(h, p) for h, p in sentinels],
            service_name=service_name,
            sentinel_username=sentinel_username,
            sentinel_password=sentinel_password,
            sentinel_ssl=sentinel_ssl,
        )
        # The client-side cache (see redis_leaderboard.Client): built by the core, from its
        # own options object, so its connection has every one of the client's options.
        self._cache: Optional[_core.ClientCache] = None
        if not isinstance(client_cache, bool):
            raise TypeError(f"client_cache must be a bool, not {type(client_cache).__name__}")
        if client_cache:
            self._cache = self._core.client_cache(client_cache_size, client_cache_max_bytes)
        self._cache_setup: Optional[asyncio.Future[None]] = None
        _open_clients.add(self)

    @classmethod
    def from_url(cls, url: str, **overrides: Any) -> Client:
        """As :meth:`redis_leaderboard.Client.from_url` (``max_in_flight`` and
        ``max_pending`` too)."""
        return cls(**url_options(url, **overrides))

    @classmethod
    def from_sentinel(
        cls,
        sentinels: Iterable[tuple[str, int]],
        service_name: str = "mymaster",
        *,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        sentinel_ssl: bool = False,
        **client_options: Any,
    ) -> Client:
        """As :meth:`redis_leaderboard.Client.from_sentinel`. After a failover the client
        reconnects at once on Sentinel's ``+switch-master``; requests in flight on the old
        primary get their replies or fail, those not yet sent go to the new one."""
        return cls(
            **sentinel_options(
                sentinels,
                service_name,
                sentinel_username,
                sentinel_password,
                sentinel_ssl,
                client_options,
            )
        )

    @property
    def run(self) -> AsyncRun:
        """``run(operation)``: submit a :class:`redis_leaderboard._core.Board` operation; await
        the result. The C++ core's own method (a call costs no Python frame of ours), unless
        the client-side cache is on: then reads of entries go through it."""
        if self._cache is None:
            return self._core.run
        return self._run_maybe_cached

    def _run_maybe_cached(self, operation: _core.Operation[T]) -> Awaitable[T]:
        prefix = operation.cached_metadata_prefix
        if prefix is not None:
            return self._run_cached(operation, prefix, asyncio.get_running_loop())
        return self._core.run(operation)

    async def _run_cached(
        self, operation: _core.Operation[T], prefix: str, loop: asyncio.AbstractEventLoop
    ) -> T:
        """A read through the client-side cache (connection/cache.hpp): a barrier on the
        invalidation connection, the query without metadata, then the cached metadata (once
        the barrier passed) and the HGETALLs of the rest."""
        cache = self._cache
        assert cache is not None
        barrier = cache.begin(prefix)
        if barrier is None:  # no invalidation connection (yet): uncached, set one up aside
            if self._cache_setup is None and cache.needs_setup(prefix):
                self._cache_setup = loop.run_in_executor(None, cache.setup, prefix)
                self._cache_setup.add_done_callback(self._cache_setup_done)
            return await self._core.run(operation)
        read = _core.CachedRead(cache, operation)
        await self._core.run(read.query())
        passed = cache.poll(barrier) or await self._await_barrier(cache, barrier, loop)
        fetch = read.fetch(barrier if passed else None)
        if fetch is not None:
            await self._core.run(fetch)
        return read.result()

    def _cache_setup_done(self, future: asyncio.Future[None]) -> None:
        self._cache_setup = None
        if not future.cancelled():
            future.exception()  # retrieved: a failed set-up only means reads stay uncached

    async def _await_barrier(
        self, cache: _core.ClientCache, barrier: tuple[int, int], loop: asyncio.AbstractEventLoop
    ) -> bool:
        """Reads the invalidation connection (when the loop sees it readable) until the
        barrier's PONG; a connection that is gone or late (BARRIER_TIMEOUT) is doubt: False."""
        deadline = loop.time() + BARRIER_TIMEOUT
        while not cache.poll(barrier):
            fd, remaining = cache.fileno(), deadline - loop.time()
            if fd < 0:
                return False
            if remaining <= 0:
                cache.close()  # late: the cache is flushed, the connection set up again later
                return False
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, _wake, readable)
            try:
                await asyncio.wait_for(readable, remaining)
            except asyncio.TimeoutError:
                pass
            finally:
                loop.remove_reader(fd)
        return True

    def cache_info(self) -> Optional[dict[str, Any]]:
        """The client-side cache's counters and size (as
        :meth:`redis_leaderboard.Client.cache_info`), or None if the cache is off."""
        return None if self._cache is None else self._cache.info()

    def run_pipelined(
        self,
        operations: Iterable[_core.Operation[Any]],
        on_result: Callable[[Any], object],
        window: int = CHUNKS_IN_FLIGHT,
    ) -> asyncio.Future[None]:
        """Run one-round-trip operations in order, up to ``window`` in flight, as the sync
        client's ``run_pipelined``; ``on_result`` gets each result in order. The future fails
        with the first error once the operations in flight are done."""
        return self._core.run_pipelined(operations, on_result, window, asyncio.get_running_loop())

    def dedicated(self) -> Client:
        """A new client with this one's options (its own connection), for
        calls that hold a connection, as reading events does (issue 17)."""
        return Client(_core_client=self._core.dedicated())

    async def ping(self) -> bool:
        """PING the server."""
        return await self.run(_core.ping())

    def stats(self) -> dict[str, int]:
        """``round_trips`` (socket writes), ``commands``, ``calls``, ``reconnects``,
        ``connections``: ``round_trips / calls`` is the round trips per call under load."""
        return self._core.stats()

    async def aclose(self) -> None:
        """Close the connection; unfinished calls fail with ``ConnectionError``."""
        self.close()

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
        self._core.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"redis_leaderboard.asyncio.Client({self._core.address()})"


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@atexit.register
def _close_open_clients() -> None:
    # A client left open must not keep a helper thread (host lookup, Sentinel) alive past the
    # interpreter.
    for client in list(_open_clients):
        try:
            client._core.close()
        except Exception:
            pass  # best effort at exit


class AsyncEventStream:
    """A board's change events (:meth:`RedisLeaderboard.events`): ``async for``, or
    ``await read()``."""

    _reader: Optional[Client] = None  # what close() sees if __init__ raised

    def __init__(
        self, leaderboard: RedisLeaderboard, last_id: str, block: Optional[float], count: int
    ) -> None:
        check_events_arguments(leaderboard._board, last_id, block, count)  # before any state
        self._slices = events_slices(block)
        self._leaderboard = leaderboard
        self._count = count
        self._buffer: list[Event] = []
        self._reader = None
        self.last_id = last_id

    async def read(self, block: Optional[float] = None) -> list[Event]:
        """As :meth:`redis_leaderboard.leaderboard.EventStream.read`."""
        operation = read_events_operation(
            self._leaderboard._board, self.last_id, self._count, block
        )
        if self._reader is None:
            self._reader = self._leaderboard.redis.dedicated()
        batch = await self._reader.run(operation)
        self.last_id = batch["last_id"]
        events: list[Event] = batch["events"]
        return events

    def __aiter__(self) -> AsyncEventStream:
        return self

    async def __anext__(self) -> Event:
        try:
            while not self._buffer:
                try:
                    wait = next(self._slices)
                except StopIteration:
                    raise StopAsyncIteration from None
                self._buffer = await self.read(wait)
                if self._buffer:
                    self._slices.send(True)
        except BaseException:
            if not self._buffer:
                self.close()  # the end, an error or cancellation: the connection goes
            raise
        return self._buffer.pop(0)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class RedisLeaderboard(BoardBase):
    """The asyncio twin of :class:`redis_leaderboard.RedisLeaderboard`: same constructor,
    methods, results and errors, each method a coroutine.

    ``redis_client`` may be a :class:`Client`, a ``redis.asyncio.Redis`` or ``redis.Redis``
    (its options are reused) or None: then ``url``, else ``$REDIS_URL``, else
    ``redis://localhost:6379/0``.
    """

    client_class = Client
    cluster_client_class = ClusterClient
    display_name = "redis_leaderboard.asyncio.RedisLeaderboard"
    redis: Client
    _run: AsyncRun

    async def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> WriteResult:
        return await self._run(self._board.upsert_user(user_id, score, metadata))

    async def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> WriteResult:
        return await self._run(self._board.increment_score(user_id, amount, metadata))

    async def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> SubmitResult:
        return await self._run(
            self._board.submit(
                user_id, score, metadata, mode=mode, submission_id=submission_id, retries=retries
            )
        )

    def events(
        self,
        last_id: str = "$",
        *,
        block: Optional[float] = None,
        count: int = EVENTS_BATCH,
    ) -> AsyncEventStream:
        """As :meth:`redis_leaderboard.RedisLeaderboard.events`: ``async for event in
        board.events(...)``, or ``await stream.read(block)``, on a connection (and I/O
        thread) of its own; ``await stream.aclose()`` (or ``async with``) closes it."""
        return AsyncEventStream(self, last_id, block, count)

    async def set_max_entries(self, max_entries: Optional[int]) -> list[str]:
        return await self._run(self._board.set_max_entries(max_entries))

    async def get_top(self, count: int = 10) -> list[Entry]:
        return await self._run(self._board.get_top(count))

    async def get_around_rank(self, rank: int, count: int = 5) -> list[Entry]:
        return await self._run(self._board.get_around_rank(rank, count))

    async def get_rank(self, user_id: str) -> Optional[int]:
        return await self._run(self._board.get_rank(user_id))

    async def get_user_metadata(self, user_id: str) -> dict[str, str]:
        return await self._run(self._board.get_user_metadata(user_id))

    async def get_user_entry(self, user_id: str) -> Optional[Entry]:
        return await self._run(self._board.get_user_entry(user_id))

    async def list_all(self) -> list[Entry]:
        return await self._run(self._board.list_all())

    async def get_size(self) -> int:
        return await self._run(self._board.get_size())

    async def delete_user(self, user_id: str) -> bool:
        return await self._run(self._board.delete_user(user_id))

    async def clear(self) -> None:
        return await self._run(self._board.clear())

    async def get_around_user(self, user_id: str, count: int = 5) -> list[Entry]:
        return await self._run(self._board.get_around_user(user_id, count))

    async def get_entries(self, user_ids: Iterable[str]) -> list[Optional[Entry]]:
        return await self._run(self._board.get_entries(user_ids))

    async def get_page(self, page: int, page_size: int = 10) -> Page:
        return await self._run(self._board.get_page(page, page_size))

    async def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> list[Entry]:
        return await self._run(
            self._board.get_by_score(min_score, max_score, offset=offset, limit=limit)
        )

    async def count_by_score(self, min_score: float, max_score: float) -> int:
        return await self._run(self._board.count_by_score(min_score, max_score))

    async def rank_for_score(self, score: float) -> int:
        return await self._run(self._board.rank_for_score(score))

    async def get_percentile(self, user_id: str) -> Optional[float]:
        return await self._run(self._board.get_percentile(user_id))

    async def score_at_percentile(self, p: float) -> Optional[float]:
        return await self._run(self._board.score_at_percentile(p))

    async def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> list[HistogramBin]:
        return await self._run(
            self._board.get_histogram(bins, min_score=min_score, max_score=max_score)
        )

    async def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> ImportSummary:
        check_bulk_arguments(chunk_size, progress)
        operations = ChunkOperations(self._board, entries, chunk_size, retries)
        guarded = self._board.events or self._board.rate_limit is not None
        if not self._board.options_checked and not guarded:  # MULTI/EXEC chunks cannot check
            await self._run(self._board.check_options())
        written = 0

        def on_chunk(count: int) -> None:
            nonlocal written
            written += count
            if progress is not None:
                progress(written)

        try:
            # The window lives in the C++ core, as for the sync class.
            await self.redis.run_pipelined(operations, on_chunk, CHUNKS_IN_FLIGHT)
        except BaseException as error:
            if operations.started and isinstance(error, Exception):
                # Queued after every chunk sent on this connection: it sees them all.
                try:
                    await self._run(self._board.trim_to_max_entries(0))
                except Exception as trim_error:
                    note_failed_trim(error, trim_error)
            raise
        trim = await self._run(self._board.trim_to_max_entries(MAX_REPORTED_TRIMMED))
        return import_summary(written, trim, operations.submitted - written)


def _copy_docs() -> None:
    # One docstring per method, written on the sync class.
    from .leaderboard import RedisLeaderboard as SyncLeaderboard

    for name, method in vars(RedisLeaderboard).items():
        sync = getattr(SyncLeaderboard, name, None)
        if callable(method) and sync is not None and method.__doc__ is None:
            method.__doc__ = sync.__doc__


_copy_docs()


# The time-based boards (issue 16), defined beside their sync twins (their module imports this
# one: it must come last).
from ._seasons_asyncio import (  # noqa: E402
    LeaderboardGroup,
    PeriodicLeaderboard,
    RollingLeaderboard,
)
