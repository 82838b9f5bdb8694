"""Removals during a real slot migration: a script that deletes (a trim, delete_user, clear)
while its slot is half moved either succeeds with the right result or is refused having
changed nothing, and the cluster client's retry, once the migration has ended, gives the right
answer and leaves no metadata hash behind.

Each test opens a migration of its board's slot by hand (IMPORTING on the target, MIGRATING on
the source), moves some of the slot's keys with MIGRATE and leaves others on the source, then
calls the method: once with a short timeout while the slot stays half moved (refused: nothing
changed on either node), once while another thread finishes the migration (the retry's answer).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Callable

import pytest
import redis

import redis_leaderboard
from launchers import RedisCluster, RedisClusterNode
from redis_leaderboard import ClusterClient, RedisLeaderboard, _core


@pytest.fixture
def cluster_client(redis_cluster: RedisCluster) -> Iterator[ClusterClient]:
    client = ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    yield client
    client.close()


def raw(cluster: RedisCluster, node: RedisClusterNode) -> Any:  # -> redis.Redis
    return redis.Redis(
        host=node.host, port=node.port, password=cluster.password, decode_responses=True
    )


def slot_state(cluster: RedisCluster, board_key: str) -> dict[tuple[int, str], Any]:
    """Every key of `board_key`'s hash tag on every primary, with its value: (port, key) ->
    value. Each read goes after ASKING, so an importing node answers for the keys it holds.
    Other tests' keys that happen to share the slot (a random tag meets one of them about once
    in a thousand runs) are left out."""
    tag = board_key[: board_key.index("}") + 1]
    state: dict[tuple[int, str], Any] = {}
    for node in cluster.primaries_running():
        with raw(cluster, node) as r:
            keys = r.execute_command("CLUSTER", "GETKEYSINSLOT", _core.key_slot(board_key), 1000)
            for key in (k for k in keys if k.startswith(tag)):
                pipe = r.pipeline(transaction=False)
                pipe.execute_command("ASKING")
                pipe.type(key)
                kind = pipe.execute()[1]
                pipe = r.pipeline(transaction=False)
                pipe.execute_command("ASKING")
                if kind == "zset":
                    pipe.zrange(key, 0, -1, withscores=True)
                elif kind == "hash":
                    pipe.hgetall(key)
                else:
                    pipe.type(key)
                state[(node.port, key)] = pipe.execute()[1]
    return state


class Migration:
    """A migration of `slot` from its owner to another primary, opened and ended by hand."""

    def __init__(self, cluster: RedisCluster, slot: int) -> None:
        self.cluster, self.slot = cluster, slot
        self.source = cluster.owner(slot)
        self.target = next(n for n in cluster.primaries_running() if n is not self.source)
        self.source_id = cluster.node_command(self.source, "CLUSTER", "MYID")
        self.target_id = cluster.node_command(self.target, "CLUSTER", "MYID")

    def open(self) -> None:
        c, slot = self.cluster, self.slot
        c.node_command(self.target, "CLUSTER", "SETSLOT", slot, "IMPORTING", self.source_id)
        c.node_command(self.source, "CLUSTER", "SETSLOT", slot, "MIGRATING", self.target_id)

    def keys(self) -> list[str]:
        keys = self.cluster.node_command(self.source, "CLUSTER", "GETKEYSINSLOT", self.slot, 1000)
        return [k.decode() if isinstance(k, bytes) else k for k in keys]

    def move(self, keys: list[str]) -> None:
        if not keys:
            return
        self.cluster.node_command(
            self.source, "MIGRATE", self.target.host, self.target.port, "", 0, 5000, "KEYS", *keys
        )

    def finish(self) -> None:
        self.move(self.keys())
        for node in self.cluster.primaries_running():
            self.cluster.node_command(node, "CLUSTER", "SETSLOT", self.slot, "NODE", self.target_id)


Board = Callable[[ClusterClient], RedisLeaderboard]


def refused_then_retried(
    cluster: RedisCluster,
    key: str,
    make: Board,
    prepare: Callable[[RedisLeaderboard], None],
    stay_behind: Callable[[str], bool],
    call: Callable[[RedisLeaderboard], Any],
) -> Any:
    """Fills a board (`make`, then `prepare`), opens a migration of its slot, moves every key of
    the slot but those `stay_behind` says, then `call`s the board: first with a short timeout
    while the slot stays so (if it raises, nothing may have changed on either node), then while
    the migration ends meanwhile. Returns the second call's result."""
    slot = _core.key_slot(key)
    with ClusterClient(cluster.startup_nodes, socket_timeout=5) as client:
        prepare(make(client))
    migration = Migration(cluster, slot)
    migration.open()
    try:
        migration.move([k for k in migration.keys() if not stay_behind(k)])
        assert migration.keys(), "some keys must stay on the source"
        before = slot_state(cluster, key)
        with ClusterClient(cluster.startup_nodes, socket_timeout=0.6) as client:
            try:
                result = call(make(client))
            except (redis_leaderboard.TimeoutError, redis_leaderboard.ResponseError) as exc:
                # Refused: nothing changed on either node.
                assert slot_state(cluster, key) == before, exc
            else:
                return result  # it ran: the caller checks the answer and what is left
        # Again, while the migration ends: the retries wait for it, then the answer is right.
        finisher = threading.Timer(0.3, migration.finish)
        with ClusterClient(cluster.startup_nodes, socket_timeout=5) as client:
            board = make(client)
            finisher.start()
            try:
                return call(board)
            finally:
                finisher.join()
    finally:
        if cluster.owner(slot) is migration.source:
            migration.finish()


def metadata_keys(cluster: RedisCluster, key: str) -> list[str]:
    """The metadata hashes of board `key`, on whichever node."""
    state = slot_state(cluster, key)
    return sorted(k for _, k in state if ":user:" in k)


def fill(n: int, sign: int = 1) -> Callable[[RedisLeaderboard], None]:
    """Users u0..u<n-1>, u0 the worst (scores i, or -i on an "asc" board: `sign`)."""

    def prepare(board: RedisLeaderboard) -> None:
        for i in range(n):
            board.upsert_user(f"u{i}", sign * i, {"i": i})

    return prepare


def on(key: str, *names: str) -> Callable[[str], bool]:
    """The metadata hashes of users `names` stay on the source."""
    ends = tuple(f"{key}:user:{name}" for name in names)
    return lambda k: k in ends


# Boards whose scripts run during the migration: their option keys exist, so every key a
# script declares moves with the sorted set (a default board without them declares an absent
# options hash: its scripts get TRYAGAIN before running, until the migration ends).
OPTIONS = [
    pytest.param({"order": "asc"}, id="asc"),
    pytest.param({"ties": "dense"}, id="dense"),
    pytest.param({"ties": "first"}, id="first"),
    pytest.param({"events": True}, id="default-with-events"),
]


def sign(options: dict[str, Any]) -> int:
    return -1 if options.get("order") == "asc" else 1


@pytest.mark.parametrize("options", OPTIONS)
def test_set_max_entries_while_the_set_has_moved_and_some_metadata_has_not(
    redis_cluster: RedisCluster, cluster_key: str, options: dict[str, Any]
) -> None:
    # The sorted set and the option keys have moved; the metadata of two of the four users the
    # trim removes (u0 and u2) is still on the source.
    def make(client: ClusterClient) -> RedisLeaderboard:
        return RedisLeaderboard(client, key=cluster_key, max_entries=100, **options)

    trimmed = refused_then_retried(
        redis_cluster,
        cluster_key,
        make,
        fill(6, sign(options)),
        on(cluster_key, "u0", "u2"),
        lambda board: board.set_max_entries(2),
    )
    assert trimmed == ["u0", "u1", "u2", "u3"]
    with ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as client:
        board = make(client)
        assert [(e["user_id"], e["metadata"]) for e in board.get_top(10)] == [
            ("u5", {"i": "5"}),
            ("u4", {"i": "4"}),
        ]
    assert metadata_keys(redis_cluster, cluster_key) == [
        f"{cluster_key}:user:u4",
        f"{cluster_key}:user:u5",
    ]


@pytest.mark.parametrize("options", OPTIONS)
def test_a_trim_of_one_user_whose_metadata_has_not_moved(
    redis_cluster: RedisCluster, cluster_key: str, options: dict[str, Any]
) -> None:
    # One user trimmed, its hash still on the source: on the importing node a command on that
    # one key alone would run there as if it did not exist (and the hash would be left behind).
    def make(client: ClusterClient) -> RedisLeaderboard:
        return RedisLeaderboard(client, key=cluster_key, max_entries=100, **options)

    trimmed = refused_then_retried(
        redis_cluster,
        cluster_key,
        make,
        fill(6, sign(options)),
        on(cluster_key, "u0"),
        lambda board: board.set_max_entries(5),
    )
    assert trimmed == ["u0"]
    assert metadata_keys(redis_cluster, cluster_key) == [
        f"{cluster_key}:user:u{i}" for i in range(1, 6)
    ]


@pytest.mark.parametrize("options", OPTIONS)
def test_a_write_that_trims_while_the_set_has_moved(
    redis_cluster: RedisCluster, cluster_key: str, options: dict[str, Any]
) -> None:
    # A full board of 5: a write of "n" (whose metadata hash exists already, so every key the
    # write declares is on the target) trims u0, whose hash stayed on the source.
    def make(client: ClusterClient) -> RedisLeaderboard:
        return RedisLeaderboard(client, key=cluster_key, max_entries=5, **options)

    def prepare(board: RedisLeaderboard) -> None:
        fill(5, sign(options))(board)
        owner = redis_cluster.owner(_core.key_slot(cluster_key))
        redis_cluster.node_command(owner, "HSET", f"{cluster_key}:user:n", "from", "before")

    written = refused_then_retried(
        redis_cluster,
        cluster_key,
        make,
        prepare,
        on(cluster_key, "u0"),
        lambda board: board.upsert_user("n", sign(options) * 10, {"n": 1}),
    )
    assert written == {
        "user_id": "n",
        "score": sign(options) * 10.0,
        "rank": 1,
        "metadata": {"from": "before", "n": "1"},
        "trimmed_user_ids": ["u0"],
    }
    with ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as client:
        assert [e["user_id"] for e in make(client).get_top(10)] == ["n", "u4", "u3", "u2", "u1"]
    assert metadata_keys(redis_cluster, cluster_key) == [
        f"{cluster_key}:user:{name}" for name in ("n", "u1", "u2", "u3", "u4")
    ]


@pytest.mark.parametrize("options", OPTIONS)
def test_clear_while_the_set_has_moved(
    redis_cluster: RedisCluster, cluster_key: str, options: dict[str, Any]
) -> None:
    def make(client: ClusterClient) -> RedisLeaderboard:
        return RedisLeaderboard(client, key=cluster_key, max_entries=100, **options)

    refused_then_retried(
        redis_cluster,
        cluster_key,
        make,
        fill(4, sign(options)),
        on(cluster_key, "u3"),
        lambda b: b.clear(),
    )
    left = sorted(k for _, k in slot_state(redis_cluster, cluster_key))
    # With events, the stream and the options hash recording them stay (as on one server).
    assert left == (
        [f"{cluster_key}:events", f"{cluster_key}:options"] if "events" in options else []
    )


@pytest.mark.parametrize("moved", [True, False], ids=["board-moved", "board-not-moved"])
@pytest.mark.parametrize("options", OPTIONS)
def test_delete_user_of_the_last_entry_during_a_migration(
    redis_cluster: RedisCluster, cluster_key: str, options: dict[str, Any], moved: bool
) -> None:
    # The last user's removal empties the board: nothing after it may read the deleted set (on
    # the source, a read of a key no longer there fails the script after its writes). An extra
    # key stays behind (or moves ahead) so the migration is under way either way.
    def make(client: ClusterClient) -> RedisLeaderboard:
        return RedisLeaderboard(client, key=cluster_key, max_entries=100, **options)

    def prepare(board: RedisLeaderboard) -> None:
        fill(1, sign(options))(board)
        owner = redis_cluster.owner(_core.key_slot(cluster_key))
        redis_cluster.node_command(owner, "SET", f"{cluster_key}:extra", "x")

    def stays(key: str) -> bool:
        return key.endswith(":extra") if moved else not key.endswith(":extra")

    assert refused_then_retried(
        redis_cluster, cluster_key, make, prepare, stays, lambda b: b.delete_user("u0")
    )
    left = sorted(k for _, k in slot_state(redis_cluster, cluster_key))
    assert f"{cluster_key}:user:u0" not in left and cluster_key not in left


@pytest.mark.parametrize("options", OPTIONS)
def test_set_max_entries_while_some_metadata_has_moved_ahead(
    redis_cluster: RedisCluster, cluster_key: str, options: dict[str, Any]
) -> None:
    # The other way round: the sorted set is still on the source, the hashes of u0 and u2 (two
    # of the four the trim removes) have moved: the script runs on the source.
    def make(client: ClusterClient) -> RedisLeaderboard:
        return RedisLeaderboard(client, key=cluster_key, max_entries=100, **options)

    ahead = on(cluster_key, "u0", "u2")
    trimmed = refused_then_retried(
        redis_cluster,
        cluster_key,
        make,
        fill(6, sign(options)),
        lambda k: not ahead(k),
        lambda board: board.set_max_entries(2),
    )
    assert trimmed == ["u0", "u1", "u2", "u3"]
    assert metadata_keys(redis_cluster, cluster_key) == [
        f"{cluster_key}:user:u4",
        f"{cluster_key}:user:u5",
    ]


READS: list[Any] = [
    pytest.param(lambda board: board.get_top(10), id="get_top"),
    pytest.param(lambda board: board.get_page(1, 10)["entries"], id="get_page"),
    pytest.param(lambda board: board.get_around_user("u3", 10), id="get_around_user"),
    pytest.param(
        lambda board: [e for e in board.get_entries(["u5", "u2", "u0"]) if e], id="get_entries"
    ),
]


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("options", OPTIONS)
def test_a_read_never_shows_metadata_that_has_not_moved_as_empty(
    redis_cluster: RedisCluster, cluster_key: str, options: dict[str, Any], read: Any
) -> None:
    # The sorted set has moved; u0's and u2's metadata is still on the source. On the importing
    # node a hash not there yet reads as absent: a read either waits for the migration (the
    # cluster client reads again) or answers with everyone's metadata, never with {}.
    def make(client: ClusterClient) -> RedisLeaderboard:
        return RedisLeaderboard(client, key=cluster_key, max_entries=100, **options)

    entries = refused_then_retried(
        redis_cluster, cluster_key, make, fill(6, sign(options)), on(cluster_key, "u0", "u2"), read
    )
    assert entries and all(e["metadata"] == {"i": e["user_id"][1:]} for e in entries), entries
