"""The synchronous ``RedisLeaderboard``: the guide's class, one round trip per call."""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Optional, Sequence, Union

from . import _core
from .client import Client
from .options import make_client

Entry = dict[str, Any]
# (user_id, score) or (user_id, score, metadata)
BulkEntry = Union[tuple[str, float], tuple[str, float, Mapping[str, Any]], Sequence[Any]]
ImportSummary = dict[str, Any]
SubmitResult = dict[str, Any]
# get_page: {"page", "page_size", "total_pages", "size", "entries"}
Page = dict[str, Any]
# get_histogram: {"min": float, "max": float, "count": int}
HistogramBin = dict[str, Any]
Order = Literal["desc", "asc"]
Ties = Literal["lexicographic", "first", "competition", "dense"]
WriteMode = Literal["set", "best", "incr"]

DEFAULT_CHUNK_SIZE = 1000
# upsert_many: chunks written ahead of the replies (both classes).
CHUNKS_IN_FLIGHT = 4
# upsert_many reports at most this many trimmed ids (the lowest); "trimmed" counts them all.
MAX_REPORTED_TRIMMED = 1000


def check_bulk_arguments(chunk_size: int, progress: Optional[Callable[[int], None]]) -> None:
    """upsert_many's arguments, checked before anything is read or written."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise TypeError(f"chunk_size must be an int, not {type(chunk_size).__name__}")
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, not {type(progress).__name__}")


def chunked(entries: Iterable[BulkEntry], chunk_size: int) -> Iterator[list[BulkEntry]]:
    """Lists of at most ``chunk_size`` entries, read lazily so memory stays bounded."""
    check_bulk_arguments(chunk_size, None)
    iterator = iter(entries)
    while chunk := list(itertools.islice(iterator, chunk_size)):
        yield chunk


class ChunkOperations:
    """upsert_many's requests, one per chunk, each built (converted and validated) only when
    asked for; a bad entry's error names its position in ``entries``. ``started`` tells whether
    any was handed out (and so may have been written)."""

    def __init__(self, board: _core.Board, entries: Iterable[BulkEntry], chunk_size: int) -> None:
        self._board = board
        self._chunks = chunked(entries, chunk_size)
        self._submitted = 0
        self.started = False

    def __iter__(self) -> Iterator[_core.Operation]:
        return self

    def __next__(self) -> _core.Operation:
        chunk = next(self._chunks)
        operation = self._board.upsert_chunk(chunk, self._submitted)
        self._submitted += len(chunk)
        self.started = True
        return operation


def note_failed_trim(error: BaseException, trim_error: BaseException) -> None:
    """Record on ``error`` (Python 3.11+) that upsert_many's trim after it failed too."""
    if hasattr(error, "add_note"):
        error.add_note(
            "upsert_many could not trim the board to max_entries after this error: "
            f"{type(trim_error).__name__}: {trim_error}"
        )


def import_summary(written: int, trim: dict[str, Any]) -> ImportSummary:
    return {"written": written, **trim}


class BoardBase:
    """What the sync and asyncio leaderboards share: the constructor, ``key``,
    ``max_entries``, ``order``, ``ties``; their methods run the same :class:`_core.Board`
    operations."""

    client_class: Any = Client
    display_name = "RedisLeaderboard"

    def __init__(
        self,
        redis_client: Any = None,
        key: str = "leaderboard:demo",
        max_entries: int = 100,
        *,
        url: Optional[str] = None,
        order: Order = "desc",
        ties: Ties = "lexicographic",
    ) -> None:
        board = _core.Board(key, max_entries, order=order, ties=ties)  # validates first
        self.redis = make_client(redis_client, url, self.client_class)
        self._board = board
        self._run = self.redis.run

    @property
    def key(self) -> str:
        """The sorted set holding the scores."""
        return self._board.key

    @property
    def max_entries(self) -> int:
        """How many entries the board keeps; writes trim the lowest beyond it."""
        return self._board.max_entries

    @property
    def order(self) -> str:
        """``"desc"`` (higher scores are better: the guide) or ``"asc"`` (lower are better)."""
        return self._board.order

    @property
    def ties(self) -> str:
        """How equal scores rank: ``"lexicographic"``, ``"first"``, ``"competition"`` or
        ``"dense"``."""
        return self._board.ties

    def __repr__(self) -> str:
        options = ""
        if self.order != "desc":
            options += f", order={self.order!r}"
        if self.ties != "lexicographic":
            options += f", ties={self.ties!r}"
        return f"{self.display_name}(key={self.key!r}, max_entries={self.max_entries}{options})"


class RedisLeaderboard(BoardBase):
    """A leaderboard in a Redis sorted set, with per-user metadata hashes.

    The guide's class, method for method: scores live in the sorted set ``key``, metadata in the
    hash ``f"{key}:user:{user_id}"``. Every method is one round trip; writes, their trimming and
    the read-back of the entry run atomically in one server-side script.

    ``redis_client`` may be a :class:`Client`, a redis-py ``redis.Redis`` (its host, port, db,
    credentials and timeouts are reused) or None: then ``url``, else ``$REDIS_URL``, else
    ``redis://localhost:6379/0``.

    Ranking rules (keyword-only): ``order="desc"`` (higher is better, the guide) or ``"asc"``
    (lower is better); ``ties`` decides how equal scores rank: ``"lexicographic"`` (Redis's
    member order, the guide), ``"first"`` (whoever reached the score first), ``"competition"``
    (shared rank, then a gap: 1, 1, 3) or ``"dense"`` (shared rank, no gap: 1, 1, 2). A board
    with other options records them in Redis (``f"{key}:options"``), and a client opening it
    with different ones gets ``ValueError`` naming both.
    """

    redis: Client

    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        """Set ``user_id``'s score (ZADD), merge ``metadata`` into its hash (HSET), trim the board
        and return the entry with ``"trimmed_user_ids"``, atomically and in one round trip.

        If the write itself was trimmed away, the result has no ``"rank"`` and its
        ``"metadata"`` is the payload sent.
        """
        return self._run(self._board.upsert_user(user_id, score, metadata))

    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        """Add ``amount`` to ``user_id``'s score (ZINCRBY); otherwise as :meth:`upsert_user`."""
        return self._run(self._board.increment_score(user_id, amount, metadata))

    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
    ) -> SubmitResult:
        """Write ``user_id``'s score and merge ``metadata``, atomically in one round trip, and
        report what changed.

        ``mode="set"`` stores ``score``; ``"best"`` stores it only if it is strictly better
        than the current score in the board's order (a new user is always stored); ``"incr"``
        adds it. Returns ``{"user_id", "score" (stored now), "rank" (None if not on the board),
        "previous_score", "previous_rank" (None if new), "changed" (the stored score changed),
        "metadata" (the whole hash now), "trimmed_user_ids"}``. If the write itself was trimmed
        away: ``"rank"`` is None, ``"metadata"`` ``{}`` and the user's id is in
        ``"trimmed_user_ids"``.
        """
        return self._run(self._board.submit(user_id, score, metadata, mode=mode))

    def set_max_entries(self, max_entries: int) -> list[str]:
        """Change the board's size limit and trim to it; returns the trimmed ids, worst first.
        The new limit applies to this object once the trim has finished (if it raises, the old
        limit stays)."""
        return self._run(self._board.set_max_entries(max_entries))

    def get_top(self, count: int = 10) -> list[Entry]:
        """The ``count`` highest entries, best first (ZRANGE REV WITHSCORES + HGETALL each)."""
        return self._run(self._board.get_top(count))

    def get_around_rank(self, rank: int, count: int = 5) -> list[Entry]:
        """``count`` entries centred on the 1-based ``rank``, the window clamped to the board."""
        return self._run(self._board.get_around_rank(rank, count))

    def get_rank(self, user_id: str) -> Optional[int]:
        """``user_id``'s 1-based rank from the top (ZREVRANK), or None if absent."""
        return self._run(self._board.get_rank(user_id))

    def get_user_metadata(self, user_id: str) -> dict[str, str]:
        """``user_id``'s metadata hash (HGETALL); ``{}`` if it has none."""
        return self._run(self._board.get_user_metadata(user_id))

    def get_user_entry(self, user_id: str) -> Optional[Entry]:
        """``user_id``'s entry (rank, score, metadata), or None if it is not on the board."""
        return self._run(self._board.get_user_entry(user_id))

    def list_all(self) -> list[Entry]:
        """Every entry, best first. Large boards are read in pages (not one snapshot)."""
        return self._run(self._board.list_all())

    def get_size(self) -> int:
        """How many entries the board holds (ZCARD)."""
        return self._run(self._board.get_size())

    def delete_user(self, user_id: str) -> bool:
        """Remove ``user_id`` and its metadata; True if it was on the board."""
        return self._run(self._board.delete_user(user_id))

    def clear(self) -> None:
        """Delete the board and every member's metadata hash (in pages on large boards)."""
        return self._run(self._board.clear())

    # -- queries: one round trip each, atomic; every "rank" follows the board's tie rule ----

    def get_around_user(self, user_id: str, count: int = 5) -> list[Entry]:
        """``count`` entries centred on ``user_id``'s position, the window clamped to the board
        as :meth:`get_around_rank`'s (a full window at both ends); ``[]`` if the user is not on
        the board. O(log N + count)."""
        return self._run(self._board.get_around_user(user_id, count))

    def get_entries(self, user_ids: Iterable[str]) -> list[Optional[Entry]]:
        """One item per id, in the order given: its entry, or None if it is not on the board
        (a friends list). At most 1,000 ids (more raise ``ValueError``). O(k log N)."""
        return self._run(self._board.get_entries(user_ids))

    def get_page(self, page: int, page_size: int = 10) -> Page:
        """The 1-based ``page`` of ``page_size`` entries (1 to 1,000), best first:
        ``{"page", "page_size", "total_pages", "size", "entries"}``, ``total_pages`` being
        ``ceil(size / page_size)`` (0 on an empty board); a page past the end has no entries.
        O(log N + page_size)."""
        return self._run(self._board.get_page(page, page_size))

    def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> list[Entry]:
        """The entries with ``min_score <= score <= max_score``, best first in the board's
        order, skipping ``offset`` and returning at most ``limit``. ``float("-inf")`` and
        ``float("inf")`` are allowed; ``min_score > max_score`` gives ``[]``.
        O(log N + limit), whatever the offset."""
        return self._run(self._board.get_by_score(min_score, max_score, offset=offset, limit=limit))

    def count_by_score(self, min_score: float, max_score: float) -> int:
        """How many entries have ``min_score <= score <= max_score`` (ZCOUNT, O(log N))."""
        return self._run(self._board.count_by_score(min_score, max_score))

    def rank_for_score(self, score: float) -> int:
        """The rank an entry with ``score`` would have now: 1 + the entries strictly better
        (what ``ties="competition"`` reports). One ZCOUNT, O(log N)."""
        return self._run(self._board.rank_for_score(score))

    def get_percentile(self, user_id: str) -> Optional[float]:
        """The share of the other entries whose score is strictly worse than ``user_id``'s,
        0.0 to 100.0 (tied users share it; a board of one gives 100.0); None if absent.
        O(log N)."""
        return self._run(self._board.get_percentile(user_id))

    def score_at_percentile(self, p: float) -> Optional[float]:
        """The nearest-rank score at percentile ``p`` (0 to 100): of the scores sorted worst
        to best, the one at 1-based position ``max(1, ceil(p / 100 * size))``; None on an
        empty board. O(log N)."""
        return self._run(self._board.score_at_percentile(p))

    def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> list[HistogramBin]:
        """The score distribution: ``bins`` (1 to 1,000) equal-width bins
        ``{"min", "max", "count"}`` in ascending score order over ``[min_score, max_score]``
        (by default the board's lowest and highest score), each ``[min, max)`` but the last,
        which is closed; ``[]`` on an empty board. One ZCOUNT per bin: O(bins log N), the
        board is never scanned."""
        return self._run(self._board.get_histogram(bins, min_score=min_score, max_score=max_score))

    def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Optional[Callable[[int], None]] = None,
    ) -> ImportSummary:
        """Bulk-load ``(user_id, score)`` or ``(user_id, score, metadata)`` entries.

        Streams ``entries`` (any iterable, read lazily: memory stays bounded) in chunks of
        ``chunk_size``: one variadic ZADD and one HSET per entry with metadata per chunk, in a
        MULTI/EXEC, up to 4 chunks in flight on one connection, so the next chunk is converted
        while the server applies the previous ones and the server never waits for the client.
        The board is trimmed once, at the end. ``progress(written_so_far)`` is called after
        each chunk. Not atomic as a whole: other clients may see the board grow while it loads.

        ``chunk_size`` and ``progress`` are checked before anything is read or written; each
        entry is validated as :meth:`upsert_user` validates its arguments, a bad one raising
        ``ValueError``/``TypeError`` naming its position (``"entry 41: ..."``).

        If it raises once chunks were sent (a bad entry in a later chunk, ``progress``
        raising, a Redis error), the chunks the server applied stay written: every chunk
        before the failing one, and with several in flight possibly some after it; nothing of
        the chunk holding a bad entry; of a chunk Redis failed, nothing if it refused the chunk
        (out of memory, OOM), else every command but the failing one (a WRONGTYPE or NOPERM
        HSET leaves that entry's score written without its metadata). The board is then
        trimmed to ``max_entries`` before the error propagates; if that trim fails too (the
        connection is gone), the board may hold more than ``max_entries`` entries until the
        next write or :meth:`set_max_entries` trims it (on Python 3.11+ the error carries a
        note saying so). A ``KeyboardInterrupt`` (or, in asyncio, cancellation) stops at once,
        without the trim.

        Returns ``{"written": n, "trimmed": count, "trimmed_user_ids": [...]}``, listing at
        most the 1,000 lowest trimmed ids.
        """
        check_bulk_arguments(chunk_size, progress)
        operations = ChunkOperations(self._board, entries, chunk_size)
        written = 0
        if not self._board.options_checked:  # a default board's chunks cannot check them
            self._run(self._board.check_options())

        def on_chunk(count: int) -> None:
            nonlocal written
            written += count
            if progress is not None:
                progress(written)

        try:
            default = self.order == "desc" and self.ties == "lexicographic"
            if default and self._board.expire_at is None:  # MULTI/EXEC chunks
                self.redis.run_pipelined(operations, on_chunk, CHUNKS_IN_FLIGHT)
            else:  # script chunks (bulk.lua): one at a time, each may need its NOSCRIPT retry
                for operation in operations:
                    on_chunk(self._run(operation))
        except Exception as error:
            if operations.started:
                try:
                    self._run(self._board.trim_to_max_entries(0))
                except Exception as trim_error:
                    note_failed_trim(error, trim_error)
            raise
        trim = self._run(self._board.trim_to_max_entries(MAX_REPORTED_TRIMMED))
        return import_summary(written, trim)
