"""The Python cost a periodic board adds to a call (issue 16): a PeriodicLeaderboard's write and
read against the same call on a plain RedisLeaderboard, sync and asyncio.

Starts its own redis-server. Each round times, interleaved, ``--calls`` calls of each of:
``submit`` (mode "set", the same user) and ``get_top(10)`` (a board of 100 users) on a plain
board, on a PeriodicLeaderboard (``period="day"``, ``tz="Europe/Amsterdam"``: every call finds
its current period with the clock), and on a RollingLeaderboard (a write; its read refreshes the
window first, so it is not compared). asyncio: ``--tasks`` tasks at once, each awaiting its
calls in turn. Reported: the median over ``--rounds`` of each round's mean µs per call, and
the periodic/plain ratio (what the periodic layer costs on top of the round trip). The µs are
this process's CPU time per call (``time.process_time``: the client's work, Python and C++,
which a busy machine inflates less than the wall clock); ``--wall`` reports wall-clock time.

    python benchmarks/bench_seasons_overhead.py [--rounds 7] [--calls 2000] [--tasks 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import timedelta
from typing import Any, Awaitable, Callable

import redis_leaderboard
import redis_leaderboard.asyncio as aio
from redis_leaderboard import _redis_server


def sync_calls(board: Any) -> dict[str, Callable[[], Any]]:
    return {
        "submit": lambda: board.submit("ada", 7.0),
        "get_top": lambda: board.get_top(10),
    }


def async_calls(board: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    return {
        "submit": lambda: board.submit("ada", 7.0),
        "get_top": lambda: board.get_top(10),
    }


CLOCK = time.process_time


def time_sync(call: Callable[[], Any], calls: int) -> float:
    t0 = CLOCK()
    for _ in range(calls):
        call()
    return (CLOCK() - t0) / calls * 1e6


async def time_async(call: Callable[[], Awaitable[Any]], calls: int, tasks: int) -> float:
    async def worker(n: int) -> None:
        for _ in range(n):
            await call()

    t0 = CLOCK()
    await asyncio.gather(*(worker(calls // tasks) for _ in range(tasks)))
    return (CLOCK() - t0) / (calls // tasks * tasks) * 1e6


def report(title: str, rows: dict[str, list[float]]) -> None:
    what = "wall" if CLOCK is time.perf_counter else "client CPU"
    print(f"\n{title} (median of the rounds' mean µs per call, {what})")
    med = {name: statistics.median(values) for name, values in rows.items()}
    for name, value in med.items():
        print(f"  {name:<22} {value:8.2f}")
    for op in ("submit", "get_top"):
        print(f"  periodic/plain {op:<8} {med[f'periodic {op}'] / med[f'plain {op}']:8.3f}")
    print(f"  rolling/plain submit   {med['rolling submit'] / med['plain submit']:8.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--wall", action="store_true", help="wall-clock time, not CPU time")
    args = parser.parse_args(argv)
    global CLOCK
    if args.wall:
        CLOCK = time.perf_counter

    server = _redis_server.RedisServer(dir_prefix="bench-seasons-")
    server.start()
    try:
        client = redis_leaderboard.Client(host=server.host, port=server.port)

        def boards(c: Any, api: Any, name: str) -> dict[str, Any]:
            out = {
                "plain": api.RedisLeaderboard(c, key=f"{name}:plain", max_entries=1000),
                "periodic": api.PeriodicLeaderboard(
                    c,
                    key=f"{name}:daily",
                    period="day",
                    tz="Europe/Amsterdam",
                    max_entries=1000,
                ),
                "rolling": api.RollingLeaderboard(
                    c,
                    key=f"{name}:recent",
                    window=timedelta(hours=1),
                    bucket=timedelta(minutes=1),
                    max_entries=1000,
                ),
            }
            return out

        sync_boards = boards(client, redis_leaderboard, "sync")
        for board in (sync_boards["plain"], sync_boards["periodic"]):
            for i in range(100):
                board.submit(f"user-{i}", float(i))
        rows: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for kind, board in sync_boards.items():
                for op, call in sync_calls(board).items():
                    if kind == "rolling" and op == "get_top":
                        continue
                    call()
                    rows.setdefault(f"{kind} {op}", []).append(time_sync(call, args.calls))
        report("sync, one thread", rows)

        async def run_async() -> dict[str, list[float]]:
            async with aio.Client(host=server.host, port=server.port) as aclient:
                async_boards = boards(aclient, aio, "async")
                for board in (async_boards["plain"], async_boards["periodic"]):
                    for i in range(100):
                        await board.submit(f"user-{i}", float(i))
                out: dict[str, list[float]] = {}
                for _ in range(args.rounds):
                    for kind, board in async_boards.items():
                        for op, call in async_calls(board).items():
                            if kind == "rolling" and op == "get_top":
                                continue
                            await call()
                            value = await time_async(call, args.calls, args.tasks)
                            out.setdefault(f"{kind} {op}", []).append(value)
                return out

        report(f"asyncio, {args.tasks} tasks", asyncio.run(run_async()))
        client.close()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
