"""The queries (issue 13) against the exact floor, on boards of 1,000 and 1,000,000 users.

Starts its own redis-server. Each board is filled with ``upsert_many`` (two metadata fields
per user, scores on 100,000 values so ties happen). For every query, each round times our sync
call call by call for ``--seconds``, then the exact floor: ``run.py``'s ``RawFloor``, the very
bytes our operation sends (captured from ``Board(...).<query>(...).request()``) written on a
raw socket and read with hiredis, one call at a time. redis-server and this process share one
CPU during the measurements (``run.py``'s ``Placement``, "phased"). The table gives medians
over ``--rounds`` of p50 (µs) and of the per-round ratio ours / floor, and ours at 1M / ours at
1k (the O(log N + M) claim: within 1.5x).

    python benchmarks/bench_queries.py [--rounds 5] [--seconds 0.3] [--sizes 1000,1000000]
        [--ties lexicographic]
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis_leaderboard
from redis_leaderboard import _redis_server
from run import Placement, RawFloor, parse_request

META = {"name": "Player", "description": "Solves production incidents before breakfast."}


def queries(size: int) -> list[tuple[str, str, tuple, dict]]:
    """(label, method, args, kwargs): a user in the middle of the board, windows of 10."""
    middle = f"user-{size // 2:07d}"
    return [
        ("get_around_rank(r, 10) (reference)", "get_around_rank", (size // 2, 10), {}),
        ("get_around_user(id, 10)", "get_around_user", (middle, 10), {}),
        ("get_entries(10 ids)", "get_entries", ([f"user-{i:07d}" for i in range(10)],), {}),
        ("get_page(middle, 10)", "get_page", (max(1, size // 20), 10), {}),
        ("get_by_score(range, limit 10)", "get_by_score", (40_000, 60_000), {"limit": 10}),
        (
            "get_by_score(range, offset 100, limit 10)",
            "get_by_score",
            (40_000, 60_000),
            {"offset": 100, "limit": 10},
        ),
        ("count_by_score", "count_by_score", (40_000, 60_000), {}),
        ("rank_for_score", "rank_for_score", (50_000.5,), {}),
        ("get_percentile", "get_percentile", (middle,), {}),
        ("score_at_percentile(50)", "score_at_percentile", (50,), {}),
        ("get_histogram(10)", "get_histogram", (10,), {}),
        ("get_histogram(100)", "get_histogram", (100,), {}),
    ]


def time_ours(call: Callable[[], Any], seconds: float) -> float:
    samples: list[int] = []
    clock = time.perf_counter_ns
    deadline = clock() + int(seconds * 1e9)
    while True:
        t0 = clock()
        call()
        t1 = clock()
        samples.append(t1 - t0)
        if t1 > deadline:
            break
    return statistics.median(samples) / 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--sizes", default="1000,1000000")
    parser.add_argument(
        "--ties",
        default="lexicographic",
        choices=["lexicographic", "first", "competition", "dense"],
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[tuple[str, int], dict[str, list[float]]] = {}
    with _redis_server.RedisServer(dir_prefix="bench-queries-") as server:
        server.start()
        assert server.pid is not None
        placement = Placement("phased", server.pid)
        client = redis_leaderboard.Client(host=server.host, port=server.port)
        floor = RawFloor(server.host, server.port)
        rng = random.Random(7)
        for size in sizes:
            key = f"bench:queries:{size}"
            board = redis_leaderboard.RedisLeaderboard(
                client, key=key, max_entries=size, ties=args.ties
            )
            placement.throughput()
            started = time.monotonic()
            board.upsert_many(
                (f"user-{i:07d}", float(rng.randrange(100_000)), META) for i in range(size)
            )
            print(f"# board of {size:,}: filled in {time.monotonic() - started:.1f} s", flush=True)
            placement.latency()
            for label, method, qargs, kwargs in queries(size):
                call = getattr(board, method)
                for _ in range(200):  # scripts loaded, options checked
                    call(*qargs, **kwargs)
                request = getattr(board._board, method)(*qargs, **kwargs).request()
                commands = [[a.decode() for a in c] for c in parse_request(request)]
                row = results.setdefault((label, size), {"ours": [], "floor": [], "ratio": []})
                for _ in range(args.rounds):
                    ours = time_ours(functools.partial(call, *qargs, **kwargs), args.seconds)
                    n = max(200, int(args.seconds * 1e6 / max(ours, 1.0)))
                    exact = floor.run(commands, 0, n, 1, 1).p50_us
                    row["ours"].append(ours)
                    row["floor"].append(exact)
                    row["ratio"].append(ours / exact)
                print(
                    f"{label} @ {size:,}: ours {statistics.median(row['ours']):.1f} µs, "
                    f"floor {statistics.median(row['floor']):.1f} µs",
                    flush=True,
                )
            board.clear()
        client.close()

    labels = [label for label, *_ in queries(sizes[0])]
    head = "| query | " + " | ".join(
        f"{s:,}: ours p50 µs | floor p50 µs | ours / floor" for s in sizes
    )
    if len(sizes) > 1:
        head += f" | ours {sizes[-1]:,} / {sizes[0]:,}"
    print()
    print(f"ties={args.ties}, {args.rounds} rounds of {args.seconds} s, medians over rounds")
    print()
    print(head + " |")
    print("| --- |" + " ---: |" * (3 * len(sizes) + (len(sizes) > 1)))
    for label in labels:
        cells = []
        for size in sizes:
            row = results[(label, size)]
            cells += [
                f"{statistics.median(row['ours']):.1f}",
                f"{statistics.median(row['floor']):.1f}",
                f"{statistics.median(row['ratio']):.2f}x",
            ]
        if len(sizes) > 1:
            growth = statistics.median(results[(label, sizes[-1])]["ours"]) / statistics.median(
                results[(label, sizes[0])]["ours"]
            )
            cells.append(f"{growth:.2f}x")
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
