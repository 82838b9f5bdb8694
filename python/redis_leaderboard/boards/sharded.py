"""Sharded boards: one leaderboard spread over ``shards`` boards (``{key:0}``, ``{key:1}``, ...),
each in its own cluster slot, so a board can outgrow one node. Every method is written once for
both APIs (``redis_leaderboard._drive``); the public ``ShardedLeaderboard`` classes add a driver
and their client types.

Each user lives in one shard, chosen by ``zlib.crc32(user_id) % shards`` (stable across
processes, machines and versions; changing ``shards`` moves users, so a board keeps its count).
Writes go to the user's shard in one round trip and are atomic there. Reads that need every
shard send one request per shard in one batch (one pipelined write per node, every node at
once), then merge. The costs, per method, are in the docstrings (and the docs' deployment
page, docs/pages/deployment/sharded.md). ``ties="first"`` is refused: each shard numbers
achievements on its own, so their order across shards is unknown.

Tie-break columns (``tiebreak=(("kills", "desc"), ...)``): every shard is a plain board with the
columns (its writes carry the ``tb`` word as a plain board's do), and every entry a shard returns
carries its columns' values, so the merge orders equal scores by the very key each shard's ranked
set orders them by (``_member_key``: the columns' order-preserving images, then the user id,
compared through the values they encode), without asking the shards anything more.
"""

from __future__ import annotations

import math
import re
import struct
import threading
import zlib
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from .._core import Board
from .._drive import Concurrent, Plan, Runner, Sent, one_trip, plan
from .._types import (
    BulkEntry,
    Entry,
    HistogramBin,
    ImportSummary,
    Layout,
    Order,
    Page,
    ShardedSubmitResult,
    ShardedWriteResult,
    Ties,
    WriteMode,
)
from ..options import public_name
from .plain import DEFAULT_CHUNK_SIZE, LeaderboardBase, check_bulk_arguments, user_id_text

__all__ = ["ShardedBase", "shard_of"]

# A window ending within this many entries from the top is read by merging every shard's top;
# deeper, the window's first score is found by bisection over scores (about 64 round trips).
SHALLOW = 1000
# Entries per request when paging through a shard (dense ranks below the top).
PAGE = 1000
MAX_SHARDS = 1024
# upsert_many reads this many entries, groups them by shard, and loads the groups concurrently.
BULK_BATCH = 50_000
MAX_ENTRIES_ASKED = 1000  # get_entries, as one board
MAX_REPORTED_TRIMMED = 1000
_ENTRY_INDEX = re.compile(r"^entry (\d+):")
# A ranked member's key as the merge compares it: with tie-break columns, each column's value
# (negated where its image is inverted; None the worst), then the user id as bytes.
_MemberKey = tuple[Union[float, bytes], ...]


def shard_of(user_id: str, shards: int) -> int:
    """The shard of ``user_id``: ``crc32(user_id as UTF-8) % shards`` (an ``int`` id as
    ``str()`` writes it, as every board stores it)."""
    return zlib.crc32(user_id_text(user_id).encode("utf-8", "surrogatepass")) % shards


def _ordered(score: float) -> int:
    """An integer in the order of the doubles (finite and infinite)."""
    bits: int
    (bits,) = struct.unpack("<q", struct.pack("<d", score))
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _unordered(key: int) -> float:
    bits = key if key >= 0 else (-key) | -0x8000000000000000
    (score,) = struct.unpack("<d", struct.pack("<q", bits))
    return float(score)


def _check_count(value: Any, name: str, low: int = 1, high: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low or (high is not None and value > high):
        raise ValueError(
            f"{name} must be between {low} and {high}" if high else f"{name} must be at least {low}"
        )
    return value


class ShardedBase:
    """The shard boards, the routing, the read algorithms and every method, each written once
    (the public classes' docstring tells what the board is)."""

    # Set by the public classes: the cluster client this class runs on, its name in reprs and
    # errors, and the plain board class upsert_many loads each shard with.
    _cluster_client_class: Any
    _display_name: str
    _board_class: type[LeaderboardBase[Any]]
    redis: Any
    _run: Runner

    def __init__(
        self,
        redis_client: Any,
        key: str = "leaderboard",
        shards: int = 16,
        max_entries: Optional[int] = 1_000_000_000,
        *,
        order: Order = "desc",
        ties: Ties = "lexicographic",
        submission_ttl: float = 86400,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
        tiebreak: Optional[Sequence[tuple[str, Order]]] = None,
        layout: Layout = "guide",
    ) -> None:
        if not isinstance(key, str):
            raise TypeError(f"key must be a str, not {type(key).__name__}")
        if not key or "{" in key or "}" in key:
            raise ValueError(
                "a sharded board's key must be non-empty and hold no '{' or '}': its shards are "
                f"named '{{key:0}}', '{{key:1}}', ... (got {key!r})"
            )
        if isinstance(shards, bool) or not isinstance(shards, int):
            raise TypeError(f"shards must be an int, not {type(shards).__name__}")
        if not 1 <= shards <= MAX_SHARDS:
            raise ValueError(f"shards must be between 1 and {MAX_SHARDS}")
        if ties == "first":
            raise ValueError(
                "a sharded board cannot rank ties by 'first': each shard numbers achievements on "
                "its own; use 'lexicographic', 'competition' or 'dense'"
            )
        if events is not False:
            raise self._refuse_events()
        # Guards: a user lives in one shard, so each shard board's submission ids, rate limit
        # and score limits are exactly the user's (a write with an id goes to that shard, where
        # its result is kept; the shard's script counts the user's writes, checks its score).
        self._boards = [
            Board(
                f"{{{key}:{i}}}",
                max_entries,
                order=order,
                ties=ties,
                submission_ttl=submission_ttl,
                rate_limit=rate_limit,
                score_range=score_range,
                max_increment=max_increment,
                tiebreak=tiebreak,
                layout=layout,
            )
            for i in range(shards)
        ]
        expected = self._cluster_client_class
        if not hasattr(redis_client, "run_many") or (
            getattr(type(redis_client), "is_cluster", False)
            and not isinstance(redis_client, expected)
        ):  # not a cluster client, or one of the other API (blocking for asyncio, or the reverse)
            raise TypeError(
                f"{self._display_name} runs on a {public_name(expected)}, "
                f"not a {public_name(type(redis_client))}"
            )
        self.redis = redis_client
        self._run = redis_client.run
        self.key = key
        """The board's name; its shard boards are ``{key:0}``, ``{key:1}``, ..."""
        self.shards = shards
        """How many shard boards (1 to 1,024); a user's is ``crc32(user_id) % shards``."""
        self.order = self._boards[0].order
        """``"desc"`` (higher scores are better) or ``"asc"``."""
        self.ties = self._boards[0].ties
        """How equal scores rank: ``"lexicographic"``, ``"competition"`` or ``"dense"``."""
        self.max_entries = self._boards[0].max_entries
        """Each shard's size limit (None: unlimited); see
        [`set_shard_max_entries`][redis_leaderboard.ShardedLeaderboard.set_shard_max_entries]."""
        self.submission_ttl = self._boards[0].submission_ttl
        """Seconds the result of a write with a ``submission_id`` is kept (on the user's
        shard)."""
        self.rate_limit = self._boards[0].rate_limit
        """``(max_writes, per_seconds)`` per user, or None."""
        self.score_range = self._boards[0].score_range
        """``(min, max)`` a write may leave a score within (fair play), or None."""
        self.max_increment = self._boards[0].max_increment
        """The most one write may improve a score by (fair play), or None."""
        self.layout = self._boards[0].layout
        """Where each shard keeps its players' metadata: ``"guide"`` (a hash per player) or
        ``"compact"`` (one hash per shard, ``f"{{key:i}}:meta"``)."""
        self.tiebreak: Optional[tuple[tuple[str, str], ...]] = self._boards[0].tiebreak
        """The tie-break columns, ``(name, "desc" | "asc")`` each, ranking equal scores in
        order over every shard, or None (as
        [`RedisLeaderboard.tiebreak`][redis_leaderboard.RedisLeaderboard.tiebreak])."""
        desc = self.order == "desc"
        # Per column, the sign that makes its value order its image's order in the ranked
        # members' keys (tiebreak_key in operations.cpp inverts the image of a column whose
        # direction is not the board's); and the value of None (no values written: the worst
        # key, lib/options.lua's worst_key, all 0 on a desc board and all f on an asc one).
        self._signs = [
            (name, 1.0 if (d == "desc") == desc else -1.0) for name, d in self.tiebreak or ()
        ]
        self._no_value = -math.inf if desc else math.inf

    def __repr__(self) -> str:
        return (
            f"{self._display_name}(key={self.key!r}, shards={self.shards}, "
            f"order={self.order!r}, ties={self.ties!r}"
            + (f", tiebreak={self.tiebreak!r}" if self.tiebreak else "")
            + (f", layout={self.layout!r})" if self.layout != "guide" else ")")
        )

    def shard_key(self, user_id: str) -> str:
        """The key of ``user_id``'s shard board (``{key:i}``); sends nothing.

        Raises:
            TypeError: A ``user_id`` that is neither a ``str`` nor an ``int``.
        """
        return self._board_of(user_id).key

    def _board_of(self, user_id: str) -> Board:
        return self._boards[shard_of(user_id, self.shards)]

    # -- writes: one round trip, on the user's shard ----------------------------------------

    def _written(self, user_id: str, result: Mapping[str, Any]) -> Any:
        """A shard's write result as the sharded board's: its shard, and its rank there."""
        out = dict(result)
        out["shard"] = shard_of(user_id, self.shards)
        if "rank" in out:  # absent when the write's own trim removed it (as the guide's)
            out["shard_rank"] = out.pop("rank")
        if "previous_rank" in out:
            out["previous_shard_rank"] = out.pop("previous_rank")
        return out

    @plan
    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[ShardedWriteResult]:
        """Set a user's score and merge its metadata on its shard, as
        [`RedisLeaderboard.upsert_user`][redis_leaderboard.RedisLeaderboard.upsert_user].

        Args:
            user_id: The user (a ``str``).
            score: Its new score (finite).
            metadata: Fields merged into the user's hash.

        Returns:
            The shard's result, with ``"shard"`` (the shard's index) and ``"shard_rank"`` (the
            rank on that shard) instead of ``"rank"``; no ``"shard_rank"`` if the write's own
            trim removed it. A rank over every shard is
            [`get_rank`][redis_leaderboard.ShardedLeaderboard.get_rank]'s.

        Raises:
            TypeError: A ``user_id`` that is neither a ``str`` nor an ``int`` (nothing is sent).
            RateLimited: The board's ``rate_limit`` refused the write (nothing changed).

        Redis cost:
            One round trip, to the user's shard: the plain board's script, atomic there (the
            shard's trim included). O(log N), N the shard's entries.
        """
        result = yield self._board_of(user_id).upsert_user(user_id, score, metadata)
        written: ShardedWriteResult = self._written(user_id, result)
        return written

    @plan
    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[ShardedWriteResult]:
        """Add to a user's score on its shard; otherwise as
        [`upsert_user`][redis_leaderboard.ShardedLeaderboard.upsert_user].

        Args:
            user_id: The user (a ``str``).
            amount: Added to its score (finite; may be negative).
            metadata: Fields merged into the user's hash.

        Returns:
            As [`upsert_user`][redis_leaderboard.ShardedLeaderboard.upsert_user].

        Redis cost:
            One round trip, to the user's shard: the plain board's script, with ZINCRBY.
            O(log N).
        """
        result = yield self._board_of(user_id).increment_score(user_id, amount, metadata)
        written: ShardedWriteResult = self._written(user_id, result)
        return written

    @plan
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
    ) -> Plan[ShardedSubmitResult]:
        """Write a user's score on its shard and report what changed, as
        [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit].

        ``submission_id`` and ``retries`` as there: the id's result is kept on the user's shard
        (``f"{shard key}:submission:..."``, for ``submission_ttl``), where every resend of the
        same user's write goes, so the write applies once; a write whose reply was lost is
        resent at most ``retries`` times (to the node serving the shard then), then raises
        ``ConnectionError``.

        Args:
            user_id: The user (a ``str``).
            score: The score sent (finite).
            metadata: Fields merged into the user's hash.
            mode: ``"set"``, ``"best"`` or ``"incr"``.
            submission_id: An idempotency key, unique per submission.
            retries: How many times a write with a ``submission_id`` is resent after a lost
                reply.
            tiebreak: On a board with tie-break columns, a value for each (``{"kills": 12,
                "time": 93.5}``), as
                [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit]'s: equal
                scores rank by them over every shard, then by user id. Checked before anything
                is sent (``ValueError``/``TypeError``: a missing, extra or non-finite value, or
                values for a board without columns).

        Returns:
            The shard's result (as
            [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit]'s) with
            ``"shard"``, and ``"shard_rank"``/``"previous_shard_rank"`` (ranks on that shard)
            instead of ``"rank"``/``"previous_rank"``.

        Raises:
            SubmissionIdReused: The id was applied before with another user or payload.
            RateLimited: On a board with ``rate_limit``, a write beyond the limit.

        Redis cost:
            One round trip, to the user's shard: the plain board's script (with columns, the
            ``tb`` word: the shard's ranked set keeps the member's key). O(log N).
        """
        result = yield self._board_of(user_id).submit(
            user_id,
            score,
            metadata,
            mode=mode,
            submission_id=submission_id,
            retries=retries,
            tiebreak=tiebreak,
        )
        written: ShardedSubmitResult = self._written(user_id, result)
        return written

    @one_trip
    def delete_user(self, user_id: str) -> Sent[bool]:
        """Remove a user and its metadata from its shard.

        Args:
            user_id: The user (a ``str``).

        Returns:
            True if it was on the board.

        Redis cost:
            One round trip, to the user's shard: the plain board's script. O(log N).
        """
        return self._run(self._board_of(user_id).delete_user(user_id))

    @one_trip
    def hide(self, user_id: str) -> Sent[bool]:
        """Hide a player on their shard, as
        [`RedisLeaderboard.hide`][redis_leaderboard.RedisLeaderboard.hide]: they leave every
        merged read (ranks, windows, counts, percentiles, histograms), since those read the
        shards' sorted sets.

        Args:
            user_id: The player (a ``str``).

        Returns:
            True if they were not hidden before.

        Redis cost:
            One round trip, to the user's shard: the plain board's hide.lua. O(log N).
        """
        return self._run(self._board_of(user_id).hide(user_id))

    @one_trip
    def unhide(self, user_id: str) -> Sent[bool]:
        """Show a hidden player again, on their shard (their kept score back, then the shard's
        trim), as [`RedisLeaderboard.unhide`][redis_leaderboard.RedisLeaderboard.unhide].

        Args:
            user_id: The player (a ``str``).

        Returns:
            True if they were hidden.

        Redis cost:
            One round trip, to the user's shard: hide.lua. O(log N).
        """
        return self._run(self._board_of(user_id).unhide(user_id))

    @one_trip
    def is_hidden(self, user_id: str) -> Sent[bool]:
        """Whether a player is hidden on their shard (one of ``hidden()``).

        Redis cost:
            One round trip, to the user's shard: hide.lua, HEXISTS. O(1).
        """
        return self._run(self._board_of(user_id).is_hidden(user_id))

    @plan
    def hidden(self) -> Plan[list[str]]:
        """The hidden players of every shard, in byte order.

        Redis cost:
            One request per shard, in one batch: hide.lua, HKEYS. O(H).
        """
        lists = yield [board.hidden() for board in self._boards]
        return sorted(
            (i for ids in lists for i in ids), key=lambda i: i.encode("utf-8", "surrogatepass")
        )

    @one_trip
    def get_user_metadata(self, user_id: str) -> Sent[dict[str, str]]:
        """A user's metadata (HGETALL on its shard; a compact board's: HGET); ``{}`` if none.

        Args:
            user_id: The user (a ``str``).

        Returns:
            The hash, values as ``str``.

        Redis cost:
            One round trip, to the user's shard: HGETALL (compact layout: HGETALL of the
            guide's hash, absent once converted, and HGET of the user's field). O(fields).
        """
        return self._run(self._board_of(user_id).get_user_metadata(user_id))

    # -- ordering ------------------------------------------------------------------------------

    def _member_key(self, entry: Entry) -> _MemberKey:
        """The entry's member in its shard's ranked set, in the order Redis keeps equal scores
        in (byte order; best first reversed for desc): the user id; with tie-break columns
        first the columns' 16-hex-digit images, each the order-preserving 64 bits of its value
        (inverted for a column whose direction is not the board's, -0 as 0), compared here
        through the values the entry carries (negated where inverted; None, the worst key's
        digits, as -inf on desc and +inf on asc, which no finite value equals), so the merge
        orders exactly as the shards do and needs nothing more from them."""
        name = entry["user_id"].encode("utf-8", "surrogatepass")
        if not self.tiebreak:
            return (name,)
        values = entry["tiebreak"]
        none = self._no_value
        return (
            *[none if (v := values[column]) is None else sign * v for column, sign in self._signs],
            name,
        )

    def _sort(self, entries: list[Entry]) -> list[Entry]:
        """Best first, ties in Redis's member order (bytes; reversed for desc), as one board."""
        if self.tiebreak:
            return sorted(
                entries,
                key=lambda e: (e["score"], self._member_key(e)),
                reverse=self.order == "desc",
            )
        return sorted(
            entries,
            key=lambda e: (e["score"], e["user_id"].encode("utf-8", "surrogatepass")),
            reverse=self.order == "desc",
        )

    def _better(self, a: float, b: float) -> bool:
        return a > b if self.order == "desc" else a < b

    def _strictly_better_bound(self, score: float) -> tuple[float, float]:
        if self.order == "desc":
            return math.nextafter(score, math.inf), math.inf
        return -math.inf, math.nextafter(score, -math.inf)

    def _worse_bound(self, score: float) -> tuple[float, float]:
        if self.order == "desc":
            return -math.inf, math.nextafter(score, -math.inf)
        return math.nextafter(score, math.inf), math.inf

    def _rank(self, better: int, distinct_better: int, position: int) -> int:
        if self.ties == "competition":
            return better + 1
        if self.ties == "dense":
            return distinct_better + 1
        return position

    def _ranked(
        self, merged: list[Entry], first_position: int, better: int, distinct: int
    ) -> list[Entry]:
        """Global ranks for `merged` (consecutive entries from position `first_position`, with
        `better` entries and `distinct` scores strictly better than its first)."""
        out: list[Entry] = []
        previous: Optional[float] = None
        run_start = 0
        distinct_here = 0
        for i, entry in enumerate(merged):
            if previous is None or entry["score"] != previous:
                if previous is not None:
                    distinct_here += 1
                run_start = i
                previous = entry["score"]
            rank = self._rank(better + run_start, distinct + distinct_here, first_position + i)
            out.append({**entry, "rank": rank})
        return out

    @staticmethod
    def _centred(position: int, count: int, size: int) -> int:
        # window.lua's clamp: a full window at both ends.
        if size <= count:
            return 0
        return min(max(0, position - 1 - count // 2), size - count)

    # -- the algorithms behind the reads (steps for the methods' plans) -----------------------

    def _better_scores(self, score: float) -> Plan[set[float]]:
        """The distinct scores strictly better than `score`, over every shard (every such
        entry read, PAGE per shard per round trip: O(entries better))."""
        low, high = self._strictly_better_bound(score)
        seen: set[float] = set()
        offsets = [0] * self.shards
        active = list(range(self.shards))
        while active:
            pages = yield [
                self._boards[i].get_by_score(low, high, offset=offsets[i], limit=PAGE)
                for i in active
            ]
            still = []
            for i, page in zip(active, pages):
                seen.update(e["score"] for e in page)
                offsets[i] += len(page)
                if len(page) == PAGE:
                    still.append(i)
            active = still
        return seen

    def _distinct_better(self, score: float) -> Plan[int]:
        """How many distinct scores are strictly better than `score`, over every shard."""
        return len((yield from self._better_scores(score)))

    def _position(
        self, user_id: str, sizes: bool = False
    ) -> Plan[Optional[tuple[Entry, int, int, int, int]]]:
        """(entry, position, better, ties, size): the user's shard entry, its 1-based position
        in Redis's order over every shard (with tie-break columns, the (score, columns, id)
        order), the entries strictly better and those tied (itself included), and with
        ``sizes`` the board's size (a ZCARD per shard in the same batch; else 0); None if
        absent."""
        entry: Optional[Entry] = yield self._board_of(user_id).get_user_entry(user_id)
        if entry is None:
            return None
        score = entry["score"]
        low, high = self._strictly_better_bound(score)
        step = 3 if sizes else 2
        replies = yield [
            op
            for board in self._boards
            for op in (
                (board.count_by_score(low, high), board.count_by_score(score, score))
                + ((board.get_size(),) if sizes else ())
            )
        ]
        better: int = sum(replies[0::step])
        tied = list(replies[1::step])
        size: int = sum(replies[2::step]) if sizes else 0
        if sum(tied) == 1:
            return entry, better + 1, better, 1, size
        # Ties: count those before the user in member order (their entries are read; with
        # columns the member is the columns' key and the id, as the shards order it).
        name = self._member_key(entry)
        tied_shards = [i for i in range(self.shards) if tied[i]]
        lists = yield [
            self._boards[i].get_by_score(score, score, limit=tied[i]) for i in tied_shards
        ]
        before = 0
        for entries in lists:
            for e in entries:
                other = self._member_key(e)
                if (other > name) if self.order == "desc" else (other < name):
                    before += 1
        return entry, better + before + 1, better, sum(tied), size

    def _window(self, start: int, count: int) -> Plan[list[Entry]]:
        """The entries at 0-based positions [start, start + count), ranked."""
        end = start + count
        if count <= 0:
            return []
        if end <= SHALLOW:
            tops = yield [board.get_top(end) for board in self._boards]
            merged = self._sort([e for top in tops for e in top])
            return self._ranked(merged, 1, 0, 0)[start:end]
        # The score at position `start`: bisection on the doubles, all shards per step.
        target = start + 1
        desc = self.order == "desc"
        low, high = _ordered(-math.inf), _ordered(math.inf)
        # desc: the highest x with #(score >= x) >= target; asc: the lowest with #(<= x).
        good, bad = (low, high) if desc else (high, low)
        while abs(bad - good) > 1:
            mid = (good + bad) // 2
            x = _unordered(mid)
            counts = yield [
                board.count_by_score(x, math.inf) if desc else board.count_by_score(-math.inf, x)
                for board in self._boards
            ]
            if sum(counts) >= target:
                good = mid
            else:
                bad = mid
        pivot = _unordered(good)
        low_b, high_b = self._strictly_better_bound(pivot)
        better_counts = yield [board.count_by_score(low_b, high_b) for board in self._boards]
        better: int = sum(better_counts)
        if better >= end:
            return []  # fewer entries than `start` (the board changed meanwhile)
        lists = yield [
            board.get_by_score(-math.inf, pivot, limit=end - better)
            if desc
            else board.get_by_score(pivot, math.inf, limit=end - better)
            for board in self._boards
        ]
        merged = self._sort([e for entries in lists for e in entries])
        distinct = 0
        if self.ties == "dense":
            distinct = yield from self._distinct_better(pivot)
        ranked = self._ranked(merged, better + 1, better, distinct)
        return ranked[start - better : end - better]

    def _ranks(self, entries: list[Entry]) -> Plan[list[Entry]]:
        """`entries` (from their shards) with their ranks over every shard, in place: one
        round trip of S ZCOUNT pairs per distinct score; lexicographic ties read the tied
        entries (one more); dense reads every entry better than the worst (O(rank))."""
        scores = sorted({e["score"] for e in entries})
        if not scores:
            return entries
        replies = yield [
            op
            for score in scores
            for board in self._boards
            for op in (
                board.count_by_score(*self._strictly_better_bound(score)),
                board.count_by_score(score, score),
            )
        ]
        per_score = 2 * self.shards
        better = {}
        tied: dict[float, list[int]] = {}
        for j, score in enumerate(scores):
            block = replies[j * per_score : (j + 1) * per_score]
            better[score] = sum(block[0::2])
            tied[score] = list(block[1::2])
        before: dict[tuple[float, str], int] = {}
        if self.ties == "lexicographic":
            shared = [score for score in scores if sum(tied[score]) > 1]
            wanted = [(score, i) for score in shared for i in range(self.shards) if tied[score][i]]
            lists = yield [
                self._boards[i].get_by_score(score, score, limit=tied[score][i])
                for score, i in wanted
            ]
            names: dict[float, list[_MemberKey]] = {}
            for (score, _), listed in zip(wanted, lists):
                names.setdefault(score, []).extend(self._member_key(e) for e in listed)
            for e in entries:
                name = self._member_key(e)
                others = names.get(e["score"], [])
                if self.order == "desc":
                    before[(e["score"], e["user_id"])] = sum(1 for o in others if o > name)
                else:
                    before[(e["score"], e["user_id"])] = sum(1 for o in others if o < name)
        distinct_better: dict[float, int] = {}
        if self.ties == "dense":
            worst = scores[0] if self.order == "desc" else scores[-1]
            better_scores = yield from self._better_scores(worst)
            known = sorted(better_scores | set(scores))
            for score in scores:
                distinct_better[score] = sum(1 for x in known if self._better(x, score))
        for e in entries:
            score = e["score"]
            position = better[score] + before.get((score, e["user_id"]), 0) + 1
            e["rank"] = self._rank(better[score], distinct_better.get(score, 0), position)
        return entries

    # -- the guide's reads, over every shard ----------------------------------------------------

    @plan
    def get_size(self) -> Plan[int]:
        """How many entries the board holds, over every shard.

        Returns:
            The sum of the shards' sizes.

        Redis cost:
            One round trip: a ZCARD per shard, in one batch (one pipelined write per node,
            every node at once). O(S), S the shards.
        """
        sizes: list[int] = yield [board.get_size() for board in self._boards]
        return sum(sizes)

    @plan
    def get_top(self, count: int = 10) -> Plan[list[Entry]]:
        """The ``count`` best entries over every shard, best first, ranked as one board's.

        Args:
            count: How many, at least 1.

        Returns:
            The entries (``"rank"``, ``"user_id"``, ``"score"``, ``"metadata"``).

        Raises:
            ValueError: ``count`` below 1 (nothing is sent).

        Redis cost:
            One round trip: every shard's top ``count``, in one batch, merged.
            O(S count log N).
        """
        _check_count(count, "count")
        tops: list[list[Entry]] = yield [board.get_top(count) for board in self._boards]
        merged = self._sort([e for top in tops for e in top])[:count]
        return self._ranked(merged, 1, 0, 0)

    @plan
    def get_rank(self, user_id: str) -> Plan[Optional[int]]:
        """A user's 1-based rank over every shard, under the board's tie rule.

        Args:
            user_id: The user (a ``str``).

        Returns:
            The rank, or None if the user is not on the board.

        Redis cost:
            2 round trips: the user's entry (its shard), then a ZCOUNT pair per shard (the
            entries strictly better and those tied); ``lexicographic`` with tied scores: 3 (the
            tied entries are read); ``dense``: plus the distinct better scores, every better
            entry read, 1,000 per shard per round trip (O(rank)).
        """
        entry = yield from ShardedBase.get_user_entry.plan(self, user_id)
        return None if entry is None else entry["rank"]

    @plan
    def get_user_entry(self, user_id: str) -> Plan[Optional[Entry]]:
        """A user's entry (rank over every shard, score, metadata).

        Args:
            user_id: The user (a ``str``).

        Returns:
            The entry, or None if the user is not on the board.

        Redis cost:
            As [`get_rank`][redis_leaderboard.ShardedLeaderboard.get_rank]: 2 round trips (3 with
            lexicographic ties; dense reads every better entry).
        """
        found = yield from self._position(user_id)
        if found is None:
            return None
        entry, position, better, _, _ = found
        distinct = 0
        if self.ties == "dense":
            distinct = yield from self._distinct_better(entry["score"])
        return {**entry, "rank": self._rank(better, distinct, position)}

    @plan
    def get_around_rank(self, rank: int, count: int = 5) -> Plan[list[Entry]]:
        """``count`` entries centred on the 1-based ``rank``, the window clamped to the board as
        one board's (a full window at both ends).

        Args:
            rank: The rank at the centre, from 1.
            count: How many entries, at least 1.

        Returns:
            The entries, best first, ranked.

        Redis cost:
            A window ending within the top 1,000: 2 round trips (the size; every shard's top,
            merged). Deeper: about 64 round trips of a ZCOUNT per shard (bisection on the
            score), then one read of at most ``count`` entries per shard; ``dense`` deep
            windows also read every better entry.
        """
        _check_count(rank, "rank")
        _check_count(count, "count")
        size = yield from ShardedBase.get_size.plan(self)
        start = self._centred(rank, count, size)
        return (yield from self._window(start, min(count, size)))

    @plan
    def get_around_user(self, user_id: str, count: int = 5) -> Plan[list[Entry]]:
        """``count`` entries centred on a user's position, clamped as
        [`get_around_rank`][redis_leaderboard.ShardedLeaderboard.get_around_rank]'s.

        Args:
            user_id: The user (a ``str``).
            count: How many entries, at least 1.

        Returns:
            The entries, best first, ranked; ``[]`` if the user is not on the board.

        Redis cost:
            The user's position (2 or 3 round trips, as
            [`get_rank`][redis_leaderboard.ShardedLeaderboard.get_rank]), then as
            [`get_around_rank`][redis_leaderboard.ShardedLeaderboard.get_around_rank].
        """
        self._board_of(user_id)
        _check_count(count, "count")
        found = yield from self._position(user_id)
        if found is None:
            return []
        size = yield from ShardedBase.get_size.plan(self)
        start = self._centred(found[1], count, size)
        return (yield from self._window(start, min(count, size)))

    @plan
    def get_page(self, page: int, page_size: int = 10) -> Plan[Page]:
        """The 1-based ``page`` of ``page_size`` entries, best first, as one board's.

        Args:
            page: The page, from 1.
            page_size: Entries per page, 1 to 1,000.

        Returns:
            ``{"page", "page_size", "total_pages", "size", "entries"}``.

        Redis cost:
            As [`get_around_rank`][redis_leaderboard.ShardedLeaderboard.get_around_rank]: 2
            round trips for a page ending within the top 1,000, about 66 deeper.
        """
        _check_count(page, "page")
        _check_count(page_size, "page_size", 1, 1000)
        size = yield from ShardedBase.get_size.plan(self)
        entries = yield from self._window((page - 1) * page_size, page_size)
        return {
            "page": page,
            "page_size": page_size,
            "total_pages": -(-size // page_size),
            "size": size,
            "entries": entries,
        }

    @plan
    def clear(self) -> Plan[None]:
        """Delete every shard board and its members' metadata (each shard's clear; together,
        not one atomic step).

        Redis cost:
            One round trip: every shard's clear, in one batch (a large shard is cleared in
            pages). O(entries).
        """
        yield [board.clear() for board in self._boards]

    @plan
    def convert_layout(self, *, page: int = 1000) -> Plan[int]:
        """Convert every shard from the guide's layout to the compact one, in place (each as
        [`RedisLeaderboard.convert_layout`][redis_leaderboard.RedisLeaderboard.convert_layout]
        does; together, not one atomic step): call it on a board opened with
        ``layout="compact"``. Returns how many players' metadata moved in all.

        Raises:
            ValueError: A board object of the guide's layout, or a ``page`` out of range.
            OptionsMismatch: A shard records other options than this object's.

        Redis cost:
            Every shard's conversion, in one batch (a page of about ``page`` players per round
            trip a shard). O(entries).
        """
        operations = [board.convert_layout(page) for board in self._boards]  # validated first
        moved: list[int] = yield operations
        return sum(moved)

    @plan
    def list_all(self) -> Plan[list[Entry]]:
        """Every entry over every shard, best first, ranked.

        Returns:
            The entries.

        Redis cost:
            One round trip: every shard's list_all (paged on the server as one board's), in one
            batch, then merged. O(entries log entries) on the client.
        """
        lists: list[list[Entry]] = yield [board.list_all() for board in self._boards]
        return self._ranked(self._sort([e for entries in lists for e in entries]), 1, 0, 0)

    # -- the queries ---------------------------------------------------------------------------

    @plan
    def get_entries(self, user_ids: Iterable[str]) -> Plan[list[Optional[Entry]]]:
        """One item per id, in the order given: its entry ranked over every shard, or None.

        Args:
            user_ids: At most 1,000 ids (not a ``str``).

        Returns:
            An entry or None per id.

        Raises:
            ValueError: More than 1,000 ids.
            TypeError: A ``str`` instead of a collection of ids, or an id that is neither a
                ``str`` nor an ``int``.

        Redis cost:
            2 round trips: each shard's get_entries for its ids, then a ZCOUNT pair per shard
            per distinct score; +1 for lexicographic tied scores; ``dense``: every entry better
            than the worst found is read.
        """
        if isinstance(user_ids, str):
            raise TypeError("user_ids must be an iterable of str, not a str")
        ids = list(user_ids)
        for user_id in ids:
            self._board_of(user_id)
        if len(ids) > MAX_ENTRIES_ASKED:
            raise ValueError(f"get_entries takes at most {MAX_ENTRIES_ASKED} user ids")
        by_shard: dict[int, list[int]] = {}
        for position, user_id in enumerate(ids):
            by_shard.setdefault(shard_of(user_id, self.shards), []).append(position)
        shards = sorted(by_shard)
        found = yield [self._boards[i].get_entries([ids[p] for p in by_shard[i]]) for i in shards]
        out: list[Optional[Entry]] = [None] * len(ids)
        for i, entries in zip(shards, found):
            for position, entry in zip(by_shard[i], entries):
                out[position] = None if entry is None else entry.copy()
        present = [e for e in out if e is not None]
        yield from self._ranks(present)
        return out

    def _check_range(self, min_score: Any, max_score: Any, offset: Any, limit: Any) -> None:
        """Validated as one board's (before anything is sent)."""
        self._boards[0].get_by_score(min_score, max_score, offset=offset, limit=max(limit, 1))

    @plan
    def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> Plan[list[Entry]]:
        """The entries with ``min_score <= score <= max_score``, best first, ranked, skipping
        ``offset`` and returning at most ``limit``, as one board's.

        Args:
            min_score: The lowest score (``float("-inf")`` allowed).
            max_score: The highest score (``float("inf")`` allowed); below ``min_score``: ``[]``.
            offset: Entries of the range skipped.
            limit: At most this many entries.

        Returns:
            The entries.

        Redis cost:
            One round trip: each shard's first ``offset + limit`` entries of the range and its
            count of better entries, in one batch: O(S (offset + limit)) entries read; ``dense``
            also reads every better entry.
        """
        self._check_range(min_score, max_score, offset, limit)
        if limit == 0 or min_score > max_score:
            return []
        top = max_score if self.order == "desc" else min_score
        low, high = self._strictly_better_bound(top)
        replies = yield [
            op
            for board in self._boards
            for op in (
                board.get_by_score(min_score, max_score, offset=0, limit=offset + limit),
                board.count_by_score(low, high),
            )
        ]
        merged = self._sort([e for entries in replies[0::2] for e in entries])
        if len(merged) <= offset:
            return []
        before: int = sum(replies[1::2])
        first = merged[0]["score"]
        # Entries of the range better than its first entry: none (it is the best there).
        distinct = 0
        if self.ties == "dense":
            distinct = yield from self._distinct_better(first)
        ranked = self._ranked(merged, before + 1, before, distinct)
        return ranked[offset : offset + limit]

    @plan
    def count_by_score(self, min_score: float, max_score: float) -> Plan[int]:
        """How many entries have ``min_score <= score <= max_score``.

        Args:
            min_score: The lowest score.
            max_score: The highest score.

        Returns:
            The count over every shard.

        Redis cost:
            One round trip: a ZCOUNT per shard, in one batch. O(S log N).
        """
        self._check_range(min_score, max_score, 0, 0)
        counts: list[int] = yield [
            board.count_by_score(min_score, max_score) for board in self._boards
        ]
        return sum(counts)

    @plan
    def rank_for_score(self, score: float) -> Plan[int]:
        """The rank an entry with ``score`` would have now: 1 + the entries (``dense``: the
        distinct scores) strictly better, as one board's.

        Args:
            score: The score.

        Returns:
            The rank.

        Redis cost:
            One round trip: a ZCOUNT per shard, in one batch; ``dense`` reads every better
            entry instead (O(rank)).
        """
        self._check_range(score, score, 0, 0)
        if self.ties == "dense":
            distinct = yield from self._distinct_better(score)
            return distinct + 1
        better: list[int] = yield [
            board.count_by_score(*self._strictly_better_bound(score)) for board in self._boards
        ]
        return sum(better) + 1

    @plan
    def get_percentile(self, user_id: str) -> Plan[Optional[float]]:
        """The share of the other entries whose score is strictly worse than the user's, 0.0 to
        100.0 (exact, as one board's); with tie-break columns, worse in the (score, columns)
        order, as one board's.

        Args:
            user_id: The user (a ``str``).

        Returns:
            The percentile, or None if the user is not on the board.

        Redis cost:
            2 round trips: the user's entry, then a ZCOUNT and a ZCARD per shard. O(S log N).
            With tie-break columns: the user's entry, then a ZCOUNT pair and a ZCARD per shard,
            and with tied scores a third (the tied entries read, O(ties)), as
            [`get_rank`][redis_leaderboard.ShardedLeaderboard.get_rank].
        """
        if self.tiebreak:
            found = yield from self._position(user_id, sizes=True)
            if found is None:
                return None
            position, size = found[1], found[4]
            return 100.0 if size <= 1 else 100.0 * (size - position) / (size - 1)
        entry: Optional[Entry] = yield self._board_of(user_id).get_user_entry(user_id)
        if entry is None:
            return None
        replies: list[int] = yield [
            op
            for board in self._boards
            for op in (board.count_by_score(*self._worse_bound(entry["score"])), board.get_size())
        ]
        worse, size = sum(replies[0::2]), sum(replies[1::2])
        if size <= 1:
            return 100.0
        return 100.0 * worse / (size - 1)

    @plan
    def score_at_percentile(self, p: float) -> Plan[Optional[float]]:
        """The nearest-rank score at percentile ``p``, as one board's.

        Args:
            p: The percentile, 0 to 100.

        Returns:
            The score, or None on an empty board.

        Redis cost:
            The size (one round trip), then the window of one entry at that position, as
            [`get_page`][redis_leaderboard.ShardedLeaderboard.get_page] (a deep one by
            bisection: about 66 round trips).
        """
        self._boards[0].score_at_percentile(p)  # validates p, sends nothing
        size = yield from ShardedBase.get_size.plan(self)
        if size == 0:
            return None
        from_worst = max(1, math.ceil(p / 100 * size))
        window = yield from self._window(size - from_worst, 1)
        return window[0]["score"] if window else None

    @plan
    def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> Plan[list[HistogramBin]]:
        """The score distribution in ``bins`` equal-width bins, as one board's (exact).

        Args:
            bins: How many bins, 1 to 1,000.
            min_score: The first bin's lower edge (default: the board's lowest score).
            max_score: The last bin's upper edge (default: the board's highest score).

        Returns:
            ``{"min", "max", "count"}`` per bin, in ascending score order; ``[]`` on an empty
            board.

        Redis cost:
            One round trip with both bounds given (every shard's histogram over the same edges,
            summed), else 2 (each shard's lowest and highest score first). O(S bins log N).
        """
        self._boards[0].get_histogram(bins, min_score=min_score, max_score=max_score)  # checks
        low, high = min_score, max_score
        if low is None or high is None:
            one_bin: list[list[HistogramBin]] = yield [
                board.get_histogram(1) for board in self._boards
            ]
            spans = [span[0] for span in one_bin if span]
            if not spans:
                return []
            if low is None:
                low = min(span["min"] for span in spans)
                if high is not None and low > high:
                    low = high
            if high is None:
                high = max(span["max"] for span in spans)
                if high < low:
                    high = low
        histograms: list[list[HistogramBin]] = yield [
            board.get_histogram(bins, min_score=low, max_score=high) for board in self._boards
        ]
        histograms = [h for h in histograms if h]
        if not histograms:
            return []
        out: list[HistogramBin] = [{**b} for b in histograms[0]]
        for other in histograms[1:]:
            for total, b in zip(out, other):
                total["count"] += b["count"]
        return out

    # -- size limits ---------------------------------------------------------------------------

    @plan
    def set_max_entries(self, max_entries: Optional[int]) -> Plan[list[str]]:
        """Refused: a sharded board's limit is per shard; see
        [`set_shard_max_entries`][redis_leaderboard.ShardedLeaderboard.set_shard_max_entries].

        Raises:
            NotImplementedError: Always, saying why (nothing is sent).

        Redis cost:
            None: nothing is sent.
        """
        raise NotImplementedError(  # at the call: no step to run
            "a sharded board has no global max_entries: each write trims its own shard in its "
            "own script, which cannot see the other shards (they are in other slots, on other "
            "nodes), so a global limit could only be enforced by a separate, non-atomic pass "
            "that races every write; use set_shard_max_entries(n) to change every shard's "
            "limit (about n * shards entries in all)"
        )

    @plan
    def set_shard_max_entries(self, max_entries: Optional[int]) -> Plan[list[str]]:
        """Set every shard's size limit to ``max_entries`` and trim each shard to it.

        Args:
            max_entries: Each shard's limit (about ``max_entries * shards`` entries in all), or
                None for no limit.

        Returns:
            The trimmed ids, shard after shard (each shard's worst first).

        Redis cost:
            One round trip: every shard's own atomic trim, in one batch. O(entries trimmed).
        """
        self._boards[0].set_max_entries(max_entries)  # validates, sends nothing
        results: list[list[str]] = yield [
            board.set_max_entries(max_entries) for board in self._boards
        ]
        self.max_entries = self._boards[0].max_entries
        return [user for ids in results for user in ids]

    # -- events: refused -------------------------------------------------------------------------

    def _refuse_events(self) -> NotImplementedError:
        return NotImplementedError(
            f"events are not supported on a {self._display_name}: each shard would append to its "
            "own stream ('{key:0}:events', '{key:1}:events', ...), in its own slot, often on "
            "another node, so there is no one stream to read (XREAD cannot span slots on a "
            "cluster) and no order between the shards' events; use a RedisLeaderboard (one slot) "
            "with events=True"
        )

    def events(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a sharded board has no one stream of change events (each shard's would be in
        its own slot, and XREAD cannot span slots on a cluster).

        Raises:
            NotImplementedError: Always, saying why.
        """
        raise self._refuse_events()

    # -- bulk load -------------------------------------------------------------------------------

    @plan
    def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> Plan[ImportSummary]:
        """Bulk-load entries, as
        [`RedisLeaderboard.upsert_many`][redis_leaderboard.RedisLeaderboard.upsert_many] per shard.

        The entries are read in batches of 50,000, grouped by shard, and every shard's group of
        a batch is loaded at once (each by that shard's upsert_many: pipelined chunks, then its
        trim; a thread per shard on the blocking client, a task per shard on asyncio).

        Args:
            entries: ``(user_id, score)``, ``(user_id, score, metadata)`` or ``(user_id, score,
                metadata_or_None, submission_id)`` tuples, read lazily.
            chunk_size: Entries per chunk, at least 1.
            progress: Called with the total written so far, after each chunk.
            retries: How many times a chunk whose entries all carry ids is resent after a lost
                reply.

        Returns:
            ``{"written", "trimmed", "trimmed_user_ids"}`` summed over the shards (at most
            1,000 ids listed), and ``"duplicates"`` if entries were skipped as applied before.

        Raises:
            ValueError: A bad entry, naming its position in ``entries`` (``"entry 41: ..."``).
                The batches before it, and the other shards' groups of its batch, may have been
                written; the call returns once nothing is being written any more.
            TypeError: A bad ``chunk_size`` or ``progress`` (before anything is read), or an
                entry that is not a tuple or whose user id is neither a ``str`` nor an
                ``int``.

        Redis cost:
            Per shard with entries in a batch, what a plain board's upsert_many costs for them
            (chunks of ``chunk_size``, 4 in flight), every shard at once; then each shard's
            trim.
        """
        check_bulk_arguments(chunk_size, progress)
        boards = [
            self._board_class(self.redis, key=b.key, **self._shard_board_kwargs())
            for b in self._boards
        ]
        lock = threading.Lock()  # the blocking driver reports from a thread per shard
        written = 0

        def on_chunk() -> Callable[[int], None]:
            before = 0

            def report(total: int) -> None:
                nonlocal written, before
                with lock:
                    written += total - before
                    before = total
                    if progress is not None:
                        progress(written)

            return report

        parts: list[ImportSummary] = []
        for groups, positions in self._batches(entries):
            done: list[ImportSummary] = yield Concurrent(
                [
                    self._load(boards[i], groups[i], positions[i], chunk_size, on_chunk(), retries)
                    for i in sorted(groups)
                ]
            )
            parts += done
        return self._summary(parts)

    def _load(
        self,
        board: LeaderboardBase[Any],
        group: list[BulkEntry],
        positions: list[int],
        chunk_size: int,
        progress: Callable[[int], None],
        retries: int,
    ) -> Plan[ImportSummary]:
        """One shard's group, by its board's upsert_many; an "entry N: ..." error renumbered
        with N the entry's position in the whole iterable."""
        try:
            return (
                yield from LeaderboardBase.upsert_many.plan(
                    board, group, chunk_size=chunk_size, progress=progress, retries=retries
                )
            )
        except (ValueError, TypeError) as error:
            text = str(error)
            match = _ENTRY_INDEX.match(text)
            if match and int(match.group(1)) < len(positions):
                fixed = f"entry {positions[int(match.group(1))]}:" + text[match.end() :]
                raise type(error)(fixed) from None
            raise error from None

    def _batches(
        self, entries: Iterable[BulkEntry]
    ) -> Iterator[tuple[dict[int, list[BulkEntry]], dict[int, list[int]]]]:
        """Batches of BULK_BATCH entries grouped by shard, with each entry's position in the
        whole iterable (for error messages). An entry whose user id cannot be routed raises
        here, naming its position, before its batch is sent."""
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Iterable):
            raise TypeError(f"entries must be an iterable of tuples, not {type(entries).__name__}")
        groups: dict[int, list[BulkEntry]] = {}
        positions: dict[int, list[int]] = {}
        count = 0
        for position, entry in enumerate(entries):
            if not isinstance(entry, (tuple, list)) or not entry:
                raise TypeError(f"entry {position}: an entry is a tuple (user_id, score, ...)")
            try:
                index = shard_of(entry[0], self.shards)
            except TypeError as exc:
                raise TypeError(f"entry {position}: {exc}") from None
            groups.setdefault(index, []).append(entry)
            positions.setdefault(index, []).append(position)
            count += 1
            if count == BULK_BATCH:
                yield groups, positions
                groups, positions, count = {}, {}, 0
        if groups:
            yield groups, positions

    @staticmethod
    def _summary(parts: list[ImportSummary]) -> ImportSummary:
        summary: ImportSummary = {
            "written": sum(p["written"] for p in parts),
            "trimmed": sum(p["trimmed"] for p in parts),
            "trimmed_user_ids": [u for p in parts for u in p["trimmed_user_ids"]][
                :MAX_REPORTED_TRIMMED
            ],
        }
        duplicates = sum(p.get("duplicates", 0) for p in parts)
        if duplicates:
            summary["duplicates"] = duplicates
        return summary

    def _shard_board_kwargs(self) -> dict[str, Any]:
        return {
            "max_entries": self.max_entries,
            "order": self.order,
            "ties": self.ties,
            "submission_ttl": self.submission_ttl,
            "rate_limit": self.rate_limit,
            "score_range": self.score_range,
            "max_increment": self.max_increment,
            "tiebreak": self.tiebreak,
        }
