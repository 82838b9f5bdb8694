"""CPU per call as instructions (callgrind), which a busy machine does not blur: sync, asyncio
at 1 task and at 1,000 tasks, for one or more builds and event loops, next to each loop's own
floor (a bare future created, settled by ``call_soon`` and awaited by a task).

    python benchmarks/async_instructions.py [--builds NAME=PYTHON,...] [--methods get_rank,...]
                                            [--loops asyncio,uvloop] [--repeat K] [--mallocs]
                                            [--sync-only]

Each figure is the difference between a run of N2 and of N1 calls, divided by N2 - N1, so start-up
cancels out; every thread of the process is counted (an I/O thread included). Needs valgrind.
A method may carry an int argument and a board: ``get_top:100@big`` is get_top(100) on a board of
200 users with metadata (``big``); the default board (``lb``) holds one user. A team board's
methods are ``team.submit``, ``team.team_of`` and ``team.move`` (one member, of team "red"), a
league's ``league.submit`` and ``league.tier_of``, a daily tournament's ``tournament.submit`` and
``tournament.status``.
``--mallocs`` adds calls to malloc, calloc and realloc per call (operator new's included), from
callgrind's call counts.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import event_loops  # noqa: E402

USER = "user:000000000001"
META = {"name": "Player", "country": "NL"}
MODES = (("sync", 500, 1500), ("1", 500, 1500), ("1000", 10_000, 30_000))
BIG = 200  # users on the board "big"
ALLOCATORS = ("malloc", "calloc", "realloc")
# Other board types' methods: (class, key, args, keyword args).
TYPED: dict[str, tuple[str, str, tuple[Any, ...], dict[str, Any]]] = {
    "team.submit": ("TeamLeaderboard", "teams", (USER, 5.0, META), {"team": "red"}),
    "team.team_of": ("TeamLeaderboard", "teams", (USER,), {}),
    "team.move": ("TeamLeaderboard", "teams", (USER, "red"), {}),
    "league.submit": ("League", "league", (USER, 5.0, META), {}),
    "league.tier_of": ("League", "league", (USER,), {}),
    "tournament.submit": ("Tournament", "cup", (USER, 5.0, META), {}),
    "tournament.status": ("Tournament", "cup", (USER,), {}),
}
# Their constructors' keyword arguments.
OPTIONS: dict[str, dict[str, Any]] = {"Tournament": {"schedule": "day"}}


def parse_method(spec: str) -> tuple[str, tuple[Any, ...], str]:
    """``name[:int][@board]`` -> (name, args, board)."""
    spec, _, key = spec.partition("@")
    name, _, arg = spec.partition(":")
    args: tuple[Any, ...] = {
        "get_size": (),
        "get_top": (10,),
        "upsert_user": (USER, 5.0, META),
    }.get(name, (USER,))
    if arg:
        args = (int(arg),)
    return name, args, key or "lb"


def run_on(loop_name: str, main: Coroutine[Any, Any, None]) -> None:
    loop = event_loops.new_event_loop(loop_name)
    try:
        loop.run_until_complete(main)
    finally:
        loop.close()


def worker(host: str, port: int, mode: str, n: int, method: str, loop_name: str) -> None:
    if method == "floor":  # the loop's own cost: no I/O at all

        async def bare() -> None:
            loop = asyncio.get_running_loop()
            tasks = int(mode)

            async def one() -> None:
                for _ in range(n // tasks):
                    future = loop.create_future()
                    loop.call_soon(future.set_result, None)
                    await future

            await asyncio.gather(*(one() for _ in range(tasks)))

        run_on(loop_name, bare())
        return
    import redis_leaderboard
    import redis_leaderboard.asyncio

    kwargs: dict[str, Any] = {}
    if method in TYPED:
        cls, key, args, kwargs = TYPED[method]
        method = method.split(".", 1)[1]
    else:
        cls = "RedisLeaderboard"
        method, args, key = parse_method(method)
    if mode == "sync":
        client = redis_leaderboard.Client(host=host, port=port)
        board = getattr(redis_leaderboard, cls)(client, key, **OPTIONS.get(cls, {}))
        call = getattr(board, method)
        for _ in range(n):
            call(*args, **kwargs)
        return

    async def main() -> None:
        async with redis_leaderboard.asyncio.Client(host=host, port=port) as client:
            board = getattr(redis_leaderboard.asyncio, cls)(client, key, **OPTIONS.get(cls, {}))
            call = functools.partial(getattr(board, method), *args, **kwargs)
            tasks = int(mode)

            async def one() -> None:
                for _ in range(n // tasks):
                    await call()

            await asyncio.gather(*(one() for _ in range(tasks)))

    run_on(loop_name, main())


def allocations(out_file: str) -> int:
    """Calls to malloc, calloc and realloc in a callgrind output file (name compression on)."""
    names: dict[str, str] = {}
    total = 0
    callee = ""
    with open(out_file) as lines:
        for line in lines:
            if line.startswith(("fn=", "cfn=", "cfi=", "cob=")):
                found = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
                if found:
                    if found.group(2):
                        names[found.group(1)] = found.group(2).strip()
                    if line.startswith("cfn="):
                        callee = names.get(found.group(1), "")
            elif line.startswith("calls=") and callee:
                if callee in ALLOCATORS:
                    total += int(line[6:].split()[0])
                callee = ""
    return total


def instructions(
    python: str,
    host: str,
    port: int,
    mode: str,
    n: int,
    method: str,
    loop_name: str,
    mallocs: bool = False,
) -> tuple[int, int]:
    """(instructions, calls to the allocators: 0 unless `mallocs`) of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "callgrind.out") if mallocs else "/dev/null"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}"]
        argv += [python, __file__, "--worker", host, str(port), mode, str(n), method, loop_name]
        done = subprocess.run(argv, capture_output=True, text=True)
        found = re.search(r"Collected : ([\d,]+)", done.stderr)
        if done.returncode or not found:
            raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
        return int(found.group(1).replace(",", "")), allocations(out_file) if mallocs else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", default=f"this={sys.executable}", help="NAME=PYTHON,...")
    parser.add_argument("--methods", default="get_rank,get_size,upsert_user")
    parser.add_argument("--loops", default="asyncio", help="event loops: asyncio,uvloop")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="measure each figure this many times, print the median (the 1,000-task figure "
        "varies a few percent from run to run: scheduling order, allocation patterns)",
    )
    parser.add_argument(
        "--mallocs",
        action="store_true",
        help="also count calls to malloc/calloc/realloc per call (shown after the instructions)",
    )
    parser.add_argument(
        "--sync-only",
        action="store_true",
        help="measure the sync client only (the asyncio columns are slow under callgrind for "
        "calls of 100k+ instructions)",
    )
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        host, port, mode, n, method, loop_name = opts.worker
        worker(host, int(port), mode, int(n), method, loop_name)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind not found on PATH")
    builds = dict(b.split("=", 1) for b in opts.builds.split(","))
    loops = [n for n in opts.loops.split(",") if n]
    event_loops.check(loops)
    import redis_leaderboard
    from bench_sync import RedisServer

    server = RedisServer()
    rows = []
    try:
        server.start()
        loader = redis_leaderboard.Client(host=server.host, port=server.port)
        redis_leaderboard.RedisLeaderboard(loader, key="lb").upsert_user(USER, 1, META)
        redis_leaderboard.TeamLeaderboard(loader, "teams").submit(USER, 1, META, team="red")
        big = redis_leaderboard.RedisLeaderboard(loader, key="big")
        for i in range(BIG):
            big.upsert_user(f"user:{i:012d}", i, {"name": f"Player {i}", "country": "NL"})
        loader.close()
        first = next(iter(builds.values()))

        def per_call(python: str, mode: str, n1: int, n2: int, method: str, loop: str) -> str:
            figures = []
            host, port = server.host, server.port
            for _ in range(opts.repeat):
                a = instructions(python, host, port, mode, n1, method, loop, opts.mallocs)
                b = instructions(python, host, port, mode, n2, method, loop, opts.mallocs)
                figures.append(((b[0] - a[0]) // (n2 - n1), (b[1] - a[1]) / (n2 - n1)))
            count, allocs = sorted(figures)[len(figures) // 2]
            return f"{count:,} ({allocs:.1f})" if opts.mallocs else f"{count:,}"

        for loop in [] if opts.sync_only else loops:
            floor = [per_call(first, *m, "floor", loop) for m in MODES[1:]]
            rows.append(f"| {loop} floor (bare future) | | {floor[0]} | {floor[1]} |")
            print(rows[-1], file=sys.stderr, flush=True)
        for method in opts.methods.split(","):
            for name, python in builds.items():
                sync = per_call(python, *MODES[0], method, loops[0])  # no loop in it
                for loop in loops:
                    others = ["—", "—"] if opts.sync_only else None
                    if others is None:
                        others = [per_call(python, *m, method, loop) for m in MODES[1:]]
                    cells = [sync, *others]
                    label = ", ".join(
                        ([name] if len(builds) > 1 or len(loops) == 1 else [])
                        + ([loop] if len(loops) > 1 else [])
                    )
                    rows.append(f"| {method} ({label}) | " + " | ".join(cells) + " |")
                    print(rows[-1], file=sys.stderr, flush=True)
    finally:
        server.cleanup()
    print(
        "| call | sync | asyncio 1 task | asyncio 1,000 tasks |"
        if loops == ["asyncio"]
        else "| call (loop) | sync | 1 task | 1,000 tasks |"
    )
    print("| --- | ---: | ---: | ---: |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
