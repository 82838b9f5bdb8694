"""Redis Cluster: routing overhead, sharded boards, and the server CPU per write behind a
capacity model.

Starts a single redis-server and a local cluster of 3 primaries + 3 replicas (from PATH, free
ports, temporary directories), and stops them at exit. Measures:

1. Routing overhead: p50 latency of upsert_user, get_top(10) and get_rank on a board on one
   node (Client) and on a hash-tagged board on the cluster (ClusterClient), alternating the two
   call by call.
2. Sharded boards at 1, 3 and 16 shards (each pre-filled with --players users): p50 of a write
   (upsert_user), get_top(10) and get_rank, and the round trips per call.
3. Server CPU per write: the write script's usec_per_call (INFO commandstats) and the main
   thread's CPU (INFO CPU used_cpu_user + used_cpu_sys deltas) per write on the primary that
   holds a shard board, and the memory per player (INFO memory used_memory delta); from them
   the capacity model: one primary's main thread (one core) holds 1e6 / cpu_us_per_write
   writes/s, N primaries N times that when the users are spread over >= N shards; players per
   primary = usable memory / bytes per player.

On a 2-core machine the six nodes, the client and the benchmark share two cores: latencies
include queueing behind other processes, and no throughput figure here is a cluster's. The CPU
per write is the server's own work per call, which sharing inflates far less; the model scales
that figure, it does not measure N machines.

    python benchmarks/bench_cluster.py [--calls 2000] [--players 20000] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import redis_leaderboard
from redis_leaderboard import ClusterClient, RedisLeaderboard, ShardedLeaderboard, _core
from redis_leaderboard._redis_server import RedisServer

# The Cluster launcher lives with the tests (tests/launchers.py), not in the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from launchers import RedisCluster


def p50_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


def timed(call: Callable[..., Any], *args: Any) -> float:
    started = time.perf_counter()
    call(*args)
    return time.perf_counter() - started


def info_fields(cluster: RedisCluster, node: Any, section: str) -> dict[str, str]:
    text = str(cluster.node_command(node, "INFO", section))
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def command_usec(cluster: RedisCluster, node: Any) -> dict[str, tuple[int, float]]:
    out = {}
    for name, value in info_fields(cluster, node, "commandstats").items():
        fields = dict(part.split("=") for part in value.split(","))
        out[name] = (int(fields["calls"]), float(fields["usec"]))
    return out


def cpu_seconds(cluster: RedisCluster, node: Any) -> float:
    fields = info_fields(cluster, node, "cpu")
    return float(fields["used_cpu_user"]) + float(fields["used_cpu_sys"])


def routing(
    single: RedisLeaderboard, clustered: RedisLeaderboard, calls: int
) -> list[dict[str, Any]]:
    rng = random.Random(1)
    for board in (single, clustered):
        for i in range(1000):
            board.upsert_user(f"u{i}", rng.randint(0, 10**6), {"level": i % 50})
    rows = []
    operations: list[tuple[str, Callable[[RedisLeaderboard, int], Any]]] = [
        ("upsert_user", lambda b, i: b.upsert_user(f"u{i % 1000}", i, {"level": 1})),
        ("get_top(10)", lambda b, i: b.get_top(10)),
        ("get_rank", lambda b, i: b.get_rank(f"u{i % 1000}")),
    ]
    for name, operation in operations:
        one, many = [], []
        for i in range(calls):
            one.append(timed(operation, single, i))
            many.append(timed(operation, clustered, i))
        rows.append(
            {"method": name, "single_p50_us": p50_us(one), "cluster_p50_us": p50_us(many),
             "overhead_us": round(p50_us(many) - p50_us(one), 1)}
        )  # fmt: skip
    return rows


def sharded(client: ClusterClient, players: int, calls: int) -> list[dict[str, Any]]:
    rows = []
    for shards in (1, 3, 16):
        board = ShardedLeaderboard(client, key=f"bench{shards}-{time.time_ns()}", shards=shards)
        batch = [(f"p{i}", float(random.randint(0, 10**6))) for i in range(players)]
        for i in range(0, players, 1000):  # fill: one batch of writes per 1,000 players
            client.run_many(
                board._boards[sharded_index(uid, shards)].upsert_user(uid, score, None)
                for uid, score in batch[i : i + 1000]
            )
        row: dict[str, Any] = {"shards": shards, "players": board.get_size()}
        operations: list[tuple[str, Callable[[ShardedLeaderboard, int], Any]]] = [
            ("write", lambda b, i: b.upsert_user(f"p{i % players}", i)),
            ("get_top(10)", lambda b, i: b.get_top(10)),
            ("get_rank", lambda b, i: b.get_rank(f"p{(i * 7919) % players}")),
        ]
        for name, operation in operations:
            before = client.stats()["round_trips"]
            samples = [timed(operation, board, i) for i in range(calls // 2)]
            trips = (client.stats()["round_trips"] - before) / len(samples)
            row[f"{name}_p50_us"] = p50_us(samples)
            row[f"{name}_round_trips"] = round(trips, 2)
        rows.append(row)
        board.clear()
    return rows


def sharded_index(user_id: str, shards: int) -> int:
    from redis_leaderboard.sharded import shard_of

    return shard_of(user_id, shards)


def server_cost(cluster: RedisCluster, client: ClusterClient, writes: int) -> dict[str, Any]:
    key = f"{{cost{time.time_ns()}}}"
    board = RedisLeaderboard(client, key=key, max_entries=10**9)
    node = cluster.owner(_core.key_slot(key))
    memory_before = int(info_fields(cluster, node, "memory")["used_memory"])
    stats_before = command_usec(cluster, node)
    cpu_before = cpu_seconds(cluster, node)
    for i in range(writes):  # new players, two metadata fields: the guide's write
        board.upsert_user(f"player{i}", float(i % 100_000), {"name": f"n{i}", "level": i % 60})
    cpu_after = cpu_seconds(cluster, node)
    stats_after = command_usec(cluster, node)
    memory_after = int(info_fields(cluster, node, "memory")["used_memory"])
    calls, usec = stats_after["cmdstat_evalsha"]
    calls0, usec0 = stats_before.get("cmdstat_evalsha", (0, 0.0))
    script_us = (usec - usec0) / max(calls - calls0, 1)
    cpu_us = (cpu_after - cpu_before) * 1e6 / writes
    bytes_per_player = (memory_after - memory_before) / writes
    board.clear()
    return {
        "writes": writes,
        "script_usec_per_write": round(script_us, 2),
        "server_cpu_usec_per_write": round(cpu_us, 2),
        "bytes_per_player": round(bytes_per_player),
    }


def capacity(cost: dict[str, Any], primaries: int, memory_gb: float = 25.0) -> dict[str, Any]:
    # One main thread per primary: its CPU per write bounds its writes per second; I/O threads
    # and the network are not in this figure. Memory: usable bytes / bytes per player.
    per_primary = 1e6 / cost["server_cpu_usec_per_write"]
    players = memory_gb * 1e9 / cost["bytes_per_player"]
    return {
        "primaries": primaries,
        "writes_per_s": round(per_primary * primaries, -3),
        "players": round(players * primaries, -6),
        "memory_gb_per_primary": memory_gb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--players", type=int, default=20000)
    parser.add_argument("--writes", type=int, default=20000)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()

    with RedisServer() as server, RedisCluster(3, 1, node_timeout_ms=2000) as cluster:
        single_client = redis_leaderboard.Client(server.host, server.port)
        client = ClusterClient(cluster.startup_nodes, socket_timeout=10)
        single = RedisLeaderboard(single_client, key="{bench}", max_entries=10**9)
        clustered = RedisLeaderboard(client, key="{bench}", max_entries=10**9)
        results: dict[str, Any] = {
            "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
            "redis": server.version(),
            "routing": routing(single, clustered, args.calls),
            "sharded": sharded(client, args.players, args.calls),
        }
        cost = server_cost(cluster, client, args.writes)
        results["server_cost"] = cost
        results["capacity"] = [capacity(cost, n) for n in (1, 3, 10, 30)]
    print(json.dumps(results, indent=2))
    if args.markdown:
        args.markdown.write_text(markdown(results))


def markdown(results: dict[str, Any]) -> str:
    lines = [f"Machine: {results['machine']}; Redis {results['redis']}.", ""]
    lines += ["| method | one node p50 (µs) | cluster p50 (µs) | routing overhead (µs) |"]
    lines += ["|---|---:|---:|---:|"]
    for row in results["routing"]:
        lines.append(
            f"| {row['method']} | {row['single_p50_us']} | {row['cluster_p50_us']} "
            f"| {row['overhead_us']} |"
        )
    lines += [
        "",
        "| shards | players | write p50 (µs) | get_top(10) p50 (µs) | get_rank p50 (µs) "
        "| node writes per call (write / top / rank) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in results["sharded"]:
        lines.append(
            f"| {row['shards']} | {row['players']} | {row['write_p50_us']} "
            f"| {row['get_top(10)_p50_us']} | {row['get_rank_p50_us']} "
            f"| {row['write_round_trips']} / {row['get_top(10)_round_trips']} "
            f"/ {row['get_rank_round_trips']} |"
        )
    cost = results["server_cost"]
    lines += ["", f"Server cost per write (new player, 2 metadata fields, {cost['writes']} "
              f"writes): script {cost['script_usec_per_write']} µs (commandstats), main thread CPU "
              f"{cost['server_cpu_usec_per_write']} µs (INFO CPU), "
              f"{cost['bytes_per_player']} bytes per player.", ""]  # fmt: skip
    lines += ["| primaries | writes/s (CPU bound) | players (25 GB each) |", "|---:|---:|---:|"]
    for row in results["capacity"]:
        lines.append(f"| {row['primaries']} | {row['writes_per_s']:,.0f} | {row['players']:,.0f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
