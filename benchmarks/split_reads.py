"""Reads of many entries in two steps against one script, side by side: what the guide's two
steps (the ranked read, then the entries' ``HGETALL``s pipelined; SplitRead in
cpp/leaderboard/operations.cpp, which the sync client runs from 50 entries on ``get_top``, 100
elsewhere) cost the server and the caller, against the same read as one ``no-writes`` script
(the operation's ``in_one_trip()``: what a read of a ``run_pipelined`` stream runs, and every
client before; the cluster client until 2026-12-08).

    python benchmarks/split_reads.py [--sizes 1000,100000] [--rounds 5] [--calls 400]
                                     [--counts 50,100,1000] [--cluster]

``--cluster``: the same on a ClusterClient, against a cluster of three primaries started for the
run (tests/launchers.py), the board's slot on one of them, pinned to CPU 1 (the other two idle).

Starts its own redis-server (never the machine's 6379), pinned to CPU 1 with this client on
CPU 0, and fills one board in the guide's layout (two metadata fields a player, as
``server_cost.py``). For each read, page size and board size, rounds alternate the two forms on
one sync client (the same board object, the same conversions into the guide's dicts): each form
makes ``--calls`` calls, every one timed, and the server's main-thread CPU over them (INFO CPU)
gives µs per call. Reported: the median over ``--rounds`` of each round's p50 latency and server
µs per call, and two steps / one script for both (below 1: the two steps cost less).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

import redis_leaderboard as rl
from bench_sync import RedisServer
from run import user_id
from server_cost import KEY, fill, pin, server_cpu

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
CLUSTER_KEY = "{bench}:cost"  # a hash tag: the board and its players' hashes in one slot


def reads(size: int, counts: list[int]) -> list[tuple[str, Callable[[Any, int], Any]]]:
    """(name, make(core board, i) -> operation) of the reads that split, at each page size."""
    rng = random.Random(5)
    ranks = [rng.randrange(size) + 1 for _ in range(4096)]
    ids = [user_id(rng.randrange(size)) for _ in range(8192)]
    out: list[tuple[str, Callable[[Any, int], Any]]] = []
    for count in counts:
        if count > size:
            continue
        out.append((f"get_top({count})", lambda b, i, c=count: b.get_top(c)))
        out.append(
            (
                f"get_around_rank(r, {count})",
                lambda b, i, c=count: b.get_around_rank(ranks[i % len(ranks)], c),
            )
        )
        out.append(
            (
                f"get_entries({count} ids)",
                lambda b, i, c=count: b.get_entries(
                    [ids[(i * c + k) % len(ids)] for k in range(c)]
                ),
            )
        )
    if size <= 1000:
        out.append(("list_all", lambda b, i: b.list_all()))
    return out


def paired_row(
    cells: list[str], split: list[tuple[float, float]], whole: list[tuple[float, float]]
) -> str:
    """A table row: ``cells``, then the medians of each form's rounds (a figure, then the
    server's µs per call), each followed by two steps / one script."""
    figures = [statistics.median(x[0] for x in side) for side in (split, whole)]
    cpus = [statistics.median(x[1] for x in side) for side in (split, whole)]
    return (
        f"| {' | '.join(cells)} | {figures[0]:,.0f} | {figures[1]:,.0f} | "
        f"{figures[0] / figures[1]:.2f}x | {cpus[0]:,.0f} | {cpus[1]:,.0f} | "
        f"{cpus[0] / cpus[1]:.2f}x |"
    )


def measure(
    client: Any,
    admin: redis.Redis,
    core: Any,
    make: Callable[[Any, int], Any],
    calls: int,
    whole: bool,
) -> tuple[float, float]:
    """(p50 µs, server µs per call) of ``calls`` runs of ``make(core, i)``'s operation (``core``:
    the board's ``_core.Board``), in one round trip if ``whole``."""

    def once(i: int) -> Any:
        operation = make(core, i)
        if whole:
            operation.in_one_trip()
        return client.run(operation)

    once(0)  # the script loaded
    times = []
    before = server_cpu(admin)
    for i in range(calls):
        started = time.perf_counter()
        once(i)
        times.append(time.perf_counter() - started)
    spent = server_cpu(admin) - before
    return statistics.median(times) * 1e6, spent * 1e6 / calls


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--counts", default="50,100,1000", help="entries a read")
    parser.add_argument("--cluster", action="store_true", help="on a ClusterClient")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        client: Any
        if args.cluster:
            from launchers import RedisCluster

            cluster = stack.enter_context(RedisCluster(primaries=3, replicas=0))
            node = cluster.owner(rl._core.key_slot(CLUSTER_KEY))
            pin(node.proc.pid)
            admin = redis.Redis(port=node.port, decode_responses=True)
            client = stack.enter_context(rl.ClusterClient(cluster.startup_nodes))
            key = CLUSTER_KEY
        else:
            server = stack.enter_context(RedisServer())  # type: ignore[no-untyped-call]
            pin(server.proc.pid)
            admin = redis.Redis(port=server.port, decode_responses=True)
            client = stack.enter_context(rl.Client(port=server.port))
            key = KEY
        run(args, admin, client, key)
    return 0


def run(args: argparse.Namespace, admin: redis.Redis, client: Any, key: str) -> None:
    """The table, for one client of one server (or the cluster node holding ``key``)."""
    board = rl.RedisLeaderboard(client, key=key, max_entries=None)
    where = "a cluster node" if args.cluster else "one server"
    print(f"redis-server {admin.info('server')['redis_version']} ({where}), {args.rounds} rounds")
    print(
        "| read | players | p50 µs, two steps | one script | ratio "
        "| server µs, two steps | one script | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        fill(admin, size, key)
        board.get_size()  # its options checked, as a board in use
        for name, make in reads(size, [int(c) for c in args.counts.split(",")]):
            calls = max(20, args.calls // (10 if "1000" in name or "list" in name else 1))
            split: list[tuple[float, float]] = []
            whole: list[tuple[float, float]] = []
            for _ in range(args.rounds):
                split.append(measure(client, admin, board._board, make, calls, False))
                whole.append(measure(client, admin, board._board, make, calls, True))
            print(paired_row([f"`{name}`", f"{size:,}"], split, whole), flush=True)


if __name__ == "__main__":
    sys.exit(main())
