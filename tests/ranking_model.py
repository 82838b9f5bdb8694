"""The ranking rules of issue 12 in plain Python: what every method of a board with options
returns, and what the board holds, written from the rules rather than from the scripts.

``order``: "desc" (higher is better) or "asc". ``ties``: "lexicographic" (Redis order among
equal scores: in desc the greater id first, in asc the smaller), "first" (the earlier achiever
first; a write that does not change the score keeps its time; leaving the board forgets it),
"competition" (equal scores share a rank, the next skips: 1, 1, 3) or "dense" (1, 1, 2). Lists,
windows and trims follow positions (lexicographic, or for "first" the achievement order); only
"rank" changes under competition and dense. Trims remove the worst positions, worst first.

The queries of issue 13 (get_around_user ... get_histogram) are written from the issue's
definitions, on the same positions and ranks, by scanning everything: nothing here is clever.

Scores compare as Redis compares doubles (-0.0 == 0.0), and a write whose score equals the
stored one changes nothing (Redis keeps the stored double).
"""

from __future__ import annotations

import math
import struct
from typing import Any, Iterable, Mapping, Optional, Sequence

Entry = dict[str, Any]

MAX_REPORTED_TRIMMED = 1000
MAX_QUERY_ITEMS = 1000  # ids of get_entries, page_size, bins
MASK64 = (1 << 64) - 1


class Rejected(Exception):
    """A write the board's score limits refuse (the library raises ScoreRejected)."""


class RankingModel:
    def __init__(
        self,
        max_entries: int = 100,
        order: str = "desc",
        ties: str = "lexicographic",
        *,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
        tiebreak: Optional[Sequence[tuple[str, str]]] = None,
    ) -> None:
        self.max_entries = max_entries
        # Tie-break columns: (name, "desc" | "asc") each; a user's values (None: not given).
        self.tiebreak = list(tiebreak or [])
        self.columns: dict[str, tuple[Optional[float], ...]] = {}
        self.order = order
        self.ties = ties
        self.score_range = score_range
        self.max_increment = max_increment
        self.scores: dict[str, float] = {}
        self.achieved: dict[str, int] = {}  # ties="first": when the score was reached
        self.clock = 0
        self.metadata: dict[str, dict[str, str]] = {}
        # Fair play: hidden players, each with their kept score (None: none yet). They are on
        # no rank, window, count or trim; their writes are judged as any and kept here.
        self.kept: dict[str, Optional[float]] = {}
        self.kept_columns: dict[str, tuple[Optional[float], ...]] = {}  # with tie-break columns

    # --- the rules ---

    def better(self, x: float, y: float) -> bool:
        return x > y if self.order == "desc" else x < y

    def _tuple_key_of(
        self, score: float, columns: tuple[Optional[float], ...]
    ) -> tuple[float, ...]:
        """Greater is better: the score, then each column (a missing value the worst)."""
        out = [score if self.order == "desc" else -score]
        for (_, direction), value in zip(self.tiebreak, columns):
            out.append(-math.inf if value is None else (value if direction == "desc" else -value))
        return tuple(out)

    def _columns_after(
        self,
        old: Optional[float],
        new: float,
        number: float,
        mode: str,
        tiebreak: Optional[Mapping[str, float]],
        stored: Optional[tuple[Optional[float], ...]],
    ) -> tuple[Optional[float], ...]:
        """A write's tie-break columns: its values, else the stored ones, else none; "best"
        keeps the better (score, columns) tuple whole."""
        given = tiebreak and tuple(float(tiebreak[name]) for name, _ in self.tiebreak)
        columns = given or stored or (None,) * len(self.tiebreak)
        if mode == "best" and old is not None and new == old:
            assert stored is not None
            # A tie on the score: the columns decide; a worse score changes nothing.
            if number != old or not self._tuple_key_of(old, columns) > self._tuple_key_of(
                old, stored
            ):
                columns = stored
        return columns

    def _tuple_key(self, user_id: str) -> tuple[float, ...]:
        return self._tuple_key_of(self.scores[user_id], self.columns[user_id])

    def ordered(self) -> list[str]:
        """Every user id, best first (positions)."""
        if self.tiebreak:  # the tuple, then the user id as Redis orders members
            by_id = sorted(self.scores, key=lambda u: u.encode(), reverse=self.order == "desc")
            return sorted(by_id, key=self._tuple_key, reverse=True)  # stable: ids keep order
        if self.ties == "first":
            sign = -1.0 if self.order == "desc" else 1.0
            return sorted(self.scores, key=lambda u: (sign * self.scores[u], self.achieved[u]))
        redis_order = sorted(self.scores, key=lambda u: (self.scores[u], u.encode()))
        return redis_order[::-1] if self.order == "desc" else redis_order

    def rank(self, user_id: str) -> Optional[int]:
        if user_id not in self.scores:
            return None
        score = self.scores[user_id]
        if self.ties == "competition":
            return 1 + sum(1 for v in self.scores.values() if self.better(v, score))
        if self.ties == "dense":
            return 1 + len({v for v in self.scores.values() if self.better(v, score)})
        return self.ordered().index(user_id) + 1

    def entry(self, user_id: str) -> Entry:
        if self.tiebreak:
            return {
                "rank": self.rank(user_id),
                "user_id": user_id,
                "score": self.scores[user_id],
                "metadata": dict(self.metadata.get(user_id, {})),
                "tiebreak": {
                    name: (None if v is None else v + 0.0)  # -0.0 is stored as 0
                    for (name, _), v in zip(self.tiebreak, self.columns[user_id])
                },
            }
        return {
            "rank": self.rank(user_id),
            "user_id": user_id,
            "score": self.scores[user_id],
            "metadata": dict(self.metadata.get(user_id, {})),
        }

    def _remove(self, user_id: str) -> None:
        self.columns.pop(user_id, None)
        self.scores.pop(user_id, None)
        self.achieved.pop(user_id, None)
        self.metadata.pop(user_id, None)

    def _trim(self) -> list[str]:
        overflow = len(self.scores) - self.max_entries
        if overflow <= 0:
            return []
        worst = self.ordered()[::-1][:overflow]
        for user_id in worst:
            self._remove(user_id)
        return worst

    def _store(
        self, user_id: str, score: float, columns: Optional[tuple[Optional[float], ...]] = None
    ) -> bool:
        """Store a score as Redis would: an equal one changes nothing. True if it changed.
        Tie-break columns: ``columns``, else the stored ones, else none (the worst)."""
        old = self.scores.get(user_id)
        old_columns = self.columns.get(user_id)
        if self.tiebreak:
            columns = columns or old_columns or (None,) * len(self.tiebreak)
        if old is not None and score == old and columns == old_columns:
            return False
        if self.tiebreak:
            self.columns[user_id] = columns  # type: ignore[assignment]
        self.scores[user_id] = score
        self.clock += 1
        self.achieved[user_id] = self.clock
        return True

    def _check_limits(self, old: Optional[float], new: float, mode: str) -> None:
        """Fair play: a write leaving the score outside score_range, or improving it (in the
        board's order) by more than max_increment, is refused; one leaving it unchanged never
        is. A new entry's improvement counts from 0 for "incr", and is not limited otherwise."""
        if old is not None and new == old:
            return
        if self.score_range is not None:
            low, high = self.score_range
            if (low is not None and new < low) or (high is not None and new > high):
                raise Rejected(f"{new} outside {self.score_range}")
        if self.max_increment is not None:
            start = old if old is not None else (0.0 if mode == "incr" else None)
            if start is not None:
                gain = new - start if self.order == "desc" else start - new
                if gain > self.max_increment:
                    raise Rejected(f"gain {gain} > {self.max_increment}")

    def _merge(self, user_id: str, metadata: Optional[Mapping[str, Any]]) -> dict[str, str]:
        sent = {str(k): str(v) for k, v in (metadata or {}).items()}
        if sent:
            self.metadata.setdefault(user_id, {}).update(sent)
        return sent

    # --- the methods ---

    def _next(self, old: Optional[float], number: float, mode: str) -> float:
        if mode == "incr" and old is not None:
            return old + number
        if mode == "best" and old is not None and not self.better(number, old):
            return old
        return float(number)

    def _hidden_submit(
        self,
        user_id: str,
        number: float,
        metadata: Optional[Mapping[str, Any]],
        mode: str,
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> dict[str, Any]:
        """A hidden player's write: judged as any, kept aside: no rank, no trim (their
        tie-break columns kept with the score, by the same rules as a shown player's)."""
        old = self.kept[user_id]
        new = self._next(old, number, mode)
        self._check_limits(old, new, mode)
        columns_changed = False
        if self.tiebreak:
            stored = None
            if old is not None:  # a score kept by a bulk load has no columns: the worst
                stored = self.kept_columns.get(user_id) or (None,) * len(self.tiebreak)
            columns = self._columns_after(old, new, number, mode, tiebreak, stored)
            columns_changed = columns != stored
            self.kept_columns[user_id] = columns
        self.kept[user_id] = new
        self._merge(user_id, metadata)
        return {
            "user_id": user_id,
            "score": new,
            "rank": None,
            "previous_score": old,
            "previous_rank": None,
            "changed": old is None or new != old or columns_changed,
            "metadata": dict(self.metadata.get(user_id, {})),
            "trimmed_user_ids": [],
        }

    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: str = "set",
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> dict[str, Any]:
        if user_id in self.kept:
            return self._hidden_submit(user_id, score, metadata, mode, tiebreak)
        old = self.scores.get(user_id)
        previous_rank = self.rank(user_id)
        new = self._next(old, score, mode)
        self._check_limits(old, new, mode)
        columns = None
        if self.tiebreak:
            stored = self.columns.get(user_id)
            columns = self._columns_after(old, new, score, mode, tiebreak, stored)
        changed = self._store(user_id, new, columns)
        self._merge(user_id, metadata)
        trimmed = self._trim()
        on_board = user_id in self.scores
        return {
            "user_id": user_id,
            "score": self.scores[user_id] if on_board else new,
            "rank": self.rank(user_id),
            "previous_score": old,
            "previous_rank": previous_rank,
            "changed": changed,
            "metadata": dict(self.metadata.get(user_id, {})),
            "trimmed_user_ids": trimmed,
        }

    def _guide_write(
        self, user_id: str, number: float, metadata: Optional[Mapping[str, Any]], mode: str
    ) -> Entry:
        result = self.submit(user_id, number, metadata, mode=mode)
        if result["rank"] is None:  # trimmed away: the guide's fallback shape
            return {
                "user_id": user_id,
                "score": result["score"],
                "metadata": {str(k): str(v) for k, v in (metadata or {}).items()},
                "trimmed_user_ids": result["trimmed_user_ids"],
            }
        entry = self.entry(user_id)
        entry.pop("tiebreak", None)  # a write's result carries no tie-break values: reads do
        return {**entry, "trimmed_user_ids": result["trimmed_user_ids"]}

    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        return self._guide_write(user_id, score, metadata, "set")

    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        return self._guide_write(user_id, amount, metadata, "incr")

    def set_max_entries(self, max_entries: int) -> list[str]:
        self.max_entries = max_entries
        return self._trim()

    def get_top(self, count: int = 10) -> list[Entry]:
        return [self.entry(u) for u in self.ordered()[:count]]

    def get_around_rank(self, rank: int, count: int = 5) -> list[Entry]:
        users = self.ordered()
        size = len(users)
        start = 0 if size <= count else min(max(0, rank - 1 - count // 2), size - count)
        return [self.entry(u) for u in users[start : start + count]]

    def get_rank(self, user_id: str) -> Optional[int]:
        return self.rank(user_id)

    def get_user_metadata(self, user_id: str) -> dict[str, str]:
        return dict(self.metadata.get(user_id, {}))

    def get_user_entry(self, user_id: str) -> Optional[Entry]:
        return self.entry(user_id) if user_id in self.scores else None

    def list_all(self) -> list[Entry]:
        return [self.entry(u) for u in self.ordered()]

    def get_size(self) -> int:
        return len(self.scores)

    def delete_user(self, user_id: str) -> bool:
        """A hidden player's kept score goes too; they stay hidden."""
        was = user_id in self.scores or self.kept.get(user_id) is not None
        self._remove(user_id)
        if user_id in self.kept:
            self.kept[user_id] = None
            self.kept_columns.pop(user_id, None)
        return was

    def clear(self) -> None:
        """Everything goes, the hidden players (and their being hidden) too."""
        for user_id in list(self.scores) + list(self.kept):
            self._remove(user_id)
        self.kept.clear()
        self.kept_columns.clear()

    # --- fair play: hidden players ---

    def hide(self, user_id: str) -> bool:
        if user_id in self.kept:
            return False
        self.kept[user_id] = self.scores.pop(user_id, None)
        self.achieved.pop(user_id, None)
        columns = self.columns.pop(user_id, None)
        if columns is not None:  # tie-break columns: kept with the score
            self.kept_columns[user_id] = columns
        return True

    def unhide(self, user_id: str) -> bool:
        """The kept score back as a write of it: a new achievement, then the trim."""
        if user_id not in self.kept:
            return False
        kept = self.kept.pop(user_id)
        columns = self.kept_columns.pop(user_id, None)
        if kept is not None:
            self._store(user_id, kept, columns)
            self._trim()
        return True

    def columns_key(self, columns: tuple[Optional[float], ...]) -> str:
        """A member's key of tie-break values, as the library encodes it: per column the
        order-preserving image of the double in 16 hex digits, inverted where the column's
        direction is not the board's; none given: the worst key."""
        if all(v is None for v in columns):
            return ("0" if self.order == "desc" else "f") * 16 * len(columns)
        out = ""
        for (_, direction), value in zip(self.tiebreak, columns):
            assert value is not None
            (bits,) = struct.unpack(">Q", struct.pack(">d", value + 0.0))
            image = (~bits & MASK64) if bits >> 63 else bits | (1 << 63)
            if (direction == "desc") != (self.order == "desc"):
                image = ~image & MASK64
            out += f"{image:016x}"
        return out

    def hidden(self) -> list[str]:
        return sorted(self.kept, key=lambda u: u.encode())

    def upsert_many(self, entries: Iterable[tuple]) -> dict[str, Any]:
        entries = list(entries)
        planned: dict[str, float] = {}  # one chunk, all or nothing: each entry checked first
        for entry in entries:
            user_id, score = entry[0], float(entry[1])
            before = self.kept[user_id] if user_id in self.kept else self.scores.get(user_id)
            self._check_limits(planned.get(user_id, before), score, "set")
            planned[user_id] = score
        written = 0
        for entry in entries:
            user_id, score = entry[0], float(entry[1])
            if user_id in self.kept:
                self.kept[user_id] = score
            else:
                self._store(user_id, score)
            self._merge(user_id, entry[2] if len(entry) > 2 else None)
            written += 1
        trimmed = self._trim()
        return {
            "written": written,
            "trimmed": len(trimmed),
            "trimmed_user_ids": trimmed[:MAX_REPORTED_TRIMMED],
        }

    # --- the queries (issue 13) ---

    def get_around_user(self, user_id: str, count: int = 5) -> list[Entry]:
        if count < 1:
            raise ValueError("count must be at least 1")
        if user_id not in self.scores:
            return []
        return self.get_around_rank(self.ordered().index(user_id) + 1, count)

    def get_entries(self, user_ids: Sequence[str]) -> list[Optional[Entry]]:
        if len(user_ids) > MAX_QUERY_ITEMS:
            raise ValueError("too many user_ids")
        return [self.entry(u) if u in self.scores else None for u in user_ids]

    def get_page(self, page: int, page_size: int = 10) -> dict[str, Any]:
        if page < 1 or not 1 <= page_size <= MAX_QUERY_ITEMS:
            raise ValueError("page or page_size out of range")
        users = self.ordered()
        size = len(users)
        return {
            "page": page,
            "page_size": page_size,
            "total_pages": math.ceil(size / page_size),
            "size": size,
            "entries": [self.entry(u) for u in users[(page - 1) * page_size : page * page_size]],
        }

    def get_by_score(
        self, min_score: float, max_score: float, *, offset: int = 0, limit: int = 100
    ) -> list[Entry]:
        if math.isnan(min_score) or math.isnan(max_score) or offset < 0 or limit < 1:
            raise ValueError("bad get_by_score arguments")
        inside = [u for u in self.ordered() if min_score <= self.scores[u] <= max_score]
        return [self.entry(u) for u in inside[offset : offset + limit]]

    def count_by_score(self, min_score: float, max_score: float) -> int:
        if math.isnan(min_score) or math.isnan(max_score):
            raise ValueError("NaN bound")
        return sum(1 for v in self.scores.values() if min_score <= v <= max_score)

    def rank_for_score(self, score: float) -> int:
        if not math.isfinite(score):
            raise ValueError("score must be a finite number")
        if self.ties == "dense":  # the rank the score would be reported with
            return 1 + len({v for v in self.scores.values() if self.better(v, score)})
        return 1 + sum(1 for v in self.scores.values() if self.better(v, score))

    def get_percentile(self, user_id: str) -> Optional[float]:
        if user_id not in self.scores:
            return None
        others = len(self.scores) - 1
        if others == 0:
            return 100.0
        if self.tiebreak:  # the tuple's order: those after the user are worse
            return 100.0 * (others - self.ordered().index(user_id)) / others
        mine = self.scores[user_id]
        worse = sum(1 for v in self.scores.values() if self.better(mine, v))
        return 100.0 * worse / others

    def score_at_percentile(self, p: float) -> Optional[float]:
        if not 0 <= p <= 100:  # NaN too
            raise ValueError("p must be between 0 and 100")
        if not self.scores:
            return None
        worst_first = sorted(self.scores.values(), reverse=self.order == "asc")
        return worst_first[max(1, math.ceil(p / 100 * len(worst_first))) - 1]

    def get_histogram(
        self,
        bins: int = 10,
        *,
        min_score: Optional[float] = None,
        max_score: Optional[float] = None,
    ) -> list[dict[str, Any]]:
        if not 1 <= bins <= MAX_QUERY_ITEMS:
            raise ValueError("bins must be between 1 and 1000")
        for bound in (min_score, max_score):
            if bound is not None and not math.isfinite(bound):
                raise ValueError("bounds must be finite")
        if min_score is not None and max_score is not None and min_score > max_score:
            raise ValueError("min_score must not be greater than max_score")
        if not self.scores:
            return []
        # A missing bound is the board's extreme, but never past the given one.
        low = min(self.scores.values()) if min_score is None else min_score
        high = max(self.scores.values()) if max_score is None else max_score
        if min_score is None:
            low = min(low, high)
        if max_score is None:
            high = max(high, low)
        edges = [min(low + (high - low) * i / bins, high) for i in range(bins)] + [high]
        out = []
        for i in range(bins):
            last = i == bins - 1
            count = sum(
                1
                for v in self.scores.values()
                if edges[i] <= v and (v <= edges[i + 1] if last else v < edges[i + 1])
            )
            out.append({"min": edges[i], "max": edges[i + 1], "count": count})
        return out

    # --- what the acknowledged writes of a concurrent run leave ---

    @staticmethod
    def final_score(order: str, writes: Iterable[tuple[str, float]]) -> Optional[float]:
        """One user's score after ``(mode, number)`` writes ("best" and "incr" commute, so
        the order they were applied in does not matter), or None if there were none."""
        score: Optional[float] = None
        for mode, number in writes:
            if score is None:
                score = float(number)
            elif mode == "incr":
                score += number
            elif mode == "best":
                if (number > score) if order == "desc" else (number < score):
                    score = float(number)
            else:
                raise ValueError("only best and incr commute")
        return score
