"""Leagues: settling N players in cohorts, and a league submit against a plain submit.

Starts its own redis-server (never the machine's 6379). Fills a league of ``--players`` players
(one week, cohorts of ``--cohort-size``; the fill pipelines the league's own submit script, 64
in flight), then settles the week with ``League.settle()`` and reports its wall time and, from
SLOWLOG (every command logged while settling), the longest single script: the longest time
Redis was blocked. Then the p50 latency of ``League.submit`` (a placed player's write: its
league checks and the cohort board's write) against ``RedisLeaderboard.submit`` on a board of the
same size, sync, one at a time.

    python benchmarks/bench_league.py --players 1000000 --cohort-size 30
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator, Optional

UTC = timezone.utc


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--cohort-size", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args(argv)

    import redis_leaderboard
    from redis_leaderboard._redis_server import RedisServer

    server = RedisServer(dir_prefix="redis-leaderboard-bench-")
    server.start()
    try:
        client = redis_leaderboard.Client(port=server.port)
        today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
        now = [today - timedelta(days=today.weekday())]
        league = redis_leaderboard.League(
            client,
            "bench:league",
            cohort_size=args.cohort_size,
            promote=5,
            demote=5,
            clock=lambda: now[0],
        )
        partition = league._leagues[0]
        period = league._period(league._start_of(None))
        rng = random.Random(1)

        def fill() -> Iterator[Any]:
            for i in range(args.players):
                yield partition.submit(period, f"p{i}", rng.randint(0, 10_000), None, "", None, 0)

        started = time.perf_counter()
        client.run_pipelined(fill(), lambda _: None, 64)
        fill_seconds = time.perf_counter() - started
        print(f"filled {args.players:,} players in {fill_seconds:.1f} s")

        # p50 of a placed player's write, league vs plain board of the same size.
        board = redis_leaderboard.RedisLeaderboard(client, "bench:plain", None)
        board.upsert_many((f"p{i}", i) for i in range(args.players))
        league_times, plain_times = [], []
        for _ in range(args.calls):
            user = f"p{rng.randrange(args.players)}"
            t0 = time.perf_counter()
            league.submit(user, 1)
            t1 = time.perf_counter()
            board.submit(user, 1, mode="incr")
            t2 = time.perf_counter()
            league_times.append(t1 - t0)
            plain_times.append(t2 - t1)
        league_p50 = statistics.median(league_times) * 1e6
        plain_p50 = statistics.median(plain_times) * 1e6
        print(
            f"submit p50: league {league_p50:.0f} us, plain board {plain_p50:.0f} us "
            f"({league_p50 / plain_p50:.2f}x)"
        )

        import redis

        r = redis.Redis(port=server.port)
        r.config_set("slowlog-log-slower-than", 0)
        r.config_set("slowlog-max-len", 1_000_000)
        r.slowlog_reset()
        now[0] += timedelta(days=7)
        started = time.perf_counter()
        summary = league.settle()
        settle_seconds = time.perf_counter() - started
        entries = r.slowlog_get(1_000_000)
        scripts = [e for e in entries if e["command"].split(b" ")[0].upper() == b"EVALSHA"]
        longest = max(e["duration"] for e in scripts) / 1000
        p99 = sorted(e["duration"] for e in scripts)[int(len(scripts) * 0.99)] / 1000
        print(
            f"settled {summary['cohorts']:,} cohorts ({args.players:,} players, promoted "
            f"{summary['promoted']:,}, demoted {summary['demoted']:,}) in {settle_seconds:.1f} s; "
            f"longest script {longest:.2f} ms, p99 {p99:.3f} ms ({len(scripts):,} scripts)"
        )
        r.close()
        client.close()
    finally:
        server.stop()
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
