"""Score limits (fair play): ``score_range=(min, max)`` and ``max_increment``, sync and asyncio.
A write leaving a score outside the range, or improving it by more than the increment in the
board's order, raises ``ScoreRejected`` (a ValueError) from inside the write's script and changes
nothing: no score, no metadata, no event, no rate-limit count, no submission record. The limits
are recorded with the board (a client without them, or with others, is refused), hold on every
write path (the guide's writes, submit's modes, upsert_many, a group's write, a periodic board's
period) and are checked before anything is sent when they are malformed. The rules themselves
are pinned against the plain-Python model in test_ranking_differential.py."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from apis import Api
from helpers import UTC, FakeClock, snapshot
from redis_leaderboard import OptionsMismatch, RateLimited, ScoreRejected


def test_score_rejected_is_a_value_error() -> None:
    assert issubclass(ScoreRejected, ValueError)


def test_every_mode_and_direction(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10, score_range=(0, 1000), max_increment=100)
    assert board.upsert_user("a", 50)["score"] == 50.0  # a first write: only the range
    with pytest.raises(ScoreRejected, match=r"^user b on .*: score 5000 is outside score_range "
                       r"\[0, 1000\]; nothing was changed$"):  # fmt: skip
        board.upsert_user("b", 5000)
    with pytest.raises(ScoreRejected, match="score -1 is outside"):
        board.submit("b", -1)
    with pytest.raises(ScoreRejected, match=r"an improvement of 101 \(from 50 to 151\)"):
        board.increment_score("a", 101)
    assert board.increment_score("a", 100)["score"] == 150.0  # exactly the increment: taken
    assert board.increment_score("a", -150)["score"] == 0.0  # a loss is no improvement
    with pytest.raises(ScoreRejected, match="an improvement of 101"):
        board.increment_score("new", 101)  # an increment of a new entry counts from 0
    with pytest.raises(ScoreRejected, match="an improvement of 200"):
        board.submit("a", 200, mode="best")
    # A best that is not better leaves the score as it was: never refused.
    assert board.submit("a", -5000, mode="best")["changed"] is False
    assert board.get_size() == 1 and board.get_user_entry("a")["score"] == 0.0
    # Ascending boards improve downwards.
    asc = api.leaderboard(f"{board_key}:asc", 10, order="asc", max_increment=10)
    asc.upsert_user("r", 100)
    with pytest.raises(ScoreRejected, match=r"an improvement of 50 \(from 100 to 50\)"):
        asc.upsert_user("r", 50)
    assert asc.upsert_user("r", 90)["score"] == 90.0
    assert asc.upsert_user("r", 5000)["score"] == 5000.0  # slower: no improvement
    # One side of the range alone.
    floor = api.leaderboard(f"{board_key}:floor", 10, score_range=(0, None))
    assert floor.upsert_user("x", 1e15)["score"] == 1e15
    with pytest.raises(ScoreRejected, match=r"outside score_range \[0, \+inf\]"):
        floor.upsert_user("x", -1)


def test_a_refused_write_changes_nothing_with_every_guard(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 10, score_range=(0, 100), rate_limit=(3, 60), events=True)
    board.submit("u", 10, {"name": "U"}, submission_id="s1")
    before = snapshot(r, board_key)
    for _ in range(5):  # neither counted by the rate limit nor recorded under its id
        with pytest.raises(ScoreRejected):
            board.submit("u", 1000, {"name": "cheat"}, submission_id="s2")
    assert snapshot(r, board_key) == before
    # The id was not used: the same id with an allowed score applies once.
    assert board.submit("u", 20, submission_id="s2")["duplicate"] is False
    board.submit("u", 30)  # the third write in the window: the refused ones did not count
    with pytest.raises(RateLimited):
        board.submit("u", 40)
    with board.events("0", block=0) as stream:
        assert [e["score"] for e in stream] == [10.0, 20.0, 30.0]


def test_upsert_many_refuses_a_chunk_with_an_entry_out_of_limits(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.leaderboard(board_key, 10, score_range=(0, 100), max_increment=50)
    assert board.upsert_many([("a", 10), ("b", 20)])["written"] == 2
    before = snapshot(r, board_key)
    with pytest.raises(ScoreRejected, match=r"user c .* score 500 is outside"):
        board.upsert_many([("a", 20), ("c", 500)])
    # Two entries of one user in a chunk: the second's improvement counts from the first.
    with pytest.raises(ScoreRejected, match=r"user a .* improvement of 55 \(from 0 to 55\)"):
        board.upsert_many([("a", 0), ("a", 55)])
    assert snapshot(r, board_key) == before  # each refused chunk wrote nothing
    assert board.upsert_many([("a", 60), ("a", 100)])["written"] == 2  # 10 -> 60 -> 100


def test_the_limits_are_recorded_with_the_board(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10, score_range=(0, 100), max_increment=5)
    board.upsert_user("a", 1)
    layout = ", layout='compact'" if board.layout == "compact" else ""  # recorded too
    for other in ({}, {"score_range": (0, 1000), "max_increment": 5}, {"score_range": (0, 100)}):
        with pytest.raises(OptionsMismatch, match=r"score_range=\(0, 100\), max_increment=5"
                           rf"{layout} \(recorded in Redis\)"):  # fmt: skip
            api.leaderboard(board_key, 10, **other).upsert_user("cheater", 1e9)
    assert board.get_size() == 1
    assert "score_range=(0.0, 100.0), max_increment=5.0" in repr(board)
    assert (board.score_range, board.max_increment) == ((0.0, 100.0), 5.0)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [({"score_range": (5, 1)}, ValueError, "score_range must be (min, max) with min <= max"),
     ({"score_range": (0, float("inf"))}, ValueError, "must be finite numbers"),
     ({"score_range": [0, 1]}, TypeError, "score_range must be None or a (min, max) tuple"),
     ({"score_range": (0,)}, TypeError, "score_range must be None or a (min, max) tuple"),
     ({"max_increment": -1}, ValueError, "max_increment must not be negative"),
     ({"max_increment": "x"}, (TypeError, ValueError), "max_increment")],
)  # fmt: skip
def test_malformed_limits_raise_before_anything_is_sent(
    api: Api, options: dict[str, Any], error: Any, message: str
) -> None:
    with pytest.raises(error) as raised:
        api.leaderboard("never-written", 10, **options)
    assert message in str(raised.value)
    with pytest.raises(error) as raised:
        api.periodic("never-written", period="day", **options)
    assert message in str(raised.value)


def test_a_groups_write_is_refused_whole(api: Api, board_key: str, r: Any) -> None:
    free = api.leaderboard(f"{board_key}:free", 10)
    limited = api.leaderboard(f"{board_key}:limited", 10, max_increment=10)
    group = api.group([free, limited])
    group.submit("u", 5, mode="incr")
    before = snapshot(r, board_key)
    with pytest.raises(ScoreRejected, match=f"on {board_key}:limited"):
        group.submit("u", 50, mode="incr")
    assert snapshot(r, board_key) == before  # the free board was not written either
    group.submit("u", 10, mode="incr")
    assert [b.get_user_entry("u")["score"] for b in (free, limited)] == [15.0, 15.0]


def test_a_periodic_boards_periods_carry_the_limits(api: Api, board_key: str) -> None:
    clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
    board = api.periodic(board_key, "day", clock=clock, score_range=(0, 10), max_increment=3)
    board.submit("u", 3)
    with pytest.raises(ScoreRejected):
        board.submit("u", 7)
    clock.advance(timedelta(days=1))  # a new period: its own board, the same limits
    with pytest.raises(ScoreRejected, match="score 11 is outside"):
        board.submit("u", 11)
    assert board.submit("u", 10)["score"] == 10.0  # a first write there: only the range


def test_leagues_and_tournaments_carry_the_limits(api: Api, board_key: str, r: Any) -> None:
    # Every cohort's (and every period's) board checks them; they are part of the recorded
    # configuration, so a client without them is refused even where no board recorded them yet.
    clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
    league_key, tournament_key = f"{board_key}:league", f"{board_key}:tournament"
    limits = {"score_range": (0, 100), "max_increment": 30}
    league = api.league(league_key, clock, tiers=("low", "high"), cohort_size=3, mode="incr",
                        promote=1, demote=1, **limits)  # fmt: skip
    tournament = api.tournament(tournament_key, clock, schedule="day", mode="best", **limits)
    assert league.submit("u", 30)["score"] == 30.0
    assert tournament.submit("u", 30)["score"] == 30.0
    before = snapshot(r, board_key)
    with pytest.raises(ScoreRejected, match=r"improvement of 31 \(from 30 to 61\)"):
        league.submit("u", 31)
    with pytest.raises(ScoreRejected, match="score 101 is outside"):
        league.submit("new", 101)  # would have placed "new": nothing placed either
    with pytest.raises(ScoreRejected, match=r"improvement of 31 \(from 30 to 61\)"):
        tournament.submit("u", 61)
    with pytest.raises(ScoreRejected, match="score -1 is outside"):
        tournament.submit("new", -1)  # no attempt used, no entrant
    assert snapshot(r, board_key) == before
    assert league.standings("u")["size"] == 1 and tournament.status("new")["joined"] is False
    for other in ({}, {"score_range": (0, 100)}):
        with pytest.raises(OptionsMismatch):
            api.league(league_key, clock, tiers=("low", "high"), cohort_size=3, mode="incr",
                       promote=1, demote=1, **other).submit("cheat", 1e9)  # fmt: skip
        with pytest.raises(OptionsMismatch):
            api.tournament(tournament_key, clock, schedule="day", mode="best",
                           **other).submit("cheat", 1e9)  # fmt: skip
    assert snapshot(r, board_key) == before
    assert (league.score_range, tournament.max_increment) == ((0, 100), 30)


def test_a_client_without_limits_cannot_bulk_load_past_them_after_a_read(
    api: Api, board_key: str, r: Any
) -> None:
    # A read confirms the board's order and ties only; upsert_many's MULTI/EXEC chunks (which
    # check nothing) are sent only once the board is known to record no guards.
    api.leaderboard(board_key, 10, score_range=(0, 100)).upsert_user("a", 5)
    plain = api.leaderboard(board_key, 10)
    assert [e["user_id"] for e in plain.get_top(3)] == ["a"]
    before = snapshot(r, board_key)
    with pytest.raises(OptionsMismatch, match=r"score_range=\(0, 100\)"):
        plain.upsert_many([("cheater", 1e12)])
    assert snapshot(r, board_key) == before


def test_a_bulk_load_with_other_options_is_an_options_mismatch(api: Api, board_key: str) -> None:
    # The board's recorded order is checked before any entry is judged by the limits (which
    # would otherwise be judged in the wrong order).
    api.leaderboard(board_key, 10, order="asc").upsert_user("x", 10)
    with pytest.raises(OptionsMismatch, match="order='asc'"):
        api.leaderboard(board_key, 10, score_range=(0, 5)).upsert_many([("x", 50)])


def test_a_groups_mismatch_names_the_limits(api: Api, board_key: str) -> None:
    api.leaderboard(f"{board_key}:a", 10, score_range=(0, 100)).upsert_user("u", 1)
    other = api.leaderboard(f"{board_key}:a", 10, score_range=(0, 1000))
    group = api.group([api.leaderboard(f"{board_key}:b", 10), other])
    with pytest.raises(OptionsMismatch, match=r"score_range=\(0, 100\).*this group writes it "
                       r"with .*score_range=\(0, 1000\)"):  # fmt: skip
        group.submit("u", 2)


def test_a_new_period_refuses_a_client_without_the_guards(api: Api, board_key: str, r: Any) -> None:
    # Each period is a board of its own, but the guards are recorded for the periodic board
    # too ("<key>:options"): a client without them is refused in a period nobody opened yet.
    clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
    limited = api.periodic(board_key, "day", clock=clock, score_range=(0, 10), rate_limit=(5, 60))
    limited.submit("u", 3)
    clock.advance(timedelta(days=1))
    before = snapshot(r, board_key)
    plain = api.periodic(board_key, "day", clock=clock)
    with pytest.raises(OptionsMismatch, match=r"rate_limit=\(5, 60\).*score_range=\(0, 10\)"):
        plain.submit("cheat", 1e9)
    with pytest.raises(OptionsMismatch):
        plain.current().upsert_many([("cheat", 1e9)])
    with pytest.raises(OptionsMismatch):
        api.group([plain]).submit("cheat", 1e9)
    assert snapshot(r, board_key) == before
    assert limited.submit("u", 4)["score"] == 4.0  # the new period, with the limits
