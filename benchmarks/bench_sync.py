"""Calls per second and round trips per call: redis_leaderboard vs the guide's redis-py class.

Starts its own redis-server (from PATH, on a free port, data in a temporary directory, no
persistence) and stops it at exit, Ctrl+C included. For each method it measures
``redis_leaderboard.RedisLeaderboard`` (on ``redis_leaderboard.Client``) and the guide's
algorithm (``guide_leaderboard.GuideLeaderboard`` on redis-py with the hiredis parser,
``decode_responses=True``), alternating the two within every round, and reports the median
over rounds.

Both boards hold ``--board-size`` users with two metadata fields and ``max_entries`` equal to
that size, so every write of a new user trims one. Round trips per call come from
``Client.stats()`` for ours and from a counting redis-py connection (one request write = one
round trip) for the guide; commands per call are what the server counted (INFO commandstats).

    python benchmarks/bench_sync.py [--seconds 0.4] [--rounds 5] [--board-size 1000]
                                    [--markdown results.md]
"""

from __future__ import annotations

import argparse
import atexit
import gc
import itertools
import platform
import random
import signal
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import redis
from redis.utils import HIREDIS_AVAILABLE

import redis_leaderboard
from redis_leaderboard import _redis_server

try:
    from guide_leaderboard import GuideLeaderboard
except ImportError:  # run as ``python -m benchmarks.bench_sync``
    from benchmarks.guide_leaderboard import GuideLeaderboard

OURS, GUIDE = "ours", "guide"
META = {"name": "Player", "description": "Solves production incidents before breakfast."}
NEW_SCORE_BASE = 1e9  # above every prefilled score: each new user lands on top, the lowest goes


# --------------------------------------------------------------------------------------------
# A private redis-server


class RedisServer(_redis_server.RedisServer):
    """The package's private redis-server (free 127.0.0.1 port, temporary directory, no
    persistence; never outlives this process)."""

    def __init__(self) -> None:
        try:
            super().__init__(dir_prefix="redis-leaderboard-bench-")
        except _redis_server.RedisServerError as exc:
            raise SystemExit(str(exc)) from None


# --------------------------------------------------------------------------------------------
# Round-trip counting for redis-py


def counting_redis(host: str, port: int) -> tuple[redis.Redis, Callable[[], int]]:
    """A redis-py client that counts request writes: every command and every pipeline is sent
    with one ``send_packed_command`` and then waits for its replies, i.e. one round trip."""
    sent = [0]

    class CountingConnection(redis.Connection):
        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            sent[0] += 1
            super().send_packed_command(command, check_health)

    pool = redis.ConnectionPool(
        host=host, port=port, decode_responses=True, connection_class=CountingConnection
    )
    return redis.Redis(connection_pool=pool), lambda: sent[0]


def parser_name(client: redis.Redis) -> str:
    connection = client.connection_pool.get_connection()
    try:
        return type(connection._parser).__name__
    finally:
        client.connection_pool.release(connection)


def server_commands(admin: redis.Redis) -> int:
    """Commands the server has executed so far, the admin's INFO calls left out."""
    stats = admin.info("commandstats")
    return sum(v["calls"] for k, v in stats.items() if k != "cmdstat_info")


# --------------------------------------------------------------------------------------------
# The cases


@dataclass
class Impl:
    name: str
    board: Any  # the main board
    small: Any  # the 100-user board for list_all
    round_trips: Callable[[], int]
    new_ids: Any  # itertools.count for never-seen user ids


Op = Callable[[], Any]
After = Optional[Callable[[Any], None]]


@dataclass
class Case:
    label: str
    build: Callable[[Impl, redis.Redis, random.Random], tuple[Op, After]]


def members(admin: redis.Redis, key: str) -> list[tuple[str, float]]:
    return admin.zrange(key, 0, -1, withscores=True)


def cycle_ids(admin: redis.Redis, key: str, rng: random.Random) -> Any:
    ids = [user_id for user_id, _ in members(admin, key)]
    rng.shuffle(ids)
    return itertools.cycle(ids)


def case_upsert_new(impl: Impl, admin: redis.Redis, rng: random.Random) -> tuple[Op, After]:
    board, new_ids = impl.board, impl.new_ids

    def op() -> Any:
        n = next(new_ids)
        return board.upsert_user(f"new-{n}", NEW_SCORE_BASE + n, META)

    return op, None


def case_upsert_existing(impl: Impl, admin: redis.Redis, rng: random.Random) -> tuple[Op, After]:
    board, ids = impl.board, cycle_ids(admin, impl.board.key, rng)
    scores = itertools.cycle([float(rng.randrange(1_000_000)) for _ in range(997)])
    return (lambda: board.upsert_user(next(ids), next(scores), META)), None


def case_increment(impl: Impl, admin: redis.Redis, rng: random.Random) -> tuple[Op, After]:
    board, ids = impl.board, cycle_ids(admin, impl.board.key, rng)
    return (lambda: board.increment_score(next(ids), 1)), None


def by_user(method: str) -> Callable[[Impl, redis.Redis, random.Random], tuple[Op, After]]:
    def build(impl: Impl, admin: redis.Redis, rng: random.Random) -> tuple[Op, After]:
        call, ids = getattr(impl.board, method), cycle_ids(admin, impl.board.key, rng)
        return (lambda: call(next(ids))), None

    return build


def case_delete(impl: Impl, admin: redis.Redis, rng: random.Random) -> tuple[Op, After]:
    """delete_user of a present user; the user is re-added (untimed) after each call."""
    board = impl.board
    entries = members(admin, board.key)
    rng.shuffle(entries)
    cycle = itertools.cycle(entries)
    current: list[tuple[str, float]] = []

    def op() -> Any:
        current[:] = [next(cycle)]
        return board.delete_user(current[0][0])

    def after(result: Any) -> None:
        user_id, score = current[0]
        board.upsert_user(user_id, score, META)

    return op, after


def case_set_max_entries(impl: Impl, admin: redis.Redis, rng: random.Random) -> tuple[Op, After]:
    """set_max_entries(size - 1) on a full board, trimming the lowest user; the limit and the
    user are restored (untimed) after each call."""
    board = impl.board
    size = board.max_entries

    def after(trimmed: Any) -> None:
        board.set_max_entries(size)
        for user_id in trimmed:
            board.upsert_user(user_id, -1.0, META)

    return (lambda: board.set_max_entries(size - 1)), after


def const(make: Callable[[Any], Op], small: bool = False) -> Any:
    def build(impl: Impl, admin: redis.Redis, rng: random.Random) -> tuple[Op, After]:
        return make(impl.small if small else impl.board), None

    return build


def cases(board_size: int) -> list[Case]:
    return [
        Case("upsert_user (new user, trims 1)", case_upsert_new),
        Case("upsert_user (existing user)", case_upsert_existing),
        Case("increment_score", case_increment),
        Case("get_top(10)", const(lambda b: lambda: b.get_top(10))),
        Case("get_top(100)", const(lambda b: lambda: b.get_top(100))),
        Case("get_around_rank(50, 10)", const(lambda b: lambda: b.get_around_rank(50, 10))),
        Case("get_rank", by_user("get_rank")),
        Case("get_user_entry", by_user("get_user_entry")),
        Case("get_user_metadata", by_user("get_user_metadata")),
        Case("get_size", const(lambda b: b.get_size)),
        Case("delete_user (re-added untimed)", case_delete),
        Case("set_max_entries (trims 1; restored untimed)", case_set_max_entries),
        Case("list_all (100 users)", const(lambda b: b.list_all, small=True)),
        Case(f"list_all ({board_size} users)", const(lambda b: b.list_all)),
    ]


# --------------------------------------------------------------------------------------------
# Measuring


def calls_per_second(op: Op, after: After, seconds: float) -> float:
    gc.collect()
    clock = time.perf_counter
    calls = 0
    if after is None:
        start = clock()
        deadline = start + seconds
        now = start
        while now < deadline:
            op()
            calls += 1
            now = clock()
        return calls / (now - start)
    busy = 0.0
    deadline = clock() + seconds
    while clock() < deadline or calls == 0:
        t0 = clock()
        result = op()
        busy += clock() - t0
        calls += 1
        after(result)
    return calls / busy


def per_call_counts(
    impl: Impl, op: Op, after: After, admin: redis.Redis, calls: int
) -> tuple[float, float]:
    """(round trips, server commands) per call, counted around the timed call only."""
    round_trips = commands = 0
    for _ in range(calls):
        rt0, cmd0 = impl.round_trips(), server_commands(admin)
        result = op()
        round_trips += impl.round_trips() - rt0
        commands += server_commands(admin) - cmd0
        if after is not None:
            after(result)
    return round_trips / calls, commands / calls


def prefill(admin: redis.Redis, key: str, size: int, seed: int) -> None:
    admin.delete(key)
    for name in admin.scan_iter(match=f"{key}:user:*", count=1000):
        admin.delete(name)
    rng = random.Random(seed)
    with admin.pipeline(transaction=False) as pipe:
        for i in range(size):
            user_id = f"user-{i:06d}"
            pipe.zadd(key, {user_id: float(rng.randrange(1_000_000))})
            pipe.hset(f"{key}:user:{user_id}", mapping={**META, "name": f"Player {i}"})
        pipe.execute()


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def fmt_count(x: float) -> str:
    return str(round(x)) if abs(x - round(x)) < 0.005 else f"{x:.2f}"


def bench(server: RedisServer, args: argparse.Namespace) -> str:
    if not HIREDIS_AVAILABLE:
        raise SystemExit("hiredis is not installed: pip install hiredis")
    host, port, size = server.host, server.port, args.board_size
    admin = redis.Redis(host=host, port=port, decode_responses=True)
    guide_client = redis.Redis(host=host, port=port, decode_responses=True)
    counting_client, guide_round_trips = counting_redis(host, port)
    ours_client = redis_leaderboard.Client(host=host, port=port)
    parser = parser_name(guide_client)
    if "Hiredis" not in parser:
        raise SystemExit(f"redis-py is not using the hiredis parser ({parser})")

    keys = {OURS: "bench:ours", GUIDE: "bench:guide"}
    for key in keys.values():
        prefill(admin, key, size, seed=1)
        prefill(admin, key + ":small", 100, seed=2)

    def ours_impl() -> Impl:
        return Impl(
            OURS,
            redis_leaderboard.RedisLeaderboard(ours_client, key=keys[OURS], max_entries=size),
            redis_leaderboard.RedisLeaderboard(
                ours_client, key=keys[OURS] + ":small", max_entries=100
            ),
            lambda: ours_client.stats()["round_trips"],
            itertools.count(),
        )

    impls = {
        OURS: ours_impl(),
        GUIDE: Impl(
            GUIDE,
            GuideLeaderboard(guide_client, key=keys[GUIDE], max_entries=size),
            GuideLeaderboard(guide_client, key=keys[GUIDE] + ":small", max_entries=100),
            guide_round_trips,
            itertools.count(),
        ),
    }
    # The guide's round trips are counted on their own client, so the timed one is plain redis-py.
    counted_guide = Impl(
        GUIDE,
        GuideLeaderboard(counting_client, key=keys[GUIDE], max_entries=size),
        GuideLeaderboard(counting_client, key=keys[GUIDE] + ":small", max_entries=100),
        guide_round_trips,
        impls[GUIDE].new_ids,
    )
    all_cases = cases(size)

    # Warm up (connections, script cache, allocator), then count round trips and commands.
    counts: dict[tuple[str, str], tuple[float, float]] = {}
    for case in all_cases:
        for name, impl in ((OURS, impls[OURS]), (GUIDE, counted_guide)):
            op, after = case.build(impl, admin, random.Random(0))
            calls_per_second(op, after, 0.05)
            counts[case.label, name] = per_call_counts(impl, op, after, admin, args.count_calls)

    rates: dict[tuple[str, str], list[float]] = {}
    for round_no in range(args.rounds):
        print(f"round {round_no + 1}/{args.rounds}", file=sys.stderr, flush=True)
        for index, case in enumerate(all_cases):
            order = (OURS, GUIDE) if (round_no + index) % 2 == 0 else (GUIDE, OURS)
            for name in order:
                op, after = case.build(impls[name], admin, random.Random(round_no * 1000 + index))
                rate = calls_per_second(op, after, args.seconds)
                rates.setdefault((case.label, name), []).append(rate)

    for name, key in keys.items():
        assert admin.zcard(key) == size, (name, admin.zcard(key))
    ours_client.close()
    for client in (guide_client, counting_client, admin):
        client.close()

    rows = [
        "| method | ours calls/s | guide calls/s | ratio | ours RT/call | guide RT/call |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    cmd_rows = [
        "| method | ours cmds/call | guide cmds/call |",
        "| --- | ---: | ---: |",
    ]
    for case in all_cases:
        ours = statistics.median(rates[case.label, OURS])
        guide = statistics.median(rates[case.label, GUIDE])
        (ours_rt, ours_cmd), (guide_rt, guide_cmd) = (
            counts[case.label, OURS],
            counts[case.label, GUIDE],
        )
        rows.append(
            f"| {case.label} | {fmt_rate(ours)} | {fmt_rate(guide)} | {ours / guide:.2f}x "
            f"| {fmt_count(ours_rt)} | {fmt_count(guide_rt)} |"
        )
        cmd_rows.append(f"| {case.label} | {fmt_count(ours_cmd)} | {fmt_count(guide_cmd)} |")

    header = (
        f"redis-server {server.version()} on 127.0.0.1 (TCP), Python {platform.python_version()}, "
        f"redis-py {redis.__version__} ({parser}), redis_leaderboard "
        f"{redis_leaderboard.__version__}.\n"
        f"Board of {size} users (2 metadata fields each), max_entries={size}; median of "
        f"{args.rounds} rounds of {args.seconds:g} s per method and implementation, the two "
        f"alternating within each round. ratio = ours / guide. RT = round trips (ours: "
        f"Client.stats(); guide: request writes on a counting redis-py connection), averaged "
        f"over {args.count_calls} calls."
    )
    footer = (
        "Commands per call as counted by the server (INFO commandstats): the guide's pipelines "
        "are MULTI/EXEC transactions (both counted); ours runs Lua scripts, counted as the "
        "EVALSHA plus every command the script calls."
    )
    return "\n".join([header, "", *rows, "", footer, "", *cmd_rows, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=0.4, help="per measurement (0.4)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported (5)")
    parser.add_argument("--board-size", type=int, default=1000, help="users = max_entries (1000)")
    parser.add_argument("--count-calls", type=int, default=20, help=argparse.SUPPRESS)
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1 or args.board_size < 100:
        parser.error("--seconds must be > 0, --rounds >= 1, --board-size >= 100")

    return serve_and_report("bench_sync", args, argv, lambda server: bench(server, args))


def serve_and_report(
    name: str, args: argparse.Namespace, argv: Optional[list[str]], body: Callable[[Any], str]
) -> int:
    """Run ``body`` on a private redis-server, print its report (and write it to
    ``args.markdown``). Ctrl+C (even if SIGINT was inherited as ignored) and SIGTERM stop the
    server on the way out."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    server = RedisServer()
    atexit.register(server.cleanup)
    try:
        server.start()
        report = body(server)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        server.cleanup()
    print(report)
    if args.markdown:
        command = " ".join(["python", *sys.argv]) if argv is None else f"{name}.main(...)"
        args.markdown.write_text(f"# {name}\n\n`{command}`\n\n{report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
