"""Durable acknowledgements (``min_replicas``): what they cost a write, and what they save.

    python benchmarks/bench_durability.py [--calls 2000] [--seconds 3] [--tasks 50]
                                          [--failovers 10] [--writers 4] [--only cost|failovers]

1. Cost (a primary and one replica on loopback, started here): the p50 and p99 latency of a
   sync ``upsert_user`` and ``submit`` with ``min_replicas=0`` and ``1``, the two clients
   alternating call by call (so both see the same machine); then asyncio calls/s of the same
   writes from ``--tasks`` tasks on one client for ``--seconds`` each, the two settings in
   alternating rounds.
2. Acknowledged-and-lost across ``--failovers`` Sentinel failovers under load, without and with
   ``min_replicas=1``: a primary, a replica and three sentinels (down-after 1 s); ``--writers``
   threads submit distinct users (each write a new user) through a Sentinel client and record
   every write that was acknowledged (returned). Each failover: writes flow for 1 s; then the
   replication link breaks (the replica is told a wrong ``masterauth`` and its link is killed:
   it cannot resync, as across a network partition between the two nodes) while the primary
   keeps serving clients for 0.5 s; then the primary is killed (SIGKILL); Sentinel promotes the
   replica; the old primary is restarted empty as a replica of the new one. After the last
   failover, every acknowledged user missing from the final primary is an acknowledged write
   lost. Writes that raised (a lost connection, ``NotReplicatedError``) are counted apart: their
   outcome was not acknowledged. Async replication acknowledges what only the primary has, so
   the writes of the 0.5 s break are lost; with ``min_replicas=1`` those writes raise instead.

On a 2-core machine shared with other work the latencies include queueing; the loss counts do
not depend on speed (only on how many writes a break lets through).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import redis_leaderboard
import redis_leaderboard.asyncio as aio
from launchers import RedisSentinel
from redis_leaderboard import Client, RedisLeaderboard
from redis_leaderboard._redis_server import RedisServer

PASSWORD = "bench-pass"
SERVICE = "durable"


def info(port: int, section: str = "replication") -> dict[str, str]:
    with Client("127.0.0.1", port, password=PASSWORD, socket_timeout=5) as c:
        text = c.execute_command("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def command(port: int, *args: Any) -> Any:
    with Client("127.0.0.1", port, password=PASSWORD, socket_timeout=5) as c:
        return c.execute_command(*args)


def wait_for_link(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while info(port).get("master_link_status") != "up":
        if time.monotonic() > deadline:
            raise RuntimeError(f"the replica on {port} did not sync")
        time.sleep(0.05)


def data_node(*extra: str) -> RedisServer:
    server = RedisServer(
        password=PASSWORD,
        extra_args=["--masterauth", PASSWORD, *extra],
        dir_prefix="redis-leaderboard-bench-durable-",
    )
    server.start()
    return server


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- 1. cost -------------------------------------------------------------------------------------


def cost(calls: int, seconds: float, tasks: int) -> None:
    primary = data_node()
    replica = data_node("--replicaof", "127.0.0.1", str(primary.port))
    try:
        wait_for_link(replica.port)
        options: dict[str, Any] = {"port": primary.port, "password": PASSWORD}
        print(f"## Cost: a primary and one replica on loopback ({calls} calls each, sync)\n")
        print("| call | min_replicas=0 p50 | p99 | min_replicas=1 p50 | p99 | added p50 |")
        print("|---|---|---|---|---|---|")
        with Client(**options) as plain, Client(min_replicas=1, **options) as durable:
            boards = [
                RedisLeaderboard(plain, key="bench:durable:sync", max_entries=1_000_000),
                RedisLeaderboard(durable, key="bench:durable:sync", max_entries=1_000_000),
            ]
            writes: dict[str, Callable[[Any, int], Any]] = {
                "upsert_user": lambda board, i: board.upsert_user(f"u{i % 1000}", i),
                "submit": lambda board, i: board.submit(f"s{i % 1000}", i),
            }
            for name, write in writes.items():
                samples: list[list[float]] = [[], []]
                for i in range(calls + 100):
                    for which in (0, 1) if i % 2 else (1, 0):
                        started = time.perf_counter()
                        write(boards[which], i)
                        if i >= 100:  # warm-up
                            samples[which].append(time.perf_counter() - started)
                p50 = [statistics.median(s) * 1e6 for s in samples]
                p99 = [percentile(s, 0.99) * 1e6 for s in samples]
                print(
                    f"| {name} | {p50[0]:.0f} µs | {p99[0]:.0f} µs | {p50[1]:.0f} µs | "
                    f"{p99[1]:.0f} µs | +{p50[1] - p50[0]:.0f} µs |"
                )
        print(f"\n## Cost: asyncio calls/s, {tasks} tasks on one client, {seconds} s a round\n")
        rates = asyncio.run(async_rates(options, seconds, tasks))
        print("| call | min_replicas=0 | min_replicas=1 | ratio |")
        print("|---|---|---|---|")
        for name, (off, on) in rates.items():
            print(f"| {name} | {off:,.0f}/s | {on:,.0f}/s | {on / off:.2f} |")
        print()
    finally:
        replica.cleanup()
        primary.cleanup()


async def async_rates(
    options: dict[str, Any], seconds: float, tasks: int
) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    async with aio.Client(**options) as plain, aio.Client(min_replicas=1, **options) as durable:
        boards = [
            aio.RedisLeaderboard(plain, key="bench:durable:async", max_entries=1_000_000),
            aio.RedisLeaderboard(durable, key="bench:durable:async", max_entries=1_000_000),
        ]
        for name in ("upsert_user", "submit"):
            totals = [0.0, 0.0]
            for round_ in range(4):
                for which in (0, 1) if round_ % 2 else (1, 0):
                    board = boards[which]
                    method = getattr(board, name)
                    done = 0
                    stop = time.perf_counter() + seconds / 2

                    async def worker(n: int, method: Any = method, stop: float = stop) -> None:
                        nonlocal done
                        i = 0
                        while time.perf_counter() < stop:
                            await method(f"t{n}-{i % 100}", i)
                            i += 1
                            done += 1

                    started = time.perf_counter()
                    await asyncio.gather(*(worker(n) for n in range(tasks)))
                    totals[which] += done / (time.perf_counter() - started)
            out[name] = (totals[0] / 4, totals[1] / 4)
    return out


# --- 2. failovers --------------------------------------------------------------------------------


class Topology:
    """A primary, a replica and three sentinels, with passwords (the break needs masterauth)."""

    def __init__(self) -> None:
        self.nodes = [data_node()]
        self.nodes.append(data_node("--replicaof", "127.0.0.1", str(self.nodes[0].port)))
        self.sentinels = [
            RedisSentinel(
                self.nodes[0].port,
                service_name=SERVICE,
                down_after_ms=1000,
                failover_timeout_ms=5000,
                auth_pass=PASSWORD,
                dir_prefix="redis-leaderboard-bench-durable-sentinel-",
            )
            for _ in range(3)
        ]
        for sentinel in self.sentinels:
            sentinel.start()
        self.wait_ready()

    def sentinel_command(self, *args: Any) -> Any:
        s = self.sentinels[0]
        with Client(s.host, s.port, socket_timeout=5) as c:
            return c.execute_command(*args)

    def primary_port(self) -> int:
        return int(self.sentinel_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)[1])

    def node(self, port: int) -> RedisServer:
        return next(node for node in self.nodes if node.port == port)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the sentinels agree on a primary that is one, with a synced replica, and know
        each other (a failover needs its quorum)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                port = self.primary_port()
                ready = info(port).get("role") == "master"
                replicas = [n for n in self.nodes if n.port != port]
                ready = ready and all(
                    info(r.port).get("master_link_status") == "up"
                    and info(r.port).get("master_port") == str(port)
                    for r in replicas
                )
                for s in self.sentinels:
                    with Client(s.host, s.port, socket_timeout=5) as c:
                        state = c.execute_command("SENTINEL", "MASTER", SERVICE)
                    fields = dict(zip(state[::2], state[1::2]))
                    ready = ready and int(fields[b"num-other-sentinels"]) >= 2
                    ready = ready and int(fields[b"port"]) == port
                    ready = ready and b"s_down" not in fields[b"flags"]
                if ready:
                    return
            except redis_leaderboard.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the Sentinel topology did not settle")
            time.sleep(0.1)

    def failover(self) -> float:
        """Breaks the replication link, lets the primary serve alone for 0.5 s, kills it, waits
        for Sentinel's new primary, restarts the old one as its replica. Returns the seconds
        from the kill to the new primary."""
        old = self.node(self.primary_port())
        replica = next(n for n in self.nodes if n is not old)
        command(replica.port, "CONFIG", "SET", "masterauth", "a-wrong-password")
        command(replica.port, "CLIENT", "KILL", "TYPE", "master")
        time.sleep(0.5)
        assert old.proc is not None
        os.kill(old.proc.pid, signal.SIGKILL)
        old.proc.wait()
        killed = time.monotonic()
        command(replica.port, "CONFIG", "SET", "masterauth", PASSWORD)
        while self.primary_port() == old.port:
            if time.monotonic() - killed > 60:
                raise RuntimeError("Sentinel did not fail over")
            time.sleep(0.05)
        took = time.monotonic() - killed
        # The old primary comes back empty (no persistence), as a replica of the new one.
        old.extra_args = ["--masterauth", PASSWORD, "--replicaof", "127.0.0.1", str(replica.port)]
        old.start()
        self.wait_ready()
        return took

    def cleanup(self) -> None:
        for server in [*self.sentinels, *self.nodes]:
            server.cleanup()


def lost_across_failovers(min_replicas: int, failovers: int, writers: int) -> dict[str, Any]:
    topology = Topology()
    key = "bench:durable:failovers"
    acknowledged: list[list[str]] = [[] for _ in range(writers)]
    errors: Counter[str] = Counter()
    errors_lock = threading.Lock()
    stop = threading.Event()
    client = Client.from_sentinel(
        [(s.host, s.port) for s in topology.sentinels],
        SERVICE,
        password=PASSWORD,
        socket_timeout=1,
        min_replicas=min_replicas,
        replica_timeout=1,
    )
    board = RedisLeaderboard(client, key=key, max_entries=10_000_000)

    def write(n: int) -> None:
        i = 0
        while not stop.is_set():
            user = f"w{n}-{i}"
            i += 1
            try:
                board.submit(user, i)
            except redis_leaderboard.RedisError as exc:
                with errors_lock:
                    errors[type(exc).__name__] += 1
                time.sleep(0.02)
                continue
            acknowledged[n].append(user)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    took: list[float] = []
    try:
        for thread in threads:
            thread.start()
        for _ in range(failovers):
            time.sleep(1.0)
            took.append(topology.failover())
        time.sleep(1.0)
        stop.set()
        for thread in threads:
            thread.join()
        port = topology.primary_port()
        present = {m.decode() for m in command(port, "ZRANGE", key, 0, -1)}
        acked = [user for users in acknowledged for user in users]
        lost = [user for user in acked if user not in present]
        return {
            "acknowledged": len(acked),
            "lost": len(lost),
            "errors": dict(errors),
            "failover_s": statistics.median(took),
        }
    finally:
        stop.set()
        client.close()
        topology.cleanup()


def failovers(count: int, writers: int) -> None:
    print(f"## Acknowledged-and-lost across {count} Sentinel failovers, {writers} writer threads\n")
    print("| min_replicas | writes acknowledged | acknowledged and lost | raised (not acked) |")
    print("|---|---|---|---|")
    for min_replicas in (0, 1):
        result = lost_across_failovers(min_replicas, count, writers)
        raised = ", ".join(f"{name} {n}" for name, n in sorted(result["errors"].items()))
        print(
            f"| {min_replicas} | {result['acknowledged']:,} | {result['lost']:,} | "
            f"{raised or 'none'} |"
        )
        sys.stdout.flush()
    print()


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0, help="asyncio: per setting")
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--failovers", type=int, default=10)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--only", choices=("cost", "failovers"))
    args = parser.parse_args(argv)
    if args.only != "failovers":
        cost(args.calls, args.seconds, args.tasks)
    if args.only != "cost":
        failovers(args.failovers, args.writers)


if __name__ == "__main__":
    main()
