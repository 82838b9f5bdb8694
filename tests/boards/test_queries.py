"""The queries beyond the differential test (tests/test_queries_differential.py), sync and
asyncio: validation before anything is sent, one round trip each, the options check, the Redis
work (the histogram never scans the board), and the README's examples."""

from __future__ import annotations

import asyncio
import math
from typing import Any, Callable

import pytest

import redis_leaderboard.asyncio as aio
from apis import Api
from conftest import RedisServer
from helpers import TEST_LAYOUT
from redis_leaderboard import Client, RedisLeaderboard

INF = float("inf")
NAN = float("nan")

QUERIES: list[tuple[str, tuple, dict]] = [
    ("get_around_user", ("a", 3), {}),
    ("get_entries", (["a", "b", "zz"],), {}),
    ("get_page", (1, 2), {}),
    ("get_by_score", (-INF, INF), {"offset": 1, "limit": 2}),
    ("count_by_score", (1, 2), {}),
    ("rank_for_score", (1.5,), {}),
    ("get_percentile", ("a",), {}),
    ("score_at_percentile", (50,), {}),
    ("get_histogram", (4,), {}),
]

BAD_CALLS: list[tuple[str, tuple, dict, type[Exception], str]] = [
    ("get_around_user", ("", 3), {}, ValueError, "user_id must not be empty"),
    ("get_around_user", ("a", 0), {}, ValueError, "count must be at least 1"),
    ("get_around_user", (3.5, 1), {}, TypeError, "user_id must be str"),
    ("get_entries", ([f"u{i}" for i in range(1001)],), {}, ValueError, "at most 1000"),
    ("get_entries", ("abc",), {}, TypeError, "user_ids must be a list"),
    ("get_entries", (["a", None],), {}, TypeError, "user_ids[1]"),
    ("get_entries", (["a", ""],), {}, ValueError, "must not be empty"),
    ("get_page", (0,), {}, ValueError, "page must be at least 1"),
    ("get_page", (1, 0), {}, ValueError, "page_size must be between 1 and 1000"),
    ("get_page", (1, 1001), {}, ValueError, "page_size must be between 1 and 1000"),
    ("get_page", (1.0,), {}, TypeError, "page must be an int"),
    ("get_by_score", (NAN, 1), {}, ValueError, "min_score must be a number, not NaN"),
    ("get_by_score", (0, NAN), {}, ValueError, "max_score must be a number, not NaN"),
    ("get_by_score", (0, 1), {"offset": -1}, ValueError, "offset must be at least 0"),
    ("get_by_score", (0, 1), {"limit": 0}, ValueError, "limit must be at least 1"),
    ("get_by_score", ("x", 1), {}, ValueError, "min_score must be a number"),
    ("count_by_score", (NAN, 1), {}, ValueError, "NaN"),
    ("rank_for_score", (NAN,), {}, ValueError, "score must be a finite number"),
    ("rank_for_score", (INF,), {}, ValueError, "score must be a finite number"),
    ("get_percentile", ("",), {}, ValueError, "user_id must not be empty"),
    ("score_at_percentile", (-0.001,), {}, ValueError, "p must be between 0 and 100"),
    ("score_at_percentile", (100.5,), {}, ValueError, "p must be between 0 and 100"),
    ("score_at_percentile", (NAN,), {}, ValueError, "p must be between 0 and 100"),
    ("get_histogram", (0,), {}, ValueError, "bins must be between 1 and 1000"),
    ("get_histogram", (1001,), {}, ValueError, "bins must be between 1 and 1000"),
    ("get_histogram", (2,), {"min_score": 3, "max_score": 2}, ValueError, "min_score must not"),
    ("get_histogram", (2,), {"min_score": -INF}, ValueError, "finite"),
    ("get_histogram", (2,), {"max_score": NAN}, ValueError, "finite"),
]


def fill(board: Any) -> None:
    board.upsert_many([("a", 3.0), ("b", 1.0), ("c", 2.0), ("d", 2.0)])


@pytest.mark.parametrize(("method", "args", "kwargs", "error", "message"), BAD_CALLS)
def test_bad_arguments_raise_before_anything_is_sent(
    api: Api, board_key: str, method: str, args: tuple, kwargs: dict, error: type, message: str
) -> None:
    board = api.leaderboard(key=board_key)
    before = api.client.stats()["commands"]
    with pytest.raises(error) as raised:
        getattr(board, method)(*args, **kwargs)
    assert message in str(raised.value)
    assert api.client.stats()["commands"] == before


def test_get_entries_takes_up_to_1000_ids_and_any_iterable(api: Api, board_key: str) -> None:
    board = api.leaderboard(key=board_key)
    fill(board)
    got = board.get_entries(f"u{i}" for i in range(1000))
    assert got == [None] * 1000
    assert [e and e["user_id"] for e in board.get_entries(("d", "x", "d", 7))] == [
        "d",
        None,
        "d",
        None,
    ]


@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("ties", ["lexicographic", "first", "competition", "dense"])
def test_each_query_is_one_round_trip_and_one_command(
    api: Api, board_key: str, order: str, ties: str
) -> None:
    board = api.leaderboard(key=board_key, order=order, ties=ties)
    fill(board)
    for method, args, kwargs in QUERIES:  # loads the scripts (EVALSHA's NOSCRIPT, then EVAL)
        getattr(board, method)(*args, **kwargs)
    for method, args, kwargs in QUERIES:
        before = api.client.stats()
        getattr(board, method)(*args, **kwargs)
        after = api.client.stats()
        assert after["round_trips"] - before["round_trips"] == 1, method
        assert after["commands"] - before["commands"] == 1, method


def test_queries_refuse_a_board_recorded_with_other_options(api: Api, board_key: str) -> None:
    api.leaderboard(key=board_key, order="asc").upsert_user("a", 1)
    other = api.leaderboard(key=board_key)
    for method, args, kwargs in QUERIES:
        if method == "count_by_score":  # the same whatever the options: one ZCOUNT
            continue
        with pytest.raises(ValueError, match="order='asc'"):
            getattr(other, method)(*args, **kwargs)


def test_rank_for_score_checks_options_once_then_sends_zcount(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.leaderboard(key=board_key, order="asc", ties="dense")
    fill(board)
    fresh = api.leaderboard(key=board_key, order="asc", ties="dense")
    r.config_resetstat()
    assert fresh.rank_for_score(2) == 2  # the script checks the recorded options
    # then the plain ZCOUNT, on the distinct scores: dense reports 1, 2, 2, 3
    assert fresh.rank_for_score(2.5) == 3
    assert fresh.rank_for_score(3) == 3
    stats = r.info("commandstats")
    assert stats["cmdstat_evalsha"]["calls"] == 1
    assert stats["cmdstat_zcount"]["calls"] == 3
    assert fresh.get_rank("a") == 3  # the rank a score of 3 is reported with


def test_histogram_is_one_zcount_per_edge_and_never_scans(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=10_000)
    board.upsert_many((f"u{i}", i % 1000) for i in range(10_000))
    r.config_resetstat()
    bins = board.get_histogram(25)
    stats = r.info("commandstats")
    assert sum(b["count"] for b in bins) == 10_000
    assert stats["cmdstat_zcount"]["calls"] == 25 + 1  # cumulative: one per edge
    # ZCARD and the two extremes; no ZRANGE of the board beyond one entry each.
    assert stats["cmdstat_zrange"]["calls"] == 2
    assert stats["cmdstat_zcard"]["calls"] == 1


def test_readme_examples(api: Api, board_key: str) -> None:
    board = api.leaderboard(key=board_key, ties="competition")
    for user_id, score in [("ann", 90), ("bob", 80), ("cat", 80), ("dan", 70), ("eve", 50)]:
        board.upsert_user(user_id, score, {"name": user_id.title()})
    assert [(e["user_id"], e["rank"]) for e in board.get_around_user("dan", 3)] == [
        ("bob", 2),
        ("dan", 4),
        ("eve", 5),
    ]
    assert [e["user_id"] for e in board.get_around_user("ann", 3)] == ["ann", "cat", "bob"]
    assert [e and e["rank"] for e in board.get_entries(["dan", "zed", "ann"])] == [4, None, 1]
    page = board.get_page(2, page_size=2)
    assert {k: v for k, v in page.items() if k != "entries"} == {
        "page": 2,
        "page_size": 2,
        "total_pages": 3,
        "size": 5,
    }
    assert [e["user_id"] for e in page["entries"]] == ["bob", "dan"]
    assert [e["user_id"] for e in board.get_by_score(70, 85)] == ["cat", "bob", "dan"]
    assert [e["user_id"] for e in board.get_by_score(70, 85, offset=1, limit=1)] == ["bob"]
    assert board.count_by_score(80, float("inf")) == 3
    assert board.rank_for_score(80) == 2
    assert board.rank_for_score(75) == 4
    assert board.get_percentile("cat") == 50.0
    assert board.get_percentile("ann") == 100.0
    assert board.get_percentile("eve") == 0.0
    assert board.score_at_percentile(50) == 80.0
    assert board.score_at_percentile(0) == 50.0
    assert board.score_at_percentile(100) == 90.0
    assert board.get_histogram(4) == [
        {"min": 50.0, "max": 60.0, "count": 1},
        {"min": 60.0, "max": 70.0, "count": 0},
        {"min": 70.0, "max": 80.0, "count": 1},
        {"min": 80.0, "max": 90.0, "count": 3},
    ]
    assert board.get_histogram(2, min_score=0, max_score=100) == [
        {"min": 0.0, "max": 50.0, "count": 0},
        {"min": 50.0, "max": 100.0, "count": 5},
    ]


def test_empty_board(api: Api, board_key: str) -> None:
    board = api.leaderboard(key=board_key, order="asc", ties="first")
    assert board.get_around_user("a") == []
    assert board.get_entries(["a"]) == [None]
    assert board.get_page(1) == {
        "page": 1,
        "page_size": 10,
        "total_pages": 0,
        "size": 0,
        "entries": [],
    }
    assert board.get_by_score(-INF, INF) == []
    assert board.count_by_score(-INF, INF) == 0
    assert board.rank_for_score(0) == 1
    assert board.get_percentile("a") is None
    assert board.score_at_percentile(50) is None
    assert board.get_histogram() == []
    assert board.get_histogram(3, min_score=0, max_score=1) == []


def test_asyncio_queries_pipeline_on_one_connection(
    redis_server: RedisServer, client: Client, board_key: str, arun: Callable[..., Any]
) -> None:
    """Many queries at once on the asyncio client's one connection: each its own answer."""
    sync = RedisLeaderboard(client, key=board_key, ties="dense", layout=TEST_LAYOUT)
    fill(sync)
    expected = [getattr(sync, m)(*a, **k) for m, a, k in QUERIES]

    async def main() -> list[Any]:
        async with aio.Client(host=redis_server.host, port=redis_server.port) as aclient:
            board = aio.RedisLeaderboard(aclient, key=board_key, ties="dense", layout=TEST_LAYOUT)
            calls: list[Callable[[], Any]] = [
                lambda m=m, a=a, k=k: getattr(board, m)(*a, **k) for m, a, k in QUERIES
            ]
            results = await asyncio.gather(*(call() for call in calls * 20))
            with pytest.raises(ValueError, match="bins"):
                await board.get_histogram(0)
            return results

    results = arun(main())
    assert results == expected * 20
    assert math.isclose(expected[6], 100.0)  # get_percentile("a"): the best of four
