"""The benchmark, in one command: redis_leaderboard vs the guide's algorithm vs the server's limit.

    python benchmarks/run.py [--quick] [--sizes 1000,100000,1000000] [--seconds 0.2]
                             [--rounds 5] [--bulk-rounds 3] [--placement phased|none]
                             [--loop asyncio|uvloop] [--out benchmarks/results]

Starts its own redis-server (from PATH: free 127.0.0.1 port, temporary directory, no
persistence; stopped at exit and on Ctrl+C) and, in one run on that server, measures every
method of the redis.io guide's ``RedisLeaderboard`` and ``upsert_many``:

- this package, sync (``redis_leaderboard.RedisLeaderboard``) and asyncio
  (``redis_leaderboard.asyncio.RedisLeaderboard``, 1, 10, 100 and 1000 concurrent tasks on one
  client);
- the guide's algorithm on redis-py with the hiredis parser and on redis.asyncio
  (``guide_leaderboard.py``; on redis.asyncio a connection per concurrent task, up to a
  ``BlockingConnectionPool`` of 200, as ``bench_async.py``);
- the floor: ``redis-benchmark`` (from PATH) sending the very request our method sends (the
  same EVALSHA or command, captured from ``Board(...).<method>(...).request()``) on one
  connection, unpipelined (``-c 1 -P 1``: the latency floor) and pipelined (``-c 1 -P 64``: the
  throughput ceiling).

Reported: calls per second, p50 and p99 latency (every call timed with ``perf_counter_ns``),
round trips per call, and the ratios to the guide and to the floor; per-call p50 on boards of
each ``--sizes`` (filled with ``upsert_many``, two metadata fields per user) to show the cost
grows as O(log N); a bulk import of the largest board (ours sync and asyncio vs a hand-written
redis-py pipeline vs the ``redis-benchmark`` ceiling for the same ZADD + HSET commands, and
``redis-cli --pipe`` streaming our exact bytes); and Redis memory per user (``INFO memory``
around that import). Every asyncio measurement (ours and the guide's) runs on ``--loop``:
asyncio's own event loop (the default) or uvloop (``pip install '.[uvloop]'``).

The machine may be shared and noisy: each round measures every implementation of a method
back to back, the order alternating from round to round, and the tables give the median over
rounds. Latency measurements run with redis-server and every client pinned to one CPU (no
cross-CPU wake-ups, which on a VM cost tens of µs at random); throughput ones on all CPUs
(``--placement none``: no pinning at all). Writes ``results.md``, ``chart.png`` and
``results.json`` (every sample) to ``--out``. ``--quick`` (small boards, short runs; a smoke
test, under a minute) writes to a new temporary directory unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import collections
import csv
import datetime
import gc
import importlib.util
import io
import itertools
import json
import os
import platform
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import redis
import redis.asyncio
from redis.utils import HIREDIS_AVAILABLE

import redis_leaderboard
import redis_leaderboard.asyncio
from redis_leaderboard import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import event_loops  # noqa: E402
from bench_sync import RedisServer, counting_redis, parser_name  # noqa: E402
from guide_leaderboard import AsyncGuideLeaderboard, GuideLeaderboard  # noqa: E402

# --------------------------------------------------------------------------------------------
# What is measured

CONCURRENCY = (1, 10, 100, 1000)
MAX_ENTRIES = 10_000_000  # above every board: writes never trim, so all do the same work
META = {"name": "Player", "country": "NL"}  # upsert_user's two metadata fields
COUNTRIES = ("NL", "FR", "DE", "JP", "BR", "US", "IN", "NG")
SMALL_BOARD = 100  # list_all runs on a board of this many users
IMPORT_CHUNK = 1000

# The floor's commands are captured from our own requests built with these values, which are
# then replaced by redis-benchmark's ``__rand_int__`` (a random 12-digit number below -r).
RAND = "__rand_int__"
USER_SENTINEL = "user:" + RAND
VICTIM_SENTINEL = "victim:" + RAND
SCORE_SENTINEL = 987654321.0
RANK_SENTINEL = 424242
SENTINEL_ARGS = {b"987654321": RAND.encode(), b"424242": RAND.encode()}


def user_id(i: int) -> str:
    return f"user:{i:012d}"  # the shape redis-benchmark gives "user:__rand_int__"


def victim_id(i: int) -> str:
    return f"victim:{i:012d}"


def board_entries(size: int, seed: int = 7) -> list[tuple[str, float, dict[str, str]]]:
    """``size`` users with random scores below ``size`` and two metadata fields each."""
    rng = random.Random(seed)
    return [
        (
            user_id(i),
            float(rng.randrange(size)),
            {"name": f"Player {i}", "country": COUNTRIES[i % 8]},
        )
        for i in range(size)
    ]


class Args:
    """Random arguments, the same distribution as the floor's ``__rand_int__`` below ``size``."""

    def __init__(self, size: int, seed: int) -> None:
        rng = random.Random(seed)
        n = 4096
        self.ids = itertools.cycle([user_id(rng.randrange(size)) for _ in range(n)])
        self.scores = itertools.cycle([float(rng.randrange(size)) for _ in range(n)])
        self.ranks = itertools.cycle([rng.randrange(size) + 1 for _ in range(n)])
        self.victims: collections.deque[str] = collections.deque()


Call = Callable[[], Any]


@dataclass
class Method:
    name: str
    call: Callable[[Any, Args], Call]  # (board, args) -> zero-argument call
    floor: Callable[[_core.Board], _core.Operation]  # the request, with sentinels
    small: bool = False  # runs on the SMALL_BOARD board
    victims: bool = False  # each call consumes a user added (untimed) beforehand
    note: str = ""


METHODS = [
    Method(
        "upsert_user",
        lambda b, a: lambda: b.upsert_user(next(a.ids), next(a.scores), META),
        lambda c: c.upsert_user(USER_SENTINEL, SCORE_SENTINEL, META),
        note="existing user, new random score, 2 metadata fields",
    ),
    Method(
        "increment_score",
        lambda b, a: lambda: b.increment_score(next(a.ids), 1),
        lambda c: c.increment_score(USER_SENTINEL, 1),
    ),
    Method("get_top(10)", lambda b, a: lambda: b.get_top(10), lambda c: c.get_top(10)),
    Method("get_top(100)", lambda b, a: lambda: b.get_top(100), lambda c: c.get_top(100)),
    Method(
        "get_around_rank(r, 10)",
        lambda b, a: lambda: b.get_around_rank(next(a.ranks), 10),
        lambda c: c.get_around_rank(RANK_SENTINEL, 10),
        note="random rank",
    ),
    Method(
        "get_rank",
        lambda b, a: lambda: b.get_rank(next(a.ids)),
        lambda c: c.get_rank(USER_SENTINEL),
    ),
    Method(
        "get_user_entry",
        lambda b, a: lambda: b.get_user_entry(next(a.ids)),
        lambda c: c.get_user_entry(USER_SENTINEL),
    ),
    Method(
        "get_user_metadata",
        lambda b, a: lambda: b.get_user_metadata(next(a.ids)),
        lambda c: c.get_user_metadata(USER_SENTINEL),
    ),
    Method("get_size", lambda b, a: b.get_size, lambda c: c.get_size()),
    Method(
        "delete_user",
        lambda b, a: lambda: b.delete_user(a.victims.popleft()),
        lambda c: c.delete_user(VICTIM_SENTINEL),
        victims=True,
        note="of a user added untimed beforehand",
    ),
    Method(
        "set_max_entries",
        lambda b, a: lambda: b.set_max_entries(MAX_ENTRIES),
        lambda c: c.set_max_entries(MAX_ENTRIES),
        note="board within the limit: trims nothing",
    ),
    Method(
        f"list_all ({SMALL_BOARD} users)",
        lambda b, a: b.list_all,
        lambda c: c.list_all(),
        small=True,
    ),
]

OURS, GUIDE = "ours", "guide"
# Ours with client_cache=True (the board's metadata does not change during the run).
OURS_CACHED, OURS_ASYNC_CACHED = "ours-cached", "ours-async-cached"
CACHED_METHODS = ("get_top(10)", "get_top(100)", "get_around_rank(r, 10)")
OURS_ASYNC, GUIDE_ASYNC = "ours-async", "guide-async"
FLOOR_P1, FLOOR_P64 = "floor-P1", "floor-P64"
FLOOR_RAW = "floor-raw-P1"  # RawFloor on a one-command request, set against redis-benchmark
RAW_CALIBRATION = "get_rank"
PIPELINE = 64
WARMUP = 0.03  # seconds of untimed calls before each measurement
GUIDE_POOL = 200  # connections of the guide's redis.asyncio pool (as in bench_async.py)


@dataclass
class Sample:
    calls_per_s: float
    p50_us: float
    p99_us: float
    calls: int
    round_trips_per_call: Optional[float] = None
    note: str = ""


def summarize(latencies_ns: list[int], timed_ns: int, round_trips: Optional[float]) -> Sample:
    if not latencies_ns:
        raise RuntimeError("no call completed")
    ordered = sorted(latencies_ns)
    n = len(ordered)
    return Sample(
        calls_per_s=n * 1e9 / timed_ns,
        p50_us=ordered[n // 2] / 1000,
        p99_us=ordered[min(n - 1, int(n * 0.99))] / 1000,
        calls=n,
        round_trips_per_call=round_trips,
    )


# --------------------------------------------------------------------------------------------
# Timing loops


def time_sync(
    call: Call, seconds: float, refill: Optional[Victims] = None
) -> tuple[list[int], int]:
    """Every call timed on its own; ``refill`` (untimed) runs when the victims run out."""
    clock = time.perf_counter_ns
    latencies: list[int] = []
    append = latencies.append
    deadline = clock() + int(seconds * 1e9)
    if refill is None:
        while True:
            t0 = clock()
            call()
            t1 = clock()
            append(t1 - t0)
            if t1 >= deadline:
                break
    else:  # the time spent refilling does not count against ``seconds``
        budget, timed = int(seconds * 1e9), 0
        while timed < budget:
            refill()
            while refill.pending() and timed < budget:
                t0 = clock()
                call()
                t1 = clock()
                append(t1 - t0)
                timed += t1 - t0
    return latencies, sum(latencies)


async def time_async(
    call: Call, concurrency: int, seconds: float, refill: Optional[Victims] = None
) -> tuple[list[int], int]:
    """``concurrency`` tasks calling in a loop for ``seconds``; each call timed from its start
    to its result. Throughput is calls over the wall time of the timed stretches (refilling
    the victims of delete_user is left out)."""
    clock = time.perf_counter_ns
    latencies: list[int] = []
    append = latencies.append
    budget, timed = int(seconds * 1e9), 0
    deadline = 0

    async def worker() -> None:
        while clock() < deadline:
            if refill is not None and not refill.pending():
                return
            t0 = clock()
            await call()
            append(clock() - t0)

    while timed < budget:
        if refill is not None:
            refill()
        start = clock()
        deadline = start + budget - timed
        await asyncio.gather(*[worker() for _ in range(concurrency)])
        timed += clock() - start
    return latencies, timed


class Victims:
    """Users for delete_user to delete: a batch is added (untimed, on the loader client) when
    the previous one is used up; the board grows by at most one batch."""

    def __init__(self, loader: redis_leaderboard.Client, key: str, args: Args, batch: int):
        self.board = redis_leaderboard.RedisLeaderboard(loader, key=key, max_entries=MAX_ENTRIES)
        self.loader, self.key, self.args, self.batch = loader, key, args, batch

    def pending(self) -> int:
        return len(self.args.victims)

    def __call__(self) -> None:
        if self.args.victims:
            return
        ids = [victim_id(i) for i in range(self.batch)]
        self.board.upsert_many((v, 1.0, META) for v in ids)
        self.args.victims.extend(ids)

    def cleanup(self) -> None:
        remove(self.loader, self.key, list(self.args.victims))
        self.args.victims.clear()


def remove(client: redis_leaderboard.Client, key: str, ids: list[str]) -> None:
    for start in range(0, len(ids), 1000):
        part = ids[start : start + 1000]
        client.execute_command("ZREM", key, *part)
        client.execute_command("DEL", *[f"{key}:user:{v}" for v in part])


# --------------------------------------------------------------------------------------------
# The floor: redis-benchmark


def parse_request(data: bytes) -> list[list[bytes]]:
    """The commands (each a list of arguments) of a request as our operations send it: one
    or more RESP arrays of bulk strings (several for a MULTI ... EXEC transaction)."""
    commands, pos = [], 0
    while pos < len(data):
        if data[pos : pos + 1] != b"*":
            raise ValueError(f"not a RESP array at {pos}: {data[pos : pos + 20]!r}")
        end = data.index(b"\r\n", pos)
        count, pos, args = int(data[pos + 1 : end]), end + 2, []
        for _ in range(count):
            if data[pos : pos + 1] != b"$":
                raise ValueError(f"not a bulk string at {pos}")
            end = data.index(b"\r\n", pos)
            length = int(data[pos + 1 : end])
            args.append(data[end + 2 : end + 2 + length])
            pos = end + 2 + length + 2
        commands.append(args)
    return commands


def floor_commands(method: Method, key: str) -> list[list[str]]:
    """The commands our method sends, ``__rand_int__`` in place of the random arguments."""
    operation = method.floor(_core.Board(key, MAX_ENTRIES))
    return [
        [SENTINEL_ARGS.get(a, a).decode() for a in command]
        for command in parse_request(operation.request())
    ]


@dataclass
class FloorRun:
    rps: float
    p50_us: float
    p99_us: float
    requests: int


class RedisBenchmark:
    def __init__(self, host: str, port: int) -> None:
        binary = shutil.which("redis-benchmark")
        if binary is None:
            raise SystemExit("redis-benchmark not found on PATH")
        self.binary, self.host, self.port = binary, host, port

    def version(self) -> str:
        out = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return out.stdout.strip().replace("redis-benchmark ", "")

    def argv(self, command: list[str], db: int, n: int, pipeline: int, keyspace: int) -> list[str]:
        return [
            self.binary, "-h", self.host, "-p", str(self.port), "--dbnum", str(db),
            "-c", "1", "-P", str(pipeline), "-n", str(n), "-r", str(max(1, keyspace)),
            "--csv", "--precision", "3", *command,
        ]  # fmt: skip

    def run(self, command: list[str], db: int, n: int, pipeline: int, keyspace: int) -> FloorRun:
        argv = self.argv(command, db, n, pipeline, keyspace)
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"redis-benchmark failed: {proc.stderr.strip()}")
        rows = [row for row in csv.reader(io.StringIO(proc.stdout)) if row and row[0] != "test"]
        if not rows:
            raise RuntimeError(f"no result from redis-benchmark: {proc.stdout!r}")
        row = rows[-1]
        return FloorRun(
            rps=float(row[1]), p50_us=float(row[4]) * 1000, p99_us=float(row[6]) * 1000, requests=n
        )


class RawFloor:
    """The floor for a request of several commands (a MULTI ... EXEC transaction), which
    redis-benchmark cannot send (one command per request): a loop in this process writing the
    request's exact bytes on a raw socket and reading the replies with hiredis' C parser,
    ``__rand_int__`` drawn per occurrence as redis-benchmark does. Its own cost per call is
    a few µs of Python: the report gives it next to redis-benchmark on a one-command request."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    def run(
        self, commands: list[list[str]], db: int, n: int, pipeline: int, keyspace: int
    ) -> FloorRun:
        import hiredis

        rng = random.Random(n)
        keyspace = max(1, keyspace)

        def render() -> bytes:
            out = b""
            for command in commands:
                args = [
                    re.sub(RAND, lambda _m: f"{rng.randrange(keyspace):012d}", a) for a in command
                ]
                out += _core.encode_command(*args)
            return out

        pool = [render() for _ in range(n)]  # as redis-benchmark: fresh draws for every request
        replies_per_request = len(commands)
        clock = time.perf_counter_ns
        latencies: list[int] = []
        with socket.create_connection((self.host, self.port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader = hiredis.Reader()

            def read(count: int) -> None:
                while count:
                    reply = reader.gets()
                    if reply is False:
                        reader.feed(sock.recv(1 << 16))
                    elif isinstance(reply, hiredis.ReplyError):
                        raise RuntimeError(f"floor request failed: {reply}")
                    else:
                        count -= 1

            sock.sendall(_core.encode_command("SELECT", db))
            read(1)
            start = clock()
            for first in range(0, n, pipeline):
                batch = min(pipeline, n - first)
                data = b"".join(pool[(first + j) % len(pool)] for j in range(batch))
                t0 = clock()
                sock.sendall(data)
                read(batch * replies_per_request)
                latencies.extend([clock() - t0] * batch)
            total = clock() - start
        latencies.sort()
        return FloorRun(
            rps=n * 1e9 / total,
            p50_us=latencies[len(latencies) // 2] / 1000,
            p99_us=latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] / 1000,
            requests=n,
        )


# --------------------------------------------------------------------------------------------
# The run


@dataclass
class BoardSet:
    """One board size: our board (and, on the main size, the guide's) in its own database."""

    size: int
    db: int
    key: str
    ours: Any
    ours_small: Any
    loader: redis_leaderboard.Client
    admin: redis.Redis
    guide: Any = None
    guide_small: Any = None
    ours_async: Any = None
    ours_async_small: Any = None
    guide_async: Any = None
    guide_async_small: Any = None
    guide_key: str = ""
    ours_cached: Any = None
    ours_cached_small: Any = None
    ours_async_cached: Any = None
    ours_async_cached_small: Any = None


@dataclass
class Results:
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    floor_hits: dict[str, list[float]] = field(default_factory=dict)
    bulk: dict[str, list[float]] = field(default_factory=dict)  # name -> seconds per round
    memory_per_user: list[float] = field(default_factory=list)
    guide_round_trips: dict[str, float] = field(default_factory=dict)
    guide_async_round_trips: dict[str, float] = field(default_factory=dict)

    def add(self, impl: str, method: str, size: int, concurrency: int, sample: Sample) -> None:
        self.samples.setdefault(sample_key(impl, method, size, concurrency), []).append(sample)

    def median(self, impl: str, method: str, size: int, concurrency: int = 0) -> Optional[Sample]:
        samples = self.samples.get(sample_key(impl, method, size, concurrency))
        if not samples:
            return None
        rts = [s.round_trips_per_call for s in samples if s.round_trips_per_call is not None]
        return Sample(
            calls_per_s=statistics.median(s.calls_per_s for s in samples),
            p50_us=statistics.median(s.p50_us for s in samples),
            p99_us=statistics.median(s.p99_us for s in samples),
            calls=sum(s.calls for s in samples),
            round_trips_per_call=statistics.median(rts) if rts else None,
        )

    def paired(self, a: tuple, b: tuple, field: str) -> Optional[float]:
        """The median over rounds of ``a.field / b.field``: each round measures both back to
        back, so a slow spell of a shared machine hits both sides of each ratio."""
        xs, ys = self.samples.get(sample_key(*a)), self.samples.get(sample_key(*b))
        if not xs or not ys:
            return None
        ratios = [
            getattr(x, field) / getattr(y, field) for x, y in zip(xs, ys) if getattr(y, field)
        ]
        return statistics.median(ratios) if ratios else None

    def bulk_paired(self, num: str, den: str) -> Optional[float]:
        """The median over bulk rounds of ``seconds[num] / seconds[den]``."""
        xs, ys = self.bulk.get(num), self.bulk.get(den)
        if not xs or not ys:
            return None
        return statistics.median(x / y for x, y in zip(xs, ys))


def sample_key(impl: str, method: str, size: int, concurrency: int) -> str:
    return f"{impl}|{method}|{size}|{concurrency}"


INTERRUPTED = False


def on_sigint(signum: int, frame: Any) -> None:
    # KeyboardInterrupt raised inside a finalizer or weakref callback is swallowed by Python:
    # the flag makes the next checkpoint raise it again.
    global INTERRUPTED
    INTERRUPTED = True
    raise KeyboardInterrupt


def checkpoint() -> None:
    if INTERRUPTED:
        raise KeyboardInterrupt


def log(message: str) -> None:
    checkpoint()
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, server: Any, opts: argparse.Namespace, placement: Placement) -> None:
        self.opts = opts
        self.placement = placement
        self.host, self.port = server.host, server.port
        self.rb = RedisBenchmark(self.host, self.port)
        self.raw = RawFloor(self.host, self.port)
        self.sizes: list[int] = opts.sizes
        self.main = self.sizes[0]
        self.results = Results()
        self.loop = event_loops.new_event_loop(opts.loop)
        self.floor_rate: dict[tuple[str, int, int], float] = {}
        self.boards: dict[int, BoardSet] = {}
        self.clients: list[Any] = []
        self.server_version = server.version()
        self.git_at_start = git_revision()
        self.core_mtime = os.path.getmtime(_core.__file__)

    def package_identity(self) -> str:
        """The working tree's git revision; says so if it or the installed core changed while
        the benchmark ran (the run measures the core it loaded at its start)."""
        text = f"git {self.git_at_start}"
        at_end = git_revision()
        if at_end != self.git_at_start:
            text += f" at the start of the run, {at_end} at its end"
        if os.path.getmtime(_core.__file__) != self.core_mtime:
            text += "; the installed package was replaced during the run, which measured the one "
            text += "loaded at its start"
        return text

    # Setup -----------------------------------------------------------------------------------

    def client(self, db: int) -> redis_leaderboard.Client:
        c = redis_leaderboard.Client(host=self.host, port=self.port, db=db)
        self.clients.append(c)
        return c

    def admin(self, db: int) -> redis.Redis:
        r = redis.Redis(host=self.host, port=self.port, db=db, decode_responses=True)
        self.clients.append(r)
        return r

    def fill(self, loader: redis_leaderboard.Client, key: str, size: int) -> None:
        board = redis_leaderboard.RedisLeaderboard(loader, key=key, max_entries=MAX_ENTRIES)
        board.upsert_many(board_entries(size))

    def make_board_set(self, size: int, db: int) -> BoardSet:
        key, small_key = "lb", "lb:small"
        loader, admin = self.client(db), self.admin(db)
        if admin.zcard(key) != size:  # the largest board is left by the bulk import
            self.fill(loader, key, size)
        ours_client = self.client(db)
        bs = BoardSet(
            size=size,
            db=db,
            key=key,
            ours=redis_leaderboard.RedisLeaderboard(ours_client, key=key, max_entries=MAX_ENTRIES),
            ours_small=redis_leaderboard.RedisLeaderboard(
                ours_client, key=small_key, max_entries=MAX_ENTRIES
            ),
            loader=loader,
            admin=admin,
        )
        if size == self.main:
            self.fill(loader, small_key, SMALL_BOARD)
            bs.guide_key = guide_key = "guide"
            self.fill(loader, guide_key, size)
            self.fill(loader, guide_key + ":small", SMALL_BOARD)
            guide_client = self.admin(db)
            parser = parser_name(guide_client)
            if "Hiredis" not in parser:
                raise SystemExit(f"redis-py is not using the hiredis parser ({parser})")
            bs.guide = GuideLeaderboard(guide_client, key=guide_key, max_entries=MAX_ENTRIES)
            bs.guide_small = GuideLeaderboard(
                guide_client, key=guide_key + ":small", max_entries=MAX_ENTRIES
            )
            async_client = redis_leaderboard.asyncio.Client(host=self.host, port=self.port, db=db)
            self.clients.append(async_client)
            bs.ours_async = redis_leaderboard.asyncio.RedisLeaderboard(
                async_client, key=key, max_entries=MAX_ENTRIES
            )
            bs.ours_async_small = redis_leaderboard.asyncio.RedisLeaderboard(
                async_client, key=small_key, max_entries=MAX_ENTRIES
            )
            # A connection per task, up to GUIDE_POOL (redis.asyncio's default pool refuses
            # more than 100 at once), as bench_async.py.
            guide_async_client = redis.asyncio.Redis(
                connection_pool=redis.asyncio.BlockingConnectionPool(
                    host=self.host,
                    port=self.port,
                    db=db,
                    decode_responses=True,
                    max_connections=GUIDE_POOL,
                    timeout=None,
                )
            )
            self.clients.append(guide_async_client)
            bs.guide_async = AsyncGuideLeaderboard(
                guide_async_client, key=guide_key, max_entries=MAX_ENTRIES
            )
            bs.guide_async_small = AsyncGuideLeaderboard(
                guide_async_client, key=guide_key + ":small", max_entries=MAX_ENTRIES
            )
            cached = redis_leaderboard.Client(
                host=self.host, port=self.port, db=db, client_cache=True
            )
            self.clients.append(cached)
            bs.ours_cached = redis_leaderboard.RedisLeaderboard(
                cached, key=key, max_entries=MAX_ENTRIES
            )
            bs.ours_cached_small = redis_leaderboard.RedisLeaderboard(
                cached, key=small_key, max_entries=MAX_ENTRIES
            )
            async_cached = redis_leaderboard.asyncio.Client(
                host=self.host, port=self.port, db=db, client_cache=True
            )
            self.clients.append(async_cached)
            bs.ours_async_cached = redis_leaderboard.asyncio.RedisLeaderboard(
                async_cached, key=key, max_entries=MAX_ENTRIES
            )
            bs.ours_async_cached_small = redis_leaderboard.asyncio.RedisLeaderboard(
                async_cached, key=small_key, max_entries=MAX_ENTRIES
            )
        return bs

    def close(self) -> None:
        for c in self.clients:
            try:
                if isinstance(c, redis.asyncio.Redis):
                    self.loop.run_until_complete(c.aclose())
                elif isinstance(c, redis_leaderboard.asyncio.Client):
                    c.close()
                else:
                    c.close()
            except Exception:
                pass  # best effort
        self.loop.close()

    # Measurements ----------------------------------------------------------------------------

    def measure_sync(self, impl: str, method: Method, bs: BoardSet, seed: int) -> Sample:
        self.placement.latency()
        if impl == OURS:
            target = bs.ours_small if method.small else bs.ours
        elif impl == OURS_CACHED:
            target = bs.ours_cached_small if method.small else bs.ours_cached
        else:
            target = bs.guide_small if method.small else bs.guide
        args = Args(bs.size, seed)
        call = method.call(target, args)
        refill = None
        if method.victims:
            refill = Victims(bs.loader, target.key, args, batch=1000)
        # Untimed first: the first calls after a change of CPU placement run cold.
        time_sync(call, min(WARMUP, self.opts.seconds), refill)
        stats0 = target.redis.stats() if impl in (OURS, OURS_CACHED) else None
        gc.collect()
        latencies, timed = time_sync(call, self.opts.seconds, refill)
        if stats0 is not None:  # the victims' loader has a client of its own
            rts = (target.redis.stats()["round_trips"] - stats0["round_trips"]) / len(latencies)
        else:
            rts = self.results.guide_round_trips.get(method.name)
        if refill is not None:
            refill.cleanup()
        return summarize(latencies, timed, rts)

    def measure_async(self, impl: str, method: Method, bs: BoardSet, concurrency: int, seed: int):
        self.placement.throughput()
        if impl == OURS_ASYNC:
            target = bs.ours_async_small if method.small else bs.ours_async
        elif impl == OURS_ASYNC_CACHED:
            target = bs.ours_async_cached_small if method.small else bs.ours_async_cached
        else:
            target = bs.guide_async_small if method.small else bs.guide_async
        args = Args(bs.size, seed)
        call = method.call(target, args)
        refill = None
        if method.victims:
            refill = Victims(bs.loader, target.key, args, batch=max(1000, 4 * concurrency))
        self.loop.run_until_complete(
            time_async(call, concurrency, min(WARMUP, self.opts.seconds), refill)
        )
        stats0 = target.redis.stats() if impl in (OURS_ASYNC, OURS_ASYNC_CACHED) else None
        gc.collect()
        latencies, timed = self.loop.run_until_complete(
            time_async(call, concurrency, self.opts.seconds, refill)
        )
        if stats0 is not None:
            stats1 = target.redis.stats()
            rts = (stats1["round_trips"] - stats0["round_trips"]) / max(
                1, stats1["calls"] - stats0["calls"]
            )
        else:
            rts = self.results.guide_async_round_trips.get(method.name)
        if refill is not None:
            refill.cleanup()
        return summarize(latencies, timed, rts)

    def measure_floor(self, method: Method, bs: BoardSet, pipeline: int) -> Sample:
        if pipeline == 1:
            self.placement.latency()
        else:
            self.placement.throughput()
        key = "lb:small" if method.small else bs.key
        command = floor_commands(method, key)
        rate_key = (method.name, bs.size, pipeline)
        if rate_key not in self.floor_rate:  # calibrate the request count to --seconds
            probe = 300 if pipeline == 1 else 3000
            self.floor_rate[rate_key] = self._floor_once(method, bs, command, probe, pipeline).rps
        n = int(self.floor_rate[rate_key] * self.opts.seconds)
        n = max(n, 200 if pipeline == 1 else 2 * pipeline)
        run = self._floor_once(method, bs, command, n, pipeline)
        return Sample(run.rps, run.p50_us, run.p99_us, run.requests, 1.0 / pipeline)

    def _floor_run(
        self, commands: list[list[str]], db: int, n: int, pipeline: int, keyspace: int
    ) -> FloorRun:
        if len(commands) == 1:
            return self.rb.run(commands[0], db, n, pipeline, keyspace)
        return self.raw.run(commands, db, n, pipeline, keyspace)

    def measure_raw_floor(self, method: Method, bs: BoardSet) -> Sample:
        """The raw-socket floor on a one-command request: exact percentiles, to set against
        redis-benchmark's bucketed ones."""
        self.placement.latency()
        commands = floor_commands(method, "lb:small" if method.small else bs.key)
        n = max(200, int(self.floor_rate.get((method.name, bs.size, 1), 5000) * self.opts.seconds))
        run = self.raw.run(commands, bs.db, n, 1, bs.size)
        return Sample(run.rps, run.p50_us, run.p99_us, run.requests, 1.0)

    def _floor_once(
        self, method: Method, bs: BoardSet, command: list[list[str]], n: int, pipeline: int
    ) -> FloorRun:
        if not method.victims:
            return self._floor_run(command, bs.db, n, pipeline, bs.size)
        # delete_user: victims ids below 4n; redis-benchmark draws them at random, so most
        # (about 90%) are still there when deleted. The share is reported.
        keyspace = 4 * n
        ids = [victim_id(i) for i in range(keyspace)]
        loader = redis_leaderboard.RedisLeaderboard(bs.loader, key=bs.key, max_entries=MAX_ENTRIES)
        loader.upsert_many((v, 1.0, META) for v in ids)
        before = bs.admin.zcard(bs.key)
        run = self._floor_run(command, bs.db, n, pipeline, keyspace)
        hits = (before - bs.admin.zcard(bs.key)) / n
        self.results.floor_hits.setdefault(f"{bs.size}|P{pipeline}", []).append(hits)
        remove(bs.loader, bs.key, ids)
        return run

    def check_floor_commands(self, bs: BoardSet) -> None:
        """Each floor command, sentinels filled in, runs without an error reply."""
        for method in METHODS:
            if method.small and bs.size != self.main:
                continue
            key = "lb:small" if method.small else bs.key
            # Through our client first, which loads the script (EVALSHA needs it cached).
            bs.loader.run(method.floor(_core.Board(key, MAX_ENTRIES)))
            remove(bs.loader, key, [USER_SENTINEL])
            if method.victims:
                bs.loader.execute_command("ZADD", bs.key, "1", victim_id(0))
            commands = floor_commands(method, key)
            if len(commands) == 1:
                concrete = [a.replace(RAND, f"{0:012d}") for a in commands[0]]
                reply = bs.loader.execute_command(*concrete)
                if isinstance(reply, Exception):
                    raise RuntimeError(f"floor command for {method.name} failed: {reply}")
            else:
                self.raw.run(commands, bs.db, 1, 1, 1)  # raises on an error reply
        assert bs.admin.zcard(bs.key) == bs.size

    def count_guide_round_trips(self, bs: BoardSet) -> None:
        """The guide's round trips per call, counted on instrumented connections (one request
        write = one round trip), over 20 calls, sync and asyncio."""
        counting, sent = counting_redis(self.host, self.port)
        self.clients.append(counting)
        async_sent = [0]

        class CountingAsyncConnection(redis.asyncio.Connection):
            async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
                async_sent[0] += 1
                await super().send_packed_command(command, check_health)

        pool = redis.asyncio.ConnectionPool(
            host=self.host,
            port=self.port,
            db=bs.db,
            decode_responses=True,
            connection_class=CountingAsyncConnection,
        )
        counting_async = redis.asyncio.Redis(connection_pool=pool)
        self.clients.append(counting_async)
        # Connect first: the handshake's writes are not the guide's.
        counting.ping()
        self.loop.run_until_complete(counting_async.ping())
        for method in METHODS:
            key = bs.guide_key + (":small" if method.small else "")
            board = GuideLeaderboard(counting, key=key, max_entries=MAX_ENTRIES)
            args = Args(bs.size, 99)
            refill = Victims(bs.loader, key, args, 20) if method.victims else None
            call = method.call(board, args)
            if refill:
                refill()
            before = sent()
            for _ in range(20):
                call()
            self.results.guide_round_trips[method.name] = (sent() - before) / 20
            async_board = AsyncGuideLeaderboard(counting_async, key=key, max_entries=MAX_ENTRIES)
            call = method.call(async_board, args)
            if refill:
                refill()

            async def twenty(call: Call = call) -> None:
                for _ in range(20):
                    await call()

            before = async_sent[0]
            self.loop.run_until_complete(twenty())
            self.results.guide_async_round_trips[method.name] = (async_sent[0] - before) / 20

    # Bulk import -----------------------------------------------------------------------------

    def bulk(self, size: int, db: int) -> None:
        opts = self.opts
        self.placement.throughput()
        log(f"bulk import: generating {size:,} users")
        data = board_entries(size)
        gc.collect()
        gc.freeze()  # the entries are long-lived: keep the collector from rescanning them
        client = self.client(db)
        admin = self.admin(db)
        async_client = redis_leaderboard.asyncio.Client(host=self.host, port=self.port, db=db)
        self.clients.append(async_client)
        redis_py = redis.Redis(host=self.host, port=self.port, db=db)
        self.clients.append(redis_py)
        key = "lb"

        def ours_sync() -> None:
            board = redis_leaderboard.RedisLeaderboard(client, key=key, max_entries=MAX_ENTRIES)
            summary = board.upsert_many(data, chunk_size=IMPORT_CHUNK)
            assert summary["written"] == size and summary["trimmed"] == 0, summary

        def ours_async() -> None:
            board = redis_leaderboard.asyncio.RedisLeaderboard(
                async_client, key=key, max_entries=MAX_ENTRIES
            )
            summary = self.loop.run_until_complete(board.upsert_many(data, chunk_size=IMPORT_CHUNK))
            assert summary["written"] == size, summary

        def redis_py_pipeline() -> None:
            with redis_py.pipeline(transaction=False) as pipe:
                for start in range(0, size, IMPORT_CHUNK):
                    for uid, score, meta in data[start : start + IMPORT_CHUNK]:
                        pipe.zadd(key, {uid: score})
                        pipe.hset(f"{key}:user:{uid}", mapping=meta)
                    pipe.execute()

        def flush() -> int:
            admin.flushdb()
            return int(admin.info("memory")["used_memory"])

        def timed(name: str, fn: Callable[[], None], record: bool = True) -> None:
            before = flush()
            gc.collect()
            t0 = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - t0
            assert admin.zcard(key) == size, (name, admin.zcard(key))
            after = int(admin.info("memory")["used_memory"])
            if record:
                self.results.bulk.setdefault(name, []).append(elapsed)
            if name == OURS:
                self.results.memory_per_user.append((after - before) / size)
            log(f"  {name}: {elapsed:.2f} s ({size / elapsed:,.0f} users/s)")

        ceiling_zadd = ["ZADD", key]
        for _ in range(IMPORT_CHUNK):
            ceiling_zadd += [RAND, USER_SENTINEL]
        ceiling_hset = ["HSET", f"{key}:user:{USER_SENTINEL}", "name", "Player 1", "country", "NL"]

        def ceiling() -> None:
            flush()
            keyspace = 2**31 - 1  # random ids all but never repeat: every user is new
            zadd_n = max(1, size // IMPORT_CHUNK)
            zadd = self.rb.run(ceiling_zadd, db, zadd_n, min(PIPELINE, zadd_n), keyspace)
            hset = self.rb.run(ceiling_hset, db, size, PIPELINE, keyspace)
            # Server time per user: 1/IMPORT_CHUNK of a ZADD plus one HSET.
            seconds = size * (1 / (zadd.rps * IMPORT_CHUNK) + 1 / hset.rps)
            self.results.bulk.setdefault("ceiling", []).append(seconds)
            self.results.bulk.setdefault("ceiling-zadd-members/s", []).append(
                zadd.rps * IMPORT_CHUNK
            )
            self.results.bulk.setdefault("ceiling-hset/s", []).append(hset.rps)
            log(f"  ceiling: {seconds:.2f} s ({size / seconds:,.0f} users/s)")

        jobs = [
            (OURS, ours_sync),
            (OURS_ASYNC, ours_async),
            ("redis-py", redis_py_pipeline),
        ]
        redis_cli = shutil.which("redis-cli")
        workdir = tempfile.TemporaryDirectory(prefix="redis-leaderboard-bench-")
        if redis_cli is not None and hasattr(_core.Board, "upsert_chunk"):
            # Mass insertion: redis-cli --pipe streaming the very bytes upsert_many sends.
            stream = Path(workdir.name, "import.resp")
            board = _core.Board(key, MAX_ENTRIES)
            with stream.open("wb") as f:
                for start in range(0, size, IMPORT_CHUNK):
                    f.write(board.upsert_chunk(data[start : start + IMPORT_CHUNK], start).request())

            def redis_cli_pipe() -> None:
                with stream.open("rb") as f:
                    subprocess.run(
                        [redis_cli, "-h", self.host, "-p", str(self.port), "-n", str(db), "--pipe"],
                        stdin=f,
                        stdout=subprocess.DEVNULL,
                        check=True,
                    )

            jobs.append(("redis-cli", redis_cli_pipe))
        for round_no in range(opts.bulk_rounds):
            log(f"bulk import round {round_no + 1}/{opts.bulk_rounds}")
            order = jobs if round_no % 2 == 0 else jobs[::-1]
            ceiling()
            for name, fn in order:
                timed(name, fn)
        if order[-1][0] != OURS:  # leave our import in place: it is the largest board
            timed(OURS, ours_sync, record=False)
        workdir.cleanup()
        data.clear()
        gc.unfreeze()
        gc.collect()

    # The rounds ------------------------------------------------------------------------------

    def jobs_for(self, method: Method, round_no: int) -> list[tuple[tuple, Callable[[], Any]]]:
        seed = round_no * 1000 + METHODS.index(method)
        main = self.boards[self.main]
        # Latency measurements first, then throughput ones (the CPU placement changes once).
        jobs: list[tuple[tuple, Callable[[], Any]]] = [
            ((OURS, self.main, 0), lambda: self.measure_sync(OURS, method, main, seed)),
            ((GUIDE, self.main, 0), lambda: self.measure_sync(GUIDE, method, main, seed)),
            ((FLOOR_P1, self.main, 0), lambda: self.measure_floor(method, main, 1)),
        ]
        if exact_floor(method) == FLOOR_RAW:
            jobs.append(((FLOOR_RAW, self.main, 0), lambda: self.measure_raw_floor(method, main)))
        if method.name in CACHED_METHODS or method.small:
            jobs.insert(
                1,
                (
                    (OURS_CACHED, self.main, 0),
                    lambda: self.measure_sync(OURS_CACHED, method, main, seed),
                ),
            )
        if not method.small:
            for size in self.sizes[1:]:
                bs = self.boards[size]
                jobs.append(
                    ((OURS, size, 0), lambda bs=bs: self.measure_sync(OURS, method, bs, seed))
                )
                jobs.append(((FLOOR_P1, size, 0), lambda bs=bs: self.measure_floor(method, bs, 1)))
        if method.name in CACHED_METHODS or method.small:
            jobs.append(
                (
                    (OURS_ASYNC_CACHED, self.main, 1),
                    lambda: self.measure_async(OURS_ASYNC_CACHED, method, main, 1, seed),
                )
            )
        for c in CONCURRENCY:
            for impl in (OURS_ASYNC, GUIDE_ASYNC):
                jobs.append(
                    (
                        (impl, self.main, c),
                        lambda impl=impl, c=c: self.measure_async(impl, method, main, c, seed),
                    )
                )
        jobs.append(((FLOOR_P64, self.main, 0), lambda: self.measure_floor(method, main, PIPELINE)))
        if round_no % 2 == 1:
            jobs.reverse()
        return jobs

    def run(self) -> None:
        opts = self.opts
        dbs = {size: db for db, size in enumerate(self.sizes)}
        largest = self.sizes[-1]
        self.bulk(largest, dbs[largest])
        for size in self.sizes:
            log(f"board of {size:,} users")
            self.boards[size] = self.make_board_set(size, dbs[size])
            self.check_floor_commands(self.boards[size])
        main = self.boards[self.main]
        # Hand the memory freed by the imports' flushes back now, not during the rounds.
        main.admin.execute_command("MEMORY", "PURGE")
        log("counting the guide's round trips; warming up")
        self.count_guide_round_trips(main)
        warm = argparse.Namespace(**vars(opts))
        warm.seconds = 0.02
        real, self.opts = self.opts, warm
        for method in METHODS:
            for _key, job in self.jobs_for(method, 0):
                checkpoint()
                job()
        self.opts = real
        self.floor_rate.clear()  # calibrate again, now warm
        gc.collect()
        gc.freeze()
        for round_no in range(opts.rounds):
            log(f"round {round_no + 1}/{opts.rounds}")
            for method in METHODS:
                for (impl, size, c), job in self.jobs_for(method, round_no):
                    checkpoint()
                    self.results.add(impl, method.name, size, c, job())
        for bs in self.boards.values():
            assert bs.admin.zcard(bs.key) == bs.size, (bs.size, bs.admin.zcard(bs.key))


# --------------------------------------------------------------------------------------------
# The report


def fmt_rate(x: Optional[float]) -> str:
    return "—" if x is None else f"{x:,.0f}"


def fmt_us(x: Optional[float]) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def fmt_ratio(x: Optional[float]) -> str:
    return "—" if x is None else f"{x:.2f}x"


def fmt_rt(x: Optional[float]) -> str:
    if x is None:
        return "—"
    if x < 0.1:
        return f"{x:.3f}"
    return str(round(x)) if abs(x - round(x)) < 0.005 else f"{x:.2f}"


RATE, P50 = "calls_per_s", "p50_us"


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None or b == 0 else a / b


def machine_info() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f", {int(line.split()[1]) / 1024**2:.0f} GiB RAM"
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs{mem}, {platform.system()} {platform.release()}"


def method_label(method: Method) -> str:
    """The method's name, marked † when its floor is not redis-benchmark (see RawFloor)."""
    return method.name + (" †" if len(floor_commands(method, "k")) > 1 else "")


def exact_floor(method: Method) -> str:
    """Which sample holds the method's floor with exact percentiles: RawFloor's, measured
    besides redis-benchmark for a one-command request, or the floor itself for a transaction
    (where RawFloor is the floor)."""
    if len(floor_commands(method, "k")) > 1 or method.victims:
        return FLOOR_P1
    return FLOOR_RAW


def git_revision() -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(HERE.parent),
                "status",
                "--porcelain",
                "--",
                "cpp",
                "python/redis_leaderboard",
                ":!python/redis_leaderboard/demo",
            ],
            capture_output=True,
            text=True,
        ).stdout.strip()
        return rev + (" + uncommitted changes to the package" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def report(bench: Bench, command: str, started: float, elapsed: float) -> tuple[str, dict]:
    res, opts, main, sizes = bench.results, bench.opts, bench.main, bench.sizes
    largest = sizes[-1]
    versions = (
        f"redis-server {bench.server_version}, redis-benchmark {bench.rb.version()}, "
        f"Python {platform.python_version()}, redis_leaderboard {redis_leaderboard.__version__} "
        f"({bench.package_identity()}), redis-py {redis.__version__} with hiredis "
        f"{hiredis_version()}; asyncio runs on {event_loops.describe(opts.loop)}"
    )
    date = datetime.datetime.fromtimestamp(started, datetime.timezone.utc)
    out = [
        "# Benchmark results",
        "",
        f"- Command: `{command}`"
        + (" (quick mode: a smoke test, not a result)" if opts.quick else ""),
        f"- Date: {date:%Y-%m-%d %H:%M} UTC; the run took {elapsed / 60:.1f} min",
        f"- Machine: {machine_info()}",
        f"- Versions: {versions}",
        f"- Server: a private redis-server on 127.0.0.1 (TCP), no persistence; every client on "
        f"the same machine; {opts.placement_text}. Boards of "
        f"{', '.join(f'{s:,}' for s in sizes)} users, two metadata fields each, "
        "`max_entries` above the size (no write trims). Median of "
        f"{opts.rounds} rounds of {opts.seconds:g} s per measurement; within a round every "
        f"implementation of a method runs back to back, the order reversed every other round.",
        "- Floor: `redis-benchmark -c 1` sending the exact request our method sends (the same "
        "EVALSHA or command), random arguments via `__rand_int__`; `-P 1` is the latency floor, "
        f"`-P {PIPELINE}` the throughput ceiling on one connection.",
        "",
    ]

    # Per call, sync
    out += [
        f"## One call at a time (sync, one connection), board of {main:,} users",
        "",
        "calls/s and latency per call (µs). ours = `redis_leaderboard.RedisLeaderboard`; guide "
        "= the guide's algorithm on redis-py + hiredis; floor = `redis-benchmark -c 1 -P 1`. "
        "RT = round trips per call. Ratios are medians of the per-round ratios (both sides "
        "measured back to back in each round), so they need not equal the quotient of the "
        "medians shown. redis-benchmark reports percentiles at the top of its histogram "
        "buckets (8 µs wide here: 23, 31, 39, 47 µs ...), so its p50 can be up to 8 µs above "
        "the true value; its calls/s (one call at a time: 1 / mean latency) is exact. So the "
        "table also gives the exact floor: the same request from RawFloor (a raw socket and "
        "hiredis' C parser driven from Python, exact percentiles; see †), whose own loop costs "
        "a few µs per call that redis-benchmark's C loop does not.",
        "",
        "| method | ours calls/s | ours p50 | ours p99 | guide calls/s | guide p50 | guide p99 "
        "| ours / guide | floor calls/s | floor p50 | ours p50 / floor p50 | exact floor p50 "
        "| ours p50 / exact floor p50 | RT ours | RT guide |",
        "| --- |" + " ---: |" * 14,
    ]
    for m in METHODS:
        o, g, f = (res.median(i, m.name, main) for i in (OURS, GUIDE, FLOOR_P1))
        if o is None or g is None or f is None:
            continue
        x = res.median(exact_floor(m), m.name, main)
        x_ratio = res.paired((OURS, m.name, main, 0), (exact_floor(m), m.name, main, 0), P50)
        out.append(
            f"| {method_label(m)} | {fmt_rate(o.calls_per_s)} | {fmt_us(o.p50_us)} "
            f"| {fmt_us(o.p99_us)} "
            f"| {fmt_rate(g.calls_per_s)} | {fmt_us(g.p50_us)} | {fmt_us(g.p99_us)} "
            f"| {fmt_ratio(res.paired((OURS, m.name, main, 0), (GUIDE, m.name, main, 0), RATE))} "
            f"| {fmt_rate(f.calls_per_s)} | {fmt_us(f.p50_us)} "
            f"| {fmt_ratio(res.paired((OURS, m.name, main, 0), (FLOOR_P1, m.name, main, 0), P50))} "
            f"| {fmt_us(x.p50_us) if x else ''} | {fmt_ratio(x_ratio)} "
            f"| {fmt_rt(o.round_trips_per_call)} | {fmt_rt(g.round_trips_per_call)} |"
        )
    notes = [f"{m.name}: {m.note}" for m in METHODS if m.note]
    hits = res.floor_hits.get(f"{main}|P1")
    out += ["", "Notes: " + "; ".join(notes) + "."]
    if hits:
        out.append(
            f"The floor's delete_user draws random victims, so {statistics.median(hits):.0%} of "
            "its calls deleted a present user (ours and the guide's: all)."
        )
    raw_methods = [m.name for m in METHODS if method_label(m) != m.name]
    if raw_methods:
        raw = res.median(FLOOR_RAW, RAW_CALIBRATION, main)
        rb = res.median(FLOOR_P1, RAW_CALIBRATION, main)
        calibration = (
            f" On {RAW_CALIBRATION}'s one-command request this loop measures p50 "
            f"{fmt_us(raw.p50_us)} µs and {fmt_rate(raw.calls_per_s)} calls/s, redis-benchmark "
            f"{fmt_us(rb.p50_us)} µs and {fmt_rate(rb.calls_per_s)} calls/s."
            if raw and rb
            else ""
        )
        out.append(
            f"† {', '.join(raw_methods)}: the request is a MULTI ... EXEC transaction, which "
            "redis-benchmark cannot send (one command per request), so the floor and the "
            "ceiling are a loop in the benchmark process writing the same bytes on a raw socket "
            "and reading the replies with hiredis' C parser." + calibration
        )
    out.append("")

    # The client-side cache
    cached_rows = []
    for m in METHODS:
        o, c = res.median(OURS, m.name, main), res.median(OURS_CACHED, m.name, main)
        if o is None or c is None:
            continue
        a, ac = (
            res.median(OURS_ASYNC, m.name, main, 1),
            res.median(OURS_ASYNC_CACHED, m.name, main, 1),
        )
        ar = res.paired((OURS_ASYNC, m.name, main, 1), (OURS_ASYNC_CACHED, m.name, main, 1), P50)
        sr = res.paired((OURS, m.name, main, 0), (OURS_CACHED, m.name, main, 0), P50)
        cached_rows.append(
            f"| {m.name} | {fmt_us(o.p50_us)} | {fmt_us(c.p50_us)} | {fmt_ratio(sr)} "
            f"| {fmt_rt(c.round_trips_per_call)} "
            f"| {fmt_us(a.p50_us) if a else '—'} | {fmt_us(ac.p50_us) if ac else '—'} "
            f"| {fmt_ratio(ar)} |"
        )
    if cached_rows:
        out += [
            f"## Client-side cache of metadata (`client_cache=True`), board of {main:,} users",
            "",
            "p50 latency (µs) of the reads that return entries, with and without the cache, on "
            "a board whose metadata does not change during the run (so the cache is warm: each "
            "read sends only the rank query, plus a PING on the invalidation connection). "
            "Speed-up = median of the per-round p50 ratios.",
            "",
            "| method | sync p50 | sync cached p50 | speed-up | RT cached | asyncio x1 p50 "
            "| asyncio x1 cached p50 | speed-up |",
            "| --- |" + " ---: |" * 7,
            *cached_rows,
            "",
        ]

    # asyncio
    out += [
        f"## Concurrent calls (asyncio, one event loop: {opts.loop}), board of {main:,} users",
        "",
        "calls/s with 1, 10, 100 and 1000 tasks calling in a loop. ours = "
        "`redis_leaderboard.asyncio.RedisLeaderboard` on one client (one connection, automatic "
        "pipelining); guide = the guide's algorithm on redis.asyncio (a connection per task, "
        f"BlockingConnectionPool(max_connections={GUIDE_POOL})); "
        f"ceiling = `redis-benchmark -c 1 -P {PIPELINE}`. RT = round trips (socket writes) per "
        "call for ours at 1000 tasks.",
        "",
        "| method | "
        + " | ".join(f"ours {c}" for c in CONCURRENCY)
        + " | "
        + " | ".join(f"guide {c}" for c in CONCURRENCY)
        + f" | ceiling P{PIPELINE} | ours 1000 / guide 1000 | ours 1000 / ceiling | RT ours 1000 |",
        "| --- |" + " ---: |" * (2 * len(CONCURRENCY) + 4),
    ]
    for m in METHODS:
        ours = [res.median(OURS_ASYNC, m.name, main, c) for c in CONCURRENCY]
        guide = [res.median(GUIDE_ASYNC, m.name, main, c) for c in CONCURRENCY]
        ceiling = res.median(FLOOR_P64, m.name, main)
        if None in ours or None in guide or ceiling is None:
            continue
        top_o, top = ours[-1], CONCURRENCY[-1]
        top_key = (OURS_ASYNC, m.name, main, top)
        out.append(
            f"| {method_label(m)} | "
            + " | ".join(fmt_rate(s.calls_per_s) for s in ours)
            + " | "
            + " | ".join(fmt_rate(s.calls_per_s) for s in guide)
            + f" | {fmt_rate(ceiling.calls_per_s)} "
            f"| {fmt_ratio(res.paired(top_key, (GUIDE_ASYNC, m.name, main, top), RATE))} "
            f"| {fmt_ratio(res.paired(top_key, (FLOOR_P64, m.name, main, 0), RATE))} "
            f"| {fmt_rt(top_o.round_trips_per_call)} |"
        )
    out += [
        "",
        "Latency under concurrency, p50 / p99 in µs (from a call's start to its result):",
        "",
        "| method | " + " | ".join(f"ours {c}" for c in CONCURRENCY) + " | "
        + " | ".join(f"guide {c}" for c in CONCURRENCY) + " |",
        "| --- |" + " ---: |" * (2 * len(CONCURRENCY)),
    ]  # fmt: skip
    for m in METHODS:
        cells = []
        for impl in (OURS_ASYNC, GUIDE_ASYNC):
            for c in CONCURRENCY:
                s = res.median(impl, m.name, main, c)
                cells.append("—" if s is None else f"{fmt_us(s.p50_us)} / {fmt_us(s.p99_us)}")
        out.append(f"| {method_label(m)} | " + " | ".join(cells) + " |")
    out.append("")

    # Scale
    out += [
        "## Board size: per-call p50 (µs), sync",
        "",
        "ours = `redis_leaderboard.RedisLeaderboard`, floor = `redis-benchmark -c 1 -P 1` with "
        "the same request, on boards of each size (random users and ranks over the whole board). "
        "The ratio is the median of the per-round ratios.",
        "",
        "| method | "
        + " | ".join(f"ours {s:,}" for s in sizes)
        + f" | ours {largest:,} / {main:,} | "
        + " | ".join(f"floor {s:,}" for s in sizes)
        + " |",
        "| --- |" + " ---: |" * (2 * len(sizes) + 1),
    ]
    for m in METHODS:
        if m.small:
            continue
        ours = [res.median(OURS, m.name, s) for s in sizes]
        floor = [res.median(FLOOR_P1, m.name, s) for s in sizes]
        growth = res.paired((OURS, m.name, largest, 0), (OURS, m.name, main, 0), P50)
        out.append(
            f"| {method_label(m)} | "
            + " | ".join(fmt_us(s.p50_us if s else None) for s in ours)
            + f" | {fmt_ratio(growth)} | "
            + " | ".join(fmt_us(s.p50_us if s else None) for s in floor)
            + " |"
        )
    out += ["", f"list_all runs on a board of {SMALL_BOARD} users only (it is O(N) by design).", ""]

    # Bulk
    b = {k: statistics.median(v) for k, v in res.bulk.items()}
    guide_upsert = res.median(GUIDE, "upsert_user", main)
    rows = [
        ("ours sync: `RedisLeaderboard.upsert_many`", OURS),
        ("ours asyncio: `asyncio.RedisLeaderboard.upsert_many`", OURS_ASYNC),
        (
            f"hand-written redis-py pipeline (transaction=False, {IMPORT_CHUNK} users per "
            "execute, ZADD + HSET per user)",
            "redis-py",
        ),
        (
            f"redis-benchmark ceiling: ZADD of {IMPORT_CHUNK} members + HSET per user, "
            f"-c 1 -P {PIPELINE}",
            "ceiling",
        ),
        (
            "`redis-cli --pipe` (mass insertion) streaming the exact bytes of our upsert_many "
            "from a file",
            "redis-cli",
        ),
    ]
    out += [
        f"## Bulk import: {largest:,} users with two metadata fields",
        "",
        f"Median of {opts.bulk_rounds} rounds (ratios: median of the per-round ratios); the "
        "database is flushed before each import. Ours "
        f"sends chunks of {IMPORT_CHUNK}: one variadic ZADD and one HSET per user. The ceiling "
        "is the server's time for those commands, measured with redis-benchmark on fresh keys "
        "(ZADD and HSET runs added up: "
        f"{fmt_rate(b.get('ceiling-zadd-members/s'))} ZADD members/s and "
        f"{fmt_rate(b.get('ceiling-hset/s'))} HSET/s).",
        "",
        "| import | seconds | users/s | vs redis-py pipeline | vs ceiling |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for label, name in rows:
        if name not in b:
            continue
        seconds = b[name]
        out.append(
            f"| {label} | {seconds:.2f} | {fmt_rate(largest / seconds)} "
            f"| {fmt_ratio(res.bulk_paired('redis-py', name))} "
            f"| {fmt_ratio(res.bulk_paired('ceiling', name))} |"
        )
    if guide_upsert is not None:
        out.append(
            f"| the guide: `upsert_user` one by one (its calls/s at {main:,} users, not run "
            f"for {largest:,}) | {largest / guide_upsert.calls_per_s:.0f} "
            f"| {fmt_rate(guide_upsert.calls_per_s)} "
            f"| {fmt_ratio(ratio(b.get('redis-py'), largest / guide_upsert.calls_per_s))} "
            f"| {fmt_ratio(ratio(b.get('ceiling'), largest / guide_upsert.calls_per_s))} |"
        )
    if res.memory_per_user:
        out += [
            "",
            f"Redis memory per user: {statistics.median(res.memory_per_user):.0f} bytes "
            f"(INFO memory used_memory after minus before the import, divided by {largest:,}; "
            "sorted-set entry + metadata hash with two fields + key).",
        ]
    out.append("")

    # Targets
    targets, data = evaluate_targets(bench)
    out += [
        "## Targets (issue 5, Done when)",
        "",
        "| target | measured | met |",
        "| --- | --- | --- |",
        *[f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in targets],
        "",
    ]
    raw = {
        "command": command,
        "date": date.isoformat(),
        "machine": machine_info(),
        "versions": versions,
        "options": {k: v for k, v in vars(opts).items() if k != "out"},  # Path: not JSON
        "samples": {k: [asdict(s) for s in v] for k, v in res.samples.items()},
        "bulk_seconds": res.bulk,
        "memory_per_user": res.memory_per_user,
        "floor_delete_hits": res.floor_hits,
        "guide_round_trips": res.guide_round_trips,
        "guide_async_round_trips": res.guide_async_round_trips,
        "targets": data,
    }
    return "\n".join(out), raw


def hiredis_version() -> str:
    try:
        import hiredis

        return str(hiredis.__version__)
    except ImportError:
        return "missing"


def evaluate_targets(bench: Bench) -> tuple[list[tuple[str, str, bool]], list[dict]]:
    res, main, largest = bench.results, bench.main, bench.sizes[-1]
    rows: list[tuple[str, str, bool]] = []
    if all(k in res.bulk for k in (OURS, OURS_ASYNC, "redis-py", "ceiling")):
        for name, label in ((OURS, "sync"), (OURS_ASYNC, "asyncio")):
            vs_py = res.bulk_paired("redis-py", name) or 0.0
            vs_ceiling = res.bulk_paired("ceiling", name) or 0.0
            rows.append(
                (
                    f"bulk import ({label}) >= 2x redis-py pipeline",
                    f"{vs_py:.2f}x",
                    vs_py >= 2,
                )
            )
            rows.append(
                (f"bulk import ({label}) >= 0.8x ceiling", f"{vs_ceiling:.2f}x", vs_ceiling >= 0.8)
            )
    # Judged on both floors: redis-benchmark's (as the target is worded) and the exact one
    # (redis-benchmark's p50 is the top of an 8 µs bucket, which flatters us).
    for name in ("upsert_user", "get_top(10)", "get_rank"):
        o, f = res.median(OURS, name, main), res.median(FLOOR_P1, name, main)
        x = res.median(FLOOR_RAW, name, main)
        r = res.paired((OURS, name, main, 0), (FLOOR_P1, name, main, 0), P50)
        xr = res.paired((OURS, name, main, 0), (FLOOR_RAW, name, main, 0), P50)
        if o and f and x and r is not None and xr is not None:
            rows.append(
                (
                    f"sync p50 {name} <= 1.3x redis-benchmark -P 1 p50 (and the exact floor's)",
                    f"{fmt_us(o.p50_us)} vs {fmt_us(f.p50_us)} µs, ratio {r:.2f}x; "
                    f"exact floor {fmt_us(x.p50_us)} µs, ratio {xr:.2f}x",
                    r <= 1.3 and xr <= 1.3,
                )
            )
    # Issue 15: big reads within 1.10x of the exact floor; the client-side cache >= 3x faster.
    for m in METHODS:
        if m.name not in ("get_top(100)",) and not m.small:
            continue
        o, x = res.median(OURS, m.name, main), res.median(exact_floor(m), m.name, main)
        xr = res.paired((OURS, m.name, main, 0), (exact_floor(m), m.name, main, 0), P50)
        if o and x and xr is not None:
            rows.append(
                (
                    f"sync p50 {m.name} <= 1.10x the exact floor",
                    f"{fmt_us(o.p50_us)} vs {fmt_us(x.p50_us)} µs, ratio {xr:.2f}x",
                    xr <= 1.10,
                )
            )
    for name in ("get_top(100)",):
        o, c = res.median(OURS, name, main), res.median(OURS_CACHED, name, main)
        r = res.paired((OURS, name, main, 0), (OURS_CACHED, name, main, 0), P50)
        if o and c and r is not None:
            rows.append(
                (
                    f"sync {name} with client_cache=True >= 3x faster (p50) than without",
                    f"{fmt_us(c.p50_us)} vs {fmt_us(o.p50_us)} µs; {r:.2f}x faster",
                    r >= 3,
                )
            )
    top = CONCURRENCY[-1]
    o = res.median(OURS_ASYNC, "upsert_user", main, top)
    f = res.median(FLOOR_P64, "upsert_user", main)
    r = res.paired(
        (OURS_ASYNC, "upsert_user", main, top), (FLOOR_P64, "upsert_user", main, 0), RATE
    )
    if o and f and r is not None:
        rows.append(
            (
                f"asyncio {top} tasks upsert_user >= 0.7x -P {PIPELINE} ceiling",
                f"{fmt_rate(o.calls_per_s)} vs {fmt_rate(f.calls_per_s)} calls/s; ratio {r:.2f}x",
                r >= 0.7,
            )
        )
    if largest != main:
        for m in METHODS:
            if m.small:
                continue
            a, z = res.median(OURS, m.name, main), res.median(OURS, m.name, largest)
            r = res.paired((OURS, m.name, largest, 0), (OURS, m.name, main, 0), P50)
            if a and z and r is not None:
                rows.append(
                    (
                        f"p50 at {largest:,} <= 1.5x p50 at {main:,}: {m.name}",
                        f"{fmt_us(z.p50_us)} vs {fmt_us(a.p50_us)} µs; ratio {r:.2f}x",
                        r <= 1.5,
                    )
                )
    return rows, [{"target": t, "measured": m, "met": ok} for t, m, ok in rows]


def chart(bench: Bench, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res, main, sizes = bench.results, bench.main, bench.sizes
    names = [m.name for m in METHODS]
    fig, axes = plt.subplots(2, 2, figsize=(17, 11))
    top = CONCURRENCY[-1]

    def bars(ax: Any, series: list[tuple[str, str, int, str]], title: str) -> None:
        width = 0.8 / len(series)
        for i, (label, impl, c, color) in enumerate(series):
            values = []
            for name in names:
                s = res.median(impl, name, main, c)
                values.append(s.calls_per_s if s else 0)
            xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(names))]
            ax.bar(xs, values, width, label=label, color=color)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("calls/s (log)")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)

    bars(
        axes[0][0],
        [
            ("ours sync", OURS, 0, "tab:blue"),
            ("guide on redis-py", GUIDE, 0, "tab:orange"),
            ("floor: redis-benchmark -P 1", FLOOR_P1, 0, "tab:gray"),
        ],
        f"One call at a time, board of {main:,}",
    )
    bars(
        axes[0][1],
        [
            (f"ours asyncio, {top} tasks", OURS_ASYNC, top, "tab:blue"),
            (f"guide on redis.asyncio, {top} tasks", GUIDE_ASYNC, top, "tab:orange"),
            (f"ceiling: redis-benchmark -P {PIPELINE}", FLOOR_P64, 0, "tab:gray"),
        ],
        f"Concurrent calls, board of {main:,}",
    )
    ax = axes[1][0]
    for m in METHODS:
        if m.small:
            continue
        base = res.median(OURS, m.name, main)
        points = [(s, res.median(OURS, m.name, s)) for s in sizes]
        xs = [s for s, v in points if v and base]
        ys = [v.p50_us / base.p50_us for s, v in points if v and base]
        ax.plot(xs, ys, marker="o", label=f"{m.name} ({base.p50_us:.0f} µs)" if base else m.name)
    ax.axhline(1.5, color="tab:red", linestyle="--", linewidth=1, label="target: 1.5x")
    ax.set_xscale("log")
    ax.set_xlabel("board size (users)")
    ax.set_ylabel(f"ours sync p50 / p50 at {main:,}")
    ax.set_ylim(0, max(2.0, ax.get_ylim()[1]))
    ax.set_title(f"Per-call p50 by board size, relative to {main:,} users (sync)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    ax = axes[1][1]
    b = {k: statistics.median(v) for k, v in res.bulk.items()}
    labels, values, colors = [], [], []
    for label, k, color in (
        ("ours sync", OURS, "tab:blue"),
        ("ours asyncio", OURS_ASYNC, "tab:cyan"),
        ("redis-py\npipeline", "redis-py", "tab:orange"),
        ("redis-benchmark\nceiling", "ceiling", "tab:gray"),
        ("redis-cli --pipe", "redis-cli", "tab:olive"),
    ):
        if k in b:
            labels.append(label)
            values.append(sizes[-1] / b[k])
            colors.append(color)
    ax.bar(labels, values, color=colors)
    for x, v in enumerate(values):
        ax.text(x, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("users/s")
    ax.set_title(f"Bulk import of {sizes[-1]:,} users, 2 metadata fields", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(
        f"redis_leaderboard {redis_leaderboard.__version__} vs the guide's algorithm vs "
        f"redis-benchmark (redis-server {bench.server_version})"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# Command line


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small boards, short runs (smoke)")
    parser.add_argument(
        "--sizes", help="board sizes, comma-separated (1000,100000,1000000; quick: 1000,10000)"
    )
    parser.add_argument("--seconds", type=float, help="per measurement (0.2; quick: 0.03)")
    parser.add_argument("--rounds", type=int, help="rounds; medians are reported (5; quick: 1)")
    parser.add_argument("--bulk-rounds", type=int, help="bulk import rounds (3; quick: 1)")
    parser.add_argument("--out", type=Path, help="output directory (benchmarks/results)")
    parser.add_argument(
        "--loop",
        choices=event_loops.LOOPS,
        default="asyncio",
        help="the event loop of every asyncio measurement (uvloop: pip install '.[uvloop]')",
    )
    parser.add_argument(
        "--placement",
        choices=("phased", "none"),
        default="phased",
        help="phased: latency measurements with redis-server and the clients on one CPU, "
        "throughput measurements on all (default); none: no CPU pinning",
    )
    opts = parser.parse_args(argv)
    quick = opts.quick
    if opts.sizes is None:
        opts.sizes = "1000,10000" if quick else "1000,100000,1000000"
    try:
        opts.sizes = sorted({int(s.replace("_", "")) for s in opts.sizes.split(",") if s})
    except ValueError:
        parser.error("--sizes takes comma-separated integers")
    if not opts.sizes or opts.sizes[0] < SMALL_BOARD:
        parser.error(f"--sizes must be at least {SMALL_BOARD}")
    if opts.seconds is None:
        opts.seconds = 0.03 if quick else 0.2
    if opts.rounds is None:
        opts.rounds = 1 if quick else 5
    if opts.bulk_rounds is None:
        opts.bulk_rounds = 1 if quick else 3
    if opts.seconds <= 0 or opts.rounds < 1 or opts.bulk_rounds < 1:
        parser.error("--seconds must be > 0, --rounds and --bulk-rounds >= 1")
    if opts.out is None:
        opts.out = (
            Path(tempfile.mkdtemp(prefix="redis-leaderboard-bench-quick-"))
            if quick
            else HERE / "results"
        )
    return opts


class Placement:
    """Where the processes run. ``phased`` (the default): for latency measurements (every sync
    call, redis-benchmark -P 1, the board sizes) redis-server, this process and
    redis-benchmark share one CPU, so each call costs the same two context switches and no
    cross-CPU wake-up (on a VM these cost tens of µs, at random); for throughput measurements
    (asyncio, -P 64, bulk import) all CPUs are allowed and the scheduler places the threads.
    ``none``: the scheduler places everything, always."""

    def __init__(self, mode: str, server_pid: int) -> None:
        self.server_pid = server_pid
        self.all = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self.mode = mode if len(self.all) >= 2 else "none"
        self.current = "all"

    def describe(self) -> str:
        if self.mode == "none":
            return "no CPU pinning"
        return (
            f"latency measurements (sync calls, redis-benchmark -P 1, board sizes) with "
            f"redis-server, the client and redis-benchmark pinned to CPU {self.all[0]}; "
            f"throughput measurements (asyncio, -P {PIPELINE}, bulk import) on all "
            f"{len(self.all)} CPUs"
        )

    def _pin(self, cpus: list[int]) -> None:
        os.sched_setaffinity(self.server_pid, cpus)
        for tid in os.listdir("/proc/self/task"):  # every thread of ours, I/O threads included
            try:
                os.sched_setaffinity(int(tid), cpus)
            except OSError:
                pass  # the thread ended

    def latency(self) -> None:
        if self.mode == "phased" and self.current != "one":
            self._pin(self.all[:1])
            self.current = "one"

    def throughput(self) -> None:
        if self.mode == "phased" and self.current != "all":
            self._pin(self.all)
            self.current = "all"


def main(argv: Optional[list[str]] = None) -> int:
    opts = parse_args(argv)
    # Refuse before the run, not after it: the report needs both.
    if not HIREDIS_AVAILABLE:
        raise SystemExit("hiredis is not installed: pip install '.[bench]'")
    if importlib.util.find_spec("matplotlib") is None:
        raise SystemExit("matplotlib is not installed: pip install '.[bench]'")
    event_loops.check([opts.loop])
    command = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    # Ctrl+C (even if SIGINT was inherited as ignored) and SIGTERM unwind through the finally
    # below, which stops the server.
    signal.signal(signal.SIGINT, on_sigint)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    started = time.time()
    server = RedisServer()
    atexit.register(server.cleanup)
    bench = None
    try:
        server.start()
        placement = Placement(opts.placement, server.proc.pid)
        opts.placement_text = placement.describe()
        log(f"redis-server on {server.host}:{server.port}; {opts.placement_text}")
        bench = Bench(server, opts, placement)
        bench.run()
        elapsed = time.time() - started
        text, raw = report(bench, command, started, elapsed)
        opts.out.mkdir(parents=True, exist_ok=True)
        (opts.out / "results.md").write_text(text + "\n")
        (opts.out / "results.json").write_text(json.dumps(raw, indent=1) + "\n")
        chart(bench, opts.out / "chart.png")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if bench is not None:
            bench.close()
        server.cleanup()
    print(text)
    log(f"wrote {opts.out / 'results.md'}, {opts.out / 'chart.png'}, {opts.out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
