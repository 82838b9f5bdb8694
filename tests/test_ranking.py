"""Ranking rules (issue 12): the options' examples, their validation, the key layout, the
recorded options and the error a client with other options gets, and that ranks agree between
get_rank and pages under every tie rule.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from conftest import RedisServer
from redis_leaderboard import RedisLeaderboard
from redis_leaderboard.asyncio import Client as AsyncClient
from redis_leaderboard.asyncio import RedisLeaderboard as AsyncRedisLeaderboard

ORDERS = ["desc", "asc"]
TIES = ["lexicographic", "first", "competition", "dense"]
OPTIONS = list(itertools.product(ORDERS, TIES))


def open_board(client: Any, key: str, **options: Any) -> RedisLeaderboard:
    return RedisLeaderboard(client, key=key, max_entries=options.pop("max_entries", 100), **options)


def ranked(board: Any) -> list[tuple[int, str, float]]:
    return [(e["rank"], e["user_id"], e["score"]) for e in board.list_all()]


# --- one example per option (the README's) ---


def test_asc_ranks_the_lowest_first_and_trims_the_highest(client: Any, board_key: str) -> None:
    race = open_board(client, board_key, order="asc", max_entries=3)
    for user_id, seconds in [("ada", 71.2), ("bob", 69.8), ("cy", 75.0), ("dee", 70.1)]:
        race.upsert_user(user_id, seconds)
    assert ranked(race) == [(1, "bob", 69.8), (2, "dee", 70.1), (3, "ada", 71.2)]
    assert race.get_rank("bob") == 1
    assert race.get_around_rank(1, 2)[0]["user_id"] == "bob"


def test_asc_lexicographic_gives_the_tie_to_the_smaller_id(client: Any, board_key: str) -> None:
    board = open_board(client, board_key, order="asc")
    board.upsert_user("b", 5)
    board.upsert_user("a", 5)
    assert ranked(board) == [(1, "a", 5.0), (2, "b", 5.0)]


def test_first_gives_the_tie_to_the_earlier_achiever(client: Any, board_key: str) -> None:
    board = open_board(client, board_key, ties="first", max_entries=3)
    board.upsert_user("zed", 100)
    board.upsert_user("amy", 100)  # same score, later: behind zed, whatever the ids
    board.increment_score("kim", 90)
    board.increment_score("kim", 10)  # reaches 100 last
    assert ranked(board) == [(1, "zed", 100.0), (2, "amy", 100.0), (3, "kim", 100.0)]
    # A write that does not change the score keeps the time.
    board.submit("zed", 100, {"note": "again"})
    board.submit("zed", 50, mode="best")
    assert board.get_rank("zed") == 1
    # Trimming removes the latest achiever of the worst score first.
    assert board.upsert_user("new", 100)["trimmed_user_ids"] == ["new"]
    # Leaving and coming back starts a new time.
    assert board.delete_user("zed") is True
    board.upsert_user("zed", 100)
    assert [e["user_id"] for e in board.list_all()] == ["amy", "kim", "zed"]


def test_competition_shares_ranks_and_skips(client: Any, board_key: str) -> None:
    quiz = open_board(client, board_key, ties="competition")
    for user_id, points in [("ann", 9), ("ben", 9), ("cat", 7), ("dan", 6)]:
        quiz.upsert_user(user_id, points)
    assert [(e["user_id"], e["rank"]) for e in quiz.get_top(4)] == [
        ("ben", 1), ("ann", 1), ("cat", 3), ("dan", 4),
    ]  # fmt: skip
    assert quiz.get_rank("ann") == quiz.get_rank("ben") == 1
    assert quiz.get_user_entry("cat")["rank"] == 3  # type: ignore[index]
    assert [e["rank"] for e in quiz.get_around_rank(3, 2)] == [1, 3]  # positions 2 and 3


def test_dense_shares_ranks_without_gaps(client: Any, board_key: str) -> None:
    quiz = open_board(client, board_key, ties="dense")
    for user_id, points in [("ann", 9), ("ben", 9), ("cat", 7), ("dan", 6), ("eve", -0.0)]:
        quiz.upsert_user(user_id, points)
    quiz.upsert_user("fay", 0)  # 0 and -0 are one score
    assert [e["rank"] for e in quiz.list_all()] == [1, 1, 2, 3, 4, 4]
    assert quiz.submit("dan", 9)["rank"] == 1
    assert [e["rank"] for e in quiz.list_all()] == [1, 1, 1, 2, 3, 3]


def test_submit_modes_and_result(client: Any, board_key: str) -> None:
    arcade = open_board(client, board_key)
    first = arcade.submit("p1", 500, {"name": "Ada"}, mode="best")
    assert first == {
        "user_id": "p1",
        "score": 500.0,
        "rank": 1,
        "previous_score": None,
        "previous_rank": None,
        "changed": True,
        "metadata": {"name": "Ada"},
        "trimmed_user_ids": [],
    }
    arcade.submit("p2", 700)
    worse = arcade.submit("p1", 400, {"level": 3}, mode="best")
    assert worse == {
        "user_id": "p1",
        "score": 500.0,
        "rank": 2,
        "previous_score": 500.0,
        "previous_rank": 2,
        "changed": False,
        "metadata": {"name": "Ada", "level": "3"},  # metadata merged either way
        "trimmed_user_ids": [],
    }
    assert arcade.submit("p1", 250, mode="incr")["score"] == 750.0
    assert arcade.submit("p1", 1, mode="set")["previous_rank"] == 1
    gone = open_board(client, board_key, max_entries=2).submit("p3", 0, {"m": "1"})
    assert gone["rank"] is None and gone["metadata"] == {} and gone["score"] == 0.0
    assert gone["trimmed_user_ids"] == ["p3"]


def test_asyncio_takes_the_same_options_and_submit(
    redis_server: RedisServer, board_key: str
) -> None:
    async def main() -> list[Any]:
        async with AsyncClient(host=redis_server.host, port=redis_server.port) as client:
            board = AsyncRedisLeaderboard(client, key=board_key, order="asc", ties="dense")
            assert (board.order, board.ties) == ("asc", "dense")
            await board.submit("a", 3, mode="best")
            await board.submit("a", 5, mode="best")  # worse in asc
            await board.submit("b", 3)
            with pytest.raises(ValueError, match="mode must be"):
                await board.submit("a", 1, mode="max")
            return await board.list_all()

    assert [(e["user_id"], e["rank"], e["score"]) for e in asyncio.run(main())] == [
        ("a", 1, 3.0),
        ("b", 1, 3.0),
    ]


# --- validation, before anything is sent ---


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"order": "up"}, ValueError, "order must be 'desc' or 'asc', not 'up'"),
        ({"ties": "random"}, ValueError, "ties must be 'lexicographic', 'first'"),
        ({"order": None}, TypeError, "order must be a str"),
        ({"ties": 1}, TypeError, "ties must be a str"),
    ],
)
def test_bad_options_raise_before_connecting(options: dict, error: type, match: str) -> None:
    for cls in (RedisLeaderboard, AsyncRedisLeaderboard):
        with pytest.raises(error, match=match):
            cls(url="redis://127.0.0.1:1/0", **options)


def test_a_bad_mode_raises_before_anything_is_sent(client: Any, board_key: str) -> None:
    board = open_board(client, board_key)
    before = client.stats()["round_trips"]
    with pytest.raises(ValueError, match="mode must be 'set', 'best' or 'incr', not 'max'"):
        board.submit("u", 1, mode="max")
    with pytest.raises(TypeError, match="mode must be a str"):
        board.submit("u", 1, mode=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="score must be a finite number"):
        board.submit("u", float("inf"), mode="incr")
    with pytest.raises(ValueError, match="user_id must not be empty"):
        board.submit("", 1)
    with pytest.raises(TypeError):
        board.submit("u", 1, "x", mode="set")  # type: ignore[arg-type]
    assert client.stats()["round_trips"] == before


# --- key layout and recorded options ---


def test_a_default_board_has_the_guides_keys_only(client: Any, r: Any, board_key: str) -> None:
    board = open_board(client, board_key, max_entries=2)
    board.submit("a", 1, {"m": "1"}, mode="best")
    board.submit("b", 2, mode="incr")
    board.upsert_user("c", 3, {"m": "3"})
    board.upsert_many([("d", 4, {"m": "4"})])
    board.get_rank("d")
    board.set_max_entries(1)
    assert sorted(r.scan_iter(match=f"{board_key}*")) == [board_key, f"{board_key}:user:d"]


@pytest.mark.parametrize(("order", "ties"), OPTIONS[1:])
def test_options_are_recorded_and_cleared_with_the_board(
    client: Any, r: Any, board_key: str, order: str, ties: str
) -> None:
    board = open_board(client, board_key, order=order, ties=ties)
    board.get_top()  # a read records nothing
    assert r.exists(f"{board_key}:options") == 0
    board.upsert_user("a", 1)
    recorded = r.hgetall(f"{board_key}:options")
    assert {k: recorded[k] for k in ("order", "ties")} == {"order": order, "ties": ties}
    board.clear()
    assert list(r.scan_iter(match=f"{board_key}*")) == []


@pytest.mark.parametrize(
    ("created", "opened"),
    [
        ({}, {"order": "asc"}),
        ({}, {"ties": "first"}),
        ({"order": "asc"}, {}),
        ({"ties": "dense"}, {}),
        ({"ties": "dense"}, {"ties": "competition"}),
        ({"order": "asc", "ties": "first"}, {"order": "desc", "ties": "first"}),
    ],
)
@pytest.mark.parametrize(
    "method",
    ["get_rank", "get_top", "get_user_entry", "upsert_user", "submit", "delete_user",
     "set_max_entries", "clear", "list_all", "upsert_many"],
)  # fmt: skip
def test_a_client_with_other_options_gets_value_error_on_its_first_call(
    client: Any, r: Any, board_key: str, created: dict, opened: dict, method: str
) -> None:
    board = open_board(client, board_key, **created)
    board.upsert_user("a", 1, {"m": "1"})
    board.upsert_user("b", 2)
    before = {name: r.dump(name) for name in r.scan_iter(match=f"{board_key}*")}
    other = open_board(client, board_key, **opened)
    args: dict[str, tuple] = {
        "get_rank": ("a",), "get_top": (), "get_user_entry": ("a",), "upsert_user": ("c", 3),
        "submit": ("a", 5), "delete_user": ("a",), "set_max_entries": (1,), "clear": (),
        "list_all": (), "upsert_many": ([("c", 3)],),
    }  # fmt: skip
    have = {"order": "desc", "ties": "lexicographic", **created}
    want = {"order": "desc", "ties": "lexicographic", **opened}
    with pytest.raises(ValueError) as raised:
        getattr(other, method)(*args[method])
    message = str(raised.value)
    assert f"order='{have['order']}', ties='{have['ties']}'" in message
    assert f"order='{want['order']}', ties='{want['ties']}'" in message
    assert {name: r.dump(name) for name in r.scan_iter(match=f"{board_key}*")} == before


@pytest.mark.parametrize(
    "method",
    ["upsert_user", "increment_score", "submit", "delete_user", "set_max_entries", "clear"],
)
def test_a_checked_default_board_still_checks_every_write(
    client: Any, r: Any, board_key: str, method: str
) -> None:
    # A default board's reads stop checking the recorded options once a reply has shown there
    # are none, its writes never do: a board cleared and created again by a client with other
    # options is refused, not written the guide's way.
    board = open_board(client, board_key)
    board.upsert_user("a", 1)
    assert board.get_top() and board.get_rank("a") == 1
    board.clear()
    other = open_board(client, board_key, ties="first")
    other.upsert_user("a", 1, {"m": "1"})
    other.upsert_user("b", 2)
    before = {name: r.dump(name) for name in r.scan_iter(match=f"{board_key}*")}
    args: dict[str, tuple] = {
        "upsert_user": ("c", 3), "increment_score": ("a", 1), "submit": ("a", 5),
        "delete_user": ("a",), "set_max_entries": (1,), "clear": (),
    }  # fmt: skip
    with pytest.raises(ValueError, match="has order='desc', ties='first'"):
        getattr(board, method)(*args[method])
    assert {name: r.dump(name) for name in r.scan_iter(match=f"{board_key}*")} == before


def test_a_board_written_by_the_guides_code_is_a_default_board(
    client: Any, r: Any, board_key: str
) -> None:
    r.zadd(board_key, {"a": 1})  # no options recorded: the guide's board
    with pytest.raises(ValueError, match="has order='desc', ties='lexicographic'"):
        open_board(client, board_key, ties="competition").get_top()
    assert open_board(client, board_key).get_rank("a") == 1


# --- ranks agree everywhere, across pages ---


@pytest.mark.parametrize("ties", ["competition", "dense", "first"])
@pytest.mark.parametrize("order", ORDERS)
def test_get_rank_and_every_page_agree(client: Any, board_key: str, order: str, ties: str) -> None:
    board = open_board(client, board_key, order=order, ties=ties, max_entries=20_000)
    # 12,000 users on 40 scores: every page boundary (5,000) falls inside a run of ties.
    board.upsert_many((f"u{i:05d}", float(i % 40), {"i": i}) for i in range(12_000))
    entries = board.list_all()
    assert len(entries) == 12_000
    by_user = {e["user_id"]: e["rank"] for e in entries}
    for e in entries[4990:5010] + entries[9995:10005] + entries[::997]:
        assert board.get_rank(e["user_id"]) == e["rank"]
        assert board.get_user_entry(e["user_id"])["rank"] == e["rank"]  # type: ignore[index]
    for e in board.get_around_rank(5000, 11):
        assert by_user[e["user_id"]] == e["rank"]
    if ties == "competition":
        assert entries[-1]["rank"] == 12_000 - 300 + 1
    elif ties == "dense":
        assert entries[-1]["rank"] == 40
    else:
        assert [e["rank"] for e in entries] == list(range(1, 12_001))
