"""Team boards: a team board's submit against a plain submit, side by side in one run.

Starts its own redis-server (never the machine's 6379). Fills a team board (``--players``
members in ``--teams`` teams) and a plain board with the same players, then times ``--calls``
writes of random players, one at a time, sync, alternating: ``TeamLeaderboard.submit`` (the
member's write, their contribution and their team's score, in one script) against
``RedisLeaderboard.submit``, for ``aggregate="sum"`` and ``"best"``. Reports the p50 and p99 of
each (client-side, one round trip each), and the ratios.

    python benchmarks/bench_team.py --players 100000 --teams 1000 --calls 20000
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
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args(argv)

    import redis_leaderboard
    from redis_leaderboard._redis_server import RedisServer

    server = RedisServer()
    server.start()
    try:
        client = redis_leaderboard.Client(host=server.host, port=server.port)
        boards = {
            "team sum": redis_leaderboard.TeamLeaderboard(client, "bench:sum", aggregate="sum"),
            "team best": redis_leaderboard.TeamLeaderboard(client, "bench:best", aggregate="best"),
        }
        plain = redis_leaderboard.RedisLeaderboard(client, "bench:plain", None)
        rng = random.Random(1)
        for i in range(args.players):
            score, team = rng.randint(0, 10_000), f"t{i % args.teams}"
            for board in boards.values():
                board.submit(f"p{i}", score, team=team)
            plain.submit(f"p{i}", score)
        times: dict[str, list[float]] = {name: [] for name in (*boards, "plain")}
        for _ in range(args.calls):
            user, score = f"p{rng.randrange(args.players)}", rng.randint(0, 10_000)
            for name, board in boards.items():
                t0 = time.perf_counter()
                board.submit(user, score)
                times[name].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            plain.submit(user, score)
            times["plain"].append(time.perf_counter() - t0)
        p50 = {name: statistics.median(values) * 1e6 for name, values in times.items()}
        p99 = {
            name: sorted(values)[int(len(values) * 0.99)] * 1e6 for name, values in times.items()
        }
        print(
            f"{args.players:,} players in {args.teams:,} teams, {args.calls:,} calls each, "
            "sync, one at a time"
        )
        for name in times:
            print(f"  {name:10} submit p50 {p50[name]:6.0f} us, p99 {p99[name]:6.0f} us")
        for name in boards:
            print(f"  {name} / plain p50: {p50[name] / p50['plain']:.2f}x")
        client.close()
    finally:
        server.stop()
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
