"""The asyncio client (``redis_leaderboard.asyncio.Client``, re-exported there): one
socket driven by the event loop, any number of tasks. A transport only: no board logic."""

from __future__ import annotations

import asyncio
import atexit
import weakref
from typing import Any, Awaitable, Callable, Iterable, Optional, TypeVar

from ._core import AsyncCore, CachedRead, ClientCache, Operation
from ._core import ping as ping_operation
from ._types import AsyncRun
from .options import (
    CHUNKS_IN_FLIGHT,
    constructor_signature,
    sentinel_options,
    takes_options_of,
    url_options,
)

__all__ = ["Client"]

_open_clients: weakref.WeakSet[Client] = weakref.WeakSet()
# How long a cached read waits for its barrier's PONG (normally there before the query's reply)
# before it doubts the invalidation connection.
BARRIER_TIMEOUT = 1.0
T = TypeVar("T")


class Client:
    """A multiplexed asyncio Redis client: one socket driven by the event loop, any number of
    tasks.

    Options as ``redis_leaderboard.Client``. ``max_in_flight`` caps the requests written
    and unanswered at once, ``max_bytes_in_flight`` (0: no limit) the bytes their replies are
    expected to take (each operation's, learnt from its last replies: big reads
    stop there, cheap ones keep the deep pipeline); ``max_pending`` caps those handed to the
    transport, beyond which calls wait in the client (back-pressure). A client is bound to the
    event loop it is first used on.

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

    __signature__ = constructor_signature("AsyncCore")

    @takes_options_of(AsyncCore, __signature__)
    def __init__(self, *args: Any, **options: Any) -> None:
        self._start(AsyncCore(*args, **options))

    def _start(self, core: AsyncCore) -> None:
        self._core = core
        # The client-side cache (see redis_leaderboard.Client): built by the core, from its
        # own options object, so its connection has every one of the client's options.
        self._cache: Optional[ClientCache] = core.client_cache()
        self._cache_setup: Optional[asyncio.Future[None]] = None
        _open_clients.add(self)

    @classmethod
    def from_url(cls, url: str, **overrides: Any) -> Client:
        """As ``redis_leaderboard.Client.from_url`` (``max_in_flight`` and
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
        """As ``redis_leaderboard.Client.from_sentinel``. After a failover the client
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
        """``run(operation)``: submit a ``redis_leaderboard._core.Board`` operation; await
        the result. The C++ core's own method (a call costs no Python frame of ours), unless
        the client-side cache is on: then reads of entries go through it."""
        if self._cache is None:
            return self._core.run
        return self._run_maybe_cached

    def _run_maybe_cached(self, operation: Operation[T]) -> Awaitable[T]:
        prefix = operation.cached_metadata_prefix
        if prefix is not None:
            return self._run_cached(operation, prefix, asyncio.get_running_loop())
        return self._core.run(operation)

    async def _run_cached(
        self, operation: Operation[T], prefix: str, loop: asyncio.AbstractEventLoop
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
        read = CachedRead(cache, operation, barrier)
        # The barrier proves something only if the read goes to the invalidation connection's
        # server: the connection in place now is where it goes, while it stays in place (a
        # failover moves each on its own).
        core = self._core
        server = core.server()
        same_server = server is not None and cache.on_server(*server[:3])

        def on_barrier_server() -> bool:
            return same_server and core.server() == server

        while True:  # the read's steps (connection/cache.hpp): here only their I/O
            step = read.next(on_barrier_server)
            if step == CachedRead.RUN:
                await core.run(read.operation())
            elif step == CachedRead.AWAIT_BARRIER:
                passed = cache.poll(barrier) or await self._await_barrier(cache, barrier, loop)
                read.barrier_passed(passed)
            else:
                return read.result()

    def _cache_setup_done(self, future: asyncio.Future[None]) -> None:
        self._cache_setup = None
        if not future.cancelled():
            future.exception()  # retrieved: a failed set-up only means reads stay uncached

    async def _await_barrier(
        self, cache: ClientCache, barrier: tuple[int, int], loop: asyncio.AbstractEventLoop
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
        ``redis_leaderboard.Client.cache_info``), or None if the cache is off."""
        return None if self._cache is None else self._cache.info()

    def run_pipelined(
        self,
        operations: Iterable[Operation[Any]],
        on_result: Callable[[Any], object],
        window: int = CHUNKS_IN_FLIGHT,
    ) -> asyncio.Future[None]:
        """Run one-round-trip operations in order, up to ``window`` in flight, as the sync
        client's ``run_pipelined``; ``on_result`` gets each result in order. The future fails
        with the first error once the operations in flight are done."""
        return self._core.run_pipelined(operations, on_result, window, asyncio.get_running_loop())

    def dedicated(self) -> Client:
        """A new client with this one's options (its own connection), for
        calls that hold a connection, as reading events does (guards)."""
        client = Client.__new__(Client)
        client._start(self._core.dedicated())
        return client

    async def ping(self) -> bool:
        """PING the server."""
        return await self.run(ping_operation())

    def stats(self) -> dict[str, int]:
        """``round_trips`` (socket writes), ``commands``, ``calls``, ``reconnects``,
        ``connections``: ``round_trips / calls`` is the round trips per call under load."""
        return self._core.stats()

    def address(self) -> str:
        """Where the client connects: host:port, a Unix socket's path, or ``'name' via
        Sentinel``."""
        return self._core.address()

    async def aclose(self) -> None:
        """Close the connection; unfinished calls fail with ``ConnectionError``."""
        self.close()

    def close(self) -> None:
        """Close the connection (and the cache's); calls in flight fail with
        ``ConnectionError``."""
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
