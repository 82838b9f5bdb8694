"""Observability: OpenTelemetry metrics and spans (``redis_leaderboard.observability``) and the
log records of what the clients see (``redis_leaderboard._logs``).

Read with the OpenTelemetry SDK's in-memory reader and exporter, on real servers: every
method records one duration with the method's name, an error records ``error.type``, no user
id or key is in any attribute; a killed connection, a Sentinel failover (SIGKILL of the
primary) and a cluster slot migration each show in the counters and the log records. The
counters are the process's, so each test reads them before and after.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import redis_leaderboard
import redis_leaderboard.asyncio as aio
from apis import Api, sync_and_one_loop
from conftest import (
    DATA_PASSWORD,
    SENTINEL_PASSWORD,
    SENTINEL_SERVICE,
    RedisServer,
    SentinelTopology,
)
from launchers import RedisCluster
from redis_leaderboard import _core, _drive, _logs, observability


class Telemetry:
    """An SDK meter provider and tracer provider, read in memory."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])
        self.spans = InMemorySpanExporter()
        self.tracers = TracerProvider()
        self.tracers.add_span_processor(SimpleSpanProcessor(self.spans))

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        out: list[Any] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        out.extend(metric.data.data_points)
        return out

    def calls(self) -> dict[tuple[str, str], int]:
        """(method, error.type or "") -> calls recorded."""
        return {
            (p.attributes["db.operation.name"], p.attributes.get("error.type", "")): p.count
            for p in self.points("db.client.operation.duration")
        }

    def every_attribute_value(self) -> list[str]:
        data = self.reader.get_metrics_data()
        values: list[str] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        values.extend(str(v) for v in point.attributes.values())
        for span in self.spans.get_finished_spans():
            values.append(span.name)
            values.extend(str(v) for v in (span.attributes or {}).values())
            for event in span.events:
                values.extend(str(v) for v in (event.attributes or {}).values())
            values.append(str(span.status.description))
        return values


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    t = Telemetry()
    observability.instrument(t.meters, t.tracers)
    try:
        yield t
    finally:
        observability.uninstrument()


class Logs(logging.Handler):
    """The records of the redis_leaderboard loggers, from any thread."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def events(self) -> list[str]:
        return [getattr(r, "redis_leaderboard_event", "") for r in self.records]

    def wait_for(self, event: str, timeout: float = 10.0) -> logging.LogRecord:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _logs.flush()
            for record in list(self.records):
                if getattr(record, "redis_leaderboard_event", "") == event:
                    return record
            time.sleep(0.02)
        raise AssertionError(f"no {event!r} record; got {self.events()}")


@pytest.fixture
def logs() -> Iterator[Logs]:
    handler = Logs()
    logger = logging.getLogger("redis_leaderboard")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def counted(before: dict[str, int]) -> dict[str, int]:
    """What the process's counters gained since ``before``."""
    now = _core.observed()
    return {k: now[k] - before[k] for k in now if k != "open_connections"}


# ---- Switching it on and off ------------------------------------------------------------------


def test_off_every_method_is_the_one_made_without_instrumentation() -> None:
    assert not observability.is_instrumented()
    for installed in _drive.INSTALLED:
        cls = installed.cls()
        assert cls is not None
        assert cls.__dict__[installed.name] is installed.method, installed


def test_on_every_method_is_timed_and_off_again_untouched(telemetry: Telemetry) -> None:
    assert observability.is_instrumented()
    wrapped = 0
    for installed in _drive.INSTALLED:
        cls = installed.cls()
        assert cls is not None
        method = cls.__dict__[installed.name]
        assert method is not installed.method
        assert method.__wrapped__ is installed.method
        assert asyncio.iscoroutinefunction(method) == (not installed.sync)
        wrapped += 1
    # Both APIs, every board type.
    names = {i.name for i in _drive.INSTALLED}
    assert {"get_rank", "upsert_user", "submit", "standings", "team_members"} <= names
    assert wrapped > 200
    observability.uninstrument()
    for installed in _drive.INSTALLED:
        cls = installed.cls()
        assert cls is not None and cls.__dict__[installed.name] is installed.method


def test_a_class_made_while_on_is_timed() -> None:
    class Mine(redis_leaderboard.RedisLeaderboard):
        pass

    t = Telemetry()
    observability.instrument(t.meters, spans=False)
    try:

        class Later(redis_leaderboard.boards.plain.LeaderboardBase[Any], _drive.SyncDriven):  # type: ignore[misc]
            pass

        assert Later.__dict__["get_rank"].__wrapped__ is not None
    finally:
        observability.uninstrument()
    assert "__wrapped__" not in vars(Later.__dict__["get_rank"])
    assert Mine.get_rank is redis_leaderboard.RedisLeaderboard.get_rank


# ---- What a call records ----------------------------------------------------------------------


def test_every_call_records_one_duration_with_its_method(
    api: Api, board_key: str, telemetry: Telemetry
) -> None:
    board = api.leaderboard(board_key, 100)
    board.upsert_user("alice", 10, {"country": "NO"})
    board.increment_score("bob", 5)
    board.submit("carol", 7, mode="best")
    for _ in range(3):
        board.get_rank("alice")
    board.get_top(10)
    board.get_user_entry("bob")
    board.get_around_user("bob", 2)  # a query of several steps: one call, one duration
    board.upsert_many([("dave", 1, {}), ("erin", 2, {})])
    board.delete_user("dave")
    calls = telemetry.calls()
    assert calls == {
        ("upsert_user", ""): 1,
        ("increment_score", ""): 1,
        ("submit", ""): 1,
        ("get_rank", ""): 3,
        ("get_top", ""): 1,
        ("get_user_entry", ""): 1,
        ("get_around_user", ""): 1,
        ("upsert_many", ""): 1,
        ("delete_user", ""): 1,
    }
    for point in telemetry.points("db.client.operation.duration"):
        attributes = dict(point.attributes)
        assert attributes["db.system.name"] == "redis"
        assert attributes["redis_leaderboard.board"] == "RedisLeaderboard"
        assert attributes["server.port"] == int(api.client.address().rpartition(":")[2])
        assert "db.collection.name" not in attributes
        assert 0 < point.sum < 5 and point.min <= point.max
    spans = telemetry.spans.get_finished_spans()
    assert len(spans) == sum(calls.values())
    assert all(s.kind == SpanKind.CLIENT for s in spans)
    assert [s.name for s in spans][:2] == ["upsert_user", "increment_score"]


@sync_and_one_loop
def test_a_board_made_of_boards_records_the_outer_call_once(
    api: Api, board_key: str, telemetry: Telemetry
) -> None:
    board = api.periodic(board_key, "day")
    board.submit("alice", 3)
    board.get_rank("alice")  # the current period's board answers: recorded once, as this call
    assert telemetry.calls() == {("submit", ""): 1, ("get_rank", ""): 1}
    assert {
        p.attributes["redis_leaderboard.board"]
        for p in telemetry.points("db.client.operation.duration")
    } == {"PeriodicLeaderboard"}


def test_an_error_records_its_type(api: Api, board_key: str, telemetry: Telemetry) -> None:
    board = api.leaderboard(board_key, 100, rate_limit=(1, 60))
    board.submit("alice", 1)
    with pytest.raises(redis_leaderboard.RateLimited):
        board.submit("alice", 2)
    with pytest.raises(ValueError):
        board.upsert_user("alice", float("nan"))
    first = board.submit("bob", 1, submission_id="s-1")
    assert board.submit("bob", 1, submission_id="s-1") == {**first, "duplicate": True}
    assert telemetry.calls() == {
        ("submit", ""): 3,
        ("submit", "redis_leaderboard.RateLimited"): 1,
        ("upsert_user", "ValueError"): 1,
    }
    (limited,) = telemetry.points("redis_leaderboard.client.rate_limited")
    assert limited.value == 1 and limited.attributes["db.operation.name"] == "submit"
    (duplicates,) = telemetry.points("redis_leaderboard.client.duplicates")
    assert duplicates.value == 1
    failed = [
        s for s in telemetry.spans.get_finished_spans() if s.status.status_code == StatusCode.ERROR
    ]
    assert sorted(s.attributes["error.type"] for s in failed) == [
        "ValueError",
        "redis_leaderboard.RateLimited",
    ]


@sync_and_one_loop
def test_no_user_id_or_key_in_any_attribute(api: Api, board_key: str, telemetry: Telemetry) -> None:
    secret_user = "user-7f3a9c"
    board = api.leaderboard(board_key, 100, rate_limit=(1, 60), score_range=(0, 100))
    board.submit(secret_user, 5, {"email": "someone@example.org"}, submission_id="sub-9d2e")
    board.get_rank(secret_user)
    with pytest.raises(redis_leaderboard.RateLimited):
        board.submit(secret_user, 6)
    with pytest.raises(redis_leaderboard.ScoreRejected):
        board.upsert_user(secret_user + "-2", 1e9)
    values = telemetry.every_attribute_value()
    assert values
    for value in values:
        for secret in (secret_user, board_key, "someone@example.org", "sub-9d2e", "1000000000"):
            assert secret not in value, (secret, value)


def test_keys_only_when_asked(board_key: str, redis_server: RedisServer) -> None:
    t = Telemetry()
    observability.instrument(t.meters, spans=False, record_keys=True)
    try:
        board = redis_leaderboard.RedisLeaderboard(
            url=f"redis://{redis_server.host}:{redis_server.port}/0", key=board_key
        )
        board.get_size()
    finally:
        observability.uninstrument()
    (point,) = t.points("db.client.operation.duration")
    assert point.attributes["db.collection.name"] == board_key


def test_the_counters_are_the_process_clients(
    board_key: str, redis_server: RedisServer, telemetry: Telemetry
) -> None:
    before = _core.observed()
    client = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    board = redis_leaderboard.RedisLeaderboard(client, key=board_key)
    board.upsert_user("alice", 1)
    board.get_rank("alice")
    stats = client.stats()
    client.close()
    del board, client  # a closed client's counts stay in the totals
    gained = counted(before)
    assert gained["round_trips"] >= stats["round_trips"] == 2
    assert gained["connections"] >= 1
    (open_now,) = telemetry.points("redis_leaderboard.client.connection.count")
    assert open_now.value == _core.observed()["open_connections"]
    (round_trips,) = telemetry.points("redis_leaderboard.client.round_trips")
    assert round_trips.value >= before["round_trips"] + 2


def test_a_script_reload_is_counted_and_logged(
    board_key: str, fresh_redis_server: RedisServer, logs: Logs
) -> None:
    board = redis_leaderboard.RedisLeaderboard(
        url=f"redis://{fresh_redis_server.host}:{fresh_redis_server.port}/0", key=board_key
    )
    board.upsert_user("alice", 1)
    board.redis.execute_command("SCRIPT", "FLUSH")
    # The first call on a new server (EVALSHA, NOSCRIPT, EVAL) loads it: not a reload.
    _logs.flush()
    assert "script_reload" not in logs.events()
    before = _core.observed()
    board.upsert_user("alice", 2)
    assert counted(before)["script_reload"] == 1
    record = logs.wait_for("script_reload")
    assert record.name == "redis_leaderboard.scripts" and record.levelno == logging.INFO
    assert record.getMessage() == "script write loaded again after NOSCRIPT"


# ---- Faults -----------------------------------------------------------------------------------


def test_a_killed_connection_is_counted_and_logged(
    board_key: str, fresh_redis_server: RedisServer, logs: Logs, arun: Callable[..., Any]
) -> None:
    server = fresh_redis_server
    url = f"redis://{server.host}:{server.port}/0"

    async def main() -> dict[str, int]:
        async with aio.Client.from_url(url) as client:
            board = aio.RedisLeaderboard(client, key=board_key)
            await board.upsert_user("alice", 1)
            before = _core.observed()
            with server.redis_py() as r:
                assert r.client_kill_filter(_type="normal", skipme=True) >= 1
            deadline = time.monotonic() + 5
            while counted(before)["connection_lost"] == 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)  # the loop sees the socket close
            assert await board.get_rank("alice") == 1  # on a new connection
            return counted(before)

    gained = arun(main())
    assert gained["connection_lost"] == 1 and gained["reconnected"] == 1
    assert gained["reconnects"] == 1
    lost = logs.wait_for("connection_lost")
    assert lost.name == "redis_leaderboard.connection" and lost.levelno == logging.WARNING
    assert logs.wait_for("reconnected").getMessage().endswith(f"{server.host}:{server.port}")

    # The sync client finds its pooled connection closed before reusing it.
    board = redis_leaderboard.RedisLeaderboard(url=url, key=board_key)
    board.get_rank("alice")
    before = _core.observed()
    with server.redis_py() as r:
        r.client_kill_filter(_type="normal", skipme=True)
    assert board.get_rank("alice") == 1
    assert counted(before)["reconnected"] == 1


def test_a_resend_and_a_read_retry_are_counted_and_logged(
    board_key: str, redis_server: RedisServer, logs: Logs, telemetry: Telemetry
) -> None:
    from test_read_retry import DroppingProxy

    with DroppingProxy((redis_server.host, redis_server.port)) as proxy:
        board = redis_leaderboard.RedisLeaderboard(
            url=f"redis://{proxy.host}:{proxy.port}/0?socket_timeout=5", key=board_key
        )
        board.submit("ada", 1, submission_id="warm-up")
        before = _core.observed()
        proxy.drops = 1  # the reply is lost: sent again, applied once
        assert board.submit("ada", 5, mode="incr", submission_id="run-1")["score"] == 6
        proxy.drops = 1
        assert board.get_rank("ada") == 1
        gained = counted(before)
        assert gained["resend"] == 1 and gained["read_retry"] == 1
        assert gained["connection_lost"] == 2 and gained["reconnected"] == 2
    resend = logs.wait_for("resend")
    assert resend.name == "redis_leaderboard.retries" and resend.levelno == logging.WARNING
    assert resend.getMessage().endswith(f": submit on {proxy.host}:{proxy.port}")
    assert (
        logs.wait_for("read_retry")
        .getMessage()
        .endswith(f": get_rank on {proxy.host}:{proxy.port}")
    )
    (resends,) = telemetry.points("redis_leaderboard.client.resends")
    assert resends.value >= 1
    # One call each, whatever it took.
    assert telemetry.calls()[("submit", "")] == 2 and telemetry.calls()[("get_rank", "")] == 1


def test_a_timeout_is_counted_and_logged(
    board_key: str, fresh_redis_server: RedisServer, logs: Logs, telemetry: Telemetry
) -> None:
    server = fresh_redis_server
    board = redis_leaderboard.RedisLeaderboard(
        url=f"redis://{server.host}:{server.port}/0?socket_timeout=0.2", key=board_key
    )
    board.upsert_user("alice", 1)
    before = _core.observed()
    server.pause()
    try:
        with pytest.raises(redis_leaderboard.TimeoutError):
            board.get_rank("alice")
    finally:
        server.resume()
    assert counted(before)["timeout"] >= 1
    record = logs.wait_for("timeout")
    assert record.getMessage() == f"timeout reading from {server.host}:{server.port}"
    assert ("get_rank", "redis_leaderboard.TimeoutError") in telemetry.calls()


def test_a_sentinel_failover_is_counted_and_logged(
    sentinel_topology: SentinelTopology, logs: Logs
) -> None:
    topology = sentinel_topology
    client = redis_leaderboard.Client.from_sentinel(
        topology.addresses,
        SENTINEL_SERVICE,
        sentinel_password=SENTINEL_PASSWORD,
        password=DATA_PASSWORD,
        socket_timeout=1,
    )
    board = redis_leaderboard.RedisLeaderboard(client, key="lb:observed-failover")
    board.upsert_user("alice", 1)
    before = _core.observed()
    topology.primary.kill()  # SIGKILL
    deadline = time.monotonic() + 30
    while counted(before)["failover"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    written = None
    while written is None and time.monotonic() < deadline:
        try:
            written = board.upsert_user("bob", 2)
        except redis_leaderboard.RedisError:
            time.sleep(0.1)
    client.close()
    assert written is not None, "no write reached the new primary"
    gained = counted(before)
    assert gained["failover"] >= 1 and gained["reconnected"] >= 1
    record = logs.wait_for("failover")
    assert record.name == "redis_leaderboard.failover" and record.levelno == logging.WARNING
    assert f"-> {topology.replica.host}:{topology.replica.port}" in record.getMessage()
    assert DATA_PASSWORD not in record.getMessage() and SENTINEL_PASSWORD not in record.getMessage()


def test_a_slot_migration_is_counted_and_logged(
    redis_cluster: RedisCluster, cluster_key: str, logs: Logs, telemetry: Telemetry
) -> None:
    from test_cluster_migration import Migration

    client = redis_leaderboard.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5)
    try:
        board = redis_leaderboard.RedisLeaderboard(client, key=cluster_key)
        board.upsert_user("alice", 1)
        before = _core.observed()
        migration = Migration(redis_cluster, _core.key_slot(cluster_key))
        migration.open()
        migration.finish()
        assert board.get_rank("alice") == 1  # MOVED, followed
        deadline = time.monotonic() + 5
        while counted(before)["topology_change"] == 0 and time.monotonic() < deadline:
            time.sleep(0.15)
            assert board.get_rank("alice") == 1  # a stale map is read again (at most every 100 ms)
        gained = counted(before)
        assert gained["moved"] >= 1 and gained["topology_change"] >= 1
        moved = logs.wait_for("moved")
        assert moved.name == "redis_leaderboard.cluster"
        assert f"-> {migration.target.host}:{migration.target.port}" in moved.getMessage()
        logs.wait_for("topology_change")
        redirects = {
            p.attributes["redis_leaderboard.redirect.kind"]: p.value
            for p in telemetry.points("redis_leaderboard.client.redirects")
        }
        assert redirects["moved"] >= gained["moved"]
        assert "server.address" not in dict(
            telemetry.points("db.client.operation.duration")[0].attributes
        )
    finally:
        client.close()


def test_records_carry_no_credentials_or_keys(
    board_key: str, password_redis_server: RedisServer, logs: Logs
) -> None:
    server = password_redis_server
    board = redis_leaderboard.RedisLeaderboard(
        url=f"redis://:{server.password}@{server.host}:{server.port}/0", key=board_key
    )
    board.upsert_user("user-secret-1", 1)
    with server.redis_py() as r:
        r.script_flush()
        board.upsert_user("user-secret-1", 2)  # loaded again on the same connection
        r.client_kill_filter(_type="normal", skipme=True)
    board.upsert_user("user-secret-1", 3)
    logs.wait_for("script_reload")
    logs.wait_for("reconnected")
    for record in logs.records:
        text = record.getMessage()
        for secret in (server.password, board_key, "user-secret-1"):
            assert secret not in text, (secret, text)


def test_the_log_pump_starts_only_once_a_record_waits(fresh_redis_server: RedisServer) -> None:
    """A process whose clients meet no fault has one thread (a second one makes glibc take its
    slower path in every send, recv and poll), loading its scripts on a new server included;
    the first record starts the pump, at the end of the call that made it, and it logs."""
    redis_server = fresh_redis_server
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import logging, threading, time
        import redis_leaderboard
        from redis_leaderboard import asyncio as aio
        logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
        url = "redis://{redis_server.host}:{redis_server.port}/0"
        board = redis_leaderboard.RedisLeaderboard(url=url, key="pump:{time.time_ns()}")
        for i in range(20):
            board.upsert_user("u", i)
            board.get_rank("u")
        print("threads", [t.name for t in threading.enumerate()], flush=True)
        board.redis.execute_command("SCRIPT", "FLUSH")
        board.upsert_user("u", 99)  # NOSCRIPT: a record; the pump starts as the call ends
        print("threads", [t.name for t in threading.enumerate()], flush=True)
        time.sleep(0.5)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    lines = out.stdout.splitlines()
    assert lines == ["threads ['MainThread']", "threads ['MainThread', 'redis-leaderboard-logs']"]
    assert "redis_leaderboard.scripts script write loaded again after NOSCRIPT" in out.stderr


def test_a_forked_child_has_records_of_its_own() -> None:
    """A record waiting at fork() stays the parent's (the child neither logs it nor drains the
    parent's pipe), and the parent's pump keeps logging after the child made records."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import logging, os, time
        from redis_leaderboard import _core, _logs

        def fault():  # a record, made outside any call (no pump starts)
            core = _core.ConnectionCore()
            core.connected(0.0)
            core.received(b"!unasked\\r\\n", 0.0)

        fault()
        pid = os.fork()
        if pid == 0:
            records, _ = _core.take_records()
            fault()
            mine, _ = _core.take_records()
            print("child", len(records), len(mine), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        records, _ = _core.take_records()
        print("parent", len(records), flush=True)
        # The parent's pump, then a child that makes records: the parent's still reach it.
        seen = []
        handler = logging.Handler()
        handler.emit = lambda record: seen.append(record.redis_leaderboard_event)
        logging.getLogger("redis_leaderboard").addHandler(handler)
        _logs.start()
        pid = os.fork()
        if pid == 0:
            fault()
            _core.take_records()
            os._exit(0)
        os.waitpid(pid, 0)
        for _ in range(3):
            fault()
            time.sleep(0.2)
        deadline = time.monotonic() + 5
        while len(seen) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        print("pumped", seen, flush=True)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.splitlines() == [
        "child 0 1",
        "parent 1",
        "pumped ['connection_lost', 'connection_lost', 'connection_lost']",
    ], out.stderr


def test_instrument_again_keeps_every_counter(board_key: str, redis_server: RedisServer) -> None:
    t = Telemetry()
    board = redis_leaderboard.RedisLeaderboard(
        url=f"redis://{redis_server.host}:{redis_server.port}/0", key=board_key
    )
    try:
        observability.instrument(t.meters, spans=False)
        observability.instrument(t.meters, spans=False)  # the provider keeps the first ones
        board.get_size()
        assert len(t.points("redis_leaderboard.client.round_trips")) == 1
        assert len(t.points("redis_leaderboard.client.redirects")) == 2
        observability.uninstrument()
        assert t.points("redis_leaderboard.client.round_trips") == []
        observability.instrument(t.meters, spans=False)
        assert len(t.points("redis_leaderboard.client.round_trips")) == 1
        other = Telemetry()  # another provider: the first one's counters stop
        observability.instrument(other.meters, spans=False)
        assert t.points("redis_leaderboard.client.round_trips") == []
        assert len(other.points("redis_leaderboard.client.round_trips")) == 1
    finally:
        observability.uninstrument()
