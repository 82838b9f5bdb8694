"""``max_entries``: the trim every write runs (the lowest go, with their metadata, reported lowest
first), ``set_max_entries``, and ``max_entries=None``, an unlimited board no write trims, on
every board type that takes it (plain, periodic, rolling, and boards in a group; sharded boards:
tests/test_unlimited.py), sync and asyncio. The default stays the guide's 100: the 101st player
trims the worst."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from apis import Api, sync_and_one_loop
from helpers import (
    board_keys,
    entry,
    has_stored_metadata,
    keys_under,
    put_metadata,
    record_layout,
    small_board,
    small_board_entry,
    trimmed_away,
    written,
)
from redis_leaderboard import _core

# --- trimming ---


def test_max_entries_one(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=1)
    assert board.upsert_user("a", 10, {"name": "A"}) == written(1, "a", 10, {"name": "A"})
    assert board.upsert_user("b", 20, {"name": "B"}) == written(
        1, "b", 20, {"name": "B"}, trimmed=["a"]
    )
    assert keys_under(r, board_key) == board_keys(board, ["b"])

    # A lower score than the only entry: the writer itself is trimmed away.
    assert board.upsert_user("c", 5, {"name": "C", "level": 2}) == trimmed_away(
        "c", 5, {"name": "C", "level": "2"}, ["c"]
    )
    assert board.increment_score("d", 1) == trimmed_away("d", 1, {}, ["d"])
    assert board.increment_score("e", 19.5, {"n": 1}) == trimmed_away("e", 19.5, {"n": "1"}, ["e"])
    assert keys_under(r, board_key) == board_keys(board, ["b"])
    assert board.list_all() == [entry(1, "b", 20, {"name": "B"})]

    # Updating the only entry never trims it.
    assert board.increment_score("b", -100) == written(1, "b", -80, {"name": "B"})
    assert board.upsert_user("b", 3) == written(1, "b", 3, {"name": "B"})
    assert board.get_around_rank(1) == [entry(1, "b", 3, {"name": "B"})]
    assert board.get_size() == 1


def test_upsert_trims_the_lowest_and_their_metadata(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=3)
    for user_id, score in [("a", 1), ("b", 2), ("c", 3)]:
        assert board.upsert_user(user_id, score, {"id": user_id})["trimmed_user_ids"] == []
    assert board.upsert_user("d", 2.5, {"id": "d"}) == written(
        2, "d", 2.5, {"id": "d"}, trimmed=["a"]
    )
    assert r.zrange(board_key, 0, -1, withscores=True) == [("b", 2.0), ("d", 2.5), ("c", 3.0)]
    assert not has_stored_metadata(r, board, "a")
    assert keys_under(r, board_key) == board_keys(board, "bcd")


def test_writer_trimmed_away_by_upsert_keeps_its_payload(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=2)
    board.upsert_user("hi", 100)
    board.upsert_user("mid", 50, {"k": "v"})
    result = board.upsert_user("low", 1, {"name": "Low", "n": 7})
    assert result == trimmed_away("low", 1, {"name": "Low", "n": "7"}, ["low"])
    assert "rank" not in result
    assert not has_stored_metadata(r, board, "low")
    assert r.zscore(board_key, "low") is None
    assert board.get_user_metadata("low") == {}
    assert board.upsert_user("low2", 2) == trimmed_away("low2", 2, {}, ["low2"])


def test_writer_trimmed_away_by_increment_reports_the_new_score(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.leaderboard(key=board_key, max_entries=2)
    board.upsert_user("hi", 100)
    board.upsert_user("mid", 50)
    # Another writer left the board over its limit; "low" already holds 30.
    r.zadd(board_key, {"low": 30, "lower": 10})
    put_metadata(r, board, "low", {"old": "field"})
    put_metadata(r, board, "lower", {"x": "y"})
    result = board.increment_score("low", 5, {"new": 1})
    assert result == trimmed_away("low", 35, {"new": "1"}, ["lower", "low"])
    assert keys_under(r, board_key) == board_keys(board)
    assert r.zrange(board_key, 0, -1, withscores=True) == [("mid", 50.0), ("hi", 100.0)]


def test_trimmed_ids_are_lowest_first(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=2)
    record_layout(board)  # another client of the board's layout wrote it
    r.zadd(board_key, {"e": 5, "d": 4, "c": 3, "b2": 2, "b1": 2, "a": 1})
    assert board.upsert_user("top", 10) == written(
        1, "top", 10, trimmed=["a", "b1", "b2", "c", "d"]
    )
    assert r.zrange(board_key, 0, -1) == ["e", "top"]


def test_set_max_entries_trims_and_changes_the_limit(api: Api, board_key: str, r: Any) -> None:
    board = small_board(api.leaderboard(board_key))
    key = board.key
    assert board.set_max_entries(7) == ["u01", "u02", "u03"]
    assert board.max_entries == 7
    assert r.zcard(key) == 7
    assert not any(has_stored_metadata(r, board, u) for u in ("u01", "u02", "u03"))
    assert has_stored_metadata(r, board, "u04")
    assert board.set_max_entries(7) == []
    assert board.set_max_entries(1) == ["u04", "u05", "u06", "u07", "u08", "u09"]
    assert board.list_all() == [small_board_entry(1)]

    # A larger limit trims nothing, and later writes keep up to the new limit.
    assert board.set_max_entries(3) == []
    assert board.max_entries == 3
    assert board.upsert_user("x", 1)["trimmed_user_ids"] == []
    assert board.upsert_user("y", 2)["trimmed_user_ids"] == []
    assert board.upsert_user("z", 3)["trimmed_user_ids"] == ["x"]
    assert board.get_size() == 3


def test_max_entries_is_per_instance(api: Api, board_key: str) -> None:
    big = api.leaderboard(key=board_key, max_entries=5)
    small = api.leaderboard(key=board_key, max_entries=2)
    for i in range(5):
        big.upsert_user(f"p{i}", i)
    assert big.get_size() == 5
    assert small.upsert_user("p9", 9)["trimmed_user_ids"] == ["p0", "p1", "p2", "p3"]
    assert big.max_entries == 5
    assert small.max_entries == 2


LARGE = 10_000


@sync_and_one_loop
def test_set_max_entries_trims_ten_thousand_users(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=LARGE + 1)
    record_layout(board)
    pipe = r.pipeline(transaction=False)
    pipe.zadd(board_key, {f"user-{i:05d}": i for i in range(LARGE + 1)})
    for i in range(0, LARGE + 1, 3):
        put_metadata(pipe, board, f"user-{i:05d}", {"i": str(i)}, merge=False)
    pipe.execute()
    # Every trimmed id, lowest first, even when the trim runs in several steps.
    assert board.set_max_entries(1) == [f"user-{i:05d}" for i in range(LARGE)]
    assert board.max_entries == 1
    assert board.list_all() == [entry(1, f"user-{LARGE:05d}", LARGE)]
    assert keys_under(r, board_key) == board_keys(board)


# --- unlimited boards ---

PLAYERS = 150
NOW = datetime.now(timezone.utc)  # periods in the past would expire at once


def test_the_default_trims_the_101st_player(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key)
    assert board.max_entries == 100
    for i in range(100):
        assert board.upsert_user(f"p{i}", i + 1)["trimmed_user_ids"] == []
    assert board.upsert_user("p100", 500)["trimmed_user_ids"] == ["p0"]
    assert board.get_size() == 100


def test_an_unlimited_board_keeps_every_player(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, None)
    assert board.max_entries is None
    assert "max_entries=None" in repr(board)
    for i in range(PLAYERS):
        assert board.upsert_user(f"p{i}", i)["trimmed_user_ids"] == []
    assert board.submit("late", -1)["trimmed_user_ids"] == []
    assert board.upsert_many((f"bulk{i}", i) for i in range(50))["trimmed"] == 0
    assert board.get_size() == PLAYERS + 51
    assert board.get_rank("late") == PLAYERS + 51  # the worst, still on the board
    assert board.set_max_entries(None) == []  # no limit to trim to


def test_set_max_entries_none_lifts_a_limit(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10)
    for i in range(20):
        board.upsert_user(f"p{i}", i)
    assert board.get_size() == 10
    assert board.set_max_entries(None) == []
    assert board.max_entries is None
    for i in range(20, PLAYERS):
        board.upsert_user(f"p{i}", i)
    assert board.get_size() == PLAYERS - 10
    assert len(board.set_max_entries(100)) == PLAYERS - 110
    assert board.max_entries == 100


@pytest.mark.parametrize("bad", [0, -1])
def test_a_limit_below_one_is_still_refused(board_key: str, bad: int) -> None:
    with pytest.raises(ValueError, match="max_entries"):
        _core.Board(board_key, bad)
    with pytest.raises(TypeError, match="max_entries"):
        _core.Board(board_key, "100")  # type: ignore[arg-type]


def test_unlimited_periodic_rolling_and_group_boards(api: Api, board_key: str) -> None:
    key = board_key
    periodic = api.periodic(f"{key}:daily", "day", max_entries=None, clock=lambda: NOW)
    rolling = api.rolling(
        f"{key}:recent",
        timedelta(hours=2),
        timedelta(hours=1),
        max_entries=None,
        clock=lambda: NOW,
    )
    plain = api.leaderboard(f"{key}:alltime", None)
    group = api.group([plain, periodic, rolling])
    assert periodic.max_entries is None and periodic.current().max_entries is None
    assert rolling.max_entries is None
    for i in range(PLAYERS):
        results = group.submit(f"p{i}", i)
        assert all(r["trimmed_user_ids"] == [] for r in results.values())
    assert plain.get_size() == periodic.get_size() == rolling.get_size() == PLAYERS
    for i in range(PLAYERS, PLAYERS + 5):
        periodic.upsert_user(f"p{i}", i)
        rolling.increment_score(f"p{i}", i)
    assert periodic.get_size() == rolling.get_size() == PLAYERS + 5
