"""Big reads from many asyncio tasks: the reply-bytes window (``max_bytes_in_flight``) against
none (0, every build before it) and against redis.asyncio, side by side in one run.

Starts its own redis-server (never the machine's 6379) with ``--users`` users (two metadata
fields each, ~100 bytes an entry on the wire). For each concurrency of ``--tasks``, runs
``get_top(100)`` (~10 KB a reply) and ``get_rank`` (a few bytes) from that many tasks on one
client for ``--seconds``: ours with ``max_bytes_in_flight=0`` (the default, no byte limit: up
to ``max_in_flight``, 1,024, requests pipelined on the one connection), ours with each
``--budgets`` value (default 64 KiB, 256 KiB and 1 MiB), and redis.asyncio (a pool as large
as the tasks, the very request ours sends: the EVALSHA of our window script, or ZREVRANK).
Rounds alternate the clients so a drift of the machine hits each alike; the best round of each
is reported (calls a second), with each one's ratio to redis.asyncio.

    python benchmarks/bench_big_reads.py [--tasks 1,100,1000] [--seconds 1] [--rounds 3]
                                         [--budgets 65536,262144,1048576]

On 2 cores the client and the server compete: pin them (``taskset``) for steadier figures.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import parse_request

KEY = "bench:big-reads"
META = {"name": "Player", "country": "NL"}


async def rate(call: Callable[[], Awaitable[Any]], tasks: int, seconds: float) -> float:
    """Calls a second of ``call`` from ``tasks`` tasks, each calling it again as it returns."""
    stop = time.perf_counter() + seconds
    done = 0

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await call()
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    return done / (time.perf_counter() - started)


def ours_call(board: Any, method: str, user: str) -> Callable[[], Awaitable[Any]]:
    if method == "get_rank":
        return lambda: board.get_rank(user)
    return lambda: board.get_top(100)


def peer_call(peer: Any, method: str, user: str, top: list[bytes]) -> Callable[[], Awaitable[Any]]:
    if method == "get_rank":
        return lambda: peer.zrevrank(KEY, user)
    return lambda: peer.execute_command(*top)


async def measure(port: int, args: argparse.Namespace) -> list[str]:
    import redis.asyncio as redis_asyncio

    import redis_leaderboard.asyncio as aio
    from redis_leaderboard import _core

    filler = aio.RedisLeaderboard(url=f"redis://127.0.0.1:{port}/0", key=KEY, max_entries=None)
    await filler.upsert_many([(f"user:{i:08d}", i, META) for i in range(args.users)])
    await filler.redis.aclose()
    top = parse_request(_core.Board(KEY, None).get_top(100).request())[0]
    rank_user = f"user:{args.users // 2:08d}"
    budgets = [0, *args.budgets]

    def label(budget: int) -> str:
        return "ours (no byte limit)" if budget == 0 else f"ours ({budget // 1024} KiB)"

    lines = [
        "| call | tasks | " + " | ".join(label(b) for b in budgets) + " | redis.asyncio |",
        "|---|---:|" + "---:|" * (len(budgets) + 1),
    ]
    for method in ("get_top(100)", "get_rank"):
        for tasks in args.tasks:
            best: dict[str, float] = {}
            peer = redis_asyncio.Redis(host="127.0.0.1", port=port, max_connections=tasks)
            for _ in range(args.rounds):
                for budget in budgets:
                    client = aio.Client(host="127.0.0.1", port=port, max_bytes_in_flight=budget)
                    board = aio.RedisLeaderboard(client, key=KEY)
                    ours = ours_call(board, method, rank_user)
                    await ours()
                    measured = await rate(ours, tasks, args.seconds)
                    best[label(budget)] = max(best.get(label(budget), 0.0), measured)
                    await client.aclose()
                theirs = peer_call(peer, method, rank_user, top)
                measured = await rate(theirs, tasks, args.seconds)
                best["redis.asyncio"] = max(best.get("redis.asyncio", 0.0), measured)
            await peer.aclose()
            reference = best["redis.asyncio"]
            cells = [f"{best[label(b)]:,.0f} ({best[label(b)] / reference:.2f}x)" for b in budgets]
            lines.append(f"| {method} | {tasks} | " + " | ".join(cells) + f" | {reference:,.0f} |")
            print(lines[-1], flush=True)
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--tasks", default="1,100,1000")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--budgets", default="65536,262144,1048576", help="max_bytes_in_flight values to try"
    )
    args = parser.parse_args(argv)
    args.tasks = [int(t) for t in args.tasks.split(",")]
    args.budgets = [int(b) for b in args.budgets.split(",") if b]

    from redis_leaderboard._redis_server import RedisServer

    with RedisServer() as server:
        lines = asyncio.run(measure(server.port, args))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
