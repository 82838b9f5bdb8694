"""Shared fixtures: a private redis-server for the whole test session.

Every test talks to a real ``redis-server`` started here (by the package's launcher,
``redis_leaderboard._redis_server``) on a free port, in a temporary directory, and stopped at
the end. The machine's own Redis (port 6379) is never touched.

The server under test is ``$REDIS_LEADERBOARD_SERVER`` if set (any Redis 7.0+ or Valkey 7.2+
server binary; sentinels are the same binary run with ``--sentinel`` unless
``$REDIS_LEADERBOARD_SENTINEL`` names one; ``$REDIS_LEADERBOARD_CLI`` the cluster tool), else
``redis-server`` (or ``valkey-server``) from PATH; the header of the run names it and its real
version. ``tests/servers/fetch.sh`` fetches the matrix's servers. Tests of behaviour that differs
between servers ask the ``server_version`` fixture. A server built without TLS skips the TLS
tests.

Board tests (tests/boards/, one file per method family) take the ``api`` fixture: each runs over
the sync API and the asyncio API on each event loop (tests/apis.py). Helpers shared by several
files (result shapes, ``FakeClock``, snapshots, ``ReplyDropper``) are in tests/helpers.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import sys
import uuid
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, TypeVar

import pytest
import pytest_asyncio

import launchers
import server_clock
from apis import Api, Runner
from helpers import COMPACT, TEST_LAYOUT, FakeClock
from redis_leaderboard import _redis_server

ROOT = Path(__file__).resolve().parent.parent
# The guide's reference algorithm lives in benchmarks/ and is shared with the tests.
sys.path.insert(0, str(ROOT))


class RedisServer(_redis_server.RedisServer):
    """The package's private redis-server (free 127.0.0.1 port, a unix socket, temporary
    directory, no persistence), started at once, with a redis-py client for checks."""

    def __init__(
        self,
        *,
        password: Optional[str] = None,
        extra_args: Sequence[str] = (),
        tls: Optional[_redis_server.TlsFiles] = None,
        binary: Optional[str] = None,
    ) -> None:
        try:
            super().__init__(
                binary=binary,
                password=password,
                unix_socket=True,
                tls=tls,
                extra_args=extra_args,
                dir_prefix="redis-leaderboard-test-",
                env=server_clock.ENV,  # the clock tests move (tests/server_clock.py)
            )
        except _redis_server.RedisServerError as exc:
            pytest.exit(f"{exc} (apt-get install -y redis-server)", returncode=2)
        try:
            self.start()
        except _redis_server.TlsUnsupported as exc:
            pytest.skip(str(exc))

    def redis_py(self, **kwargs: object):  # -> redis.Redis
        """A redis-py client on this server (decode_responses, as the guide uses)."""
        import redis

        return redis.Redis(
            host=self.host,
            port=self.port,
            password=self.password,
            decode_responses=True,
            **kwargs,  # type: ignore[arg-type]
        )


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Which server the run tests (its binary, and its name and real version), and which board
    layout (tests/helpers.py)."""
    layout = f"board layout: {TEST_LAYOUT} (LB_TEST_LAYOUT)"
    try:
        binary = _redis_server.find_server()
    except _redis_server.RedisServerError as exc:
        return [f"server: {exc}", layout]
    try:
        with _redis_server.RedisServer(binary=binary, dir_prefix="redis-leaderboard-test-") as s:
            return [f"server: {s.server_version()} ({binary})", layout]
    except Exception as exc:  # the fixtures report it properly
        return [f"server: {binary}: {exc}", layout]


# --- The compatibility subset ---------------------------------------------------------------------
# tests/servers/compat.txt lists the tests .ci/matrix runs against every server of the matrix;
# they are marked ``compat`` here (``pytest -m compat``), so the list is the one place that says
# what the matrix covers.

COMPAT_LIST = ROOT / "tests" / "servers" / "compat.txt"


def compat_entries() -> list[str]:
    """The entries of the compatibility list (file, file::test or file::test[id prefix])."""
    lines = COMPAT_LIST.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def in_compat_entry(nodeid: str, entry: str) -> bool:
    if "[" in entry:  # one parametrization, or those whose id starts so
        return nodeid.startswith(entry)
    return nodeid == entry or nodeid.startswith((entry + "::", entry + "["))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "guide_layout(reason): a test of the guide's layout itself, deselected when the board "
        "tests run in the compact layout (LB_TEST_LAYOUT=compact, tests/helpers.py)",
    )


def deselect_guide_layout_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the compact run, the tests marked ``guide_layout`` leave the run (deselected, so
    counted as such); every ``guide_layout`` mark must give its reason."""
    kept, guide_only = [], []
    for item in items:
        mark = item.get_closest_marker("guide_layout")
        if mark is None:
            kept.append(item)
            continue
        if not (mark.args or mark.kwargs.get("reason")):
            raise pytest.UsageError(f"{item.nodeid}: guide_layout needs a reason")
        guide_only.append(item)
    if COMPACT and guide_only:
        config.hook.pytest_deselected(items=guide_only)
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_compat_subset(config, items)
    deselect_guide_layout_tests(config, items)  # after: the list names them in either run


def mark_compat_subset(config: pytest.Config, items: list[pytest.Item]) -> None:
    entries = compat_entries()
    matched: set[str] = set()
    for item in items:
        for entry in entries:
            if in_compat_entry(item.nodeid, entry):
                matched.add(entry)
                # A test run on both event loops runs on asyncio's only: servers do not see
                # the loop (the full suite runs both).
                if "uvloop" not in item.nodeid.partition("[")[2]:
                    item.add_marker(pytest.mark.compat)
    # When the run selects the subset from whole files, an entry of a collected file that
    # matches nothing is a test renamed or removed.
    if "compat" not in (config.option.markexpr or "") or any("::" in a for a in config.args):
        return
    files = {item.nodeid.split("::", 1)[0] for item in items}
    stale = [e for e in entries if e not in matched and e.split("::", 1)[0] in files]
    if stale:
        raise pytest.UsageError(
            f"{COMPAT_LIST.relative_to(ROOT)} names tests that do not exist: {', '.join(stale)}"
        )


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """The session's shared private redis-server."""
    server = RedisServer()
    FakeClock.movable = server_clock.movable(server.redis_py(), server.port)
    yield server
    server.cleanup()


@pytest.fixture(autouse=True)
def _real_server_clock() -> Iterator[None]:
    """Each test starts and ends with the servers on the real clock (a FakeClock moves them)."""
    if server_clock.moved():
        server_clock.reset()
    yield
    if server_clock.moved():
        server_clock.reset()


@pytest.fixture(scope="session")
def server_version(redis_server: RedisServer) -> _redis_server.ServerVersion:
    """The server under test's name and real version (``server_version.at_least("redis", 7,
    4)``): for the few behaviours that differ between servers."""
    return redis_server.server_version()


@pytest.fixture
def fresh_redis_server() -> Iterator[RedisServer]:
    """A private redis-server for one test: for tests that kill, pause or restart it."""
    server = RedisServer()
    yield server
    server.cleanup()


@pytest.fixture
def password_redis_server() -> Iterator[RedisServer]:
    """A private redis-server that requires a password."""
    server = RedisServer(password="s3cret-pass")
    yield server
    server.cleanup()


@pytest.fixture(scope="module")
def acl_server() -> Iterator[RedisServer]:
    """A private server for ACL users (created with ACL SETUSER by each test), per module."""
    server = RedisServer()
    yield server
    server.cleanup()


@contextlib.contextmanager
def unique_key(server: RedisServer, prefix: str = "test") -> Iterator[str]:
    """A board key unique to the test; the board and every key under it are removed after."""
    key = f"{prefix}:{uuid.uuid4().hex[:12]}"
    yield key
    r = server.redis_py()
    try:
        names = list(r.scan_iter(match=f"{key}*", count=1000))
        if names:
            r.delete(*names)
    finally:
        r.close()


@pytest.fixture
def board_key(redis_server: RedisServer) -> Iterator[str]:
    """A board key unique to the test; the board and its metadata hashes are removed after."""
    with unique_key(redis_server) as key:
        yield key


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[object]:
    """A redis_leaderboard.Client on the session's server."""
    import redis_leaderboard

    c = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    yield c
    c.close()


@pytest.fixture
def board(client: object, board_key: str) -> object:
    """A RedisLeaderboard with the guide's default max_entries=100 on a fresh key."""
    import redis_leaderboard

    return redis_leaderboard.RedisLeaderboard(client, key=board_key, max_entries=100)


@pytest_asyncio.fixture
async def aclient(redis_server: RedisServer) -> AsyncIterator[Any]:
    """A redis_leaderboard.asyncio.Client on the session's server, closed after the test (with
    nothing left pending)."""
    from redis_leaderboard.asyncio import Client

    client = Client(host=redis_server.host, port=redis_server.port)
    yield client
    await client.aclose()
    assert client._core.pending == 0


@pytest.fixture
def r(redis_server: RedisServer) -> Iterator[Any]:
    """redis-py on the session's server, to look at what a board wrote."""
    client = redis_server.redis_py()
    yield client
    client.close()


# --- Event loops ----------------------------------------------------------------------------------
# The asyncio client is driven by the event loop it runs on (add_reader, add_writer, call_later,
# create_future), so its tests run on asyncio's own loop and on uvloop: every pytest-asyncio test
# (through pytest-asyncio's loop factories), and the tests that run their own loops through the
# ``loop_name`` / ``loop_factory`` / ``arun`` fixtures below. uvloop comes with the test extra.

T = TypeVar("T")
LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def new_uvloop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        pytest.fail("uvloop is not installed (pip install '.[test]'): asyncio tests run on it too")
    return uvloop.new_event_loop()


EVENT_LOOPS: dict[str, LoopFactory] = {"asyncio": asyncio.new_event_loop, "uvloop": new_uvloop}


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, LoopFactory]:
    return EVENT_LOOPS


@pytest.fixture(params=list(EVENT_LOOPS))
def loop_name(request: pytest.FixtureRequest) -> str:
    """Each event loop in turn: ``asyncio`` (the standard library's) and ``uvloop``."""
    return str(request.param)


@pytest.fixture
def loop_factory(loop_name: str) -> LoopFactory:
    """Makes a new event loop of the kind under test."""
    return EVENT_LOOPS[loop_name]


@pytest.fixture
def arun(loop_factory: LoopFactory) -> Callable[[Coroutine[Any, Any, T]], T]:
    """``asyncio.run`` on the loop under test (asyncio.run's own ``loop_factory`` is 3.12+)."""

    def run(main: Coroutine[Any, Any, T]) -> T:
        with Runner(loop_factory=loop_factory) as runner:
            return runner.run(main)

    return run


@pytest.fixture(params=["sync", *EVENT_LOOPS])
def api(request: pytest.FixtureRequest, redis_server: RedisServer) -> Iterator[Api]:
    """Each API in turn, with a client on the session's server: ``sync``, then the asyncio API
    on each event loop (``asyncio``, ``uvloop``). A board test takes it to run over both APIs
    (tests/apis.py); ``@sync_and_one_loop`` leaves uvloop out."""
    name = str(request.param)
    api = Api(name, redis_server.host, redis_server.port, EVENT_LOOPS.get(name))
    yield api
    api.close()


def watched_fds(loop: asyncio.AbstractEventLoop) -> set[int]:
    """The descriptors the loop watches: asyncio's selector's, or (uvloop: libuv's epoll, which
    it does not expose) every epoll instance's of this process, read from /proc."""
    selector = getattr(loop, "_selector", None)
    if selector is not None:
        return {key.fd for key in selector.get_map().values()}
    found: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:[eventpoll]":
                continue
            with open(f"/proc/self/fdinfo/{fd}") as info:
                found |= {int(line.split()[1]) for line in info if line.startswith("tfd:")}
        except OSError:  # closed meanwhile
            continue
    return found


# --- TLS -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Certificates:
    """PEM files made by ``trustme`` for the session: a CA and, signed by it, server
    certificates for 127.0.0.1/localhost (good, expired, for another host) and a client
    certificate (its key also encrypted, with ``client_key_password``); ``other_ca`` signed
    none of them."""

    dir: Path
    ca: str
    other_ca: str
    server_cert: str
    server_key: str
    expired_cert: str
    expired_key: str
    wrong_host_cert: str
    wrong_host_key: str
    client_cert: str
    client_key: str
    client_key_encrypted: str
    client_key_password: str = "client-key-pass"

    def server_files(self, kind: str = "server", auth_clients: bool = False):  # -> TlsFiles
        return _redis_server.TlsFiles(
            cert_file=getattr(self, f"{kind}_cert"),
            key_file=getattr(self, f"{kind}_key"),
            ca_file=self.ca,
            auth_clients=auth_clients,
        )


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    trustme = pytest.importorskip("trustme")
    from cryptography.hazmat.primitives import serialization

    root = tmp_path_factory.mktemp("tls")
    ca, other_ca = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    other_ca.cert_pem.write_to_path(str(root / "other-ca.pem"))
    now = datetime.datetime.now(datetime.timezone.utc)
    issued = {
        "server": ca.issue_cert("127.0.0.1", "localhost"),
        "expired": ca.issue_cert(
            "127.0.0.1",
            "localhost",
            not_before=now - datetime.timedelta(days=30),
            not_after=now - datetime.timedelta(days=1),
        ),
        "wrong_host": ca.issue_cert("redis.example.com"),
        "client": ca.issue_cert("client@example.com", common_name="leaderboard-client"),
    }
    paths: dict[str, str] = {}
    for name, leaf in issued.items():
        leaf.cert_chain_pems[0].write_to_path(str(root / f"{name}.crt"))
        leaf.private_key_pem.write_to_path(str(root / f"{name}.key"))
        paths[f"{name}_cert"] = str(root / f"{name}.crt")
        paths[f"{name}_key"] = str(root / f"{name}.key")
    key = serialization.load_pem_private_key(issued["client"].private_key_pem.bytes(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(Certificates.client_key_password.encode()),
    )
    (root / "client-encrypted.key").write_bytes(encrypted)
    return Certificates(
        dir=root,
        ca=str(root / "ca.pem"),
        other_ca=str(root / "other-ca.pem"),
        client_key_encrypted=str(root / "client-encrypted.key"),
        **paths,
    )


@pytest.fixture(scope="session")
def tls_redis_server(certificates: Certificates) -> Iterator[RedisServer]:
    """A private redis-server with a TLS port (``tls_port``; its certificate is for
    127.0.0.1 and localhost, from ``certificates.ca``) besides its plaintext one."""
    server = RedisServer(tls=certificates.server_files())
    yield server
    server.cleanup()


# --- Sentinel ------------------------------------------------------------------------------------

SENTINEL_SERVICE = "mymaster"
DATA_PASSWORD = "data-pass"
SENTINEL_PASSWORD = "sentinel-pass"


class SentinelTopology:
    """One primary, one replica and three sentinels (quorum 2) on loopback, started by the
    test suite (``redis-sentinel`` from PATH, or the server binary with ``--sentinel``). The data
    nodes require ``DATA_PASSWORD``, the sentinels ``SENTINEL_PASSWORD``; a failover starts
    ``down_after_ms`` after the primary stops answering."""

    def __init__(self, down_after_ms: int = 1000) -> None:
        auth = ["--masterauth", DATA_PASSWORD]
        self.primary = RedisServer(password=DATA_PASSWORD, extra_args=auth)
        self.replica = RedisServer(
            password=DATA_PASSWORD,
            extra_args=[*auth, "--replicaof", self.primary.host, str(self.primary.port)],
        )
        self.sentinels: list[launchers.RedisSentinel] = []
        try:
            for _ in range(3):
                sentinel = launchers.RedisSentinel(
                    self.primary.port,
                    service_name=SENTINEL_SERVICE,
                    down_after_ms=down_after_ms,
                    failover_timeout_ms=5000,
                    auth_pass=DATA_PASSWORD,
                    password=SENTINEL_PASSWORD,
                    dir_prefix="redis-leaderboard-test-sentinel-",
                )
                self.sentinels.append(sentinel)
                sentinel.start()
            self.wait_until_ready()
        except BaseException:
            self.cleanup()
            raise

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [(s.host, s.port) for s in self.sentinels]

    def sentinel_py(self, index: int = 0):  # -> redis.Redis
        import redis

        s = self.sentinels[index]
        return redis.Redis(host=s.host, port=s.port, password=SENTINEL_PASSWORD,
                           decode_responses=True, socket_timeout=2)  # fmt: skip

    def primary_port(self) -> int:
        with self.sentinel_py() as r:
            return int(
                r.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_SERVICE)[1]
            )

    def wait_until_ready(self, timeout: float = 20.0) -> None:
        """Until every sentinel knows the replica and the two other sentinels (hello messages
        come every 2 s), so that a failover can get its quorum."""
        import time

        deadline = time.monotonic() + timeout
        for index in range(len(self.sentinels)):
            with self.sentinel_py(index) as r:
                while True:
                    state = r.execute_command("SENTINEL", "MASTER", SENTINEL_SERVICE)
                    fields = (
                        state if isinstance(state, dict) else dict(zip(state[::2], state[1::2]))
                    )
                    if int(fields["num-other-sentinels"]) >= 2 and int(fields["num-slaves"]) >= 1:
                        break
                    if time.monotonic() > deadline:
                        pytest.fail(f"the sentinels did not see each other: {fields}")
                    time.sleep(0.1)
        with self.replica.redis_py() as r:  # the replica holds the primary's data
            while r.info("replication").get("master_link_status") != "up":
                if time.monotonic() > deadline:
                    pytest.fail("the replica did not sync")
                time.sleep(0.05)

    def cleanup(self) -> None:
        for server in [*self.sentinels, self.primary, self.replica]:
            server.cleanup()


@pytest.fixture
def sentinel_topology() -> Iterator[SentinelTopology]:
    """A fresh primary, replica and three sentinels for one test (failovers change them)."""
    try:
        launchers.find_sentinel()
    except _redis_server.RedisServerError as exc:
        pytest.exit(f"{exc} (apt-get install -y redis-sentinel)", 2)
    topology = SentinelTopology()
    yield topology
    topology.cleanup()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[launchers.RedisCluster]:
    """A Redis Cluster of 3 primaries and 3 replicas on loopback, for the whole session
    (``cluster-node-timeout`` 1000 ms, so a failover takes about 2 s). Tests that kill a node
    restart it and wait until the cluster is healthy again before they end."""
    try:
        cluster = launchers.RedisCluster(
            3, 1, node_timeout_ms=1000, dir_prefix="redis-leaderboard-test-cluster-"
        )
    except _redis_server.RedisServerError as exc:
        pytest.exit(f"{exc} (apt-get install -y redis-server redis-tools)", returncode=2)
    cluster.start()
    yield cluster
    cluster.cleanup()


@pytest.fixture
def cluster_key(redis_cluster: launchers.RedisCluster) -> str:
    """A hash-tagged board key unique to the test, in a slot that holds no key yet (the
    cluster's boards are left in place, each test using its own tag: a random tag met another
    test's slot about once in a hundred migration tests, and a test counting or migrating the
    keys of its slot then saw those too)."""
    from redis_leaderboard import _core

    while True:
        key = f"{{t{uuid.uuid4().hex[:12]}}}:board"
        slot = _core.key_slot(key)
        if (
            redis_cluster.node_command(
                redis_cluster.owner(slot), "CLUSTER", "COUNTKEYSINSLOT", slot
            )
            == 0
        ):
            return key
