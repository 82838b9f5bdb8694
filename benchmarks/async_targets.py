"""Issue 15's asyncio targets, measured side by side for one or more builds in one run.

    python benchmarks/async_targets.py [--builds NAME=PYTHON,...] [--loops asyncio,uvloop]
                                       [--rounds 5] [--seconds 0.3]

Each build is a Python interpreter with its own redis_leaderboard installed (for instance a
venv with the main branch's build and one with this tree's); each asyncio measurement runs on
every event loop of ``--loops`` (``asyncio``, the default, and/or ``uvloop``), a column each. One
private redis-server (board of 1,000 users as ``run.py``); every round runs each build (and
loop) in a fresh subprocess, back to back, the order reversed every other round, with
``run.py``'s timing loops, arguments and placement:

- target 1: sync p50 (client and server pinned to one CPU, as ``run.py``'s latency phase) and
  asyncio p50 at 1 task, both on one CPU (``1@one``) and on all CPUs (``1@all``: ``run.py``'s
  placement for asyncio); the ratio asyncio p50 / sync p50 is the median of per-round ratios;
- target 2: asyncio calls/s at 1,000 tasks (all CPUs) against ``redis-benchmark -c 1 -P 64``
  sending the same request, the ratio again a median of per-round ratios; next to it each
  loop's own ceiling: bare futures (created, settled by ``call_soon``, awaited) at 1,000 tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Awaitable, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import event_loops  # noqa: E402
import run as R  # noqa: E402

LATENCY = (
    "upsert_user,increment_score,get_top(10),get_rank,get_user_entry,get_user_metadata,"
    "get_size,set_max_entries"
)
CONCURRENT = "get_rank,get_size,get_user_metadata,upsert_user,increment_score"
BARE_FUTURE = "bare future"  # the loop's own round trip: no I/O


def pin(cpus: list[int]) -> None:
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass


def bare_future(loop: asyncio.AbstractEventLoop) -> Callable[[], Awaitable[None]]:
    def call() -> Awaitable[None]:
        future = loop.create_future()
        loop.call_soon(future.set_result, None)
        return future

    return call


def worker(host: str, port: int, rnd: int, seconds: float, what: str, loop_name: str) -> None:
    """One build, one kind of measurement, one round, on one event loop: prints
    {method: {rate, p50}}."""
    import redis_leaderboard
    import redis_leaderboard.asyncio

    methods = {m.name: m for m in R.METHODS}
    cpus = sorted(os.sched_getaffinity(0))
    loop = event_loops.new_event_loop(loop_name)
    sync_board = redis_leaderboard.RedisLeaderboard(
        redis_leaderboard.Client(host=host, port=port), key="lb", max_entries=R.MAX_ENTRIES
    )
    client = redis_leaderboard.asyncio.Client(host=host, port=port)
    async_board = redis_leaderboard.asyncio.RedisLeaderboard(
        client, key="lb", max_entries=R.MAX_ENTRIES
    )
    kind, names = what.split(":")
    out = {}
    for name in names.split(","):
        if name == BARE_FUTURE:
            call = bare_future(loop)
            tasks = int(kind.split("@")[0])
            loop.run_until_complete(R.time_async(call, tasks, R.WARMUP))
            gc.collect()
            latencies, timed = loop.run_until_complete(R.time_async(call, tasks, seconds))
            out[name] = {"rate": len(latencies) / timed * 1e9, "p50": 0.0}
            continue
        method, args = methods[name], R.Args(1000, rnd)
        if kind == "sync":
            pin(cpus[:1])
            call = method.call(sync_board, args)
            R.time_sync(call, R.WARMUP)
            gc.collect()
            latencies, timed = R.time_sync(call, seconds)
        else:
            tasks, placement = kind.split("@")
            pin(cpus[:1] if placement == "one" else cpus)
            call = method.call(async_board, args)
            loop.run_until_complete(R.time_async(call, int(tasks), R.WARMUP))
            gc.collect()
            latencies, timed = loop.run_until_complete(R.time_async(call, int(tasks), seconds))
        sample = R.summarize(latencies, timed, None)
        out[name] = {"rate": sample.calls_per_s, "p50": sample.p50_us}
    client.close()
    loop.close()
    print(json.dumps(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", default=f"this={sys.executable}", help="NAME=PYTHON,...")
    parser.add_argument(
        "--loops", default="asyncio", help="event loops for the asyncio runs: asyncio,uvloop"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--latency", default=LATENCY, help="methods for target 1")
    parser.add_argument("--concurrent", default=CONCURRENT, help="methods for target 2")
    parser.add_argument("--kinds", default="sync,1@one,1@all,1000@all")
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        host, port, rnd, seconds, what, loop_name = opts.worker
        worker(host, int(port), int(rnd), float(seconds), what, loop_name)
        return 0
    pythons = dict(b.split("=", 1) for b in opts.builds.split(","))
    loops = [n for n in opts.loops.split(",") if n]
    event_loops.check(loops)
    # A column per build and loop ("main", "uvloop" or "main uvloop"): (python, loop). The sync
    # calls run once per build, their results shared by the build's loops.
    builds = {
        " ".join(
            ([b] if len(pythons) > 1 or len(loops) == 1 else []) + ([n] if len(loops) > 1 else [])
        ): (python, n)
        for b, python in pythons.items()
        for n in loops
    }
    latency = [n for n in opts.latency.split(",") if n]
    concurrent = [n for n in opts.concurrent.split(",") if n]
    kinds = opts.kinds.split(",")
    methods = {m.name: m for m in R.METHODS}
    res: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    server = R.RedisServer()
    try:
        server.start()
        host, port = server.host, server.port
        cpus = sorted(os.sched_getaffinity(0))
        import redis_leaderboard

        loader = redis_leaderboard.Client(host=host, port=port)
        board = redis_leaderboard.RedisLeaderboard(loader, key="lb", max_entries=R.MAX_ENTRIES)
        board.upsert_many(R.board_entries(1000))
        for name in set(latency) | set(concurrent):  # loads the scripts for redis-benchmark
            loader.run(methods[name].floor(R._core.Board("lb", R.MAX_ENTRIES)))
        R.remove(loader, "lb", [R.USER_SENTINEL])
        bench = R.RedisBenchmark(host, port)
        for rnd in range(opts.rounds):
            for kind in kinds:
                names = concurrent if kind.startswith("1000") else latency
                os.sched_setaffinity(
                    server.proc.pid, cpus[:1] if kind in ("sync", "1@one") else cpus
                )
                order = list(builds)
                if kind == "sync":  # one run per build, not per loop
                    order = [b for b in order if builds[b][1] == loops[0]]
                if kind.startswith("1000"):
                    order.append("ceiling")
                if rnd % 2:
                    order.reverse()
                for build in order:
                    if build == "ceiling":
                        for name in names:
                            command = R.floor_commands(methods[name], "lb")
                            writes = "upsert" in name or "increment" in name
                            n = int(opts.seconds * (100_000 if writes else 500_000))
                            run = bench.run(command[0], 0, n, R.PIPELINE, 1000)
                            res.setdefault((kind, build, name), []).append(
                                {"rate": run.rps, "p50": run.p50_us}
                            )
                        continue
                    python, loop_name = builds[build]
                    measured = [*names, BARE_FUTURE] if kind.startswith("1000") else names
                    argv = [python, __file__, "--worker", host, str(port), str(rnd)]
                    argv += [str(opts.seconds), f"{kind}:{','.join(measured)}", loop_name]
                    done = subprocess.run(argv, capture_output=True, text=True)
                    if done.returncode:
                        print(done.stderr, file=sys.stderr)
                        return 1
                    shared = [b for b in builds if builds[b][0] == python] if kind == "sync" else []
                    for name, value in json.loads(done.stdout).items():
                        for column in shared or [build]:
                            res.setdefault((kind, column, name), []).append(value)
            print(f"round {rnd + 1}/{opts.rounds}", file=sys.stderr, flush=True)
    finally:
        server.cleanup()

    def med(key: tuple[str, str, str], field: str) -> float:
        return statistics.median(x[field] for x in res[key])

    def paired(a: tuple[str, str, str], b: tuple[str, str, str], field: str) -> float:
        return statistics.median(x[field] / y[field] for x, y in zip(res[a], res[b]))

    print(f"\n{opts.rounds} rounds of {opts.seconds} s; ratios are medians of per-round ratios")
    print(f"event loops: {', '.join(event_loops.describe(n) for n in loops)}\n")
    one = [k for k in kinds if k.startswith("1@")]
    if one and "sync" in kinds:
        print("### Target 1: asyncio p50 at 1 task / sync p50 (µs)\n")
        sync_cols = [b for b in builds if builds[b][1] == loops[0]]  # one per build
        cols = [f"{b} sync" if len(pythons) > 1 else "sync" for b in pythons]
        cols += [f"{b} {k}" for b in builds for k in one]
        print("| method | " + " | ".join(cols) + " |")
        print("| --- |" + " ---: |" * len(cols))
        for name in latency:
            row = [f"{med(('sync', b, name), 'p50'):.1f}" for b in sync_cols]
            for b in builds:
                for k in one:
                    ratio = paired((k, b, name), ("sync", b, name), "p50")
                    row.append(f"{med((k, b, name), 'p50'):.1f} ({ratio:.2f}x)")
            print(f"| {name} | " + " | ".join(row) + " |")
    for k in (k for k in kinds if k.startswith("1000")):
        print(f"\n### Target 2: asyncio calls/s at {k.split('@')[0]} tasks / -P 64 ceiling\n")
        print("| method | ceiling | " + " | ".join(builds) + " |")
        print("| --- | ---: |" + " ---: |" * len(builds))
        for name in concurrent:
            row = [f"{med((k, 'ceiling', name), 'rate'):,.0f}"]
            for b in builds:
                ratio = paired((k, b, name), (k, "ceiling", name), "rate")
                row.append(f"{med((k, b, name), 'rate'):,.0f} ({ratio:.2f}x)")
            print(f"| {name} | " + " | ".join(row) + " |")
        row = [f"{med((k, b, BARE_FUTURE), 'rate'):,.0f}" for b in builds]
        print(f"| {BARE_FUTURE} (the loop's own ceiling) | | " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
