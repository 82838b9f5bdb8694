"""A tournament in plain Python, with no Redis: what ``redis_leaderboard.Tournament`` must do,
written as directly as possible (see boards/tournament.py for the rules), for the differential
test in test_tournament.py. The caller hands it the period of the moment and the client's clock
(the model does no time arithmetic)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


class Refused(Exception):
    """A write the tournament refuses; ``code`` names the exception: "closed" (PeriodClosed),
    "stale" (StalePeriod), "not_joined", "full", "exhausted"."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class PeriodState:
    used: dict[str, int] = field(default_factory=dict)  # a key per player in the period
    bonus: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    reached: dict[str, int] = field(default_factory=dict)  # when the score last changed


@dataclass(frozen=True)
class Now:
    """The moment of a call: the period the client's clock is in (id, start), whether its
    active window is open, the period the caller named (None: not named), and the server's
    clock's moment (None: the client's clock is the server's). The server's clock decides: a
    write that names no period is refused (``clock``: ClockSkewError, the clocks being further
    apart than MAX_CLOCK_SKEW) when the server's clock is in another period, and the window's
    activity is the server's."""

    period: str
    start: int
    active: bool
    named: Optional[str] = None
    server: Optional[Now] = None

    @property
    def on_server(self) -> Now:
        return self.server or self


class TournamentModel:
    def __init__(
        self,
        max_size: Optional[int],
        join_required: bool,
        max_attempts: Optional[int],
        mode: str,
        order: str,
        ties: str,
    ) -> None:
        self.max_size, self.join_required, self.max_attempts = max_size, join_required, max_attempts
        self.mode, self.order, self.ties = mode, order, ties
        self.periods: dict[str, PeriodState] = {}
        self.newest: Optional[int] = None  # start of the newest period written
        self.submissions: dict[str, dict[str, object]] = {}  # id -> the first result
        self.seq = 0

    def state(self, period: str) -> PeriodState:
        return self.periods.setdefault(period, PeriodState())

    # -- ranking ----------------------------------------------------------------------------

    def _better(self, x: float, y: float) -> bool:
        return x > y if self.order == "desc" else x < y

    def ranked(self, period: str) -> list[tuple[str, float]]:
        """The board best first, as Redis orders it under the tie rule."""
        s = self.state(period)
        sign = -1 if self.order == "desc" else 1
        if self.ties == "first":
            key = sorted(s.scores, key=lambda u: (sign * s.scores[u], s.reached[u]))
        else:
            # Equal scores: member bytes descending under desc (ZREVRANGE), ascending under asc.
            key = sorted(s.scores, key=lambda u: u.encode(), reverse=self.order == "desc")
            key = sorted(key, key=lambda u: sign * s.scores[u])
        return [(u, s.scores[u]) for u in key]

    def rank(self, period: str, user: str) -> Optional[int]:
        s = self.state(period)
        if user not in s.scores:
            return None
        score = s.scores[user]
        if self.ties == "competition":
            return 1 + sum(1 for v in s.scores.values() if self._better(v, score))
        if self.ties == "dense":
            return 1 + len({v for v in s.scores.values() if self._better(v, score)})
        return 1 + [u for u, _ in self.ranked(period)].index(user)

    def top(self, period: str, count: int) -> list[tuple[str, float, int]]:
        out = []
        for user, score in self.ranked(period)[:count]:
            rank = self.rank(period, user)
            assert rank is not None
            out.append((user, score, rank))
        return out

    # -- writes -----------------------------------------------------------------------------

    def attempts_left(self, period: str, user: str) -> Optional[int]:
        if self.max_attempts is None:
            return None
        s = self.state(period)
        return max(self.max_attempts + s.bonus.get(user, 0) - s.used.get(user, 0), 0)

    def _check_period(self, now: Now, named: bool) -> None:
        """The script's check: a newer period written, or the window closed."""
        if self.newest is not None and self.newest > now.start:
            raise Refused("stale" if named else "closed")
        if not now.active:
            raise Refused("closed")

    def submit(
        self, now: Now, user: str, score: float, submission_id: Optional[str] = None
    ) -> dict[str, object]:
        """Returns {period, score, rank, attempts_used, attempts_left, size, duplicate}."""
        # The client's checks, before anything is sent (a submission id: the script decides).
        stale = now.named is not None and now.named != now.period
        if submission_id is None:
            if stale:
                raise Refused("stale")
            if not now.active:
                raise Refused("closed")
        s = self.state(now.period)
        if submission_id is not None and submission_id in self.submissions:
            # Another call with the id: the first result, whole, whatever the period now.
            return {**self.submissions[submission_id], "duplicate": True}
        if stale:
            raise Refused("stale")
        server = self._server_checks(now, now.named is not None)
        self._check_period(server, now.named is not None)
        if user not in s.used:
            if self.join_required:
                raise Refused("not_joined")
            if self.max_size is not None and len(s.used) >= self.max_size:
                raise Refused("full")
        if self.max_attempts is not None and s.used.get(user, 0) >= self.max_attempts + s.bonus.get(
            user, 0
        ):
            raise Refused("exhausted")
        self.newest = now.start
        s.used[user] = s.used.get(user, 0) + 1
        old = s.scores.get(user)
        new = score
        if self.mode == "incr" and old is not None:
            new = old + score
        elif self.mode == "best" and old is not None and not self._better(score, old):
            new = old
        if old is None or new != old:
            self.seq += 1
            s.scores[user] = new
            s.reached[user] = self.seq
        result: dict[str, object] = {
            "period": now.period,
            "score": s.scores[user],
            "rank": self.rank(now.period, user),
            "attempts_used": s.used[user],
            "attempts_left": self.attempts_left(now.period, user),
            "size": len(s.used),
            "duplicate": False if submission_id is not None else None,
        }
        if submission_id is not None:
            self.submissions[submission_id] = result
        return result

    def _server_checks(self, now: Now, named: bool = False) -> Now:
        """The server's clock against the period the call names: refused when it is in another
        one (a period not named: ``clock``; a named one it has left: ``stale``); else the call's
        moment on the server's clock."""
        server = now.on_server
        if server.period != now.period:
            raise Refused("stale" if named else "clock")
        return server

    def join(self, now: Now, user: str) -> dict[str, object]:
        if not now.active:  # the client's check
            raise Refused("closed")
        self._check_period(self._server_checks(now), False)  # a join names no period
        s = self.state(now.period)
        joined_now = False
        if user not in s.used:
            if self.max_size is not None and len(s.used) >= self.max_size:
                raise Refused("full")
            self.newest = now.start
            s.used[user] = 0
            joined_now = True
        return {
            "period": now.period,
            "joined_now": joined_now,
            "size": len(s.used),
            "attempts_left": self.attempts_left(now.period, user),
        }

    def add_attempts(self, now: Now, user: str, n: int) -> Optional[int]:
        self._server_checks(now)
        s = self.state(now.period)
        s.bonus[user] = s.bonus.get(user, 0) + n
        return self.attempts_left(now.period, user)

    def status(self, now: Now, user: str) -> dict[str, object]:
        s = self.state(now.period)
        return {
            "active": now.active,
            "period": now.period,
            "joined": user in s.used,
            "attempts_left": self.attempts_left(now.period, user),
            "size": len(s.used),
        }
