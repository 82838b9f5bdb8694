"""Hidden players (fair play): ``hide(user_id)``, ``unhide(user_id)`` and ``hidden()``, sync and
asyncio. A hidden player is in no rank, window, page, count, percentile or histogram; keeps their
score and metadata; goes on being written (judged by the board's rules, kept aside, never shown
or trimmed); and comes back with ``unhide`` as a write of their kept score would. Each call is
one script, atomic. The rules themselves are pinned against the plain-Python model in
test_ranking_differential.py (hide and unhide are among its random steps); this file covers
every write path, every board type and the failures."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from apis import Api, asyncio_only, unwrap
from helpers import UTC, FakeClock, board_keys, keys_under, snapshot
from redis_leaderboard import RateLimited, ScoreRejected


def test_a_hidden_player_leaves_every_read_and_keeps_their_data(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.leaderboard(board_key, 10)
    for i, user in enumerate("abcde"):
        board.upsert_user(user, 10 * (i + 1), {"name": user.upper()})
    assert board.hide("d") is True
    assert board.hide("d") is False  # already hidden
    assert board.hidden() == ["d"]
    assert [e["user_id"] for e in board.get_top(10)] == ["e", "c", "b", "a"]
    assert board.get_rank("d") is None and board.get_user_entry("d") is None
    assert board.get_rank("c") == 2  # d no longer ahead
    assert board.get_size() == 4 and board.count_by_score(0, 100) == 4
    assert board.get_percentile("d") is None and board.get_around_user("d") == []
    assert board.get_entries(["d", "e"])[0] is None
    assert sum(b["count"] for b in board.get_histogram(4)) == 4
    assert board.get_page(1, 10)["size"] == 4 and len(board.list_all()) == 4
    assert board.get_user_metadata("d") == {"name": "D"}  # kept
    assert r.hgetall(f"{board_key}:hidden") == {"d": "40"}
    # unhide: back where the score puts them.
    assert board.unhide("d") is True and board.unhide("d") is False
    assert board.hidden() == [] and board.get_rank("d") == 2
    # The board's keys are what they were before: no hidden hash, no options hash (but the
    # compact layout's own).
    assert keys_under(r, board_key) == board_keys(board, "abcde")


def test_a_hidden_players_writes_are_kept_not_shown(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 3)
    board.upsert_user("x", 5)
    board.hide("cheat")  # hidden before their first write
    entry = board.upsert_user("cheat", 100, {"name": "C"})
    assert entry == {"user_id": "cheat", "score": 100.0, "metadata": {"name": "C"},
                     "trimmed_user_ids": []}  # fmt: skip
    result = board.submit("cheat", 50, mode="best")
    assert (result["score"], result["rank"], result["changed"]) == (100.0, None, False)
    assert result["previous_score"] == 100.0 and result["metadata"] == {"name": "C"}
    assert board.increment_score("cheat", 7)["score"] == 107.0
    assert board.get_top(10) == [board.get_user_entry("x")]
    # Never trimmed: a full board keeps the hidden score aside.
    for user in "abc":
        board.upsert_user(user, 1)
    assert r.hget(f"{board_key}:hidden", "cheat") == "107"
    board.unhide("cheat")  # back, then the trim to 3
    assert [e["user_id"] for e in board.get_top(10)] == ["cheat", "x", "c"]


def test_hidden_writes_keep_every_guard_and_add_no_event(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10, score_range=(0, 100), rate_limit=(2, 60), events=True)
    board.submit("u", 10)
    board.hide("u")
    with pytest.raises(ScoreRejected):
        board.submit("u", 1000)  # judged as any write
    first = board.submit("u", 20, submission_id="s1")
    assert board.submit("u", 20, submission_id="s1") == {**first, "duplicate": True}
    with pytest.raises(RateLimited):  # two writes in the window: u10 and u20
        board.submit("u", 30)
    with board.events("0", block=0) as stream:
        events = [(e["kind"], e["user_id"]) for e in stream]
    assert events == [("score", "u"), ("hide", "u")]  # the hidden write: no event
    board.unhide("u")
    with board.events("0", block=0) as stream:
        last = list(stream)[-1]
    assert (last["kind"], last["user_id"], last["score"], last["rank"]) == ("score", "u", 20.0, 1)


@pytest.mark.parametrize("ties", ["first", "dense", "competition"])
def test_hide_keeps_the_tie_rules_bookkeeping(api: Api, board_key: str, ties: str) -> None:
    board = api.leaderboard(board_key, 10, order="asc", ties=ties)
    for user, score in [("a", 1), ("b", 2), ("c", 2), ("d", 3)]:
        board.upsert_user(user, score)
    board.hide("b")
    board.hide("c")  # score 2 is held by nobody shown now
    assert [e["rank"] for e in board.get_top(10)] == [1, 2]
    board.unhide("c")
    ranks = {e["user_id"]: e["rank"] for e in board.get_top(10)}
    assert ranks == {"a": 1, "c": 2, "d": 3}
    board.unhide("b")  # under "first", b's score is a new achievement: after c
    if ties == "first":
        assert [e["user_id"] for e in board.get_top(10)] == ["a", "c", "b", "d"]
    else:
        assert board.get_rank("b") == 2


def test_delete_and_clear(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 10)
    board.upsert_user("a", 1, {"n": "1"})
    board.upsert_user("h", 9, {"n": "9"})
    board.hide("h")
    assert board.delete_user("h") is True  # their kept score and metadata go...
    assert board.hidden() == ["h"]  # ...they stay hidden
    assert board.get_user_metadata("h") == {}
    assert board.upsert_user("h", 3)["score"] == 3.0 and board.get_rank("h") is None
    board.clear()  # everything goes, being hidden too
    assert board.hidden() == [] and r.keys(f"{board_key}*") == []


def test_upsert_many_keeps_hidden_entries_aside(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 10)
    board.upsert_many([("a", 1), ("h", 2)])
    board.hide("h")
    # Another object of the same board that loaded before the hide: every upsert_many checks.
    other = api.leaderboard(board_key, 10)
    other.upsert_many([("b", 3)])
    board.hide("b")
    assert other.upsert_many([("a", 5), ("b", 30, {"n": "x"}), ("h", 20)])["written"] == 3
    assert [(e["user_id"], e["score"]) for e in board.list_all()] == [("a", 5.0)]
    assert r.hgetall(f"{board_key}:hidden") == {"b": "30", "h": "20"}
    assert board.get_user_metadata("b") == {"n": "x"}


def test_a_bulk_load_ends_with_a_player_hidden_after_its_check_aside(
    api: Api, board_key: str, r: Any
) -> None:
    # A board object checks the board once for its bulk loads, whose MULTI/EXEC chunks check
    # nothing: a player another client hid since is ranked by them, and put aside again (with
    # the newer score) by the load's closing trim.
    loader = api.leaderboard(board_key, 10)
    loader.upsert_many([("a", 1), ("x", 2)])
    api.leaderboard(board_key, 10).hide("x")
    assert loader.upsert_many([("x", 50), ("y", 3)])["written"] == 2
    assert r.zrange(board_key, 0, -1) == ["a", "y"] and r.hget(f"{board_key}:hidden", "x") == "50"
    # This object's own hide makes its next load check the board (bulk.lua from then on).
    loader.hide("y")
    loader.upsert_many([("y", 30)])
    assert r.zrange(board_key, 0, -1) == ["a"] and r.hget(f"{board_key}:hidden", "y") == "30"


@asyncio_only
def test_a_bulk_load_racing_a_hide_on_one_connection(api: Api, board_key: str, r: Any) -> None:
    board = unwrap(api.leaderboard(board_key, 10))

    async def race() -> None:
        await board.upsert_user("a", 1)
        await board.upsert_user("x", 2)
        await asyncio.gather(
            board.upsert_many([("x", 50), ("y", 3)]), board.hide("x"), return_exceptions=True
        )

    api.run(race())
    ranked, kept = r.zrange(board_key, 0, -1), r.hgetall(f"{board_key}:hidden")
    assert "x" in kept and "x" not in ranked  # not ranked and hidden at once, once it ended


def test_a_groups_write_keeps_a_hidden_player_aside_on_that_board(api: Api, board_key: str) -> None:
    shown = api.leaderboard(f"{board_key}:shown", 10)
    hiding = api.leaderboard(f"{board_key}:hiding", 10)
    hiding.hide("u")
    results = api.group([shown, hiding]).submit("u", 5)
    assert [res["rank"] for res in results.values()] == [1, None]
    assert shown.get_size() == 1 and hiding.get_size() == 0


def test_a_periodic_board_hides_in_every_later_period(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
    board = api.periodic(board_key, "day", clock=clock, keep=3)  # the first kept 2 days on
    board.upsert_user("cheat", 50)
    board.upsert_user("fair", 10)
    assert board.hide("cheat") is True
    assert [e["user_id"] for e in board.get_top()] == ["fair"]
    clock.advance(timedelta(days=1))  # a new period, which no hide() named
    board.upsert_user("cheat", 70)
    assert board.get_top() == [] and board.hidden() == ["cheat"]
    # The new period's hidden hash expires with it.
    today = board.current().key
    assert r.pexpiretime(f"{today}:hidden") == r.pexpiretime(today + ":options") > 0
    assert board.unhide("cheat") is True
    assert [e["user_id"] for e in board.get_top()] == ["cheat"]
    board.upsert_user("cheat", 80)  # no longer hidden in later periods either
    clock.advance(timedelta(days=1))
    board.upsert_user("cheat", 1)
    assert board.get_rank("cheat") == 1
    # The first period still hides them: unhide there is that period's own call.
    assert board.previous(2).hidden() == ["cheat"]
    # Hiding in an earlier period only is that period's: today's board and later ones keep
    # the player shown.
    board.upsert_user("late", 5)
    assert board.previous(1).hide("late") is True
    assert board.hidden() == [] and board.get_rank("late") is not None


def test_is_hidden_agrees_with_hidden_on_every_board_type(api: Api, board_key: str) -> None:
    # One O(1) read per board type, answering what hidden() lists (a team board's had one).
    clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
    boards = {
        "plain": (api.leaderboard(board_key, 10), "upsert_user", {}),
        "periodic": (api.periodic(f"{board_key}:p", "day", clock=clock), "upsert_user", {}),
        "tournament": (api.tournament(f"{board_key}:t", clock, schedule="day"), "submit", {}),
        "league": (api.league(f"{board_key}:l", clock, tiers=("b", "a")), "submit", {}),
        "team": (api.make("TeamLeaderboard", f"{board_key}:m"), "submit", {"team": "x"}),
    }
    for name, (board, write, options) in boards.items():
        for i, user in enumerate(["fair", "cheat"]):
            getattr(board, write)(user, 10 * (i + 1), **options)
        assert board.hide("cheat") is True, name
        assert board.hidden() == ["cheat"], name
        states = {user: board.is_hidden(user) for user in ("fair", "cheat", "never")}
        assert states == {"fair": False, "cheat": True, "never": False}, name
        assert board.unhide("cheat") is True, name
        assert board.is_hidden("cheat") is False, name
        with pytest.raises(ValueError):
            board.is_hidden("")
        with pytest.raises(TypeError):
            board.is_hidden(7.0)
        assert board.is_hidden(7) is False  # an int id is its str(), as everywhere
    # A periodic board: hidden from the periodic board on, the next period says so too; hidden
    # in an earlier period only, the current one does not.
    periodic = boards["periodic"][0]
    periodic.hide("cheat")
    clock.advance(timedelta(days=1))
    assert periodic.is_hidden("cheat") is True and periodic.current().is_hidden("cheat") is False
    periodic.upsert_user("late", 5)
    assert periodic.previous(1).hide("late") is True
    assert periodic.is_hidden("late") is False and periodic.previous(1).is_hidden("late") is True


def test_a_rolling_window_refuses_hiding(api: Api, board_key: str) -> None:
    window = api.rolling(board_key, window=timedelta(hours=1), bucket=timedelta(minutes=1))
    for call in (lambda: window.hide("u"), lambda: window.unhide("u"), window.hidden):
        with pytest.raises(TypeError, match="does not apply to a rolling window"):
            call()


def test_hiding_on_a_wrong_type_or_denied_changes_nothing(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 10)
    board.upsert_user("a", 1)
    r.set(f"{board_key}:hidden", "not a hash")
    before = snapshot(r, board_key)
    with pytest.raises(Exception, match="WRONGTYPE"):
        board.hide("a")
    assert snapshot(r, board_key) == before and board.get_rank("a") == 1
