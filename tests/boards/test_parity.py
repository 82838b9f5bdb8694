"""Parity with the guide: the same operations give the same results and the same Redis contents,
sync and asyncio.

``GuideLeaderboard`` (benchmarks/guide_leaderboard.py) is the guide's redis-py algorithm. Random
operation sequences with fixed seeds run against it and against this package on two keys; every
result and the final keys (with the key prefix taken off) must be identical (a compact board's,
``LB_TEST_LAYOUT=compact``, as the guide's layout holds the same players: tests/helpers.py). Data
written by one is then read back by the other (the guide's layout only); and the sync and asyncio
classes write one board in turn.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Callable

import pytest
from benchmarks.guide_leaderboard import GuideLeaderboard

import redis_leaderboard.asyncio as aio
from apis import Api, sync_and_one_loop
from helpers import TEST_LAYOUT, contents, contents_as_guide
from redis_leaderboard import Client, RedisLeaderboard

USERS = [
    "p0",
    "p1",
    "p2",
    "p3",
    "p4",
    "p5",
    "p6",
    "p7",
    "team:red",
    "with space",
    "emoji🏆",
    "{tag}",
    "中文",
    "Zed",
]
FIELDS = ["name", "team", "bio", "emoji 🎉"]
VALUES = ["Ada", "Mina", "", "tab\there", "new\nline", "{}", "ünï", "🏁", "a:b", "x" * 50]

Op = tuple[str, tuple[Any, ...]]


def random_metadata(rng: random.Random) -> dict[str, str] | None:
    roll = rng.random()
    if roll < 0.4:
        return None
    if roll < 0.5:
        return {}
    fields = rng.sample(FIELDS, rng.randint(1, len(FIELDS)))
    return {field: rng.choice(VALUES) for field in fields}


def random_score(rng: random.Random) -> float:
    roll = rng.random()
    if roll < 0.5:
        return float(rng.randint(-3, 12))  # small integers: many ties
    if roll < 0.9:
        return round(rng.uniform(-20, 40), rng.randint(0, 3))
    return rng.choice([0.0, 0.1, 1e15, -1e-7, 0.30000000000000004])


def random_ops(rng: random.Random, n: int) -> list[Op]:
    kinds = [
        ("upsert_user", 30),
        ("increment_score", 30),
        ("get_top", 5),
        ("get_around_rank", 8),
        ("get_rank", 5),
        ("get_user_metadata", 4),
        ("get_user_entry", 6),
        ("list_all", 3),
        ("get_size", 2),
        ("delete_user", 6),
        ("set_max_entries", 3),
        ("clear", 1),
    ]
    names = [k for k, _ in kinds]
    weights = [w for _, w in kinds]
    ops: list[Op] = []
    for _ in range(n):
        kind = rng.choices(names, weights)[0]
        user = rng.choice(USERS)
        if kind in ("upsert_user", "increment_score"):
            ops.append((kind, (user, random_score(rng), random_metadata(rng))))
        elif kind == "get_top":
            ops.append((kind, (rng.randint(1, 16),)))
        elif kind == "get_around_rank":
            ops.append((kind, (rng.randint(1, 16), rng.randint(1, 9))))
        elif kind in ("get_rank", "get_user_metadata", "get_user_entry", "delete_user"):
            ops.append((kind, (user,)))
        elif kind == "set_max_entries":
            ops.append((kind, (rng.randint(1, 10),)))
        else:
            ops.append((kind, ()))
    return ops


# Another generator: int user ids (7, converted with str()), metadata values that are not str.
MIXED_USERS = ["p0", "p1", "p2", "p3", "p4", "with space", "emoji🏆", "{tag}", "中文", "Zed", "7"]
MIXED_VALUES = ["Ada", "Mina", "", "tab\there", "new\nline", "ünï", "x" * 40, 5, 1.25]


def random_mixed_ops(rng: random.Random, n: int) -> list[Op]:
    kinds = {
        "upsert_user": 30,
        "increment_score": 30,
        "get_top": 5,
        "get_around_rank": 8,
        "get_rank": 5,
        "get_user_metadata": 4,
        "get_user_entry": 6,
        "list_all": 3,
        "get_size": 2,
        "delete_user": 6,
        "set_max_entries": 3,
        "clear": 1,
    }
    ops: list[Op] = []
    for _ in range(n):
        kind = rng.choices(list(kinds), list(kinds.values()))[0]
        user: Any = rng.choice(MIXED_USERS)
        if user == "7" and rng.random() < 0.5:
            user = 7
        if kind in ("upsert_user", "increment_score"):
            score = (
                float(rng.randint(-3, 12))
                if rng.random() < 0.5
                else round(rng.uniform(-20, 40), rng.randint(0, 3))
            )
            metadata = (
                None
                if rng.random() < 0.4
                else {f: rng.choice(MIXED_VALUES) for f in rng.sample(FIELDS, rng.randint(0, 3))}
            )
            ops.append((kind, (user, score, metadata)))
        elif kind == "get_top":
            ops.append((kind, (rng.randint(1, 14),)))
        elif kind == "get_around_rank":
            ops.append((kind, (rng.randint(1, 14), rng.randint(1, 8))))
        elif kind == "set_max_entries":
            ops.append((kind, (rng.randint(1, 10),)))
        elif kind in ("list_all", "get_size", "clear"):
            ops.append((kind, ()))
        else:
            ops.append((kind, (user,)))
    return ops


def apply(board: Any, op: Op) -> Any:
    name, args = op
    method: Callable[..., Any] = getattr(board, name)
    return method(*args)


def read_everything(board: Any) -> dict[str, Any]:
    """What every read method says about the board."""
    size = board.get_size()
    return {
        "size": size,
        "list_all": board.list_all(),
        "top": [board.get_top(n) for n in (1, 3, 10)],
        "around": [board.get_around_rank(rank, count) for rank in (1, 2, 5, 9) for count in (1, 4)],
        "users": {
            u: (board.get_rank(u), board.get_user_entry(u), board.get_user_metadata(u))
            for u in USERS
        },
    }


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
@sync_and_one_loop
def test_random_sequences_match_the_guide(api: Api, board_key: str, r: Any, seed: int) -> None:
    rng = random.Random(seed)
    max_entries = rng.randint(3, 8)
    ours_key, guide_key = f"{board_key}:ours", f"{board_key}:guide"
    ours = api.leaderboard(key=ours_key, max_entries=max_entries)
    guide = GuideLeaderboard(r, key=guide_key, max_entries=max_entries)

    for step, op in enumerate(random_ops(rng, 250)):
        expected = apply(guide, op)
        assert apply(ours, op) == expected, f"step {step}: {op}"
        assert ours.max_entries == guide.max_entries
        if step % 25 == 0:
            assert contents_as_guide(r, ours) == contents(r, guide_key), f"after step {step}: {op}"

    assert contents_as_guide(r, ours) == contents(r, guide_key)
    assert read_everything(ours) == read_everything(guide)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_sequences_with_int_ids_match_the_guide(
    api: Api, board_key: str, r: Any, seed: int
) -> None:
    ours_key, guide_key = f"{board_key}:ours", f"{board_key}:guide"
    ours = api.leaderboard(key=ours_key, max_entries=8)
    guide = GuideLeaderboard(r, key=guide_key, max_entries=8)
    for op in random_mixed_ops(random.Random(seed), 150):
        expected = apply(guide, op)
        assert apply(ours, op) == expected, op
        assert ours.max_entries == guide.max_entries
    assert contents_as_guide(r, ours) == contents(r, guide_key)


def test_the_guide_walkthrough_matches(api: Api, board_key: str, r: Any) -> None:
    ours = api.leaderboard(key=f"{board_key}:ours", max_entries=100)
    guide = GuideLeaderboard(r, key=f"{board_key}:guide", max_entries=100)
    ada = {"name": "Ada", "description": "Solves production incidents before breakfast."}
    sample = [
        ("player-1", 980, "Avery"),
        ("player-2", 1310, "Mina"),
        ("player-3", 1175, "Noah"),
        ("player-4", 1435, "Priya"),
        ("player-5", 1080, "Jules"),
        ("player-6", 1240, "Rin"),
    ]
    ops: list[Op] = [
        ("upsert_user", ("player-1", 1200, ada)),
        ("increment_score", ("player-1", 25)),
    ]
    ops += [("upsert_user", (u, s, {"name": n, "description": ""})) for u, s, n in sample]
    ops += [
        ("get_top", (5,)),
        ("get_around_rank", (10, 5)),
        ("get_around_rank", (3, 3)),
        ("set_max_entries", (4,)),
        ("increment_score", ("player-5", 400, {"description": "comeback"})),
        ("list_all", ()),
        ("clear", ()),
        ("list_all", ()),
    ]
    for op in ops:
        assert apply(ours, op) == apply(guide, op), op
    assert contents_as_guide(r, ours) == contents(r, guide.key)


def populate(board: Any, rng: random.Random) -> None:
    for op in random_ops(rng, 120):
        if op[0] in ("upsert_user", "increment_score", "delete_user", "set_max_entries"):
            apply(board, op)


@pytest.mark.guide_layout("the guide's code and the board share one key: the guide's layout")
def test_the_package_reads_what_the_guide_wrote(api: Api, board_key: str, r: Any) -> None:
    guide = GuideLeaderboard(r, key=board_key, max_entries=8)
    populate(guide, random.Random(11))
    ours = api.leaderboard(key=board_key, max_entries=guide.max_entries)
    assert ours.get_size() >= 1
    assert read_everything(ours) == read_everything(guide)


@pytest.mark.guide_layout("the guide's code and the board share one key: the guide's layout")
def test_the_guide_reads_what_the_package_wrote(api: Api, board_key: str, r: Any) -> None:
    ours = api.leaderboard(key=board_key, max_entries=8)
    populate(ours, random.Random(12))
    guide = GuideLeaderboard(r, key=board_key, max_entries=ours.max_entries)
    assert guide.get_size() >= 1
    assert read_everything(guide) == read_everything(ours)


@sync_and_one_loop
@pytest.mark.guide_layout("the guide's code and the board share one key: the guide's layout")
def test_both_write_the_same_board_in_turn(api: Api, board_key: str, r: Any) -> None:
    """Either implementation may do any write on a shared board; reads agree throughout."""
    rng = random.Random(13)
    ours = api.leaderboard(key=board_key, max_entries=5)
    guide = GuideLeaderboard(r, key=board_key, max_entries=5)
    mirror_key = f"{board_key}:mirror"
    mirror = GuideLeaderboard(r, key=mirror_key, max_entries=5)
    for step, op in enumerate(random_ops(rng, 200)):
        writer, other = (ours, guide) if rng.random() < 0.5 else (guide, ours)
        expected = apply(mirror, op)
        assert apply(writer, op) == expected, f"step {step}: {op}"
        if op[0] == "set_max_entries":
            assert apply(other, op) == []
    assert read_everything(ours) == read_everything(guide)
    assert read_everything(ours) == read_everything(mirror)
    board_keys = {k: v for k, v in contents(r, board_key).items() if not k.startswith(":mirror")}
    assert board_keys == contents(r, mirror_key)


# --- the sync and asyncio classes on one board ---

READS: list[Op] = [
    ("get_size", ()),
    ("list_all", ()),
    ("get_top", ()),
    ("get_top", (1,)),
    ("get_top", (3,)),
    *[("get_around_rank", (rank, count)) for rank in (1, 2, 5, 9, 40) for count in (1, 4)],
    ("get_around_rank", (3,)),
    *[
        (m, (u,))
        for u in [*MIXED_USERS, 7]
        for m in ("get_rank", "get_user_entry", "get_user_metadata")
    ],
]


def calls_and_trips(client: aio.Client) -> tuple[int, int, int]:
    stats = client.stats()
    return stats["calls"], stats["round_trips"], stats["commands"]


@pytest.mark.asyncio
async def test_both_classes_read_the_same_data_alike(
    aclient: aio.Client, client: Client, board_key: str
) -> None:
    async_board = aio.RedisLeaderboard(aclient, key=board_key, max_entries=8, layout=TEST_LAYOUT)
    sync_board = RedisLeaderboard(client, key=board_key, max_entries=8, layout=TEST_LAYOUT)
    for i, (name, args) in enumerate(random_mixed_ops(random.Random(9), 120)):
        # the two classes take turns writing the same board
        if name not in ("clear", "delete_user", "set_max_entries"):
            if i % 2:
                await getattr(async_board, name)(*args)
            else:
                getattr(sync_board, name)(*args)
    assert sync_board.get_size() > 3
    expected = [getattr(sync_board, name)(*args) for name, args in READS]
    assert [await getattr(async_board, name)(*args) for name, args in READS] == expected
    # the same reads, all at once on the shared connection
    before = calls_and_trips(aclient)
    concurrent = await asyncio.gather(*(getattr(async_board, n)(*a) for n, a in READS))
    after = calls_and_trips(aclient)
    assert concurrent == expected
    assert after[0] - before[0] == len(READS)
    assert after[1] - before[1] < len(READS)  # pipelined
