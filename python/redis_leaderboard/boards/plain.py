"""The guide's board, every method written once for both APIs (``redis_leaderboard._drive``): the
constructor and options (``BoardBase``) and the methods (``LeaderboardBase``). The public
``RedisLeaderboard`` classes add a driver and their client types."""

from __future__ import annotations

import itertools
from typing import (
    Any,
    Callable,
    Generic,
    Iterable,
    Iterator,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
)

from .._core import Board, Operation
from .._drive import Pipelined, Plan, Runner, Sent, one_trip, plan
from .._types import (
    BulkEntry,
    Entry,
    HistogramBin,
    ImportSummary,
    Layout,
    Order,
    Page,
    SubmitResult,
    Ties,
    TrimSummary,
    WriteMode,
    WriteResult,
)
from ..options import CHUNKS_IN_FLIGHT, board_client
from .events import EVENTS_BATCH, StreamState

DEFAULT_CHUNK_SIZE = 1000
# upsert_many reports at most this many trimmed ids (the lowest); "trimmed" counts them all.
MAX_REPORTED_TRIMMED = 1000


def guards_repr(core: Any) -> str:
    """The guards a board's ``repr`` shows, those set (", rate_limit=(5, 60.0), events=True"...),
    from its core object (``_core.Board``, ``Window``, ``Guards``: the same four attributes)."""
    options = ""
    if core.rate_limit is not None:
        options += f", rate_limit={core.rate_limit!r}"
    if core.events:
        options += ", events=True"
    if core.score_range is not None:
        options += f", score_range={core.score_range!r}"
    if core.max_increment is not None:
        options += f", max_increment={core.max_increment!r}"
    return options


def player_text(user_id: Any) -> str:
    """A player's id as ``user_id_text`` takes it, not empty: what a board type whose calls are
    built in Python (``_core.Scripts``) sends for a player."""
    text = user_id_text(user_id)
    if not text:
        raise ValueError("user_id must not be empty")
    return text


ORDERS = ("desc", "asc")
WRITE_MODES = ("set", "best", "incr")


def one_of(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """``value``, one of ``choices`` (a board's order, a write's mode...): a TypeError if it is
    not a str, a ValueError naming the choices if it is none of them (the C++ core's words:
    "order must be 'desc' or 'asc', not 'up'")."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in choices:
        quoted = [f"'{choice}'" for choice in choices]
        listed = f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        raise ValueError(f"{name} must be {listed}, not '{value}'")
    return value


def count_arg(value: Any, name: str) -> int:
    """An int argument (``retries``...): a TypeError for anything else, a bool included."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


def user_id_text(user_id: Any) -> str:
    """A user id as every board stores it: a ``str``, or an ``int`` as ``str()`` writes it
    (as the guide's f-strings would; the C++ conversions do the same). The boards that route
    by the id in Python (sharded, league, tournament) take it here first, so ``7`` and
    ``"7"`` are one player on every board type."""
    if isinstance(user_id, str):
        return user_id
    if isinstance(user_id, int) and not isinstance(user_id, bool):
        return str(user_id)
    raise TypeError(f"user_id must be str, not {type(user_id).__name__}")


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

    def __init__(
        self, board: Board, entries: Iterable[BulkEntry], chunk_size: int, retries: int = 2
    ) -> None:
        self._board = board
        self._chunks = chunked(entries, chunk_size)
        self._submitted = 0
        self._retries = retries
        # The first chunk, read and validated by prefetch, not handed out yet: built again when
        # it is, after the check that may find hidden players (whose chunks are scripts).
        self._ahead: Optional[list[BulkEntry]] = None
        self._exhausted = False
        self.started = False

    def __iter__(self) -> Iterator[Operation[int]]:
        return self

    def _build(self, chunk: list[BulkEntry]) -> Operation[int]:
        operation = self._board.upsert_chunk(chunk, self._submitted, self._retries)
        self._submitted += len(chunk)
        return operation

    def prefetch(self) -> None:
        """Read and validate (convert) the first chunk now, so that a bad entry in it raises
        before anything at all is sent; it is handed out first."""
        if self._ahead is None and not self._exhausted:
            try:
                self._ahead = next(self._chunks)
            except StopIteration:
                self._exhausted = True
                return
            self._board.upsert_chunk(self._ahead, self._submitted, self._retries)

    def __next__(self) -> Operation[int]:
        if self._ahead is not None:
            chunk, self._ahead = self._ahead, None
        elif self._exhausted:
            raise StopIteration
        else:
            chunk = next(self._chunks)
        operation = self._build(chunk)
        self.started = True
        return operation

    @property
    def submitted(self) -> int:
        """How many entries the chunks handed out hold."""
        return self._submitted


def note_failed_trim(error: BaseException, trim_error: BaseException) -> None:
    """Record on ``error`` (Python 3.11+) that upsert_many's trim after it failed too."""
    if hasattr(error, "add_note"):
        error.add_note(
            "upsert_many could not trim the board to max_entries after this error: "
            f"{type(trim_error).__name__}: {trim_error}"
        )


def import_summary(written: int, trim: TrimSummary, skipped: int = 0) -> ImportSummary:
    summary: ImportSummary = {
        "written": written,
        "trimmed": trim["trimmed"],
        "trimmed_user_ids": trim["trimmed_user_ids"],
    }
    if skipped:
        summary["duplicates"] = skipped  # guards: entries whose submission id was applied
    return summary


S = TypeVar("S", bound="StreamState[Any]")


class BoardBase:
    """What the sync and asyncio leaderboards share: the constructor, ``key``, ``max_entries``,
    ``order``, ``ties``; their methods run the same ``_core.Board`` operations."""

    # Set by the public classes: the client this class makes from a url or a redis-py client,
    # the cluster client it runs on, its name in reprs and errors, and its event stream.
    _client_class: Any
    _cluster_client_class: Any
    _display_name: str
    redis: Any
    _run: Runner

    def __init__(
        self,
        redis_client: Any = None,
        key: str = "leaderboard:demo",
        max_entries: Optional[int] = 100,
        *,
        url: Optional[str] = None,
        order: Order = "desc",
        ties: Ties = "lexicographic",
        submission_ttl: float = 86400,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        events_maxlen: int = 10000,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
        tiebreak: Optional[Sequence[tuple[str, Order]]] = None,
        layout: Layout = "guide",
        _expire_at: Optional[int] = None,
        _submission_scope: Optional[str] = None,
        _open_span: Optional[tuple[int, int]] = None,
    ) -> None:
        board = Board(  # validates first
            key,
            max_entries,
            order=order,
            ties=ties,
            submission_ttl=submission_ttl,
            rate_limit=rate_limit,
            events=events,
            events_maxlen=events_maxlen,
            expire_at=_expire_at,  # a period's board (seasons.PeriodBoard): its deadline
            submission_scope=_submission_scope,  # and where its submission ids are recorded
            open_span=_open_span,  # and when, on the server's clock, its writes belong to it
            score_range=score_range,
            max_increment=max_increment,
            tiebreak=tiebreak,
            layout=layout,
        )
        self.redis = board_client(
            self._display_name,
            redis_client,
            url,
            key,
            self._client_class,
            self._cluster_client_class,
        )
        self._board = board
        self._run = self.redis.run

    @property
    def key(self) -> str:
        """The sorted set holding the scores."""
        return self._board.key

    @property
    def max_entries(self) -> Optional[int]:
        """How many entries the board keeps; writes trim the lowest beyond it. None: an
        unlimited board (``max_entries=None``), which no write trims."""
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

    @property
    def layout(self) -> str:
        """Where the players' metadata lives: ``"guide"`` (a hash per player,
        ``f"{key}:user:{user_id}"``, the guide's layout) or ``"compact"`` (one hash for the
        board, ``f"{key}:meta"``; see the board guide's "The compact layout")."""
        return self._board.layout

    @property
    def submission_ttl(self) -> float:
        """Seconds the result of a write with a ``submission_id`` is kept (guards)."""
        return self._board.submission_ttl

    @property
    def rate_limit(self) -> Optional[tuple[int, float]]:
        """``(max_writes, per_seconds)`` per user, or None."""
        return self._board.rate_limit

    @property
    def score_range(self) -> Optional[tuple[Optional[float], Optional[float]]]:
        """``(min, max)``: the lowest and highest score a write may leave (either None: no
        bound), or None (fair play). A write outside raises ``ScoreRejected``."""
        return self._board.score_range

    @property
    def max_increment(self) -> Optional[float]:
        """The most one write may improve a user's score by (in the board's order), or None
        (fair play). A write improving it more raises ``ScoreRejected``."""
        return self._board.max_increment

    @property
    def tiebreak(self) -> Optional[tuple[tuple[str, str], ...]]:
        """The tie-break columns, ``(name, "desc" | "asc")`` each, ranking equal scores in
        order, or None: see [`submit`][redis_leaderboard.RedisLeaderboard.submit]."""
        return self._board.tiebreak

    @property
    def events_enabled(self) -> bool:
        """Whether writes append change events to ``f"{key}:events"`` (``events=True``);
        [`events`][redis_leaderboard.RedisLeaderboard.events] reads them.
        """
        return self._board.events

    def _group_member(self, mode: str) -> tuple[Any, str, int]:
        """As one of a [`LeaderboardGroup`][redis_leaderboard.LeaderboardGroup]'s boards: what the
        group's script writes (this board, the mode, no bucket)."""
        return (self._board, mode, 0)

    def __repr__(self) -> str:
        options = ""
        if self.order != "desc":
            options += f", order={self.order!r}"
        if self.ties != "lexicographic":
            options += f", ties={self.ties!r}"
        if self.layout != "guide":
            options += f", layout={self.layout!r}"
        options += guards_repr(self._board)
        return f"{self._display_name}(key={self.key!r}, max_entries={self.max_entries}{options})"


class LeaderboardBase(BoardBase, Generic[S]):
    """The guide's methods and the queries, each written once (the public classes' docstring
    tells what the board is)."""

    _event_stream_class: type[S]  # the public class's

    @one_trip
    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Sent[WriteResult]:
        """Set a user's score and merge its metadata, trim the board, and return the entry.

        The guide's method. Atomic: the score, the metadata, the trim, the metadata clean-up of the
        users trimmed and the read-back of the entry happen in one script.

        Args:
            user_id: The user (a non-empty ``str``; an ``int`` is converted with ``str()``).
            score: Its new score (finite).
            metadata: Fields merged into the user's hash (values stored as ``str(value)``).

        Returns:
            The entry (``"rank"``, ``"user_id"``, ``"score"``, ``"metadata"``) with
            ``"trimmed_user_ids"``, the ids the write trimmed away. If the write itself was trimmed
            away, there is no ``"rank"`` and ``"metadata"`` is the payload sent.

        Raises:
            ValueError: An empty ``user_id``, a NaN or infinite score, an ``int`` a double cannot
                hold exactly (beyond 2**53; nothing is sent).
            RateLimited: The board's ``rate_limit`` refused the write (nothing changed).
            OutOfMemoryError: The server is at ``maxmemory`` (refused before the script runs).

        Redis cost:
            One round trip: a script (no flags, so refused up front when out of memory) that checks
            ACL permissions and key types, then ZADD, HSET (merge), the trim and the read-back.
            O(log N) plus the users trimmed.
        """
        return self._run(self._board.upsert_user(user_id, score, metadata))

    @one_trip
    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Sent[WriteResult]:
        """Add to a user's score (ZINCRBY); otherwise as
        [`upsert_user`][redis_leaderboard.RedisLeaderboard.upsert_user].

        Args:
            user_id: The user.
            amount: Added to its score (finite; may be negative). A new user starts from 0. A
                result a double cannot hold exactly (beyond 2**53) raises ``ValueError``, and
                nothing is written.
            metadata: Fields merged into the user's hash.

        Returns:
            As [`upsert_user`][redis_leaderboard.RedisLeaderboard.upsert_user].

        Redis cost:
            One round trip: the script of ``upsert_user``, with ZINCRBY. O(log N).
        """
        return self._run(self._board.increment_score(user_id, amount, metadata))

    @one_trip
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> Sent[SubmitResult]:
        """Write a user's score and merge its metadata, and report what changed.

        ``mode="set"`` stores ``score``; ``"best"`` stores it only if it is strictly better than the
        current score in the board's order (a new user is always stored); ``"incr"`` adds it.

        With ``submission_id`` the write applies once: its result is stored under the board for
        ``submission_ttl`` seconds, and a repeat within that time writes nothing and returns the
        stored result with ``"duplicate": True`` (``False`` the first time). The id belongs to one
        user and one payload: reusing it for another user, or with another score, mode or metadata,
        raises [`SubmissionIdReused`][redis_leaderboard.SubmissionIdReused] and changes nothing; it
        never answers with another user's data. Such a write whose reply was lost (the connection
        dropped) is sent again on a new connection, at most ``retries`` times, then raises
        ``ConnectionError``; a resend whose first attempt had applied returns ``"duplicate": True``.
        Without an id, a write is never resent. An id applied by
        [`upsert_many`][redis_leaderboard.RedisLeaderboard.upsert_many], which keeps no result per
        entry, also returns ``"duplicate": True`` and writes nothing: the user's entry now
        (``"score"``, ``"rank"``, ``"metadata"``), ``"previous_score"`` and ``"previous_rank"``
        None, ``"changed"`` False, no trimmed ids; if the user is no longer on the board, the score
        upsert_many wrote with ``"rank"`` None and ``"metadata"`` ``{}``.

        Args:
            user_id: The user.
            score: The score sent (finite).
            metadata: Fields merged into the user's hash.
            mode: ``"set"``, ``"best"`` or ``"incr"``.
            submission_id: An idempotency key, unique per submission (``f"{match}:{player}"``).
            retries: How many times a write with a ``submission_id`` is resent after a lost reply.
            tiebreak: On a board with tie-break columns (``tiebreak=(("kills", "desc"),
                ("time", "asc"))``), a value for each (``{"kills": 12, "time": 93.5}``): equal
                scores rank by them, in order, then by user id. Rank order is the tuple (score,
                columns...) as a whole; ``mode="best"`` keeps the better tuple, never a mix of
                two. Without it, a write keeps the stored values (the worst of each for a new
                entry). Reads' entries carry ``"tiebreak": {name: value}``.

        Returns:
            ``{"user_id", "score" (stored now), "rank" (None if not on the board), "previous_score",
            "previous_rank" (None if new), "changed" (the stored score changed), "metadata" (the
            whole hash now), "trimmed_user_ids"}``, and ``"duplicate"`` with a ``submission_id``. If
            the write itself was trimmed away: ``"rank"`` is None, ``"metadata"`` ``{}`` and the
            user's id is in ``"trimmed_user_ids"``.

        Raises:
            SubmissionIdReused: The id was applied before with another user or payload.
            RateLimited: On a board with ``rate_limit``, a write beyond the limit (``retry_after``
                seconds); nothing changed.
            OptionsMismatch: The board was recorded with other options.

        Redis cost:
            One round trip: one script, as ``upsert_user`` (with a submission id it also reads and
            writes ``f"{key}:submission:{id}"``; with a rate limit, the user's
            ``f"{key}:rate:{id}"``). O(log N).
        """
        return self._run(
            self._board.submit(
                user_id,
                score,
                metadata,
                mode=mode,
                submission_id=submission_id,
                retries=retries,
                tiebreak=tiebreak,
            )
        )

    def events(
        self,
        last_id: str = "$",
        *,
        block: Optional[float] = None,
        count: int = EVENTS_BATCH,
    ) -> S:
        """The board's change events after ``last_id``, oldest first, as they come.

        Each event is ``{"id", "kind", "user_id", "score", "rank", "previous_score",
        "previous_rank", "trimmed_user_ids", "overtaken"}``, ranks 1-based. ``"kind"`` says what
        changed the board, each change appending its events atomically with it:

        - ``"score"``: a write (upsert_user, increment_score, submit, a group write, an upsert_many
          entry) changed the user's score or trimmed someone; ``"rank"`` None if the write was
          trimmed away; ``"overtaken"``: up to 10 ids the write passed, nearest first;
          ``"trimmed_user_ids"``: whom it trimmed;
        - ``"delete"``: [`delete_user`][redis_leaderboard.RedisLeaderboard.delete_user] removed the
          user: ``"score"`` and ``"previous_score"`` the score it had, ``"previous_rank"`` its rank,
          ``"rank"`` None (deleting a user not on the board appends nothing);
        - ``"trim"``: [`set_max_entries`][redis_leaderboard.RedisLeaderboard.set_max_entries] or
          upsert_many's closing trim removed ``"trimmed_user_ids"`` (worst first, at most 1,000 an
          event); ``"user_id"``, ``"score"`` and the ranks None;
        - ``"clear"``: one page of [`clear`][redis_leaderboard.RedisLeaderboard.clear] (5,000
          entries a page) removed ``"removed"`` entries, leaving ``"size"`` (0: the board is empty);
          no ids are listed (a big board appends one event a page, never one per entry);
          ``"user_id"``, ``"score"`` and the ranks None.

        Other users' ranks move with a change (those below a deleted user go up one): the events
        name only the users they list. Pass the last ``"id"`` seen to resume after a disconnect
        without missing any (while the stream still holds it: it keeps about ``events_maxlen``).

        Reading holds a connection (XREAD BLOCK), so it runs on a connection of its own with the
        client's options, opened on the first read and closed with the stream (``close()``,
        ``with``, or the end of the iteration). ``read(block)`` is one round trip (a list, maybe
        empty); ``last_id`` is where the next read resumes.

        Args:
            last_id: ``"$"``: the events after now; ``"0"``: every event the stream still holds; an
                event's ``"id"``: those after it.
            block: Seconds the iteration waits for the next event before it ends (``0``: what is
                there now); None waits for ever.
            count: How many events one read asks for at most.

        Returns:
            An iterator of events (an ``EventStream``; under asyncio an async iterator, an
            ``AsyncEventStream``), also a context manager.

        Redis cost:
            Nothing until the first read; then one XREAD (BLOCK) per batch of at most ``count``
            events on the stream's own connection, waiting in slices of 2 s.
        """
        return self._event_stream_class(self, last_id, block, count)

    @one_trip
    def set_max_entries(self, max_entries: Optional[int]) -> Sent[list[str]]:
        """Change the board's size limit and trim to it.

        The new limit applies to this object once the trim has finished (if it raises, the old limit
        stays). With ``events``, appends ``"trim"`` events listing the trimmed ids.

        Args:
            max_entries: The new limit (at least 1), or None for an unlimited board.

        Returns:
            The trimmed ids, worst first.

        Redis cost:
            One round trip per page of 5,000 trimmed entries: a script flagged ``allow-oom`` (it
            only deletes) that checks, then trims (ZREMRANGEBYRANK, UNLINK of the metadata).
            O(log N + M) for M trimmed.
        """
        return self._run(self._board.set_max_entries(max_entries))

    @one_trip
    def get_top(self, count: int = 10) -> Sent[list[Entry]]:
        """The best ``count`` entries, best first.

        Args:
            count: How many (at least 1).

        Returns:
            Entries ``{"rank", "user_id", "score", "metadata"}``, best first.

        Redis cost:
            One round trip: a ``no-writes`` script, ZRANGE (REV) WITHSCORES and one HGETALL per
            entry, one snapshot. From 50 entries (200 on a board with options) two: the ranked
            read, then the HGETALLs pipelined, half the server's CPU at 100 entries, the metadata
            read just after the ranks (see "Reads of many entries" in the board's guide).
            O(log N + count).
        """
        return self._run(self._board.get_top(count))

    @one_trip
    def get_around_rank(self, rank: int, count: int = 5) -> Sent[list[Entry]]:
        """``count`` entries centred on the 1-based ``rank``, the window clamped to the board.

        A window that would pass an end of the board is moved inside it, so it is full whenever the
        board holds ``count`` entries; ``[]`` on an empty board, the whole board if it has at most
        ``count``.

        Args:
            rank: The 1-based rank to centre on (at least 1).
            count: How many entries (at least 1).

        Returns:
            Entries, best first.

        Redis cost:
            One round trip: a ``no-writes`` script, ZCARD, one ZRANGE and one HGETALL per entry,
            one snapshot. From 50 entries on a default board (200 on a board with options) two:
            the ranked read (on a default board the guide's ZRANGE of the window), then the
            HGETALLs pipelined, the metadata read just after the ranks (as ``get_top``); three
            when that ZRANGE runs past the board's end, the script's ranked read clamping it.
            O(log N + count).
        """
        return self._run(self._board.get_around_rank(rank, count))

    @one_trip
    def get_rank(self, user_id: str) -> Sent[Optional[int]]:
        """A user's 1-based rank (under the board's tie rule), or None if it is not on the board.

        Args:
            user_id: The user.

        Returns:
            The rank, or None.

        Redis cost:
            One round trip: ZREVRANK (ZRANK on ``asc`` boards; a script on boards with ``ties``).
            O(log N).
        """
        return self._run(self._board.get_rank(user_id))

    @one_trip
    def get_user_metadata(self, user_id: str) -> Sent[dict[str, str]]:
        """A user's metadata hash; ``{}`` if it has none.

        Args:
            user_id: The user.

        Returns:
            The hash's fields and values.

        Redis cost:
            One round trip: HGETALL (the compact layout: HGETALL of the guide's hash, absent
            once converted, and HGET of the user's field of the board's hash, pipelined).
            O(fields).
        """
        return self._run(self._board.get_user_metadata(user_id))

    @one_trip
    def get_user_entry(self, user_id: str) -> Sent[Optional[Entry]]:
        """A user's entry (rank, score, metadata), or None if it is not on the board.

        Args:
            user_id: The user.

        Returns:
            The entry, or None.

        Redis cost:
            One round trip: a ``no-writes`` script, ZSCORE, ZREVRANK, HGETALL. O(log N). On a
            board known to record no options (after its first call), the guide's MULTI,
            ZSCORE, ZREVRANK, HGETALL, EXEC instead (0.7x the script's server CPU, the
            guide's own cost); on a compact board of the default order and ties, the same
            transaction with HGET of the user's field and HGETALL of the guide's hash (a player
            a conversion has not moved yet) in place of the HGETALL (0.94-1.00x the guide's).
            Where the server refuses to queue them out of memory (Redis before 7.4), the
            script, in a second round trip. Either way one snapshot.
        """
        return self._run(self._board.get_user_entry(user_id))

    @one_trip
    def list_all(self) -> Sent[list[Entry]]:
        """Every entry, best first.

        Up to 200 entries, one round trip, one snapshot; past them, the ranks in pages without
        metadata, then theirs (not one snapshot). On a board of the guide's ranking rules
        (``order="desc"``, ``ties="lexicographic"``, no tie-break columns; either layout) last
        known to this object to hold 50 entries or more (by ``get_size``'s or ``list_all``'s
        reply), the guide's own commands instead: the ranks by ``ZRANGE`` in pages of 5,000,
        then every entry's metadata, read just after the ranks (a player removed in between
        shows ``{}``). A board that keeps growing past what its first page saw raises
        ``RedisError`` rather than looping.

        Returns:
            Every entry, best first.

        Redis cost:
            Up to 200 entries a ``no-writes`` script, one round trip; past them a script's page
            of 5,000 ranks a round trip (at most 2 x the pages left after the first, plus one),
            then an ``HGETALL`` an entry, pipelined 5,000 a round trip (a compact board: an
            ``HGET`` and one ``HMGET``). The guide's rules from 50 entries: a ``ZRANGE`` and a
            ``ZCARD`` a page of 5,000, then the metadata as above: two round trips up to 5,000
            entries, at or below the guide's server CPU. A read of a ``run_pipelined`` stream is
            the scripts' pages with their metadata. O(N).
        """
        return self._run(self._board.list_all())

    @one_trip
    def get_size(self) -> Sent[int]:
        """How many entries the board holds.

        Returns:
            The board's size.

        Redis cost:
            One round trip: ZCARD. O(1).
        """
        return self._run(self._board.get_size())

    @one_trip
    def delete_user(self, user_id: str) -> Sent[bool]:
        """Remove a user and its metadata.

        With ``events``, a removal appends a ``"delete"`` event, atomically with it.

        Args:
            user_id: The user.

        Returns:
            True if it was on the board (its metadata goes either way).

        Redis cost:
            One round trip: a script flagged ``allow-oom`` (it frees memory) that checks, then ZREM
            and UNLINK. O(log N).
        """
        return self._run(self._board.delete_user(user_id))

    @one_trip
    def clear(self) -> Sent[None]:
        """Delete the board and every member's metadata hash.

        Large boards are cleared in pages. With ``events``, each page appends one ``"clear"`` event
        (``"removed"``, ``"size"``); the stream itself stays.

        Redis cost:
            One round trip per page of 5,000 entries: a script flagged ``allow-oom`` that checks,
            then ZREMRANGEBYRANK and UNLINK. O(N).
        """
        return self._run(self._board.clear())

    def convert_layout(self, *, page: int = 1000) -> Sent[int]:
        """Convert the board at ``key`` from the guide's layout to the compact one, in place:
        call it on a board opened with ``layout="compact"``. Returns how many players' metadata
        moved (0 if the board is compact already; an empty board just records the layout).

        The first page records the layout as being converted: from then on a client of the
        guide's layout is refused (``OptionsMismatch``, nothing changed) on every call that
        checks the options (every write, and its reads until one has confirmed the options: so
        stop or restart the guide's clients first), while compact clients read and write on,
        taking a player's metadata from the guide's hash until it has moved (a write moves it).
        Safe to stop anywhere and to call again: it goes on, finding only what has not moved.
        Players are found by ``ZSCAN`` of the board (every player on it from the first page to
        the last, at least once), then the hidden ones; a guide hash of a player on neither
        (none is left by this package) stays where it is.

        Args:
            page: About how many players each round trip moves (1 to 10,000).

        Raises:
            ValueError: A board object of the guide's layout, or a ``page`` out of range.
            OptionsMismatch: The board records other options (order, ties) than this object's.

        Redis cost:
            One round trip per page: a script (no flags: refused up front out of memory) of
            ZSCAN, then per player HGETALL, HSET of the board's hash, UNLINK. O(N) in all.
        """
        return self._run(self._board.convert_layout(page))

    # -- fair play: hidden players ------------------------------------------------------------

    @one_trip
    def hide(self, user_id: str) -> Sent[bool]:
        """Hide a player: they leave every rank, window, page, count, percentile and histogram, keep
        their score and metadata, and their writes go on being judged and recorded, not shown.

        Their score is kept aside in ``f"{key}:hidden"`` (the board records ``hidden`` in its
        options hash), so every read stays as it is. A hidden player's writes follow the board's
        rules (mode, score limits, rate limit, submission ids) and return as a write that left
        the board does (``rank`` None); they are never trimmed, and append no event. On a
        periodic board the player is hidden from the current period and every later one.
        With ``events``, hiding a player on the board appends a ``"hide"`` event.

        Args:
            user_id: The player.

        Returns:
            True if they were not hidden before.

        Redis cost:
            One round trip: hide.lua, which checks, then ZREM and HSET (and the tie rule's
            bookkeeping). O(log N). Once a board has hidden players, each write reads one more
            hash field (HGET) and takes the scripts' path with options.
        """
        return self._run(self._board.hide(user_id))

    @one_trip
    def unhide(self, user_id: str) -> Sent[bool]:
        """Show a hidden player again: their kept score goes back on the board as a write of it
        would (a new achievement under ``ties="first"``, then the trim to ``max_entries``, and a
        ``"score"`` event with ``events``).

        Args:
            user_id: The player.

        Returns:
            True if they were hidden.

        Redis cost:
            One round trip: hide.lua, which checks, HDEL, then the write's commands. O(log N).
        """
        return self._run(self._board.unhide(user_id))

    @one_trip
    def hidden(self) -> Sent[list[str]]:
        """The hidden players' ids, in byte order (on a periodic board, those hidden from the
        current period).

        Redis cost:
            One round trip: hidden.lua, a ``no-writes`` script (it runs out of memory and on
            read-only replicas), HKEYS. O(H) for H hidden players.
        """
        return self._run(self._board.hidden())

    @one_trip
    def is_hidden(self, user_id: str) -> Sent[bool]:
        """Whether a player is hidden (one of ``hidden()``, without listing them all).

        Args:
            user_id: The player (a ``str``).

        Returns:
            True if they are hidden.

        Redis cost:
            One round trip: hidden.lua, a ``no-writes`` script, HEXISTS. O(1).
        """
        return self._run(self._board.is_hidden(user_id))

    # -- queries: one round trip each, atomic; every "rank" follows the board's tie rule ----

    @one_trip
    def get_around_user(self, user_id: str, count: int = 5) -> Sent[list[Entry]]:
        """``count`` entries centred on a user's position, the window clamped to the board.

        Centred on the user's position, not its rank (tied users have distinct positions), and
        clamped as [`get_around_rank`][redis_leaderboard.RedisLeaderboard.get_around_rank]'s (a full
        window at both ends).

        Args:
            user_id: The user.
            count: How many entries (at least 1).

        Returns:
            Entries, best first; ``[]`` if the user is not on the board.

        Redis cost:
            One round trip: a ``no-writes`` script, ZREVRANK (ZRANK for ``asc``), ZCARD, one ZRANGE
            and one HGETALL per entry. From 200 entries two, the HGETALLs pipelined after the
            ranked read (as ``get_top``). O(log N + count).
        """
        return self._run(self._board.get_around_user(user_id, count))

    @one_trip
    def get_entries(self, user_ids: Iterable[str]) -> Sent[list[Optional[Entry]]]:
        """One item per id, in the order given: its entry, or None if it is not on the board.

        For a friends list.

        Args:
            user_ids: At most 1,000 ids (not a ``str``).

        Returns:
            An entry or None per id.

        Raises:
            ValueError: More than 1,000 ids.
            TypeError: A ``str`` instead of a collection of ids.

        Redis cost:
            One round trip: a ``no-writes`` script, ZSCORE, the rank and HGETALL per id. From
            200 ids two, the HGETALLs pipelined after the ranks (as ``get_top``). O(k log N)
            for k ids.
        """
        return self._run(self._board.get_entries(user_ids))

    @one_trip
    def get_page(self, page: int, page_size: int = 10) -> Sent[Page]:
        """The 1-based ``page`` of ``page_size`` entries, best first.

        ``total_pages`` is ``ceil(size / page_size)`` (0 on an empty board); a page past the end has
        no entries (never a short page borrowed from the one before).

        Args:
            page: The page, from 1.
            page_size: Entries per page, 1 to 1,000.

        Returns:
            ``{"page", "page_size", "total_pages", "size", "entries"}``.

        Redis cost:
            One round trip: a ``no-writes`` script, the rank window of ``get_top``; from 200
            entries two (as ``get_top``). O(log N + page_size).
        """
        return self._run(self._board.get_page(page, page_size))

    @one_trip
    def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> Sent[list[Entry]]:
        """The entries with ``min_score <= score <= max_score``, best first in the board's order.

        Args:
            min_score: The lowest score (``float("-inf")`` allowed; NaN raises).
            max_score: The highest score (``float("inf")`` allowed); below ``min_score`` gives
                ``[]``.
            offset: Entries of the range skipped first.
            limit: At most this many entries.

        Returns:
            Entries, best first.

        Redis cost:
            One round trip: a ``no-writes`` script, two ZCOUNTs find the range's positions, one
            ZRANGE reads it by position, one HGETALL per entry. O(log N + limit), whatever the
            offset.
        """
        return self._run(self._board.get_by_score(min_score, max_score, offset=offset, limit=limit))

    @one_trip
    def count_by_score(self, min_score: float, max_score: float) -> Sent[int]:
        """How many entries have ``min_score <= score <= max_score``.

        Args:
            min_score: The lowest score (``-inf`` allowed).
            max_score: The highest score (``inf`` allowed).

        Returns:
            The count.

        Redis cost:
            One round trip: ZCOUNT. O(log N).
        """
        return self._run(self._board.count_by_score(min_score, max_score))

    @one_trip
    def rank_for_score(self, score: float) -> Sent[int]:
        """The rank an entry with ``score`` would be reported with now.

        1 + the entries strictly better (competition's rank); on a ``dense`` board, 1 + the distinct
        scores strictly better.

        Args:
            score: A score (finite).

        Returns:
            The rank.

        Redis cost:
            One round trip: ZCOUNT (a script on a board's first call, which checks the recorded
            options). O(log N).
        """
        return self._run(self._board.rank_for_score(score))

    @one_trip
    def get_percentile(self, user_id: str) -> Sent[Optional[float]]:
        """The share of the other entries whose score is strictly worse than a user's.

        0.0 to 100.0; tied users share a value; the best user, and the only user of a board of one,
        get 100.0.

        Args:
            user_id: The user.

        Returns:
            The percentile, or None if the user is not on the board.

        Redis cost:
            One round trip: a ``no-writes`` script, ZSCORE, ZCOUNT, ZCARD. O(log N).
        """
        return self._run(self._board.get_percentile(user_id))

    @one_trip
    def score_at_percentile(self, p: float) -> Sent[Optional[float]]:
        """The nearest-rank score at percentile ``p``.

        Of the scores sorted worst to best, the one at 1-based position ``max(1, ceil(p / 100 *
        size))``.

        Args:
            p: The percentile, 0 to 100.

        Returns:
            The score, or None on an empty board.

        Redis cost:
            One round trip: a ``no-writes`` script, ZCARD and a ZRANGE of one element. O(log N).
        """
        return self._run(self._board.score_at_percentile(p))

    @one_trip
    def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> Sent[list[HistogramBin]]:
        """The score distribution, in ascending score order whatever the board's order.

        ``bins`` bins of equal width over ``[min_score, max_score]``; edges
        ``min + (max - min) * i / bins`` in doubles, the last exactly ``max``; each bin
        ``[min, max)`` but the last, which is closed, so the counts add up (all scores equal: the
        last bin holds them all).

        Args:
            bins: How many bins, 1 to 1,000.
            min_score: The lowest edge; default the board's lowest score (never past a given
                ``max_score``).
            max_score: The highest edge; default the board's highest score.

        Returns:
            ``[{"min", "max", "count"}, ...]``, ascending; ``[]`` on an empty board.

        Redis cost:
            One round trip: a ``no-writes`` script, ZCARD, the two extremes and one ZCOUNT from
            ``-inf`` per edge (a bin is the difference of two): O(bins log N); the board is never
            scanned.
        """
        return self._run(self._board.get_histogram(bins, min_score=min_score, max_score=max_score))

    @plan
    def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> Plan[ImportSummary]:
        """Bulk-load ``(user_id, score)`` or ``(user_id, score, metadata)`` entries.

        Streams ``entries`` (any iterable, read lazily: memory stays bounded) in chunks of
        ``chunk_size``, up to 4 chunks in flight on one connection, so the next chunk is converted
        while the server applies the previous ones and the server never waits for the client. The
        board is trimmed once, at the end. Not atomic as a whole: other clients may see the board
        grow while it loads.

        ``chunk_size`` and ``progress`` are checked before anything is read or written; each entry
        is validated as [`upsert_user`][redis_leaderboard.RedisLeaderboard.upsert_user] validates
        its arguments, a bad one raising ``ValueError``/``TypeError`` naming its position
        (``"entry 41: ..."``).

        If it raises once chunks were sent (a bad entry in a later chunk, ``progress`` raising, a
        Redis error), the chunks the server applied stay written: every chunk before the failing
        one, and with several in flight possibly some after it; nothing of the chunk holding a bad
        entry; of a chunk Redis failed, nothing if it refused the chunk (out of memory, OOM), else
        every command but the failing one (a WRONGTYPE or NOPERM HSET leaves that entry's score
        written without its metadata). The board is then trimmed to ``max_entries`` before the error
        propagates; if that trim fails too (the connection is gone), the board may hold more than
        ``max_entries`` entries until the next write or
        [`set_max_entries`][redis_leaderboard.RedisLeaderboard.set_max_entries] trims it (on Python
        3.11+ the error carries a note saying so). A ``KeyboardInterrupt`` (or, in asyncio,
        cancellation) stops at once, without the trim.

        Guards: an entry may be ``(user_id, score, metadata_or_None, submission_id)``; an entry
        whose id was applied before (by upsert_many, within ``submission_ttl``) is skipped, and the
        summary then has ``"duplicates": n``. A chunk whose entries all carry ids is resent after a
        lost reply, at most ``retries`` times. Events are appended per changed entry (``"score"``)
        and for the closing trim (``"trim"``); rate limits do not apply to a bulk load. An id
        already used by [`submit`][redis_leaderboard.RedisLeaderboard.submit] is skipped too.

        Args:
            entries: The entries, any iterable.
            chunk_size: Entries per chunk (at least 1).
            progress: Called with the number of entries written so far after each chunk.
            retries: How many times a chunk whose entries all carry ids is resent after a lost
                reply.

        Returns:
            ``{"written": n, "trimmed": count, "trimmed_user_ids": [...]}``, listing at most the
            1,000 lowest trimmed ids (and ``"duplicates"`` when entries were skipped).

        Redis cost:
            Per chunk, pipelined (up to 4 in flight): MULTI, one variadic ZADD and one HSET per
            entry with metadata, EXEC; entries with ids, and boards with ``events``,
            ``rate_limit``, score limits or hidden players, go as scripts (bulk.lua) instead.
            The board is checked first, once per board object. One trim at the end (and after a
            failure). O(M log N) for M entries.
        """
        check_bulk_arguments(chunk_size, progress)
        operations = ChunkOperations(self._board, entries, chunk_size, retries)
        # MULTI/EXEC chunks cannot check the board's options, the guards another client
        # recorded or hidden players: checked first, once per board object (guarded boards'
        # chunks, and those of a board with hidden players, are bulk.lua, which checks them).
        if not self._board.bulk_checked and not self._board.guarded:
            operations.prefetch()  # a bad first chunk raises before the check is sent
            yield self._board.check_options()
        written = 0

        def on_chunk(count: int) -> None:
            nonlocal written
            written += count
            if progress is not None:
                progress(written)

        try:
            # MULTI/EXEC chunks, or script chunks (bulk.lua) on boards with options: either
            # way up to CHUNKS_IN_FLIGHT in flight on one connection (the core resends a
            # script the server lost, NOSCRIPT, in order).
            yield Pipelined(operations, on_chunk, CHUNKS_IN_FLIGHT)
        except Exception as error:
            if operations.started:
                # Queued after every chunk sent on this connection: it sees them all.
                try:
                    yield self._board.trim_to_max_entries(0)
                except Exception as trim_error:
                    note_failed_trim(error, trim_error)
            raise
        trim = yield self._board.trim_to_max_entries(MAX_REPORTED_TRIMMED)
        return import_summary(written, trim, operations.submitted - written)
