"""A plain-Python league: what ``redis_leaderboard.League`` must do, written as directly as
possible (see the design in ``redis_leaderboard/boards/league.py``), for the differential
tests. No Redis, no time: periods are given by the caller as (index, id)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Union


class Closed(Exception):
    """A write to a period that takes no more writes."""


@dataclass
class Cohort:
    tier: int
    bracket: str
    placed: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    achieved: dict[str, int] = field(default_factory=dict)  # ties="first": when the score changed
    settled: bool = False


@dataclass
class PeriodState:
    index: int
    cohorts: list[Cohort] = field(default_factory=list)
    where: dict[str, int] = field(default_factory=dict)
    open: dict[tuple[int, str], int] = field(default_factory=dict)
    closed: bool = False
    results: dict[str, tuple[int, str, Optional[int], Optional[float]]] = field(
        default_factory=dict
    )

    @property
    def done(self) -> bool:
        return all(c.settled for c in self.cohorts)


class LeagueModel:
    def __init__(
        self,
        tiers: int,
        cohort_size: int,
        promote: Union[int, float],
        demote: Union[int, float],
        demote_idle: bool,
        mode: str,
        order: str,
        ties: str,
    ) -> None:
        self.tiers, self.cohort_size = tiers, cohort_size
        self.promote, self.demote, self.demote_idle = promote, demote, demote_idle
        self.mode, self.order, self.ties = mode, order, ties
        self.tier: dict[str, int] = {}
        self.periods: dict[str, PeriodState] = {}
        self.open: Optional[str] = None  # the newest period with players
        self.seq = 0

    # -- ranking ---------------------------------------------------------------------------

    def better(self, x: float, y: float) -> bool:
        return x > y if self.order == "desc" else x < y

    def ranked(self, cohort: Cohort) -> list[str]:
        """Best first, as the cohort's board orders them: by score in the league's order, then
        (ties="first") the earlier achiever, else Redis's member order (reversed on a "desc"
        board, which reads its sorted set backwards)."""
        desc = self.order == "desc"
        if self.ties == "first":
            sign = -1 if desc else 1
            return sorted(
                cohort.scores, key=lambda u: (sign * cohort.scores[u], cohort.achieved[u])
            )
        return sorted(cohort.scores, key=lambda u: (cohort.scores[u], u.encode()), reverse=desc)

    def cut(self, spec: Union[int, float], size: int) -> int:
        if isinstance(spec, float):
            return math.floor(spec * size + 1e-9)
        return spec

    def positions(self, cohort: Cohort) -> list[tuple[str, int, int]]:
        """(user, shown rank, cutoff rank), best first."""
        out = []
        order = self.ranked(cohort)
        group_start, dense, previous = 1, 0, None
        for i, user in enumerate(order, 1):
            score = cohort.scores[user]
            if score != previous:
                group_start, dense = i, dense + 1
            previous = score
            shared = self.ties in ("competition", "dense")
            shown = (
                dense if self.ties == "dense" else group_start if self.ties == "competition" else i
            )
            out.append((user, shown, group_start if shared else i))
        return out

    def zone(self, tier: int, cutoff: Optional[int], scored: int, size: int) -> str:
        if cutoff is None:
            return "demote" if self.demote_idle and tier > 0 else "stay"
        if tier < self.tiers - 1 and cutoff <= self.cut(self.promote, size):
            return "promote"
        if tier > 0 and cutoff > scored - self.cut(self.demote, size):
            return "demote"
        return "stay"

    # -- periods ---------------------------------------------------------------------------

    def state(self, period: tuple[int, str]) -> PeriodState:
        index, pid = period
        if pid not in self.periods:
            self.periods[pid] = PeriodState(index)
        return self.periods[pid]

    def pending(self, period: tuple[int, str]) -> Optional[str]:
        """An earlier period with players not settled yet (settled before placing or reading)."""
        if self.open is None or self.open == period[1]:
            return None
        older = self.periods[self.open]
        if older.index < period[0] and not older.done:
            return self.open
        return None

    def place(self, period: tuple[int, str], user: str, bracket: str) -> tuple[PeriodState, int]:
        state = self.state(period)
        if user in state.where:
            if state.closed:
                raise Closed(user)
            return state, state.where[user]
        if state.closed:
            raise Closed(user)
        if self.open is not None and self.open != period[1]:
            if self.periods[self.open].index > period[0]:
                raise Closed(user)
            pending = self.pending(period)
            if pending is not None:
                self.settle(pending)
        tier = self.tier.setdefault(user, 0)
        n = state.open.get((tier, bracket))
        if n is None or len(state.cohorts[n - 1].placed) >= self.cohort_size:
            state.cohorts.append(Cohort(tier, bracket))
            n = len(state.cohorts)
            state.open[(tier, bracket)] = n
        state.cohorts[n - 1].placed.append(user)
        state.where[user] = n
        self.open = period[1]
        return state, n

    def submit(
        self, period: tuple[int, str], user: str, score: float, bracket: str = ""
    ) -> dict[str, object]:
        state, n = self.place(period, user, bracket)
        cohort = state.cohorts[n - 1]
        old = cohort.scores.get(user)
        new = score
        if self.mode == "incr" and old is not None:
            new = old + score
        elif self.mode == "best" and old is not None and not self.better(score, old):
            new = old
        if old is None or new != old:
            self.seq += 1
            cohort.achieved[user] = self.seq
        cohort.scores[user] = new
        positions = {u: (shown, cut) for u, shown, cut in self.positions(cohort)}
        shown, cut = positions[user]
        return {
            "tier": cohort.tier,
            "cohort": n,
            "rank": shown,
            "score": new,
            "zone": self.zone(cohort.tier, cut, len(cohort.scores), len(cohort.placed)),
            "size": len(cohort.placed),
        }

    def join(self, period: tuple[int, str], user: str, bracket: str = "") -> int:
        return self.place(period, user, bracket)[1]

    def standings(self, period: tuple[int, str], user: str) -> Optional[dict[str, object]]:
        state = self.periods.get(period[1])
        if state is None or user not in state.where:
            return None
        cohort = state.cohorts[state.where[user] - 1]
        entries = []
        scored, size = len(cohort.scores), len(cohort.placed)
        for u, shown, cut in self.positions(cohort):
            zone = self.zone(cohort.tier, cut, scored, size)
            if cohort.settled:
                zone = state.results[u][1]
            entries.append((u, cohort.scores[u], shown, zone))
        for u in sorted(set(cohort.placed) - set(cohort.scores)):
            zone = self.zone(cohort.tier, None, scored, size)
            if cohort.settled:
                zone = state.results[u][1]
            entries.append((u, None, None, zone))
        return {
            "tier": cohort.tier,
            "cohort": state.where[user],
            "size": size,
            "settled": cohort.settled,
            "entries": entries,
        }

    def settle(self, pid: str) -> tuple[int, int]:
        """Settles every cohort of the period not settled yet: (promoted, demoted)."""
        state = self.periods.get(pid)
        if state is None:
            return (0, 0)
        state.closed = True
        promoted = demoted = 0
        for cohort in state.cohorts:
            if cohort.settled:
                continue
            scored, size = len(cohort.scores), len(cohort.placed)
            outcomes = [
                (u, self.zone(cohort.tier, cut, scored, size), shown, cohort.scores[u])
                for u, shown, cut in self.positions(cohort)
            ]
            outcomes += [
                (u, self.zone(cohort.tier, None, scored, size), None, None)
                for u in sorted(set(cohort.placed) - set(cohort.scores))
            ]
            for user, zone, shown, score in outcomes:
                new = cohort.tier + (1 if zone == "promote" else -1 if zone == "demote" else 0)
                promoted += zone == "promote"
                demoted += zone == "demote"
                self.tier[user] = new
                state.results[user] = (new, zone, shown, score)
            cohort.settled = True
        return (promoted, demoted)

    def tier_counts(self) -> list[int]:
        counts = [0] * self.tiers
        for tier in self.tier.values():
            counts[tier] += 1
        return counts
