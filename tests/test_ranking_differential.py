"""Differential test of the ranking rules (issue 12): seeded random sequences of every method,
on every order x ties, with submit's three modes and the guide's writes, against the plain-Python
model in ranking_model.py. Every return value is compared whole; after each sequence the board's
keys are compared with the model's state (true scores at ``key``, metadata hashes, the option
keys' contents and nothing else). The same sequences run on the asyncio class, with runs of
one-round-trip calls issued concurrently on one connection (they are pipelined, and applied in
order).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any, Callable, Iterator

import pytest

import redis_leaderboard
from conftest import RedisServer
from helpers import compact_value
from ranking_model import RankingModel, Rejected
from redis_leaderboard import RedisLeaderboard, ScoreRejected
from redis_leaderboard.asyncio import Client as AsyncClient
from redis_leaderboard.asyncio import RedisLeaderboard as AsyncRedisLeaderboard

ORDERS = ["desc", "asc"]
TIES = ["lexicographic", "first", "competition", "dense"]
OPERATIONS_PER_BOARD = 1500  # per order x ties, sync and asyncio each: 24,000 in all

# Awkward ids: bytes order vs case, prefixes, NUL, non-ASCII, separators, digits.
USER_IDS = ["a", "b", "B", "aa", "ab", "é", "a\x00", "z z", "ü:1", "user:x", "10", "9", "-"]
# Many equal scores, negative ones, 0 and -0.
SCORES = [-2.0, -1.0, -0.5, -0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.5]
AMOUNTS = [-1.0, -0.5, 0.0, 0.5, 1.0, 1.0, 2.0]

Step = tuple[str, tuple, dict]


def random_steps(seed: int, count: int) -> Iterator[Step]:
    """(method, args, kwargs): writes often (every mode), reads, deletes, limit changes."""
    rng = random.Random(seed)
    for _ in range(count):
        user_id = rng.choice(USER_IDS)
        metadata = rng.choice([None, None, {"n": rng.randint(0, 9)}, {"n": "x", "lvl": 2.5}])
        roll = rng.random()
        if rng.random() < 0.05:  # fair play: hidden players
            method = rng.choice(["hide", "hide", "unhide", "unhide", "hidden"])
            yield method, (() if method == "hidden" else (user_id,)), {}
            continue
        if roll < 0.36:
            mode = rng.choice(["set", "best", "incr"])
            number = rng.choice(AMOUNTS if mode == "incr" else SCORES)
            yield "submit", (user_id, number, metadata), {"mode": mode}
        elif roll < 0.48:
            yield "upsert_user", (user_id, rng.choice(SCORES), metadata), {}
        elif roll < 0.56:
            yield "increment_score", (user_id, rng.choice(AMOUNTS), metadata), {}
        elif roll < 0.64:
            yield "get_rank", (user_id,), {}
        elif roll < 0.70:
            yield "get_user_entry", (user_id,), {}
        elif roll < 0.76:
            yield "get_top", (rng.randint(1, 8),), {}
        elif roll < 0.82:
            yield "get_around_rank", (rng.randint(1, 9), rng.randint(1, 5)), {}
        elif roll < 0.86:
            yield "list_all", (), {}
        elif roll < 0.89:
            yield "get_size", (), {}
        elif roll < 0.92:
            yield "get_user_metadata", (user_id,), {}
        elif roll < 0.95:
            yield "delete_user", (user_id,), {}
        elif roll < 0.975:
            yield "set_max_entries", (rng.randint(1, 8),), {}
        elif roll < 0.99:
            entries = [
                (rng.choice(USER_IDS), rng.choice(SCORES), *([{"bulk": "1"}] * rng.randint(0, 1)))
                for _ in range(rng.randint(1, 6))
            ]
            yield "upsert_many", (entries,), {}
        else:
            yield "clear", (), {}


def board_state(r: Any, key: str) -> dict[str, Any]:
    """Every key of the board, by its suffix after ``key``, with its whole value."""
    out: dict[str, Any] = {}
    for name in r.scan_iter(match=f"{key}*", count=1000):
        kind = r.type(name)
        if kind == "zset":
            value: Any = r.zrange(name, 0, -1, withscores=True)
        elif kind == "hash":
            value = r.hgetall(name)
        else:
            value = (kind, r.dump(name))
        out[name[len(key) :]] = value
    return out


def expected_state(model: RankingModel, key: str, r: Any, layout: str = "guide") -> dict[str, Any]:
    """The keys a board in the model's state holds: the guide's (or the compact layout's: one
    metadata hash, ``f"{key}:meta"``), plus the option keys."""
    out: dict[str, Any] = {}
    if model.scores:
        out[""] = sorted(model.scores.items(), key=lambda p: (p[1], p[0].encode()))
    for user_id, fields in model.metadata.items():
        if fields and layout == "compact":
            out.setdefault(":meta", {})[user_id] = compact_value(fields)
        elif fields:
            out[f":user:{user_id}"] = fields
    limited = model.score_range is not None or model.max_increment is not None
    limited = limited or bool(model.tiebreak) or layout == "compact"
    if model.kept:  # fair play: the hidden players, each with their kept score's text
        out[":hidden"] = {u: "" if v is None else repr_score(v) for u, v in model.kept.items()}
        for u, columns in model.kept_columns.items():  # and their tie-break columns' key
            if model.kept.get(u) is not None:
                out[":hidden"][u] += " " + model.columns_key(columns)
    if (model.order, model.ties) == ("desc", "lexicographic") and not limited:
        if model.kept:
            out[":options"] = {"hidden": "1"}
        return out
    # The options hash: recorded by the first write, gone with clear().
    options = r.hgetall(f"{key}:options")
    if options:
        out[":options"] = {k: v for k, v in options.items()}
        ties = model.ties
        if model.tiebreak:  # recorded as the tie rule: "tb:<name>.<direction>,..."
            ties = "tb:" + ",".join(f"{name}.{direction}" for name, direction in model.tiebreak)
        if (model.order, ties) != ("desc", "lexicographic") or layout == "compact":
            assert {k: options[k] for k in ("order", "ties")} == {
                "order": model.order,
                "ties": ties,
            }
        assert options.get("layout") == (None if layout == "guide" else layout)
        if model.score_range is not None:  # fair play: "<min>/<max>", Lua's %.17g
            low, high = model.score_range
            texts = ["" if v is None else repr_score(v) for v in (low, high)]
            assert options["score_range"] == "/".join(texts)
        if model.max_increment is not None:
            assert options["max_increment"] == repr_score(model.max_increment)
        assert options.get("hidden") == ("1" if model.kept else None)
    if model.ties == "dense" and model.scores:
        distinct = sorted({0.0 if s == 0 else s for s in model.scores.values()})
        out[":dense"] = [(repr_score(s), s) for s in distinct]
    if model.tiebreak and model.scores:
        ranked = r.zrange(f"{key}:tb", 0, -1, withscores=True)
        keys = r.hgetall(f"{key}:tb:keys")
        width = 16 * len(model.tiebreak)
        # Every user once, at its true score, behind the key of its columns (the reads check
        # what the keys decode to).
        assert {m[width:]: s for m, s in ranked} == model.scores
        assert {m[width:]: m[:width] for m, _ in ranked} == keys
        out[":tb"] = ranked
        out[":tb:keys"] = keys
    if model.ties == "first" and model.scores:
        first = r.zrange(f"{key}:first", 0, -1, withscores=True)
        keys = r.hgetall(f"{key}:first:keys")
        # Every user once, at its true score, behind its achievement key; ordered by time
        # within equal scores (checked through the reads; here, the bookkeeping).
        assert sorted(m[16:] for m, _ in first) == sorted(model.scores)
        assert {m[16:]: s for m, s in first} == model.scores
        assert {m[16:]: m[:16] for m, _ in first} == keys
        out[":first"] = first
        out[":first:keys"] = keys
    return out


def repr_score(score: float) -> str:
    """The member text of a distinct score in the dense set (Lua's %.17g, 0 for -0)."""
    if score == 0:
        return "0"
    return f"{score:.17g}"


def outcome(call: Callable[[], Any]) -> Any:
    """A call's result, or "rejected" if score limits refused it (library or model)."""
    try:
        return call()
    except (ScoreRejected, Rejected):
        return "rejected"


async def async_outcome(call: Any) -> Any:
    try:
        return await call
    except ScoreRejected:
        return "rejected"


def model_outcome(model: RankingModel, method: str, args: tuple, kwargs: dict) -> Any:
    return outcome(lambda: getattr(model, method)(*args, **kwargs))


def with_columns(steps: Iterator[Step], seed: int) -> Iterator[Step]:
    """Tie-break columns: most submits carry values (few distinct ones: many equal tuples)."""
    rng = random.Random(seed)
    for method, args, kwargs in steps:
        if method == "submit" and rng.random() < 0.8:
            kills, time = rng.choice([0, 1, 1, 2, -1.5]), rng.choice([1.5, 2.5, -0.0, 0.0, 9.0])
            kwargs = {**kwargs, "tiebreak": {"kills": kills, "time": time}}
        yield method, args, kwargs


def steps_of(seed: int, limits: dict[str, Any]) -> Iterator[Step]:
    steps = random_steps(seed, OPERATIONS_PER_BOARD)
    return with_columns(steps, seed) if "tiebreak" in limits else steps


def run_sync(
    server: RedisServer,
    r: Any,
    key: str,
    order: str,
    ties: str,
    seed: int,
    limits: dict[str, Any] = {},  # noqa: B006  (read only)
    layout: str = "guide",
) -> tuple[int, list[str], int]:
    model = RankingModel(5, order, ties, **limits)
    limits = {**limits, "layout": layout}
    mismatches: list[str] = []
    count = refused = 0
    with redis_leaderboard.Client(host=server.host, port=server.port) as client:
        board = RedisLeaderboard(client, key=key, max_entries=5, order=order, ties=ties, **limits)
        for step, (method, args, kwargs) in enumerate(steps_of(seed, limits)):
            if step % 300 == 299:  # another object on the same board, another limit
                model.max_entries = random.Random(seed + step).randint(1, 8)
                board = RedisLeaderboard(
                    client, key=key, max_entries=model.max_entries, order=order, ties=ties,
                    **limits,
                )  # fmt: skip
            call = getattr(board, method)
            got = outcome(lambda: call(*args, **kwargs))  # noqa: B023  (called at once)
            want = model_outcome(model, method, args, kwargs)
            count += 1
            refused += want == "rejected"
            if got != want:
                mismatches.append(f"step {step}: {method}{args}{kwargs}: {got!r} != {want!r}")
                break
    state, expected = board_state(r, key), expected_state(model, key, r, layout)
    if state != expected:
        mismatches.append(f"final state: got {state!r}, want {expected!r}")
    return count, mismatches, refused


SINGLE_ROUND_TRIP = {
    "submit", "upsert_user", "increment_score", "get_rank", "get_user_entry", "get_top",
    "get_around_rank", "list_all", "get_size", "get_user_metadata", "delete_user", "hide",
    "unhide", "hidden",
}  # fmt: skip


async def run_asyncio(
    server: RedisServer,
    r: Any,
    key: str,
    order: str,
    ties: str,
    seed: int,
    limits: dict[str, Any] = {},  # noqa: B006  (read only)
    layout: str = "guide",
) -> tuple[int, list[str], int]:
    model = RankingModel(5, order, ties, **limits)
    limits = {**limits, "layout": layout}
    mismatches: list[str] = []
    count = refused = 0
    steps = list(steps_of(seed, limits))
    rng = random.Random(seed)
    async with AsyncClient(host=server.host, port=server.port) as client:
        board = AsyncRedisLeaderboard(
            client, key=key, max_entries=5, order=order, ties=ties, **limits
        )
        i = 0
        while i < len(steps) and not mismatches:
            # A run of one-round-trip calls issued together: pipelined on the one connection,
            # so applied in the order issued.
            group = [steps[i]]
            while (
                len(group) < rng.randint(1, 6)
                and i + len(group) < len(steps)
                and steps[i + len(group)][0] in SINGLE_ROUND_TRIP
                and group[0][0] in SINGLE_ROUND_TRIP
            ):
                group.append(steps[i + len(group)])
            results = await asyncio.gather(
                *(
                    async_outcome(getattr(board, method)(*args, **kwargs))
                    for method, args, kwargs in group
                )
            )
            for (method, args, kwargs), got in zip(group, results):
                want = model_outcome(model, method, args, kwargs)
                count += 1
                refused += want == "rejected"
                if got != want and not mismatches:
                    mismatches.append(
                        f"step {i}: {method}{args}{kwargs}: got {got!r}, want {want!r}"
                    )
                i += 1
    state, expected = board_state(r, key), expected_state(model, key, r, layout)
    if state != expected:
        mismatches.append(f"final state: got {state!r}, want {expected!r}")
    return count, mismatches, refused


COMBINATIONS = list(itertools.product(ORDERS, TIES))


# Both layouts (compact: every player's metadata in one hash), the same model, keys compared.
@pytest.mark.parametrize("layout", ["guide", "compact"])
@pytest.mark.parametrize(("order", "ties"), COMBINATIONS)
@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_every_method_matches_the_model(
    redis_server: RedisServer, r: Any, board_key: str, order: str, ties: str, kind: str, layout: str
) -> None:
    seed = 1000 * ORDERS.index(order) + 10 * TIES.index(ties) + (kind == "asyncio")
    seed += 3 * (layout == "compact")
    run: Callable[..., Any] = run_sync if kind == "sync" else run_asyncio
    result = run(redis_server, r, board_key, order, ties, seed, {}, layout)
    if kind == "asyncio":
        result = asyncio.run(result)
    count, mismatches, _ = result
    assert mismatches == []
    assert count == OPERATIONS_PER_BOARD


# Fair play: the same sequences on boards with score limits (tight enough that writes of every
# mode are refused often: scores -2 to 3.5, increments up to 2), refusals compared too.
LIMITS = [
    {"score_range": (-1.0, 2.0)},
    {"max_increment": 1.0},
    {"score_range": (None, 2.5), "max_increment": 1.5},
]


@pytest.mark.parametrize(("order", "ties"), COMBINATIONS)
@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_score_limits_match_the_model(
    redis_server: RedisServer, r: Any, board_key: str, order: str, ties: str, kind: str
) -> None:
    seed = 7 + 1000 * ORDERS.index(order) + 10 * TIES.index(ties) + (kind == "asyncio")
    limits = LIMITS[seed % len(LIMITS)]
    run: Callable[..., Any] = run_sync if kind == "sync" else run_asyncio
    result = run(redis_server, r, board_key, order, ties, seed, limits)
    if kind == "asyncio":
        result = asyncio.run(result)
    count, mismatches, refused = result
    assert mismatches == []
    assert count == OPERATIONS_PER_BOARD
    # The limits were met often (24 to 133 refusals a run): a board that refused nothing
    # would agree with a model that refused nothing.
    assert refused >= 20


# Tie-break columns: the same sequences on boards ranking equal scores by two columns (one of
# each direction), most submits carrying values: every order x mode, 0 mismatches.
TIEBREAK = (("kills", "desc"), ("time", "asc"))


@pytest.mark.parametrize("layout", ["guide", "compact"])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_tiebreak_columns_match_the_model(
    redis_server: RedisServer, r: Any, board_key: str, order: str, kind: str, layout: str
) -> None:
    seed = 31 + 1000 * ORDERS.index(order) + (kind == "asyncio") + 5 * (layout == "compact")
    run: Callable[..., Any] = run_sync if kind == "sync" else run_asyncio
    result = run(
        redis_server, r, board_key, order, "lexicographic", seed, {"tiebreak": TIEBREAK}, layout
    )
    if kind == "asyncio":
        result = asyncio.run(result)
    count, mismatches, _ = result
    assert mismatches == []
    assert count == OPERATIONS_PER_BOARD
