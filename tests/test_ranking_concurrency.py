"""Ranking rules under contention (issue 12): 8 threads sharing one sync client, and 500 asyncio
tasks sharing one connection, hammer ``submit(mode="best")`` and ``submit(mode="incr")`` on a
handful of users while readers page the board.

Each write's result must be one atomic step from its own previous state (``best``: stored iff
strictly better, ``incr``: previous + amount); the final scores must equal what the model
computes from the acknowledged writes (best and incr each commute, and integer amounts add
exactly); every list any reader saw, and the final board, must rank as the policy says (no gap
and no duplicate it forbids), and ``get_rank`` must agree with the list.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import threading
from typing import Any, Optional

import pytest

import redis_leaderboard
from conftest import RedisServer
from ranking_model import RankingModel
from redis_leaderboard import RedisLeaderboard
from redis_leaderboard.asyncio import Client as AsyncClient
from redis_leaderboard.asyncio import RedisLeaderboard as AsyncRedisLeaderboard

COMBINATIONS = list(
    itertools.product(["desc", "asc"], ["lexicographic", "first", "competition", "dense"])
)
BEST_USERS = ["best-0", "best-1", "best-2"]
INCR_USERS = ["incr-0", "incr-1", "incr-2"]
THREADS, WRITES_PER_THREAD = 8, 150
TASKS = 500


def check_ranks(ties: str, entries: list[dict[str, Any]]) -> None:
    """The ranks of a list from the top, as the policy allows them."""
    ranks = [e["rank"] for e in entries]
    if ties in ("lexicographic", "first"):
        assert ranks == list(range(1, len(entries) + 1)), entries
        return
    for i, entry in enumerate(entries):
        if i == 0:
            assert entry["rank"] == 1, entries
        elif entry["score"] == entries[i - 1]["score"]:
            assert entry["rank"] == entries[i - 1]["rank"], entries
        elif ties == "competition":
            assert entry["rank"] == i + 1, entries
        else:
            assert entry["rank"] == entries[i - 1]["rank"] + 1, entries


def better(order: str, x: float, y: float) -> bool:
    return x > y if order == "desc" else x < y


def check_write(order: str, mode: str, number: float, result: dict[str, Any]) -> None:
    """One write is one atomic step from the state it reports as previous."""
    previous = result["previous_score"]
    if previous is None:
        assert result["score"] == number and result["changed"] is True, result
    elif mode == "incr":
        assert result["score"] == previous + number, result
        assert result["changed"] is (number != 0), result
    else:
        stored = better(order, number, previous)
        assert result["changed"] is stored, result
        assert result["score"] == (number if stored else previous), result
    assert result["rank"] is not None and result["trimmed_user_ids"] == [], result


def planned_writes(seed: int, count: int) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    writes = []
    for _ in range(count):
        if rng.random() < 0.5:
            writes.append((rng.choice(BEST_USERS), "best", float(rng.randint(-20, 20))))
        else:
            writes.append((rng.choice(INCR_USERS), "incr", float(rng.randint(-3, 5))))
    return writes


def expected_scores(order: str, acknowledged: list[tuple[str, str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for user_id in BEST_USERS + INCR_USERS:
        score: Optional[float] = RankingModel.final_score(
            order, [(mode, number) for u, mode, number in acknowledged if u == user_id]
        )
        if score is not None:
            out[user_id] = score
    return out


def check_final(board_entries: list[dict[str, Any]], ranks: dict[str, Any], order: str,
                ties: str, acknowledged: list[tuple[str, str, float]]) -> None:  # fmt: skip
    assert {e["user_id"]: e["score"] for e in board_entries} == expected_scores(order, acknowledged)
    check_ranks(ties, board_entries)
    assert ranks == {e["user_id"]: e["rank"] for e in board_entries}


@pytest.mark.parametrize(("order", "ties"), COMBINATIONS)
def test_threads_hammering_best_and_incr(
    redis_server: RedisServer, board_key: str, order: str, ties: str
) -> None:
    client = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    board = RedisLeaderboard(client, key=board_key, max_entries=1000, order=order, ties=ties)
    acknowledged: list[tuple[str, str, float]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        try:
            start.wait()
            for n, (user_id, mode, number) in enumerate(planned_writes(index, WRITES_PER_THREAD)):
                result = board.submit(user_id, number, mode=mode)
                check_write(order, mode, number, result)
                with lock:
                    acknowledged.append((user_id, mode, number))
                if n % 10 == index % 10:  # readers too, on the same shared client
                    check_ranks(ties, board.list_all())
                    check_ranks(ties, board.get_top(3))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        assert len(acknowledged) == THREADS * WRITES_PER_THREAD
        entries = board.list_all()
        ranks = {e["user_id"]: board.get_rank(e["user_id"]) for e in entries}
        check_final(entries, ranks, order, ties, acknowledged)
    finally:
        client.close()


@pytest.mark.parametrize(("order", "ties"), COMBINATIONS)
def test_asyncio_tasks_hammering_best_and_incr(
    redis_server: RedisServer, board_key: str, order: str, ties: str
) -> None:
    async def main() -> None:
        async with AsyncClient(host=redis_server.host, port=redis_server.port) as client:
            board = AsyncRedisLeaderboard(
                client, key=board_key, max_entries=1000, order=order, ties=ties
            )
            acknowledged: list[tuple[str, str, float]] = []

            async def task(index: int) -> None:
                for n, (user_id, mode, number) in enumerate(planned_writes(1000 + index, 4)):
                    result = await board.submit(user_id, number, mode=mode)
                    check_write(order, mode, number, result)
                    acknowledged.append((user_id, mode, number))
                    if (index + n) % 25 == 0:
                        check_ranks(ties, await board.list_all())

            await asyncio.gather(*(task(i) for i in range(TASKS)))
            assert len(acknowledged) == TASKS * 4
            entries = await board.list_all()
            ranks = dict(
                zip(
                    [e["user_id"] for e in entries],
                    await asyncio.gather(*(board.get_rank(e["user_id"]) for e in entries)),
                )
            )
            check_final(entries, ranks, order, ties, acknowledged)

    asyncio.run(main())
