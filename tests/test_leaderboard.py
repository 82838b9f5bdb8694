"""The synchronous RedisLeaderboard, method by method, against hand-computed expectations.

Every test runs against the session's private redis-server; the board's keys are read back with
redis-py to check the guide's layout (sorted set ``key``, hash ``f"{key}:user:{user_id}"``).
"""

from __future__ import annotations

from typing import Any

import pytest

import redis_leaderboard
from redis_leaderboard import Client, RedisLeaderboard


def entry(
    rank: int, user_id: str, score: float, metadata: dict[str, str] | None = None
) -> dict[str, Any]:
    return {"rank": rank, "user_id": user_id, "score": float(score), "metadata": metadata or {}}


def written(
    rank: int,
    user_id: str,
    score: float,
    metadata: dict[str, str] | None = None,
    trimmed: list[str] | None = None,
) -> dict[str, Any]:
    """What upsert_user / increment_score return when the user is still on the board."""
    return {**entry(rank, user_id, score, metadata), "trimmed_user_ids": trimmed or []}


def trimmed_away(
    user_id: str, score: float, metadata: dict[str, str], trimmed: list[str]
) -> dict[str, Any]:
    """What they return when the write itself was trimmed away: no rank, the payload sent."""
    return {
        "user_id": user_id,
        "score": float(score),
        "metadata": metadata,
        "trimmed_user_ids": trimmed,
    }


def keys_under(r: Any, key: str) -> set[str]:
    return set(r.scan_iter(match=key.replace("[", "\\[") + "*", count=1000))


@pytest.fixture
def r(redis_server: Any) -> Any:
    """redis-py on the same server, to check what the board wrote."""
    client = redis_server.redis_py()
    yield client
    client.close()


@pytest.fixture
def small_board(client: Client, board_key: str) -> RedisLeaderboard:
    """Ten users u01..u10 scored 10..100, so u10 is rank 1 and u01 rank 10."""
    board = RedisLeaderboard(client, key=board_key, max_entries=100)
    for i in range(1, 11):
        board.upsert_user(f"u{i:02d}", i * 10, {"n": str(i)})
    return board


def small_board_entry(rank: int) -> dict[str, Any]:
    i = 11 - rank
    return entry(rank, f"u{i:02d}", i * 10, {"n": str(i)})


# --- the guide's walkthrough ---


def test_guide_example_upsert_increment_and_read(board: RedisLeaderboard, r: Any) -> None:
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
    assert r.hgetall(f"{board.key}:user:player-1") == ada
    assert keys_under(r, board.key) == {board.key, f"{board.key}:user:player-1"}


def test_defaults_match_the_guide(client: Client) -> None:
    board = RedisLeaderboard(client)
    assert board.key == "leaderboard:demo"
    assert board.max_entries == 100
    assert repr(board) == "RedisLeaderboard(key='leaderboard:demo', max_entries=100)"


def test_scores_come_back_as_floats_and_ranks_as_ints(board: RedisLeaderboard) -> None:
    result = board.upsert_user("a", 7)
    assert type(result["score"]) is float
    assert type(result["rank"]) is int
    (top,) = board.get_top(1)
    assert type(top["score"]) is float
    assert type(top["rank"]) is int
    assert type(board.get_rank("a")) is int
    assert type(board.get_size()) is int


# --- upsert_user / increment_score ---


def test_upsert_replaces_the_score(board: RedisLeaderboard, r: Any) -> None:
    board.upsert_user("a", 10)
    board.upsert_user("b", 20)
    assert board.upsert_user("a", 30) == written(1, "a", 30)
    assert board.upsert_user("a", -5.5) == written(2, "a", -5.5)
    assert r.zscore(board.key, "a") == -5.5
    assert board.get_size() == 2


def test_increment_adds_and_starts_from_zero(board: RedisLeaderboard, r: Any) -> None:
    assert board.increment_score("new", 7.5) == written(1, "new", 7.5)
    assert board.increment_score("new", 2.5) == written(1, "new", 10)
    assert board.increment_score("other", 3) == written(2, "other", 3)
    assert board.increment_score("new", -20) == written(2, "new", -10)
    assert r.zrange(board.key, 0, -1, withscores=True) == [("new", -10.0), ("other", 3.0)]


def test_increment_with_zero_amount_adds_the_user(board: RedisLeaderboard) -> None:
    assert board.increment_score("z", 0) == written(1, "z", 0)
    assert board.get_size() == 1


def test_scores_keep_full_double_precision(board: RedisLeaderboard, r: Any) -> None:
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


def test_increments_accumulate_like_doubles(board: RedisLeaderboard) -> None:
    board.increment_score("p", 0.1)
    board.increment_score("p", 0.1)
    result = board.increment_score("p", 0.1)
    assert result["score"] == 0.1 + 0.1 + 0.1  # 0.30000000000000004
    assert board.increment_score("big", 2.0**53)["score"] == 2.0**53
    assert board.increment_score("big", 1)["score"] == 2.0**53  # double rounding, as Redis


def test_integer_user_ids_are_stored_as_strings(board: RedisLeaderboard, r: Any) -> None:
    assert board.upsert_user(42, 1, {"k": "v"}) == written(1, "42", 1, {"k": "v"})
    assert board.increment_score(42, 1) == written(1, "42", 2, {"k": "v"})
    assert board.get_rank(42) == 1
    assert board.get_user_entry(42) == entry(1, "42", 2, {"k": "v"})
    assert board.get_user_metadata(42) == {"k": "v"}
    assert r.hgetall(f"{board.key}:user:42") == {"k": "v"}
    assert board.delete_user(42) is True
    assert keys_under(r, board.key) == set()


# --- metadata ---


def test_metadata_is_merged_never_replaced(board: RedisLeaderboard, r: Any) -> None:
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
    assert r.hgetall(f"{board.key}:user:a") == {"name": "Anna", "team": "red", "city": "Oslo"}


def test_no_metadata_creates_no_hash(board: RedisLeaderboard, r: Any) -> None:
    board.upsert_user("a", 1)
    board.upsert_user("b", 1, {})
    board.increment_score("c", 1)
    assert keys_under(r, board.key) == {board.key}
    assert board.get_user_metadata("a") == {}


def test_metadata_values_are_stored_as_str(board: RedisLeaderboard, r: Any) -> None:
    payload = {"level": 3, "ratio": 0.5, "ok": True, "nothing": None, "big": 10**30}
    expected = {"level": "3", "ratio": "0.5", "ok": "True", "nothing": "None", "big": str(10**30)}
    assert board.upsert_user("a", 1, payload)["metadata"] == expected
    assert r.hgetall(f"{board.key}:user:a") == expected
    assert board.get_user_metadata("a") == expected


def test_one_megabyte_metadata_values_round_trip(board: RedisLeaderboard, r: Any) -> None:
    unit = "αβγ 🎉\t\n\r:{}\x00x"
    big = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
    other = "z" * 1_048_576
    result = board.upsert_user("big", 1, {"bio": big, "blob": other})
    assert result["metadata"] == {"bio": big, "blob": other}
    assert board.get_user_metadata("big") == {"bio": big, "blob": other}
    assert board.get_top(1) == [entry(1, "big", 1, {"bio": big, "blob": other})]
    assert r.hget(f"{board.key}:user:big", "bio") == big
    assert r.hstrlen(f"{board.key}:user:big", "blob") == 1_048_576


def test_thousands_of_metadata_fields(board: RedisLeaderboard, r: Any) -> None:
    fields = {f"field-{i}": f"value {i}" for i in range(2501)}
    assert board.upsert_user("many", 1, fields)["metadata"] == fields
    more = {f"more-{i}": "x" for i in range(1001)}
    assert board.increment_score("many", 1, more) == written(1, "many", 2, {**fields, **more})
    assert r.hlen(f"{board.key}:user:many") == 3502
    assert board.get_user_metadata("many") == {**fields, **more}


def test_get_user_metadata_reads_the_hash_even_off_board(board: RedisLeaderboard, r: Any) -> None:
    r.hset(f"{board.key}:user:ghost", mapping={"name": "Ghost"})
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


def test_awkward_user_ids_and_metadata_round_trip_exactly(board: RedisLeaderboard, r: Any) -> None:
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
        assert r.hgetall(f"{board.key}:user:{user_id}") == item["metadata"]
        assert r.zscore(board.key, user_id) == item["score"]
    assert r.zcard(board.key) == len(AWKWARD_IDS)

    for user_id in AWKWARD_IDS:
        assert board.delete_user(user_id) is True
    assert keys_under(r, board.key) == set()


@pytest.mark.parametrize(
    "key",
    ["board with spaces", "{season:7}:board", "доска:🏆", "tab\tkey", "lb[1]"],
)
def test_awkward_board_keys(client: Client, board_key: str, r: Any, key: str) -> None:
    full = f"{board_key}:{key}"
    board = RedisLeaderboard(client, key=full, max_entries=2)
    board.upsert_user("a", 1, {"m": "1"})
    board.upsert_user("b", 2, {"m": "2"})
    assert board.upsert_user("c", 3, {"m": "3"})["trimmed_user_ids"] == ["a"]
    assert r.zrange(full, 0, -1, withscores=True) == [("b", 2.0), ("c", 3.0)]
    assert r.hgetall(f"{full}:user:c") == {"m": "3"}
    assert r.exists(f"{full}:user:a") == 0
    board.clear()
    assert r.exists(full, f"{full}:user:b", f"{full}:user:c") == 0


# --- ties ---


def test_ties_put_the_lexicographically_greater_member_first(board: RedisLeaderboard) -> None:
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
    client: Client, board_key: str, r: Any
) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=2)
    board.upsert_user("b", 10, {"x": "b"})
    board.upsert_user("c", 10, {"x": "c"})
    assert board.upsert_user("a", 10, {"x": "a"}) == trimmed_away("a", 10, {"x": "a"}, ["a"])
    assert board.upsert_user("d", 10) == written(1, "d", 10, trimmed=["b"])
    assert board.list_all() == [entry(1, "d", 10), entry(2, "c", 10, {"x": "c"})]
    assert keys_under(r, board_key) == {board_key, f"{board_key}:user:c"}


# --- empty boards ---


def test_every_read_on_an_empty_board(board: RedisLeaderboard, r: Any) -> None:
    assert board.get_top() == []
    assert board.get_top(1) == []
    assert board.get_around_rank(1) == []
    assert board.get_around_rank(50, 10) == []
    assert board.get_rank("nobody") is None
    assert board.get_user_metadata("nobody") == {}
    assert board.get_user_entry("nobody") is None
    assert board.list_all() == []
    assert board.get_size() == 0
    assert board.delete_user("nobody") is False
    assert board.clear() is None
    assert board.set_max_entries(1) == []
    assert board.max_entries == 1
    assert keys_under(r, board.key) == set()


# --- get_top ---


def test_get_top(small_board: RedisLeaderboard) -> None:
    assert small_board.get_top(1) == [small_board_entry(1)]
    assert small_board.get_top(3) == [small_board_entry(k) for k in (1, 2, 3)]
    assert small_board.get_top() == [small_board_entry(k) for k in range(1, 11)]
    assert small_board.get_top(1000) == [small_board_entry(k) for k in range(1, 11)]


def test_get_top_defaults_to_ten(board: RedisLeaderboard) -> None:
    for i in range(12):
        board.upsert_user(f"p{i:02d}", i)
    assert [e["user_id"] for e in board.get_top()] == [f"p{i:02d}" for i in range(11, 1, -1)]


# --- get_around_rank ---


@pytest.mark.parametrize(
    ("rank", "count", "ranks"),
    [
        (1, 5, [1, 2, 3, 4, 5]),  # top end: the window starts at rank 1
        (2, 5, [1, 2, 3, 4, 5]),
        (3, 5, [1, 2, 3, 4, 5]),
        (4, 5, [2, 3, 4, 5, 6]),
        (5, 5, [3, 4, 5, 6, 7]),
        (8, 5, [6, 7, 8, 9, 10]),
        (9, 5, [6, 7, 8, 9, 10]),  # bottom end: clamped to size - count
        (10, 5, [6, 7, 8, 9, 10]),
        (11, 5, [6, 7, 8, 9, 10]),  # beyond the board
        (10**9, 5, [6, 7, 8, 9, 10]),
        (5, 4, [3, 4, 5, 6]),  # even count: half window 2
        (1, 4, [1, 2, 3, 4]),
        (10, 4, [7, 8, 9, 10]),
        (7, 1, [7]),
        (1, 1, [1]),
        (10, 1, [10]),
        (11, 1, [10]),
        (5, 2, [4, 5]),
        (5, 9, [1, 2, 3, 4, 5, 6, 7, 8, 9]),
        (10, 9, [2, 3, 4, 5, 6, 7, 8, 9, 10]),
        (5, 10, list(range(1, 11))),  # size <= count: the whole board
        (1, 10, list(range(1, 11))),
        (99, 11, list(range(1, 11))),
    ],
)
def test_get_around_rank_windows(
    small_board: RedisLeaderboard, rank: int, count: int, ranks: list[int]
) -> None:
    assert small_board.get_around_rank(rank, count) == [small_board_entry(k) for k in ranks]


def test_huge_counts_and_ranks(small_board: RedisLeaderboard) -> None:
    everyone = [small_board_entry(k) for k in range(1, 11)]
    assert small_board.get_top(2**62) == everyone
    assert small_board.get_top(2**63 - 1) == everyone
    assert small_board.get_around_rank(2**62, 3) == everyone[-3:]
    assert small_board.get_around_rank(2**62, 2**62) == everyone
    assert small_board.get_around_rank(1, 2**63 - 1) == everyone
    assert small_board.set_max_entries(2**63 - 1) == []
    assert small_board.upsert_user("new", 0)["trimmed_user_ids"] == []


def test_get_around_rank_default_count_is_five(small_board: RedisLeaderboard) -> None:
    assert small_board.get_around_rank(6) == [small_board_entry(k) for k in (4, 5, 6, 7, 8)]


def test_get_around_rank_on_a_one_entry_board(board: RedisLeaderboard) -> None:
    board.upsert_user("only", 1)
    assert board.get_around_rank(1) == [entry(1, "only", 1)]
    assert board.get_around_rank(3, 1) == [entry(1, "only", 1)]


# --- get_rank / get_user_entry / get_size ---


def test_get_rank_and_entry(small_board: RedisLeaderboard) -> None:
    assert small_board.get_rank("u10") == 1
    assert small_board.get_rank("u01") == 10
    assert small_board.get_rank("u05") == 6
    assert small_board.get_rank("U05") is None
    assert small_board.get_user_entry("u05") == small_board_entry(6)
    assert small_board.get_user_entry("missing") is None
    assert small_board.get_user_metadata("u03") == {"n": "3"}
    assert small_board.get_size() == 10


# --- delete_user / clear ---


def test_delete_user_removes_score_and_metadata(small_board: RedisLeaderboard, r: Any) -> None:
    key = small_board.key
    assert small_board.delete_user("u05") is True
    assert r.exists(f"{key}:user:u05") == 0
    assert r.zscore(key, "u05") is None
    assert small_board.get_size() == 9
    assert small_board.get_rank("u04") == 6
    assert small_board.delete_user("u05") is False
    assert small_board.get_user_metadata("u05") == {}


def test_delete_the_last_user_removes_the_key(board: RedisLeaderboard, r: Any) -> None:
    board.upsert_user("a", 1, {"m": "x"})
    assert board.delete_user("a") is True
    assert keys_under(r, board.key) == set()


def test_clear_removes_board_and_members_metadata(small_board: RedisLeaderboard, r: Any) -> None:
    key = small_board.key
    assert small_board.clear() is None
    assert keys_under(r, key) == set()
    assert small_board.get_size() == 0
    # The board is usable again afterwards.
    assert small_board.upsert_user("again", 1) == written(1, "again", 1)


def test_clear_leaves_other_boards_alone(client: Client, board_key: str, r: Any) -> None:
    one = RedisLeaderboard(client, key=f"{board_key}:one")
    two = RedisLeaderboard(client, key=f"{board_key}:two")
    one.upsert_user("a", 1, {"m": "1"})
    two.upsert_user("a", 2, {"m": "2"})
    one.clear()
    assert keys_under(r, board_key) == {f"{board_key}:two", f"{board_key}:two:user:a"}
    assert two.list_all() == [entry(1, "a", 2, {"m": "2"})]


# --- trimming ---


def test_max_entries_one(client: Client, board_key: str, r: Any) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=1)
    assert board.upsert_user("a", 10, {"name": "A"}) == written(1, "a", 10, {"name": "A"})
    assert board.upsert_user("b", 20, {"name": "B"}) == written(
        1, "b", 20, {"name": "B"}, trimmed=["a"]
    )
    assert keys_under(r, board_key) == {board_key, f"{board_key}:user:b"}

    # A lower score than the only entry: the writer itself is trimmed away.
    assert board.upsert_user("c", 5, {"name": "C", "level": 2}) == trimmed_away(
        "c", 5, {"name": "C", "level": "2"}, ["c"]
    )
    assert board.increment_score("d", 1) == trimmed_away("d", 1, {}, ["d"])
    assert board.increment_score("e", 19.5, {"n": 1}) == trimmed_away("e", 19.5, {"n": "1"}, ["e"])
    assert keys_under(r, board_key) == {board_key, f"{board_key}:user:b"}
    assert board.list_all() == [entry(1, "b", 20, {"name": "B"})]

    # Updating the only entry never trims it.
    assert board.increment_score("b", -100) == written(1, "b", -80, {"name": "B"})
    assert board.upsert_user("b", 3) == written(1, "b", 3, {"name": "B"})
    assert board.get_around_rank(1) == [entry(1, "b", 3, {"name": "B"})]
    assert board.get_size() == 1


def test_upsert_trims_the_lowest_and_their_metadata(client: Client, board_key: str, r: Any) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=3)
    for user_id, score in [("a", 1), ("b", 2), ("c", 3)]:
        assert board.upsert_user(user_id, score, {"id": user_id})["trimmed_user_ids"] == []
    assert board.upsert_user("d", 2.5, {"id": "d"}) == written(
        2, "d", 2.5, {"id": "d"}, trimmed=["a"]
    )
    assert r.zrange(board_key, 0, -1, withscores=True) == [("b", 2.0), ("d", 2.5), ("c", 3.0)]
    assert r.exists(f"{board_key}:user:a") == 0


def test_writer_trimmed_away_by_upsert_keeps_its_payload(
    client: Client, board_key: str, r: Any
) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=2)
    board.upsert_user("hi", 100)
    board.upsert_user("mid", 50, {"k": "v"})
    result = board.upsert_user("low", 1, {"name": "Low", "n": 7})
    assert result == trimmed_away("low", 1, {"name": "Low", "n": "7"}, ["low"])
    assert "rank" not in result
    assert r.exists(f"{board_key}:user:low") == 0
    assert r.zscore(board_key, "low") is None
    assert board.get_user_metadata("low") == {}
    assert board.upsert_user("low2", 2) == trimmed_away("low2", 2, {}, ["low2"])


def test_writer_trimmed_away_by_increment_reports_the_new_score(
    client: Client, board_key: str, r: Any
) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=2)
    board.upsert_user("hi", 100)
    board.upsert_user("mid", 50)
    # Another writer left the board over its limit; "low" already holds 30.
    r.zadd(board_key, {"low": 30, "lower": 10})
    r.hset(f"{board_key}:user:low", mapping={"old": "field"})
    r.hset(f"{board_key}:user:lower", mapping={"x": "y"})
    result = board.increment_score("low", 5, {"new": 1})
    assert result == trimmed_away("low", 35, {"new": "1"}, ["lower", "low"])
    assert keys_under(r, board_key) == {board_key}
    assert r.zrange(board_key, 0, -1, withscores=True) == [("mid", 50.0), ("hi", 100.0)]


def test_trimmed_ids_are_lowest_first(client: Client, board_key: str, r: Any) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=2)
    r.zadd(board_key, {"e": 5, "d": 4, "c": 3, "b2": 2, "b1": 2, "a": 1})
    assert board.upsert_user("top", 10) == written(
        1, "top", 10, trimmed=["a", "b1", "b2", "c", "d"]
    )
    assert r.zrange(board_key, 0, -1) == ["e", "top"]


def test_set_max_entries_trims_and_changes_the_limit(small_board: RedisLeaderboard, r: Any) -> None:
    key = small_board.key
    assert small_board.set_max_entries(7) == ["u01", "u02", "u03"]
    assert small_board.max_entries == 7
    assert r.zcard(key) == 7
    assert r.exists(f"{key}:user:u01", f"{key}:user:u02", f"{key}:user:u03") == 0
    assert r.exists(f"{key}:user:u04") == 1
    assert small_board.set_max_entries(7) == []
    assert small_board.set_max_entries(1) == ["u04", "u05", "u06", "u07", "u08", "u09"]
    assert small_board.list_all() == [small_board_entry(1)]

    # A larger limit trims nothing, and later writes keep up to the new limit.
    assert small_board.set_max_entries(3) == []
    assert small_board.max_entries == 3
    assert small_board.upsert_user("x", 1)["trimmed_user_ids"] == []
    assert small_board.upsert_user("y", 2)["trimmed_user_ids"] == []
    assert small_board.upsert_user("z", 3)["trimmed_user_ids"] == ["x"]
    assert small_board.get_size() == 3


def test_max_entries_is_per_instance(client: Client, board_key: str) -> None:
    big = RedisLeaderboard(client, key=board_key, max_entries=5)
    small = RedisLeaderboard(client, key=board_key, max_entries=2)
    for i in range(5):
        big.upsert_user(f"p{i}", i)
    assert big.get_size() == 5
    assert small.upsert_user("p9", 9)["trimmed_user_ids"] == ["p0", "p1", "p2", "p3"]
    assert big.max_entries == 5
    assert small.max_entries == 2


# --- large boards: list_all / clear page through them ---

LARGE = 10_000


def test_list_all_and_clear_on_ten_thousand_users(client: Client, board_key: str, r: Any) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=LARGE)
    pipe = r.pipeline(transaction=False)
    scores = {f"user-{i:05d}": float(i // 3) for i in range(LARGE)}  # ties in threes
    pipe.zadd(board_key, scores)
    for i in range(0, LARGE, 2):  # every other user has metadata
        pipe.hset(f"{board_key}:user:user-{i:05d}", mapping={"name": f"N{i}", "i": str(i)})
    pipe.execute()

    def metadata(i: int) -> dict[str, str]:
        return {"name": f"N{i}", "i": str(i)} if i % 2 == 0 else {}

    # Best first; equal scores put the greater member first, so plain reverse order here.
    expected = [
        entry(rank, f"user-{i:05d}", float(i // 3), metadata(i))
        for rank, i in enumerate(range(LARGE - 1, -1, -1), start=1)
    ]
    before = client.stats()["round_trips"]
    assert board.list_all() == expected
    pages = client.stats()["round_trips"] - before
    assert 1 <= pages <= 100

    assert board.get_size() == LARGE
    assert board.get_top(3) == expected[:3]
    assert board.get_around_rank(LARGE, 3) == expected[-3:]
    assert board.get_user_entry("user-05000") == expected[LARGE - 1 - 5000]

    assert board.clear() is None
    assert keys_under(r, board_key) == set()
    assert board.list_all() == []


def test_set_max_entries_trims_ten_thousand_users(client: Client, board_key: str, r: Any) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=LARGE + 1)
    pipe = r.pipeline(transaction=False)
    pipe.zadd(board_key, {f"user-{i:05d}": i for i in range(LARGE + 1)})
    for i in range(0, LARGE + 1, 3):
        pipe.hset(f"{board_key}:user:user-{i:05d}", mapping={"i": str(i)})
    pipe.execute()
    # Every trimmed id, lowest first, even when the trim runs in several steps.
    assert board.set_max_entries(1) == [f"user-{i:05d}" for i in range(LARGE)]
    assert board.max_entries == 1
    assert board.list_all() == [entry(1, f"user-{LARGE:05d}", LARGE)]
    assert keys_under(r, board_key) == {board_key}


# --- one round trip per call ---


def test_every_method_is_one_round_trip(client: Client, board_key: str) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=3)
    calls = [
        lambda: board.upsert_user("a", 1, {"name": "A"}),
        lambda: board.upsert_user("b", 2),
        lambda: board.increment_score("c", 3, {"name": "C"}),
        lambda: board.increment_score("a", 5),
        lambda: board.upsert_user("d", 0.5),  # trimmed away
        lambda: board.upsert_user("e", 10),  # trims another
        lambda: board.get_top(2),
        lambda: board.get_top(),
        lambda: board.get_around_rank(2, 2),
        lambda: board.get_around_rank(1, 10),
        lambda: board.get_rank("a"),
        lambda: board.get_rank("zz"),
        lambda: board.get_user_metadata("a"),
        lambda: board.get_user_entry("a"),
        lambda: board.get_user_entry("zz"),
        lambda: board.list_all(),
        lambda: board.get_size(),
        lambda: board.set_max_entries(2),
        lambda: board.delete_user("a"),
        lambda: board.delete_user("a"),
        lambda: board.clear(),
        lambda: board.get_top(),  # on an empty board
        lambda: board.get_around_rank(1),
        lambda: board.list_all(),
    ]
    board.get_size()  # connect first: the handshake is not a method call
    for warm_up in (True, False):
        board.clear()
        for call in calls:
            before = client.stats()
            call()
            after = client.stats()
            if not warm_up:  # the first pass may load the scripts
                assert after["round_trips"] - before["round_trips"] == 1
                assert after["reconnects"] == before["reconnects"]
                assert after["connections"] == before["connections"]


def test_scripts_flushed_from_the_server_are_reloaded(board: RedisLeaderboard, r: Any) -> None:
    board.upsert_user("a", 1)
    r.script_flush()
    # The script the request names by SHA is the one loaded after NOSCRIPT.
    sha = board._board.get_top(3).request().split(b"\r\n")[4].decode()
    assert r.script_exists(sha) == [False]
    board.get_top(3)
    assert r.script_exists(sha) == [True]
    r.script_flush()
    assert board.upsert_user("b", 2) == written(1, "b", 2)
    r.script_flush()
    assert board.get_top() == [entry(1, "b", 2), entry(2, "a", 1)]
    r.script_flush()
    assert board.increment_score("a", 5) == written(1, "a", 6)
    assert board.get_around_rank(1) == [entry(1, "a", 6), entry(2, "b", 2)]


def test_a_server_error_is_a_response_error(board: RedisLeaderboard, r: Any) -> None:
    r.set(board.key, "not a sorted set")
    with pytest.raises(redis_leaderboard.ResponseError, match="WRONGTYPE"):
        board.upsert_user("a", 1)
    with pytest.raises(redis_leaderboard.ResponseError, match="WRONGTYPE"):
        board.get_top()
    with pytest.raises(redis_leaderboard.ResponseError, match="WRONGTYPE"):
        board.get_size()
    assert r.get(board.key) == "not a sorted set"
    # The connection is still in step after an error reply.
    r.delete(board.key)
    assert board.upsert_user("a", 1) == written(1, "a", 1)
