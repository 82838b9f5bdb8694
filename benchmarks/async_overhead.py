"""Where an asyncio call's time goes on the client: the per-call cost of this package next to
asyncio's own floor (a future settled by ``call_soon``), for cheap one-command reads.

Starts its own redis-server. For each method: calls/s with ``--tasks`` tasks calling in a loop,
then the cost of submitting 1,000 prebuilt operations (``Client.run``) apart from the rest
(waiting, settling the futures, resuming the tasks).

    python benchmarks/async_overhead.py [--tasks 1000] [--seconds 2] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any, Optional

from redis_leaderboard import _core
from redis_leaderboard.asyncio import Client, RedisLeaderboard

try:
    from bench_sync import RedisServer, fmt_rate, serve_and_report
except ImportError:  # run as ``python -m benchmarks.async_overhead``
    from benchmarks.bench_sync import RedisServer, fmt_rate, serve_and_report

KEY = "overhead"
METHODS = ("get_rank", "get_user_metadata", "get_size")


async def bare_future_rate(tasks: int, seconds: float) -> float:
    """asyncio's floor: each call a future that ``call_soon`` settles."""
    loop = asyncio.get_running_loop()
    count = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal count
        while time.perf_counter() < stop:
            future = loop.create_future()
            loop.call_soon(future.set_result, None)
            await future
            count += 1

    await asyncio.gather(*(worker() for _ in range(tasks)))
    return count / seconds


async def method_rate(board: RedisLeaderboard, method: str, tasks: int, seconds: float) -> float:
    call: Any = getattr(board, method)
    args = () if method == "get_size" else ("u1",)
    count = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal count
        while time.perf_counter() < stop:
            await call(*args)
            count += 1

    await asyncio.gather(*(worker() for _ in range(tasks)))
    return count / seconds


async def submit_split(client: Client, method: str, batches: int = 50) -> tuple[float, float]:
    """ns per call spent in ``Client.run`` (submitting) and in the rest, 1,000 calls at once."""
    board = _core.Board(KEY, 1_000_000)
    make: Any = getattr(board, method)
    args = () if method == "get_size" else ("u1",)
    submitting = 0.0
    started = time.perf_counter()
    for _ in range(batches):
        operations = [make(*args) for _ in range(1000)]
        t0 = time.perf_counter()
        futures = [client.run(op) for op in operations]
        submitting += time.perf_counter() - t0
        await asyncio.gather(*futures)
    total = time.perf_counter() - started
    calls = batches * 1000
    return submitting / calls * 1e9, (total - submitting) / calls * 1e9


async def bench(server: RedisServer, args: argparse.Namespace) -> str:
    floor = await bare_future_rate(args.tasks, args.seconds)
    rows = [
        f"| asyncio future settled by call_soon | {fmt_rate(floor)} | {1e6 / floor:.2f} | | |",
    ]
    async with Client(host=server.host, port=server.port) as client:
        board = RedisLeaderboard(client, key=KEY, max_entries=1_000_000)
        await board.upsert_user("u1", 1.0, {"name": "One"})
        for method in METHODS:
            rate = await method_rate(board, method, args.tasks, args.seconds)
            submit_ns, rest_ns = await submit_split(client, method)
            rows.append(
                f"| {method} | {fmt_rate(rate)} | {1e6 / rate:.2f} | {submit_ns / 1000:.2f} "
                f"| {rest_ns / 1000:.2f} |"
            )
    return "\n".join(
        [
            f"{args.tasks} tasks calling in a loop for {args.seconds} s; one Client "
            "(one connection). Submit / rest: 1,000 prebuilt operations passed to Client.run at "
            "once, then awaited.",
            "",
            "| call | calls/s | µs per call | submit µs/call | rest µs/call |",
            "| --- | ---: | ---: | ---: | ---: |",
            *rows,
            "",
        ]
    )


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000, help="concurrent tasks (1000)")
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement (2)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.seconds <= 0:
        parser.error("--tasks must be >= 1 and --seconds > 0")
    return serve_and_report(
        "async_overhead", args, argv, lambda server: asyncio.run(bench(server, args))
    )


if __name__ == "__main__":
    sys.exit(main())
