"""What each guard (issue 17; the score limits, issue 28) costs on ``submit()``: p50 and calls/s
vs plain ``submit``.

Starts its own redis-server. Variants, each on its own board of ``--board-size`` users (two
metadata fields; ``max_entries`` equal to the size, so writes trim nobody):

- ``plain``: ``submit(user, score)`` on a default board (the options path of write.lua);
- ``submission_id``: the same with a new id per call (GET, then SET PX of the packed result);
- ``rate_limit``: a board with ``rate_limit=(10**9, 60)`` (TIME, ZCOUNT, ZREMRANGEBYSCORE,
  ZADD, PEXPIRE; never refused);
- ``events``: a board with ``events=True`` (a rank, a ZRANGE of the passed and XADD MAXLEN ~);
- ``all``: the three together;
- ``score_limits``: a board with ``score_range`` and ``max_increment`` (fair play, issue 28;
  wide enough never to refuse: a few comparisons in the script, the options hash read);
- ``hidden_players``: a default board with one hidden player who never writes (fair play):
  every write takes the options path and looks its user up (HGET, EXISTS).

Sync: one thread, call after call, p50 (µs) and calls/s; asyncio: ``--tasks`` concurrent tasks
on one client, calls/s. Variants alternate, round after round; the report gives the median over
rounds of each figure and of each variant's ratio to ``plain`` in the same round.

``--removals``: what removals cost instead (their events, issue 17): sync p50 of
``delete_user`` (on a board of ``--board-size``; each deleted user is written back, untimed)
and of ``clear`` (a board of ``CLEAR_SIZE`` users, refilled untimed), on a default board
(``plain``) and one with ``events=True``, each as a ratio to one ``ZSCORE`` round trip in the
same round (``floor``): run it with two builds to compare them on a loaded machine.

    python benchmarks/bench_guards.py [--rounds 5] [--seconds 0.5] [--board-size 1000]
        [--tasks 200] [--removals]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import time
from typing import Any, Callable, Optional

META = {"name": "Player", "description": "Solves production incidents before breakfast."}
VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "submission_id": {},
    "rate_limit": {"rate_limit": (10**9, 60)},
    "events": {"events": True},
    "all": {"rate_limit": (10**9, 60), "events": True},
    "score_limits": {"score_range": (-1e18, 1e18), "max_increment": 1e18},
    "hidden_players": {},  # and board.hide("ghost") once filled
}
ids = itertools.count()
REMOVAL_VARIANTS: dict[str, dict[str, Any]] = {"plain": {}, "events": {"events": True}}
CLEAR_SIZE = 100


def with_id(variant: str) -> bool:
    return variant in ("submission_id", "all")


def fill(board: Any, size: int) -> None:
    board.upsert_many((f"u{i}", float(i), META) for i in range(size))


def sync_round(board: Any, variant: str, size: int, seconds: float) -> tuple[float, float]:
    rng = random.Random(1)
    use_id = with_id(variant)
    times = []
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        user = f"u{rng.randrange(size)}"
        score = rng.random() * size
        started = time.perf_counter()
        if use_id:
            board.submit(user, score, submission_id=f"s{next(ids)}")
        else:
            board.submit(user, score)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6, len(times) / sum(times)


async def async_round(board: Any, variant: str, size: int, seconds: float, tasks: int) -> float:
    use_id = with_id(variant)
    calls = 0
    until = time.perf_counter() + seconds

    async def task(seed: int) -> None:
        nonlocal calls
        rng = random.Random(seed)
        while time.perf_counter() < until:
            user = f"u{rng.randrange(size)}"
            if use_id:
                await board.submit(user, rng.random() * size, submission_id=f"a{next(ids)}")
            else:
                await board.submit(user, rng.random() * size)
            calls += 1

    started = time.perf_counter()
    await asyncio.gather(*(task(i) for i in range(tasks)))
    return calls / (time.perf_counter() - started)


def removal_round(client: Any, board: Any, size: int, seconds: float) -> dict[str, float]:
    """p50 (µs) of one ZSCORE (the floor), delete_user and clear on `board`."""
    rng = random.Random(2)
    floor, deletes, clears = [], [], []
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        user = f"u{rng.randrange(size)}"
        started = time.perf_counter()
        client.execute_command("ZSCORE", board.key, user)
        floor.append(time.perf_counter() - started)
        started = time.perf_counter()
        board.delete_user(user)
        deletes.append(time.perf_counter() - started)
        board.upsert_user(user, float(rng.randrange(size)), META)
    clear_board = type(board)(client, f"{board.key}:clear", CLEAR_SIZE, events=board.events_enabled)
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        clear_board.upsert_many((f"c{i}", float(i), META) for i in range(CLEAR_SIZE))
        started = time.perf_counter()
        clear_board.clear()
        clears.append(time.perf_counter() - started)
    return {
        "floor": statistics.median(floor) * 1e6,
        "delete_user": statistics.median(deletes) * 1e6,
        "clear": statistics.median(clears) * 1e6,
    }


def removals(client: Any, size: int, rounds: int, seconds: float) -> None:
    import redis_leaderboard

    boards = {}
    for variant, options in REMOVAL_VARIANTS.items():
        board = redis_leaderboard.RedisLeaderboard(client, f"bench:rm:{variant}", size, **options)
        fill(board, size)
        boards[variant] = board
    figures: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for variant, board in boards.items():
            got = removal_round(client, board, size, seconds)
            for name in ("delete_user", "clear"):
                figures.setdefault((variant, name), []).append(got[name])
                figures.setdefault((variant, f"{name}/floor"), []).append(got[name] / got["floor"])
            figures.setdefault((variant, "floor"), []).append(got["floor"])
    print(
        f"removals (issue 17): delete_user on a board of {size} users, clear of {CLEAR_SIZE}; "
        f"{rounds} rounds of {seconds} s per variant and operation, alternating; "
        f"redis_leaderboard from {redis_leaderboard.__file__}\n"
    )
    lines = ["| sync p50 | " + " | ".join(REMOVAL_VARIANTS) + " |"]
    lines.append("|---|" + "---:|" * len(REMOVAL_VARIANTS))
    for name in ("floor", "delete_user", "clear"):
        cells = [f"{statistics.median(figures[(v, name)]):.1f} µs" for v in REMOVAL_VARIANTS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name in ("delete_user/floor", "clear/floor"):
        cells = [f"{statistics.median(figures[(v, name)]):.2f}x" for v in REMOVAL_VARIANTS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    print("\n".join(lines))


def table(
    title: str, rows: dict[str, list[float]], ratios: dict[str, list[float]], fmt: Callable
) -> str:
    lines = [f"| {title} | median | vs plain |", "|---|---:|---:|"]
    for variant, values in rows.items():
        ratio = statistics.median(ratios[variant])
        lines.append(f"| {variant} | {fmt(statistics.median(values))} | {ratio:.2f}x |")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--board-size", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--removals", action="store_true", help="delete_user and clear instead")
    args = parser.parse_args(argv)

    import redis_leaderboard
    from redis_leaderboard import asyncio as rl_asyncio
    from redis_leaderboard._redis_server import RedisServer

    server = RedisServer(dir_prefix="redis-leaderboard-bench-")
    server.start()
    try:
        client = redis_leaderboard.Client(port=server.port)
        size = args.board_size
        if args.removals:
            removals(client, size, args.rounds, args.seconds)
            client.close()
            return 0
        boards = {}
        for variant, options in VARIANTS.items():
            board = redis_leaderboard.RedisLeaderboard(
                client, f"bench:{variant}", size, **options, events_maxlen=10000
            )
            fill(board, size)
            if variant == "hidden_players":
                board.hide("ghost")
            boards[variant] = board

        p50: dict[str, list[float]] = {v: [] for v in VARIANTS}
        sync_rate: dict[str, list[float]] = {v: [] for v in VARIANTS}
        async_rate: dict[str, list[float]] = {v: [] for v in VARIANTS}

        async def async_rounds() -> None:
            aclient = rl_asyncio.Client(port=server.port)
            aboards = {
                v: rl_asyncio.RedisLeaderboard(aclient, f"bench:{v}", size, **o)
                for v, o in VARIANTS.items()
            }
            for _ in range(args.rounds):
                for variant in VARIANTS:
                    rate = await async_round(
                        aboards[variant], variant, size, args.seconds, args.tasks
                    )
                    async_rate[variant].append(rate)
            await aclient.aclose()

        for _ in range(args.rounds):
            for variant in VARIANTS:
                median_us, rate = sync_round(boards[variant], variant, size, args.seconds)
                p50[variant].append(median_us)
                sync_rate[variant].append(rate)
        asyncio.run(async_rounds())

        def ratios(values: dict[str, list[float]]) -> dict[str, list[float]]:
            return {v: [a / b for a, b in zip(values[v], values["plain"])] for v in values}

        print(
            f"submit() with each guard of issue 17: board of {size} users, "
            f"{args.rounds} rounds of {args.seconds} s per variant, alternating\n"
        )
        print(table("sync p50 (µs)", p50, ratios(p50), lambda x: f"{x:.1f}"))
        print()
        print(table("sync calls/s", sync_rate, ratios(sync_rate), lambda x: f"{x:,.0f}"))
        print()
        print(
            table(
                f"asyncio calls/s ({args.tasks} tasks)",
                async_rate,
                ratios(async_rate),
                lambda x: f"{x:,.0f}",
            )
        )
        client.close()
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
