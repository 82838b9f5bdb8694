"""The server's cost per call: the CPU one redis-server spends on each public call of a board,
ours against the redis.io guide's commands for the same answer (``guide_leaderboard.py`` on
redis-py), at board sizes 1k, 100k and 1M and page sizes 10, 100 and 1,000.

    python benchmarks/server_cost.py [--sizes 1000,100000,1000000] [--rounds 3]
                                     [--seconds 0.4] [--server redis-server] [--others]
                                     [--calls get_user_entry,get_top(100)]

Starts its own redis-server (never the machine's 6379), pinned to CPU 1 with this client on
CPU 0 (``taskset`` does the same by hand), and fills one board in the guide's layout (a sorted
set, one metadata hash of two fields per player): both clients read and write the very same
keys (our default board is the guide's layout byte for byte). For each call and size, each
client makes the call over and over for ``--seconds`` of wall time (at least 20 calls), and the
figure is the server's own main-thread CPU (INFO CPU ``used_cpu_user_main_thread`` +
``used_cpu_sys_main_thread``, getrusage of that thread) per call, in microseconds. Rounds
alternate ours and the guide's, so a drift of the machine hits both alike; the median of
``--rounds`` is reported, with the ratio ours / guide's (below 1: ours costs the server less).
The compact layout (``layout="compact"``: every player's metadata in one hash) is measured
on a second board of the same players (``bench:cost:compact``), against the same guide figure.
A third client, ours with the client-side cache (``client_cache=True``, warm: metadata served
from it, the server sends one ``ZRANGE`` a read), shows what a read-heavy board can take off
the server.
Writes rewrite existing players (the size stays; both boards are unlimited, so no trim). Each
size also prints the server's memory per player (INFO ``used_memory``, filled against empty).

``--others`` adds the main calls of the other board types (tournament, league, team, rolling
window, periodic board), each filled with ``--other-sizes`` players (default 1000; written from
500 asyncio tasks at a time): ours only, the guide has none of them.

The server's CPU is what bounds a board's shard: one Redis runs commands and scripts on one
thread, so ``1e6 / (µs per call)`` is the calls per second one core can serve at most (see
docs/pages/benchmarks.md, server cost).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

import redis_leaderboard as rl
from bench_sync import RedisServer
from guide_leaderboard import GuideLeaderboard
from run import COUNTRIES, user_id

KEY = "bench:cost"
COMPACT_KEY = "bench:cost:compact"  # the same players in the compact layout
UNLIMITED = 10**9  # the guide needs a limit: one no write reaches (its trim is then one ZCARD)


def server_cpu(admin: redis.Redis) -> float:
    """Seconds of CPU the server's main thread has spent (the whole process before Redis 7)."""
    fields = admin.info("cpu")
    if "used_cpu_user_main_thread" in fields:
        return float(fields["used_cpu_user_main_thread"]) + float(
            fields["used_cpu_sys_main_thread"]
        )
    return float(fields["used_cpu_user"]) + float(fields["used_cpu_sys"])


def fill(client: redis.Redis, size: int, key: str = KEY) -> None:
    """``size`` players in the guide's layout, scores random below ``size``."""
    rng = random.Random(7)
    client.delete(key)
    batch = 5000
    for first in range(0, size, batch):
        pipe = client.pipeline(transaction=False)
        scores = {}
        for i in range(first, min(first + batch, size)):
            scores[user_id(i)] = float(rng.randrange(size))
            pipe.hset(
                f"{key}:user:{user_id(i)}",
                mapping={"name": f"Player {i}", "country": COUNTRIES[i % 8]},
            )
        pipe.zadd(key, scores)
        pipe.execute()


def compact_value(fields: dict[str, str]) -> bytes:
    """A compact board's value for a player: the RESP array HGETALL would answer
    (encode_fields in cpp/leaderboard/scripts/lib/base.lua)."""
    items = [text.encode() for pair in fields.items() for text in pair]
    return b"*%d\r\n" % len(items) + b"".join(b"$%d\r\n%s\r\n" % (len(t), t) for t in items)


def fill_compact(client: redis.Redis, size: int, key: str = COMPACT_KEY) -> None:
    """The same players as ``fill`` in the compact layout: one hash ``f"{key}:meta"``."""
    rng = random.Random(7)
    client.delete(key, f"{key}:meta", f"{key}:options")
    client.hset(f"{key}:options", mapping={"order": "desc", "ties": "lexicographic",
                                           "layout": "compact"})  # fmt: skip
    batch = 5000
    for first in range(0, size, batch):
        pipe = client.pipeline(transaction=False)
        scores, meta = {}, {}
        for i in range(first, min(first + batch, size)):
            scores[user_id(i)] = float(rng.randrange(size))
            meta[user_id(i)] = compact_value({"name": f"Player {i}", "country": COUNTRIES[i % 8]})
        pipe.zadd(key, scores)
        pipe.hset(f"{key}:meta", mapping=meta)  # type: ignore[arg-type]
        pipe.execute()


def cost(admin: redis.Redis, call: Callable[[int], Any], seconds: float) -> float:
    """Server CPU microseconds per call of ``call(i)``, made for ``seconds`` (at least 20)."""
    call(0)  # warm: the script loaded, the connection open
    before = server_cpu(admin)
    stop = time.perf_counter() + seconds
    n = 0
    while n < 20 or time.perf_counter() < stop:
        call(n)
        n += 1
    return (server_cpu(admin) - before) * 1e6 / n


def plain_calls(size: int) -> list[tuple[str, Callable[[Any, int], Any]]]:
    """(name, call(board, i)): the same on ours and on the guide's (one method of both)."""
    rng = random.Random(11)
    ids = [user_id(rng.randrange(size)) for _ in range(4096)]
    ranks = [rng.randrange(size) + 1 for _ in range(4096)]

    def pick(values: list[Any], i: int) -> Any:
        return values[i % len(values)]

    calls: list[tuple[str, Callable[[Any, int], Any]]] = [
        ("get_rank", lambda b, i: b.get_rank(pick(ids, i))),
        ("get_size", lambda b, i: b.get_size()),
        ("get_user_metadata", lambda b, i: b.get_user_metadata(pick(ids, i))),
        ("get_user_entry", lambda b, i: b.get_user_entry(pick(ids, i))),
    ]
    for count in (10, 100, 1000):
        if count <= size:
            calls.append((f"get_top({count})", lambda b, i, c=count: b.get_top(c)))
    for count in (10, 100):
        calls.append(
            (
                f"get_around_rank({count})",
                lambda b, i, c=count: b.get_around_rank(pick(ranks, i), c),
            )
        )
    calls += [
        ("upsert_user", lambda b, i: b.upsert_user(pick(ids, i), i % size, {"name": "P"})),
        ("increment_score", lambda b, i: b.increment_score(pick(ids, i), 1)),
    ]
    if size <= 1000:
        calls.append(("list_all", lambda b, i: b.list_all()))
    return calls


# The other board types: (name, the constructor's keyword arguments, a write of player p, score
# n). Each is opened twice on the same key: asyncio to fill it fast, sync to measure.
OTHERS: list[tuple[str, str, dict[str, Any], Callable[[Any, str, int], Any]]] = [
    ("tournament", "Tournament", {"key": "bench:cup", "schedule": "day"},
     lambda b, p, n: b.submit(p, n)),
    ("league", "League", {"key": "bench:league"}, lambda b, p, n: b.submit(p, n)),
    ("team", "TeamLeaderboard", {"key": "bench:team"},
     lambda b, p, n: b.submit(p, n, team=f"team:{n % 20}")),
    ("rolling", "RollingLeaderboard",
     {"key": "bench:rolling", "window": timedelta(days=1), "bucket": timedelta(hours=1)},
     lambda b, p, n: b.submit(p, n)),
    ("periodic", "PeriodicLeaderboard", {"key": "bench:weekly", "period": "week"},
     lambda b, p, n: b.upsert_user(p, n)),
]  # fmt: skip


async def fill_others(url: str, size: int) -> None:
    """``size`` players on each of OTHERS, written from 500 asyncio tasks at a time."""
    import redis_leaderboard.asyncio as aio

    for _, cls, options, write in OTHERS:
        board = getattr(aio, cls)(url=url, **options)
        for first in range(0, size, 500):
            await asyncio.gather(
                *(write(board, user_id(n), n) for n in range(first, min(first + 500, size)))
            )
        await board.redis.aclose()


def other_calls(url: str, size: int) -> list[tuple[str, Any, Callable[[Any, int], Any]]]:
    """(name, board, call(board, i)) of the other board types, each filled with ``size``
    players (fill_others): their writes and their main reads."""
    boards = {name: getattr(rl, cls)(url=url, **options) for name, cls, options, _ in OTHERS}

    def pick(i: int) -> str:
        return user_id((i * 7919) % size)

    cup, league, team = boards["tournament"], boards["league"], boards["team"]
    rolling, periodic = boards["rolling"], boards["periodic"]
    return [
        ("tournament.submit", cup, lambda b, i: b.submit(pick(i), i)),
        ("tournament.get_top(10)", cup, lambda b, i: b.get_top(10)),
        ("tournament.get_top(100)", cup, lambda b, i: b.get_top(100)),
        ("tournament.get_user_entry", cup, lambda b, i: b.get_user_entry(pick(i))),
        ("tournament.get_rank", cup, lambda b, i: b.get_rank(pick(i))),
        ("league.submit", league, lambda b, i: b.submit(pick(i), i)),
        ("league.standings", league, lambda b, i: b.standings(pick(i))),
        ("league.tier_of", league, lambda b, i: b.tier_of(pick(i))),
        ("team.submit", team, lambda b, i: b.submit(pick(i), i, team=f"team:{i % 20}")),
        ("team.teams.get_top(10)", team, lambda b, i: b.teams.get_top(10)),
        ("team.members.get_top(100)", team, lambda b, i: b.members.get_top(100)),
        ("team.team_of", team, lambda b, i: b.team_of(pick(i))),
        ("rolling.submit", rolling, lambda b, i: b.submit(pick(i), i)),
        ("rolling.get_top(10)", rolling, lambda b, i: b.get_top(10)),
        ("rolling.get_top(100)", rolling, lambda b, i: b.get_top(100)),
        ("rolling.get_user_entry", rolling, lambda b, i: b.get_user_entry(pick(i))),
        ("periodic.upsert_user", periodic, lambda b, i: b.upsert_user(pick(i), i)),
        ("periodic.get_top(10)", periodic, lambda b, i: b.get_top(10)),
        ("periodic.get_top(100)", periodic, lambda b, i: b.get_top(100)),
        ("periodic.get_user_entry", periodic, lambda b, i: b.get_user_entry(pick(i))),
    ]


def pin(server_pid: int) -> None:
    """The server on CPU 1, this client on CPU 0, where there are two."""
    if (os.cpu_count() or 1) < 2:
        return
    os.sched_setaffinity(server_pid, {1})
    os.sched_setaffinity(0, {0})


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.4)
    parser.add_argument("--server", default="redis-server")
    parser.add_argument("--others", action="store_true")
    parser.add_argument(
        "--other-sizes", default="1000", help="with --others: the other board types' sizes"
    )
    parser.add_argument("--calls", default="", help="only these calls (names as printed)")
    args = parser.parse_args(argv)
    only = set(filter(None, args.calls.split(",")))
    sizes = [int(s) for s in args.sizes.split(",")]

    with RedisServer() as server:  # type: ignore[no-untyped-call]
        pin(server.proc.pid)
        admin = redis.Redis(port=server.port, decode_responses=True)
        url = f"redis://127.0.0.1:{server.port}"
        version = admin.info("server")["redis_version"]
        ours = rl.RedisLeaderboard(url=url, key=KEY, max_entries=None)
        compact = rl.RedisLeaderboard(url=url, key=COMPACT_KEY, max_entries=None, layout="compact")
        cached = rl.RedisLeaderboard(
            rl.Client(port=server.port, client_cache=True), key=KEY, max_entries=None
        )
        guide = GuideLeaderboard(
            redis.Redis(port=server.port, decode_responses=True), key=KEY, max_entries=UNLIMITED
        )
        print(f"server CPU per call, µs (redis-server {version}; median of {args.rounds} rounds)")
        print(
            f"{'call':<24} {'size':>9} {'ours':>9} {'compact':>9} {'cached':>9} {'guide':>9}"
            f" {'ours/guide':>11} {'compact/guide':>14} {'cached/guide':>13}"
        )
        for size in sizes:
            admin.flushall()
            empty = int(admin.info("memory")["used_memory"])
            fill(admin, size)
            filled = int(admin.info("memory")["used_memory"])
            fill_compact(admin, size)
            per_player = (filled - empty) / size
            per_compact = (int(admin.info("memory")["used_memory"]) - filled) / size
            print(
                f"{size:,} players: {per_player:.0f} bytes of used_memory each in the guide's "
                f"layout, {per_compact:.0f} in the compact one",
                flush=True,
            )
            for name, call in plain_calls(size):
                if only and name not in only:
                    continue
                boards: list[tuple[str, Any]] = [
                    ("ours", ours),
                    ("compact", compact),
                    ("cached", cached),
                ]
                boards.append(("guide", guide))
                runs: dict[str, list[float]] = {who: [] for who, _ in boards}
                for _ in range(args.rounds):
                    for who, board in boards:
                        runs[who].append(
                            cost(admin, lambda i, c=call, o=board: c(o, i), args.seconds)
                        )
                a, k, c, b = (statistics.median(runs[w]) for w, _ in boards)
                print(
                    f"{name:<24} {size:>9,} {a:>9.1f} {k:>9.1f} {c:>9.1f} {b:>9.1f}"
                    f" {a / b:>10.2f}x {k / b:>13.2f}x {c / b:>12.2f}x",
                    flush=True,
                )
        admin.flushall()
        for size in [int(s) for s in args.other_sizes.split(",")] if args.others else []:
            admin.flushall()
            asyncio.run(fill_others(url, size))
            for name, board, call in other_calls(url, size):
                if only and name not in only:
                    continue
                runs = [cost(admin, lambda i, c=call, o=board: c(o, i), args.seconds)
                        for _ in range(args.rounds)]  # fmt: skip
                print(f"{name:<24} {size:>9,} {statistics.median(runs):>9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
