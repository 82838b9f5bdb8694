"""Rolling windows (issue 16) in plain Python, written from the rules rather than the scripts.

Buckets: bucket i holds the scores written while the clock was in [i * B, (i + 1) * B), one per
user, combined by the write's mode (set, best in the board's order, incr). The window ending
with bucket c holds buckets c - n + 1 .. c. A user's window score is the aggregate (sum, max,
min) of their scores in those buckets.

The window's board: when the clock enters a later bucket (a read or a write there), it is
rebuilt as the best ``max_entries`` window scores (positions as a plain board's: score, then
Redis's member order; the scripts move it on incrementally, in steps, since issue 30: what a
reader sees is this rebuild's result). Between rebuilds, a write sets the writer's window
score (exact) and the worst beyond ``max_entries`` leave the board (their buckets stay: they
come back by writing, or at the next rebuild).
"""

from __future__ import annotations

from typing import Any, Optional

from ranking_model import RankingModel


class WindowModel:
    def __init__(
        self, buckets: int, aggregate: str = "sum", max_entries: int = 100, order: str = "desc"
    ) -> None:
        self.n = buckets
        self.aggregate = aggregate
        self.max_entries = max_entries
        self.order = order
        self.buckets: dict[int, dict[str, float]] = {}
        self.metadata: dict[str, dict[str, str]] = {}
        self.built: Optional[int] = None
        self.board = RankingModel(max_entries=max_entries, order=order)

    def better(self, x: float, y: float) -> bool:
        return x > y if self.order == "desc" else x < y

    def window_score(self, user_id: str, last: int) -> Optional[float]:
        scores = [
            self.buckets[i][user_id]
            for i in range(last - self.n + 1, last + 1)
            if user_id in self.buckets.get(i, {})
        ]
        if not scores:
            return None
        if self.aggregate == "sum":
            return float(sum(scores))
        return float(max(scores) if self.aggregate == "max" else min(scores))

    def refresh(self, bucket: int) -> None:
        if self.built is not None and self.built >= bucket:
            return
        self.built = bucket
        self.board = RankingModel(max_entries=self.max_entries, order=self.order)
        users = {u for i in range(bucket - self.n + 1, bucket + 1) for u in self.buckets.get(i, {})}
        for user_id in users:
            score = self.window_score(user_id, bucket)
            assert score is not None
            self.board.scores[user_id] = score
        self.board._trim()
        self._share_metadata()

    def _share_metadata(self) -> None:
        # The board's entries carry the user's metadata hash, which outlives the board's trims.
        self.board.metadata = {u: dict(m) for u, m in self.metadata.items()}

    def submit(
        self, bucket: int, user_id: str, score: float, metadata: Any = None, mode: str = "set"
    ) -> dict[str, Any]:
        self.refresh(bucket)
        assert self.built is not None
        previous = self.board.scores.get(user_id)
        previous_rank = self.board.rank(user_id)
        scores = self.buckets.setdefault(bucket, {})
        old = scores.get(user_id)
        if mode == "incr" and old is not None:
            new = old + score
        elif mode == "best" and old is not None and not self.better(score, old):
            new = old
        else:
            new = float(score)
        scores[user_id] = new
        if metadata:
            self.metadata.setdefault(user_id, {}).update({k: str(v) for k, v in metadata.items()})
        self._share_metadata()
        total = self.window_score(user_id, self.built)
        assert total is not None
        self.board.scores[user_id] = total
        trimmed = self.board._trim()
        on_board = user_id in self.board.scores
        return {
            "user_id": user_id,
            "score": total,
            "rank": self.board.rank(user_id) if on_board else None,
            "previous_score": previous,
            "previous_rank": previous_rank,
            "changed": previous is None or previous != total,
            "metadata": dict(self.metadata.get(user_id, {})),
            "trimmed_user_ids": trimmed,
        }

    def read(self, bucket: int) -> RankingModel:
        """The window's board as a reader in `bucket` sees it."""
        self.refresh(bucket)
        self._share_metadata()
        return self.board
