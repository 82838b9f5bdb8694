"""Durable acknowledgements (issue 31, item 3): with ``min_replicas`` a write is acknowledged only
once ``WAIT`` (or ``WAITAOF`` with ``wait_aof``) says that many replicas have it; fewer within
``replica_timeout`` raise ``NotReplicatedError`` (applied on the primary, never resent). Reads
never wait, and a default client sends no WAIT at all.

Real servers only: a primary and a replica of the test's server (a fresh pair for this module),
the Sentinel topology, the session's cluster (3 primaries, 1 replica each) and, for WAITAOF, a
server that has it (the one under test if it does, else a cached Valkey 8.1 of
tests/servers/fetch.sh, else skipped). A replica is made slow with SIGSTOP (then SIGCONT).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

import launchers
import redis_leaderboard
import redis_leaderboard.asyncio as aio
from apis import Api, sync_and_one_loop
from conftest import (
    DATA_PASSWORD,
    EVENT_LOOPS,
    SENTINEL_PASSWORD,
    SENTINEL_SERVICE,
    RedisServer,
    SentinelTopology,
)
from redis_leaderboard import (
    Client,
    ClusterClient,
    NotReplicatedError,
    RedisError,
    RedisLeaderboard,
    _redis_server,
)

# Short enough to keep the tests quick, long enough for a loaded machine's replica to answer.
TIMEOUT = 0.5
# How late a NotReplicatedError may come after replica_timeout on a busy 2-core machine.
SLACK = 2.0


def replica_of(primary: RedisServer, *extra: str, password: Optional[str] = None) -> RedisServer:
    replica = RedisServer(
        password=password,
        extra_args=[*extra, "--replicaof", primary.host, str(primary.port)],
    )
    wait_for_link(replica)
    return replica


def info(server: Any, section: str) -> dict[str, str]:
    with Client(server.host, server.port, password=server.password, socket_timeout=5) as c:
        text = c.execute_command("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def wait_for_link(replica: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while info(replica, "replication").get("master_link_status") != "up":
        assert time.monotonic() < deadline, "the replica did not sync"
        time.sleep(0.05)


def caught_up(primary: Any, replica: Any, timeout: float = 20.0) -> None:
    """Until the replica has every write of the primary (after a pause)."""
    deadline = time.monotonic() + timeout
    while True:
        want = int(info(primary, "replication")["master_repl_offset"])
        have = int(info(replica, "replication").get("slave_repl_offset", "-1"))
        if have >= want and info(replica, "replication").get("master_link_status") == "up":
            return
        assert time.monotonic() < deadline, f"the replica is behind: {have} < {want}"
        time.sleep(0.05)


@contextlib.contextmanager
def paused(replica: Any, primary: Any) -> Iterator[None]:
    """The replica stopped (SIGSTOP): it takes no write and acknowledges nothing."""
    assert replica.pid is not None
    os.kill(replica.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(replica.pid, signal.SIGCONT)
        caught_up(primary, replica)


def reset_stats(server: Any) -> None:
    with Client(server.host, server.port, password=server.password, socket_timeout=5) as c:
        c.execute_command("CONFIG", "RESETSTAT")


def calls(server: Any, command: str) -> int:
    """How many times ``command`` ran since the last reset (INFO commandstats)."""
    stats = info(server, "commandstats").get(f"cmdstat_{command.lower()}", "calls=0")
    return int(stats.split(",", 1)[0].split("=", 1)[1])


def replica_score(replica: Any, key: str, user: str) -> Optional[float]:
    with Client(replica.host, replica.port, password=replica.password, socket_timeout=5) as c:
        value = c.execute_command("ZSCORE", key, user)
    return None if value is None else float(value)


# --- a primary and its replica ------------------------------------------------------------------


class Pair:
    def __init__(self) -> None:
        self.primary = RedisServer()
        try:
            self.replica = replica_of(self.primary)
        except BaseException:
            self.primary.cleanup()
            raise

    def cleanup(self) -> None:
        self.replica.cleanup()
        self.primary.cleanup()


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    pair = Pair()
    yield pair
    pair.cleanup()


@pytest.fixture(params=["sync", *EVENT_LOOPS])
def api(request: pytest.FixtureRequest, pair: Pair) -> Iterator[Api]:
    """Each API in turn (sync, asyncio, uvloop), on the pair's primary."""
    name = str(request.param)
    api = Api(name, pair.primary.host, pair.primary.port, EVENT_LOOPS.get(name))
    yield api
    api.close()


@pytest.fixture
def key() -> str:
    return f"durable:{uuid.uuid4().hex[:12]}"


def test_a_write_is_on_the_replica_when_it_returns(api: Api, pair: Pair, key: str) -> None:
    """The write waits for the replica: stopped, it holds the call until it is resumed (a
    default client's write would return at once), and the replica has it on return."""
    board = api.leaderboard(key, 10, client=api.connect(min_replicas=1, replica_timeout=10))
    assert board.upsert_user("ada", 5)["rank"] == 1
    assert replica_score(pair.replica, key, "ada") == 5.0
    assert pair.replica.pid is not None
    os.kill(pair.replica.pid, signal.SIGSTOP)
    resume = threading.Timer(0.5, os.kill, (pair.replica.pid, signal.SIGCONT))
    resume.start()
    try:
        started = time.monotonic()
        assert board.increment_score("ada", 2)["score"] == 7.0
        took = time.monotonic() - started
        assert replica_score(pair.replica, key, "ada") == 7.0
    finally:
        resume.join()
        caught_up(pair.primary, pair.replica)
    assert took >= 0.4, f"the write returned in {took:.3f} s, before the replica was resumed"


def test_unconfirmed_write_raises_once_applied_never_resent(api: Api, pair: Pair, key: str) -> None:
    # socket_timeout shorter than replica_timeout: the reply's deadline allows the wait.
    client = api.connect(min_replicas=1, replica_timeout=TIMEOUT, socket_timeout=0.3)
    board = api.leaderboard(key, 10, client=client)
    board.upsert_user("ada", 5)
    with paused(pair.replica, pair.primary):
        reset_stats(pair.primary)
        started = time.monotonic()
        with pytest.raises(NotReplicatedError) as raised:
            board.increment_score("ada", 1)
        took = time.monotonic() - started
        # Reads never wait: they answer at once with the replica stopped.
        started_reads = time.monotonic()
        assert board.get_rank("ada") == 1
        assert board.get_top(10)[0]["score"] == 6.0
        reads_took = time.monotonic() - started_reads
        waits = calls(pair.primary, "WAIT")
    error = raised.value
    assert TIMEOUT <= took < TIMEOUT + SLACK
    assert reads_took < TIMEOUT
    assert isinstance(error, RedisError)
    assert not isinstance(
        error, (redis_leaderboard.ConnectionError, redis_leaderboard.TimeoutError)
    )
    assert (error.replicas, error.min_replicas) == (0, 1)
    message = str(error)
    assert "increment_score: applied on the primary" in message
    assert "confirmed by 0 of 1 replica within 0.5 s (WAIT)" in message
    assert "not resent" in message
    # Applied once on the primary (an increment sent again would make it 7), one WAIT: the
    # write's; the reads sent none.
    assert board.get_rank("ada") == 1
    assert replica_score(pair.primary, key, "ada") == 6.0
    assert waits == 1
    # The replica has it now (it caught up): the write was applied, only unconfirmed.
    assert replica_score(pair.replica, key, "ada") == 6.0
    # The client goes on: the next write is confirmed.
    assert board.increment_score("ada", 1)["score"] == 7.0


@pytest.mark.parametrize("socket_timeout", [0.3, TIMEOUT, 1.0])
def test_unconfirmed_writes_raise_not_replicated_on_both_clients(
    pair: Pair, key: str, socket_timeout: float
) -> None:
    """Issue 39, item 11: the asyncio client pipelines its writes on one connection, each with
    its WAIT, which the server runs one after the other; those behind the first timed out
    ("Timeout reading ...") while still to run, and then ran. Now a write's deadline allows the
    waits ahead of it: each answers NotReplicatedError (applied on the primary, not resent), as
    the sync client does, whether socket_timeout is below, at or above replica_timeout."""
    import asyncio

    options: dict[str, Any] = {
        "min_replicas": 1,
        "replica_timeout": TIMEOUT,
        "socket_timeout": socket_timeout,
    }
    users = [f"u{i}" for i in range(4)]

    async def main() -> list[Any]:
        async with aio.Client(pair.primary.host, pair.primary.port, **options) as client:
            board = aio.RedisLeaderboard(client, key)
            writes = [board.increment_score(user, 1) for user in users]
            return list(await asyncio.gather(*writes, return_exceptions=True))

    with paused(pair.replica, pair.primary):
        outcomes = asyncio.run(main())
        with Client(pair.primary.host, pair.primary.port, **options) as client:
            with pytest.raises(NotReplicatedError) as raised:
                RedisLeaderboard(client, key).increment_score("sync", 1)
        outcomes.append(raised.value)
    for outcome in outcomes:
        assert isinstance(outcome, NotReplicatedError), repr(outcome)
        assert "increment_score: applied on the primary" in str(outcome)
        assert "not resent" in str(outcome)
    # Each applied once.
    for user in [*users, "sync"]:
        assert replica_score(pair.primary, key, user) == 1.0


def test_an_asyncio_read_behind_a_wait_times_out_alone(pair: Pair, key: str) -> None:
    """On the asyncio client's one connection, a read pipelined behind a write's WAIT is
    answered only after it: past its socket_timeout it fails alone, the write still gets its
    NotReplicatedError, and the connection goes on."""
    import asyncio

    async def main() -> list[Any]:
        async with aio.Client(
            port=pair.primary.port, min_replicas=1, replica_timeout=1.0, socket_timeout=0.3
        ) as client:
            board = aio.RedisLeaderboard(client, key=key)
            await board.upsert_user("ada", 1)
            with paused(pair.replica, pair.primary):
                write = asyncio.ensure_future(board.increment_score("ada", 1))
                read = asyncio.ensure_future(board.get_rank("ada"))
                outcome = await asyncio.gather(write, read, return_exceptions=True)
            assert await board.get_rank("ada") == 1
            assert client.stats()["reconnects"] == 0
            return outcome

    write, read = asyncio.run(main())
    assert isinstance(write, NotReplicatedError)
    assert isinstance(read, redis_leaderboard.TimeoutError), read
    assert "behind a request the server holds" in str(read)
    assert replica_score(pair.primary, key, "ada") == 2.0


@sync_and_one_loop
def test_a_submission_id_resend_returns_the_first_result(api: Api, pair: Pair, key: str) -> None:
    """The documented way to retry: the same submission_id applies once."""
    board = api.leaderboard(key, 10, client=api.connect(min_replicas=1, replica_timeout=TIMEOUT))
    with paused(pair.replica, pair.primary):
        with pytest.raises(NotReplicatedError):
            board.submit("ada", 3, mode="incr", submission_id="s-1")
    again = board.submit("ada", 3, mode="incr", submission_id="s-1")
    assert again["duplicate"] is True and again["score"] == 3.0
    assert replica_score(pair.replica, key, "ada") == 3.0


@sync_and_one_loop
def test_more_replicas_than_there_are_raises(api: Api, pair: Pair, key: str) -> None:
    board = api.leaderboard(key, 10, client=api.connect(min_replicas=2, replica_timeout=TIMEOUT))
    with pytest.raises(NotReplicatedError) as raised:
        board.upsert_user("ada", 5)
    assert (raised.value.replicas, raised.value.min_replicas) == (1, 2)
    assert "confirmed by 1 of 2 replicas" in str(raised.value)
    assert replica_score(pair.primary, key, "ada") == 5.0


@sync_and_one_loop
def test_a_default_client_sends_no_wait(api: Api, pair: Pair, key: str) -> None:
    board = api.leaderboard(key, 10)
    reset_stats(pair.primary)
    board.upsert_user("ada", 5)
    board.increment_score("ada", 1)
    board.submit("bob", 2)
    board.get_rank("ada")
    assert calls(pair.primary, "WAIT") == 0 and calls(pair.primary, "WAITAOF") == 0
    # And with the option, one WAIT a write, none a read.
    board = api.leaderboard(key, 10, client=api.connect(min_replicas=1))
    reset_stats(pair.primary)
    board.upsert_user("ada", 5)
    board.increment_score("ada", 1)
    board.submit("bob", 2)
    board.get_rank("ada")
    board.get_top(10)
    assert calls(pair.primary, "WAIT") == 3


@sync_and_one_loop
def test_a_paged_write_waits_at_each_step(api: Api, pair: Pair, key: str) -> None:
    loader = api.leaderboard(key, 100_000)
    loader.upsert_many([(f"u{i}", i) for i in range(12_000)])
    board = api.leaderboard(key, 100_000, client=api.connect(min_replicas=1))
    reset_stats(pair.primary)
    board.clear()
    pages = calls(pair.primary, "EVALSHA") + calls(pair.primary, "EVAL")
    assert pages >= 3  # 5,000 entries a page
    assert calls(pair.primary, "WAIT") == pages
    with Client(pair.replica.host, pair.replica.port) as replica:
        assert replica.execute_command("EXISTS", key) == 0


@sync_and_one_loop
def test_a_paged_write_stops_at_its_first_unconfirmed_step(api: Api, pair: Pair, key: str) -> None:
    loader = api.leaderboard(key, 100_000)
    loader.upsert_many([(f"u{i}", i) for i in range(12_000)])
    board = api.leaderboard(key, 100_000, client=api.connect(min_replicas=1, replica_timeout=0.2))
    with paused(pair.replica, pair.primary):
        reset_stats(pair.primary)
        with pytest.raises(NotReplicatedError, match="clear: applied on the primary"):
            board.clear()
        # One page applied, not confirmed; nothing more sent.
        assert calls(pair.primary, "WAIT") == 1
        assert calls(pair.primary, "EVALSHA") + calls(pair.primary, "EVAL") == 1
        assert loader.get_size() == 7_000


# --- options ------------------------------------------------------------------------------------


BAD_OPTIONS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"min_replicas": -1}, ValueError, "min_replicas must not be negative"),
    ({"min_replicas": 1.5}, TypeError, "min_replicas must be an int >= 0"),
    ({"min_replicas": "1"}, TypeError, "min_replicas must be an int >= 0"),
    ({"min_replicas": 1, "replica_timeout": 0}, ValueError, "replica_timeout must be a positive"),
    ({"min_replicas": 1, "replica_timeout": -1}, ValueError, "replica_timeout must be a positive"),
    ({"replica_timeout": float("nan")}, ValueError, "replica_timeout must be a positive"),
    ({"replica_timeout": float("inf")}, ValueError, "replica_timeout must be a positive"),
    ({"replica_timeout": "1"}, TypeError, "replica_timeout must be a number"),
    ({"wait_aof": True}, ValueError, "wait_aof needs min_replicas >= 1"),
]


@pytest.mark.parametrize(("options", "error", "message"), BAD_OPTIONS)
def test_bad_options_raise_before_anything_is_sent(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # Nothing listens on the port: a client that tried to connect would raise ConnectionError.
    port = _redis_server.free_port()
    with pytest.raises(error, match=message):
        Client(port=port, **options)
    with pytest.raises(error, match=message):
        aio.Client(port=port, **options)
    with pytest.raises(error, match=message):
        ClusterClient([("127.0.0.1", port)], **options)
    with pytest.raises(error, match=message):
        aio.ClusterClient([("127.0.0.1", port)], **options)


def test_the_options_from_urls_and_their_defaults(pair: Pair, key: str) -> None:
    assert redis_leaderboard.options.ClientOptions().min_replicas == 0
    assert redis_leaderboard.options.ClientOptions().replica_timeout == 2.0
    assert redis_leaderboard.options.ClientOptions().wait_aof is False
    url = f"redis://{pair.primary.host}:{pair.primary.port}/0?min_replicas=2&replica_timeout=0.25"
    parsed = redis_leaderboard.options.parse_url(url + "&wait_aof=false")
    assert (parsed.min_replicas, parsed.replica_timeout, parsed.wait_aof) == (2, 0.25, False)
    for bad in ("min_replicas=-1", "min_replicas=x", "replica_timeout=0", "wait_aof=maybe"):
        with pytest.raises(ValueError, match="Redis URL: query key"):
            redis_leaderboard.options.parse_url(f"redis://localhost?{bad}")
    board = RedisLeaderboard(url=url, key=key)
    started = time.monotonic()
    with pytest.raises(NotReplicatedError) as raised:  # 2 required, 1 there
        board.upsert_user("ada", 1)
    assert (raised.value.replicas, raised.value.min_replicas) == (1, 2)
    assert time.monotonic() - started >= 0.25


# --- WAITAOF ------------------------------------------------------------------------------------


def waitaof_server() -> Optional[str]:
    """A server binary with WAITAOF (Redis/Valkey 7.2+): the one under test if it has it, else
    a Valkey 8.1 fetched by tests/servers/fetch.sh; None if neither."""
    binary = _redis_server.find_server()
    with _redis_server.RedisServer(binary=binary, dir_prefix="redis-leaderboard-test-") as s:
        version = s.server_version()
    if version.at_least("redis", 7, 2) or version.at_least("valkey", 7, 2):
        return binary
    cache = os.environ.get("REDIS_LEADERBOARD_SERVERS_DIR") or str(
        Path.home() / ".cache" / "redis-leaderboard" / "servers"
    )
    valkey = Path(cache) / "valkey-8.1" / "bin" / "valkey-server"
    return str(valkey) if valkey.is_file() else None


@pytest.fixture(scope="module")
def aof_pair() -> Iterator[tuple[_redis_server.RedisServer, _redis_server.RedisServer]]:
    binary = waitaof_server()
    if binary is None:
        pytest.skip("no server with WAITAOF (Redis/Valkey 7.2+): bash tests/servers/fetch.sh")
    primary = _redis_server.RedisServer(binary=binary, dir_prefix="redis-leaderboard-test-")
    primary.start()
    replica = _redis_server.RedisServer(
        binary=binary,
        dir_prefix="redis-leaderboard-test-",
        extra_args=[
            *("--replicaof", primary.host, str(primary.port)),
            *("--appendonly", "yes", "--appendfsync", "always"),
        ],
    )
    try:
        replica.start()
        wait_for_link(replica)
        deadline = time.monotonic() + 20
        while (
            info(replica, "persistence").get("aof_rewrite_in_progress") != "0"
            or info(replica, "persistence").get("aof_rewrite_scheduled") != "0"
        ):
            assert time.monotonic() < deadline, "the replica's AOF rewrite did not end"
            time.sleep(0.05)
        yield primary, replica
    finally:
        replica.cleanup()
        primary.cleanup()


@sync_and_one_loop
def test_wait_aof_waits_for_the_replicas_append_only_file(
    api: Api, aof_pair: tuple[Any, Any], key: str
) -> None:
    primary, replica = aof_pair
    # A replica acknowledges its fsyncs about once a second (measured on Valkey 8.1, even with
    # appendfsync always): WAITAOF needs a replica_timeout above that (the default, 2 s).
    client = api.connect(port=primary.port, min_replicas=1, wait_aof=True)
    board = api.leaderboard(key, 10, client=client)
    assert board.upsert_user("ada", 4)["rank"] == 1
    reset_stats(primary)
    assert board.upsert_user("ada", 5)["rank"] == 1
    assert replica_score(replica, key, "ada") == 5.0
    assert calls(primary, "WAITAOF") == 1
    assert calls(primary, "WAIT") == 0
    hasty = api.connect(port=primary.port, min_replicas=1, wait_aof=True, replica_timeout=TIMEOUT)
    board = api.leaderboard(key, 10, client=hasty)
    with paused(replica, primary):
        with pytest.raises(NotReplicatedError) as raised:
            board.increment_score("ada", 1)
    assert "confirmed by 0 of 1 replica within 0.5 s (WAITAOF: in their append-only files)" in str(
        raised.value
    )
    assert replica_score(primary, key, "ada") == 6.0


def test_wait_aof_is_refused_at_connect_by_a_server_without_it(
    redis_server: RedisServer, server_version: _redis_server.ServerVersion, key: str
) -> None:
    if server_version.at_least("redis", 7, 2) or server_version.at_least("valkey", 7, 2):
        pytest.skip(f"{server_version} has WAITAOF")
    client = Client(redis_server.host, redis_server.port, min_replicas=1, wait_aof=True)
    with client, pytest.raises(redis_leaderboard.ResponseError) as raised:
        RedisLeaderboard(client, key=key).upsert_user("ada", 5)
    assert "wait_aof=True needs WAITAOF (Redis 7.2+, Valkey 7.2+)" in str(raised.value)
    assert "(nothing was written)" in str(raised.value)
    with Client(redis_server.host, redis_server.port) as plain:
        assert plain.execute_command("EXISTS", key) == 0


# --- Sentinel and Cluster -----------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "asyncio"])
def test_sentinel_client(sentinel_topology: SentinelTopology, asynchronous: bool) -> None:
    topology = sentinel_topology
    key = f"durable:{uuid.uuid4().hex[:12]}"
    options: dict[str, Any] = {
        "sentinel_password": SENTINEL_PASSWORD,
        "password": DATA_PASSWORD,
        "min_replicas": 1,
        "replica_timeout": TIMEOUT,
    }

    def check(write: Any) -> None:
        write("ada", 5)
        assert replica_score(topology.replica, key, "ada") == 5.0
        with paused(topology.replica, topology.primary):
            with pytest.raises(NotReplicatedError):
                write("ada", 1)
        assert replica_score(topology.primary, key, "ada") == 6.0

    if not asynchronous:
        with Client.from_sentinel(topology.addresses, SENTINEL_SERVICE, **options) as client:
            board = RedisLeaderboard(client, key=key)
            check(board.increment_score)
        return

    import asyncio

    async def main() -> None:
        async with aio.Client.from_sentinel(
            topology.addresses, SENTINEL_SERVICE, **options
        ) as client:
            board = aio.RedisLeaderboard(client, key=key)
            loop = asyncio.get_running_loop()

            def write(user: str, score: float) -> None:
                future = asyncio.run_coroutine_threadsafe(board.increment_score(user, score), loop)
                future.result()

            await asyncio.to_thread(check, write)

    asyncio.run(main())


def cluster_replica_of(cluster: launchers.RedisCluster, primary: Any) -> Any:
    primary_id = cluster.node_command(primary, "CLUSTER", "MYID")
    for node in cluster.nodes:
        if not node.running() or node is primary:
            continue
        replication = str(cluster.node_command(node, "INFO", "replication"))
        if f"master_port:{primary.port}" in replication:
            return node
    raise AssertionError(f"no replica of {primary_id}")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "asyncio"])
def test_cluster_client(
    redis_cluster: launchers.RedisCluster, cluster_key: str, asynchronous: bool
) -> None:
    from redis_leaderboard import _core

    owner = redis_cluster.owner(_core.key_slot(cluster_key))
    replica = cluster_replica_of(redis_cluster, owner)
    options: dict[str, Any] = {"min_replicas": 1, "replica_timeout": TIMEOUT}

    def replica_has(user: str) -> Optional[float]:
        # READONLY, then ZSCORE, on one connection (a cluster replica redirects reads without).
        with socket.create_connection((replica.host, replica.port), timeout=5) as s:
            command = ["ZSCORE", cluster_key, user]
            wire = (
                "*1\r\n$8\r\nREADONLY\r\n"
                + f"*{len(command)}\r\n"
                + "".join(f"${len(part)}\r\n{part}\r\n" for part in command)
            )
            s.sendall(wire.encode())
            reply = b""
            while reply.count(b"\r\n") < 2 or (
                reply.split(b"\r\n")[1].startswith(b"$") and reply.count(b"\r\n") < 3
            ):
                chunk = s.recv(4096)
                assert chunk, "the replica closed the connection"
                reply += chunk
        lines = reply.split(b"\r\n")
        assert lines[0] == b"+OK", reply
        return None if lines[1] == b"$-1" else float(lines[2])

    def check(write: Any, read: Any) -> None:
        write("ada", 5)
        assert replica_has("ada") == 5.0
        with paused(replica, owner):
            with pytest.raises(NotReplicatedError) as raised:
                write("ada", 1)
            assert raised.value.min_replicas == 1
            assert read("ada") == 1  # reads do not wait
        assert float(redis_cluster.node_command(owner, "ZSCORE", cluster_key, "ada")) == 6.0

    if not asynchronous:
        with ClusterClient(redis_cluster.startup_nodes, **options) as client:
            board = RedisLeaderboard(client, key=cluster_key)
            check(board.increment_score, board.get_rank)
        return

    import asyncio

    async def main() -> None:
        async with aio.ClusterClient(redis_cluster.startup_nodes, **options) as client:
            board = aio.RedisLeaderboard(client, key=cluster_key)
            loop = asyncio.get_running_loop()

            def call(coroutine: Any) -> Any:
                return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

            await asyncio.to_thread(
                check,
                lambda user, score: call(board.increment_score(user, score)),
                lambda user: call(board.get_rank(user)),
            )

    asyncio.run(main())
