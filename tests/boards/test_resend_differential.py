"""A resend answers the first result, field for field, on every board type (issue 39, "must
hold"): random seeded sequences of writes with submission ids, on a plain board, a periodic
board, a rolling window, a group of the three, a league and a tournament, through a proxy that
drops replies at random moments (the library then resends the write on a new connection), with
the server's clock moving across period boundaries in between. A second call with an id answers
the first call's result with ``"duplicate": True``; the first call, whatever reply it lost,
answers ``"duplicate": False`` (its own resend is not a duplicate); each id applies once (the
scores are the sums of the ids' amounts, per period where the board has periods).
"""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta
from typing import Any, Callable

import pytest

from apis import Api, sync_and_one_loop
from helpers import UTC, FakeClock, ReplyDropper

START = datetime(2031, 6, 1, 22, tzinfo=UTC)  # a Sunday evening: days and weeks turn over
TTL = 60 * 86400  # ids kept for the whole run (its days of the server's clock)


class ArmedDropper(ReplyDropper):
    """A proxy that drops the next reply when armed (then closes that connection: the client
    reconnects and sends the write again); every connection it makes may drop."""

    def __init__(self, port: int) -> None:
        self.armed = 0
        self.fired = 0
        self.lock = threading.Lock()
        super().__init__(port, drops=0)

    def may_drop(self) -> bool:
        return True  # any connection: the armed reply is dropped wherever it comes

    def drops_at(self, data: bytes) -> bool:  # type: ignore[override]
        with self.lock:
            if self.armed:
                self.armed -= 1
                self.fired += 1
                return True
            return False


def boards(api: Api, key: str, clock: FakeClock, client: Any) -> dict[str, Callable[..., Any]]:
    """Each board type's write of ``amount`` for ``user`` with ``sid``: a callable, and the
    answer's period (None where the board has none)."""
    plain = api.leaderboard(f"{key}:plain", client=client, submission_ttl=TTL)
    daily = api.periodic(f"{key}:daily", "day", clock=clock, client=client, submission_ttl=TTL)
    recent = api.rolling(
        f"{key}:recent", clock=clock, window=timedelta(days=30), bucket=timedelta(hours=1),
        client=client, submission_ttl=TTL,
    )  # fmt: skip
    group = api.group(
        [
            api.leaderboard(f"{key}:g-plain", client=client, submission_ttl=TTL),
            api.periodic(f"{key}:g-daily", "day", clock=clock, client=client, submission_ttl=TTL),
        ],
        client=client,
    )
    league = api.make(
        "League", f"{key}:league", clock=clock, client=client, tiers=("a", "b"), cohort_size=50,
        promote=1, demote=1, period="week", mode="incr", submission_ttl=TTL,
    )  # fmt: skip
    tournament = api.make(
        "Tournament", f"{key}:cup", clock=clock, client=client, schedule="day", mode="incr",
        submission_ttl=TTL,
    )  # fmt: skip
    return {
        "plain": lambda u, n, sid: plain.submit(u, n, mode="incr", submission_id=sid),
        "daily": lambda u, n, sid: daily.submit(u, n, mode="incr", submission_id=sid),
        "recent": lambda u, n, sid: recent.submit(u, n, mode="incr", submission_id=sid),
        "group": lambda u, n, sid: group.submit(u, n, mode="incr", submission_id=sid),
        "league": lambda u, n, sid: api.call(league.submit, u, n, submission_id=sid),
        "cup": lambda u, n, sid: api.call(tournament.submit, u, n, submission_id=sid),
    }


def first_answers(answer: Any) -> list[dict[str, Any]]:
    """The per-board answers of a call (a group's, one per board)."""
    if "duplicate" in answer:
        return [answer]
    return list(answer.values())


@sync_and_one_loop
@pytest.mark.parametrize("seed", range(3))
def test_every_resend_answers_the_first_result(
    api: Api, redis_server: Any, board_key: str, seed: int
) -> None:
    rng = random.Random(seed)
    clock = FakeClock(START)
    proxy = ArmedDropper(redis_server.port)
    try:
        client = api.connect(port=proxy.port, socket_timeout=5)
        writes = boards(api, board_key, clock, client)
        sent: list[tuple[str, str, int, str, Any]] = []  # (board, user, amount, id, answer)
        totals: dict[tuple[str, Any, str], float] = {}  # (board, period, user) -> sum
        mismatches: list[str] = []
        for step in range(120):
            if rng.random() < 0.08:  # the server's clock moves: maybe a new day or week
                clock.advance(timedelta(hours=rng.choice([1, 3, 9, 30])))
            if rng.random() < 0.3:
                proxy.armed = 1  # this call's reply is lost: the library sends it again
            if sent and rng.random() < 0.35:  # another call with an earlier id
                board, user, amount, sid, first = rng.choice(sent)
                again = writes[board](user, amount, sid)
                want = (
                    {**first, "duplicate": True}
                    if "duplicate" in first
                    else {k: {**v, "duplicate": True} for k, v in first.items()}
                )
                if again != want:
                    mismatches.append(f"step {step} {board} resend {sid}: {again} != {want}")
                continue
            board = rng.choice(list(writes))
            user, amount, sid = f"u{rng.randrange(5)}", rng.randrange(1, 9), f"s{step}"
            answer = writes[board](user, amount, sid)
            for one in first_answers(answer):
                if one["duplicate"] is not False:  # this call applied it, reply lost or not
                    mismatches.append(f"step {step} {board} {sid}: {one}")
                period = one.get("period")
                totals[(board, period, user)] = totals.get((board, period, user), 0) + amount
                if one["score"] != totals[(board, period, user)]:
                    mismatches.append(
                        f"step {step} {board} {sid}: score {one['score']} != "
                        f"{totals[(board, period, user)]} (applied twice, or lost)"
                    )
            sent.append((board, user, amount, sid, answer))
        proxy.armed = 0
        assert proxy.fired > 10  # replies were lost on the way
    finally:
        proxy.close()
    assert mismatches == []
