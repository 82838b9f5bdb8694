"""Bad arguments are refused before any I/O: the exact error, nothing sent, nothing changed."""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from types import MappingProxyType
from typing import Any, Callable

import pytest

from helpers import snapshot
from redis_leaderboard import Client, RedisLeaderboard


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


@pytest.fixture
def seeded(board: RedisLeaderboard) -> RedisLeaderboard:
    """A board with a few users, connected, whose contents must survive every bad call."""
    board.upsert_user("alice", 10, {"name": "Alice"})
    board.upsert_user("bob", 20, {"name": "Bob"})
    board.upsert_user("carol", 30)
    return board


def refused(
    board: RedisLeaderboard,
    r: Any,
    call: Callable[[], Any],
    error: type[Exception],
    message: str | None = None,
) -> None:
    """``call`` raises ``error`` (with ``message``, if given) and sends nothing to Redis."""
    stats = board.redis.stats()
    contents = snapshot(r, board.key)
    max_entries = board.max_entries
    if message is None:
        with pytest.raises(error):
            call()
    else:
        with pytest.raises(error, match=exactly(message)):
            call()
    assert board.redis.stats() == stats
    assert snapshot(r, board.key) == contents
    assert board.max_entries == max_entries


def user_id_methods(board: RedisLeaderboard) -> dict[str, Callable[[Any], Any]]:
    return {
        "upsert_user": lambda u: board.upsert_user(u, 1),
        "increment_score": lambda u: board.increment_score(u, 1),
        "get_rank": board.get_rank,
        "get_user_metadata": board.get_user_metadata,
        "get_user_entry": board.get_user_entry,
        "delete_user": board.delete_user,
    }


METHODS = [
    "upsert_user",
    "increment_score",
    "get_rank",
    "get_user_metadata",
    "get_user_entry",
    "delete_user",
]


@pytest.mark.parametrize("method", METHODS)
def test_empty_user_id_is_a_value_error(seeded: RedisLeaderboard, r: Any, method: str) -> None:
    call = user_id_methods(seeded)[method]
    refused(seeded, r, lambda: call(""), ValueError)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("user_id", [None, b"alice", 1.5, ["alice"], object()])
def test_non_string_user_id_is_a_type_error(
    seeded: RedisLeaderboard, r: Any, method: str, user_id: Any
) -> None:
    call = user_id_methods(seeded)[method]
    refused(seeded, r, lambda: call(user_id), TypeError)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, float("-nan")])
def test_non_finite_score_is_a_value_error(seeded: RedisLeaderboard, r: Any, value: float) -> None:
    refused(seeded, r, lambda: seeded.upsert_user("alice", value), ValueError)
    refused(seeded, r, lambda: seeded.upsert_user("new", value, {"m": "x"}), ValueError)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_amount_is_a_value_error(seeded: RedisLeaderboard, r: Any, value: float) -> None:
    refused(seeded, r, lambda: seeded.increment_score("alice", value), ValueError)
    refused(seeded, r, lambda: seeded.increment_score("new", value, {"m": "x"}), ValueError)


@pytest.mark.parametrize("count", [0, -1, -(2**40)])
def test_count_below_one(seeded: RedisLeaderboard, r: Any, count: int) -> None:
    refused(seeded, r, lambda: seeded.get_top(count), ValueError, "count must be at least 1")
    refused(
        seeded,
        r,
        lambda: seeded.get_around_rank(1, count),
        ValueError,
        "count must be at least 1",
    )


@pytest.mark.parametrize("rank", [0, -1, -(2**40)])
def test_rank_below_one(seeded: RedisLeaderboard, r: Any, rank: int) -> None:
    refused(seeded, r, lambda: seeded.get_around_rank(rank), ValueError, "rank must be at least 1")
    refused(
        seeded,
        r,
        lambda: seeded.get_around_rank(rank, 3),
        ValueError,
        "rank must be at least 1",
    )


@pytest.mark.parametrize("max_entries", [0, -1, -100])
def test_set_max_entries_below_one_keeps_the_old_limit(
    seeded: RedisLeaderboard, r: Any, max_entries: int
) -> None:
    refused(
        seeded,
        r,
        lambda: seeded.set_max_entries(max_entries),
        ValueError,
        "max_entries must be at least 1",
    )
    assert seeded.max_entries == 100
    assert seeded.get_size() == 3


@pytest.mark.parametrize("max_entries", [0, -1])
def test_constructor_max_entries_below_one(
    client: Client, board_key: str, max_entries: int
) -> None:
    stats = client.stats()
    with pytest.raises(ValueError, match=exactly("max_entries must be at least 1")):
        RedisLeaderboard(client, key=board_key, max_entries=max_entries)
    assert client.stats() == stats


def test_constructor_validates_before_connecting() -> None:
    # Nothing listens on port 1: a connection attempt would raise ConnectionError instead.
    with pytest.raises(ValueError, match=exactly("max_entries must be at least 1")):
        RedisLeaderboard(url="redis://127.0.0.1:1/0", max_entries=0)


@pytest.mark.parametrize("metadata", [["name", "x"], [("name", "x")], "name=x", 5, {"name"}])
def test_metadata_must_be_a_mapping(seeded: RedisLeaderboard, r: Any, metadata: Any) -> None:
    refused(seeded, r, lambda: seeded.upsert_user("alice", 50, metadata), TypeError)
    refused(seeded, r, lambda: seeded.increment_score("alice", 5, metadata), TypeError)
    refused(seeded, r, lambda: seeded.upsert_user("new", 50, metadata), TypeError)


@pytest.mark.parametrize(
    "metadata",
    [{1: "x"}, {b"name": "x"}, {None: "x"}, {"ok": "1", ("t",): "x"}],
)
def test_metadata_keys_must_be_str(seeded: RedisLeaderboard, r: Any, metadata: Any) -> None:
    refused(seeded, r, lambda: seeded.upsert_user("alice", 50, metadata), TypeError)
    refused(seeded, r, lambda: seeded.increment_score("new", 5, metadata), TypeError)


def test_any_mapping_is_accepted_and_values_are_str_coerced(seeded: RedisLeaderboard) -> None:
    assert seeded.upsert_user("alice", 11, MappingProxyType({"level": 7}))["metadata"] == {
        "name": "Alice",
        "level": "7",
    }
    assert seeded.upsert_user("alice", 12, OrderedDict(team=1.25))["metadata"] == {
        "name": "Alice",
        "level": "7",
        "team": "1.25",
    }


def test_bad_calls_leave_the_connection_usable(seeded: RedisLeaderboard) -> None:
    for call in (
        lambda: seeded.get_top(0),
        lambda: seeded.upsert_user("", 1),
        lambda: seeded.increment_score("x", math.nan),
        lambda: seeded.upsert_user("x", 1, ["bad"]),
    ):
        with pytest.raises((ValueError, TypeError)):
            call()
    assert seeded.get_top(2) == [
        {"rank": 1, "user_id": "carol", "score": 30.0, "metadata": {}},
        {"rank": 2, "user_id": "bob", "score": 20.0, "metadata": {"name": "Bob"}},
    ]
