"""Writes: ``upsert_user``, ``increment_score``, the metadata they merge, ``delete_user`` and
``clear``, sync and asyncio, against hand-computed expectations.

Every test runs against the session's private redis-server; the board's keys are read back with
redis-py (``r``) to check the guide's layout (sorted set ``key``, hash ``f"{key}:user:{user_id}"``),
or the compact one's (``LB_TEST_LAYOUT=compact``: one hash ``f"{key}:meta"``; tests/helpers.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from apis import Api
from helpers import (
    COMPACT,
    TEST_LAYOUT,
    board_keys,
    entry,
    has_stored_metadata,
    keys_under,
    metadata_keys,
    put_metadata,
    recorded_options,
    small_board,
    stored_metadata,
    trimmed_away,
    written,
)

# --- the guide's walkthrough ---


def test_guide_example_upsert_increment_and_read(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=100)
    ada = {"name": "Ada", "description": "Solves production incidents before breakfast."}
    assert board.upsert_user("player-1", 1200, ada) == written(1, "player-1", 1200, ada)
    assert board.increment_score("player-1", 25) == written(1, "player-1", 1225, ada)
    assert board.upsert_user("player-2", 1180) == written(2, "player-2", 1180)
    assert board.upsert_user("player-3", 1105) == written(3, "player-3", 1105)

    assert board.get_top(5) == [
        entry(1, "player-1", 1225, ada),
        entry(2, "player-2", 1180),
        entry(3, "player-3", 1105),
    ]
    # The guide's data-model listing, read with redis-py.
    assert r.zrange(board.key, 0, -1, desc=True, withscores=True) == [
        ("player-1", 1225.0),
        ("player-2", 1180.0),
        ("player-3", 1105.0),
    ]
    assert stored_metadata(r, board, "player-1") == ada
    assert keys_under(r, board.key) == board_keys(board, ["player-1"])


def test_defaults_match_the_guide(api: Api) -> None:
    board = api.leaderboard()
    assert board.key == "leaderboard:demo"
    assert board.max_entries == 100
    assert board.layout == TEST_LAYOUT  # the guide's, unless the run gives the compact layout
    name = "redis_leaderboard.asyncio.RedisLeaderboard" if api.asynchronous else "RedisLeaderboard"
    layout = ", layout='compact'" if COMPACT else ""
    assert repr(board) == f"{name}(key='leaderboard:demo', max_entries=100{layout})"


def test_scores_come_back_as_floats_and_ranks_as_ints(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key)
    result = board.upsert_user("a", 7)
    assert type(result["score"]) is float
    assert type(result["rank"]) is int
    (top,) = board.get_top(1)
    assert type(top["score"]) is float
    assert type(top["rank"]) is int
    assert type(board.get_rank("a")) is int
    assert type(board.get_size()) is int


# --- upsert_user / increment_score ---


def test_upsert_replaces_the_score(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    board.upsert_user("a", 10)
    board.upsert_user("b", 20)
    assert board.upsert_user("a", 30) == written(1, "a", 30)
    assert board.upsert_user("a", -5.5) == written(2, "a", -5.5)
    assert r.zscore(board.key, "a") == -5.5
    assert board.get_size() == 2


def test_increment_adds_and_starts_from_zero(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    assert board.increment_score("new", 7.5) == written(1, "new", 7.5)
    assert board.increment_score("new", 2.5) == written(1, "new", 10)
    assert board.increment_score("other", 3) == written(2, "other", 3)
    assert board.increment_score("new", -20) == written(2, "new", -10)
    assert r.zrange(board.key, 0, -1, withscores=True) == [("new", -10.0), ("other", 3.0)]


def test_increment_with_zero_amount_adds_the_user(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key)
    assert board.increment_score("z", 0) == written(1, "z", 0)
    assert board.get_size() == 1


def test_scores_keep_full_double_precision(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    cases = {
        "tenths": 0.1 + 0.2,  # 0.30000000000000004
        "big": 2.0**53 + 2,
        "huge": 1.7976931348623157e308,
        "tiny": 5e-324,
        "negative": -123456789.123456789,
        "third": 1 / 3,
    }
    for user_id, score in cases.items():
        assert board.upsert_user(user_id, score)["score"] == score
    for item in board.list_all():
        assert item["score"] == cases[item["user_id"]]
    for user_id, score in cases.items():
        assert r.zscore(board.key, user_id) == score
        entry_ = board.get_user_entry(user_id)
        assert entry_ is not None
        assert entry_["score"] == score


def test_increments_accumulate_like_doubles(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key)
    board.increment_score("p", 0.1)
    board.increment_score("p", 0.1)
    result = board.increment_score("p", 0.1)
    assert result["score"] == 0.1 + 0.1 + 0.1  # 0.30000000000000004
    assert board.increment_score("big", 2.0**53)["score"] == 2.0**53
    # Beyond 2^53 a double skips integers: a sum it cannot hold is refused, not rounded (issue
    # 39, item 7; tests/boards/test_exact_scores.py).
    with pytest.raises(ValueError, match="beyond the integers a score holds exactly"):
        board.increment_score("big", 1)
    assert board.get_user_entry("big")["score"] == 2.0**53


def test_integer_user_ids_are_stored_as_strings(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    assert board.upsert_user(42, 1, {"k": "v"}) == written(1, "42", 1, {"k": "v"})
    assert board.increment_score(42, 1) == written(1, "42", 2, {"k": "v"})
    assert board.get_rank(42) == 1
    assert board.get_user_entry(42) == entry(1, "42", 2, {"k": "v"})
    assert board.get_user_metadata(42) == {"k": "v"}
    assert stored_metadata(r, board, "42") == {"k": "v"}
    assert board.delete_user(42) is True
    assert keys_under(r, board.key) == recorded_options(board)


# --- metadata ---


def test_metadata_is_merged_never_replaced(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    board.upsert_user("a", 1, {"name": "Ann", "team": "red"})
    assert board.upsert_user("a", 2, {"name": "Anna"}) == written(
        1, "a", 2, {"name": "Anna", "team": "red"}
    )
    assert board.increment_score("a", 1, {"city": "Oslo"}) == written(
        1, "a", 3, {"name": "Anna", "team": "red", "city": "Oslo"}
    )
    # No metadata, or empty metadata, leaves the hash as it is.
    assert board.upsert_user("a", 4) == written(
        1, "a", 4, {"name": "Anna", "team": "red", "city": "Oslo"}
    )
    assert board.upsert_user("a", 5, {}) == written(
        1, "a", 5, {"name": "Anna", "team": "red", "city": "Oslo"}
    )
    assert board.increment_score("a", 1, None)["metadata"] == {
        "name": "Anna",
        "team": "red",
        "city": "Oslo",
    }
    assert stored_metadata(r, board, "a") == {"name": "Anna", "team": "red", "city": "Oslo"}


def test_no_metadata_creates_no_hash(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    board.upsert_user("a", 1)
    board.upsert_user("b", 1, {})
    board.increment_score("c", 1)
    assert keys_under(r, board.key) == board_keys(board)
    assert board.get_user_metadata("a") == {}


def test_metadata_values_are_stored_as_str(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    payload = {"level": 3, "ratio": 0.5, "ok": True, "nothing": None, "big": 10**30}
    expected = {"level": "3", "ratio": "0.5", "ok": "True", "nothing": "None", "big": str(10**30)}
    assert board.upsert_user("a", 1, payload)["metadata"] == expected
    assert stored_metadata(r, board, "a") == expected
    assert board.get_user_metadata("a") == expected


def test_one_megabyte_metadata_values_round_trip(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    unit = "αβγ 🎉\t\n\r:{}\x00x"
    big = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
    other = "z" * 1_048_576
    result = board.upsert_user("big", 1, {"bio": big, "blob": other})
    assert result["metadata"] == {"bio": big, "blob": other}
    assert board.get_user_metadata("big") == {"bio": big, "blob": other}
    assert board.get_top(1) == [entry(1, "big", 1, {"bio": big, "blob": other})]
    stored = stored_metadata(r, board, "big")
    assert stored["bio"] == big
    assert len(stored["blob"].encode()) == 1_048_576


def test_thousands_of_metadata_fields(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    fields = {f"field-{i}": f"value {i}" for i in range(2501)}
    assert board.upsert_user("many", 1, fields)["metadata"] == fields
    more = {f"more-{i}": "x" for i in range(1001)}
    assert board.increment_score("many", 1, more) == written(1, "many", 2, {**fields, **more})
    assert len(stored_metadata(r, board, "many")) == 3502
    assert board.get_user_metadata("many") == {**fields, **more}


def test_get_user_metadata_reads_the_hash_even_off_board(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    put_metadata(r, board, "ghost", {"name": "Ghost"})
    assert board.get_user_metadata("ghost") == {"name": "Ghost"}
    assert board.get_user_entry("ghost") is None
    assert board.get_rank("ghost") is None


AWKWARD_IDS = [
    "a:b:c",
    "with space",
    " leading and trailing ",
    "tab\there",
    "new\nline",
    "crlf\r\n*3\r\n$4\r\nPING",
    "emoji 🏆🎮",
    "{hash-tag}",
    "}{",
    "Ελληνικά",
    "中文名字",
    "العربية",
    "עברית",
    "日本語:テスト",
    "Ünïcödé",
    "user:1",
    "*",
    "[brackets]?",
    "'quote\"s\\",
    "nul\x00byte",
    "x" * 2000,
]


def test_awkward_user_ids_and_metadata_round_trip_exactly(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    expected = []
    for i, user_id in enumerate(AWKWARD_IDS):
        metadata = {
            "name": user_id,
            f"key {user_id}": f"value\t{user_id}\n",
            "emoji 🎉": "🏁 {}",
            "": "empty field name",
            "empty value": "",
        }
        result = board.upsert_user(user_id, i, metadata)
        assert result["user_id"] == user_id
        assert result["metadata"] == metadata
        expected.append(entry(len(AWKWARD_IDS) - i, user_id, i, metadata))
    expected.reverse()

    assert board.list_all() == expected
    assert board.get_top(len(AWKWARD_IDS)) == expected
    for item in expected:
        user_id = item["user_id"]
        assert board.get_rank(user_id) == item["rank"]
        assert board.get_user_entry(user_id) == item
        assert board.get_user_metadata(user_id) == item["metadata"]
        assert stored_metadata(r, board, user_id) == item["metadata"]
        assert r.zscore(board.key, user_id) == item["score"]
    assert r.zcard(board.key) == len(AWKWARD_IDS)

    for user_id in AWKWARD_IDS:
        assert board.delete_user(user_id) is True
    assert keys_under(r, board.key) == recorded_options(board)


@pytest.mark.parametrize(
    "key",
    ["board with spaces", "{season:7}:board", "доска:🏆", "tab\tkey", "lb[1]"],
)
def test_awkward_board_keys(api: Api, board_key: str, r: Any, key: str) -> None:
    full = f"{board_key}:{key}"
    board = api.leaderboard(key=full, max_entries=2)
    board.upsert_user("a", 1, {"m": "1"})
    board.upsert_user("b", 2, {"m": "2"})
    assert board.upsert_user("c", 3, {"m": "3"})["trimmed_user_ids"] == ["a"]
    assert r.zrange(full, 0, -1, withscores=True) == [("b", 2.0), ("c", 3.0)]
    assert stored_metadata(r, board, "c") == {"m": "3"}
    assert not has_stored_metadata(r, board, "a")
    assert keys_under(r, full) == board_keys(board, ["b", "c"])
    board.clear()
    assert r.exists(full, *metadata_keys(board, ["b", "c"]), *recorded_options(board)) == 0


# --- ties ---


def test_ties_put_the_lexicographically_greater_member_first(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key)
    for user_id in ["bob", "alice", "carol", "Zed", "bobby"]:
        board.upsert_user(user_id, 50)
    board.upsert_user("top", 60)
    expected = [
        entry(1, "top", 60),
        entry(2, "carol", 50),
        entry(3, "bobby", 50),
        entry(4, "bob", 50),
        entry(5, "alice", 50),
        entry(6, "Zed", 50),  # byte order: "Z" < "a"
    ]
    assert board.get_top(10) == expected
    assert board.list_all() == expected
    assert board.get_around_rank(4, 3) == expected[2:5]
    assert [board.get_rank(e["user_id"]) for e in expected] == [1, 2, 3, 4, 5, 6]
    assert board.get_user_entry("bob") == entry(4, "bob", 50)


def test_trimming_ties_removes_the_lexicographically_smaller_member(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.leaderboard(key=board_key, max_entries=2)
    board.upsert_user("b", 10, {"x": "b"})
    board.upsert_user("c", 10, {"x": "c"})
    assert board.upsert_user("a", 10, {"x": "a"}) == trimmed_away("a", 10, {"x": "a"}, ["a"])
    assert board.upsert_user("d", 10) == written(1, "d", 10, trimmed=["b"])
    assert board.list_all() == [entry(1, "d", 10), entry(2, "c", 10, {"x": "c"})]
    assert keys_under(r, board_key) == board_keys(board, ["c"])


# --- delete_user / clear ---


def test_delete_user_removes_score_and_metadata(api: Api, board_key: str, r: Any) -> None:
    board = small_board(api.leaderboard(board_key))
    key = board.key
    assert board.delete_user("u05") is True
    assert not has_stored_metadata(r, board, "u05")
    assert has_stored_metadata(r, board, "u04")
    assert r.zscore(key, "u05") is None
    assert board.get_size() == 9
    assert board.get_rank("u04") == 6
    assert board.delete_user("u05") is False
    assert board.get_user_metadata("u05") == {}


def test_delete_the_last_user_removes_the_key(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key)
    board.upsert_user("a", 1, {"m": "x"})
    assert board.delete_user("a") is True
    assert keys_under(r, board.key) == recorded_options(board)  # the compact layout's options


def test_clear_removes_board_and_members_metadata(api: Api, board_key: str, r: Any) -> None:
    board = small_board(api.leaderboard(board_key))
    key = board.key
    assert board.clear() is None
    assert keys_under(r, key) == set()
    assert board.get_size() == 0
    # The board is usable again afterwards.
    assert board.upsert_user("again", 1) == written(1, "again", 1)


def test_clear_leaves_other_boards_alone(api: Api, board_key: str, r: Any) -> None:
    one = api.leaderboard(key=f"{board_key}:one")
    two = api.leaderboard(key=f"{board_key}:two")
    one.upsert_user("a", 1, {"m": "1"})
    two.upsert_user("a", 2, {"m": "2"})
    one.clear()
    assert keys_under(r, board_key) == board_keys(two, ["a"])
    assert two.list_all() == [entry(1, "a", 2, {"m": "2"})]
