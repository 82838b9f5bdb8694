"""Sharded boards: one leaderboard spread over ``shards`` boards (``{key:0}``, ``{key:1}``, ...),
each in its own cluster slot, so a board can outgrow one node.

Each user lives in one shard, chosen by ``zlib.crc32(user_id) % shards`` (stable across
processes, machines and versions; changing ``shards`` moves users, so a board keeps its count).
Writes go to the user's shard in one round trip and are atomic there. Reads that need every
shard send one request per shard in one batch (one pipelined write per node, every node at
once), then merge. The costs, per method, are in the README ("Sharded boards") and the
docstrings. ``ties="first"`` is refused: each shard numbers achievements on its own, so their
order across shards is unknown.

Every algorithm below is a generator that yields the operations of one round trip and receives
their results: the sync and the asyncio classes only run them (``_run_sync``, ``_run_async``).
"""

from __future__ import annotations

import asyncio
import math
import re
import struct
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Generator, Iterable, Iterator, Mapping, Optional

from . import _core
from ._types import (
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
from .boards.plain import DEFAULT_CHUNK_SIZE, check_bulk_arguments
from .options import public_name

__all__ = ["AsyncShardedLeaderboard", "ShardedLeaderboard", "shard_of"]

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

Plan = Generator["list[_core.Operation[Any]]", list[Any], Any]  # generic in the stub only


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


class ShardedBase:
    """The shard boards, the routing and the read algorithms (no I/O)."""

    display_name = "ShardedLeaderboard"

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
        expected = self._cluster_client_class()
        if not hasattr(redis_client, "run_many") or (
            getattr(type(redis_client), "is_cluster", False)
            and not isinstance(redis_client, expected)
        ):  # not a cluster client, or one of the other API (blocking for asyncio, or the reverse)
            raise TypeError(
                f"{self.display_name} runs on a {public_name(expected)}, "
                f"not a {public_name(type(redis_client))}"
            )
        self.redis = redis_client
        self.key = key
        self.shards = shards
        self.order = self._boards[0].order
        self.ties = self._boards[0].ties
        self.max_entries = self._boards[0].max_entries
        self.submission_ttl = self._boards[0].submission_ttl
        self.rate_limit = self._boards[0].rate_limit

    @staticmethod
    def _cluster_client_class() -> type:
        """The cluster client this class runs on (the asyncio class: the asyncio one)."""
        return _core.ClusterClient

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

    # ---- ordering ----------------------------------------------------------------------------

    def _sort(self, entries: list[Entry]) -> list[Entry]:
        """Best first, ties in Redis's member order (bytes; reversed for desc), as one board."""
        return sorted(
            entries,
            key=lambda e: (e["score"], e["user_id"].encode("utf-8", "surrogatepass")),
            reverse=self.order == "desc",
        )

    def _strictly_better_bound(self, score: float) -> tuple[float, float]:
        if self.order == "desc":
            return math.nextafter(score, math.inf), math.inf
        return -math.inf, math.nextafter(score, -math.inf)

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

    # ---- plans -------------------------------------------------------------------------------

    def _plan_write(self, method: str, user_id: str, *args: Any, **kwargs: Any) -> Plan:
        index = shard_of(user_id, self.shards) if isinstance(user_id, str) else 0
        board = self._board_of(user_id)
        (result,) = yield [getattr(board, method)(user_id, *args, **kwargs)]
        out = dict(result)
        out["shard"] = index
        if "rank" in out:  # absent when the write's own trim removed it (as the guide's)
            out["shard_rank"] = out.pop("rank")
        if "previous_rank" in out:
            out["previous_shard_rank"] = out.pop("previous_rank")
        return out

    def _plan_size(self) -> Plan:
        sizes = yield [board.get_size() for board in self._boards]
        return sum(sizes)

    def _plan_top(self, count: int) -> Plan:
        tops = yield [board.get_top(count) for board in self._boards]
        merged = self._sort([e for top in tops for e in top])[: max(count, 0)]
        return self._ranked(merged, 1, 0, 0)

    def _plan_distinct_better(self, score: float) -> Plan:
        """How many distinct scores are strictly better than `score`, over every shard: every
        such entry is read, PAGE per shard per round trip (O(entries better))."""
        seen = yield from self._plan_better_scores(score)
        return len(seen)

    def _plan_better_scores(self, score: float) -> Plan:
        """The distinct scores strictly better than `score`, over every shard (every such
        entry read, PAGE per shard per round trip)."""
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

    def _plan_position(self, user_id: str) -> Plan:
        """(entry, position, better, ties): the user's shard entry, its 1-based position in
        Redis's order over every shard, the entries strictly better and those tied (itself
        included); None if absent."""
        own = shard_of(user_id, self.shards)
        (entry,) = yield [self._boards[own].get_user_entry(user_id)]
        if entry is None:
            return None
        score = entry["score"]
        low, high = self._strictly_better_bound(score)
        replies = yield [
            op
            for board in self._boards
            for op in (board.count_by_score(low, high), board.count_by_score(score, score))
        ]
        better = sum(replies[0::2])
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

    def _plan_rank(self, user_id: str) -> Plan:
        found = yield from self._plan_position(user_id)
        if found is None:
            return None
        entry, position, better, _ = found
        distinct = 0
        if self.ties == "dense":
            distinct = yield from self._plan_distinct_better(entry["score"])
        return self._rank(better, distinct, position)

    def _plan_entry(self, user_id: str) -> Plan:
        found = yield from self._plan_position(user_id)
        if found is None:
            return None
        entry, position, better, _ = found
        distinct = 0
        if self.ties == "dense":
            distinct = yield from self._plan_distinct_better(entry["score"])
        return {**entry, "rank": self._rank(better, distinct, position)}

    def _plan_window(self, start: int, count: int) -> Plan:
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
        better = sum(better_counts)
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
            distinct = yield from self._plan_distinct_better(pivot)
        ranked = self._ranked(merged, better + 1, better, distinct)
        return ranked[start - better : end - better]

    def _plan_around_rank(self, rank: int, count: int) -> Plan:
        size = yield from self._plan_size()
        start = self._centred(rank, count, size)
        return (yield from self._plan_window(start, min(count, size)))

    @staticmethod
    def _centred(position: int, count: int, size: int) -> int:
        # window.lua's clamp: a full window at both ends.
        if size <= count:
            return 0
        return min(max(0, position - 1 - count // 2), size - count)

    def _plan_around_user(self, user_id: str, count: int) -> Plan:
        found = yield from self._plan_position(user_id)
        if found is None:
            return []
        size = yield from self._plan_size()
        start = self._centred(found[1], count, size)
        return (yield from self._plan_window(start, min(count, size)))

    def _plan_page(self, page: int, page_size: int) -> Plan:
        size = yield from self._plan_size()
        entries = yield from self._plan_window((page - 1) * page_size, page_size)
        return {
            "page": page,
            "page_size": page_size,
            "total_pages": -(-size // page_size),
            "size": size,
            "entries": entries,
        }

    def _better(self, a: float, b: float) -> bool:
        return a > b if self.order == "desc" else a < b

    def _worse_bound(self, score: float) -> tuple[float, float]:
        if self.order == "desc":
            return -math.inf, math.nextafter(score, -math.inf)
        return math.nextafter(score, math.inf), math.inf

    def _plan_list_all(self) -> Plan:
        lists = yield [board.list_all() for board in self._boards]
        return self._ranked(self._sort([e for entries in lists for e in entries]), 1, 0, 0)

    def _plan_ranks(self, entries: list[Entry]) -> Plan:
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
            better_scores = yield from self._plan_better_scores(worst)
            known = sorted(better_scores | set(scores))
            for score in scores:
                distinct_better[score] = sum(1 for x in known if self._better(x, score))
        for e in entries:
            score = e["score"]
            position = better[score] + before.get((score, e["user_id"]), 0) + 1
            e["rank"] = self._rank(better[score], distinct_better.get(score, 0), position)
        return entries

    def _plan_entries(self, user_ids: list[str]) -> Plan:
        by_shard: dict[int, list[int]] = {}
        for position, user_id in enumerate(user_ids):
            by_shard.setdefault(shard_of(user_id, self.shards), []).append(position)
        shards = sorted(by_shard)
        found = yield [
            self._boards[i].get_entries([user_ids[p] for p in by_shard[i]]) for i in shards
        ]
        out: list[Optional[Entry]] = [None] * len(user_ids)
        for i, entries in zip(shards, found):
            for position, entry in zip(by_shard[i], entries):
                out[position] = None if entry is None else entry.copy()
        present = [e for e in out if e is not None]
        yield from self._plan_ranks(present)
        return out

    def _plan_by_score(self, min_score: float, max_score: float, offset: int, limit: int) -> Plan:
        """Every shard's first offset + limit entries of the range, merged, and the entries
        strictly better than the range (one round trip); dense: plus the distinct better
        scores."""
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
        before = sum(replies[1::2])
        first = merged[0]["score"]
        # Entries of the range better than its first entry: none (it is the best there).
        distinct = 0
        if self.ties == "dense":
            distinct = yield from self._plan_distinct_better(first)
        ranked = self._ranked(merged, before + 1, before, distinct)
        return ranked[offset : offset + limit]

    def _plan_count(self, min_score: float, max_score: float) -> Plan:
        counts = yield [board.count_by_score(min_score, max_score) for board in self._boards]
        return sum(counts)

    def _plan_rank_for_score(self, score: float) -> Plan:
        if self.ties == "dense":
            distinct = yield from self._plan_distinct_better(score)
            return distinct + 1
        better = yield [
            board.count_by_score(*self._strictly_better_bound(score)) for board in self._boards
        ]
        return sum(better) + 1

    def _plan_percentile(self, user_id: str) -> Plan:
        own = shard_of(user_id, self.shards)
        (entry,) = yield [self._boards[own].get_user_entry(user_id)]
        if entry is None:
            return None
        replies = yield [
            op
            for board in self._boards
            for op in (board.count_by_score(*self._worse_bound(entry["score"])), board.get_size())
        ]
        worse, size = sum(replies[0::2]), sum(replies[1::2])
        if size <= 1:
            return 100.0
        return 100.0 * worse / (size - 1)

    def _plan_score_at_percentile(self, p: float) -> Plan:
        size = yield from self._plan_size()
        if size == 0:
            return None
        from_worst = max(1, math.ceil(p / 100 * size))
        window = yield from self._plan_window(size - from_worst, 1)
        return window[0]["score"] if window else None

    def _plan_histogram(
        self, bins: int, min_score: Optional[float], max_score: Optional[float]
    ) -> Plan:
        """Each shard's histogram over the same edges, summed: exact. Without both bounds, the
        board's lowest and highest scores first (each shard's, from a one-bin histogram)."""
        low, high = min_score, max_score
        if low is None or high is None:
            spans = yield [board.get_histogram(1) for board in self._boards]
            spans = [span[0] for span in spans if span]
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
        histograms = yield [
            board.get_histogram(bins, min_score=low, max_score=high) for board in self._boards
        ]
        histograms = [h for h in histograms if h]
        if not histograms:
            return []
        out = [dict(b) for b in histograms[0]]
        for other in histograms[1:]:
            for total, b in zip(out, other):
                total["count"] += b["count"]
        return out

    def _plan_shard_max_entries(self, max_entries: Optional[int]) -> Plan:
        results = yield [board.set_max_entries(max_entries) for board in self._boards]
        self.max_entries = self._boards[0].max_entries
        trimmed: list[str] = [user for ids in results for user in ids]
        return trimmed

    def _check_ids(self, user_ids: Iterable[str]) -> list[str]:
        if isinstance(user_ids, str):
            raise TypeError("user_ids must be an iterable of str, not a str")
        ids = list(user_ids)
        for user_id in ids:
            self._board_of(user_id)
        if len(ids) > MAX_ENTRIES_ASKED:
            raise ValueError(f"get_entries takes at most {MAX_ENTRIES_ASKED} user ids")
        return ids

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

    def _refuse_global_trim(self, max_entries: Optional[int]) -> None:
        raise NotImplementedError(
            "a sharded board has no global max_entries: each write trims its own shard in its "
            "own script, which cannot see the other shards (they are in other slots, on other "
            "nodes), so a global limit could only be enforced by a separate, non-atomic pass "
            "that races every write; use set_shard_max_entries(n) to change every shard's "
            "limit (about n * shards entries in all)"
        )

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
    def _renumbered(error: Exception, positions: list[int]) -> Exception:
        """A shard's "entry N: ..." error, N its position in the whole iterable."""
        text = str(error)
        match = _ENTRY_INDEX.match(text)
        if match and int(match.group(1)) < len(positions):
            fixed = f"entry {positions[int(match.group(1))]}:" + text[match.end() :]
            return type(error)(fixed)
        return error

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

    def _check_range(self, min_score: Any, max_score: Any, offset: Any, limit: Any) -> None:
        """Validated as one board's (before anything is sent)."""
        self._boards[0].get_by_score(min_score, max_score, offset=offset, limit=max(limit, 1))

    def _check_percentile(self, p: Any) -> None:
        self._boards[0].score_at_percentile(p)

    def _check_histogram(self, bins: Any, min_score: Any, max_score: Any) -> None:
        self._boards[0].get_histogram(bins, min_score=min_score, max_score=max_score)

    def _plan_each(self, method: str) -> Plan:
        yield [getattr(board, method)() for board in self._boards]
        return None


def _check_count(value: Any, name: str, low: int = 1, high: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low or (high is not None and value > high):
        raise ValueError(
            f"{name} must be between {low} and {high}" if high else f"{name} must be at least {low}"
        )
    return value


class ShardedLeaderboard(ShardedBase):
    """A leaderboard spread over ``shards`` shard boards ``{key:0}`` ... on a
    :class:`redis_leaderboard.ClusterClient`, for boards bigger than one node.

    ``max_entries`` is per shard (a shard trims its own lowest; None: no limit). Guards:
    ``submission_ttl`` and ``rate_limit`` as :class:`RedisLeaderboard`'s, kept by each shard
    board (a user's writes all go to its shard); ``events`` are refused
    (``NotImplementedError``: the shards' streams are in different slots).

    Round trips and server work per call (``S`` shards, ``k`` entries asked, ``N`` entries on
    a shard):

    - ``upsert_user``/``increment_score``/``submit``/``delete_user``/``get_user_metadata``: 1,
      on the user's shard (atomic there). Writes return the shard's result with
      ``"shard"`` and ``"shard_rank"`` instead of ``"rank"`` (a global rank needs every
      shard: :meth:`get_rank`).
    - ``get_size``: 1 (S ZCARDs). ``get_top(k)``: 1 (S x top k, merged): O(S k log N).
    - ``get_rank``/``get_user_entry``: 2 (the user's entry, then one ZCOUNT pair per shard);
      ``lexicographic`` with tied scores: 3 (the tied entries are read); ``dense``: plus the
      distinct better scores, every better entry read (O(rank)).
    - ``get_around_rank``/``get_around_user``/``get_page``: a window ending within the top
      1,000: 2-3 (every shard's top, merged); deeper: about 64 round trips of S ZCOUNTs
      (bisection on the score) and one read of at most ``count`` entries per shard; ``dense``
      deep windows also read every better entry.
    """

    def _run(self, plan: Plan) -> Any:
        try:
            operations = next(plan)
            while True:
                operations = plan.send(self.redis.run_many(operations))
        except StopIteration as done:
            return done.value

    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> ShardedWriteResult:
        """As :meth:`RedisLeaderboard.upsert_user`, on the user's shard (one round trip)."""
        result: ShardedWriteResult = self._run(
            self._plan_write("upsert_user", user_id, score, metadata)
        )
        return result

    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> ShardedWriteResult:
        """As :meth:`RedisLeaderboard.increment_score`, on the user's shard."""
        result: ShardedWriteResult = self._run(
            self._plan_write("increment_score", user_id, amount, metadata)
        )
        return result

    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> ShardedSubmitResult:
        """As :meth:`RedisLeaderboard.submit`, on the user's shard (one round trip).

        ``submission_id`` and ``retries`` as :meth:`RedisLeaderboard.submit`: the id's result
        is kept on the user's shard (``f"{shard key}:submission:..."``, for
        ``submission_ttl``), where every resend of the same user's write goes, so the write
        applies once; a write whose reply was lost is resent at most ``retries`` times (to the
        node serving the shard then), then raises ``ConnectionError``."""
        result: ShardedSubmitResult = self._run(
            self._plan_write(
                "submit",
                user_id,
                score,
                metadata,
                mode=mode,
                submission_id=submission_id,
                retries=retries,
            )
        )
        return result

    def delete_user(self, user_id: str) -> bool:
        """Remove ``user_id`` from its shard; True if it was there."""
        result: bool = self._run(self._plan_single(user_id, "delete_user"))
        return result

    def get_user_metadata(self, user_id: str) -> dict[str, str]:
        """The user's metadata hash (its shard's)."""
        result: dict[str, str] = self._run(self._plan_single(user_id, "get_user_metadata"))
        return result

    def _plan_single(self, user_id: str, method: str) -> Plan:
        (result,) = yield [getattr(self._board_of(user_id), method)(user_id)]
        return result

    def get_size(self) -> int:
        """Entries over every shard (one round trip)."""
        result: int = self._run(self._plan_size())
        return result

    def get_top(self, count: int = 10) -> list[Entry]:
        """The ``count`` best entries over every shard, ranked (one round trip)."""
        result: list[Entry] = self._run(self._plan_top(_check_count(count, "count")))
        return result

    def get_rank(self, user_id: str) -> Optional[int]:
        """The user's rank over every shard under the board's tie rule; None if absent."""
        self._board_of(user_id)
        result: Optional[int] = self._run(self._plan_rank(user_id))
        return result

    def get_user_entry(self, user_id: str) -> Optional[Entry]:
        """The user's entry with its rank over every shard; None if absent."""
        self._board_of(user_id)
        result: Optional[Entry] = self._run(self._plan_entry(user_id))
        return result

    def get_around_rank(self, rank: int, count: int = 5) -> list[Entry]:
        """``count`` entries centred on ``rank``, clamped to the board as one board's."""
        result: list[Entry] = self._run(
            self._plan_around_rank(_check_count(rank, "rank"), _check_count(count, "count"))
        )
        return result

    def get_around_user(self, user_id: str, count: int = 5) -> list[Entry]:
        """``count`` entries centred on the user's position; ``[]`` if absent."""
        self._board_of(user_id)
        result: list[Entry] = self._run(
            self._plan_around_user(user_id, _check_count(count, "count"))
        )
        return result

    def get_page(self, page: int, page_size: int = 10) -> Page:
        """The 1-based ``page`` of ``page_size`` (1 to 1,000) entries, as one board's."""
        result: Page = self._run(
            self._plan_page(
                _check_count(page, "page"), _check_count(page_size, "page_size", 1, 1000)
            )
        )
        return result

    def clear(self) -> None:
        """Clear every shard (each shard's clear; not one atomic step)."""
        self._run(self._plan_each("clear"))

    def list_all(self) -> list[Entry]:
        """Every entry over every shard, best first, ranked (one round trip: each shard's
        list_all, paged on the server side as one board's, then merged)."""
        result: list[Entry] = self._run(self._plan_list_all())
        return result

    def get_entries(self, user_ids: Iterable[str]) -> list[Optional[Entry]]:
        """One item per id (at most 1,000), in the order given: its entry ranked over every
        shard, or None. 2 round trips (each shard's get_entries for its ids; one ZCOUNT pair
        per shard per distinct score), +1 for lexicographic tied scores, dense: every entry
        better than the worst read."""
        result: list[Optional[Entry]] = self._run(self._plan_entries(self._check_ids(user_ids)))
        return result

    def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> list[Entry]:
        """As one board's: entries with ``min_score <= score <= max_score``, best first,
        ranked. One round trip (each shard's first ``offset + limit`` of the range and its
        count of better entries): O(S (offset + limit)) read; dense adds the better scores."""
        self._check_range(min_score, max_score, offset, limit)
        result: list[Entry] = self._run(self._plan_by_score(min_score, max_score, offset, limit))
        return result

    def count_by_score(self, min_score: float, max_score: float) -> int:
        """Entries with ``min_score <= score <= max_score``: S ZCOUNTs summed, one round trip."""
        self._check_range(min_score, max_score, 0, 0)
        result: int = self._run(self._plan_count(min_score, max_score))
        return result

    def rank_for_score(self, score: float) -> int:
        """As one board's: 1 + the entries (dense: distinct scores) strictly better. One
        round trip of S ZCOUNTs; dense reads every better entry."""
        self._check_range(score, score, 0, 0)
        result: int = self._run(self._plan_rank_for_score(score))
        return result

    def get_percentile(self, user_id: str) -> Optional[float]:
        """As one board's: the share of the other entries strictly worse; None if absent.
        2 round trips (the entry; S ZCOUNT + ZCARD pairs): exact."""
        self._board_of(user_id)
        result: Optional[float] = self._run(self._plan_percentile(user_id))
        return result

    def score_at_percentile(self, p: float) -> Optional[float]:
        """As one board's (nearest rank). The size, then the window of one entry at that
        position (a deep one by bisection, as get_page)."""
        self._check_percentile(p)
        result: Optional[float] = self._run(self._plan_score_at_percentile(p))
        return result

    def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> list[HistogramBin]:
        """As one board's, exact: every shard's histogram over the same edges, summed. 1 round
        trip with both bounds given, else 2 (each shard's lowest and highest first)."""
        self._check_histogram(bins, min_score, max_score)
        result: list[HistogramBin] = self._run(self._plan_histogram(bins, min_score, max_score))
        return result

    def set_max_entries(self, max_entries: Optional[int]) -> list[str]:
        """Refused (NotImplementedError): a sharded board's limit is per shard (see
        :meth:`set_shard_max_entries`)."""
        self._refuse_global_trim(max_entries)
        return []

    def set_shard_max_entries(self, max_entries: Optional[int]) -> list[str]:
        """Every shard's limit set to ``max_entries`` and trimmed to it (one round trip, each
        shard's own atomic trim); the trimmed ids, shard after shard."""
        self._boards[0].set_max_entries(max_entries)  # validates before anything is sent
        result: list[str] = self._run(self._plan_shard_max_entries(max_entries))
        return result

    def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> ImportSummary:
        """As one board's, per shard: the entries are read in batches of 50,000, grouped by
        shard, and every shard's group loaded at once (one thread per shard with entries, each
        running that shard's upsert_many: pipelined chunks, then its trim). ``progress`` gets
        the total written so far. A bad entry raises naming its position in ``entries``; the
        batches before it, and the other shards' groups of its batch, may have been written."""
        check_bulk_arguments(chunk_size, progress)
        from ._sync import RedisLeaderboard

        boards = {
            i: RedisLeaderboard(self.redis, key=b.key, **self._shard_board_kwargs())
            for i, b in enumerate(self._boards)
        }
        lock = threading.Lock()
        written = 0

        def on_chunk(before: list[int]) -> Callable[[int], None]:
            def report(total: int) -> None:
                nonlocal written
                with lock:
                    written += total - before[0]
                    before[0] = total
                    if progress is not None:
                        progress(written)

            return report

        parts: list[ImportSummary] = []
        with ThreadPoolExecutor(max_workers=min(self.shards, 16)) as pool:
            for groups, positions in self._batches(entries):

                def load(i: int, group: list[BulkEntry], where: list[int]) -> ImportSummary:
                    try:
                        return boards[i].upsert_many(
                            group,
                            chunk_size=chunk_size,
                            progress=on_chunk([0]),
                            retries=retries,
                        )
                    except (ValueError, TypeError) as error:
                        raise self._renumbered(error, where) from None

                futures = [pool.submit(load, i, groups[i], positions[i]) for i in sorted(groups)]
                parts += [future.result() for future in futures]
        return self._summary(parts)


class AsyncShardedLeaderboard(ShardedBase):
    """The asyncio twin of :class:`ShardedLeaderboard` on a
    :class:`redis_leaderboard.asyncio.ClusterClient`: same methods, each a coroutine."""

    display_name = "redis_leaderboard.asyncio.ShardedLeaderboard"

    @staticmethod
    def _cluster_client_class() -> type:
        from .cluster import AsyncClusterClient

        return AsyncClusterClient

    async def _run(self, plan: Plan) -> Any:
        try:
            operations = next(plan)
            while True:
                results = await asyncio.gather(*self.redis.run_many(operations))
                operations = plan.send(list(results))
        except StopIteration as done:
            return done.value

    async def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> ShardedWriteResult:
        result: ShardedWriteResult = await self._run(
            self._plan_write("upsert_user", user_id, score, metadata)
        )
        return result

    async def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> ShardedWriteResult:
        result: ShardedWriteResult = await self._run(
            self._plan_write("increment_score", user_id, amount, metadata)
        )
        return result

    async def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> ShardedSubmitResult:
        result: ShardedSubmitResult = await self._run(
            self._plan_write(
                "submit",
                user_id,
                score,
                metadata,
                mode=mode,
                submission_id=submission_id,
                retries=retries,
            )
        )
        return result

    async def delete_user(self, user_id: str) -> bool:
        result: bool = await self._run(self._plan_single(user_id, "delete_user"))
        return result

    async def get_user_metadata(self, user_id: str) -> dict[str, str]:
        result: dict[str, str] = await self._run(self._plan_single(user_id, "get_user_metadata"))
        return result

    def _plan_single(self, user_id: str, method: str) -> Plan:
        (result,) = yield [getattr(self._board_of(user_id), method)(user_id)]
        return result

    async def get_size(self) -> int:
        result: int = await self._run(self._plan_size())
        return result

    async def get_top(self, count: int = 10) -> list[Entry]:
        result: list[Entry] = await self._run(self._plan_top(_check_count(count, "count")))
        return result

    async def get_rank(self, user_id: str) -> Optional[int]:
        self._board_of(user_id)
        result: Optional[int] = await self._run(self._plan_rank(user_id))
        return result

    async def get_user_entry(self, user_id: str) -> Optional[Entry]:
        self._board_of(user_id)
        result: Optional[Entry] = await self._run(self._plan_entry(user_id))
        return result

    async def get_around_rank(self, rank: int, count: int = 5) -> list[Entry]:
        result: list[Entry] = await self._run(
            self._plan_around_rank(_check_count(rank, "rank"), _check_count(count, "count"))
        )
        return result

    async def get_around_user(self, user_id: str, count: int = 5) -> list[Entry]:
        self._board_of(user_id)
        result: list[Entry] = await self._run(
            self._plan_around_user(user_id, _check_count(count, "count"))
        )
        return result

    async def get_page(self, page: int, page_size: int = 10) -> Page:
        result: Page = await self._run(
            self._plan_page(
                _check_count(page, "page"), _check_count(page_size, "page_size", 1, 1000)
            )
        )
        return result

    async def clear(self) -> None:
        await self._run(self._plan_each("clear"))

    async def list_all(self) -> list[Entry]:
        result: list[Entry] = await self._run(self._plan_list_all())
        return result

    async def get_entries(self, user_ids: Iterable[str]) -> list[Optional[Entry]]:
        result: list[Optional[Entry]] = await self._run(
            self._plan_entries(self._check_ids(user_ids))
        )
        return result

    async def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> list[Entry]:
        self._check_range(min_score, max_score, offset, limit)
        result: list[Entry] = await self._run(
            self._plan_by_score(min_score, max_score, offset, limit)
        )
        return result

    async def count_by_score(self, min_score: float, max_score: float) -> int:
        self._check_range(min_score, max_score, 0, 0)
        result: int = await self._run(self._plan_count(min_score, max_score))
        return result

    async def rank_for_score(self, score: float) -> int:
        self._check_range(score, score, 0, 0)
        result: int = await self._run(self._plan_rank_for_score(score))
        return result

    async def get_percentile(self, user_id: str) -> Optional[float]:
        self._board_of(user_id)
        result: Optional[float] = await self._run(self._plan_percentile(user_id))
        return result

    async def score_at_percentile(self, p: float) -> Optional[float]:
        self._check_percentile(p)
        result: Optional[float] = await self._run(self._plan_score_at_percentile(p))
        return result

    async def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> list[HistogramBin]:
        self._check_histogram(bins, min_score, max_score)
        result: list[HistogramBin] = await self._run(
            self._plan_histogram(bins, min_score, max_score)
        )
        return result

    async def set_max_entries(self, max_entries: Optional[int]) -> list[str]:
        self._refuse_global_trim(max_entries)
        return []

    async def set_shard_max_entries(self, max_entries: Optional[int]) -> list[str]:
        self._boards[0].set_max_entries(max_entries)
        result: list[str] = await self._run(self._plan_shard_max_entries(max_entries))
        return result

    async def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> ImportSummary:
        """As the sync method, every shard's group of a batch loaded by one task (gathered)."""
        check_bulk_arguments(chunk_size, progress)
        from ._async import RedisLeaderboard

        boards = {
            i: RedisLeaderboard(self.redis, key=b.key, **self._shard_board_kwargs())
            for i, b in enumerate(self._boards)
        }
        written = 0

        def on_chunk(before: list[int]) -> Callable[[int], None]:
            def report(total: int) -> None:
                nonlocal written
                written += total - before[0]
                before[0] = total
                if progress is not None:
                    progress(written)

            return report

        parts: list[ImportSummary] = []
        for groups, positions in self._batches(entries):

            async def load(i: int, group: list[BulkEntry], where: list[int]) -> ImportSummary:
                try:
                    result: ImportSummary = await boards[i].upsert_many(
                        group, chunk_size=chunk_size, progress=on_chunk([0]), retries=retries
                    )
                    return result
                except (ValueError, TypeError) as error:
                    raise self._renumbered(error, where) from None

            parts += await asyncio.gather(
                *(load(i, groups[i], positions[i]) for i in sorted(groups))
            )
        return self._summary(parts)


def _copy_docs() -> None:
    for name, method in vars(AsyncShardedLeaderboard).items():
        sync = getattr(ShardedLeaderboard, name, None)
        if callable(method) and sync is not None and method.__doc__ is None:
            method.__doc__ = sync.__doc__


_copy_docs()
