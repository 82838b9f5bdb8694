"""Sharded boards: one leaderboard spread over ``shards`` boards (``{key:0}``, ``{key:1}``, ...),
each in its own cluster slot, so a board can outgrow one node. Every method is written once for
both APIs (``redis_leaderboard._drive``); the public ``ShardedLeaderboard`` classes add a driver
and their client types.

Each user lives in one shard, chosen by ``zlib.crc32(user_id) % shards`` (stable across
processes, machines and versions; changing ``shards`` moves users, so a board keeps its count).
Writes go to the user's shard in one round trip and are atomic there. Reads that need every
shard send one request per shard in one batch (one pipelined write per node, every node at
once), then merge. The costs, per method, are in the README ("Sharded boards") and the
docstrings. ``ties="first"`` is refused: each shard numbers achievements on its own, so their
order across shards is unknown.
"""

from __future__ import annotations

import math
import re
import struct
import threading
import zlib
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional

from .. import _core
from .._drive import Concurrent, Plan, Runner, Sent, one_trip, plan
from .._types import (
    BulkEntry,
    Entry,
    HistogramBin,
    ImportSummary,
    Order,
    Page,
    ShardedSubmitResult,
    ShardedWriteResult,
    Ties,
    WriteMode,
)
from ..options import public_name
from .plain import DEFAULT_CHUNK_SIZE, Leaderboard, check_bulk_arguments

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


def shard_of(user_id: str, shards: int) -> int:
    """The shard of ``user_id``: ``crc32(user_id as UTF-8) % shards``."""
    return zlib.crc32(user_id.encode("utf-8", "surrogatepass")) % shards


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
    cluster_client_class: Any
    display_name: str
    board_class: type[Leaderboard[Any]]
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
        # Guards: a user lives in one shard, so each shard board's submission ids and rate
        # limit are exactly the user's (a write with an id goes to that shard, where its result
        # is kept; the shard's script counts the user's writes).
        self._boards = [
            _core.Board(
                f"{{{key}:{i}}}",
                max_entries,
                order=order,
                ties=ties,
                submission_ttl=submission_ttl,
                rate_limit=rate_limit,
            )
            for i in range(shards)
        ]
        expected = self.cluster_client_class
        if not hasattr(redis_client, "run_many") or (
            getattr(type(redis_client), "is_cluster", False)
            and not isinstance(redis_client, expected)
        ):  # not a cluster client, or one of the other API (blocking for asyncio, or the reverse)
            raise TypeError(
                f"{self.display_name} runs on a {public_name(expected)}, "
                f"not a {public_name(type(redis_client))}"
            )
        self.redis = redis_client
        self._run = redis_client.run
        self.key = key
        self.shards = shards
        self.order = self._boards[0].order
        self.ties = self._boards[0].ties
        self.max_entries = self._boards[0].max_entries
        self.submission_ttl = self._boards[0].submission_ttl
        self.rate_limit = self._boards[0].rate_limit

    def __repr__(self) -> str:
        return (
            f"{self.display_name}(key={self.key!r}, shards={self.shards}, "
            f"order={self.order!r}, ties={self.ties!r})"
        )

    def shard_key(self, user_id: str) -> str:
        """The key of ``user_id``'s shard board."""
        return self._board_of(user_id).key

    def _board_of(self, user_id: str) -> _core.Board:
        if not isinstance(user_id, str):
            raise TypeError(f"user_id must be a str, not {type(user_id).__name__}")
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
        """As :meth:`RedisLeaderboard.upsert_user`, on the user's shard (one round trip)."""
        result = yield self._board_of(user_id).upsert_user(user_id, score, metadata)
        written: ShardedWriteResult = self._written(user_id, result)
        return written

    @plan
    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[ShardedWriteResult]:
        """As :meth:`RedisLeaderboard.increment_score`, on the user's shard."""
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
    ) -> Plan[ShardedSubmitResult]:
        """As :meth:`RedisLeaderboard.submit`, on the user's shard (one round trip).

        ``submission_id`` and ``retries`` as :meth:`RedisLeaderboard.submit`: the id's result
        is kept on the user's shard (``f"{shard key}:submission:..."``, for
        ``submission_ttl``), where every resend of the same user's write goes, so the write
        applies once; a write whose reply was lost is resent at most ``retries`` times (to the
        node serving the shard then), then raises ``ConnectionError``."""
        result = yield self._board_of(user_id).submit(
            user_id, score, metadata, mode=mode, submission_id=submission_id, retries=retries
        )
        written: ShardedSubmitResult = self._written(user_id, result)
        return written

    @one_trip
    def delete_user(self, user_id: str) -> Sent[bool]:
        """Remove ``user_id`` from its shard; True if it was there."""
        return self._run(self._board_of(user_id).delete_user(user_id))

    @one_trip
    def get_user_metadata(self, user_id: str) -> Sent[dict[str, str]]:
        """The user's metadata hash (its shard's)."""
        return self._run(self._board_of(user_id).get_user_metadata(user_id))

    # -- ordering ------------------------------------------------------------------------------

    def _sort(self, entries: list[Entry]) -> list[Entry]:
        """Best first, ties in Redis's member order (bytes; reversed for desc), as one board."""
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

    def _position(self, user_id: str) -> Plan[Optional[tuple[Entry, int, int, int]]]:
        """(entry, position, better, ties): the user's shard entry, its 1-based position in
        Redis's order over every shard, the entries strictly better and those tied (itself
        included); None if absent."""
        entry: Optional[Entry] = yield self._board_of(user_id).get_user_entry(user_id)
        if entry is None:
            return None
        score = entry["score"]
        low, high = self._strictly_better_bound(score)
        replies = yield [
            op
            for board in self._boards
            for op in (board.count_by_score(low, high), board.count_by_score(score, score))
        ]
        better: int = sum(replies[0::2])
        tied = list(replies[1::2])
        if sum(tied) == 1:
            return entry, better + 1, better, 1
        # Ties: count those before the user in member order (their entries are read).
        name = user_id.encode("utf-8", "surrogatepass")
        tied_shards = [i for i in range(self.shards) if tied[i]]
        lists = yield [
            self._boards[i].get_by_score(score, score, limit=tied[i]) for i in tied_shards
        ]
        before = 0
        for entries in lists:
            for e in entries:
                other = e["user_id"].encode("utf-8", "surrogatepass")
                if (other > name) if self.order == "desc" else (other < name):
                    before += 1
        return entry, better + before + 1, better, sum(tied)

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
            names: dict[float, list[bytes]] = {}
            for (score, _), listed in zip(wanted, lists):
                names.setdefault(score, []).extend(
                    e["user_id"].encode("utf-8", "surrogatepass") for e in listed
                )
            for e in entries:
                name = e["user_id"].encode("utf-8", "surrogatepass")
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
        """Entries over every shard (one round trip)."""
        sizes: list[int] = yield [board.get_size() for board in self._boards]
        return sum(sizes)

    @plan
    def get_top(self, count: int = 10) -> Plan[list[Entry]]:
        """The ``count`` best entries over every shard, ranked (one round trip)."""
        _check_count(count, "count")
        tops: list[list[Entry]] = yield [board.get_top(count) for board in self._boards]
        merged = self._sort([e for top in tops for e in top])[:count]
        return self._ranked(merged, 1, 0, 0)

    @plan
    def get_rank(self, user_id: str) -> Plan[Optional[int]]:
        """The user's rank over every shard under the board's tie rule; None if absent."""
        found = yield from self._position(user_id)
        if found is None:
            return None
        entry, position, better, _ = found
        distinct = 0
        if self.ties == "dense":
            distinct = yield from self._distinct_better(entry["score"])
        return self._rank(better, distinct, position)

    @plan
    def get_user_entry(self, user_id: str) -> Plan[Optional[Entry]]:
        """The user's entry with its rank over every shard; None if absent."""
        found = yield from self._position(user_id)
        if found is None:
            return None
        entry, position, better, _ = found
        distinct = 0
        if self.ties == "dense":
            distinct = yield from self._distinct_better(entry["score"])
        return {**entry, "rank": self._rank(better, distinct, position)}

    @plan
    def get_around_rank(self, rank: int, count: int = 5) -> Plan[list[Entry]]:
        """``count`` entries centred on ``rank``, clamped to the board as one board's."""
        _check_count(rank, "rank")
        _check_count(count, "count")
        size = yield from ShardedBase.get_size.plan(self)
        start = self._centred(rank, count, size)
        return (yield from self._window(start, min(count, size)))

    @plan
    def get_around_user(self, user_id: str, count: int = 5) -> Plan[list[Entry]]:
        """``count`` entries centred on the user's position; ``[]`` if absent."""
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
        """The 1-based ``page`` of ``page_size`` (1 to 1,000) entries, as one board's."""
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
        """Clear every shard (each shard's clear; not one atomic step)."""
        yield [board.clear() for board in self._boards]

    @plan
    def list_all(self) -> Plan[list[Entry]]:
        """Every entry over every shard, best first, ranked (one round trip: each shard's
        list_all, paged on the server side as one board's, then merged)."""
        lists: list[list[Entry]] = yield [board.list_all() for board in self._boards]
        return self._ranked(self._sort([e for entries in lists for e in entries]), 1, 0, 0)

    # -- the queries ---------------------------------------------------------------------------

    @plan
    def get_entries(self, user_ids: Iterable[str]) -> Plan[list[Optional[Entry]]]:
        """One item per id (at most 1,000), in the order given: its entry ranked over every
        shard, or None. 2 round trips (each shard's get_entries for its ids; one ZCOUNT pair
        per shard per distinct score), +1 for lexicographic tied scores, dense: every entry
        better than the worst read."""
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
        """As one board's: entries with ``min_score <= score <= max_score``, best first,
        ranked. One round trip (each shard's first ``offset + limit`` of the range and its
        count of better entries): O(S (offset + limit)) read; dense adds the better scores."""
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
        """Entries with ``min_score <= score <= max_score``: S ZCOUNTs summed, one round trip."""
        self._check_range(min_score, max_score, 0, 0)
        counts: list[int] = yield [
            board.count_by_score(min_score, max_score) for board in self._boards
        ]
        return sum(counts)

    @plan
    def rank_for_score(self, score: float) -> Plan[int]:
        """As one board's: 1 + the entries (dense: distinct scores) strictly better. One
        round trip of S ZCOUNTs; dense reads every better entry."""
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
        """As one board's: the share of the other entries strictly worse; None if absent.
        2 round trips (the entry; S ZCOUNT + ZCARD pairs): exact."""
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
        """As one board's (nearest rank). The size, then the window of one entry at that
        position (a deep one by bisection, as get_page)."""
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
        """As one board's, exact: every shard's histogram over the same edges, summed. 1 round
        trip with both bounds given, else 2 (each shard's lowest and highest first)."""
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
        """Refused (NotImplementedError): a sharded board's limit is per shard (see
        :meth:`set_shard_max_entries`)."""
        raise NotImplementedError(  # at the call: no step to run
            "a sharded board has no global max_entries: each write trims its own shard in its "
            "own script, which cannot see the other shards (they are in other slots, on other "
            "nodes), so a global limit could only be enforced by a separate, non-atomic pass "
            "that races every write; use set_shard_max_entries(n) to change every shard's "
            "limit (about n * shards entries in all)"
        )

    @plan
    def set_shard_max_entries(self, max_entries: Optional[int]) -> Plan[list[str]]:
        """Every shard's limit set to ``max_entries`` and trimmed to it (one round trip, each
        shard's own atomic trim); the trimmed ids, shard after shard."""
        self._boards[0].set_max_entries(max_entries)  # validates, sends nothing
        results: list[list[str]] = yield [
            board.set_max_entries(max_entries) for board in self._boards
        ]
        self.max_entries = self._boards[0].max_entries
        return [user for ids in results for user in ids]

    # -- events: refused -------------------------------------------------------------------------

    def _refuse_events(self) -> NotImplementedError:
        return NotImplementedError(
            f"events are not supported on a {self.display_name}: each shard would append to its "
            "own stream ('{key:0}:events', '{key:1}:events', ...), in its own slot, often on "
            "another node, so there is no one stream to read (XREAD cannot span slots on a "
            "cluster) and no order between the shards' events; use a RedisLeaderboard (one slot) "
            "with events=True"
        )

    def events(self, *args: Any, **kwargs: Any) -> Any:
        """Refused (``NotImplementedError``, saying why): a sharded board has no one stream of
        change events."""
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
        """As one board's, per shard: the entries are read in batches of 50,000, grouped by
        shard, and every shard's group loaded at once (each running that shard's upsert_many:
        pipelined chunks, then its trim; a thread per shard on the blocking client, a task per
        shard on asyncio). ``progress`` gets the total written so far. A bad entry raises
        naming its position in ``entries``; the batches before it, and the other shards' groups
        of its batch, may have been written (the call returns once none is being written)."""
        check_bulk_arguments(chunk_size, progress)
        boards = [
            self.board_class(self.redis, key=b.key, **self._shard_board_kwargs())
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
        board: Leaderboard[Any],
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
                yield from Leaderboard.upsert_many.plan(
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
            user_id = entry[0]
            if not isinstance(user_id, str):
                raise TypeError(
                    f"entry {position}: user_id must be a str, not {type(user_id).__name__}"
                )
            index = shard_of(user_id, self.shards)
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
        }
