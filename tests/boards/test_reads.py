"""Reads: ``get_top``, ``get_around_rank``, ``get_rank``, ``get_user_entry``,
``get_user_metadata``, ``list_all`` and ``get_size``, sync and asyncio: every method once with
its exact result, the rank windows at both ends, empty boards, and boards large enough to be read
in pages."""

from __future__ import annotations

from typing import Any

import pytest

from apis import Api, sync_and_one_loop
from helpers import (
    ADA,
    COMPACT,
    entry,
    has_stored_metadata,
    keys_under,
    put_metadata,
    record_layout,
    small_board,
    small_board_entry,
    written,
)


def test_every_method_gives_the_exact_result(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=100)
    assert board.key == board_key
    assert board.max_entries == 100
    name = "redis_leaderboard.asyncio.RedisLeaderboard" if api.asynchronous else "RedisLeaderboard"
    layout = ", layout='compact'" if COMPACT else ""
    assert repr(board) == f"{name}(key={board.key!r}, max_entries=100{layout})"
    mina = {"name": "Mina", "level": "7"}

    assert board.upsert_user("player-1", 1200, ADA) == written(1, "player-1", 1200, ADA)
    assert board.increment_score("player-1", 25) == written(1, "player-1", 1225, ADA)
    assert board.upsert_user("player-2", 1180) == written(2, "player-2", 1180)
    assert board.upsert_user("player-3", 1105, {"name": "Mina", "level": 7}) == written(
        3, "player-3", 1105, mina
    )
    mina_red = {**mina, "team": "red"}
    assert board.increment_score("player-3", 100, {"team": "red"}) == written(
        2, "player-3", 1205, mina_red
    )
    p1, p3, p2 = (
        entry(1, "player-1", 1225, ADA),
        entry(2, "player-3", 1205, mina_red),
        entry(3, "player-2", 1180),
    )

    assert board.get_top(2) == [p1, p3]
    assert board.get_top() == [p1, p3, p2]
    assert board.get_around_rank(2, 1) == [p3]
    assert board.get_around_rank(3, 2) == [p3, p2]
    assert board.get_around_rank(1, 2) == [p1, p3]
    assert board.get_around_rank(1) == [p1, p3, p2]
    assert board.get_rank("player-2") == 3
    assert board.get_rank("nobody") is None
    assert board.get_user_metadata("player-3") == mina_red
    assert board.get_user_metadata("nobody") == {}
    assert board.get_user_entry("player-2") == p2
    assert board.get_user_entry("nobody") is None
    assert board.list_all() == [p1, p3, p2]
    assert board.get_size() == 3

    # int user ids are converted with str()
    assert board.upsert_user(42, 1000, {"name": "Answer"}) == written(
        4, "42", 1000, {"name": "Answer"}
    )
    assert board.get_rank(42) == 4

    # set_max_entries trims the lowest (reported lowest first) and their metadata hashes
    assert board.set_max_entries(2) == ["42", "player-2"]
    assert board.max_entries == 2
    assert board.get_user_metadata("42") == {}
    assert not has_stored_metadata(r, board, "42")
    assert has_stored_metadata(r, board, "player-1")
    assert board.set_max_entries(2) == []

    # a write trimmed away at once: no rank, the payload sent
    assert board.upsert_user("low", 1, {"x": 1}) == {
        "user_id": "low",
        "score": 1.0,
        "metadata": {"x": "1"},
        "trimmed_user_ids": ["low"],
    }
    assert board.increment_score("low", 2) == {
        "user_id": "low",
        "score": 2.0,
        "metadata": {},
        "trimmed_user_ids": ["low"],
    }
    assert board.upsert_user("top", 5000) == written(1, "top", 5000, trimmed=["player-3"])
    assert board.delete_user("top") is True
    assert board.delete_user("top") is False
    assert board.get_size() == 1

    progress: list[int] = []
    assert board.upsert_many([("a", 1), ("b", 2, {"k": "v"})], progress=progress.append) == {
        "written": 2,
        "trimmed": 1,
        "trimmed_user_ids": ["a"],
    }
    assert progress == [2]
    assert board.list_all() == [p1, entry(2, "b", 2, {"k": "v"})]

    assert board.clear() is None
    assert board.get_size() == 0
    assert board.list_all() == []
    assert board.get_top() == []
    assert board.get_around_rank(1) == []
    assert list(r.scan_iter(match=f"{board.key}*")) == []


# --- empty boards ---


def test_every_read_on_an_empty_board(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=100)
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


def test_get_top(api: Api, board_key: str) -> None:
    board = small_board(api.leaderboard(board_key))
    assert board.get_top(1) == [small_board_entry(1)]
    assert board.get_top(3) == [small_board_entry(k) for k in (1, 2, 3)]
    assert board.get_top() == [small_board_entry(k) for k in range(1, 11)]
    assert board.get_top(1000) == [small_board_entry(k) for k in range(1, 11)]


def test_get_top_defaults_to_ten(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key)
    for i in range(12):
        board.upsert_user(f"p{i:02d}", i)
    assert [e["user_id"] for e in board.get_top()] == [f"p{i:02d}" for i in range(11, 1, -1)]


# --- get_around_rank ---

WINDOWS = [
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
]


@pytest.mark.parametrize(("rank", "count", "ranks"), WINDOWS)
def test_get_around_rank_windows(
    api: Api, board_key: str, rank: int, count: int, ranks: list[int]
) -> None:
    board = small_board(api.leaderboard(board_key))
    assert board.get_around_rank(rank, count) == [small_board_entry(k) for k in ranks]


def test_huge_counts_and_ranks(api: Api, board_key: str) -> None:
    board = small_board(api.leaderboard(board_key))
    everyone = [small_board_entry(k) for k in range(1, 11)]
    assert board.get_top(2**62) == everyone
    assert board.get_top(2**63 - 1) == everyone
    assert board.get_around_rank(2**62, 3) == everyone[-3:]
    assert board.get_around_rank(2**62, 2**62) == everyone
    assert board.get_around_rank(1, 2**63 - 1) == everyone
    assert board.set_max_entries(2**63 - 1) == []
    assert board.upsert_user("new", 0)["trimmed_user_ids"] == []


def test_get_around_rank_default_count_is_five(api: Api, board_key: str) -> None:
    board = small_board(api.leaderboard(board_key))
    assert board.get_around_rank(6) == [small_board_entry(k) for k in (4, 5, 6, 7, 8)]


def test_get_around_rank_on_a_one_entry_board(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key)
    board.upsert_user("only", 1)
    assert board.get_around_rank(1) == [entry(1, "only", 1)]
    assert board.get_around_rank(3, 1) == [entry(1, "only", 1)]


# --- get_rank / get_user_entry / get_size ---


def test_get_rank_and_entry(api: Api, board_key: str) -> None:
    board = small_board(api.leaderboard(board_key))
    assert board.get_rank("u10") == 1
    assert board.get_rank("u01") == 10
    assert board.get_rank("u05") == 6
    assert board.get_rank("U05") is None
    assert board.get_user_entry("u05") == small_board_entry(6)
    assert board.get_user_entry("missing") is None
    assert board.get_user_metadata("u03") == {"n": "3"}
    assert board.get_size() == 10


# --- large boards: list_all / clear page through them ---

LARGE = 10_000


@sync_and_one_loop
def test_list_all_and_clear_on_ten_thousand_users(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=LARGE)
    record_layout(board)
    pipe = r.pipeline(transaction=False)
    scores = {f"user-{i:05d}": float(i // 3) for i in range(LARGE)}  # ties in threes
    pipe.zadd(board_key, scores)
    for i in range(0, LARGE, 2):  # every other user has metadata
        put_metadata(pipe, board, f"user-{i:05d}", {"name": f"N{i}", "i": str(i)}, merge=False)
    pipe.execute()

    def metadata(i: int) -> dict[str, str]:
        return {"name": f"N{i}", "i": str(i)} if i % 2 == 0 else {}

    # Best first; equal scores put the greater member first, so plain reverse order here.
    expected = [
        entry(rank, f"user-{i:05d}", float(i // 3), metadata(i))
        for rank, i in enumerate(range(LARGE - 1, -1, -1), start=1)
    ]
    before = api.client.stats()["round_trips"]
    assert board.list_all() == expected
    pages = api.client.stats()["round_trips"] - before
    assert 1 <= pages <= 100

    assert board.get_size() == LARGE
    assert board.get_top(3) == expected[:3]
    assert board.get_around_rank(LARGE, 3) == expected[-3:]
    assert board.get_user_entry("user-05000") == expected[LARGE - 1 - 5000]

    assert board.clear() is None
    assert keys_under(r, board_key) == set()
    assert board.list_all() == []


def test_the_entry_of_a_known_default_board_is_the_guides_transaction(
    api: Api, board_key: str, r: Any
) -> None:
    # A board shown to record no options (get_rank: a bare ZREVRANK once confirmed) reads an
    # entry as the guide does, MULTI ZSCORE ZREVRANK HGETALL EXEC in one round trip (the
    # server's cost of the guide's commands), with the script's answers: a player, a missing
    # one, an empty hash. A compact board (of the default order and ties) once its options are
    # checked: the same transaction, with HGET of the player's field of its hash and HGETALL of
    # the guide's hash (for a player a conversion has not moved yet) in place of the HGETALL.
    board = api.leaderboard(key=board_key)
    board.upsert_user("a", 3, {"m": "x"})
    board.upsert_user("b", 5)
    assert board.get_rank("a") == 2  # the script: the options confirmed
    r.config_resetstat()
    assert board.get_user_entry("a") == entry(2, "a", 3, {"m": "x"})
    assert board.get_user_entry("b") == entry(1, "b", 5)
    assert board.get_user_entry("nobody") is None
    stats = r.info("commandstats")
    assert stats["cmdstat_exec"]["calls"] == 3
    assert stats["cmdstat_zscore"]["calls"] == 3
    assert stats["cmdstat_hgetall"]["calls"] == 3
    hgets = 3 if board.layout == "compact" else 0  # the player's field of the compact hash
    assert stats.get("cmdstat_hget", {}).get("calls", 0) == hgets
    assert "cmdstat_evalsha" not in stats
    # A board with options keeps the script (its rank follows its tie rule).
    shared = api.leaderboard(key=board_key + ":shared", ties="competition")
    shared.upsert_user("a", 3)
    shared.upsert_user("c", 3)
    assert shared.get_rank("a") == 1
    r.config_resetstat()
    assert shared.get_user_entry("c") == entry(1, "c", 3)
    assert "cmdstat_exec" not in r.info("commandstats")
