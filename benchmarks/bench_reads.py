"""Big reads, paired: ours against the exact floor, and with against without the client cache.

    python benchmarks/bench_reads.py [--blocks 5] [--calls 300] [--pin]

Starts its own redis-server (a free 127.0.0.1 port, a temporary directory) with a board of
1,000 users and one of 100 (two metadata fields each) and measures, in blocks of ``--calls``
pairs, calls of A and B alternating one by one, so that a slow spell of a shared machine hits
both sides of each pair; each block gives the ratio of the two medians, and the median of the
blocks is reported:

- ``get_top(100)`` and ``list_all`` (100 users): ours (``RedisLeaderboard`` on ``Client``)
  against the exact floor (the same request's bytes written on a raw socket, the replies read
  with hiredis' C parser, as ``run.py``'s RawFloor);
- ``get_top(100)`` and ``get_top(10)`` without and with ``client_cache=True`` (the board's
  metadata does not change: the cache is warm).

``--pin`` puts the server and this process on one CPU, as ``run.py``'s latency measurements.
"""

from __future__ import annotations

import argparse
import gc
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import hiredis

import redis_leaderboard as rl
from redis_leaderboard import _core

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sync import RedisServer
from run import MAX_ENTRIES, board_entries


def floor_call(host: str, port: int, request: bytes) -> Callable[[], Any]:
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = hiredis.Reader()

    def call() -> Any:
        sock.sendall(request)
        while True:
            reply = reader.gets()
            if reply is not False:
                return reply
            reader.feed(sock.recv(1 << 16))

    return call


def paired(a: Callable[[], Any], b: Callable[[], Any], n: int) -> tuple[float, float]:
    clock = time.perf_counter_ns
    la, lb = [], []
    for _ in range(n):
        t0 = clock()
        a()
        t1 = clock()
        b()
        t2 = clock()
        la.append(t1 - t0)
        lb.append(t2 - t1)
    return statistics.median(la) / 1000, statistics.median(lb) / 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--pin", action="store_true", help="server and client on one CPU")
    opts = parser.parse_args()
    server = RedisServer()
    server.start()
    try:
        if opts.pin and hasattr(os, "sched_setaffinity"):
            cpu = sorted(os.sched_getaffinity(0))[0]
            os.sched_setaffinity(server.proc.pid, [cpu])
            os.sched_setaffinity(0, [cpu])
        host, port = server.host, server.port
        loader = rl.Client(host=host, port=port)
        rl.RedisLeaderboard(loader, key="lb", max_entries=MAX_ENTRIES).upsert_many(
            board_entries(1000)
        )
        rl.RedisLeaderboard(loader, key="lb:small", max_entries=MAX_ENTRIES).upsert_many(
            board_entries(100)
        )
        ours = rl.RedisLeaderboard(
            rl.Client(host=host, port=port), key="lb", max_entries=MAX_ENTRIES
        )
        small = rl.RedisLeaderboard(ours.redis, key="lb:small", max_entries=MAX_ENTRIES)
        cached = rl.RedisLeaderboard(
            rl.Client(host=host, port=port, client_cache=True), key="lb", max_entries=MAX_ENTRIES
        )
        top_floor = floor_call(host, port, _core.Board("lb", MAX_ENTRIES).get_top(100).request())
        all_floor = floor_call(
            host, port, _core.Board("lb:small", MAX_ENTRIES).list_all().request()
        )
        cases = [
            ("get_top(100): ours / exact floor", lambda: ours.get_top(100), top_floor),
            ("list_all (100 users): ours / exact floor", small.list_all, all_floor),
            (
                "get_top(100): uncached / cached",
                lambda: ours.get_top(100),
                lambda: cached.get_top(100),
            ),
            (
                "get_top(10): uncached / cached",
                lambda: ours.get_top(10),
                lambda: cached.get_top(10),
            ),
        ]
        for name, a, b in cases:
            paired(a, b, 200)  # warm: scripts loaded, the cache filled
            ratios, pa, pb = [], [], []
            for _ in range(opts.blocks):
                gc.collect()
                x, y = paired(a, b, opts.calls)
                ratios.append(x / y)
                pa.append(x)
                pb.append(y)
            print(
                f"{name}: p50 {statistics.median(pa):.1f} / {statistics.median(pb):.1f} µs, "
                f"ratio {statistics.median(ratios):.2f} (blocks: "
                + ", ".join(f"{r:.2f}" for r in ratios)
                + ")"
            )
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
