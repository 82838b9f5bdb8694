"""What the asyncio cluster client costs over the one-node client: the same calls on the same node
through the asyncio one-node client and the asyncio cluster client (both driven by the event
loop, no thread: a LoopClient, and a LoopCluster of one LoopClient per node), and the sync pair
beside them, so that routing itself (which both cluster clients pay) is told apart from what
only the asyncio one pays. (It was written to measure the router and worker threads the asyncio
cluster client had before: +30 to +40 µs a call; see docs/pages/internals.md.)

Starts a local cluster of 3 primaries, no replicas (from PATH, free ports, temporary
directories), and a hash-tagged board of 1,000 players on the node owning its slot. Each client
connects to that node (the cluster clients learn the others from it). Measured, in rounds that
alternate the clients call by call:

- p50 latency at one task (µs) of get_rank, get_top(10) and upsert_user, client and servers
  pinned to one CPU (``--cpu``, default 0: on a shared machine a hand-off between threads then
  costs a context switch on that CPU, not a cross-CPU wake-up);
- calls/s of get_rank at ``--tasks`` concurrent tasks (default 100), unpinned.

    python benchmarks/async_cluster.py [--calls 3000] [--rounds 3] [--tasks 100] [--cpu 0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import redis_leaderboard
from redis_leaderboard import _core
from redis_leaderboard import asyncio as rlb_asyncio

# The Cluster launcher lives with the tests (tests/launchers.py), not in the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from launchers import RedisCluster

KEY = "{bench}:board"
SYNC_CALLS: list[tuple[str, Callable[[Any, int], Any]]] = [
    ("get_rank", lambda b, i: b.get_rank(f"u{i % 1000}")),
    ("get_top(10)", lambda b, i: b.get_top(10)),
    ("upsert_user", lambda b, i: b.upsert_user(f"u{i % 1000}", i, {"level": 1})),
]
ASYNC_CALLS: list[tuple[str, Callable[[Any, int], Awaitable[Any]]]] = list(SYNC_CALLS)


def pin(cpus: set[int], pids: list[int]) -> None:
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                os.sched_setaffinity(int(tid), cpus)
            except OSError:
                pass


def sync_latency(one: Any, many: Any, calls: int) -> dict[str, tuple[float, float]]:
    out = {}
    for name, call in SYNC_CALLS:
        a, b = [], []
        for i in range(calls):
            for board, samples in ((one, a), (many, b)):
                started = time.perf_counter()
                call(board, i)
                samples.append(time.perf_counter() - started)
        out[name] = (statistics.median(a) * 1e6, statistics.median(b) * 1e6)
    return out


async def async_latency(one: Any, many: Any, calls: int) -> dict[str, tuple[float, float]]:
    out = {}
    for name, call in ASYNC_CALLS:
        a, b = [], []
        for i in range(calls):
            for board, samples in ((one, a), (many, b)):
                started = time.perf_counter()
                await call(board, i)
                samples.append(time.perf_counter() - started)
        out[name] = (statistics.median(a) * 1e6, statistics.median(b) * 1e6)
    return out


async def rate(board: Any, tasks: int, seconds: float) -> float:
    done = 0
    stop = time.perf_counter() + seconds

    async def worker(n: int) -> None:
        nonlocal done
        i = n
        while time.perf_counter() < stop:
            await board.get_rank(f"u{i % 1000}")
            done += 1
            i += tasks

    started = time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(tasks)))
    return done / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--cpu", type=int, default=0)
    args = parser.parse_args()

    with RedisCluster(primaries=3, replicas=0) as cluster:
        node = cluster.owner(_core.key_slot(KEY))
        sync_one = redis_leaderboard.RedisLeaderboard(
            redis_leaderboard.Client(host=node.host, port=node.port), key=KEY, max_entries=None
        )
        sync_many = redis_leaderboard.RedisLeaderboard(
            redis_leaderboard.ClusterClient(startup_nodes=[(node.host, node.port)]),
            key=KEY,
            max_entries=None,
        )
        rng = random.Random(1)
        for i in range(1000):
            sync_one.upsert_user(f"u{i}", rng.randint(0, 10**6), {"level": i % 50})
        servers = [n.pid for n in cluster.nodes if n.running() and n.pid is not None]
        rounds: dict[str, list[tuple[float, float]]] = {}
        rates: dict[str, list[float]] = {"one-node": [], "cluster": []}

        async def asynchronous() -> None:
            one = rlb_asyncio.RedisLeaderboard(
                rlb_asyncio.Client(host=node.host, port=node.port), key=KEY, max_entries=None
            )
            many = rlb_asyncio.RedisLeaderboard(
                rlb_asyncio.ClusterClient(startup_nodes=[(node.host, node.port)]),
                key=KEY,
                max_entries=None,
            )
            await one.get_size()
            await many.get_size()
            threads = len(os.listdir("/proc/self/task"))
            print(f"threads in this process with both asyncio clients connected: {threads}")
            for r in range(args.rounds):
                pin({args.cpu}, [os.getpid(), *servers])
                for name, pair in sync_latency(sync_one, sync_many, args.calls).items():
                    rounds.setdefault(f"sync {name}", []).append(pair)
                for name, pair in (await async_latency(one, many, args.calls)).items():
                    rounds.setdefault(f"asyncio {name}", []).append(pair)
                pin(set(range(os.cpu_count() or 1)), [os.getpid(), *servers])
                order = [("one-node", one), ("cluster", many)]
                for label, board in order if r % 2 == 0 else order[::-1]:
                    rates[label].append(await rate(board, args.tasks, args.seconds))

        asyncio.run(asynchronous())

    print(f"\n{args.rounds} rounds of {args.calls} calls each, alternating call by call; "
          f"medians of the rounds' p50s (µs), client and servers on CPU {args.cpu}\n")  # fmt: skip
    print("| call | one-node client | cluster client | cluster - one-node |")
    print("|---|---:|---:|---:|")
    for name, pairs in rounds.items():
        one = statistics.median(p[0] for p in pairs)
        many = statistics.median(p[1] for p in pairs)
        print(f"| {name} | {one:.1f} | {many:.1f} | {many - one:+.1f} |")
    print(f"\nget_rank calls/s at {args.tasks} tasks (asyncio, unpinned; median of rounds): "
          f"one-node {statistics.median(rates['one-node']):,.0f}, "
          f"cluster {statistics.median(rates['cluster']):,.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
