"""The cluster client against scripted nodes (tests/hostile.py's HostileServer): the slot map it
accepts from CLUSTER SHARDS / CLUSTER SLOTS replies no real server of this machine gives (Redis
7.4 lists a shard whose primary is down with no slots), and the script refusals it retries, in
each server's words."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any, Union

import pytest

import redis_leaderboard
from hostile import HostileServer
from redis_leaderboard import ClusterClient, RedisLeaderboard, _core
from redis_leaderboard import asyncio as rl_asyncio

Resp = Union[int, str, bytes, list[Any], None]


def resp(value: Resp) -> bytes:
    """RESP2 encoding: int -> integer, str/bytes -> bulk string, list -> array, None -> nil."""
    if value is None:
        return b"$-1\r\n"
    if isinstance(value, int):
        return b":%d\r\n" % value
    if isinstance(value, (str, bytes)):
        data = value.encode() if isinstance(value, str) else value
        return b"$%d\r\n%s\r\n" % (len(data), data)
    return b"*%d\r\n" % len(value) + b"".join(resp(item) for item in value)


def shard(ranges: list[tuple[int, int]], nodes: list[tuple[int, str, str]]) -> list[Any]:
    """One shard of CLUSTER SHARDS: its slot ranges, its nodes (port, role, health)."""
    slots: list[Any] = [bound for first_last in ranges for bound in first_last]
    return [
        "slots",
        slots,
        "nodes",
        [
            [
                "id",
                f"{port:040d}",
                "port",
                port,
                "ip",
                "127.0.0.1",
                "endpoint",
                "127.0.0.1",
                "role",
                role,
                "replication-offset",
                0,
                "health",
                health,
            ]
            for port, role, health in nodes
        ],
    ]


def slots_entry(first: int, last: int, port: int) -> list[Any]:
    """One range of CLUSTER SLOTS, served by the node at `port`."""
    return [first, last, ["127.0.0.1", port, f"{port:040d}"]]


class Node:
    """A scripted cluster node: `shards` and `slots` are its CLUSTER SHARDS / CLUSTER SLOTS
    replies (callables of the node list, so they can name every node's port); ZCARD answers 7;
    EVALSHA answers `scripts`' replies in turn, then :1."""

    def __init__(self) -> None:
        self.shards: Any = lambda nodes: []
        self.slots: Any = lambda nodes: []
        self.scripts: list[bytes] = []
        self.zcard = b":7\r\n"  # ZCARD's reply
        self.nodes: list[Node] = []
        self.lock = threading.Lock()
        self.server = HostileServer(self.respond)

    @property
    def port(self) -> int:
        return self.server.port

    def respond(self, connection: int, argv: list[bytes]) -> bytes:
        name = argv[0].upper()
        if name == b"CLUSTER" and argv[1].upper() == b"SHARDS":
            return resp(self.shards(self.nodes))
        if name == b"CLUSTER" and argv[1].upper() == b"SLOTS":
            if self.slots is None:
                return b"-ERR CLUSTER SLOTS refused here\r\n"
            return resp(self.slots(self.nodes))
        if name == b"ZCARD":
            return self.zcard
        if name in (b"EVALSHA", b"EVAL"):
            with self.lock:
                if self.scripts:
                    return self.scripts.pop(0)
            return b":1\r\n"
        return b"+OK\r\n"

    def calls(self, name: bytes) -> int:
        return sum(1 for _, argv in self.server.commands if argv[0].upper() == name)

    def close(self) -> None:
        self.server.close()


def nodes(count: int) -> list[Node]:
    made = [Node() for _ in range(count)]
    for node in made:
        node.nodes = made
    return made


def key_in(first: int, last: int) -> str:
    """A hash-tagged board key whose slot is in first..last."""
    for i in range(100000):
        key = f"{{k{i}}}:board"
        if first <= _core.key_slot(key) <= last:
            return key
    raise AssertionError("no key found")


LOW, HIGH = key_in(0, 8191), key_in(8192, 16383)


def client_of(*startup: Node, timeout: float = 1.0) -> ClusterClient:
    return ClusterClient([("127.0.0.1", node.port) for node in startup], socket_timeout=timeout)


def size(client: ClusterClient, key: str) -> int:
    return RedisLeaderboard(client, key=key).get_size()


# ---- The slot map must cover every slot ------------------------------------------------------


def test_a_shard_listed_without_slots_is_read_from_cluster_slots() -> None:
    # Redis 7.4 after a failover, while the old primary is down: CLUSTER SHARDS lists the shard
    # the promoted replica now serves with an empty slot list; CLUSTER SLOTS has every slot.
    a, b = nodes(2)
    try:
        for node in (a, b):
            node.shards = lambda ns: [
                shard([(0, 8191)], [(ns[0].port, "master", "online")]),
                shard([], [(ns[1].port, "master", "online"), (1, "master", "fail")]),
            ]
            node.slots = lambda ns: [
                slots_entry(0, 8191, ns[0].port),
                slots_entry(8192, 16383, ns[1].port),
            ]
        with client_of(a) as client:
            assert size(client, HIGH) == 7
            assert size(client, LOW) == 7
            ranges = {s["primary"]: s["slots"] for s in client.shards()}
            assert ranges[("127.0.0.1", b.port)] == [(8192, 16383)]
        assert b.calls(b"ZCARD") == 1 and a.calls(b"ZCARD") == 1
        assert any(argv[1:2] == [b"SLOTS"] for _, argv in a.server.commands)
    finally:
        a.close()
        b.close()


def test_an_incomplete_map_from_one_node_is_completed_by_another() -> None:
    a, b = nodes(2)
    try:
        # `a` knows only its own half, by either command; `b` knows both.
        a.shards = lambda ns: [shard([(0, 8191)], [(ns[0].port, "master", "online")])]
        a.slots = lambda ns: [slots_entry(0, 8191, ns[0].port)]
        b.shards = lambda ns: [
            shard([(0, 8191)], [(ns[0].port, "master", "online")]),
            shard([(8192, 16383)], [(ns[1].port, "master", "online")]),
        ]
        with client_of(a, b) as client:
            assert size(client, HIGH) == 7
        assert b.calls(b"ZCARD") == 1
    finally:
        a.close()
        b.close()


def test_a_cluster_with_slots_no_node_serves_keeps_the_served_ones() -> None:
    # A truly partial cluster (cluster-require-full-coverage no): no node has a complete map;
    # the slots it serves are served, the others wait for a node until the timeout.
    (a,) = nodes(1)
    try:
        a.shards = lambda ns: [shard([(0, 8191)], [(ns[0].port, "master", "online")])]
        a.slots = lambda ns: [slots_entry(0, 8191, ns[0].port)]
        with client_of(a, timeout=0.5) as client:
            assert size(client, LOW) == 7
            with pytest.raises(redis_leaderboard.TimeoutError, match="no node serves slot"):
                size(client, HIGH)
    finally:
        a.close()


def test_an_incomplete_map_does_not_replace_a_complete_one() -> None:
    # The map held covers every slot; a later read finds fewer (a shard listed without slots,
    # and CLUSTER SLOTS failing): the held map stays.
    a, b = nodes(2)
    try:
        full = lambda ns: [  # noqa: E731
            shard([(0, 8191)], [(ns[0].port, "master", "online")]),
            shard([(8192, 16383)], [(ns[1].port, "master", "online")]),
        ]
        for node in (a, b):
            node.shards = full
        with client_of(a, b) as client:
            assert size(client, HIGH) == 7
            for node in (a, b):
                node.shards = lambda ns: [
                    shard([(0, 8191)], [(ns[0].port, "master", "online")]),
                    shard([], [(ns[1].port, "master", "online")]),
                ]
                node.slots = None  # CLUSTER SLOTS answers an error
            client.refresh()
            assert size(client, HIGH) == 7
        assert b.calls(b"ZCARD") == 2
    finally:
        a.close()
        b.close()


# ---- Script refusals, in each server's words -------------------------------------------------

REFUSALS = [
    # Redis 7.0-8.x, Valkey 7-8: a key of a migrating slot not on this node (ASK in a script)
    "ERR Script attempted to access a non local key in a cluster node script: "
    "d2b1e9c0, on @user_script:12.",
    # Valkey 9 (scripts call through the module API)
    "ERR Attempted to access a non local key in a cluster node script: d2b1e9c0, on "
    "@user_script:12.",
    # Redis 7.2+, Valkey 7.2+: keys of a slot under migration not all on this node
    "ERR Unable to execute command 'unlink' in script because undeclared keys were accessed "
    "during rehashing of the slot script: d2b1e9c0, on @user_script:40.",
    "ERR Script attempted to access a slot not served script: d2b1e9c0, on @user_script:1.",
    "ERR Script attempted to execute a command while the cluster is down script: d2b1e9c0",
    "ERR Script attempted to execute a write command while the cluster is down and readonly",
    "ERR Can not execute a write command 'zadd' while the cluster is down and readonly script",
    "ERR Can not execute a command 'type' while the cluster is down script: d2b1e9c0",
    # Redis 6.2: raised by redis.call, or returned from redis.pcall (no error code of its own)
    "ERR Error running script (call to f_d2b1e9c0): @user_script:12: @user_script: 12: Lua "
    "script attempted to access a non local key in a cluster node",
    "@user_script: 30: Lua script attempted to access a non local key in a cluster node",
    "ERR Error running script (call to f_d2b1e9c0): @user_script:3: @user_script: 3: Lua script "
    "attempted to execute a command while the cluster is down",
]


def full_map(node: Node) -> None:
    node.shards = lambda ns: [shard([(0, 16383)], [(ns[0].port, "master", "online")])]


@pytest.mark.parametrize("refusal", REFUSALS, ids=[f"wording{i}" for i in range(len(REFUSALS))])
def test_a_script_refused_by_its_slots_state_is_sent_again(refusal: str) -> None:
    (a,) = nodes(1)
    try:
        full_map(a)
        a.scripts = [b"-" + refusal.encode() + b"\r\n"] * 2
        with client_of(a, timeout=2) as client:
            assert RedisLeaderboard(client, key=LOW).delete_user("u") is True
            assert client.stats()["retries"] == 2
        assert a.calls(b"EVALSHA") == 3
    finally:
        a.close()


@pytest.mark.parametrize(
    "error",
    [
        "ERR Error running script: attempted to access a non local key",  # not a node's words
        "ERR Unable to execute command 'unlink' in script because of something else",
        "ERR Script attempted to access keys that do not hash to the same slot",
        "WRONGTYPE Operation against a key holding the wrong kind of value",
    ],
    ids=["other-words", "other-reason", "cross-slot", "wrongtype"],
)
def test_other_script_errors_are_raised_at_once(error: str) -> None:
    (a,) = nodes(1)
    try:
        full_map(a)
        a.scripts = [b"-" + error.encode() + b"\r\n"]
        with client_of(a, timeout=2) as client:
            with pytest.raises(redis_leaderboard.ResponseError) as raised:
                RedisLeaderboard(client, key=LOW).delete_user("u")
            assert str(raised.value).startswith(error)
        assert a.calls(b"EVALSHA") == 1
    finally:
        a.close()


def test_a_script_refusal_that_never_ends_times_out_naming_it() -> None:
    (a,) = nodes(1)
    try:
        full_map(a)
        refusal = REFUSALS[1]
        a.scripts = [b"-" + refusal.encode() + b"\r\n"] * 1000
        with client_of(a, timeout=0.4) as client:
            with pytest.raises(redis_leaderboard.TimeoutError, match="non local key"):
                RedisLeaderboard(client, key=LOW).delete_user("u")
    finally:
        a.close()


# ---- A node that stops answering holds a request no longer than its deadline -----------------


class BlackHole:
    """A node that takes one connection (the kernel completes it) and then answers nothing,
    and whose next connections are never completed: a listener that never accepts, with a
    backlog of 0 that its first connection fills, so Linux drops the next SYNs (as across a
    partition: the client waits out its connect timeout)."""

    def __init__(self) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.port = self.listener.getsockname()[1]

    def close(self) -> None:
        self.listener.close()


def test_a_request_queued_behind_a_node_that_stopped_answering_ends_by_its_deadline() -> None:
    # The asyncio cluster client's worker for the node writes the first read and waits for its
    # reply until its timeout; a read submitted meanwhile queues behind it. Once the first
    # times out the worker opens a new connection for the second, whose SYNs are dropped: that
    # attempt must end by the second read's deadline, not a whole connect timeout later (it
    # did: 2x socket_timeout, found by tests/test_partitions.py with a primary partitioned
    # away). Either read may end with TimeoutError or ConnectionError; none past its deadline.
    (a,) = nodes(1)
    hole = BlackHole()
    timeout = 0.5
    try:
        a.shards = lambda ns: [
            shard([(0, 8191)], [(ns[0].port, "master", "online")]),
            shard([(8192, 16383)], [(hole.port, "master", "online")]),
        ]
        a.slots = lambda ns: [slots_entry(0, 8191, ns[0].port), slots_entry(8192, 16383, hole.port)]

        async def main() -> list[float]:
            async with rl_asyncio.ClusterClient(
                [("127.0.0.1", a.port)], socket_timeout=timeout
            ) as client:
                board = rl_asyncio.RedisLeaderboard(client, key=HIGH)
                assert await rl_asyncio.RedisLeaderboard(client, key=LOW).get_size() == 7

                async def timed(delay: float) -> float:
                    await asyncio.sleep(delay)
                    started = time.monotonic()
                    with pytest.raises(
                        (redis_leaderboard.TimeoutError, redis_leaderboard.ConnectionError)
                    ):
                        await board.get_size()
                    return time.monotonic() - started

                return list(await asyncio.gather(timed(0), timed(0.1)))

        took = asyncio.run(main())
        assert max(took) <= timeout + 0.15, took
    finally:
        a.close()
        hole.close()


def test_a_node_that_answers_clusterdown_is_asked_for_the_map_last() -> None:
    # A primary cut off from the majority of the cluster but still reachable: it refuses with
    # CLUSTERDOWN and, asked for the map, still names itself the owner of its slots; the others
    # name the promoted replica. The client must read the map from another node than the one
    # that said CLUSTERDOWN (it read it from the first that answered, that one, and waited for
    # it until its deadline: tests/test_partitions.py, a minority cluster primary).
    old, new = nodes(2)
    try:
        old.zcard = b"-CLUSTERDOWN The cluster is down\r\n"
        old.shards = lambda ns: [shard([(0, 16383)], [(ns[0].port, "master", "online")])]
        new.shards = lambda ns: [shard([(0, 16383)], [(ns[1].port, "master", "online")])]
        with client_of(old, new, timeout=2.0) as client:
            started = time.monotonic()
            assert size(client, HIGH) == 7
            assert time.monotonic() - started < 1.0
        assert old.calls(b"ZCARD") >= 1 and new.calls(b"ZCARD") == 1
    finally:
        old.close()
        new.close()


# ---- Reading the slot map keeps a call's deadline ----------------------------------------------


@pytest.mark.parametrize("api", ["sync", "asyncio"])
@pytest.mark.parametrize("holes", [2, 6])
def test_reading_the_map_past_nodes_that_do_not_answer_keeps_the_calls_deadline(
    api: str, holes: int
) -> None:
    # The map is read from the known nodes in turn. Nodes that stopped answering (each takes
    # the connection, then says nothing) were each waited for a whole socket_timeout, so a call
    # ended at 2x its timeout (3x with a third). Now a node is given half the call's time left
    # (the last all of it), so the one that answers is reached within the call's timeout; past
    # the deadline the call fails with TimeoutError naming the map. The nodes that did not
    # answer are asked last for a while: the next call goes to the one that answers at once.
    (a,) = nodes(1)
    blackholes = [BlackHole() for _ in range(holes)]
    timeout = 0.5
    startup = [("127.0.0.1", hole.port) for hole in blackholes] + [("127.0.0.1", a.port)]
    try:
        full_map(a)

        def timed(call: Any) -> tuple[float, str]:
            started = time.monotonic()
            try:
                outcome = str(call())
            except redis_leaderboard.TimeoutError as exc:
                outcome = str(exc)
            return time.monotonic() - started, outcome

        def first_then_second(call: Any) -> list[tuple[float, str]]:
            return [timed(call), timed(call)]

        if api == "sync":
            with ClusterClient(startup, socket_timeout=timeout) as client:
                took = first_then_second(RedisLeaderboard(client, key=HIGH).get_size)
        else:

            async def main() -> list[tuple[float, str]]:
                async with rl_asyncio.ClusterClient(startup, socket_timeout=timeout) as client:
                    board = rl_asyncio.RedisLeaderboard(client, key=HIGH)
                    loop = asyncio.get_running_loop()

                    def call() -> Any:
                        return asyncio.run_coroutine_threadsafe(board.get_size(), loop).result()

                    return await loop.run_in_executor(None, first_then_second, call)

            took = asyncio.run(main())
        (first, first_outcome), (second, second_outcome) = took
        assert first <= timeout + 0.1, took
        if holes == 2:  # halves of the time left: 0.25 s, 0.125 s, then the node that answers
            assert first_outcome == "7", took
        else:  # six halvings leave too little: the call fails, by its deadline, naming the map
            assert "slot map" in first_outcome, took
        # The second call asks first the nodes the first did not reach (one more, with six).
        assert second_outcome == "7" and second < (0.1 if holes == 2 else timeout + 0.1), took
    finally:
        a.close()
        for hole in blackholes:
            hole.close()
