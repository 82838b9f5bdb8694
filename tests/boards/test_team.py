"""Team boards: a member's write updates their score, their contribution and their team's score
in one script, sync and asyncio; moves carry the contribution; the teams' and members' boards are
plain boards every query reads. Pinned against a plain-Python model over seeded random sequences
(every mode, both aggregates, both orders, moves and removals): 0 mismatches."""

from __future__ import annotations

import random
from typing import Any, Optional

import pytest

from apis import Api
from helpers import snapshot
from redis_leaderboard import OptionsMismatch


@pytest.mark.parametrize("layout", ["guide", "compact"])
def test_a_members_write_moves_their_team(api: Api, board_key: str, layout: str) -> None:
    board = api.make("TeamLeaderboard", board_key, layout=layout)
    first = board.submit("ann", 10, {"name": "Ann"}, team="red")
    assert (first["score"], first["rank"], first["team"], first["team_score"]) == (
        10.0, 1, "red", 10.0,
    )  # fmt: skip
    assert first["team_rank"] == 1 and first["previous_team"] is None
    board.submit("bob", 5, team="red")
    board.submit("cid", 7, team="blue")
    assert [(e["user_id"], e["score"]) for e in board.teams.get_top()] == [
        ("red", 15.0), ("blue", 7.0),
    ]  # fmt: skip
    assert board.submit("bob", 3, mode="incr")["team_score"] == 18.0  # their own team
    moved = board.move("bob", "blue")
    assert moved == {"previous_team": "red", "team": "blue", "team_score": 15.0, "team_rank": 1}
    assert board.team_members("blue") == [
        {"user_id": "bob", "contribution": 8.0}, {"user_id": "cid", "contribution": 7.0},
    ]  # fmt: skip
    assert board.team_of("bob") == "blue" and board.team_of("nobody") is None
    assert board.members.get_rank("ann") == 1 and board.teams.get_rank("red") == 2
    assert board.remove("ann") is True  # red has no member left: off the teams' board
    assert board.teams.get_size() == 1 and board.members.get_user_metadata("ann") == {}
    assert board.remove("ann") is False


def test_a_first_write_needs_a_team_and_refused_calls_change_nothing(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key)
    with pytest.raises(ValueError, match="has no team"):
        board.submit("zed", 1)
    assert r.keys(f"{board_key}*") == []
    board.move("zed", "green")  # assigned before any score: no team score yet
    assert board.team_of("zed") == "green" and board.teams.get_size() == 0
    assert board.submit("zed", 4)["team_score"] == 4.0
    before = snapshot(r, board_key)
    with pytest.raises(OptionsMismatch, match="team board"):
        api.make("TeamLeaderboard", board_key, aggregate="best").submit("zed", 9)
    with pytest.raises(ValueError):
        board.submit("zed", float("nan"))
    with pytest.raises(ValueError, match="team must not be empty"):
        board.move("zed", "")
    assert snapshot(r, board_key) == before


def test_a_key_of_another_type_refuses_the_write_whole(api: Api, board_key: str, r: Any) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("ann", 5, team="red")
    r.set(f"{board_key}:team:blue", "not a sorted set")
    before = snapshot(r, board_key)
    with pytest.raises(Exception, match="WRONGTYPE"):
        board.submit("ann", 9, team="blue")  # the move's target is refused: nothing written
    with pytest.raises(Exception, match="WRONGTYPE"):
        board.move("ann", "blue")
    assert snapshot(r, board_key) == before


def test_best_member_and_ascending(api: Api, board_key: str) -> None:
    board = api.make("TeamLeaderboard", board_key, aggregate="best", order="asc")
    board.submit("x", 30.5, team="t")
    board.submit("y", 20.25, team="t")  # lower is better: 20.25 is the team's
    assert board.teams.get_user_entry("t")["score"] == 20.25
    board.submit("y", 40, team="t")  # y is worse now: x's 30.5 is the best
    assert board.teams.get_user_entry("t")["score"] == 30.5
    board.submit("x", 50, mode="best", team="t")  # not better: unchanged
    assert board.teams.get_top()[0]["score"] == 30.5
    assert [m["user_id"] for m in board.team_members("t")] == ["x", "y"]


# -- the model ------------------------------------------------------------------------------------


class TeamModel:
    def __init__(self, aggregate: str, order: str) -> None:
        self.aggregate, self.desc = aggregate, order == "desc"
        self.scores: dict[str, float] = {}
        self.team_of: dict[str, str] = {}

    def better(self, x: float, y: float) -> bool:
        return x > y if self.desc else x < y

    def team_score(self, team: str) -> Optional[float]:
        values = [s for m, s in self.scores.items() if self.team_of.get(m) == team]
        if not values:
            return None
        if self.aggregate == "sum":
            return sum(values)
        return max(values) if self.desc else min(values)

    def submit(self, member: str, score: float, team: Optional[str], mode: str) -> Any:
        team = team or self.team_of.get(member)
        if team is None:
            return "refused"
        old = self.scores.get(member)
        if mode == "incr" and old is not None:
            score = old + score
        elif mode == "best" and old is not None and not self.better(score, old):
            score = old
        self.scores[member] = score
        self.team_of[member] = team
        return (score, team, self.team_score(team))

    def move(self, member: str, team: str) -> Any:
        self.team_of[member] = team
        return (team, self.team_score(team))

    def remove(self, member: str) -> bool:
        self.team_of.pop(member, None)
        return self.scores.pop(member, None) is not None

    def teams(self) -> dict[str, float]:
        names = set(self.team_of.values())
        return {t: s for t in names if (s := self.team_score(t)) is not None}


@pytest.mark.parametrize("layout", ["guide", "compact"])
@pytest.mark.parametrize("aggregate", ["sum", "best"])
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_random_sequences_match_the_model(
    api: Api, board_key: str, aggregate: str, order: str, layout: str
) -> None:
    rng = random.Random(f"{aggregate}{order}")
    board = api.make("TeamLeaderboard", board_key, aggregate=aggregate, order=order, layout=layout)
    model = TeamModel(aggregate, order)
    members, teams = ["a", "b", "c", "d", "e"], ["red", "blue", "green"]
    for step in range(300):
        member, roll = rng.choice(members), rng.random()
        if roll < 0.7:
            mode = rng.choice(["set", "best", "incr"])
            score = float(rng.randint(-5, 20))
            team = rng.choice([None, None, *teams])
            want = model.submit(member, score, team, mode)
            try:
                out = board.submit(member, score, team=team, mode=mode)
                got: Any = (out["score"], out["team"], out["team_score"])
            except ValueError:
                got = "refused"
        elif roll < 0.85:
            team = rng.choice(teams)
            want = model.move(member, team)
            out = board.move(member, team)
            got = (out["team"], out["team_score"])
        else:
            want, got = model.remove(member), board.remove(member)
        assert got == want, f"step {step}"
    got_teams = {e["user_id"]: e["score"] for e in board.teams.list_all()}
    assert got_teams == model.teams()
    assert {e["user_id"]: e["score"] for e in board.members.list_all()} == model.scores
    for team in teams:
        members_of = {m["user_id"]: m["contribution"] for m in board.team_members(team)}
        want_members = {m: s for m, s in model.scores.items() if model.team_of.get(m) == team}
        assert members_of == want_members


def test_a_sum_that_would_not_be_finite_is_refused_whole(api: Api, board_key: str, r: Any) -> None:
    board = api.make("TeamLeaderboard", board_key)
    board.submit("a", 1e308, team="T")
    with pytest.raises(Exception, match="not a finite number"):
        board.submit("b", 1e308, team="T")
    board.submit("b", -1e308, team="T")
    board.submit("c", 1e308, team="T")  # 1e308 - 1e308 + 1e308: finite
    before = snapshot(r, board_key)
    with pytest.raises(Exception, match="not a finite number"):
        board.remove("b")  # the others' sum would be infinite
    with pytest.raises(Exception, match="not a finite number"):
        board.move("b", "U")
    assert snapshot(r, board_key) == before
    assert board.teams.get_user_entry("T")["score"] == 1e308


def test_a_compact_team_board_keeps_its_members_metadata_in_one_hash(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key, layout="compact")
    assert board.layout == "compact" and "layout='compact'" in repr(board)
    board.submit("ann", 10, {"name": "Ann"}, team="red")
    board.submit("bob", 5, {"name": "Bob", "level": 3}, team="red")
    board.submit("ann", 2, {"level": 7}, mode="incr")  # merged into her field
    meta = f"{board_key}:members:meta"
    assert {k for k in r.scan_iter(match=f"{board_key}*") if ":user:" in k} == set()
    assert sorted(r.hkeys(meta)) == ["ann", "bob"]
    assert board.members.get_top(2) == [
        {"rank": 1, "user_id": "ann", "score": 12.0, "metadata": {"name": "Ann", "level": "7"}},
        {"rank": 2, "user_id": "bob", "score": 5.0, "metadata": {"name": "Bob", "level": "3"}},
    ]
    # Hidden and shown again: the field stays; removed: only that member's field goes.
    assert board.hide("bob") is True and board.members.get_size() == 1
    assert board.unhide("bob") is True
    assert board.members.get_user_entry("bob")["metadata"] == {"name": "Bob", "level": "3"}
    assert board.remove("ann") is True
    assert r.hkeys(meta) == ["bob"] and board.teams.get_top(1)[0]["score"] == 5.0
    # A client of the other layout is refused, nothing changed.
    before = snapshot(r, board_key)
    guide = api.make("TeamLeaderboard", board_key, layout="guide")
    with pytest.raises(OptionsMismatch, match="layout=compact"):
        guide.submit("cid", 1, {"name": "Cid"}, team="blue")
    assert snapshot(r, board_key) == before
