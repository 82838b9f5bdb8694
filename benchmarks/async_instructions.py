"""CPU per call as instructions (callgrind), which a busy machine does not blur: sync, asyncio
at 1 task and at 1,000 tasks, for one or more builds, next to asyncio's own floor (a bare future
created, settled by ``call_soon`` and awaited by a task).

    python benchmarks/async_instructions.py [--builds NAME=PYTHON,...] [--methods get_rank,...]

Each figure is the difference between a run of N2 and of N1 calls, divided by N2 - N1, so start-up
cancels out; every thread of the process is counted (an I/O thread included). Needs valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

USER = "user:000000000001"
META = {"name": "Player", "country": "NL"}
MODES = (("sync", 500, 1500), ("1", 500, 1500), ("1000", 10_000, 30_000))


def worker(host: str, port: int, mode: str, n: int, method: str) -> None:
    if method == "floor":  # asyncio's own cost: no I/O at all

        async def bare() -> None:
            loop = asyncio.get_running_loop()
            tasks = int(mode)

            async def one() -> None:
                for _ in range(n // tasks):
                    future = loop.create_future()
                    loop.call_soon(future.set_result, None)
                    await future

            await asyncio.gather(*(one() for _ in range(tasks)))

        asyncio.run(bare())
        return
    import redis_leaderboard
    import redis_leaderboard.asyncio

    args: tuple[Any, ...] = {"get_size": (), "upsert_user": (USER, 5.0, META)}.get(method, (USER,))
    if mode == "sync":
        board = redis_leaderboard.RedisLeaderboard(
            redis_leaderboard.Client(host=host, port=port), key="lb"
        )
        call = getattr(board, method)
        for _ in range(n):
            call(*args)
        return

    async def main() -> None:
        async with redis_leaderboard.asyncio.Client(host=host, port=port) as client:
            call = getattr(redis_leaderboard.asyncio.RedisLeaderboard(client, key="lb"), method)
            tasks = int(mode)

            async def one() -> None:
                for _ in range(n // tasks):
                    await call(*args)

            await asyncio.gather(*(one() for _ in range(tasks)))

    asyncio.run(main())


def instructions(python: str, host: str, port: int, mode: str, n: int, method: str) -> int:
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, __file__]
    argv += ["--worker", host, str(port), mode, str(n), method]
    done = subprocess.run(argv, capture_output=True, text=True)
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    if done.returncode or not found:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", default=f"this={sys.executable}", help="NAME=PYTHON,...")
    parser.add_argument("--methods", default="get_rank,get_size,upsert_user")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        host, port, mode, n, method = opts.worker
        worker(host, int(port), mode, int(n), method)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind not found on PATH")
    builds = dict(b.split("=", 1) for b in opts.builds.split(","))
    import redis_leaderboard
    from bench_sync import RedisServer

    server = RedisServer()
    rows = []
    try:
        server.start()
        loader = redis_leaderboard.Client(host=server.host, port=server.port)
        redis_leaderboard.RedisLeaderboard(loader, key="lb").upsert_user(USER, 1, META)
        loader.close()
        first = next(iter(builds.values()))
        floor = [
            (instructions(first, server.host, server.port, mode, n2, "floor")
             - instructions(first, server.host, server.port, mode, n1, "floor")) // (n2 - n1)
            for mode, n1, n2 in MODES[1:]
        ]  # fmt: skip
        rows.append(f"| asyncio floor (bare future) | | {floor[0]:,} | {floor[1]:,} |")
        for method in opts.methods.split(","):
            for name, python in builds.items():
                cells = []
                for mode, n1, n2 in MODES:
                    a = instructions(python, server.host, server.port, mode, n1, method)
                    b = instructions(python, server.host, server.port, mode, n2, method)
                    cells.append(f"{(b - a) // (n2 - n1):,}")
                rows.append(f"| {method} ({name}) | " + " | ".join(cells) + " |")
                print(rows[-1], file=sys.stderr, flush=True)
    finally:
        server.cleanup()
    print("| call | sync | asyncio 1 task | asyncio 1,000 tasks |")
    print("| --- | ---: | ---: | ---: |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
