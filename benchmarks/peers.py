"""Optional: the same requests through other Redis clients, side by side with ours.

    python benchmarks/peers.py [--seconds 0.5] [--rounds 3] [--tasks 1,100]
                               [--peers-dir DIR] [--no-install] [--markdown FILE]

For each method of the redis.io guide measured here, every client sends the very request
``redis_leaderboard`` sends (the same EVALSHA of our script, or the same command, captured from
``_core.Board(...).<method>(...).request()``, with fresh random arguments per call), on a
private redis-server (a free 127.0.0.1 port, a temporary directory; stopped at exit). A read of
many entries (``get_top(100)``) is captured as its one script, which ours sends on the asyncio
client; the sync client sends it in the guide's two steps (``split_reads.py``):

- sync: ours (``RedisLeaderboard`` on ``Client``), redis-py (``execute_command``, hiredis parser
  when installed), valkey-glide's sync client (``custom_command``);
- asyncio, at each ``--tasks`` concurrency on one client: ours
  (``redis_leaderboard.asyncio``), redis.asyncio (a connection pool as large as the tasks),
  valkey-glide (``custom_command``), coredis (its typed commands: ``evalsha``, ``zrevrank``...).

Ours returns the guide's dicts (the reply decoded and shaped); the peers return their raw
replies, which favours them. Reported per method: p50 latency (every call timed) and calls per
second. The peers are not dependencies of the package: they are installed here, when this
script runs, with ``pip install --target`` into ``--peers-dir`` (default: a cache directory
outside the repository), never into the environment. A peer that cannot be installed or
imported is skipped with a message saying why.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import os
import random
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

import redis_leaderboard
import redis_leaderboard.asyncio
from redis_leaderboard import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_sync import RedisServer  # noqa: E402
from run import MAX_ENTRIES, board_entries, parse_request, time_async, time_sync  # noqa: E402

META = {"name": "Player", "country": "NL"}
SIZE = 1000
# (import name, PyPI name) of each peer installed on demand; redis-py is the bench extra's.
PEER_PACKAGES = {"glide_sync": "valkey-glide-sync", "glide": "valkey-glide", "coredis": "coredis"}

Request = list[list[bytes]]  # the commands of one request


@dataclass
class Method:
    name: str
    build: Callable[[_core.Board, random.Random], Any]  # (board, rng) -> Operation
    ours: Callable[[Any, random.Random], Any]  # (our board, rng) -> call result


def random_user(rng: random.Random) -> str:
    return f"user:{rng.randrange(SIZE):012d}"


METHODS = [
    Method(
        "upsert_user",
        lambda b, r: b.upsert_user(random_user(r), float(r.randrange(SIZE)), META),
        lambda b, r: b.upsert_user(random_user(r), float(r.randrange(SIZE)), META),
    ),
    Method("get_top(10)", lambda b, r: b.get_top(10), lambda b, r: b.get_top(10)),
    Method("get_top(100)", lambda b, r: b.get_top(100), lambda b, r: b.get_top(100)),
    Method(
        "get_around_rank(r, 10)",
        lambda b, r: b.get_around_rank(r.randrange(SIZE) + 1, 10),
        lambda b, r: b.get_around_rank(r.randrange(SIZE) + 1, 10),
    ),
    Method(
        "get_rank",
        lambda b, r: b.get_rank(random_user(r)),
        lambda b, r: b.get_rank(random_user(r)),
    ),
    Method(
        "get_user_metadata",
        lambda b, r: b.get_user_metadata(random_user(r)),
        lambda b, r: b.get_user_metadata(random_user(r)),
    ),
    Method("get_size", lambda b, r: b.get_size(), lambda b, r: b.get_size()),
]


def requests(method: Method, board: _core.Board, count: int, seed: int) -> list[Request]:
    """``count`` requests of the method as ours sends them, with random arguments."""
    rng = random.Random(seed)
    return [parse_request(method.build(board, rng).request()) for _ in range(count)]


# --------------------------------------------------------------------------------------------
# The peers


def load_peers(peers_dir: Path, install: bool) -> dict[str, Any]:
    """The peers' modules that import (installed with pip --target if missing); the others are
    reported and skipped."""
    sys.path.insert(0, str(peers_dir))
    missing = []
    for module in PEER_PACKAGES:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing and install:
        packages = [PEER_PACKAGES[m] for m in missing]
        print(f"installing {', '.join(packages)} into {peers_dir} (pip install --target)")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--target",
                str(peers_dir),
                *packages,
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            print(f"pip could not install them all: {proc.stderr.strip()[-500:]}")
        importlib.invalidate_caches()
    loaded: dict[str, Any] = {}
    for module in ["redis", *PEER_PACKAGES]:
        try:
            loaded[module] = importlib.import_module(module)
        except ImportError as exc:
            package = PEER_PACKAGES.get(module, "redis")
            print(f"skipping {package}: it cannot be installed from PyPI or imported here ({exc})")
    return loaded


class SyncPeer:
    def __init__(self, name: str, send: Callable[[Request], Any], close: Callable[[], Any]):
        self.name, self.send, self.close = name, send, close


def sync_peers(peers: dict[str, Any], host: str, port: int) -> list[SyncPeer]:
    out = []
    if "redis" in peers:
        r = peers["redis"].Redis(host=host, port=port)

        def send_redis(request: Request) -> Any:
            if len(request) == 1:
                return r.execute_command(*request[0])
            pipe = r.pipeline(transaction=False)
            for command in request:
                pipe.execute_command(*command)
            return pipe.execute()

        out.append(SyncPeer("redis-py", send_redis, r.close))
    if "glide_sync" in peers:
        g = peers["glide_sync"]
        client = g.GlideClient.create(g.GlideClientConfiguration([g.NodeAddress(host, port)]))

        def send_glide(request: Request) -> Any:
            return [client.custom_command(command) for command in request]

        out.append(SyncPeer("valkey-glide (sync)", send_glide, client.close))
    return out


class AsyncPeer:
    def __init__(self, name: str, send: Callable[[Request], Awaitable[Any]], close: Any) -> None:
        self.name, self.send, self.close = name, send, close


def coredis_send(client: Any) -> Callable[[Request], Awaitable[Any]]:
    """coredis has no raw command call: each of our commands by its typed method."""

    async def one(command: list[bytes]) -> Any:
        name, args = command[0].upper(), command[1:]
        if name == b"EVALSHA":
            keys = int(args[1])
            return await client.evalsha(args[0], args[2 : 2 + keys], args[2 + keys :])
        if name == b"ZREVRANK":
            return await client.zrevrank(args[0], args[1])
        if name == b"HGETALL":
            return await client.hgetall(args[0])
        if name == b"ZCARD":
            return await client.zcard(args[0])
        raise ValueError(f"coredis: no mapping for {name!r}")

    async def send(request: Request) -> Any:
        return [await one(command) for command in request]

    return send


async def async_peers(peers: dict[str, Any], host: str, port: int, tasks: int) -> list[AsyncPeer]:
    out = []
    if "redis" in peers:
        ra = peers["redis"].asyncio.Redis(
            connection_pool=peers["redis"].asyncio.BlockingConnectionPool(
                host=host, port=port, max_connections=max(tasks, 1), timeout=None
            )
        )

        async def send_redis(request: Request) -> Any:
            return [await ra.execute_command(*command) for command in request]

        out.append(AsyncPeer("redis.asyncio", send_redis, ra.aclose))
    if "glide" in peers:
        g = peers["glide"]
        client = await g.GlideClient.create(g.GlideClientConfiguration([g.NodeAddress(host, port)]))

        async def send_glide(request: Request) -> Any:
            return [await client.custom_command(command) for command in request]

        out.append(AsyncPeer("valkey-glide", send_glide, client.close))
    if "coredis" in peers:
        # coredis 5+ opens its pool inside ``async with``: entered here, left at close.
        cd = peers["coredis"].Redis(host=host, port=port, max_connections=max(tasks, 1))
        await cd.__aenter__()

        async def close_coredis() -> None:
            await cd.__aexit__(None, None, None)

        out.append(AsyncPeer("coredis", coredis_send(cd), close_coredis))
    return out


# --------------------------------------------------------------------------------------------
# Measurements


@dataclass
class Row:
    method: str
    client: str
    mode: str  # "sync" or "asyncio xN"
    p50_us: float
    calls_per_s: float


def measure(call: Callable[[], Any], seconds: float) -> tuple[float, float]:
    time_sync(call, min(0.05, seconds))
    gc.collect()
    latencies, timed = time_sync(call, seconds)
    return statistics.median(latencies) / 1000, len(latencies) * 1e9 / timed


async def measure_async(
    call: Callable[[], Awaitable[Any]], tasks: int, seconds: float
) -> tuple[float, float]:
    await time_async(call, tasks, min(0.05, seconds))
    gc.collect()
    latencies, timed = await time_async(call, tasks, seconds)
    return statistics.median(latencies) / 1000, len(latencies) * 1e9 / timed


async def measure_asyncio(
    opts: argparse.Namespace,
    peers: dict[str, Any],
    host: str,
    port: int,
    tasks: int,
    rows: list[Row],
) -> None:
    """Every asyncio client at one concurrency, in one task (coredis's pool must be entered
    and left in the same context)."""
    core_board = _core.Board("lb", MAX_ENTRIES)
    core_board_checked = redis_leaderboard.Client(host=host, port=port)
    core_board_checked.run(core_board.check_options())
    core_board_checked.close()
    ours_client = redis_leaderboard.asyncio.Client(host=host, port=port)
    ours = redis_leaderboard.asyncio.RedisLeaderboard(
        ours_client, key="lb", max_entries=MAX_ENTRIES
    )
    apeers = await async_peers(peers, host, port, tasks)
    try:
        for rnd in range(opts.rounds):
            for method in METHODS:
                pool = requests(method, core_board, 2048, seed=100 + rnd)
                rng = random.Random(rnd)
                impls: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                    ("ours", lambda m=method, g=rng: m.ours(ours, g))
                ]
                for apeer in apeers:
                    nxt = cycle(pool)
                    impls.append((apeer.name, lambda p=apeer, n=nxt: p.send(n())))
                if rnd % 2:
                    impls.reverse()
                for name, call in impls:
                    p50, rate = await measure_async(call, tasks, opts.seconds)
                    rows.append(Row(method.name, name, f"asyncio x{tasks}", p50, rate))
    finally:
        for apeer in apeers:
            result = apeer.close()
            if asyncio.iscoroutine(result):
                await result
        await ours_client.aclose()


def cycle(items: list[Request]) -> Callable[[], Request]:
    state = [0]

    def next_item() -> Request:
        state[0] = (state[0] + 1) % len(items)
        return items[state[0]]

    return next_item


def run(opts: argparse.Namespace) -> list[Row]:
    peers = load_peers(opts.peers_dir, not opts.no_install)
    server = RedisServer()
    server.start()
    rows: list[Row] = []
    loop = asyncio.new_event_loop()
    try:
        host, port = server.host, server.port
        ours_client = redis_leaderboard.Client(host=host, port=port)
        ours = redis_leaderboard.RedisLeaderboard(ours_client, key="lb", max_entries=MAX_ENTRIES)
        ours.upsert_many(board_entries(SIZE))
        core_board = _core.Board("lb", MAX_ENTRIES)
        ours_client.run(core_board.check_options())  # our requests once the options are checked
        for method in METHODS:  # loads every script (EVALSHA needs it cached)
            method.ours(ours, random.Random(0))
        sync = sync_peers(peers, host, port)
        for rnd in range(opts.rounds):
            for method in METHODS:
                pool = requests(method, core_board, 2048, seed=rnd)
                rng = random.Random(rnd)
                impls: list[tuple[str, Callable[[], Any]]] = [
                    ("ours", lambda m=method, g=rng: m.ours(ours, g))
                ]
                for peer in sync:
                    nxt = cycle(pool)
                    impls.append((peer.name, lambda p=peer, n=nxt: p.send(n())))
                if rnd % 2:
                    impls.reverse()
                for name, call in impls:
                    p50, rate = measure(call, opts.seconds)
                    rows.append(Row(method.name, name, "sync", p50, rate))
        for peer in sync:
            peer.close()

        for tasks in opts.tasks:
            loop.run_until_complete(measure_asyncio(opts, peers, host, port, tasks, rows))
        ours_client.close()
    finally:
        loop.close()
        server.cleanup()
    return rows


CLIENT_ORDER = [
    "ours",
    "redis-py",
    "valkey-glide (sync)",
    "redis.asyncio",
    "valkey-glide",
    "coredis",
]


def table(rows: list[Row]) -> str:
    """A table per mode (sync, asyncio xN), a line per method: each client's median p50 and
    calls/s over the rounds, and ours against the fastest peer in calls/s."""
    out = []
    modes = list(dict.fromkeys(row.mode for row in rows))
    for mode in modes:
        mine = [row for row in rows if row.mode == mode]
        clients = sorted({row.client for row in mine}, key=CLIENT_ORDER.index)
        out.append(f"{mode}: p50 µs / calls per second (median of the rounds)\n")
        out.append("| method | " + " | ".join(clients) + " | ours / best peer (calls/s) |")
        out.append("|" + "---|" * (len(clients) + 2))
        for method in dict.fromkeys(row.method for row in mine):
            cells, rates = [], {}
            for client in clients:
                samples = [r for r in mine if r.method == method and r.client == client]
                if not samples:
                    cells.append("n/a")
                    continue
                p50 = statistics.median(s.p50_us for s in samples)
                rate = statistics.median(s.calls_per_s for s in samples)
                rates[client] = rate
                cells.append(f"{p50:,.0f} / {rate:,.0f}")
            peers = [r for c, r in rates.items() if c != "ours"]
            versus = f"{rates['ours'] / max(peers):.2f}x" if peers and "ours" in rates else "n/a"
            out.append(f"| {method} | " + " | ".join(cells) + f" | {versus} |")
        out.append("")
    return "\n".join(out)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=0.5, help="per measurement (0.5)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; medians reported (3)")
    parser.add_argument("--tasks", default="1,100", help="asyncio concurrencies (1,100)")
    parser.add_argument(
        "--peers-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "redis-leaderboard-peers"
        / f"py{sys.version_info.major}{sys.version_info.minor}",
        help="where the peers are installed (pip install --target)",
    )
    parser.add_argument("--no-install", action="store_true", help="use only peers importable")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    opts = parser.parse_args(argv)
    opts.tasks = [int(t) for t in opts.tasks.split(",") if t]
    if opts.seconds <= 0 or opts.rounds < 1 or not opts.tasks or min(opts.tasks) < 1:
        parser.error("--seconds must be > 0, --rounds and --tasks >= 1")
    text = table(run(opts))
    print(text)
    if opts.markdown:
        opts.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
