"""What each ranking option costs (issue 12), and that a default board did not get slower.

Starts its own redis-server. Every measurement runs in a child process (``--worker``), so two
builds of the package can be compared on one server: the child imports ``redis_leaderboard``
from its ``PYTHONPATH``. Each child fills a fresh board of ``--board-size`` users (two metadata
fields, ``max_entries`` equal to the size: writes go to existing users and trim nobody), then
times each method call by call for ``--seconds`` and prints p50 (µs) and calls/s. Variants run
alternately, round after round; the report gives the median over rounds of each figure and of
the per-round ratios.

    python benchmarks/bench_options.py [--rounds 5] [--seconds 0.3] [--board-size 1000]
        [--base-pythonpath DIR [--default-only]]  # the default board: another build vs this

Without ``--base-pythonpath``: every order x ties board vs a default board, this build.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Optional

META = {"name": "Player", "description": "Solves production incidents before breakfast."}
DEFAULT_METHODS = ["upsert_user", "increment_score", "get_top", "get_rank", "get_user_entry"]
OPTION_METHODS = [*DEFAULT_METHODS, "submit_best", "get_around_rank_100"]
OPTIONS = [
    ("desc", "lexicographic"),
    ("asc", "lexicographic"),
    ("desc", "first"),
    ("desc", "competition"),
    ("desc", "dense"),
    ("asc", "dense"),
]


def worker(args: argparse.Namespace) -> None:
    import redis_leaderboard

    options: dict[str, str] = {}
    if args.order != "desc":
        options["order"] = args.order
    if args.ties != "lexicographic":
        options["ties"] = args.ties
    client = redis_leaderboard.Client(host="127.0.0.1", port=args.port)
    key = f"bench:{os.getpid()}:{args.order}:{args.ties}"
    board = redis_leaderboard.RedisLeaderboard(
        client, key=key, max_entries=args.board_size, **options
    )
    rng = random.Random(7)
    # Scores on 100 values: many ties, as the tie rules are about.
    board.upsert_many(
        (f"user-{i:06d}", float(rng.randrange(100)), META) for i in range(args.board_size)
    )
    ids = [f"user-{i:06d}" for i in range(args.board_size)]
    calls: dict[str, Callable[[], Any]] = {
        "upsert_user": lambda: board.upsert_user(rng.choice(ids), rng.randrange(100)),
        "increment_score": lambda: board.increment_score(rng.choice(ids), 1),
        "get_top": lambda: board.get_top(10),
        "get_rank": lambda: board.get_rank(rng.choice(ids)),
        "get_user_entry": lambda: board.get_user_entry(rng.choice(ids)),
        "submit_best": lambda: board.submit(rng.choice(ids), rng.randrange(100), mode="best"),
        "get_around_rank_100": lambda: board.get_around_rank(
            rng.randrange(1, args.board_size), 100
        ),
    }
    out: dict[str, dict[str, float]] = {}
    for method in args.methods.split(","):
        call = calls[method]
        for _ in range(50):  # warm up: scripts loaded, the board's options checked
            call()
        samples: list[int] = []
        clock = time.perf_counter_ns
        start = clock()
        deadline = start + int(args.seconds * 1e9)
        now = start
        while now < deadline:
            call()
            after = clock()
            samples.append(after - now)
            now = after
        out[method] = {
            "p50_us": statistics.median(samples) / 1000,
            "calls_per_s": len(samples) / ((now - start) / 1e9),
        }
    board.clear()
    client.close()
    print(json.dumps(out))


def run_worker(
    port: int, pythonpath: Optional[str], order: str, ties: str, methods: list[str], a: Any
) -> dict[str, dict[str, float]]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    command = [
        sys.executable, __file__, "--worker", "--port", str(port), "--order", order,
        "--ties", ties, "--methods", ",".join(methods), "--seconds", str(a.seconds),
        "--board-size", str(a.board_size),
    ]  # fmt: skip
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def median_table(
    rounds: list[dict[str, dict[str, dict[str, float]]]], variants: list[str], reference: str
) -> dict[tuple[str, str], dict[str, float]]:
    """(variant, method) -> medians of p50, calls/s and their per-round ratios to reference."""
    table: dict[tuple[str, str], dict[str, float]] = {}
    for variant in variants:
        for method in rounds[0][variant]:
            p50 = [r[variant][method]["p50_us"] for r in rounds]
            rate = [r[variant][method]["calls_per_s"] for r in rounds]
            ref_p50 = [r[reference][method]["p50_us"] for r in rounds if method in r[reference]]
            ref_rate = [
                r[reference][method]["calls_per_s"] for r in rounds if method in r[reference]
            ]
            row = {"p50_us": statistics.median(p50), "calls_per_s": statistics.median(rate)}
            if ref_p50:
                row["p50_ratio"] = statistics.median(a / b for a, b in zip(p50, ref_p50))
                row["rate_ratio"] = statistics.median(a / b for a, b in zip(rate, ref_rate))
            table[(variant, method)] = row
    return table


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--board-size", type=int, default=1000)
    parser.add_argument("--base-pythonpath", default=None)
    parser.add_argument(
        "--default-only", action="store_true", help="only the base comparison, not the options"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--order", default="desc", help=argparse.SUPPRESS)
    parser.add_argument("--ties", default="lexicographic", help=argparse.SUPPRESS)
    parser.add_argument("--methods", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    from redis_leaderboard.demo.embedded import EmbeddedRedis

    server = EmbeddedRedis()
    server.start()
    try:
        port = server.port
        print(f"redis-server on port {port}; {args.rounds} rounds of {args.seconds} s per method")
        if args.base_pythonpath:
            variants = ["base", "this"]
            rounds = []
            for n in range(args.rounds):
                result = {}
                # Alternate which goes first, round after round.
                for variant in variants if n % 2 == 0 else variants[::-1]:
                    path = args.base_pythonpath if variant == "base" else None
                    result[variant] = run_worker(
                        port, path, "desc", "lexicographic", DEFAULT_METHODS, args
                    )
                rounds.append(result)
            table = median_table(rounds, variants, "base")
            print("\nDefault board, this build vs the base build (medians; ratio = this / base)")
            print("| method | base p50 µs | this p50 µs | p50 ratio | base calls/s | this calls/s"
                  " | calls/s ratio |")  # fmt: skip
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for method in DEFAULT_METHODS:
                base, this = table[("base", method)], table[("this", method)]
                print(
                    f"| {method} | {base['p50_us']:.1f} | {this['p50_us']:.1f} | "
                    f"{this['p50_ratio']:.3f}x | {base['calls_per_s']:,.0f} | "
                    f"{this['calls_per_s']:,.0f} | {this['rate_ratio']:.3f}x |"
                )
        if args.default_only:
            return 0
        rounds = []
        names = [f"{o}/{t}" for o, t in OPTIONS]
        for n in range(args.rounds):
            result = {}
            order = OPTIONS if n % 2 == 0 else OPTIONS[::-1]
            for o, t in order:
                result[f"{o}/{t}"] = run_worker(port, None, o, t, OPTION_METHODS, args)
            rounds.append(result)
        table = median_table(rounds, names, "desc/lexicographic")
        print("\nEach option vs a default board (this build; medians; ratio = option / default)")
        print("| board | method | p50 µs | p50 vs default | calls/s | calls/s vs default |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for name in names:
            for method in OPTION_METHODS:
                row = table[(name, method)]
                print(
                    f"| {name} | {method} | {row['p50_us']:.1f} | {row['p50_ratio']:.2f}x | "
                    f"{row['calls_per_s']:,.0f} | {row['rate_ratio']:.2f}x |"
                )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
