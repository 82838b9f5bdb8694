"""Team boards' score and rate limits, sync and asyncio, through the plain board's mechanism
(the ``range``/``maxinc``/``rate`` guard words, ``check_score_limits`` and ``plan_guards`` of
lib/guards.lua and lib/submissions.lua, on the members' board):

- ``score_range`` and ``max_increment`` judge a member's own score (the score the write leaves;
  how much one write improves it in the board's order, a hidden member's from their kept score,
  an ``"incr"`` of a new member from 0); ``rate_limit`` counts each member's score writes in a
  sliding window of the server's clock. A refused write raises the plain board's exception
  (``ScoreRejected``, ``RateLimited`` with ``retry_after``) and changes nothing: neither the
  member's score nor any team's, no membership, no event, no rate count, no submission record.
- A resend of an applied ``submission_id`` is never refused by a limit: it answers the first
  result.
- The options are recorded as a plain board records them (``f"{key}:members:options"``): a
  client with other options is refused with ``OptionsMismatch`` (a ValueError), reads are not;
  a board without them records nothing and keeps no rate window.
- Bad options raise before anything is sent.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from apis import Api, asyncio_only, sync_and_one_loop, unwrap
from helpers import layout_option_fields, snapshot
from redis_leaderboard import OptionsMismatch, RateLimited, ScoreRejected


def standing(board: Any) -> tuple[dict[str, float], dict[str, float]]:
    """The members' scores and the teams' scores."""
    members = {e["user_id"]: e["score"] for e in board.members.list_all()}
    return members, {e["user_id"]: e["score"] for e in board.teams.list_all()}


# ---- Score limits ------------------------------------------------------------------------------


def test_score_range_refuses_a_members_write_and_changes_nothing(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key, score_range=(0, 100), events=True)
    board.submit("ann", 60, team="red")
    board.submit("bob", 30, team="blue")
    before = snapshot(r, board_key)
    with pytest.raises(
        ScoreRejected, match=r"^user ann on .*: score 101 is outside score_range \[0, 100\]"
    ):
        board.submit("ann", 101)
    with pytest.raises(ScoreRejected, match="score 160 is outside"):
        board.submit("ann", 100, mode="incr", team="blue")  # the move is refused with it
    with pytest.raises(ScoreRejected, match="score -1 is outside"):
        board.submit("cid", -1, {"name": "Cid"}, team="green")  # a new member
    assert snapshot(r, board_key) == before  # no score, team, membership, metadata or event
    assert board.team_of("ann") == "red" and board.team_of("cid") is None
    assert standing(board) == ({"ann": 60.0, "bob": 30.0}, {"red": 60.0, "blue": 30.0})
    # Within it: taken, both boards follow.
    assert board.submit("ann", 100, team="blue")["team_score"] == 130.0
    # A 'best' that is not better leaves the score as it was: never refused.
    assert board.submit("bob", -50, mode="best")["changed"] is False


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_max_increment_is_an_improvement_in_the_boards_order(
    api: Api, board_key: str, r: Any, order: str
) -> None:
    board = api.make("TeamLeaderboard", board_key, order=order, max_increment=10)
    sign = 1 if order == "desc" else -1
    board.submit("ann", 50, team="red")  # a first 'set': only the range
    before = snapshot(r, board_key)
    with pytest.raises(ScoreRejected, match=r"an improvement of 11 \(from 50 to "):
        board.submit("ann", 50 + sign * 11)
    with pytest.raises(ScoreRejected, match="an improvement of 11"):
        board.submit("ann", sign * 11, mode="incr")
    with pytest.raises(ScoreRejected, match="an improvement of 12"):
        board.submit("new", sign * 12, mode="incr", team="red")  # counts from 0
    assert snapshot(r, board_key) == before
    assert board.submit("ann", sign * 10, mode="incr")["score"] == 50 + sign * 10
    assert board.submit("ann", 50 - sign * 1000)["team_score"] == 50 - sign * 1000  # a loss
    assert standing(board)[1] == {"red": 50 - sign * 1000}


def test_a_hidden_members_write_is_judged_from_their_kept_score(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key, max_increment=10)
    board.submit("ann", 50, team="red")
    board.submit("bob", 5, team="red")
    board.hide("ann")
    before = snapshot(r, board_key)
    with pytest.raises(ScoreRejected, match=r"an improvement of 50 \(from 50 to 100\)"):
        board.submit("ann", 100, team="blue")
    assert snapshot(r, board_key) == before and board.team_of("ann") == "red"
    assert board.submit("ann", 60)["rank"] is None  # kept aside, judged from 50
    board.unhide("ann")  # the kept score comes back: not judged again
    assert standing(board)[1] == {"red": 65.0}


# ---- Rate limits -------------------------------------------------------------------------------


@sync_and_one_loop  # its cost is its sleep
def test_a_members_writes_per_period_and_a_refusal_changes_nothing(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key, rate_limit=(3, 1.5), events=True)
    board.submit("ann", 1, team="red")
    board.submit("ann", 2, team="blue")
    board.submit("bob", 7, team="red")  # per member
    board.move("ann", "red")  # not a score write: not counted
    board.hide("bob")
    board.unhide("bob")
    board.submit("ann", 3, mode="incr")
    before = snapshot(r, board_key)
    assert f"{board_key}:rate:ann" in before  # the member's window, under the board's key
    with pytest.raises(RateLimited, match=r"user ann may write 3 times per 1\.5 s") as limited:
        board.submit("ann", 100, {"x": "y"}, team="blue")
    assert 0 < limited.value.retry_after <= 1.5
    assert snapshot(r, board_key) == before  # score, teams, membership, events, the window
    assert standing(board) == ({"ann": 5.0, "bob": 7.0}, {"red": 12.0})
    assert board.submit("bob", 8)["team_score"] == 13.0  # another member's own window
    time.sleep(limited.value.retry_after + 0.05)  # the window slides on the server's clock
    assert board.submit("ann", 100, team="blue")["team_score"] == 100.0


@asyncio_only
def test_tasks_at_once_get_exactly_max_writes(api: Api, board_key: str) -> None:
    board = unwrap(api.make("TeamLeaderboard", board_key, rate_limit=(3, 30)))

    async def main() -> list[Any]:
        return await asyncio.gather(
            *(board.submit("ann", 1, mode="incr", team="red") for _ in range(10)),
            return_exceptions=True,
        )

    outcomes = api.run(main())
    assert [o["team_score"] for o in outcomes[:3]] == [1.0, 2.0, 3.0]
    assert all(isinstance(o, RateLimited) for o in outcomes[3:])


def test_an_idle_members_window_leaves(api: Api, board_key: str, r: Any) -> None:
    board = api.make("TeamLeaderboard", board_key, rate_limit=(5, 0.2))
    board.submit("ann", 1, team="red")
    assert 0 < r.pttl(f"{board_key}:rate:ann") <= 200


# ---- Resends -----------------------------------------------------------------------------------


def test_a_resend_is_never_refused_by_a_limit(api: Api, board_key: str, r: Any) -> None:
    board = api.make(
        "TeamLeaderboard", board_key, rate_limit=(2, 60), max_increment=10, score_range=(-50, 50)
    )
    first = board.submit("ann", 10, team="red", submission_id="m1")  # from 0: +10
    board.submit("ann", -5)  # the window is full now; a fresh 'set 10' would be +15
    with pytest.raises(RateLimited):
        board.submit("ann", -4)
    before = snapshot(r, board_key)
    again = board.submit("ann", 10, team="red", submission_id="m1")
    assert again == {**first, "duplicate": True}  # the first result, field for field
    assert snapshot(r, board_key) == before  # nothing written, nothing counted
    # Without a full window, the resend still answers first (a fresh write would be refused by
    # max_increment).
    other = api.make("TeamLeaderboard", f"{board_key}:2", max_increment=10, score_range=(-50, 50))
    first = other.submit("bob", 10, team="red", submission_id="m2")
    other.submit("bob", -5)
    assert other.submit("bob", 10, team="red", submission_id="m2") == {**first, "duplicate": True}
    with pytest.raises(ScoreRejected, match="an improvement of 15"):
        other.submit("bob", 10, team="red", submission_id="m3")


def test_a_refused_write_keeps_no_submission_record(api: Api, board_key: str, r: Any) -> None:
    board = api.make("TeamLeaderboard", board_key, score_range=(0, 10))
    with pytest.raises(ScoreRejected):
        board.submit("ann", 11, team="red", submission_id="s")
    assert r.exists(f"{board_key}:submission:s") == 0
    assert board.submit("ann", 9, team="red", submission_id="s")["duplicate"] is False


# ---- Recorded options --------------------------------------------------------------------------


def test_options_are_recorded_and_a_client_with_others_is_refused(
    api: Api, board_key: str, r: Any
) -> None:
    guarded = api.make(
        "TeamLeaderboard", board_key, rate_limit=(5, 60), score_range=(0, 100), max_increment=50
    )
    guarded.submit("ann", 10, team="red")
    recorded = r.hgetall(f"{board_key}:members:options")
    assert recorded == {
        "rate_limit": "5/60000",
        "score_range": "0/100",
        "max_increment": "50",
        **layout_option_fields(guarded.members),
    }  # a plain board's fields
    before = snapshot(r, board_key)
    for options in [
        {},  # would bypass every limit
        {"rate_limit": (6, 60), "score_range": (0, 100), "max_increment": 50},
        {"rate_limit": (5, 60), "score_range": (0, 1000), "max_increment": 50},
        {"rate_limit": (5, 60), "score_range": (0, 100)},
    ]:
        other = api.make("TeamLeaderboard", board_key, **options)
        with pytest.raises(OptionsMismatch, match="rate_limit=5/60000") as refused:
            other.submit("ann", 11)
        assert isinstance(refused.value, ValueError)
        with pytest.raises(OptionsMismatch):
            other.submit("bob", 1, team="red", submission_id="x")
    assert snapshot(r, board_key) == before
    plain = api.make("TeamLeaderboard", board_key)
    # Reads and the calls that write no score are not refused (no events recorded).
    assert plain.teams.get_top()[0]["user_id"] == "red"
    assert plain.team_of("ann") == "red" and plain.move("ann", "blue")["team_score"] == 10.0
    # A limit no write recorded yet is recorded by the first write carrying it, as on a plain
    # board (a board of this client's has it from then on).
    events = api.make(
        "TeamLeaderboard",
        board_key,
        rate_limit=(5, 60),
        score_range=(0, 100),
        max_increment=50,
        events=True,
    )
    events.submit("ann", 12)
    assert r.hget(f"{board_key}:members:options", "events") == "1"
    with pytest.raises(OptionsMismatch, match="events=1"):
        guarded.submit("ann", 13)


def test_a_board_without_options_records_none(api: Api, board_key: str, r: Any) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("ann", 10, team="red", submission_id="s")
    board.submit("ann", 5, mode="incr")
    board.move("ann", "blue")
    board.hide("ann")
    board.unhide("ann")
    board.remove("ann")
    board.submit("bob", 1, team="red")
    assert r.hgetall(f"{board_key}:members:options") == layout_option_fields(board.members)
    assert not [k for k in r.keys(f"{board_key}:*") if ":rate:" in k or k.endswith(":events")]
    assert board.rate_limit is None and board.score_range is None
    assert board.max_increment is None and board.events_enabled is False
    layout = ", layout='compact'" if board.layout == "compact" else ""
    assert repr(board).endswith(f"aggregate='sum', order='desc'{layout})")


def test_options_are_checked_before_anything_is_sent(api: Api, board_key: str, r: Any) -> None:
    bad: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"rate_limit": (0, 1)}, ValueError, "max_writes must be at least 1"),
        ({"rate_limit": (1, 0)}, ValueError, "per_seconds"),
        ({"rate_limit": 5}, TypeError, "rate_limit must be None or a"),
        ({"events": "yes"}, TypeError, "events must be a bool"),
        ({"events_maxlen": 0}, ValueError, "events_maxlen"),
        ({"score_range": (5, 1)}, ValueError, "min <= max"),
        ({"score_range": (0, float("inf"))}, ValueError, "finite"),
        ({"max_increment": -1}, ValueError, "max_increment must not be negative"),
        ({"submission_ttl": 0}, ValueError, "submission_ttl"),
    ]
    for options, error, message in bad:
        with pytest.raises(error, match=message):
            api.make("TeamLeaderboard", board_key, **options)
    assert r.keys(f"{board_key}*") == []
    board = api.make(
        "TeamLeaderboard",
        board_key,
        rate_limit=(3, 2),
        events=True,
        events_maxlen=50,
        score_range=(None, 10),
        max_increment=2.5,
    )
    assert board.rate_limit == (3, 2.0) and board.score_range == (None, 10.0)
    assert board.max_increment == 2.5 and board.events_enabled is True
    assert board.events_key == f"{board_key}:events"
    layout = ", layout='compact'" if board.layout == "compact" else ""
    assert repr(board).endswith(
        "order='desc', rate_limit=(3, 2.0), events=True, score_range=(None, 10.0), "
        f"max_increment=2.5{layout})"
    )
