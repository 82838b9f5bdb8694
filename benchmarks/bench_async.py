"""upsert_user from many asyncio tasks: redis_leaderboard.asyncio vs the guide on redis.asyncio,
and redis-benchmark running the same server-side script.

Starts its own redis-server (``bench_sync.RedisServer``: from PATH, on a free port, data in a
temporary directory, no persistence) and stops it at exit, Ctrl+C included. Every call is
``upsert_user(user_id, score, {"name": ..., "description": ...})`` (two metadata fields) with
random user ids out of 100,000 and random scores, on a board whose ``max_entries`` (1,000,000)
is never reached, at 1, 10, 100, 200 and 1000 concurrent tasks (one event loop) for:

- ``redis_leaderboard.asyncio``: one ``Client`` (one connection, automatic pipelining);
- ``guide (redis.asyncio)``: ``guide_leaderboard.AsyncGuideLeaderboard``, the guide's algorithm
  (3 round trips per call here) on ``redis.asyncio.Redis`` with the hiredis parser and a
  ``BlockingConnectionPool(max_connections=200)``: one connection per task up to 200 tasks;
- ``redis-benchmark``: the EVALSHA our client sends for such a call (same script, same
  arguments, ``__rand_int__`` for the user id and the score): one connection pipelined 32
  deep (the reference of the ratio column), one connection not pipelined (the latency floor),
  and 50 connections pipelined 32 deep (about the most this server does with this script).

Each figure is the median over ``--rounds`` rounds of ``--seconds`` each, the modes alternating
within a round. Round trips per call: ours from ``Client.stats()`` during the timed run, the
guide's from request writes on a counting redis.asyncio connection, redis-benchmark's 1/P.

    python benchmarks/bench_async.py [--seconds 1.5] [--rounds 3] [--markdown results.md]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import gc
import io
import itertools
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

import redis
import redis.asyncio
from redis.utils import HIREDIS_AVAILABLE

import redis_leaderboard
from redis_leaderboard import _core
from redis_leaderboard.asyncio import Client, RedisLeaderboard

try:
    from bench_sync import META, RedisServer, fmt_count, fmt_rate, serve_and_report
    from guide_leaderboard import AsyncGuideLeaderboard
except ImportError:  # run as ``python -m benchmarks.bench_async``
    from benchmarks.bench_sync import (
        META,
        RedisServer,
        fmt_count,
        fmt_rate,
        serve_and_report,
    )
    from benchmarks.guide_leaderboard import AsyncGuideLeaderboard

OURS = "redis_leaderboard.asyncio"
GUIDE = "guide (redis.asyncio)"
RB_PIPELINED = "redis-benchmark -c 1 -P 32"
RB_UNPIPELINED = "redis-benchmark -c 1 -P 1"
RB_CEILING = "redis-benchmark -c 50 -P 32"
TASKS = (1, 10, 100, 200, 1000)
HEADLINE_TASKS = 200
USERS = 100_000  # user ids drawn from range(USERS), as redis-benchmark -r 100000
MAX_ENTRIES = 1_000_000  # never reached: no call trims
GUIDE_POOL = 200  # connections of the guide's pool
PIPELINE = 32
SAMPLES = 1 << 16
RB_MODES = ((RB_PIPELINED, PIPELINE, 1), (RB_UNPIPELINED, 1, 1), (RB_CEILING, PIPELINE, 50))

Call = Callable[[str, float], Awaitable[Any]]


# --------------------------------------------------------------------------------------------
# Our client and the guide's


def counting_guide(host: str, port: int) -> tuple[redis.asyncio.Redis, Callable[[], int]]:
    """redis.asyncio with a connection that counts request writes: every command and every
    pipeline goes out in one ``send_packed_command`` and then waits: one round trip each."""
    sent = [0]

    class CountingConnection(redis.asyncio.Connection):
        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            sent[0] += 1
            await super().send_packed_command(command, check_health)

    pool = redis.asyncio.ConnectionPool(
        host=host, port=port, decode_responses=True, connection_class=CountingConnection
    )
    return redis.asyncio.Redis(connection_pool=pool), lambda: sent[0]


async def parser_name(client: redis.asyncio.Redis) -> str:
    connection = await client.connection_pool.get_connection()
    try:
        return type(connection._parser).__name__
    finally:
        await client.connection_pool.release(connection)


class Workload:
    """Random (user id, score) pairs, the same sequence for every mode."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.pairs = [
            (str(rng.randrange(USERS)), float(rng.randrange(1_000_000))) for _ in range(SAMPLES)
        ]

    async def run(self, call: Call, tasks: int, seconds: float) -> tuple[int, float]:
        """(calls, elapsed): ``tasks`` tasks calling ``call`` back to back until the deadline."""
        pairs, mask, counter = self.pairs, SAMPLES - 1, itertools.count()
        clock = time.perf_counter
        deadline = clock() + seconds

        async def worker() -> int:
            calls = 0
            while clock() < deadline:
                user_id, score = pairs[next(counter) & mask]
                await call(user_id, score)
                calls += 1
            return calls

        gc.collect()
        start = clock()
        counts = await asyncio.gather(*(worker() for _ in range(tasks)))
        return sum(counts), clock() - start


# --------------------------------------------------------------------------------------------
# redis-benchmark


def script_command(key: str) -> list[str]:
    """The EVALSHA our client sends for ``upsert_user(id, score, META)`` on ``key``, with
    redis-benchmark's ``__rand_int__`` for the user id (also in its metadata key) and score."""
    placeholder, marker = "__rand_int__", 123456.25
    request = _core.Board(key, MAX_ENTRIES).upsert_user(placeholder, marker, META).request()
    (argv,) = _core.decode_replies(request)
    args = [arg.decode() for arg in argv]
    assert args[0] == "EVALSHA", args
    return [placeholder if arg == repr(marker) else arg for arg in args]


def redis_benchmark(
    port: int, command: list[str], requests: int, pipeline: int, connections: int
) -> float:
    """Requests per second reported by redis-benchmark."""
    server = ["-h", "127.0.0.1", "-p", str(port)]
    options = ["-c", str(connections), "-P", str(pipeline), "-n", str(requests), "-r", str(USERS)]
    out = subprocess.run(
        ["redis-benchmark", *server, *options, "--csv", *command],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    if len(rows) != 1:
        raise RuntimeError(f"unexpected redis-benchmark output:\n{out}")
    return float(rows[0]["rps"])


def timed_redis_benchmark(
    port: int, command: list[str], pipeline: int, connections: int, seconds: float
) -> float:
    """redis-benchmark for about ``seconds``: a short run sizes the measured one."""
    probe = redis_benchmark(port, command, 20_000 if pipeline > 1 else 2_000, pipeline, connections)
    requests = max(1000, int(probe * seconds))
    return redis_benchmark(port, command, requests, pipeline, connections)


# --------------------------------------------------------------------------------------------
# The run


def fmt_ratio(x: Optional[float]) -> str:
    return "" if x is None else f"{x:.2f}x"


async def bench(server: RedisServer, args: argparse.Namespace) -> str:
    if not HIREDIS_AVAILABLE:
        raise SystemExit("hiredis is not installed: pip install hiredis")
    host, port = server.host, server.port
    workload = Workload(seed=1)

    ours_client = Client(host=host, port=port)
    ours = RedisLeaderboard(ours_client, key="bench:ours", max_entries=MAX_ENTRIES)
    guide_client = redis.asyncio.Redis(
        connection_pool=redis.asyncio.BlockingConnectionPool(
            host=host, port=port, decode_responses=True, max_connections=GUIDE_POOL, timeout=None
        )
    )
    guide = AsyncGuideLeaderboard(guide_client, key="bench:guide", max_entries=MAX_ENTRIES)
    parser = await parser_name(guide_client)
    if "Hiredis" not in parser:
        raise SystemExit(f"redis.asyncio is not using the hiredis parser ({parser})")

    def ours_call(user_id: str, score: float) -> Awaitable[Any]:
        return ours.upsert_user(user_id, score, META)

    def guide_call(user_id: str, score: float) -> Awaitable[Any]:
        return guide.upsert_user(user_id, score, META)

    calls: dict[str, Call] = {OURS: ours_call, GUIDE: guide_call}

    # The script is loaded by our first call; redis-benchmark then sends the same EVALSHA.
    await ours.upsert_user("warm-up", 0, META)
    command = script_command("bench:rb")
    have_rb = shutil.which("redis-benchmark") is not None

    # The guide's round trips per call, on a counting connection.
    counting_client, guide_round_trips = counting_guide(host, port)
    counted = AsyncGuideLeaderboard(counting_client, key="bench:guide", max_entries=MAX_ENTRIES)
    await counted.upsert_user("warm-up", 0, META)  # the connection's own setup is not counted
    before = guide_round_trips()
    for user_id, score in workload.pairs[:200]:
        await counted.upsert_user(user_id, score, META)
    guide_rt = (guide_round_trips() - before) / 200
    await counting_client.aclose()

    # Warm up: the guide's pool opens its connections, both allocators settle.
    for name in (OURS, GUIDE):
        await workload.run(calls[name], max(TASKS), 0.3)

    rates: dict[tuple[str, int], list[float]] = {}
    round_trips: dict[int, list[float]] = {}
    for round_no in range(args.rounds):
        print(f"round {round_no + 1}/{args.rounds}", file=sys.stderr, flush=True)
        for index, tasks in enumerate(TASKS):
            order = (OURS, GUIDE) if (round_no + index) % 2 == 0 else (GUIDE, OURS)
            for name in order:
                stats = ours_client.stats()
                done, elapsed = await workload.run(calls[name], tasks, args.seconds)
                rates.setdefault((name, tasks), []).append(done / elapsed)
                if name == OURS:
                    after = ours_client.stats()
                    assert after["calls"] - stats["calls"] == done
                    round_trips.setdefault(tasks, []).append(
                        (after["round_trips"] - stats["round_trips"]) / done
                    )
        if have_rb:
            for label, pipeline, connections in RB_MODES:
                rate = await asyncio.to_thread(
                    timed_redis_benchmark, port, command, pipeline, connections, args.seconds
                )
                rates.setdefault((label, 1), []).append(rate)

    assert ours_client._core.pending == 0
    assert ours_client.stats()["reconnects"] == 0
    await ours_client.aclose()
    await guide_client.aclose()

    median = {key: statistics.median(values) for key, values in rates.items()}
    reference = median.get((RB_PIPELINED, 1))
    rows = [
        "| mode | tasks | calls/s | ratio vs guide | ratio vs redis-benchmark pipelined "
        "| round trips per call |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def row(name: str, tasks: Any, rate: float, vs_guide: Optional[float], rt: float) -> None:
        vs_rb = None if reference is None else rate / reference
        rows.append(
            f"| {name} | {tasks} | {fmt_rate(rate)} | {fmt_ratio(vs_guide)} "
            f"| {fmt_ratio(vs_rb)} | {fmt_count(rt)} |"
        )

    for tasks in TASKS:
        ours_rate, guide_rate = median[OURS, tasks], median[GUIDE, tasks]
        row(OURS, tasks, ours_rate, ours_rate / guide_rate, statistics.median(round_trips[tasks]))
    for tasks in TASKS:
        row(GUIDE, tasks, median[GUIDE, tasks], 1.0, guide_rt)
    if reference is not None:
        row(RB_PIPELINED, "1 connection", reference, None, 1 / PIPELINE)
        row(RB_UNPIPELINED, "1 connection", median[RB_UNPIPELINED, 1], None, 1.0)
        row(RB_CEILING, "50 connections", median[RB_CEILING, 1], None, 1 / PIPELINE)

    headline_ours = median[OURS, HEADLINE_TASKS]
    verdict = [
        f"At {HEADLINE_TASKS} tasks: {headline_ours / median[GUIDE, HEADLINE_TASKS]:.1f}x the "
        f"guide's calls/s (target >= 8x)"
        + (
            ""
            if reference is None
            else f", {headline_ours / reference:.2f}x redis-benchmark pipelined (target >= 0.7x) "
            f"and {headline_ours / median[RB_CEILING, 1]:.2f}x its 50-connection ceiling"
        )
        + "."
    ]
    if reference is None:
        verdict.append("redis-benchmark was not found on PATH: its rows are missing.")

    header = (
        f"redis-server {server.version()} on 127.0.0.1 (TCP), {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()} (asyncio, default event loop), redis-py "
        f"{redis.__version__} ({parser}), redis_leaderboard {redis_leaderboard.__version__}.\n"
        f"upsert_user with 2 metadata fields, user ids random out of {USERS:,}, "
        f"max_entries={MAX_ENTRIES:,} (no trimming); median of {args.rounds} rounds of "
        f"{args.seconds:g} s per mode. Ours: one Client (one connection). Guide: "
        f"AsyncGuideLeaderboard on redis.asyncio, BlockingConnectionPool(max_connections="
        f"{GUIDE_POOL}). redis-benchmark: the same EVALSHA (script {command[1][:12]}...) with "
        f"-r {USERS} (__rand_int__ for user id and score): -c 1 -P {PIPELINE} (the reference of "
        f"the ratio column), -c 1 -P 1, -c 50 -P {PIPELINE}.\n"
        f"Round trips per call: ours from Client.stats() during the timed runs; the guide's "
        f"request writes on a counting connection; redis-benchmark 1/P."
    )
    return "\n".join([header, "", *rows, "", *verdict, ""])


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="per measurement (1.5)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the median is reported (3)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1:
        parser.error("--seconds must be > 0 and --rounds >= 1")

    return serve_and_report(
        "bench_async", args, argv, lambda server: asyncio.run(bench(server, args))
    )


if __name__ == "__main__":
    sys.exit(main())
