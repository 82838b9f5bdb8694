"""One primary of a cluster stops answering (SIGSTOP) under load: requests whose slots live on
the other primaries must keep completing promptly, the paused node's requests fail with
TimeoutError within socket_timeout, and after SIGCONT everything works again. Asyncio (one
client, many tasks) and sync (one client, several threads).

The cluster here is its own: 3 primaries without replicas and a cluster-node-timeout of 30 s, so
a pause of a few seconds is a node that does not answer, not a failover. Every request is logged
(board, started, ended, outcome) to ``requests.log`` in the test's tmp dir; the figures are
printed (pytest -s).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from launchers import RedisCluster, RedisClusterNode
from redis_leaderboard import ClusterClient, RedisLeaderboard, _core
from redis_leaderboard import asyncio as rl_asyncio
from redis_leaderboard._redis_server import RedisServerError

SOCKET_TIMEOUT = 2.0
PAUSE = 5.0  # long enough for requests sent during it to time out before it ends
# A request to a healthy node must not wait for the paused one: far below socket_timeout (the
# old asyncio transport took socket_timeout for them: each batch waited for its slowest node).
HEALTHY_BOUND = SOCKET_TIMEOUT / 2
TASKS_PER_BOARD = 30
THREADS_PER_BOARD = 3


@pytest.fixture(scope="module")
def quiet_cluster() -> Iterator[RedisCluster]:
    try:
        cluster = RedisCluster(
            3, 0, node_timeout_ms=30_000, dir_prefix="redis-leaderboard-test-pause-"
        )
    except RedisServerError as exc:
        pytest.exit(f"{exc} (apt-get install -y redis-server redis-tools)", returncode=2)
    cluster.start()
    yield cluster
    cluster.cleanup()


def boards_per_primary(cluster: RedisCluster) -> dict[str, RedisClusterNode]:
    """One hash-tagged board key per primary."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < 3:
        key = f"{{pause{i}}}:board"
        i += 1
        owner = cluster.owner(_core.key_slot(key))
        found.setdefault(owner.port, key)
    return {key: cluster.node_at(port) for port, key in found.items()}


@dataclass
class Log:
    entries: list[tuple[str, float, float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, key: str, started: float, outcome: str) -> None:
        with self.lock:
            self.entries.append((key, started, time.monotonic(), outcome))


def check(
    log: Log, paused_key: str, paused_at: float, resumed_at: float, tmp_path: Path, label: str
) -> dict[str, Any]:
    (tmp_path / "requests.log").write_text(
        "\n".join(json.dumps(entry) for entry in log.entries) + "\n"
    )
    during = [e for e in log.entries if e[1] >= paused_at and e[2] <= resumed_at]
    healthy = [e for e in during if e[0] != paused_key]
    # The paused node's requests in flight when it stopped or sent while it was stopped, and
    # whose deadline came before it resumed.
    stopped = [
        e
        for e in log.entries
        if e[0] == paused_key and paused_at + 0.05 < e[2] and e[1] + SOCKET_TIMEOUT < resumed_at
    ]
    after = [e for e in log.entries if e[1] >= resumed_at + 0.5]
    latencies = sorted(end - begin for _, begin, end, _ in healthy)
    figures = {
        "requests": len(log.entries),
        "healthy_during_pause": len(healthy),
        "healthy_p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
        "healthy_p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 2),
        "healthy_max_ms": round(1000 * latencies[-1], 2),
        "paused_node_requests": len(stopped),
        "paused_node_outcomes": sorted({o.split(":")[0] for *_, o in stopped}),
        "paused_node_max_s": round(max(end - begin for _, begin, end, _ in stopped), 3),
        "after_resume": len(after),
        "after_resume_errors": sum(1 for *_, o in after if o != "ok"),
        "log": str(tmp_path / "requests.log"),
    }
    print(f"\n{label}:", json.dumps(figures))
    assert len(healthy) > 50, figures
    assert all(o == "ok" for *_, o in healthy), [e for e in healthy if e[3] != "ok"][:5]
    assert latencies[-1] < HEALTHY_BOUND, figures
    assert len(stopped) >= 3, figures
    assert {o.split(":")[0] for *_, o in stopped} == {"TimeoutError"}, figures
    # Within socket_timeout from the call (plus scheduling slack on a loaded machine).
    assert figures["paused_node_max_s"] <= SOCKET_TIMEOUT + 0.5, figures
    assert {e[0] for e in after} == {paused_key, *(k for k in {e[0] for e in healthy})}, figures
    assert figures["after_resume_errors"] == 0, figures
    return figures


def test_asyncio_requests_to_healthy_nodes_do_not_wait_for_a_paused_node(
    quiet_cluster: RedisCluster, tmp_path: Path
) -> None:
    boards = boards_per_primary(quiet_cluster)
    paused_key, paused_node = next(iter(boards.items()))
    log = Log()
    stop = asyncio.Event

    async def main() -> tuple[float, float]:
        done = stop()
        async with rl_asyncio.ClusterClient(
            quiet_cluster.startup_nodes, socket_timeout=SOCKET_TIMEOUT
        ) as client:

            async def task(key: str, index: int) -> None:
                board = rl_asyncio.RedisLeaderboard(client, key=key)
                seq = 0
                while not done.is_set():
                    seq += 1
                    started = time.monotonic()
                    try:
                        if seq % 2:
                            await board.increment_score(f"u{index}", 1)
                        else:
                            await board.get_rank(f"u{index}")
                        log.record(key, started, "ok")
                    except Exception as exc:
                        log.record(key, started, f"{type(exc).__name__}: {exc}")
                    await asyncio.sleep(0.002)

            tasks = [
                asyncio.ensure_future(task(key, i))
                for key in boards
                for i in range(TASKS_PER_BOARD)
            ]
            await asyncio.sleep(0.5)
            paused_at = time.monotonic()
            paused_node.pause()
            try:
                await asyncio.sleep(PAUSE)
            finally:
                resumed_at = time.monotonic()
                paused_node.resume()
            await asyncio.sleep(1.5)
            done.set()
            await asyncio.gather(*tasks)
            return paused_at, resumed_at

    paused_at, resumed_at = asyncio.run(main())
    check(log, paused_key, paused_at, resumed_at, tmp_path, "asyncio, one primary paused")


def test_sync_threads_do_not_wait_for_a_paused_node(
    quiet_cluster: RedisCluster, tmp_path: Path
) -> None:
    boards = boards_per_primary(quiet_cluster)
    paused_key, paused_node = next(iter(boards.items()))
    log = Log()
    done = threading.Event()
    client = ClusterClient(quiet_cluster.startup_nodes, socket_timeout=SOCKET_TIMEOUT)

    def worker(key: str, index: int) -> None:
        board = RedisLeaderboard(client, key=key)
        seq = 0
        while not done.is_set():
            seq += 1
            started = time.monotonic()
            try:
                if seq % 2:
                    board.increment_score(f"u{index}", 1)
                else:
                    board.get_rank(f"u{index}")
                log.record(key, started, "ok")
            except Exception as exc:
                log.record(key, started, f"{type(exc).__name__}: {exc}")
            time.sleep(0.002)

    threads = [
        threading.Thread(target=worker, args=(key, i))
        for key in boards
        for i in range(THREADS_PER_BOARD)
    ]
    with client:
        for thread in threads:
            thread.start()
        try:
            time.sleep(0.5)
            paused_at = time.monotonic()
            paused_node.pause()
            try:
                time.sleep(PAUSE)
            finally:
                resumed_at = time.monotonic()
                paused_node.resume()
            time.sleep(1.5)
        finally:
            done.set()
            for thread in threads:
                thread.join(timeout=30)
                assert not thread.is_alive()
    check(log, paused_key, paused_at, resumed_at, tmp_path, "sync threads, one primary paused")
