"""Reads of many entries on the asyncio client, in two steps against one script, side by side:
calls a second and the server's CPU per call from 1 and from many tasks sharing one client.

The asyncio client reads ``get_top`` and ``get_around_rank`` of 50 entries and more (200 on
other reads and on boards with options) in the guide's two steps (the ranked read, then the
entries' ``HGETALL``s pipelined: SplitRead in cpp/leaderboard/operations.cpp), its second step
queued behind the calls made while its first was in flight (Core::SplitReads::kInterleaved in
cpp/connection/core.hpp). The other form is the same read as one ``no-writes`` script (the
operation's ``in_one_trip()``: what every asyncio client before it sent, and a read of a
``run_pipelined`` stream sends). From many tasks one Redis is the bottleneck, so the server's
CPU per call is the capacity.

    python benchmarks/async_split.py [--sizes 1000,100000] [--tasks 1,100] [--seconds 1]
                                     [--rounds 3] [--counts 100]

Starts its own redis-server (never the machine's 6379), pinned to CPU 1 with this client on
CPU 0, and fills one board in the guide's layout (two metadata fields a player, as
``server_cost.py``). For each read, board size and task count, rounds alternate the two forms on
one asyncio client: each runs that many tasks calling it for ``--seconds``; the server's
main-thread CPU over the round (INFO CPU) gives µs per call. Reported: the median over
``--rounds`` of calls a second and server µs per call, and two steps / one script for both.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

import redis_leaderboard.asyncio as aio
from bench_sync import RedisServer
from server_cost import KEY, fill, pin, server_cpu
from split_reads import paired_row


def reads(size: int, counts: list[int]) -> list[tuple[str, Callable[[Any, int], Any]]]:
    """(name, make(core board, i) -> operation) of the reads that split, at each page size."""
    rng = random.Random(5)
    ranks = [rng.randrange(size) + 1 for _ in range(4096)]
    out: list[tuple[str, Callable[[Any, int], Any]]] = []
    for count in counts:
        out.append((f"get_top({count})", lambda b, i, c=count: b.get_top(c)))
        out.append(
            (
                f"get_around_rank(r, {count})",
                lambda b, i, c=count: b.get_around_rank(ranks[i % len(ranks)], c),
            )
        )
    return out


async def measure(
    client: Any,
    admin: redis.Redis,
    core: Any,
    make: Callable[[Any, int], Any],
    tasks: int,
    seconds: float,
    whole: bool,
) -> tuple[float, float]:
    """(calls a second, server µs per call) of ``tasks`` tasks running ``make(core, i)``'s
    operation for ``seconds`` (``core``: the board's ``_core.Board``), one script if
    ``whole``."""
    run = client.run
    calls = 0
    stop = False

    async def worker(n: int) -> None:
        nonlocal calls
        i = n
        while not stop:
            operation = make(core, i)
            if whole:
                operation.in_one_trip()
            await run(operation)
            calls += 1
            i += tasks

    operation = make(core, 0)
    if whole:
        operation.in_one_trip()
    await run(operation)  # the script loaded
    before = server_cpu(admin)
    started = time.perf_counter()
    workers = [asyncio.ensure_future(worker(n)) for n in range(tasks)]
    await asyncio.sleep(seconds)
    stop = True
    await asyncio.gather(*workers)
    elapsed = time.perf_counter() - started
    spent = server_cpu(admin) - before
    return calls / elapsed, spent * 1e6 / max(calls, 1)


async def main_async(args: argparse.Namespace) -> None:
    with RedisServer() as server:  # type: ignore[no-untyped-call]
        pin(server.proc.pid)
        admin = redis.Redis(port=server.port, decode_responses=True)
        client = aio.Client(port=server.port)
        board = aio.RedisLeaderboard(client, key=KEY, max_entries=None)
        print(f"redis-server {admin.info('server')['redis_version']}, {args.rounds} rounds")
        print(
            "| read | players | tasks | calls/s, two steps | one script | ratio "
            "| server µs, two steps | one script | ratio |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in (int(s) for s in args.sizes.split(",")):
            fill(admin, size)
            await board.get_size()  # its options checked, as a board in use
            for name, make in reads(size, [int(c) for c in args.counts.split(",")]):
                for tasks in (int(t) for t in args.tasks.split(",")):
                    split: list[tuple[float, float]] = []
                    whole: list[tuple[float, float]] = []
                    for _ in range(args.rounds):
                        for form, out in ((False, split), (True, whole)):
                            out.append(
                                await measure(
                                    client, admin, board._board, make, tasks, args.seconds, form
                                )
                            )
                    row = paired_row([f"`{name}`", f"{size:,}", str(tasks)], split, whole)
                    print(row, flush=True)
        await client.aclose()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--tasks", default="1,100")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--counts", default="100", help="entries a read")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
