"""Team boards' shared concerns, sync and asyncio, through the mechanisms every board type uses:
submission ids (lib/submissions.lua) and hidden members (lib/hiding.lua).

- With a ``submission_id`` a member's write applies once: a resend writes nothing and answers
  the first result field for field (its team, team score and rank as they were then), with
  ``duplicate`` True for another call and False for the same call's own resend after a lost
  reply (``ReplyDropper``); the id reused for another member or payload (score, mode, metadata,
  the team as sent) raises ``SubmissionIdReused`` and changes nothing.
- A hidden member is on no ranking and their contribution leaves their team's score: a team's
  score is its visible members'. Their writes are judged and kept aside; ``unhide`` puts the
  kept score back on the members' board and into the team they are in then.
- Pinned against a plain-Python model (``TeamModel`` of test_team.py, with hiding and ids) over
  seeded random sequences: 0 mismatches.
"""

from __future__ import annotations

import random
from typing import Any, Optional

import pytest
from test_team import TeamModel

from apis import Api
from conftest import RedisServer
from helpers import ReplyDropper, has_stored_metadata, snapshot
from redis_leaderboard import ConnectionError, SubmissionIdReused

# ---- Submission ids ------------------------------------------------------------------------------


def test_a_resend_answers_the_first_result_field_for_field(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("bob", 5, team="red")
    first = board.submit("ann", 10, {"name": "Ann"}, team="red", submission_id="m1:ann")
    assert first["duplicate"] is False
    assert (first["score"], first["team"], first["team_score"], first["team_rank"]) == (
        10.0, "red", 15.0, 1,
    )  # fmt: skip
    # The team changes after it: the resend answers the first result, nothing recomputed.
    board.submit("bob", 100, team="red")
    board.submit("cid", 500, team="blue")
    board.move("ann", "blue")
    before = snapshot(r, board_key)
    again = board.submit("ann", 10, {"name": "Ann"}, team="red", submission_id="m1:ann")
    assert again == {**first, "duplicate": True}
    assert snapshot(r, board_key) == before  # wrote nothing: ann stays in blue
    assert board.team_of("ann") == "blue"
    assert board.teams.get_user_entry("red")["score"] == 100.0
    # An 'incr' applies once.
    board.submit("ann", 1, mode="incr", submission_id="m2:ann")
    board.submit("ann", 1, mode="incr", submission_id="m2:ann")
    assert board.members.get_user_entry("ann")["score"] == 11.0
    assert board.teams.get_user_entry("blue")["score"] == 511.0


def test_a_resend_of_a_write_into_their_own_team(api: Api, board_key: str) -> None:
    board = api.make("TeamLeaderboard", board_key, aggregate="best", order="asc")
    board.move("ann", "red")
    first = board.submit("ann", 30, submission_id="own")
    assert (first["team"], first["team_score"], first["previous_team"]) == ("red", 30.0, "red")
    board.submit("bob", 20, team="red")
    assert board.submit("ann", 30, submission_id="own") == {**first, "duplicate": True}


def test_an_id_belongs_to_one_member_and_one_payload(api: Api, board_key: str, r: Any) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("ann", 10, {"level": "3"}, team="red", submission_id="s1")
    before = snapshot(r, board_key)
    with pytest.raises(SubmissionIdReused, match="another user"):
        board.submit("bob", 10, {"level": "3"}, team="red", submission_id="s1")
    clashes: list[dict[str, Any]] = [
        {"score": 11},
        {"metadata": {"level": "4"}},
        {"mode": "incr"},
        {"team": "blue"},  # the team as sent is part of the payload
        {"team": None},  # ann's own team, but not as sent
    ]
    for clash in clashes:
        call: dict[str, Any] = {
            "score": 10, "metadata": {"level": "3"}, "team": "red", "mode": "set", **clash
        }  # fmt: skip
        with pytest.raises(SubmissionIdReused, match="another score, mode or metadata"):
            board.submit("ann", call.pop("score"), call.pop("metadata"), submission_id="s1", **call)
    assert snapshot(r, board_key) == before
    assert isinstance(SubmissionIdReused("x"), ValueError)


def test_a_calls_own_resend_after_a_lost_reply_is_not_a_duplicate(
    api: Api, board_key: str, redis_server: RedisServer, r: Any
) -> None:
    direct = api.make("TeamLeaderboard", board_key)
    direct.submit("warm", 1, team="red", submission_id="warm")  # the script is cached: the
    # first sending runs, not NOSCRIPT
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        client = api.connect(port=proxy.port, socket_timeout=5)
        board = api.make("TeamLeaderboard", board_key, client=client)
        result = board.submit("ann", 7, team="red", mode="incr", submission_id="lost")
        # Without an id, the same loss (a new client: a new connection) raises, not resent.
        proxy.drops += 1
        other = api.make(
            "TeamLeaderboard", board_key, client=api.connect(port=proxy.port, socket_timeout=5)
        )
        with pytest.raises(ConnectionError):
            other.submit("bob", 1, team="red", mode="incr")
        # retries=0: the loss raises; the write applied once, and a resend answers it.
        proxy.drops += 1
        third = api.make(
            "TeamLeaderboard", board_key, client=api.connect(port=proxy.port, socket_timeout=5)
        )
        with pytest.raises(ConnectionError):
            third.submit("cid", 2, team="blue", submission_id="once", retries=0)
    finally:
        proxy.close()
    assert proxy.dropped == 3
    # The first sending applied (its reply was lost); the library resent it and the record
    # answered: this call applied it, so no duplicate; applied once.
    assert result["duplicate"] is False
    assert (result["score"], result["team_score"]) == (7.0, 8.0)
    again = direct.submit("ann", 7, team="red", mode="incr", submission_id="lost")
    assert again == {**result, "duplicate": True}
    assert r.zscore(f"{board_key}:members", "ann") == 7.0
    assert r.zscore(board_key, "red") == 9.0  # warm 1 + ann 7 + bob 1, each once
    resent = direct.submit("cid", 2, team="blue", submission_id="once")
    assert resent["duplicate"] is True and resent["team_score"] == 2.0
    assert r.zscore(board_key, "blue") == 2.0


def test_bad_input_raises_before_anything_is_sent(api: Api, board_key: str, r: Any) -> None:
    board = api.make("TeamLeaderboard", board_key)
    with pytest.raises(ValueError):
        board.submit("ann", 1, team="red", submission_id="")
    with pytest.raises(TypeError):
        board.submit("ann", 1, team="red", submission_id=5)
    with pytest.raises(ValueError):
        board.submit("ann", 1, team="red", submission_id="x", retries=-1)
    with pytest.raises(ValueError):
        api.make("TeamLeaderboard", board_key, submission_ttl=0)
    for method in (board.hide, board.unhide, board.is_hidden):
        with pytest.raises(ValueError):
            method("")
        with pytest.raises(TypeError):
            method(1.5)
    assert r.keys(f"{board_key}*") == []


# ---- Hidden members ------------------------------------------------------------------------------


def test_hiding_takes_a_members_contribution_out_of_their_team(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("ann", 10, {"name": "Ann"}, team="red")
    board.submit("bob", 5, team="red")
    board.submit("cid", 7, team="blue")
    assert board.hide("ann") is True and board.hide("ann") is False
    assert board.is_hidden("ann") is True and board.is_hidden("bob") is False
    assert board.hidden() == ["ann"]
    assert board.members.get_rank("ann") is None  # on no ranking
    assert board.team_members("red") == [{"user_id": "bob", "contribution": 5.0}]
    assert [(e["user_id"], e["score"]) for e in board.teams.get_top()] == [
        ("blue", 7.0), ("red", 5.0),
    ]  # fmt: skip
    assert board.team_of("ann") == "red"  # they keep their team
    # A hidden member's write is judged (its mode) and kept aside: their team is unchanged.
    out = board.submit("ann", 3, mode="incr")
    assert (out["score"], out["rank"], out["team"], out["team_score"]) == (13.0, None, "red", 5.0)
    # Naming a team moves them there, without a contribution.
    out = board.submit("ann", 1, mode="incr", team="blue")
    assert (out["score"], out["team"], out["team_score"], out["previous_team"]) == (
        14.0, "blue", 7.0, "red",
    )  # fmt: skip
    # unhide: the kept score back on the members' board and into the team they are in now.
    assert board.unhide("ann") is True and board.unhide("ann") is False
    assert board.members.get_user_entry("ann") == {
        "user_id": "ann", "score": 14.0, "rank": 1, "metadata": {"name": "Ann"},
    }  # fmt: skip
    assert board.teams.get_user_entry("blue")["score"] == 21.0
    assert board.teams.get_user_entry("red")["score"] == 5.0
    assert board.hidden() == [] and board.is_hidden("ann") is False
    assert r.exists(f"{board_key}:members:hidden") == 0


def test_a_team_whose_members_are_all_hidden_leaves_the_teams_board(
    api: Api, board_key: str
) -> None:
    board = api.make("TeamLeaderboard", board_key, aggregate="best", order="asc")
    board.submit("x", 30.5, team="t")
    board.submit("y", 20.25, team="t")
    board.submit("z", 50, team="u")
    board.hide("y")  # the best goes: the next best is the team's
    assert board.teams.get_user_entry("t")["score"] == 30.5
    board.hide("x")
    assert board.teams.get_rank("t") is None and board.teams.get_size() == 1
    board.unhide("x")
    board.unhide("y")
    assert board.teams.get_user_entry("t")["score"] == 20.25
    # A member hidden before any score: nothing to take out or put back.
    assert board.hide("new") is True
    board.move("new", "t")
    assert board.submit("new", 1)["team_score"] == 20.25  # kept aside
    assert board.unhide("new") is True
    assert board.teams.get_user_entry("t")["score"] == 1.0


def test_removing_a_hidden_member_removes_their_kept_score(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("ann", 10, {"name": "Ann"}, team="red")
    board.submit("bob", 5, team="red")
    board.hide("ann")
    assert has_stored_metadata(r, board.members, "ann")
    assert board.remove("ann") is True
    assert board.hidden() == [] and board.team_of("ann") is None
    assert board.remove("ann") is False
    assert board.teams.get_user_entry("red")["score"] == 5.0
    assert r.exists(f"{board_key}:members:hidden") == 0
    assert not has_stored_metadata(r, board.members, "ann")
    assert board.unhide("ann") is False  # nothing kept: nothing comes back


def test_a_hide_whose_sum_would_not_be_finite_is_refused_whole(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("a", 1e308, team="T")
    board.submit("b", -1e308, team="T")
    board.submit("c", 1e308, team="T")
    before = snapshot(r, board_key)
    with pytest.raises(Exception, match="not a finite number"):
        board.hide("b")  # the others' sum would be infinite
    assert snapshot(r, board_key) == before


def test_a_resend_of_a_hidden_members_write_answers_the_first_result(
    api: Api, board_key: str
) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("ann", 4, team="red")
    first = board.submit("ann", 6, team="red", submission_id="before")
    board.hide("ann")
    assert board.submit("ann", 6, team="red", submission_id="before") == {
        **first, "duplicate": True,
    }  # fmt: skip
    kept = board.submit("ann", 9, team="red", submission_id="while")
    assert kept["rank"] is None and kept["team_score"] is None
    board.unhide("ann")
    assert board.submit("ann", 9, team="red", submission_id="while") == {**kept, "duplicate": True}
    assert board.teams.get_user_entry("red")["score"] == 9.0


# ---- The model -----------------------------------------------------------------------------------


class GuardedTeamModel(TeamModel):
    """TeamModel with hidden members (on no ranking, no contribution) and submission ids."""

    def __init__(self, aggregate: str, order: str) -> None:
        super().__init__(aggregate, order)
        self.hidden: set[str] = set()
        self.kept: dict[str, float] = {}  # hidden members' scores
        self.first: dict[str, tuple[Any, Any]] = {}  # submission id -> (call, result)

    def team_score(self, team: str) -> Optional[float]:
        scores, self.scores = (
            self.scores,
            {m: s for m, s in self.scores.items() if m not in self.hidden},
        )
        try:
            return super().team_score(team)
        finally:
            self.scores = scores

    def submit_with(
        self, sid: Optional[str], member: str, score: float, team: Any, mode: str
    ) -> Any:
        call = (member, score, team, mode)
        if sid is not None and sid in self.first:
            first_call, result = self.first[sid]
            return result if first_call == call else "reused"
        result = self.submit(member, score, team, mode)
        if sid is not None and result != "refused":
            self.first[sid] = (call, result)
        return result

    def hide(self, member: str) -> bool:
        was = member in self.hidden
        self.hidden.add(member)
        return not was

    def unhide(self, member: str) -> bool:
        was = member in self.hidden
        self.hidden.discard(member)
        return was

    def remove(self, member: str) -> bool:
        self.hidden.discard(member)
        return super().remove(member)

    def visible(self) -> dict[str, float]:
        return {m: s for m, s in self.scores.items() if m not in self.hidden}


@pytest.mark.parametrize("aggregate", ["sum", "best"])
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_random_sequences_with_hiding_and_ids_match_the_model(
    api: Api, board_key: str, aggregate: str, order: str
) -> None:
    rng = random.Random(f"guards{aggregate}{order}")
    board = api.make("TeamLeaderboard", board_key, aggregate=aggregate, order=order)
    model = GuardedTeamModel(aggregate, order)
    members, teams = ["a", "b", "c", "d", "e"], ["red", "blue", "green"]
    sent: list[tuple[str, str, float, Any, str]] = []  # (sid, member, score, team, mode)
    for step in range(300):
        member, roll = rng.choice(members), rng.random()
        if roll < 0.55:
            mode = rng.choice(["set", "best", "incr"])
            score = float(rng.randint(-5, 20))
            team = rng.choice([None, None, *teams])
            sid = rng.choice([None, f"s{step}"])
            if sent and rng.random() < 0.3:  # a resend, or the id reused for another write
                sid, member, score, team, mode = rng.choice(sent)
                if rng.random() < 0.3:
                    score += 1
            want = model.submit_with(sid, member, score, team, mode)
            try:
                out = board.submit(member, score, team=team, mode=mode, submission_id=sid)
                got: Any = (out["score"], out["team"], out["team_score"])
            except SubmissionIdReused:
                got = "reused"
            except ValueError:
                got = "refused"
            if sid is not None:
                sent.append((sid, member, score, team, mode))
        elif roll < 0.65:
            team = rng.choice(teams)
            want = model.move(member, team)
            out = board.move(member, team)
            got = (out["team"], out["team_score"])
        elif roll < 0.75:
            want, got = model.remove(member), board.remove(member)
        elif roll < 0.88:
            want, got = model.hide(member), board.hide(member)
        else:
            want, got = model.unhide(member), board.unhide(member)
        assert got == want, f"step {step}"
    got_teams = {e["user_id"]: e["score"] for e in board.teams.list_all()}
    want_teams = {
        t: s for t in set(model.team_of.values()) if (s := model.team_score(t)) is not None
    }
    assert got_teams == want_teams
    assert {e["user_id"]: e["score"] for e in board.members.list_all()} == model.visible()
    assert board.hidden() == sorted(model.hidden)
    for team in teams:
        members_of = {m["user_id"]: m["contribution"] for m in board.team_members(team)}
        want_members = {m: s for m, s in model.visible().items() if model.team_of.get(m) == team}
        assert members_of == want_members
