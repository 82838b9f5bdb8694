"""Sentinel: a self-hosted team with a primary, replicas and Sentinel gets failover.

One primary, one replica and three sentinels run on loopback (tests/conftest.py). The client
asks the sentinels for the primary, reconnects to the new one after a failover (on connection
loss, on ``READONLY``, on ``+switch-master``) and never re-sends a write whose reply was lost.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any, Optional

import pytest

import redis_leaderboard
from conftest import (
    DATA_PASSWORD,
    SENTINEL_PASSWORD,
    SENTINEL_SERVICE,
    RedisServer,
    SentinelTopology,
)
from redis_leaderboard import Client, RedisLeaderboard
from redis_leaderboard import asyncio as rl_asyncio


@pytest.fixture(scope="module")
def topology() -> Iterator[SentinelTopology]:
    """One topology for the tests that do not fail it over."""
    shared = SentinelTopology()
    yield shared
    shared.cleanup()


def sentinel_url(topology: SentinelTopology, **query: str) -> str:
    hosts = ",".join(f"{host}:{port}" for host, port in topology.addresses)
    params = "&".join(
        f"{k}={v}" for k, v in {"sentinel_password": SENTINEL_PASSWORD, **query}.items()
    )
    return f"redis+sentinel://:{DATA_PASSWORD}@{hosts}/{SENTINEL_SERVICE}/0?{params}"


def test_from_sentinel_and_the_url_find_the_primary(topology: SentinelTopology) -> None:
    key = f"sentinel:{uuid.uuid4().hex[:8]}"
    # A dead sentinel first: the next one answers.
    dead = ("127.0.0.1", redis_leaderboard._redis_server.free_port())
    with Client.from_sentinel(
        [dead, *topology.addresses],
        SENTINEL_SERVICE,
        sentinel_password=SENTINEL_PASSWORD,
        password=DATA_PASSWORD,
        socket_timeout=2,
    ) as client:
        assert RedisLeaderboard(client, key=key).upsert_user("ada", 5)["rank"] == 1
        assert repr(client).startswith("Client('mymaster' via Sentinel")
    with topology.primary.redis_py() as r:
        assert r.zscore(key, "ada") == 5.0
    with Client.from_url(sentinel_url(topology)) as client:
        assert RedisLeaderboard(client, key=key).get_rank("ada") == 1

    async def main() -> None:
        async with rl_asyncio.Client.from_url(sentinel_url(topology)) as aclient:
            assert await rl_asyncio.RedisLeaderboard(aclient, key=key).get_size() == 1

    asyncio.run(main())


class SilentSentinel:
    """A sentinel that stopped answering: it takes one connection (the kernel completes it)
    and says nothing; its next connections are never completed (a full backlog of 0)."""

    def __init__(self) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.address = ("127.0.0.1", self.listener.getsockname()[1])

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("api", ["sync", "asyncio"])
def test_sentinels_that_stopped_answering_leave_time_for_one_that_answers(
    topology: SentinelTopology, api: str
) -> None:
    # The sentinels were asked in turn, each within a whole connect timeout: past two silent
    # ones a sync call took 2x its timeout before it reached the third, and with none answering
    # 3x (1.50 s for 0.5 s). Now asking them and opening the socket share the connect timeout,
    # each sentinel given half the time left (the last all of it): the call reaches the
    # answering sentinel and succeeds within its timeout; with none answering it fails by it.
    silent = [SilentSentinel(), SilentSentinel()]
    key = f"sentinel:{uuid.uuid4().hex[:8]}"
    timeout = 0.5
    options: dict[str, Any] = {
        "sentinel_password": SENTINEL_PASSWORD,
        "password": DATA_PASSWORD,
        "socket_timeout": timeout,
    }
    addresses = [s.address for s in silent]
    try:
        if api == "sync":
            started = time.monotonic()
            with Client.from_sentinel(
                [*addresses, topology.addresses[0]], SENTINEL_SERVICE, **options
            ) as client:
                assert RedisLeaderboard(client, key=key).get_size() == 0
                took = time.monotonic() - started
            with Client.from_sentinel(addresses, SENTINEL_SERVICE, **options) as client:
                started = time.monotonic()
                with pytest.raises(
                    (redis_leaderboard.ConnectionError, redis_leaderboard.TimeoutError)
                ):
                    client.ping()
                failed = time.monotonic() - started
        else:

            async def main() -> tuple[float, float]:
                started = time.monotonic()
                async with rl_asyncio.Client.from_sentinel(
                    [*addresses, topology.addresses[0]], SENTINEL_SERVICE, **options
                ) as client:
                    assert await rl_asyncio.RedisLeaderboard(client, key=key).get_size() == 0
                    took = time.monotonic() - started
                async with rl_asyncio.Client.from_sentinel(
                    addresses, SENTINEL_SERVICE, **options
                ) as client:
                    started = time.monotonic()
                    with pytest.raises(
                        (redis_leaderboard.ConnectionError, redis_leaderboard.TimeoutError)
                    ):
                        await client.ping()
                    return took, time.monotonic() - started

            took, failed = asyncio.run(main())
        assert took <= timeout + 0.1, took
        assert failed <= timeout + 0.1, failed
    finally:
        for s in silent:
            s.close()


def test_no_sentinel_knowing_the_service_is_a_connection_error(
    topology: SentinelTopology,
) -> None:
    with Client.from_sentinel(
        topology.addresses, "no-such-service", sentinel_password=SENTINEL_PASSWORD
    ) as client:
        with pytest.raises(redis_leaderboard.ConnectionError, match="no primary named"):
            client.ping()
    with Client.from_sentinel(topology.addresses, SENTINEL_SERVICE) as client:  # no password
        with pytest.raises(redis_leaderboard.ConnectionError, match="NOAUTH"):
            client.ping()


def test_an_acl_user_through_sentinel(topology: SentinelTopology) -> None:
    # The README's minimal rule, on both data nodes (ACLs are not replicated).
    from test_atomicity import minimal_rule

    for server in (topology.primary, topology.replica):
        with server.redis_py() as admin:
            admin.execute_command("ACL", "SETUSER", "board-app", "reset", *minimal_rule("~lb:*"))
    password = minimal_rule()[1][1:]
    with Client.from_sentinel(
        topology.addresses,
        sentinel_password=SENTINEL_PASSWORD,
        username="board-app",
        password=password,
    ) as client:
        board = RedisLeaderboard(client, key="lb:sentinel-acl")
        assert board.upsert_user("ada", 1)["rank"] == 1
        with pytest.raises(redis_leaderboard.NoPermissionError):
            RedisLeaderboard(client, key="other:board").upsert_user("ada", 1)


def test_readonly_closes_the_connection_and_the_next_call_reconnects(
    fresh_redis_server: RedisServer, redis_server: RedisServer
) -> None:
    # A DNS name or a Sentinel answer that moved: the server became a replica. The write that
    # got READONLY did not run and raises; the next call opens a new connection.
    server = fresh_redis_server
    key = f"ro:{uuid.uuid4().hex[:8]}"
    with Client(host=server.host, port=server.port) as client:
        board = RedisLeaderboard(client, key=key)
        board.upsert_user("ada", 1)
        with server.redis_py() as admin:
            admin.execute_command("REPLICAOF", redis_server.host, str(redis_server.port))
            with pytest.raises(redis_leaderboard.ReadOnlyError):
                board.upsert_user("bob", 2)
            admin.execute_command("REPLICAOF", "NO", "ONE")
        before = client.stats()["connections"]
        board.upsert_user("cy", 3)
        assert client.stats()["connections"] == before + 1

    async def main() -> None:
        async with rl_asyncio.Client(host=server.host, port=server.port) as aclient:
            aboard = rl_asyncio.RedisLeaderboard(aclient, key=key)
            await aboard.upsert_user("dee", 4)
            with server.redis_py() as admin:
                admin.execute_command("REPLICAOF", redis_server.host, str(redis_server.port))
                with pytest.raises(redis_leaderboard.ReadOnlyError):
                    await aboard.upsert_user("eve", 5)
                admin.execute_command("REPLICAOF", "NO", "ONE")
            await aboard.upsert_user("fay", 6)
            assert aclient.stats()["connections"] == 2

    asyncio.run(main())


# --- failover under load -------------------------------------------------------------------------


class Ledger:
    """Every write of the load: a unique user incremented by 1, so that the new primary's
    score says whether the write applied (1), not (absent) or twice (2: never allowed)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: list[str] = []
        self.failed: list[str] = []  # raised: may or may not have applied
        self.first_ok_after: Optional[float] = None  # the first write acknowledged after ...
        self.first_error: Optional[float] = None  # ... the first failure after the kill
        self.killed_at: Optional[float] = None

    def ok(self, user: str) -> None:
        now = time.monotonic()
        with self.lock:
            self.acked.append(user)
            if self.first_error is not None and self.first_ok_after is None:
                self.first_ok_after = now

    def error(self, user: str) -> None:
        now = time.monotonic()
        with self.lock:
            self.failed.append(user)
            if self.killed_at is not None and self.first_error is None:
                self.first_error = now


@pytest.mark.slow
def test_failover_under_load_loses_no_acknowledged_write_twice(
    sentinel_topology: SentinelTopology,
) -> None:
    topology = sentinel_topology
    key = "lb:failover"
    ledger = Ledger()
    stop = threading.Event()
    options: dict[str, Any] = {
        "sentinel_password": SENTINEL_PASSWORD,
        "password": DATA_PASSWORD,
        "socket_timeout": 1,
    }
    client = Client.from_sentinel(topology.addresses, SENTINEL_SERVICE, **options)
    board = RedisLeaderboard(client, key=key, max_entries=1_000_000)

    def thread_load(n: int) -> None:
        seq = 0
        while not stop.is_set():
            user = f"t{n}-{seq}"
            seq += 1
            try:
                if seq % 2:
                    board.increment_score(user, 1)
                else:
                    board.submit(user, 1, mode="incr")
                ledger.ok(user)
            except redis_leaderboard.RedisError:
                ledger.error(user)
                time.sleep(0.01)

    async def task_load(aboard: rl_asyncio.RedisLeaderboard, n: int) -> None:
        seq = 0
        while not stop.is_set():
            user = f"a{n}-{seq}"
            seq += 1
            try:
                await aboard.increment_score(user, 1)
                ledger.ok(user)
            except redis_leaderboard.RedisError:
                ledger.error(user)
                await asyncio.sleep(0.01)

    async def async_load() -> None:
        async with rl_asyncio.Client.from_sentinel(
            topology.addresses, SENTINEL_SERVICE, **options
        ) as aclient:
            aboard = rl_asyncio.RedisLeaderboard(aclient, key=key, max_entries=1_000_000)
            await asyncio.gather(*(task_load(aboard, n) for n in range(500)))

    switched: dict[str, float] = {}

    def watch_switch() -> None:
        with topology.sentinel_py(1) as r:
            pubsub = r.pubsub()
            pubsub.subscribe("+switch-master")
            while not stop.is_set():
                message = pubsub.get_message(timeout=0.1)
                if message and message["type"] == "message":
                    switched["at"] = time.monotonic()
            pubsub.close()

    workers = [threading.Thread(target=thread_load, args=(n,)) for n in range(8)]
    workers.append(threading.Thread(target=lambda: asyncio.run(async_load())))
    workers.append(threading.Thread(target=watch_switch))
    old_port = topology.primary.port
    for worker in workers:
        worker.start()
    try:
        time.sleep(1.0)
        assert len(ledger.acked) > 100
        ledger.killed_at = time.monotonic()
        topology.primary.kill()  # SIGKILL
        deadline = time.monotonic() + 30
        while ("at" not in switched or ledger.first_ok_after is None) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.05)
        time.sleep(0.5)
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=30)
        client.close()
    assert "at" in switched, "Sentinel did not fail over"
    assert topology.primary_port() == topology.replica.port != old_port
    assert ledger.first_ok_after is not None
    failover = switched["at"] - ledger.killed_at
    writing_again = ledger.first_ok_after - ledger.killed_at
    # Writing again within the failover time plus one second.
    assert writing_again <= failover + 1.0, (writing_again, failover)

    with topology.replica.redis_py() as r:  # the new primary
        scores = dict(r.zrange(key, 0, -1, withscores=True))
    assert all(score == 1.0 for score in scores.values()), "a write applied twice"
    lost = [user for user in ledger.acked if user not in scores]
    applied_unacked = [user for user in ledger.failed if user in scores]
    print(
        f"\nfailover: +switch-master {failover:.2f} s after SIGKILL, writing again after "
        f"{writing_again:.2f} s; {len(ledger.acked)} acknowledged writes, {len(lost)} lost to "
        f"asynchronous replication; {len(ledger.failed)} raised, {len(applied_unacked)} of "
        "them applied; none applied twice"
    )
    # Lost acknowledged writes can only be those just before the kill.
    assert len(lost) < len(ledger.acked) / 2


@pytest.mark.slow
def test_client_cache_follows_the_primary_after_a_failover(
    sentinel_topology: SentinelTopology,
) -> None:
    """A caching client through Sentinel: after a failover (SENTINEL FAILOVER), once the writer
    and the reader are both on the new primary, a name written there is what cached reads show
    once the write returned, and the invalidation connection moves to the new primary.

    Not before: Sentinel leaves the old primary a primary, taking writes, until it converts it
    to a replica (about 10 s later), and each client moves on its own +switch-master (from its
    own sentinel, on its own thread). Meanwhile the writer may write to one primary and the
    reader read the other, cached or not: such a name is not stale on the server read (those
    writes acknowledged by the old primary are lost when it is converted). So a write counts
    only once the new primary has it."""
    topology = sentinel_topology
    options = dict(password=DATA_PASSWORD, sentinel_password=SENTINEL_PASSWORD)
    cached = Client.from_sentinel(
        topology.addresses, SENTINEL_SERVICE, client_cache=True, **options
    )
    writer = Client.from_sentinel(topology.addresses, SENTINEL_SERVICE, **options)
    board = RedisLeaderboard(cached, key="lb:cache", max_entries=10)
    writes = RedisLeaderboard(writer, key="lb:cache", max_entries=10)
    writes.upsert_user("a", 1, {"name": "before"})
    for _ in range(2):
        assert board.get_top(1)[0]["metadata"] == {"name": "before"}
    old_port = topology.primary_port()
    with topology.sentinel_py() as s:
        s.execute_command("SENTINEL", "FAILOVER", SENTINEL_SERVICE)
    deadline = time.monotonic() + 30
    while topology.primary_port() == old_port:
        assert time.monotonic() < deadline, "no failover"
        time.sleep(0.1)
    new = topology.replica
    assert topology.primary_port() == new.port
    admin = new.redis_py()

    def write(version: int) -> bool:
        """The write, and whether it went to the new primary."""
        writes.upsert_user("a", 1, {"name": f"after-{version}"})
        return bool(admin.hget("lb:cache:user:a", "name") == f"after-{version}")

    version = 0
    while time.monotonic() < deadline:
        version += 1
        try:
            if not write(version):
                time.sleep(0.1)  # the writer is still on the old primary
                continue
        except (redis_leaderboard.ConnectionError, redis_leaderboard.ReadOnlyError):
            time.sleep(0.1)  # the old primary, converted, until the writer follows
            continue
        try:
            top = board.get_top(1)
        except redis_leaderboard.ConnectionError:
            continue  # a pooled connection to the old primary, found dead
        if top[0]["metadata"]["name"] == f"after-{version}":
            break
        time.sleep(0.1)  # the reader is still on the old primary
    else:
        pytest.fail("cached reads never showed the names written on the new primary")
    # Both on the new primary now, for good (the sentinels name it): the cache works there.
    for _ in range(3):
        version += 1
        assert write(version)
        assert board.get_top(1)[0]["metadata"] == {"name": f"after-{version}"}
    assert cached.cache_info()["hits"] > 0  # type: ignore[index]
    admin.close()
    cached.close()
    writer.close()


# ---- The cache never keeps what another server than its invalidation connection's answered ----
#
# Two primaries at once (the window between Sentinel promoting a replica and converting the old
# primary, about 10 s, made here at will): the replica becomes a primary of its own with a newer
# name, and the sentinels are pointed at it with SENTINEL REMOVE and MONITOR, which send no
# +switch-master, so a client moves to it only when it opens a connection. A read of the old
# primary may show its old name (an uncached read does too); what it read must never be cached
# under the invalidation connection of the new one, which will never invalidate it.


def split_primaries(topology: SentinelTopology, key: str) -> tuple[RedisServer, RedisServer]:
    """The board's user "a" is named "old" on the primary; the replica becomes a primary where
    "a" is named "new", and the sentinels name it. Returns (old primary, new primary)."""
    old, new = topology.primary, topology.replica
    plain = dict(password=DATA_PASSWORD)
    with Client(host=old.host, port=old.port, **plain) as client:
        RedisLeaderboard(client, key=key, max_entries=10).upsert_user("a", 1, {"name": "old"})
    with old.redis_py() as admin:
        assert admin.execute_command("WAIT", 1, 5000) == 1
    with new.redis_py() as admin:
        admin.execute_command("REPLICAOF", "NO", "ONE")
    with Client(host=new.host, port=new.port, **plain) as client:
        RedisLeaderboard(client, key=key, max_entries=10).upsert_user("a", 1, {"name": "new"})
    for index in range(len(topology.sentinels)):
        with topology.sentinel_py(index) as s:
            s.execute_command("SENTINEL", "REMOVE", SENTINEL_SERVICE)
            s.execute_command("SENTINEL", "MONITOR", SENTINEL_SERVICE, new.host, new.port, 2)
            s.execute_command("SENTINEL", "SET", SENTINEL_SERVICE, "auth-pass", DATA_PASSWORD)
    assert topology.primary_port() == new.port
    return old, new


def kill_clients(server: RedisServer, kind: str) -> int:
    with server.redis_py() as admin:
        return int(admin.execute_command("CLIENT", "KILL", "TYPE", kind))


@pytest.mark.slow
def test_client_cache_keeps_nothing_another_server_answered(
    sentinel_topology: SentinelTopology,
) -> None:
    """Thread A's read leases a pooled connection to the old primary while the invalidation
    connection is on the new one (so A reads uncached, from the old primary, held there by
    CLIENT PAUSE); meanwhile thread B's read sets up a new invalidation connection on the new
    primary. A's names must not be cached under it: once every connection is on the new primary,
    reads show its name."""
    topology = sentinel_topology
    cached = Client.from_sentinel(
        topology.addresses,
        SENTINEL_SERVICE,
        client_cache=True,
        password=DATA_PASSWORD,
        sentinel_password=SENTINEL_PASSWORD,
    )
    board = RedisLeaderboard(cached, key="lb:split", max_entries=10)
    with Client.from_sentinel(
        topology.addresses,
        SENTINEL_SERVICE,
        password=DATA_PASSWORD,
        sentinel_password=SENTINEL_PASSWORD,
    ) as setup:
        RedisLeaderboard(setup, key="lb:split", max_entries=10).upsert_user("a", 1, {"name": "x"})
    for _ in range(2):  # the pool's one connection and the invalidation connection, cached
        assert board.get_top(1)[0]["metadata"] == {"name": "x"}
    old, _ = split_primaries(topology, "lb:split")
    # Both still on the old primary; then its invalidation connection is killed.
    assert board.get_top(1)[0]["metadata"] == {"name": "old"}
    assert kill_clients(old, "pubsub") >= 1
    assert board.get_top(1)[0]["metadata"] == {"name": "old"}  # finds it dead: uncached
    with old.redis_py() as admin:
        admin.execute_command("CLIENT", "PAUSE", 3000)
    sent = cached.stats()["round_trips"]
    a_read: list[Any] = []
    thread_a = threading.Thread(target=lambda: a_read.append(board.get_top(1)))
    thread_a.start()
    deadline = time.monotonic() + 5
    while cached.stats()["round_trips"] == sent:  # until A's query is written (and held)
        assert time.monotonic() < deadline, "thread A never sent its query"
        time.sleep(0.005)
    # B (this thread): a new connection (the pool's one is A's) and a new invalidation
    # connection, both on the new primary.
    assert board.get_top(1)[0]["metadata"] == {"name": "new"}
    assert thread_a.is_alive(), "thread A's read was not held on the old primary"
    thread_a.join()
    assert a_read[0][0]["metadata"] == {"name": "old"}  # as an uncached read of the old one
    assert cached.cache_info()["tracking"]  # type: ignore[index]
    kill_clients(old, "normal")  # A's connection: from now on, every read goes to the new one
    for _ in range(3):
        try:
            assert board.get_top(1)[0]["metadata"] == {"name": "new"}
        except redis_leaderboard.ConnectionError:
            continue  # A's pooled connection, found dead
    assert board.get_top(1)[0]["metadata"] == {"name": "new"}
    assert cached.cache_info()["hits"] > 0  # type: ignore[index]
    cached.close()


@pytest.mark.slow
def test_asyncio_client_cache_keeps_nothing_another_server_answered(
    sentinel_topology: SentinelTopology,
) -> None:
    """The asyncio client's invalidation connection is killed and set up again on the new
    primary while its data connection stays on the old one; reads show the old primary's name
    meanwhile (as uncached reads would), but once the data connection too is on the new
    primary, reads show its name, not one cached from the old primary."""
    topology = sentinel_topology
    with Client.from_sentinel(
        topology.addresses,
        SENTINEL_SERVICE,
        password=DATA_PASSWORD,
        sentinel_password=SENTINEL_PASSWORD,
    ) as setup:
        RedisLeaderboard(setup, key="lb:split", max_entries=10).upsert_user("a", 1, {"name": "x"})

    async def main() -> None:
        cached = rl_asyncio.Client.from_sentinel(
            topology.addresses,
            SENTINEL_SERVICE,
            client_cache=True,
            password=DATA_PASSWORD,
            sentinel_password=SENTINEL_PASSWORD,
        )
        board = rl_asyncio.RedisLeaderboard(cached, key="lb:split", max_entries=10)
        try:
            deadline = time.monotonic() + 10
            # Both connections on the old primary, the cache in use.
            while not cached.cache_info()["tracking"]:  # type: ignore[index]
                assert (await board.get_top(1))[0]["metadata"] == {"name": "x"}
                assert time.monotonic() < deadline, "the invalidation connection never came up"
                await asyncio.sleep(0.02)
            old, _ = split_primaries(topology, "lb:split")
            assert (await board.get_top(1))[0]["metadata"] == {"name": "old"}
            assert kill_clients(old, "pubsub") >= 1
            # Reads until the kill is seen, then until two reads found the invalidation
            # connection set up again (on the new primary, where the sentinels point).
            seen, through_new = False, 0
            while through_new < 2:
                assert time.monotonic() < deadline + 10, "no invalidation connection again"
                tracking = cached.cache_info()["tracking"]  # type: ignore[index]
                through_new += seen and tracking
                assert (await board.get_top(1))[0]["metadata"] == {"name": "old"}
                seen = seen or not cached.cache_info()["tracking"]  # type: ignore[index]
                await asyncio.sleep(0.02)
            kill_clients(old, "normal")  # the data connection moves to the new primary
            shown = []
            for _ in range(5):
                try:
                    shown.append((await board.get_top(1))[0]["metadata"]["name"])
                except redis_leaderboard.ConnectionError:
                    continue  # a read written before the kill
                await asyncio.sleep(0.05)
            assert shown and set(shown) == {"new"}, shown
        finally:
            await cached.aclose()

    asyncio.run(main())


# ---- Closing a Sentinel client ends within a bound, whatever the sentinel does ------------------

CLOSE_LOOP_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, random, sys, time
    from redis_leaderboard import Client
    from redis_leaderboard import asyncio as rl_asyncio

    addresses, password, cycles, socket_timeout = json.loads(sys.argv[1])
    addresses = [tuple(a) for a in addresses]
    rng = random.Random(7)
    slowest = 0.0

    def options():
        return dict(sentinel_password=password, socket_timeout=socket_timeout)

    for i in range(cycles):
        client = Client.from_sentinel(addresses, "mymaster", **options())
        # Close while the watcher connects, authenticates, subscribes or waits.
        time.sleep(rng.random() * 0.004)
        started = time.monotonic()
        client.close()
        slowest = max(slowest, time.monotonic() - started)

    async def main():
        global slowest
        for i in range(cycles // 4):
            client = rl_asyncio.Client.from_sentinel(addresses, "mymaster", **options())
            await asyncio.sleep(rng.random() * 0.004)
            started = time.monotonic()
            await client.aclose()
            slowest = max(slowest, time.monotonic() - started)

    asyncio.run(main())
    print(json.dumps({"slowest": slowest}))
    """
)


def run_close_loop(addresses: list[tuple[str, int]], cycles: int, socket_timeout: float) -> float:
    """The slowest close of `cycles` create/close cycles, in a process of its own (a close that
    hangs holds the GIL: only a process timeout ends it)."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            CLOSE_LOOP_SCRIPT,
            json.dumps([addresses, SENTINEL_PASSWORD, cycles, socket_timeout]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return float(json.loads(out.stdout)["slowest"])


def test_closing_sentinel_clients_in_a_loop_never_hangs(topology: SentinelTopology) -> None:
    # Before the fix a close that came while the watcher authenticated to its sentinel made it
    # reconnect, on a socket the close never shut down, and wait there forever (4 of 5 runs of
    # such a loop hung).
    slowest = run_close_loop(topology.addresses, 400, 30)
    assert slowest < 1.0


@pytest.mark.parametrize("when", ["before", "after"])
def test_closing_while_the_sentinel_is_stopped_is_bounded(
    topology: SentinelTopology, when: str
) -> None:
    # A sentinel that stops (SIGSTOP) before the watcher reached it (its AUTH is never
    # answered) or once it has subscribed: close still ends at once, not after socket_timeout.
    sentinel = topology.sentinels[-1]
    assert sentinel.proc is not None
    pid = sentinel.proc.pid
    try:
        if when == "before":
            os.kill(pid, signal.SIGSTOP)
        client = Client.from_sentinel(
            [(sentinel.host, sentinel.port)],
            SENTINEL_SERVICE,
            sentinel_password=SENTINEL_PASSWORD,
            socket_timeout=10,
        )
        time.sleep(0.5)
        if when == "after":
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.2)
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 1.0
        # The loop, against the stopped sentinel.
        assert run_close_loop([(sentinel.host, sentinel.port)], 40, 10) < 1.0
    finally:
        os.kill(pid, signal.SIGCONT)


def test_the_watcher_leaves_a_sentinel_that_stops_answering(topology: SentinelTopology) -> None:
    # The watcher pings its sentinel: one that stops answering (SIGSTOP) is left within its
    # timeout for the next one (before, it waited on it without a deadline).
    sentinel = topology.sentinels[0]
    assert sentinel.proc is not None
    pid = sentinel.proc.pid
    others = [topology.sentinel_py(i) for i in (1, 2)]

    def subscribers(admins: list[Any]) -> int:
        return sum(1 for a in admins for c in a.client_list() if int(c.get("sub", 0)) > 0)

    try:
        with Client.from_sentinel(
            topology.addresses,
            SENTINEL_SERVICE,
            sentinel_password=SENTINEL_PASSWORD,
            password=DATA_PASSWORD,
            socket_timeout=0.5,
        ) as client:
            with topology.sentinel_py(0) as first:
                deadline = time.monotonic() + 5
                while subscribers([first]) == 0:  # the watcher subscribes to the first one
                    assert time.monotonic() < deadline, "the watcher never subscribed"
                    time.sleep(0.05)
            before = subscribers(others)
            os.kill(pid, signal.SIGSTOP)
            try:
                deadline = time.monotonic() + 5
                while subscribers(others) == before:
                    assert time.monotonic() < deadline, (
                        "the watcher stayed with a sentinel that stopped answering"
                    )
                    time.sleep(0.1)
                # Within a ping interval (1 s) and the timeout (0.5 s), give or take.
                assert deadline - time.monotonic() > 5 - 2.5
            finally:
                os.kill(pid, signal.SIGCONT)
            assert client.ping()
    finally:
        for admin in others:
            admin.close()
