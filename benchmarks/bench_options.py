"""What each ranking option costs (issue 12), and that a default board did not get slower.

Starts its own redis-server. Every measurement runs in a child process (``--worker``), so two
builds of the package can be compared on one server: the child imports ``redis_leaderboard``
from its ``PYTHONPATH``. Each child fills a fresh board of ``--board-size`` users (two metadata
fields, ``max_entries`` equal to the size: writes go to existing users and trim nobody), then
times each method call by call for ``--seconds`` and prints p50 (µs), calls/s and the server's
time per call (``CONFIG RESETSTAT`` before, ``INFO commandstats`` after: the µs of its
EVALSHA/EVAL/ZREVRANK commands over their count; ``delete_user`` puts the user back untimed, with
ZADD and HSET), and CPU time per call, which a busy machine does not inflate the way it does
wall-clock times: the calling thread's (``time.thread_time``) and, on Linux, the redis-server main
thread's (``/proc/<pid>/task/<pid>/schedstat``, its own I/O included). Variants run alternately,
round after round; the report gives the median over rounds of each figure and of the per-round
ratios (server and CPU times: differences).

    python benchmarks/bench_options.py [--rounds 5] [--seconds 0.3] [--board-size 1000]
        [--base-pythonpath DIR [--default-only]]  # the default board: another build vs this

Without ``--base-pythonpath``: every order x ties board (and one with a tie-break column,
``desc/tiebreak``) vs a default board, this build.
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
# Every method a default board runs as a script (and get_rank, a script until checked).
DEFAULT_METHODS = [
    "upsert_user", "increment_score", "get_top", "get_around_rank", "get_rank", "get_user_entry",
    "delete_user", "set_max_entries", "list_all",
]  # fmt: skip
OPTION_METHODS = [
    "upsert_user", "increment_score", "get_top", "get_rank", "get_user_entry", "submit_best",
    "get_around_rank_100",
]  # fmt: skip
# The commands a method's server time is read from.
SERVER_COMMANDS = ("evalsha", "eval", "zrevrank")
OPTIONS = [
    ("desc", "lexicographic"),
    ("asc", "lexicographic"),
    ("desc", "first"),
    ("desc", "competition"),
    ("desc", "dense"),
    ("asc", "dense"),
    ("desc", "tiebreak"),  # tie-break columns (issue 28): one column, its values in each submit
]


def server_cpu_ns(pid: int) -> int:
    """The redis-server main thread's CPU time so far (Linux), else 0."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def worker(args: argparse.Namespace) -> None:
    import redis

    import redis_leaderboard

    options: dict[str, Any] = {}
    if args.order != "desc":
        options["order"] = args.order
    if args.ties == "tiebreak":
        options["tiebreak"] = (("kills", "desc"),)
    elif args.ties != "lexicographic":
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
    plain = redis.Redis(host="127.0.0.1", port=args.port, decode_responses=True)
    deleted: list[str] = []

    def delete_user() -> Any:
        deleted.append(rng.choice(ids))
        return board.delete_user(deleted[-1])

    def put_back() -> None:  # untimed, and not a script: the server time is the delete's
        user_id = deleted.pop()
        plain.zadd(key, {user_id: rng.randrange(100)})
        plain.hset(f"{key}:user:{user_id}", mapping=META)

    after: dict[str, Callable[[], None]] = {"delete_user": put_back}
    calls: dict[str, Callable[[], Any]] = {
        "upsert_user": lambda: board.upsert_user(rng.choice(ids), rng.randrange(100)),
        "increment_score": lambda: board.increment_score(rng.choice(ids), 1),
        "get_top": lambda: board.get_top(10),
        "get_around_rank": lambda: board.get_around_rank(rng.randrange(1, args.board_size), 10),
        "delete_user": delete_user,
        "set_max_entries": lambda: board.set_max_entries(args.board_size),
        "list_all": lambda: board.list_all(),
        "get_rank": lambda: board.get_rank(rng.choice(ids)),
        "get_user_entry": lambda: board.get_user_entry(rng.choice(ids)),
        "submit_best": lambda: board.submit(
            rng.choice(ids),
            rng.randrange(100),
            mode="best",
            **({"tiebreak": {"kills": rng.randrange(10)}} if "tiebreak" in options else {}),
        ),
        "get_around_rank_100": lambda: board.get_around_rank(
            rng.randrange(1, args.board_size), 100
        ),
    }
    out: dict[str, dict[str, float]] = {}
    for method in args.methods.split(","):
        call, untimed = calls[method], after.get(method, lambda: None)
        for _ in range(50):  # warm up: scripts loaded, the board's options checked
            call()
            untimed()
        samples: list[int] = []
        clock = time.perf_counter_ns
        plain.config_resetstat()
        busy = 0  # time spent in untimed()
        cpu, server_cpu = time.thread_time_ns(), server_cpu_ns(args.server_pid)
        start = clock()
        deadline = start + int(args.seconds * 1e9)
        now = start
        while now < deadline:
            call()
            done = clock()
            samples.append(done - now)
            untimed()
            now = clock()
            busy += now - done
        cpu = time.thread_time_ns() - cpu
        server_cpu = server_cpu_ns(args.server_pid) - server_cpu
        stats = plain.info("commandstats")
        server = [stats.get(f"cmdstat_{name}", {}) for name in SERVER_COMMANDS]
        server_calls = sum(s.get("calls", 0) for s in server)
        out[method] = {
            "p50_us": statistics.median(samples) / 1000,
            "calls_per_s": len(samples) / ((now - start - busy) / 1e9),
            "server_us": sum(s.get("usec", 0) for s in server) / max(1, server_calls),
            "client_cpu_us": cpu / len(samples) / 1000,  # untimed() included (delete_user)
            "server_cpu_us": server_cpu / len(samples) / 1000,
        }
    board.clear()
    client.close()
    plain.close()
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
        "--board-size", str(a.board_size), "--server-pid", str(a.server_pid),
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
            for name in ("server_us", "client_cpu_us", "server_cpu_us"):
                values = [r[variant][method][name] for r in rounds]
                refs = [r[reference][method][name] for r in rounds if method in r[reference]]
                row[name] = statistics.median(values)
                if refs:
                    row[name + "_diff"] = statistics.median(a - b for a, b in zip(values, refs))
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
    parser.add_argument("--server-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    from redis_leaderboard._redis_server import RedisServer

    server = RedisServer(dir_prefix="redis-leaderboard-bench-")
    server.start()
    args.server_pid = server.pid or 0
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
            print("\nDefault board, this build vs the base build (medians; ratio = this / base;")
            print(
                "server: µs per call in Redis (commandstats); CPU: µs per call; diff = this - base)"
            )
            print(
                "| method | base p50 µs | this p50 µs | p50 ratio | calls/s ratio"
                " | base server µs | this server µs | server diff"
                " | client CPU diff | server CPU diff |"
            )
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for method in DEFAULT_METHODS:
                base, this = table[("base", method)], table[("this", method)]
                print(
                    f"| {method} | {base['p50_us']:.1f} | {this['p50_us']:.1f} | "
                    f"{this['p50_ratio']:.3f}x | {this['rate_ratio']:.3f}x | "
                    f"{base['server_us']:.2f} | {this['server_us']:.2f} | "
                    f"{this['server_us_diff']:+.2f} | {this['client_cpu_us_diff']:+.2f} | "
                    f"{this['server_cpu_us_diff']:+.2f} |"
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
        print(
            "| board | method | p50 µs | p50 vs default | calls/s | calls/s vs default"
            " | server µs | server vs default |"
        )
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in names:
            for method in OPTION_METHODS:
                row = table[(name, method)]
                print(
                    f"| {name} | {method} | {row['p50_us']:.1f} | {row['p50_ratio']:.2f}x | "
                    f"{row['calls_per_s']:,.0f} | {row['rate_ratio']:.2f}x | "
                    f"{row['server_us']:.2f} | {row['server_us_diff']:+.2f} |"
                )
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
