"""Tie-break columns on sharded boards: a ShardedLeaderboard with ``tiebreak=...`` checked against
one plain board with the same columns fed the same seeded writes (ties on purpose: few scores,
few column values, writes without values, ``mode="best"``, hides), for several column sets, both
directions and both orders, at 1, 3 and 16 shards, shallow and deep windows; sync and asyncio, on
the session's cluster. Bad options and values raise before anything is sent, as a plain board's.
"""

from __future__ import annotations

import random
import uuid
from typing import Any, Callable, Optional

import pytest

from launchers import RedisCluster
from redis_leaderboard import ClusterClient, OptionsMismatch, RedisLeaderboard, ShardedLeaderboard
from redis_leaderboard import asyncio as rl_asyncio
from redis_leaderboard.boards import sharded as sharded_board
from test_cluster_sharded import compare, same_write

Columns = tuple[tuple[str, str], ...]
KILLS_TIME: Columns = (("kills", "desc"), ("time", "asc"))


@pytest.fixture
def cluster_client(redis_cluster: RedisCluster):  # -> ClusterClient
    client = ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    yield client
    client.close()


def values(rng: random.Random, columns: Columns) -> Optional[dict[str, float]]:
    """A write's column values: None (keep the stored ones) a fifth of the time; else few
    distinct values each (ties in the columns too), with -0.0, negatives and fractions."""
    if rng.random() < 0.2:
        return None
    choices = [0, -0.0, 1, 2, -3, 2.5, 1e300]
    return {name: rng.choice(choices) for name, _ in columns}


def writes(seed: int, count: int, columns: Columns) -> list[tuple[str, tuple[Any, ...], dict]]:
    rng = random.Random(seed)
    users: list[Any] = [f"p{i}" for i in range(40)] + ["zé", "{x}", "a", 7]
    out: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    for _ in range(count):
        user = rng.choice(users)
        kind = rng.random()
        score = rng.randint(0, 5)  # few distinct scores: the columns decide most places
        if kind < 0.55:
            mode = rng.choice(["set", "best", "best", "incr"])
            amount = rng.choice([0, 1]) if mode == "incr" else score
            kwargs = {"mode": mode, "tiebreak": values(rng, columns)}
            out.append(("submit", (user, amount), kwargs))
        elif kind < 0.75:
            meta = {"m": rng.randint(0, 3)} if rng.random() < 0.3 else None
            out.append(("upsert_user", (user, score, meta), {}))  # no values: the stored ones
        elif kind < 0.85:
            out.append(("increment_score", (user, rng.choice([1, -1])), {}))
        elif kind < 0.92:
            out.append(("hide" if rng.random() < 0.5 else "unhide", (user,), {}))
        else:
            out.append(("delete_user", (user,), {}))
    return out


def same(a: Any, b: Any) -> None:
    if isinstance(a, bool):
        assert a == b
    else:
        same_write(a, b)


SETS: list[Columns] = [
    KILLS_TIME,
    (("t", "asc"),),
    (("a", "desc"), ("b", "desc"), ("c", "asc"), ("d", "asc")),
]


@pytest.mark.parametrize(
    ("shards", "columns", "order"),
    [(1, KILLS_TIME, "desc"), (3, SETS[0], "desc"), (3, SETS[1], "asc"), (16, SETS[2], "desc"),
     (16, SETS[0], "asc"), (5, SETS[2], "asc"), (4, SETS[1], "desc")],
)  # fmt: skip
def test_sharded_columns_match_one_board(
    cluster_client: ClusterClient,
    shards: int,
    columns: Columns,
    order: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tag = uuid.uuid4().hex[:10]
    options: dict[str, Any] = {"order": order, "tiebreak": columns}
    plain = RedisLeaderboard(cluster_client, key=f"{{plain{tag}}}", max_entries=10_000, **options)
    board = ShardedLeaderboard(cluster_client, key=f"tb{tag}", shards=shards, **options)
    assert board.tiebreak == plain.tiebreak == columns
    rng = random.Random(f"{shards}{columns}{order}")
    for step, (name, args, kwargs) in enumerate(writes(rng.randint(0, 10**6), 220, columns)):
        same(getattr(board, name)(*args, **kwargs), getattr(plain, name)(*args, **kwargs))
        if step % 110 == 109:
            compare(plain, board, rng)
    everyone = plain.list_all()
    assert any(e["tiebreak"][columns[0][0]] is None for e in everyone)  # never given values
    tied_scores = [e["score"] for e in everyone]
    assert len(set(tied_scores)) < len(tied_scores) / 3  # the columns decided most places
    for entry in everyone:  # every position, by the user's rank and percentile
        user = entry["user_id"]
        assert board.get_user_entry(user) == entry, user
        assert board.get_percentile(user) == plain.get_percentile(user), user
    # Deep windows: the bisection on scores, then each shard's first entries in its order.
    monkeypatch.setattr(sharded_board, "SHALLOW", 3)
    compare(plain, board, rng)
    size = plain.get_size()
    for rank in range(1, size + 1, 3):
        assert board.get_around_rank(rank, 4) == plain.get_around_rank(rank, 4), rank
    board.clear()
    assert board.get_size() == 0


def test_sharded_columns_upsert_many_keeps_the_columns(cluster_client: ClusterClient) -> None:
    # A bulk load writes no values: an entry keeps its stored columns (new ones the worst).
    tag = uuid.uuid4().hex[:10]
    plain = RedisLeaderboard(cluster_client, key=f"{{plain{tag}}}", tiebreak=KILLS_TIME)
    board = ShardedLeaderboard(cluster_client, key=f"tbb{tag}", shards=4, tiebreak=KILLS_TIME)
    rng = random.Random(3)
    for b in (plain, board):
        for i in range(0, 60, 2):
            b.submit(f"u{i}", 1, tiebreak={"kills": i % 5, "time": i % 3})
    entries = [(f"u{i}", rng.randint(0, 3)) for i in range(60)]
    assert board.upsert_many(entries, chunk_size=9) == plain.upsert_many(entries, chunk_size=9)
    compare(plain, board, rng)


def test_sharded_board_with_columns_asyncio(
    redis_cluster: RedisCluster, cluster_client: ClusterClient, arun: Callable[..., Any]
) -> None:
    tag = uuid.uuid4().hex[:10]
    columns = (("kills", "desc"), ("time", "asc"), ("x", "desc"))
    plain = RedisLeaderboard(cluster_client, key=f"{{plain{tag}}}", tiebreak=columns)
    calls = writes(11, 250, columns)
    users = [f"p{i}" for i in range(40)]

    async def main() -> list[Any]:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            board = rl_asyncio.ShardedLeaderboard(c, key=f"tba{tag}", shards=5, tiebreak=columns)
            for name, args, kwargs in calls:
                await getattr(board, name)(*args, **kwargs)
            return [
                await board.get_size(),
                await board.get_top(12),
                [await board.get_rank(u) for u in users],
                [await board.get_percentile(u) for u in users],
                await board.get_user_entry("p3"),
                await board.get_around_user("p3", 5),
                await board.get_page(2, 7),
                await board.get_around_rank(9, 4),
                await board.list_all(),
                await board.get_entries([*users, "absent"]),
                await board.get_by_score(1, 4, offset=3, limit=6),
                await board.rank_for_score(2),
                await board.score_at_percentile(40),
            ]

    got = arun(main())
    for name, args, kwargs in calls:
        getattr(plain, name)(*args, **kwargs)
    assert got == [
        plain.get_size(),
        plain.get_top(12),
        [plain.get_rank(u) for u in users],
        [plain.get_percentile(u) for u in users],
        plain.get_user_entry("p3"),
        plain.get_around_user("p3", 5),
        plain.get_page(2, 7),
        plain.get_around_rank(9, 4),
        plain.list_all(),
        plain.get_entries([*users, "absent"]),
        plain.get_by_score(1, 4, offset=3, limit=6),
        plain.rank_for_score(2),
        plain.score_at_percentile(40),
    ]


def test_equal_scores_on_different_shards_rank_by_the_columns(
    cluster_client: ClusterClient,
) -> None:
    board = ShardedLeaderboard(cluster_client, f"tbx{uuid.uuid4().hex[:8]}", 8, tiebreak=KILLS_TIME)
    assert "tiebreak=(('kills', 'desc'), ('time', 'asc'))" in repr(board)
    players = {"ann": (12, 93.5), "bob": (12, 90), "cid": (15, 120), "dan": (12, 90)}
    assert len({board.shard_key(u) for u in players}) > 2  # spread over shards
    for user, (kills, time) in players.items():
        board.submit(user, 100, tiebreak={"kills": kills, "time": time})
    board.submit("eve", 100)  # no values: the worst columns
    top = board.get_top(10)
    # bob and dan tie on every column: the user id in Redis's order (reversed on desc).
    assert [e["user_id"] for e in top] == ["cid", "dan", "bob", "ann", "eve"]
    assert top[1] == {"rank": 2, "user_id": "dan", "score": 100.0, "metadata": {},
                      "tiebreak": {"kills": 12.0, "time": 90.0}}  # fmt: skip
    assert top[4]["tiebreak"] == {"kills": None, "time": None}
    assert [board.get_rank(u) for u in ("cid", "dan", "bob", "ann", "eve")] == [1, 2, 3, 4, 5]
    assert board.get_percentile("bob") == 50.0 and board.get_percentile("cid") == 100.0
    written = board.submit("eve", 100, tiebreak={"kills": 99, "time": 0}, mode="best")
    assert written["changed"] is True and board.get_rank("eve") == 1
    board.clear()


def test_bad_columns_and_values_raise_before_anything_is_sent(
    cluster_client: ClusterClient,
) -> None:
    key = f"tbbad{uuid.uuid4().hex[:8]}"
    for bad, error in [
        ((("a", "desc"),) * 2, ValueError),
        (tuple((f"c{i}", "desc") for i in range(5)), ValueError),
        ((("1st", "desc"),), ValueError),
        ((("a", "up"),), ValueError),
        (("a", "desc"), TypeError),
        ((("a",),), TypeError),
    ]:
        with pytest.raises(error):
            ShardedLeaderboard(cluster_client, key, 4, tiebreak=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ties must be 'lexicographic'"):
        ShardedLeaderboard(cluster_client, key, 4, ties="competition", tiebreak=KILLS_TIME)
    board = ShardedLeaderboard(cluster_client, key, 4, tiebreak=KILLS_TIME)
    for given in [
        {"kills": 1},
        {"kills": 1, "time": 2, "x": 3},
        {"kills": 1, "time": float("nan")},
        {"kills": 1, "time": float("inf")},
        [1, 2],
    ]:
        with pytest.raises((ValueError, TypeError)):
            board.submit("u", 1, tiebreak=given)  # type: ignore[arg-type]
    without = ShardedLeaderboard(cluster_client, f"{key}:plain", 4)
    assert without.tiebreak is None
    with pytest.raises(ValueError, match="without tie-break columns"):
        without.submit("u", 1, tiebreak={"kills": 1})
    for b in (board, without):  # nothing was written, no options recorded
        for shard in b._boards:
            assert cluster_client.execute_command("EXISTS", shard.key) == 0
            assert cluster_client.execute_command("EXISTS", f"{shard.key}:options") == 0


def test_sharded_columns_are_recorded_with_each_shard(cluster_client: ClusterClient) -> None:
    key = f"tbrec{uuid.uuid4().hex[:8]}"
    ShardedLeaderboard(cluster_client, key, 2, tiebreak=KILLS_TIME).submit(
        "u", 1, tiebreak={"kills": 1, "time": 2}
    )
    for other in [{}, {"tiebreak": (("kills", "desc"), ("time", "desc"))}]:
        with pytest.raises(OptionsMismatch, match=r"tiebreak=\(\('kills', 'desc'\)"):
            ShardedLeaderboard(cluster_client, key, 2, **other).upsert_user("u", 5)
    # Each shard is a plain board with the columns: one opened alone reads the same entry.
    shard = ShardedLeaderboard(cluster_client, key, 2).shard_key("u")
    alone = RedisLeaderboard(cluster_client, key=shard, tiebreak=KILLS_TIME)
    assert alone.get_user_entry("u")["tiebreak"] == {"kills": 1.0, "time": 2.0}
    ShardedLeaderboard(cluster_client, key, 2, tiebreak=KILLS_TIME).clear()


class Counting:
    """The cluster client, counting the round trips (non-empty batches) and requests a
    sharded board's reads send."""

    def __init__(self, client: ClusterClient) -> None:
        self.client, self.trips, self.requests = client, 0, 0

    def run(self, operation: Any) -> Any:
        self.trips, self.requests = self.trips + 1, self.requests + 1
        return self.client.run(operation)

    def run_many(self, operations: list[Any]) -> Any:
        self.trips += 1 if operations else 0
        self.requests += len(operations)
        return self.client.run_many(operations)


@pytest.mark.parametrize("tied", [False, True])
def test_columns_cost_the_round_trips_of_a_board_without(
    cluster_client: ClusterClient, tied: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every merged read sends what it sends without columns (the shards' entries carry the
    # values the merge orders by); get_percentile takes the position as get_rank does.
    tag = uuid.uuid4().hex[:8]
    boards = [
        ShardedLeaderboard(cluster_client, f"cost{tag}", 8),
        ShardedLeaderboard(cluster_client, f"costtb{tag}", 8, tiebreak=KILLS_TIME),
    ]
    for i in range(60):
        score = i % 7 if tied else i
        boards[0].submit(f"u{i}", score)
        boards[1].submit(f"u{i}", score, tiebreak={"kills": i % 3, "time": i % 4})
    reads: list[tuple[str, Callable[[ShardedLeaderboard], Any]]] = [
        ("get_top", lambda b: b.get_top(10)),
        ("get_rank", lambda b: b.get_rank("u17")),
        ("get_user_entry", lambda b: b.get_user_entry("u17")),
        ("get_around_user", lambda b: b.get_around_user("u17", 5)),
        ("get_around_rank", lambda b: b.get_around_rank(30, 5)),
        ("get_page", lambda b: b.get_page(3, 10)),
        ("get_entries", lambda b: b.get_entries([f"u{i}" for i in range(0, 60, 7)])),
        ("get_by_score", lambda b: b.get_by_score(2, 5, offset=2, limit=5)),
        ("list_all", lambda b: b.list_all()),
        ("rank_for_score", lambda b: b.rank_for_score(3)),
        ("score_at_percentile", lambda b: b.score_at_percentile(40)),
    ]
    for deep in (False, True):
        if deep:
            monkeypatch.setattr(sharded_board, "SHALLOW", 3)
        for name, read in reads:
            costs = []
            for board in boards:
                counting = Counting(cluster_client)
                board.redis = counting
                read(board)
                costs.append((counting.trips, counting.requests))
            assert costs[0] == costs[1], (name, deep)
    counted = []
    for board in boards:
        counting = Counting(cluster_client)
        board.redis = counting
        board.get_percentile("u17")
        counted.append((counting.trips, counting.requests))
    # Without columns: the entry, then a ZCOUNT and a ZCARD per shard. With: the entry, then a
    # ZCOUNT pair and a ZCARD per shard, then (tied scores) the tied entries of each shard
    # holding some.
    assert counted[0] == (2, 1 + 2 * 8)
    if tied:
        assert counted[1][0] == 3 and 1 + 3 * 8 < counted[1][1] <= 1 + 3 * 8 + 8
    else:
        assert counted[1] == (2, 1 + 3 * 8)
    for board in boards:
        board.redis = cluster_client
        board.clear()
