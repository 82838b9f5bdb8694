"""Tournaments: a tournament submit against a plain submit, side by side in one run.

Starts its own redis-server (never the machine's 6379). Fills a tournament's current period and
a plain board with ``--players`` players each, then times ``--calls`` writes of random players,
one at a time, sync, alternating: ``Tournament.submit`` (every rule checked in the script: the
window on the server's clock, the period, the join, the capacity, the attempts; then one attempt
counted and the board's write) against ``RedisLeaderboard.submit`` (mode "best" on both). Reports
the p50 and p99 of each (client-side, one round trip each), and the ratio.

    python benchmarks/bench_tournament.py --players 100000 --calls 20000
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Optional


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args(argv)

    import redis_leaderboard
    from redis_leaderboard._redis_server import RedisServer

    server = RedisServer(dir_prefix="redis-leaderboard-bench-")
    server.start()
    try:
        client = redis_leaderboard.Client(port=server.port)
        # Limits that never refuse in the run, so every call runs every check and writes.
        tournament = redis_leaderboard.Tournament(
            client,
            "bench:tournament",
            schedule="week",
            max_size=10 * args.players,
            max_attempts=10 * args.calls,
            mode="best",
        )
        board = redis_leaderboard.RedisLeaderboard(client, "bench:plain", None)
        rng = random.Random(1)
        for i in range(args.players):
            score = rng.randint(0, 10_000)
            tournament.submit(f"p{i}", score)
            board.submit(f"p{i}", score, mode="best")
        times: dict[str, list[float]] = {"tournament": [], "plain": []}
        for _ in range(args.calls):
            user, score = f"p{rng.randrange(args.players)}", rng.randint(0, 10_000)
            t0 = time.perf_counter()
            tournament.submit(user, score)
            t1 = time.perf_counter()
            board.submit(user, score, mode="best")
            t2 = time.perf_counter()
            times["tournament"].append(t1 - t0)
            times["plain"].append(t2 - t1)
        p50 = {name: statistics.median(values) * 1e6 for name, values in times.items()}
        p99 = {
            name: sorted(values)[int(len(values) * 0.99)] * 1e6 for name, values in times.items()
        }
        print(f"{args.players:,} players, {args.calls:,} calls each, sync, one at a time")
        for name in ("tournament", "plain"):
            print(f"  {name:10} submit p50 {p50[name]:6.0f} us, p99 {p99[name]:6.0f} us")
        print(f"  tournament / plain p50: {p50['tournament'] / p50['plain']:.2f}x")
        client.close()
    finally:
        server.stop()
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
