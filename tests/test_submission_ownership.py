"""A submission id belongs to one user and one payload, and to the submission, not to the period
it landed on.

- Reusing an id for another user, or with another score, mode or metadata, raises
  SubmissionIdReused (a ValueError) and changes nothing; it never answers with another user's
  data. A true resend (the same user and payload, metadata in any field order) returns the first
  result with duplicate=True.
- A periodic board records its ids under its own key, whatever the period: a resend after a
  period boundary (a lost reply at 23:59:59 Sunday, resent after midnight) writes nothing and
  returns the first result, whose "period" is the first write's.
- Exceptions a caller tells apart: OptionsMismatch, PeriodClosed, SubmissionIdReused (all
  ValueError), RateLimited naming the board that refused.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import pytest

import redis_leaderboard as rl
import redis_leaderboard.asyncio as aio
from conftest import RedisServer
from test_guards import ReplyDropper

UTC = timezone.utc
# Sunday 29 November 2026, one second before midnight: ISO week 2026-W48 ends.
SUNDAY_LATE = datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC)
MONDAY = datetime(2026, 11, 30, 0, 0, 1, tzinfo=UTC)


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def r(redis_server: RedisServer) -> Iterator[Any]:
    client = redis_server.redis_py()
    yield client
    client.close()


def snapshot(r: Any, key: str) -> dict[str, Any]:
    """Every key of the test (its dump and whether it expires): what "nothing changed" means."""
    return {k: (r.dump(k), r.pttl(k) > 0) for k in sorted(r.keys(f"{key}*"))}


# ---- One user, one payload --------------------------------------------------------------------


def test_an_id_reused_for_another_user_raises_and_never_answers_with_their_data(
    client: Any, board_key: str, r: Any
) -> None:
    board = rl.RedisLeaderboard(client, board_key)
    ann = board.submit(
        "ann", 100, {"name": "Ann", "email": "ann@example.com"}, submission_id="run-1"
    )
    assert ann["duplicate"] is False
    before = snapshot(r, board_key)
    with pytest.raises(rl.SubmissionIdReused, match="another user") as raised:
        board.submit("bob", 500, {"name": "Bob"}, submission_id="run-1")
    assert isinstance(raised.value, ValueError)
    assert "ann" not in str(raised.value).replace(board_key, "")  # no trace of Ann's data
    assert snapshot(r, board_key) == before  # Bob never written, nothing changed
    assert board.get_user_entry("bob") is None
    # Ann's own resend is a duplicate: her first result.
    again = board.submit(
        "ann", 100, {"name": "Ann", "email": "ann@example.com"}, submission_id="run-1"
    )
    assert again == {**ann, "duplicate": True}


def test_an_id_reused_with_another_payload_raises(client: Any, board_key: str, r: Any) -> None:
    board = rl.RedisLeaderboard(client, board_key, ties="dense")
    first = board.submit("ann", 10, {"a": "1", "b": "2"}, mode="best", submission_id="s")
    before = snapshot(r, board_key)
    for score, metadata, mode in [
        (11, {"a": "1", "b": "2"}, "best"),  # another score
        (10, {"a": "1", "b": "2"}, "set"),  # another mode
        (10, {"a": "1"}, "best"),  # another metadata
        (10, {"a": "1", "b": "3"}, "best"),
        (10, None, "best"),
    ]:
        with pytest.raises(rl.SubmissionIdReused, match="another score, mode or metadata"):
            board.submit("ann", score, metadata, mode=mode, submission_id="s")  # type: ignore[arg-type]
        assert snapshot(r, board_key) == before
    # The metadata's field order is not part of the payload: a resend from another dict order.
    again = board.submit("ann", 10, {"b": "2", "a": "1"}, mode="best", submission_id="s")
    assert again == {**first, "duplicate": True}


def test_ids_of_group_writes_belong_to_one_user(client: Any, board_key: str, r: Any) -> None:
    clock = FakeClock(SUNDAY_LATE)
    boards = [
        rl.RedisLeaderboard(client, f"{board_key}:alltime"),
        rl.PeriodicLeaderboard(client, f"{board_key}:weekly", period="week", clock=clock),
        rl.RollingLeaderboard(
            client,
            f"{board_key}:recent",
            window=timedelta(hours=1),
            bucket=timedelta(minutes=5),
            clock=clock,
        ),
    ]
    group = rl.LeaderboardGroup(client, boards)
    group.submit("ann", 7, {"email": "ann@example.com"}, mode="incr", submission_id="g")
    before = snapshot(r, board_key)
    with pytest.raises(rl.SubmissionIdReused, match="another user"):
        group.submit("bob", 7, {"email": "ann@example.com"}, mode="incr", submission_id="g")
    with pytest.raises(rl.SubmissionIdReused, match="another score"):
        group.submit("ann", 8, {"email": "ann@example.com"}, mode="incr", submission_id="g")
    assert snapshot(r, board_key) == before


# ---- The submission, not the period -----------------------------------------------------------


def weekly_group(api: Any, client: Any, key: str, clock: FakeClock) -> tuple[Any, list[Any]]:
    boards = [
        api.RedisLeaderboard(client, f"{key}:alltime"),
        api.PeriodicLeaderboard(client, f"{key}:weekly", period="week", clock=clock),
        api.PeriodicLeaderboard(client, f"{key}:daily", period="day", clock=clock),
    ]
    return api.LeaderboardGroup(client, boards), boards


def test_a_group_resend_across_a_period_boundary_applies_once(
    redis_server: RedisServer, client: Any, board_key: str, r: Any
) -> None:
    """The issue's case: sent at 23:59:59 Sunday, its reply lost, resent after midnight."""
    clock = FakeClock(SUNDAY_LATE)
    dropper = ReplyDropper(redis_server.port, drops=1)
    lossy = rl.Client(port=dropper.port)
    try:
        group, _ = weekly_group(rl, lossy, board_key, clock)
        with pytest.raises(rl.ConnectionError):  # applied; its reply went nowhere
            group.submit("ann", 3, {"team": "red"}, mode="incr", submission_id="m-1", retries=0)
    finally:
        lossy.close()
        dropper.close()
    assert r.zscore(f"{board_key}:weekly:2026-W48", "ann") == 3.0
    clock.now = MONDAY
    group, boards = weekly_group(rl, client, board_key, clock)
    again = group.submit("ann", 3, {"team": "red"}, mode="incr", submission_id="m-1")
    assert {k: (v["duplicate"], v.get("period")) for k, v in again.items()} == {
        f"{board_key}:alltime": (True, None),
        f"{board_key}:weekly": (True, "2026-W48"),
        f"{board_key}:daily": (True, "2026-11-29"),
    }
    assert all(v["score"] == 3.0 for v in again.values())
    # Nothing in the new periods; the old ones hold the one write.
    assert boards[1].current().key == f"{board_key}:weekly:2026-W49"
    assert boards[1].get_size() == 0 and boards[2].get_size() == 0
    assert r.zscore(f"{board_key}:alltime", "ann") == 3.0
    assert r.zscore(f"{board_key}:daily:2026-11-29", "ann") == 3.0
    # A new submission in the new week is written there, and says so.
    new = group.submit("ann", 1, mode="incr", submission_id="m-2")
    assert new[f"{board_key}:weekly"]["period"] == "2026-W49"
    assert new[f"{board_key}:weekly"]["duplicate"] is False
    assert new[f"{board_key}:alltime"]["score"] == 4.0


def test_a_periodic_boards_resend_after_the_boundary_returns_the_first_result(
    client: Any, board_key: str, r: Any
) -> None:
    clock = FakeClock(SUNDAY_LATE)
    weekly = rl.PeriodicLeaderboard(client, board_key, period="week", clock=clock)
    first = weekly.submit("ann", 5, mode="incr", submission_id="x")
    assert (first["period"], first["duplicate"]) == ("2026-W48", False)
    clock.now = MONDAY
    again = weekly.submit("ann", 5, mode="incr", submission_id="x")
    assert again == {**first, "duplicate": True}
    assert weekly.get_size() == 0  # W49 untouched
    assert r.zscore(f"{board_key}:2026-W48", "ann") == 5.0
    # The record is the periodic board's, kept for submission_ttl, not for the period.
    assert 86_000_000 < r.pttl(f"{board_key}:submission:x") <= 86_400_000
    assert not r.exists(f"{board_key}:2026-W48:submission:x")
    # upsert_many's ids are the periodic board's too.
    weekly.current().upsert_many([("bea", 2, None, "bulk-1")])
    clock.now = MONDAY + timedelta(days=7)  # W50
    dup = weekly.submit("bea", 2, submission_id="bulk-1")
    assert (dup["duplicate"], dup["period"], dup["rank"]) == (True, "2026-W49", None)
    assert weekly.get_size() == 0


def test_asyncio_resend_across_a_period_boundary_applies_once(
    redis_server: RedisServer, board_key: str, r: Any
) -> None:
    async def main() -> None:
        clock = FakeClock(SUNDAY_LATE)
        async with aio.Client(port=redis_server.port) as client:
            group, boards = weekly_group(aio, client, board_key, clock)
            first = await group.submit("ann", 2, mode="incr", submission_id="a-1")
            clock.now = MONDAY
            again = await group.submit("ann", 2, mode="incr", submission_id="a-1")
            assert again == {k: {**v, "duplicate": True} for k, v in first.items()}
            assert again[f"{board_key}:weekly"]["period"] == "2026-W48"
            assert await boards[1].get_size() == 0
            with pytest.raises(rl.SubmissionIdReused, match="another user"):
                await group.submit("bob", 2, mode="incr", submission_id="a-1")
            weekly = boards[1]
            one = await weekly.submit("cy", 1, submission_id="a-2")
            assert one["period"] == "2026-W49"

    asyncio.run(main())


# ---- Exceptions a caller tells apart ----------------------------------------------------------


def test_each_refusal_has_its_own_valueerror(client: Any, board_key: str) -> None:
    for error in (rl.OptionsMismatch, rl.PeriodClosed, rl.SubmissionIdReused):
        assert issubclass(error, ValueError)
    rl.RedisLeaderboard(client, board_key, order="asc").upsert_user("a", 1)
    with pytest.raises(rl.OptionsMismatch, match="order='asc'"):
        rl.RedisLeaderboard(client, board_key).submit("b", 1)
    other = f"{board_key}:g"
    group = rl.LeaderboardGroup(
        client, [rl.RedisLeaderboard(client, other), rl.RedisLeaderboard(client, board_key)]
    )
    with pytest.raises(rl.OptionsMismatch, match=board_key):
        group.submit("b", 1)
    clock = FakeClock(MONDAY)
    weekly = rl.PeriodicLeaderboard(client, f"{board_key}:w", period="week", clock=clock)
    last_week = weekly.previous()
    with pytest.raises(rl.PeriodClosed, match="2026-W48"):
        last_week.submit("a", 1)


def test_rate_limited_from_a_group_names_the_board(client: Any, board_key: str) -> None:
    calm = rl.RedisLeaderboard(client, f"{board_key}:calm")
    strict = rl.RedisLeaderboard(client, f"{board_key}:strict", rate_limit=(1, 60))
    group = rl.LeaderboardGroup(client, [calm, strict])
    group.submit("a", 1)
    with pytest.raises(rl.RateLimited, match=f"{board_key}:strict") as raised:
        group.submit("a", 2)
    assert raised.value.retry_after > 0
    assert calm.get_user_entry("a")["score"] == 1.0  # type: ignore[index]
