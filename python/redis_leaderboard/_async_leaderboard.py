"""The asyncio twin of :class:`redis_leaderboard.RedisLeaderboard` (re-exported by
:mod:`redis_leaderboard.asyncio`): same constructor, methods, results and errors; each method
is a coroutine."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional

from ._async_client import Client
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
from .leaderboard import RedisLeaderboard as SyncLeaderboard
from .options import CHUNKS_IN_FLIGHT

__all__ = ["AsyncEventStream", "RedisLeaderboard"]


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
    for name, method in vars(RedisLeaderboard).items():
        sync = getattr(SyncLeaderboard, name, None)
        if callable(method) and sync is not None and method.__doc__ is None:
            method.__doc__ = sync.__doc__


_copy_docs()
