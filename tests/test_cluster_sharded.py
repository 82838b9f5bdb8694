"""Sharded boards: a ShardedLeaderboard checked against one plain board fed the same seeded
writes (same top-k, same ranks, same entries, windows and pages, deep ones by bisection too),
for each tie rule and order, at 1, 3 and 16 shards; sync and asyncio."""

from __future__ import annotations

import inspect
import random
import uuid
from typing import Any, Callable

import pytest

from launchers import RedisCluster
from redis_leaderboard import ClusterClient, RedisLeaderboard, ShardedLeaderboard, sharded
from redis_leaderboard import asyncio as rl_asyncio
from redis_leaderboard._drive import one_trip, plan
from redis_leaderboard.boards import sharded as sharded_board


@pytest.fixture
def cluster_client(redis_cluster: RedisCluster):  # -> ClusterClient
    client = ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    yield client
    client.close()


def writes(seed: int, count: int) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    rng = random.Random(seed)
    # 7 and "7": one player (an int id is its str() on every board type).
    users: list[Any] = [f"p{i}" for i in range(60)] + ["zé", "{x}", "a", 7, "7"]
    out: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    for _ in range(count):
        user = rng.choice(users)
        kind = rng.random()
        score = rng.randint(0, 12)  # few distinct scores: many ties
        meta = {"m": rng.randint(0, 3)} if rng.random() < 0.3 else None
        if kind < 0.45:
            out.append(("upsert_user", (user, score, meta), {}))
        elif kind < 0.7:
            out.append(("increment_score", (user, rng.choice([1, 2, -1])), {}))
        elif kind < 0.93:
            out.append(("submit", (user, score), {"mode": rng.choice(["set", "best", "incr"])}))
        else:
            out.append(("delete_user", (user,), {}))
    return out


def same_write(a: Any, b: Any) -> None:
    if isinstance(a, bool):
        assert a == b
        return
    assert a["score"] == b["score"] and a["metadata"] == b["metadata"]
    assert a["user_id"] == b["user_id"]


def compare(plain: RedisLeaderboard, board: ShardedLeaderboard, rng: random.Random) -> None:
    size = plain.get_size()
    assert board.get_size() == size
    for k in (1, 5, size + 3):
        assert board.get_top(k) == plain.get_top(k)
    users: list[Any] = [e["user_id"] for e in plain.list_all()] + ["absent", 7]
    for user in users:
        assert board.get_rank(user) == plain.get_rank(user), user
        assert board.get_user_entry(user) == plain.get_user_entry(user), user
    for user in rng.sample(users, 6):
        count = rng.randint(1, 9)
        assert board.get_around_user(user, count) == plain.get_around_user(user, count), user
    for _ in range(4):
        rank, count = rng.randint(1, size + 2), rng.randint(1, 9)
        assert board.get_around_rank(rank, count) == plain.get_around_rank(rank, count)
        page, page_size = rng.randint(1, 6), rng.randint(1, 12)
        assert board.get_page(page, page_size) == plain.get_page(page, page_size)
    # The queries added in issue 18's follow-up.
    assert board.list_all() == plain.list_all()
    asked = [*rng.sample(users, min(len(users), 12)), "absent", users[0]]
    assert board.get_entries(asked) == plain.get_entries(asked)
    assert board.get_entries([]) == []
    for _ in range(6):
        low, high = sorted((rng.randint(-2, 14), rng.randint(-2, 14)))
        offset, limit = rng.randint(0, 5), rng.randint(1, 8)
        assert board.get_by_score(low, high, offset=offset, limit=limit) == plain.get_by_score(
            low, high, offset=offset, limit=limit
        ), (low, high, offset, limit)
        assert board.count_by_score(low, high) == plain.count_by_score(low, high)
        assert board.rank_for_score(low) == plain.rank_for_score(low)
    assert board.get_by_score(float("-inf"), float("inf"), limit=1000) == plain.get_by_score(
        float("-inf"), float("inf"), limit=1000
    )
    for user in rng.sample(users, 5):
        assert board.get_percentile(user) == plain.get_percentile(user), user
    for p in (0, 1, 10, 50, 73.5, 99, 100):
        assert board.score_at_percentile(p) == plain.score_at_percentile(p), p
    for bins in (1, 3, 7):
        assert board.get_histogram(bins) == plain.get_histogram(bins)
    assert board.get_histogram(4, min_score=2) == plain.get_histogram(4, min_score=2)
    assert board.get_histogram(5, max_score=6) == plain.get_histogram(5, max_score=6)
    assert board.get_histogram(3, min_score=-1, max_score=20) == plain.get_histogram(
        3, min_score=-1, max_score=20
    )


@pytest.mark.parametrize(
    ("shards", "options"),
    [(1, {}), (3, {}), (16, {}), (3, {"ties": "competition"}), (16, {"ties": "competition"}),
     (3, {"ties": "dense"}), (16, {"order": "asc"}), (3, {"order": "asc", "ties": "competition"})],
)  # fmt: skip
def test_sharded_matches_one_board(
    cluster_client: ClusterClient,
    shards: int,
    options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tag = uuid.uuid4().hex[:10]
    plain = RedisLeaderboard(cluster_client, key=f"{{plain{tag}}}", max_entries=10_000, **options)
    board = ShardedLeaderboard(cluster_client, key=f"sh{tag}", shards=shards, **options)
    rng = random.Random(shards * 100 + len(options))
    for step, (name, args, kwargs) in enumerate(writes(rng.randint(0, 10**6), 160)):
        same_write(getattr(board, name)(*args, **kwargs), getattr(plain, name)(*args, **kwargs))
        if step % 80 == 79:
            compare(plain, board, rng)
    # Deep windows: the bisection on scores, whatever the window's depth.
    monkeypatch.setattr(sharded_board, "SHALLOW", 3)
    compare(plain, board, rng)
    board.clear()
    assert board.get_size() == 0


def test_a_compact_sharded_board_matches_one_board_and_converts(
    cluster_client: ClusterClient, redis_cluster: RedisCluster
) -> None:
    # Every shard in the compact layout: the same answers as one plain board; a sharded board
    # of the guide's layout converts in place, shard by shard.
    tag = uuid.uuid4().hex[:10]
    plain = RedisLeaderboard(cluster_client, key=f"{{plain{tag}}}", max_entries=10_000)
    board = ShardedLeaderboard(cluster_client, key=f"shc{tag}", shards=3, layout="compact")
    assert board.layout == "compact" and "layout='compact'" in repr(board)
    guide = ShardedLeaderboard(cluster_client, key=f"shg{tag}", shards=3)
    rng = random.Random(5)
    for name, args, kwargs in writes(rng.randint(0, 10**6), 120):
        same_write(getattr(board, name)(*args, **kwargs), getattr(plain, name)(*args, **kwargs))
        getattr(guide, name)(*args, **kwargs)
    compare(plain, board, rng)
    converted = ShardedLeaderboard(cluster_client, key=f"shg{tag}", shards=3, layout="compact")
    assert converted.convert_layout(page=10) > 0
    compare(plain, converted, rng)
    with pytest.raises(ValueError, match="open it with layout='compact'"):
        guide.convert_layout()


def test_sharded_board_asyncio(
    redis_cluster: RedisCluster, cluster_client: ClusterClient, arun: Callable[..., Any]
) -> None:
    tag = uuid.uuid4().hex[:10]
    plain = RedisLeaderboard(cluster_client, key=f"{{plain{tag}}}", max_entries=10_000)
    calls = writes(7, 200)

    async def main() -> list[Any]:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            board = rl_asyncio.ShardedLeaderboard(c, key=f"sh{tag}", shards=5)
            for name, args, kwargs in calls:
                await getattr(board, name)(*args, **kwargs)
            users = [f"p{i}" for i in range(60)]
            return [
                await board.get_size(),
                await board.get_top(10),
                [await board.get_rank(u) for u in users],
                await board.get_user_entry("p3"),
                await board.get_around_user("p3", 5),
                await board.get_page(2, 7),
                await board.get_around_rank(9, 4),
                await board.list_all(),
                await board.get_entries([*users[:20], "absent"]),
                await board.get_by_score(2, 9, offset=3, limit=6),
                await board.count_by_score(2, 9),
                await board.rank_for_score(5),
                await board.get_percentile("p3"),
                await board.score_at_percentile(40),
                await board.get_histogram(4),
                await board.upsert_many([(f"n{i}", i) for i in range(40)], chunk_size=7),
                await board.get_top(50),
            ]

    got = arun(main())
    for name, args, kwargs in calls:
        getattr(plain, name)(*args, **kwargs)
    users = [f"p{i}" for i in range(60)]
    assert got == [
        plain.get_size(),
        plain.get_top(10),
        [plain.get_rank(u) for u in users],
        plain.get_user_entry("p3"),
        plain.get_around_user("p3", 5),
        plain.get_page(2, 7),
        plain.get_around_rank(9, 4),
        plain.list_all(),
        plain.get_entries([*users[:20], "absent"]),
        plain.get_by_score(2, 9, offset=3, limit=6),
        plain.count_by_score(2, 9),
        plain.rank_for_score(5),
        plain.get_percentile("p3"),
        plain.score_at_percentile(40),
        plain.get_histogram(4),
        plain.upsert_many([(f"n{i}", i) for i in range(40)], chunk_size=7),
        plain.get_top(50),
    ]


def test_sharded_board_arguments(cluster_client: ClusterClient) -> None:
    with pytest.raises(ValueError, match="first"):
        ShardedLeaderboard(cluster_client, key="lb", ties="first")
    for key in ("{lb}", "", "a}"):
        with pytest.raises(ValueError, match="key"):
            ShardedLeaderboard(cluster_client, key=key)
    with pytest.raises(ValueError, match="shards"):
        ShardedLeaderboard(cluster_client, key="lb", shards=0)
    with pytest.raises(TypeError, match="shards"):
        ShardedLeaderboard(cluster_client, key="lb", shards=2.0)  # type: ignore[arg-type]
    board = ShardedLeaderboard(cluster_client, key=f"args{uuid.uuid4().hex[:6]}", shards=4)
    for bad in (5.0, True, b"u", None):
        with pytest.raises(TypeError, match=r"^user_id must be str, not "):
            board.upsert_user(bad, 1)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^entry 1: user_id must be str, not "):
            board.upsert_many([("ok", 1), (bad, 1)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="count"):
        board.get_top(0)
    with pytest.raises(ValueError, match="page_size"):
        board.get_page(1, 1001)
    assert board.get_size() == 0  # nothing was written
    # Users are spread by crc32: stable, and each write touches one shard only.
    assert sharded.shard_of("alice", 16) == sharded.shard_of("alice", 16) == 663665735 % 16
    result = board.upsert_user("alice", 5)
    assert result["shard"] == sharded.shard_of("alice", 4) and result["shard_rank"] == 1
    assert board.shard_key("alice") == f"{{{board.key}:{result['shard']}}}"


@pytest.mark.parametrize(
    ("shards", "options"), [(1, {}), (4, {}), (16, {"ties": "dense"}), (5, {"order": "asc"})]
)
def test_sharded_upsert_many_matches_one_board(
    cluster_client: ClusterClient,
    shards: int,
    options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sharded_board, "BULK_BATCH", 70)  # several batches
    tag = uuid.uuid4().hex[:10]
    plain = RedisLeaderboard(cluster_client, key=f"{{plain{tag}}}", max_entries=10_000, **options)
    board = ShardedLeaderboard(cluster_client, key=f"bulk{tag}", shards=shards, **options)
    rng = random.Random(shards)
    entries: list[Any] = [
        (f"u{i}", rng.randint(0, 40), {"k": i} if i % 3 == 0 else None) for i in range(300)
    ]
    seen: list[int] = []
    summary = board.upsert_many(iter(entries), chunk_size=17, progress=seen.append)
    expected = plain.upsert_many(entries, chunk_size=17)
    assert summary == expected
    assert seen == sorted(seen) and seen[-1] == 300
    compare(plain, board, rng)
    # A bad entry names its position in the whole iterable; nothing of its batch's shard sent.
    bad = [(f"v{i}", i) for i in range(100)] + [("v100", float("nan"))]
    with pytest.raises(ValueError, match=r"^entry 100:"):
        board.upsert_many(bad)
    with pytest.raises(TypeError, match=r"^entry 2: user_id"):
        board.upsert_many([("a", 1), ("b", 2), (3.0, 3)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="chunk_size"):
        board.upsert_many([("a", 1)], chunk_size=0)


def test_sharded_max_entries(cluster_client: ClusterClient) -> None:
    board = ShardedLeaderboard(cluster_client, key=f"max{uuid.uuid4().hex[:8]}", shards=3)
    board.upsert_many([(f"u{i}", i) for i in range(30)])
    with pytest.raises(NotImplementedError, match="set_shard_max_entries"):
        board.set_max_entries(10)
    assert board.get_size() == 30  # nothing was trimmed
    with pytest.raises(ValueError):
        board.set_shard_max_entries(0)
    sizes_before = [
        plain.get_size()
        for plain in (RedisLeaderboard(cluster_client, key=b.key) for b in board._boards)
    ]
    trimmed = board.set_shard_max_entries(4)
    assert len(trimmed) == sum(max(0, n - 4) for n in sizes_before)
    assert board.get_size() == sum(min(n, 4) for n in sizes_before)
    assert board.max_entries == 4
    # Each shard kept its 4 best.
    kept = {e["user_id"] for e in board.list_all()}
    for user in trimmed:
        assert user not in kept


def test_a_write_trimmed_away_on_its_shard_returns_its_result(
    cluster_client: ClusterClient,
) -> None:
    # The guide's upsert_user answers a write its own trim removed without "rank"; a sharded
    # board answers it without "shard_rank" (and with its shard), not with a KeyError after the
    # write was applied.
    board = ShardedLeaderboard(
        cluster_client, key=f"trimmed-{uuid.uuid4().hex}", shards=1, max_entries=1
    )
    board.upsert_user("best", 100)
    written = board.upsert_user("low", 1)
    assert "shard_rank" not in written and written["shard"] == 0
    assert written["user_id"] == "low" and written["trimmed_user_ids"] == ["low"]
    assert board.get_rank("low") is None and board.get_size() == 1


def methods(cls: type) -> set[str]:
    """The public methods (the class attributes naming client and board classes aside)."""
    return {
        name
        for name in dir(cls)
        if not name.startswith("_")
        and callable(attribute := inspect.getattr_static(cls, name))
        and not isinstance(attribute, type)
    }


def test_the_twins_are_one_board_plain_and_coroutine() -> None:
    # Written once (boards/sharded.py): the same methods on both APIs, plain on one side and
    # coroutines on the other, with one docstring; the old import path is the asyncio class.
    assert sharded.AsyncShardedLeaderboard is rl_asyncio.ShardedLeaderboard
    names = methods(ShardedLeaderboard)
    assert names == methods(rl_asyncio.ShardedLeaderboard)
    talking = set()
    for name in names:
        ours = inspect.getattr_static(ShardedLeaderboard, name)
        theirs = inspect.getattr_static(rl_asyncio.ShardedLeaderboard, name)
        assert not isinstance(ours, (plan, one_trip)), name  # each got a driver
        assert ours.__doc__ and ours.__doc__ == theirs.__doc__, name
        if inspect.iscoroutinefunction(theirs):
            talking.add(name)
            assert not inspect.iscoroutinefunction(ours), name
    # Everything but the routing helper and the refused event stream talks to Redis.
    assert talking == names - {"shard_key", "events"}
    for name in ("delete_user", "get_user_metadata"):  # one trip: the awaiting copy, no wrapper
        assert getattr(rl_asyncio.ShardedLeaderboard, name).__code__.co_freevars == (), name
    for cls in (ShardedLeaderboard, rl_asyncio.ShardedLeaderboard):
        assert inspect.signature(cls.get_top).return_annotation == "list[Entry]"
        assert inspect.signature(cls.delete_user).return_annotation == "bool"


@pytest.mark.parametrize("api", ["sync", "asyncio"])
def test_a_bad_entry_stops_upsert_many_once_every_shard_is_done(
    redis_cluster: RedisCluster,
    cluster_client: ClusterClient,
    arun: Callable[..., Any],
    api: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The shards' groups of a batch load at once; one failing raises only once the others are
    # done (nothing is still being written when the caller sees the error), naming its position
    # in the whole iterable, on either API.
    monkeypatch.setattr(sharded_board, "BULK_BATCH", 400)
    key = f"stop{uuid.uuid4().hex[:8]}"
    shards = 4
    good = [(f"u{i}", i) for i in range(800)]
    bad_at = len(good)  # the first entry of the last batch
    late = [(f"w{i}", i) for i in range(300)]
    entries: list[Any] = [*good, ("w-bad", float("nan")), *late]
    bad_shard = sharded_board.shard_of("w-bad", shards)
    # Written: the first batches whole, then every shard's group of the last batch but the bad
    # entry's (its first chunk holds the bad entry: refused before it is sent). The other
    # groups take several round trips each (chunks of 7, 4 in flight), so they are still being
    # written when the bad one fails.
    expected = len(good) + sum(
        1 for user, _ in late if sharded_board.shard_of(user, shards) != bad_shard
    )
    seen: list[int] = []
    if api == "sync":
        board = ShardedLeaderboard(cluster_client, key=key, shards=shards)
        with pytest.raises(ValueError, match=rf"^entry {bad_at}:"):
            board.upsert_many(entries, chunk_size=7, progress=seen.append)
        size = board.get_size()
    else:

        async def main() -> int:
            async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
                board = rl_asyncio.ShardedLeaderboard(c, key=key, shards=shards)
                with pytest.raises(ValueError, match=rf"^entry {bad_at}:"):
                    await board.upsert_many(entries, chunk_size=7, progress=seen.append)
                size: int = await board.get_size()
                return size

        size = arun(main())
    assert size == expected
    assert seen == sorted(seen) and seen[-1] == expected
    ShardedLeaderboard(cluster_client, key=key, shards=shards).clear()


def test_hidden_players_leave_every_merged_read(cluster_client: ClusterClient) -> None:
    # Fair play: hide and unhide go to the player's shard; hidden() asks every shard.
    board = ShardedLeaderboard(cluster_client, f"hide:{uuid.uuid4().hex}", shards=4)
    for i in range(20):
        board.upsert_user(f"u{i}", i)
    assert board.hide("u19") and board.hide("u3") and not board.hide("u3")
    assert board.hidden() == ["u19", "u3"]
    assert board.get_top(1)[0]["user_id"] == "u18"
    assert board.get_size() == 18 and board.get_rank("u19") is None
    assert board.rank_for_score(18) == 1 and board.count_by_score(0, 100) == 18
    assert board.upsert_user("u19", 100)["score"] == 100.0 and board.get_rank("u19") is None
    assert board.unhide("u19") and board.get_rank("u19") == 1 and board.hidden() == ["u3"]
    assert board.is_hidden("u3") and not board.is_hidden("u19") and not board.is_hidden("u99")
    board.clear()
    assert board.hidden() == []
