"""Team boards' change events (``events=True``, ``board.events()``), sync and asyncio, through
the plain board's mechanism (the ``events`` guard word, ``add_event`` and the removals' events
of lib/submissions.lua and lib/removal_events.lua, read by boards/events.py's streams):

- One stream, ``f"{key}:events"``: a member's change appends the plain board's event for the
  members' board (``"score"``: submit, unhide; ``"delete"``: remove; ``"hide"``: hide), then
  a ``"team"`` event per team whose score changed (the team left first on a move): the team as
  ``"user_id"``, its score and rank on the teams' board (None if it left it), before, the teams
  it overtook, and ``"member"``, whose change moved it. Pinned against a plain-Python model over
  seeded random sequences of every call, for both aggregates and orders: 0 mismatches.
- A write that changes nothing, a refused write and a resend append nothing.
- A board recording events refuses a client without them on every call that changes it.
- The stream is read as a plain board's: resumed from an id, ``async for`` under asyncio.
"""

from __future__ import annotations

import random
from typing import Any, Optional

import pytest

from apis import Api, asyncio_only, sync_and_one_loop, unwrap
from helpers import snapshot
from redis_leaderboard import OptionsMismatch, RateLimited, ScoreRejected


def ranked(entries: dict[str, float], desc: bool) -> list[str]:
    """Ids in a sorted set's rank order (score, then member bytes; reversed for 'desc')."""
    return sorted(entries, key=lambda m: (entries[m], m.encode()), reverse=desc)


def overtaken(before: list[str], after: list[str], who: str) -> list[str]:
    """Ids ahead of `who` before (all if it was absent) and behind it after, nearest first."""
    if who not in after:
        return []
    ahead_before = set(before[: before.index(who)] if who in before else before)
    return [u for u in after[after.index(who) + 1 :] if u in ahead_before][:10]


def rank(order: list[str], who: str) -> Optional[int]:
    return order.index(who) + 1 if who in order else None


def team_events(
    before: dict[str, float], after: dict[str, float], teams: list[Optional[str]], member: str,
    desc: bool,
) -> list[dict[str, Any]]:  # fmt: skip
    """The 'team' events of a change that took the teams' scores from `before` to `after`,
    changing `teams` in that order (each event sees the teams before it applied)."""
    out: list[dict[str, Any]] = []
    now = dict(before)
    for team in teams:
        done = [e["user_id"] for e in out]
        if team is None or before.get(team) == after.get(team) or team in done:
            continue
        then = dict(now)
        if team in after:
            now[team] = after[team]
        else:
            now.pop(team, None)
        old_order, new_order = ranked(then, desc), ranked(now, desc)
        out.append(
            {
                "kind": "team",
                "user_id": team,
                "score": now.get(team),
                "rank": rank(new_order, team),
                "previous_score": then.get(team),
                "previous_rank": rank(old_order, team),
                "trimmed_user_ids": [],
                "overtaken": overtaken(old_order, new_order, team),
                "member": member,
            }
        )
    return out


def state(board: Any) -> tuple[dict[str, float], dict[str, float]]:
    members = {e["user_id"]: e["score"] for e in board.members.list_all()}
    return members, {e["user_id"]: e["score"] for e in board.teams.list_all()}


def without_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "id"} for e in events]


@sync_and_one_loop
@pytest.mark.parametrize(("aggregate", "order"), [("sum", "desc"), ("best", "asc")])
def test_events_match_a_model_over_random_calls(
    api: Api, board_key: str, aggregate: str, order: str
) -> None:
    rng = random.Random(f"events{aggregate}{order}")
    desc = order == "desc"
    board = api.make("TeamLeaderboard", board_key, aggregate=aggregate, order=order, events=True)
    members, teams = ["a", "b", "c", "d", "e", "f"], ["red", "blue", "green"]
    expected: list[dict[str, Any]] = []
    for _ in range(200):
        member, roll = rng.choice(members), rng.random()
        m_before, t_before = state(board)
        team_before = board.team_of(member)
        own: list[dict[str, Any]] = []
        if roll < 0.6:
            mode = rng.choice(["set", "best", "incr"])
            team = rng.choice([None, None, *teams])
            try:
                out = board.submit(member, float(rng.randint(-5, 20)), team=team, mode=mode)
            except ValueError:  # a first write naming no team: refused, no event
                continue
            m_after, t_after = state(board)
            if out["changed"] and out["rank"] is not None:  # (hidden: kept aside, no event)
                old_order, new_order = ranked(m_before, desc), ranked(m_after, desc)
                own = [
                    {
                        "kind": "score",
                        "user_id": member,
                        "score": out["score"],
                        "rank": out["rank"],
                        "previous_score": out["previous_score"],
                        "previous_rank": out["previous_rank"],
                        "trimmed_user_ids": [],
                        "overtaken": overtaken(old_order, new_order, member),
                    }
                ]
            changed = [out["previous_team"], out["team"]]
        elif roll < 0.75:
            out = board.move(member, rng.choice(teams))
            m_after, t_after = state(board)
            changed = [out["previous_team"], out["team"]]
        elif roll < 0.85:
            board.remove(member)
            m_after, t_after = state(board)
            changed = [team_before]
            if member in m_before:
                own = [
                    {
                        "kind": "delete",
                        "user_id": member,
                        "score": m_before[member],
                        "rank": None,
                        "previous_score": m_before[member],
                        "previous_rank": rank(ranked(m_before, desc), member),
                        "trimmed_user_ids": [],
                        "overtaken": [],
                    }
                ]
        elif roll < 0.93:
            board.hide(member)
            m_after, t_after = state(board)
            changed = [team_before]
            if member in m_before:
                own = [
                    {
                        "kind": "hide",
                        "user_id": member,
                        "score": m_before[member],
                        "rank": None,
                        "previous_score": m_before[member],
                        "previous_rank": rank(ranked(m_before, desc), member),
                        "trimmed_user_ids": [],
                        "overtaken": [],
                    }
                ]
        else:
            board.unhide(member)
            m_after, t_after = state(board)
            changed = [team_before]
            if member in m_after and member not in m_before:
                new_order = ranked(m_after, desc)
                own = [
                    {
                        "kind": "score",
                        "user_id": member,
                        "score": m_after[member],
                        "rank": rank(new_order, member),
                        "previous_score": None,
                        "previous_rank": None,
                        "trimmed_user_ids": [],
                        "overtaken": overtaken(ranked(m_before, desc), new_order, member),
                    }
                ]
        expected += own + team_events(t_before, t_after, changed, member, desc)
    events = list(board.events("0", block=0))
    assert without_ids(events) == expected
    assert any(e["kind"] == "team" for e in events) and any(e["kind"] == "score" for e in events)
    ids = [tuple(map(int, e["id"].split("-"))) for e in events]
    assert ids == sorted(ids)


def test_a_write_and_its_teams_events(api: Api, board_key: str) -> None:
    board = api.make("TeamLeaderboard", board_key, events=True)
    board.submit("ann", 50, team="red")
    board.submit("bob", 70, team="blue")
    reader = board.events("$", block=0)
    assert reader.read() == []
    board.submit("ann", 30, mode="incr", team="blue")  # moves ann: red leaves, blue passes none
    got = without_ids(reader.read())
    assert got == [
        {
            "kind": "score", "user_id": "ann", "score": 80.0, "rank": 1,
            "previous_score": 50.0, "previous_rank": 2, "trimmed_user_ids": [],
            "overtaken": ["bob"],
        },
        {
            "kind": "team", "user_id": "red", "score": None, "rank": None,
            "previous_score": 50.0, "previous_rank": 2, "trimmed_user_ids": [], "overtaken": [],
            "member": "ann",
        },
        {
            "kind": "team", "user_id": "blue", "score": 150.0, "rank": 1,
            "previous_score": 70.0, "previous_rank": 1, "trimmed_user_ids": [], "overtaken": [],
            "member": "ann",
        },
    ]  # fmt: skip
    board.submit("cid", 200, team="red")  # a new team passes blue
    assert [(e["kind"], e["user_id"], e["overtaken"]) for e in reader.read()] == [
        ("score", "cid", ["ann", "bob"]),
        ("team", "red", ["blue"]),
    ]
    reader.close()


def test_no_event_for_what_changes_nothing_or_is_refused(api: Api, board_key: str, r: Any) -> None:
    board = api.make(
        "TeamLeaderboard", board_key, aggregate="best", events=True, rate_limit=(3, 60),
        score_range=(0, 100),
    )  # fmt: skip
    board.submit("ann", 50, team="red", submission_id="s1")
    board.submit("bob", 10, team="red")
    size = r.xlen(f"{board_key}:events")
    board.submit("ann", 40, mode="best")  # not better: nothing changes
    board.submit("bob", 20)  # bob is not red's best: red's score stays (no 'team' event)
    assert [e["kind"] for e in board.events("0", block=0)][size:] == ["score"]
    size = r.xlen(f"{board_key}:events")
    board.submit("ann", 50, team="red", submission_id="s1")  # a resend
    with pytest.raises(ScoreRejected):
        board.submit("bob", 101)
    board.submit("ann", 1, team="red", mode="incr")  # ann's third write
    with pytest.raises(RateLimited):
        board.submit("ann", 1, mode="incr")
    assert r.xlen(f"{board_key}:events") == size + 2  # the one applied write's 'score', 'team'
    board.move("ann", "red")  # already there: nothing moves
    board.hide("nobody")  # no score
    board.remove("nobody")
    assert r.xlen(f"{board_key}:events") == size + 2


def test_a_board_with_events_refuses_a_client_without_them(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.make("TeamLeaderboard", board_key, events=True)
    board.submit("ann", 5, team="red")
    board.submit("bob", 5, team="red")
    board.hide("bob")
    before = snapshot(r, board_key)
    plain = api.make("TeamLeaderboard", board_key)
    calls = [
        lambda: plain.submit("ann", 6),
        lambda: plain.move("ann", "blue"),
        lambda: plain.remove("ann"),
        lambda: plain.hide("ann"),
        lambda: plain.unhide("bob"),
    ]
    for call in calls:
        with pytest.raises(OptionsMismatch, match="events=1"):
            call()
    assert snapshot(r, board_key) == before  # watchers miss nothing
    assert plain.team_of("ann") == "red" and plain.team_members("red")[0]["user_id"] == "ann"
    assert plain.hidden() == ["bob"] and plain.teams.get_rank("red") == 1  # reads are not refused


def test_a_reader_resumes_from_its_last_id(api: Api, board_key: str) -> None:
    board = api.make("TeamLeaderboard", board_key, events=True)
    for i in range(4):
        board.submit(f"m{i}", i + 1, team="red")
    reader = board.events("0", block=0)
    seen = [next(reader) for _ in range(3)]
    reader.close()
    board.submit("m9", 100, team="blue")
    rest = list(board.events(seen[-1]["id"], block=0))
    assert [(e["kind"], e["user_id"]) for e in seen + rest] == [
        ("score", "m0"), ("team", "red"), ("score", "m1"), ("team", "red"), ("score", "m2"),
        ("team", "red"), ("score", "m3"), ("team", "red"), ("score", "m9"), ("team", "blue"),
    ]  # fmt: skip
    with pytest.raises(ValueError):
        board.events("0", count=0)


def test_the_stream_stays_capped(api: Api, board_key: str, r: Any) -> None:
    board = api.make("TeamLeaderboard", board_key, events=True, events_maxlen=20)
    for i in range(300):
        board.submit(f"m{i % 7}", i, team=f"t{i % 3}")
    assert r.xlen(f"{board_key}:events") < 300


@asyncio_only
def test_async_for_reads_the_events(api: Api, board_key: str) -> None:
    board = unwrap(api.make("TeamLeaderboard", board_key, events=True))

    async def main() -> list[tuple[str, Optional[str], Optional[str]]]:
        await board.submit("ann", 5, team="red")
        await board.move("ann", "blue")
        out = []
        async with board.events("0", block=0) as stream:
            async for event in stream:
                out.append((event["kind"], event["user_id"], event.get("member")))
        return out

    assert api.run(main()) == [
        ("score", "ann", None),
        ("team", "red", "ann"),
        ("team", "red", "ann"),
        ("team", "blue", "ann"),
    ]
