"""Differential test of the queries (issue 13): seeded random sequences of writes (issue 12's
generator) interleaved with every query, on every order x ties, sync and asyncio, against the
plain-Python model in ranking_model.py. Every return value is compared whole (an error compares
as its type). Besides the random queries, a fixed set of boundary probes runs on an empty board,
a board of one, a board whose scores are all equal, and every 40 steps of the random sequence:
pages at both ends and past them, ``get_around_user`` for the first and the last user,
``score_at_percentile(0)`` and ``(100)``, histograms with one bin and with equal bounds, and
bounds of +-inf. The asyncio run issues runs of calls concurrently on one connection.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import math
import random
from typing import Any, Callable, Iterator

import pytest

import redis_leaderboard
from conftest import RedisServer
from ranking_model import RankingModel
from redis_leaderboard import RedisLeaderboard
from redis_leaderboard.asyncio import Client as AsyncClient
from redis_leaderboard.asyncio import RedisLeaderboard as AsyncRedisLeaderboard
from test_ranking_differential import (
    SCORES,
    USER_IDS,
    board_state,
    expected_state,
    random_steps,
)

ORDERS = ["desc", "asc"]
TIES = ["lexicographic", "first", "competition", "dense"]
STEPS_PER_BOARD = 2500  # random steps per order x ties and kind, half of them queries
PROBE_EVERY = 40
INF = float("inf")
BOUNDS = [*SCORES, -INF, INF, -1.5, 0.25, 2.5]
PERCENTILES = [0.0, 100.0, 50.0, 1e-9, 99.99999, 25.0, 33.3, 66.7, 90.0]

Step = tuple[str, tuple, dict]


def random_query(rng: random.Random) -> Step:
    user_id = rng.choice(USER_IDS)
    roll = rng.random()
    if roll < 0.14:
        return "get_around_user", (user_id, rng.randint(1, 6)), {}
    if roll < 0.24:
        ids = [rng.choice([*USER_IDS, "absent"]) for _ in range(rng.randint(0, 6))]
        return "get_entries", (ids,), {}
    if roll < 0.38:
        return "get_page", (rng.randint(1, 6), rng.randint(1, 4)), {}
    if roll < 0.52:
        low, high = sorted([rng.choice(BOUNDS), rng.choice(BOUNDS)])
        if rng.random() < 0.1:
            low, high = high, low  # min > max: []
        kwargs = {"offset": rng.randint(0, 3), "limit": rng.randint(1, 5)}
        return "get_by_score", (low, high), kwargs
    if roll < 0.60:
        return "count_by_score", (rng.choice(BOUNDS), rng.choice(BOUNDS)), {}
    if roll < 0.70:
        return "rank_for_score", (rng.choice([*SCORES, -1.5, 0.25, 2.5, 7.0]),), {}
    if roll < 0.80:
        return "get_percentile", (user_id,), {}
    if roll < 0.88:
        return "score_at_percentile", (rng.choice([*PERCENTILES, rng.uniform(0, 100)]),), {}
    bounds: dict[str, Any] = {}
    if rng.random() < 0.4:
        bounds["min_score"] = rng.choice(SCORES)
    if rng.random() < 0.4:
        bounds["max_score"] = rng.choice(SCORES)  # min > max raises ValueError, as modelled
    return "get_histogram", (rng.randint(1, 5),), bounds


def probes(model: RankingModel) -> list[Step]:
    """The boundary cases, for the board as the model holds it now."""
    users = model.ordered()
    size = len(users)
    out: list[Step] = [
        ("get_page", (1, 1), {}),
        ("get_page", (1, 10), {}),
        ("get_page", (max(1, size), 1), {}),  # the last page
        ("get_page", (size + 1, 1), {}),  # past the end
        ("get_page", (max(1, math.ceil(size / 3)), 3), {}),
        ("get_page", (2**40, 1000), {}),
        ("score_at_percentile", (0,), {}),
        ("score_at_percentile", (100,), {}),
        ("get_histogram", (1,), {}),
        ("get_histogram", (3,), {}),
        ("get_histogram", (2,), {"min_score": 1.0, "max_score": 1.0}),
        ("get_histogram", (4,), {"min_score": 5.0}),
        ("get_histogram", (4,), {"max_score": -5.0}),
        ("get_by_score", (-INF, INF), {}),
        ("get_by_score", (-INF, INF), {"offset": max(0, size - 1), "limit": 1}),
        ("get_by_score", (INF, -INF), {}),
        ("get_by_score", (1.0, 1.0), {"limit": 1000}),
        ("count_by_score", (-INF, INF), {}),
        ("count_by_score", (INF, INF), {}),
        ("rank_for_score", (-1e300,), {}),
        ("rank_for_score", (1e300,), {}),
        ("get_entries", ([],), {}),
        ("get_entries", ([*users, "absent"],), {}),
        ("get_around_user", ("absent", 3), {}),
        ("get_percentile", ("absent",), {}),
    ]
    for user_id in users[:1] + users[-1:]:  # the first and the last user
        out += [
            ("get_around_user", (user_id, 1), {}),
            ("get_around_user", (user_id, 4), {}),
            ("get_around_user", (user_id, 100), {}),
            ("get_percentile", (user_id,), {}),
        ]
    return out


def boundary_boards() -> Iterator[list[Step]]:
    """Writes that lead to the boundary boards: empty, one entry, every score equal."""
    yield [("clear", (), {})]
    yield [("upsert_user", ("solo", 3.0, {"n": "1"}), {})]
    yield [
        ("set_max_entries", (8,), {}),
        *[("upsert_user", (u, 2.0, None), {}) for u in ["a", "B", "é", "10"]],
    ]
    yield [("upsert_user", ("b", -0.0, None), {}), ("upsert_user", ("z z", 0.0, None), {})]


def all_steps(seed: int) -> Iterator[Step | None]:
    """The boundary boards (each followed by the probes, None), then random writes and
    queries with the probes every PROBE_EVERY steps."""
    yield None
    for writes in boundary_boards():
        yield from writes
        yield None
    rng = random.Random(seed)
    writes = random_steps(seed, STEPS_PER_BOARD)
    for step in range(STEPS_PER_BOARD):
        yield random_query(rng) if rng.random() < 0.5 else next(writes)
        if step % PROBE_EVERY == PROBE_EVERY - 1:
            yield None


def outcome(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except (ValueError, TypeError) as error:
        return type(error).__name__


async def async_outcome(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return await call(*args, **kwargs)
    except (ValueError, TypeError) as error:
        return type(error).__name__


def expand(model: RankingModel, steps: Iterator[Step | None]) -> Iterator[Step]:
    for step in steps:
        if step is None:
            yield from probes(model)
        else:
            yield step


def steps_of(seed: int, options: dict[str, Any]) -> Iterator[Step | None]:
    """all_steps; with tie-break columns, most submits carry values (the probes pass)."""
    if "tiebreak" not in options:
        yield from all_steps(seed)
        return
    rng = random.Random(seed)
    for step in all_steps(seed):
        if step is not None and step[0] == "submit" and rng.random() < 0.8:
            kills, time = rng.choice([0, 1, 1, 2]), rng.choice([1.5, -0.0, 0.0, 9.0])
            step = (step[0], step[1], {**step[2], "tiebreak": {"kills": kills, "time": time}})
        yield step


def run_sync(
    server: RedisServer, r: Any, key: str, order: str, ties: str, seed: int, **options: Any
):
    layout = options.pop("layout", "guide")
    model = RankingModel(5, order, ties, **options)
    mismatches: list[str] = []
    count = 0
    with redis_leaderboard.Client(host=server.host, port=server.port) as client:
        board = RedisLeaderboard(
            client, key=key, max_entries=5, order=order, ties=ties, layout=layout, **options
        )
        for method, args, kwargs in expand(model, steps_of(seed, options)):
            got = outcome(getattr(board, method), *args, **kwargs)
            want = outcome(getattr(model, method), *args, **kwargs)
            count += 1
            if got != want:
                mismatches.append(f"op {count}: {method}{args}{kwargs}: {got!r} != {want!r}")
                break
    state, expected = board_state(r, key), expected_state(model, key, r, layout)
    if state != expected:
        mismatches.append(f"final state: got {state!r}, want {expected!r}")
    return count, mismatches


MULTI_ROUND_TRIP = {"upsert_many", "set_max_entries", "clear"}


async def run_asyncio(
    server: RedisServer, r: Any, key: str, order: str, ties: str, seed: int, **options: Any
):
    layout = options.pop("layout", "guide")
    model = RankingModel(5, order, ties, **options)
    mismatches: list[str] = []
    count = 0
    rng = random.Random(seed)
    async with AsyncClient(host=server.host, port=server.port) as client:
        board = AsyncRedisLeaderboard(
            client, key=key, max_entries=5, order=order, ties=ties, layout=layout, **options
        )
        source = steps_of(seed, options)
        queue: collections.deque[Step | None] = collections.deque()
        while not mismatches:
            # A run of one-round-trip calls issued together (pipelined on one connection,
            # applied in order); the probes are computed from the model once the calls
            # before them are applied, and calls of several round trips go alone.
            group: list[Step] = []
            want_size = rng.randint(1, 8)
            while len(group) < want_size:
                step = queue.popleft() if queue else next(source, "end")
                if step == "end":
                    break
                if step is None:
                    if group:
                        queue.appendleft(None)
                        break
                    queue.extendleft(reversed(probes(model)))
                    continue
                if step[0] in MULTI_ROUND_TRIP and group:
                    queue.appendleft(step)
                    break
                group.append(step)
                if step[0] in MULTI_ROUND_TRIP:
                    break
            if not group:
                break
            results = await asyncio.gather(
                *(async_outcome(getattr(board, m), *a, **k) for m, a, k in group)
            )
            for (method, args, kwargs), got in zip(group, results):
                want = outcome(getattr(model, method), *args, **kwargs)
                count += 1
                if got != want and not mismatches:
                    mismatches.append(f"op {count}: {method}{args}{kwargs}: {got!r} != {want!r}")
    state, expected = board_state(r, key), expected_state(model, key, r, layout)
    if state != expected:
        mismatches.append(f"final state: got {state!r}, want {expected!r}")
    return count, mismatches


COMBINATIONS = list(itertools.product(ORDERS, TIES))


# Both layouts (compact: every player's metadata in one hash): the same answers, page for page.
@pytest.mark.parametrize("layout", ["guide", "compact"])
@pytest.mark.parametrize(("order", "ties"), COMBINATIONS)
@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_every_query_matches_the_model(
    redis_server: RedisServer, r: Any, board_key: str, order: str, ties: str, kind: str, layout: str
) -> None:
    seed = 7000 + 1000 * ORDERS.index(order) + 10 * TIES.index(ties) + (kind == "asyncio")
    seed += 500 * (layout == "compact")
    if kind == "sync":
        count, mismatches = run_sync(redis_server, r, board_key, order, ties, seed, layout=layout)
    else:
        count, mismatches = asyncio.run(
            run_asyncio(redis_server, r, board_key, order, ties, seed, layout=layout)
        )
    assert mismatches == []
    assert count > STEPS_PER_BOARD
    print(f"{kind} {order} {ties}: {count} operations, 0 mismatches")


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_every_query_agrees_with_tiebreak_columns(
    redis_server: RedisServer, r: Any, board_key: str, order: str, kind: str
) -> None:
    # The (score, columns...) order in every query: windows, pages, around, percentiles.
    seed = 9000 + 1000 * ORDERS.index(order) + (kind == "asyncio")
    options = {"tiebreak": (("kills", "desc"), ("time", "asc"))}
    if kind == "sync":
        count, mismatches = run_sync(redis_server, r, board_key, order, "lexicographic", seed,
                                     **options)  # fmt: skip
    else:
        count, mismatches = asyncio.run(
            run_asyncio(redis_server, r, board_key, order, "lexicographic", seed, **options)
        )
    assert mismatches == []
    assert count > STEPS_PER_BOARD
