"""Redis Cluster: slots, URLs, routing, redirects, replicas and every method of a board on a
real local cluster (3 primaries, 3 replicas), checked against the same calls on a single node.

The fault tests (failover, resharding under load) are in test_cluster_faults.py; sharded boards
in test_cluster_sharded.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import threading
import time
import uuid
from typing import Any, Callable, Iterator

import pytest

import redis_leaderboard
from helpers import pipelined_read_write_read
from launchers import RedisCluster
from redis_leaderboard import ClusterClient, RedisLeaderboard, TeamLeaderboard, _core
from redis_leaderboard import asyncio as rl_asyncio
from redis_leaderboard.cluster import cluster_url_options


@pytest.fixture
def cluster_client(redis_cluster: RedisCluster):  # -> ClusterClient
    client = ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    yield client
    client.close()


# ---- Slots and hash tags ---------------------------------------------------------------------


def test_key_slot_matches_the_server(redis_cluster: RedisCluster) -> None:
    rng = random.Random(18)
    alphabet = "ab{}:x\u00e9"
    keys = ["", "foo", "{user1000}.following", "{}x", "{}{a}", "a{b}c{d}", "{", "}{a}", "x{"]
    keys += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(300)]
    node = redis_cluster.nodes[0]
    for key in keys:
        assert _core.key_slot(key) == redis_cluster.node_command(node, "CLUSTER", "KEYSLOT", key)


@pytest.mark.parametrize(
    ("key", "tagged"),
    [("{lb}:weekly", True), ("weekly:{lb}", True), ("lb", False), ("{}lb", False),
     ("{}{lb}", False), ("{lb", False), ("l}b{", False), ("{{}}", True)],
)  # fmt: skip
def test_has_hash_tag(key: str, tagged: bool) -> None:
    assert _core.has_hash_tag(key) is tagged
    if tagged:  # every key a board builds from it is in its slot
        for suffix in (":user:alice", ":user:{x}", ":options", ":first:keys"):
            assert _core.key_slot(key + suffix) == _core.key_slot(key)


# ---- URLs and options ------------------------------------------------------------------------


def test_cluster_url_options() -> None:
    options = cluster_url_options(
        "rediss://u:p%40ss@h1:7000,h2,[::1]:7002?cluster=true&read_from_replicas=yes"
        "&socket_timeout=2.5"
    )
    assert {k: v for k, v in options.items() if not k.startswith("ssl_")} == {
        "username": "u",
        "password": "p@ss",
        "socket_timeout": 2.5,
        "ssl": True,
        "startup_nodes": [("h1", 7000), ("h2", 6379), ("::1", 7002)],
        "read_from_replicas": True,
        "min_replicas": 0,
        "replica_timeout": 2.0,
        "wait_aof": False,
    }
    assert cluster_url_options("redis://h:1?cluster=true", password="x")["password"] == "x"
    for bad in (
        "redis://h:1?cluster=false",
        "redis://h:1/3?cluster=true",
        "unix:///tmp/s?cluster=true",
        "redis://h:1?cluster=true&nope=1",
        "redis://,h:1?cluster=true",
    ):
        with pytest.raises(ValueError):
            cluster_url_options(bad)


def test_from_url_and_ping(redis_cluster: RedisCluster) -> None:
    with ClusterClient.from_url(redis_cluster.url) as client:
        assert client.ping() is True
        shards = client.shards()
        assert len(shards) == 3
        slots = sorted(r for shard in shards for r in shard["slots"])
        assert slots[0][0] == 0 and slots[-1][1] == 16383
        assert sum(last - first + 1 for first, last in slots) == 16384


def test_bad_options_raise_before_connecting() -> None:
    with pytest.raises(ValueError, match="startup_nodes"):
        ClusterClient([])
    with pytest.raises(ValueError, match="port"):
        ClusterClient([("localhost", 0)])
    with pytest.raises(ValueError, match="timeouts"):
        ClusterClient([("localhost", 1)], socket_timeout=-1)


def test_unreachable_cluster_raises_connection_error() -> None:
    from redis_leaderboard._redis_server import free_port

    client = ClusterClient([("127.0.0.1", free_port())], socket_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(redis_leaderboard.TimeoutError, match=r"Connection refused|connecting"):
        client.ping()
    assert time.monotonic() - started < 2


def test_unreachable_cluster_raises_within_the_timeout_asyncio() -> None:
    # No map can be read: the call waits its pauses on the loop's timer, the map read again
    # after each, and fails by its deadline (it waited for ever: the pauses had no timer while
    # no map existed).
    from redis_leaderboard._redis_server import free_port

    async def main() -> float:
        client = rl_asyncio.ClusterClient([("127.0.0.1", free_port())], socket_timeout=0.5)
        started = time.monotonic()
        try:
            with pytest.raises(redis_leaderboard.TimeoutError, match=r"Connection refused"):
                await asyncio.wait_for(client.ping(), 5)
            return time.monotonic() - started
        finally:
            await client.aclose()

    assert asyncio.run(main()) < 1.0


# ---- Boards: the hash tag rule ---------------------------------------------------------------


def test_board_key_without_hash_tag_is_refused(
    cluster_client: ClusterClient, redis_cluster: RedisCluster
) -> None:
    for key in ("weekly", "{}weekly", "lb{weekly"):
        with pytest.raises(ValueError, match=r"hash tag.*key='\{") as info:
            RedisLeaderboard(cluster_client, key=key)
        assert repr(key) in str(info.value)
        with pytest.raises(ValueError, match="hash tag"):
            rl_asyncio.RedisLeaderboard(
                rl_asyncio.ClusterClient(redis_cluster.startup_nodes), key=key
            )
    for node in redis_cluster.nodes:  # nothing was written anywhere
        assert redis_cluster.node_command(node, "KEYS", "*weekly*") == []


def test_board_refuses_the_other_kind_of_cluster_client(
    cluster_client: ClusterClient, redis_cluster: RedisCluster
) -> None:
    with pytest.raises(TypeError, match="ClusterClient"):
        rl_asyncio.RedisLeaderboard(cluster_client, key="{lb}")
    with pytest.raises(TypeError):
        RedisLeaderboard(rl_asyncio.ClusterClient(redis_cluster.startup_nodes), key="{lb}")
    with pytest.raises(TypeError, match="either"):
        RedisLeaderboard(cluster_client, key="{lb}", url="redis://localhost")


# ---- Every method, against the same calls on a single node -----------------------------------

# (name, arguments) of a seeded sequence covering every method of the guide, submit and the
# queries; both boards get the same calls, and every result must be the same.
Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def random_calls(seed: int, count: int = 160) -> list[Call]:
    rng = random.Random(seed)
    users = [f"user{i}" for i in range(14)] + ["{odd}", "ü"]
    calls: list[Call] = []
    for _ in range(count):
        user = rng.choice(users)
        kind = rng.randrange(20)
        meta = {"level": rng.randint(1, 9)} if rng.random() < 0.5 else None
        if kind < 4:
            calls.append(("upsert_user", (user, rng.randint(-5, 30), meta), {}))
        elif kind < 6:
            calls.append(("increment_score", (user, rng.choice([1, 2.5, -3])), {}))
        elif kind < 8:
            mode = rng.choice(["set", "best", "incr"])
            calls.append(("submit", (user, rng.randint(0, 30), meta), {"mode": mode}))
        elif kind == 8:
            calls.append(("get_top", (rng.randint(1, 12),), {}))
        elif kind == 9:
            calls.append(("get_around_rank", (rng.randint(1, 12), rng.randint(1, 6)), {}))
        elif kind == 10:
            calls.append(("get_rank", (user,), {}))
        elif kind == 11:
            calls.append(("get_user_metadata", (user,), {}))
        elif kind == 12:
            calls.append(("get_user_entry", (user,), {}))
        elif kind == 13:
            calls.append(("list_all", (), {}))
        elif kind == 14:
            calls.append(("get_size", (), {}))
        elif kind == 15:
            calls.append(("delete_user", (user,), {}))
        elif kind == 16:
            calls.append(("get_around_user", (user, rng.randint(1, 6)), {}))
        elif kind == 17:
            calls.append(("get_page", (rng.randint(1, 4), rng.randint(1, 5)), {}))
        elif kind == 18:
            calls.append(("set_max_entries", (rng.randint(6, 14),), {}))
        else:
            calls.append(("get_entries", (rng.sample(users, 4),), {}))
    calls.append(("upsert_many", ([(u, i) for i, u in enumerate(users)],), {}))
    calls += [
        ("list_all", (), {}),
        ("rank_for_score", (7,), {}),
        ("get_percentile", ("user1",), {}),
    ]
    calls += [("get_histogram", (3,), {}), ("count_by_score", (0, 10), {}), ("clear", (), {})]
    calls.append(("get_size", (), {}))
    return calls


def outcome(board: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return ("ok", getattr(board, name)(*args, **kwargs))
    except Exception as exc:  # the same error on both
        return ("error", type(exc).__name__)


@pytest.mark.parametrize(
    "options", [{}, {"ties": "competition"}, {"order": "asc", "ties": "dense"}, {"ties": "first"}]
)
def test_every_method_matches_a_single_node(
    cluster_client: ClusterClient,
    client: redis_leaderboard.Client,
    board_key: str,
    cluster_key: str,
    options: dict[str, Any],
) -> None:
    single = RedisLeaderboard(client, key=board_key, max_entries=12, **options)
    on_cluster = RedisLeaderboard(cluster_client, key=cluster_key, max_entries=12, **options)
    for name, args, kwargs in random_calls(len(options) * 7 + 1):
        expected = outcome(single, name, args, kwargs)
        got = outcome(on_cluster, name, args, kwargs)
        assert got == expected, (name, args, kwargs)


@pytest.mark.parametrize("options", [{}, {"ties": "competition"}])
def test_every_method_matches_a_single_node_asyncio(
    redis_cluster: RedisCluster,
    client: redis_leaderboard.Client,
    board_key: str,
    cluster_key: str,
    options: dict[str, Any],
    arun: Callable[..., Any],
) -> None:
    single = RedisLeaderboard(client, key=board_key, max_entries=12, **options)
    calls = random_calls(100 + len(options))

    async def main() -> list[Any]:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            board = rl_asyncio.RedisLeaderboard(c, key=cluster_key, max_entries=12, **options)
            results = []
            for name, args, kwargs in calls:
                try:
                    results.append(("ok", await getattr(board, name)(*args, **kwargs)))
                except Exception as exc:
                    results.append(("error", type(exc).__name__))
            return results

    got = arun(main())
    for (name, args, kwargs), result in zip(calls, got):
        assert result == outcome(single, name, args, kwargs), name


def test_asyncio_many_tasks_on_many_slots(
    redis_cluster: RedisCluster, arun: Callable[..., Any]
) -> None:
    # Twelve keys on twelve different slots: drawn until their slots differ (twelve random
    # keys share a slot about once in 250 runs).
    by_slot: dict[int, str] = {}
    while len(by_slot) < 12:
        key = f"{{many{uuid.uuid4().hex[:8]}}}"
        by_slot.setdefault(_core.key_slot(key), key)
    keys = list(by_slot.values())

    async def main() -> None:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            boards = [rl_asyncio.RedisLeaderboard(c, key=k, max_entries=1000) for k in keys]
            await asyncio.gather(
                *(b.increment_score(f"u{i % 7}", 1) for b in boards for i in range(70))
            )
            sizes = await asyncio.gather(*(b.get_size() for b in boards))
            assert sizes == [7] * len(keys)
            tops = await asyncio.gather(*(b.get_top(1) for b in boards))
            assert all(top[0]["score"] == 10 for top in tops)
            stats = c.stats()
            assert stats["calls"] == len(keys) * 72
            # Requests made together share round trips: far fewer writes than calls.
            assert stats["round_trips"] < stats["calls"]

    arun(main())


def test_execute_command_is_routed_by_key(
    cluster_client: ClusterClient, redis_cluster: RedisCluster
) -> None:
    for i in range(20):
        assert cluster_client.execute_command("SET", f"plain{i}", str(i)) == "OK"
    for i in range(20):
        node = redis_cluster.owner(_core.key_slot(f"plain{i}"))
        assert redis_cluster.node_command(node, "GET", f"plain{i}") == str(i)
        assert cluster_client.execute_command("GET", f"plain{i}") == str(i).encode()


def test_raw_scripts_are_routed_by_their_keys(
    cluster_client: ClusterClient, redis_cluster: RedisCluster
) -> None:
    script = "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[2])"
    for i in range(20):
        keys = (f"{{raw{i}}}:a", f"{{raw{i}}}:b")
        redis_cluster.node_command(redis_cluster.owner(_core.key_slot(keys[0])), "SET", keys[1], i)
        for command in ("EVAL", "eval"):
            assert cluster_client.execute_command(command, script, 2, *keys, i) == str(i).encode()
    with pytest.raises(ValueError, match="different cluster slots"):
        cluster_client.execute_command("EVAL", script, 2, "{x}a", "{y}b", 1)


# ---- Redirects -------------------------------------------------------------------------------


def other_primary(cluster: RedisCluster, slot: int):  # -> RedisClusterNode
    owner = cluster.owner(slot)
    return next(node for node in cluster.primaries_running() if node is not owner)


def test_moved_is_followed_and_the_map_updated(
    cluster_client: ClusterClient, redis_cluster: RedisCluster, cluster_key: str
) -> None:
    board = RedisLeaderboard(cluster_client, key=cluster_key, max_entries=100)
    for i in range(30):
        board.upsert_user(f"u{i}", i, {"i": i})
    slot = _core.key_slot(cluster_key)
    before = cluster_client.node_for_key(cluster_key)
    target = other_primary(redis_cluster, slot)
    assert redis_cluster.migrate_slot(slot, target) == 31  # the board and 30 hashes
    redirects = cluster_client.stats()["redirects"]
    # The client's map still names the old owner: MOVED, followed.
    assert board.get_user_entry("u29") == {
        "rank": 1, "user_id": "u29", "score": 29.0, "metadata": {"i": "29"}
    }  # fmt: skip
    assert cluster_client.stats()["redirects"] == redirects + 1
    assert cluster_client.node_for_key(cluster_key) == (target.host, target.port) != before
    assert board.increment_score("u0", 5)["score"] == 5  # no redirect now
    assert cluster_client.stats()["redirects"] == redirects + 1


def mark_migrating(cluster: RedisCluster, slot: int) -> tuple[Any, Any, str]:
    """Marks ``slot`` migrating from its owner to another primary (importing there), no key
    moved; returns (source, target, the target's node id)."""
    source, target = cluster.owner(slot), other_primary(cluster, slot)
    source_id = cluster.node_command(source, "CLUSTER", "MYID")
    target_id = cluster.node_command(target, "CLUSTER", "MYID")
    cluster.node_command(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
    cluster.node_command(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
    return source, target, target_id


def migrate_half(
    cluster: RedisCluster, key: str, moved_first: bytes, after: float
) -> threading.Thread:
    """Starts moving ``key``'s slot to another primary: the keys containing ``moved_first`` at
    once, the rest and the slot's new owner ``after`` seconds later, on the thread returned
    (join it)."""
    slot = _core.key_slot(key)
    source, target, target_id = mark_migrating(cluster, slot)
    keys = cluster.node_command(source, "CLUSTER", "GETKEYSINSLOT", slot, 1000)
    half = [k for k in keys if moved_first in k]
    cluster.node_command(source, "MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *half)

    def finish() -> None:
        time.sleep(after)
        rest = cluster.node_command(source, "CLUSTER", "GETKEYSINSLOT", slot, 1000)
        cluster.node_command(
            source, "MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *rest
        )
        for node in cluster.primaries_running():
            cluster.node_command(node, "CLUSTER", "SETSLOT", slot, "NODE", target_id)

    finisher = threading.Thread(target=finish)
    finisher.start()
    return finisher


def test_ask_and_tryagain_during_a_migration(
    cluster_client: ClusterClient, redis_cluster: RedisCluster, cluster_key: str
) -> None:
    board = RedisLeaderboard(cluster_client, key=cluster_key, max_entries=100)
    for i in range(20):
        board.upsert_user(f"u{i}", i, {"i": i})
    # Half the metadata hashes have moved: a read touching them is retried; one that does not
    # runs on the source; a write for a new user (its hash on neither) gets ASK, then TRYAGAIN
    # from the target, until the migration ends.
    target = other_primary(redis_cluster, _core.key_slot(cluster_key))  # migrate_half's
    finisher = migrate_half(redis_cluster, cluster_key, b":user:u1", 0.4)
    try:
        started = time.monotonic()
        assert board.get_rank("u5") == 15  # ZREVRANK on the source: no redirect
        top = board.get_top(20)  # retried until every hash is on one node
        assert [e["user_id"] for e in top] == [f"u{i}" for i in range(19, -1, -1)]
        assert all(e["metadata"] == {"i": e["user_id"][1:]} for e in top)
        written = board.upsert_user("newcomer", 100, {"new": 1})
        assert written["rank"] == 1
        assert time.monotonic() - started >= 0.3  # it waited for the migration
    finally:
        finisher.join()
    assert cluster_client.stats()["retries"] > 0
    assert board.get_size() == 21
    assert redis_cluster.node_command(target, "ZCARD", cluster_key) == 21


def test_a_big_read_takes_two_steps_on_a_cluster_and_one_script_when_its_slot_moves(
    cluster_client: ClusterClient, redis_cluster: RedisCluster, cluster_key: str
) -> None:
    # As on one Redis, get_top(110) is the guide's ZRANGE, then the HGETALLs pipelined on the
    # same node. A redirect of the HGETALLs (half the hashes moved, ASK) starts the read over
    # as its one script, retried until every hash is on one node: never a step of HGETALLs
    # that half the hashes answer from the wrong node, nor the node an ASK names reading a
    # hash not yet moved as empty.
    board = RedisLeaderboard(cluster_client, key=cluster_key, max_entries=None)
    board.upsert_many((f"u{i:03d}", i, {"i": i}) for i in range(120))
    board.get_top(5)  # the options confirmed: a default board's ranked read is ZRANGE
    source = redis_cluster.owner(_core.key_slot(cluster_key))
    before, hgetalls, scripts = (
        cluster_client.stats(),
        command_calls(redis_cluster, source, "hgetall"),
        command_calls(redis_cluster, source, "evalsha"),
    )
    top = board.get_top(110)
    after = cluster_client.stats()
    assert after["round_trips"] - before["round_trips"] == 2
    assert command_calls(redis_cluster, source, "hgetall") - hgetalls == 110
    assert command_calls(redis_cluster, source, "evalsha") == scripts
    assert [e["metadata"] for e in top] == [{"i": str(i)} for i in range(119, 9, -1)]
    redirects = after["redirects"]
    finisher = migrate_half(redis_cluster, cluster_key, b":user:u1", 0.3)
    try:
        top = board.get_top(110)
        everyone = board.list_all()
    finally:
        finisher.join()
    assert [e["metadata"] for e in top] == [{"i": str(i)} for i in range(119, 9, -1)]
    assert [e["metadata"] for e in everyone] == [{"i": str(i)} for i in range(119, -1, -1)]
    assert cluster_client.stats()["redirects"] > redirects

    # A run_pipelined batch runs in order: its read is the one script, not two steps whose
    # second would see the write pipelined behind it.
    before_write, after_write = pipelined_read_write_read(
        cluster_client, board, 110, "u118", 118, {"i": "renamed"}
    )
    assert before_write[1]["metadata"] == {"i": "118"}
    assert after_write[1]["metadata"] == {"i": "renamed"}
    board.upsert_user("u118", 118, {"i": 118})

    async def asynchronous() -> list[Any]:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            aboard = rl_asyncio.RedisLeaderboard(c, key=cluster_key, max_entries=None)
            await aboard.get_top(5)
            moved = redis_cluster.owner(_core.key_slot(cluster_key))
            hgetalls = command_calls(redis_cluster, moved, "hgetall")
            pages = await asyncio.gather(aboard.get_top(110), aboard.get_around_rank(60, 100))
            assert command_calls(redis_cluster, moved, "hgetall") - hgetalls == 210
            return [[e["metadata"] for e in page] for page in pages]

    top, around = asyncio.run(asynchronous())
    assert top == [{"i": str(i)} for i in range(119, 9, -1)]
    assert around == [{"i": str(i)} for i in range(110, 10, -1)]


@contextlib.contextmanager
def migration_started(cluster: RedisCluster, key: str) -> Iterator[None]:
    """``key``'s slot marked migrating to another primary (importing there), no key moved: a
    write of a key on neither node gets TRYAGAIN until the slot is stable again (on exit)."""
    slot = _core.key_slot(key)
    source, target, _ = mark_migrating(cluster, slot)
    try:
        yield
    finally:
        for node in (source, target):
            cluster.node_command(node, "CLUSTER", "SETSLOT", slot, "STABLE")


def test_a_request_waits_no_longer_than_socket_timeout(
    redis_cluster: RedisCluster, cluster_key: str
) -> None:
    with ClusterClient(redis_cluster.startup_nodes, socket_timeout=0.5) as client:
        board = RedisLeaderboard(client, key=cluster_key)
        board.upsert_user("a", 1)
        with migration_started(redis_cluster, cluster_key):
            started = time.monotonic()
            with pytest.raises(redis_leaderboard.TimeoutError, match="TRYAGAIN"):
                board.upsert_user("b", 2)  # its hash is on neither node: TRYAGAIN until the end
            assert 0.3 < time.monotonic() - started <= 0.6  # the last pause would end past it
        assert board.get_top(5) == [{"rank": 1, "user_id": "a", "score": 1.0, "metadata": {}}]


# ---- Replicas and ACL ------------------------------------------------------------------------


def command_calls(cluster: RedisCluster, node: Any, command: str) -> int:
    stats = str(cluster.node_command(node, "INFO", "commandstats"))
    for line in stats.splitlines():
        if line.startswith(f"cmdstat_{command}:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def test_read_from_replicas(redis_cluster: RedisCluster, cluster_key: str) -> None:
    slot = _core.key_slot(cluster_key)
    primary = redis_cluster.owner(slot)
    wanted = f"master_port:{primary.port}"
    replicas = [
        n for n in redis_cluster.nodes
        if n.running() and n is not primary
        and wanted in str(redis_cluster.node_command(n, "INFO", "replication"))
    ]  # fmt: skip
    assert len(replicas) == 1
    replica = replicas[0]
    with ClusterClient(redis_cluster.startup_nodes, read_from_replicas=True, socket_timeout=5) as c:
        board = RedisLeaderboard(c, key=cluster_key)
        board.upsert_user("a", 3, {"x": 1})
        deadline = time.monotonic() + 5
        while board.get_size() != 1:  # read on the replica: until it has the write
            assert time.monotonic() < deadline
            time.sleep(0.01)
        reads_before = command_calls(redis_cluster, replica, "zcard")
        evalsha_before = command_calls(redis_cluster, primary, "evalsha")
        for _ in range(5):
            assert board.get_size() == 1  # ZCARD: a read
            assert board.get_top(1)[0]["metadata"] == {"x": "1"}  # a no-writes script
        assert command_calls(redis_cluster, replica, "zcard") == reads_before + 5
        assert command_calls(redis_cluster, primary, "evalsha") == evalsha_before
        board.increment_score("a", 1)  # a write: the primary
        assert command_calls(redis_cluster, primary, "evalsha") == evalsha_before + 1


def test_acl_user_on_every_node(redis_cluster: RedisCluster, cluster_key: str) -> None:
    user, password = f"lb{uuid.uuid4().hex[:6]}", "pw-" + uuid.uuid4().hex
    rule = ["on", f">{password}", "~*", "&*", "+@all"]
    for node in redis_cluster.nodes:
        if node.running():
            redis_cluster.node_command(node, "ACL", "SETUSER", user, *rule)
    try:
        with ClusterClient(redis_cluster.startup_nodes, username=user, password=password) as c:
            board = RedisLeaderboard(c, key=cluster_key)
            assert board.upsert_user("a", 1)["rank"] == 1
        with ClusterClient(redis_cluster.startup_nodes, username=user, password="wrong") as c:
            with pytest.raises(redis_leaderboard.AuthenticationError):
                c.ping()
    finally:
        for node in redis_cluster.nodes:
            if node.running():
                redis_cluster.node_command(node, "ACL", "DELUSER", user)


# ---- Change events -----------------------------------------------------------------------------


def test_events_on_a_cluster_board_sync_and_asyncio(
    cluster_client: ClusterClient, redis_cluster: RedisCluster, cluster_key: str
) -> None:
    # The reader holds a connection of its own (a dedicated cluster client) and its XREAD is
    # routed by the stream's key (its first argument is COUNT): once an AttributeError, and a
    # request sent to the slot of "COUNT".
    board = RedisLeaderboard(cluster_client, key=cluster_key, events=True)
    board.upsert_user("a", 1)
    with board.events(last_id="0", block=0) as stream:
        assert [(e["kind"], e["user_id"]) for e in stream.read()] == [("score", "a")]
        woken = threading.Timer(0.3, lambda: board.upsert_user("b", 2))
        woken.start()
        started = time.monotonic()
        assert [e["user_id"] for e in stream.read(block=5)] == ["b"]
        assert time.monotonic() - started < 4
        woken.join()

    async def asynchronous() -> list[Any]:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            board = rl_asyncio.RedisLeaderboard(c, key=cluster_key, events=True)
            async with board.events(last_id="0", block=0) as stream:
                seen = [e["user_id"] for e in await stream.read()]
                await board.upsert_user("c", 3)
                seen += [e["user_id"] async for e in stream]
                return seen

    assert asyncio.run(asynchronous()) == ["a", "b", "c"]


def test_team_boards_and_hidden_players_on_a_cluster(
    cluster_client: ClusterClient, cluster_key: str
) -> None:
    # Every key of a team board (the teams, the members, each team's contributions, the teams of
    # the members) and a board's hidden players share the key's hash tag: one slot.
    teams = TeamLeaderboard(cluster_client, key=f"{cluster_key}:teams")
    teams.submit("ann", 5, team="red")
    teams.submit("bob", 7, team="red")
    teams.move("bob", "blue")
    assert [(e["user_id"], e["score"]) for e in teams.teams.get_top()] == [
        ("blue", 7.0),
        ("red", 5.0),
    ]
    assert teams.team_members("blue") == [{"user_id": "bob", "contribution": 7.0}]
    board = RedisLeaderboard(cluster_client, key=cluster_key)
    board.upsert_user("a", 1)
    board.upsert_user("b", 2)
    assert board.hide("b") and board.get_rank("b") is None
    board.upsert_many([("b", 9), ("c", 3)])
    assert [e["user_id"] for e in board.get_top()] == ["c", "a"]
    assert board.unhide("b") and board.get_rank("b") == 1


# ---- The asyncio client: on the event loop, as the one-node client -------------------------


def test_asyncio_moved_ask_and_tryagain_are_followed_on_the_loop(
    redis_cluster: RedisCluster, cluster_key: str, arun: Callable[..., Any]
) -> None:
    slot = _core.key_slot(cluster_key)

    async def main() -> None:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            board = rl_asyncio.RedisLeaderboard(c, key=cluster_key, max_entries=100)
            await asyncio.gather(*(board.upsert_user(f"u{i}", i, {"i": i}) for i in range(20)))
            # Half the hashes move first: concurrent calls on the loop get ASK and TRYAGAIN
            # (waits on the loop's timer), and all end right once the slot has moved.
            finisher = migrate_half(redis_cluster, cluster_key, b":user:u1", 0.4)
            try:
                started = time.monotonic()
                rank, top, written = await asyncio.gather(
                    board.get_rank("u5"), board.get_top(20), board.upsert_user("new", 100, {"n": 1})
                )
                assert time.monotonic() - started >= 0.3  # it waited for the migration
            finally:
                await asyncio.get_running_loop().run_in_executor(None, finisher.join)
            # The three calls run concurrently and retry on their own: each read ran before the
            # new entry's write or after it (a retried read may come after), never between.
            assert rank in (15, 16)
            ids = [f"u{i}" for i in range(19, -1, -1)]
            assert [e["user_id"] for e in top] in (ids, ["new", *ids[:-1]])
            assert all(
                e["metadata"] == {"i": e["user_id"][1:]} for e in top if e["user_id"] != "new"
            )
            assert all(e["metadata"] == {"n": "1"} for e in top if e["user_id"] == "new")
            assert written["rank"] == 1
            assert c.stats()["retries"] > 0
            # The slot moves again: the client's map names the old owner, MOVED is followed
            # once and the map updated (the next call goes straight to the new owner).
            target = other_primary(redis_cluster, slot)
            assert redis_cluster.migrate_slot(slot, target) == 22  # the board and 21 hashes
            redirects = c.stats()["redirects"]
            assert await board.get_user_entry("u19") == {
                "rank": 2, "user_id": "u19", "score": 19.0, "metadata": {"i": "19"}
            }  # fmt: skip
            assert c.stats()["redirects"] == redirects + 1
            assert (await board.increment_score("u0", 5))["score"] == 5
            assert c.stats()["redirects"] == redirects + 1

    arun(main())


def test_asyncio_request_waits_no_longer_than_socket_timeout(
    redis_cluster: RedisCluster, cluster_key: str, arun: Callable[..., Any]
) -> None:
    async def main() -> None:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=0.5) as c:
            board = rl_asyncio.RedisLeaderboard(c, key=cluster_key)
            await board.upsert_user("a", 1)
            with migration_started(redis_cluster, cluster_key):
                started = time.monotonic()
                with pytest.raises(redis_leaderboard.TimeoutError, match="TRYAGAIN"):
                    await board.upsert_user("b", 2)  # TRYAGAIN until its deadline
                assert 0.3 < time.monotonic() - started <= 0.6
                assert await board.get_rank("a") == 1  # the loop was never blocked
            assert await board.get_top(5) == [
                {"rank": 1, "user_id": "a", "score": 1.0, "metadata": {}}
            ]

    arun(main())


def test_asyncio_read_from_replicas(
    redis_cluster: RedisCluster, cluster_key: str, arun: Callable[..., Any]
) -> None:
    primary = redis_cluster.owner(_core.key_slot(cluster_key))
    wanted = f"master_port:{primary.port}"
    (replica,) = [
        n for n in redis_cluster.nodes
        if n.running() and n is not primary
        and wanted in str(redis_cluster.node_command(n, "INFO", "replication"))
    ]  # fmt: skip

    async def main() -> None:
        async with rl_asyncio.ClusterClient(
            redis_cluster.startup_nodes, read_from_replicas=True, socket_timeout=5
        ) as c:
            board = rl_asyncio.RedisLeaderboard(c, key=cluster_key)
            await board.upsert_user("a", 3, {"x": 1})
            deadline = time.monotonic() + 5
            while await board.get_size() != 1:  # read on the replica: until it has the write
                assert time.monotonic() < deadline
                await asyncio.sleep(0.01)
            reads = command_calls(redis_cluster, replica, "zcard")
            writes = command_calls(redis_cluster, primary, "evalsha")
            sizes = await asyncio.gather(*(board.get_size() for _ in range(5)))
            assert sizes == [1] * 5
            assert command_calls(redis_cluster, replica, "zcard") == reads + 5
            await board.increment_score("a", 1)  # a write: the primary
            assert command_calls(redis_cluster, primary, "evalsha") == writes + 1

    arun(main())


def test_asyncio_client_runs_no_thread_and_stays_on_its_loop(
    redis_cluster: RedisCluster, cluster_key: str
) -> None:
    def threads() -> int:
        return len(os.listdir("/proc/self/task"))

    baseline = threads()
    client = rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    board = rl_asyncio.RedisLeaderboard(client, key=cluster_key)

    async def calls() -> list[Any]:
        # Every primary gets calls (a key of each one's slots), concurrently.
        others = []
        for node in redis_cluster.primaries_running():
            while True:
                key = f"{{t{uuid.uuid4().hex[:8]}}}"
                if redis_cluster.owner(_core.key_slot(key)) is node:
                    others.append(rl_asyncio.RedisLeaderboard(client, key=key))
                    break
        await asyncio.gather(*(b.increment_score("u", 1) for b in [board, *others] * 5))
        assert threads() == baseline  # no router, no worker per node (the map was read aside)
        return await asyncio.gather(*(b.get_rank("u") for b in others))

    first = asyncio.new_event_loop()
    try:
        assert first.run_until_complete(calls()) == [1, 1, 1]
        # Bound to its loop while that one is open; then free to move (asyncio.run twice).
        with pytest.raises(RuntimeError, match=r"asyncio\.ClusterClient is bound to the event"):
            asyncio.run(_on_another_loop(board))
    finally:
        first.close()
    assert asyncio.run(_on_another_loop(board)) == 1
    client.close()


async def _on_another_loop(board: Any) -> int:
    size: int = await board.get_size()
    return size


def test_asyncio_close_fails_the_calls_in_flight(
    redis_cluster: RedisCluster, cluster_key: str, arun: Callable[..., Any]
) -> None:
    slot = _core.key_slot(cluster_key)
    owner = redis_cluster.owner(slot)

    async def main() -> None:
        client = rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
        board = rl_asyncio.RedisLeaderboard(client, key=cluster_key)
        await board.upsert_user("a", 1)
        owner.pause()  # the calls below stay in flight on its connection
        try:
            pending = [asyncio.ensure_future(board.get_rank("a")) for _ in range(3)]
            await asyncio.sleep(0.05)
            await client.aclose()
            for call in pending:
                with pytest.raises(redis_leaderboard.ConnectionError, match="closed"):
                    await call
            with pytest.raises(redis_leaderboard.ConnectionError, match="closed"):
                await board.get_rank("a")
        finally:
            owner.resume()

    arun(main())
