"""The cost of a rolling window's read (issue 16) at 100,000 users: cached vs uncached.

Starts its own redis-server. A ``RollingLeaderboard`` of 7 days by 1-hour buckets (168 buckets)
is filled directly (pipelined ZADDs into the bucket keys, and each user's metadata hash): every
user scored in ``--per-user`` random buckets of the window. The clock is injected (a fixed
instant), so nothing expires while it runs.

Measured, interleaved round by round (medians over ``--rounds`` of each round's p50, µs):

* ``cached``: ``get_top(10)`` when the window's union is current (the refresh is a GET of its
  marker, then the read): every read but the first of each bucket.
* ``uncached``: the same read after the marker was deleted (outside the timing), so the read
  builds the window afresh from the 168 buckets: before issue 30, a ZUNIONSTORE then the trim to
  max_entries, which was also what the first read of each bucket cost; since, every bucket's
  entries added in steps (what a window written by an older version costs once), while the first
  read of a bucket only subtracts the bucket that left (the bucket changes below).
* ``plain board``: ``get_top(10)`` on a plain board of 100,000 users, for reference.
* writes: a ``submit(mode="incr")`` into the window by a user on its board (the union updated
  in place) and by a user outside the union's max_entries (its window score counted from the 168
  buckets).

Server CPU per call (the redis-server main thread's, from /proc/<pid>/task/<pid>/schedstat) is
given beside the wall-clock p50: it is what a busy machine inflates least.

Then the bucket changes (issue 30): each window's clock is moved on by one bucket
``--bucket-changes`` times; after each move the first ``get_top(10)`` (the one that brings the
window to the new bucket) is timed, then ``--cached-after`` cached ones, with the slow log on
for commands of 1 ms or more (``slowlog-log-slower-than 1000``, reset before the first read; a
threshold of 0 logs every command a script runs, which slows the scripts down): the longest
command the server ran while that first read was served (a script) is the longest time it
blocked every other client (0: none took 1 ms). With the round trips the first read took.
``--oldest-all`` also scores every user in the window's oldest bucket, so the first change
subtracts a bucket of ``--users`` entries.

    python benchmarks/bench_rolling.py [--users 100000] [--per-user 5] [--rounds 5]
        [--seconds 0.5] [--uncached-calls 15] [--max-entries 100] [--bucket-changes 10]
        [--cached-after 20] [--oldest-all] [--no-steady] [--no-full] [--aggregate sum]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import redis_leaderboard
from redis_leaderboard import RollingLeaderboard, _redis_server

NOW = datetime(2031, 1, 1, 12, 30, tzinfo=timezone.utc)  # keys expire by the server's clock
META = {"name": "Player", "description": "Solves production incidents before breakfast."}


def server_cpu_ns(pid: int) -> int:
    """CPU time of redis-server's main thread so far (ns)."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def sample(
    call: Callable[[], Any], pid: int, calls: int, seconds: float, before: Callable[[], Any]
):
    """(wall p50 µs, server CPU µs per call): at least `calls` calls and `seconds` seconds."""
    wall: list[int] = []
    cpu: list[int] = []
    deadline = time.perf_counter() + seconds
    while len(wall) < calls or time.perf_counter() < deadline:
        before()
        c0 = server_cpu_ns(pid)
        t0 = time.perf_counter_ns()
        call()
        t1 = time.perf_counter_ns()
        cpu.append(server_cpu_ns(pid) - c0)
        wall.append(t1 - t0)
    return statistics.median(wall) / 1000, statistics.median(cpu) / 1000


def fill(
    server: Any,
    recent: RollingLeaderboard,
    plain_key: str,
    users: int,
    per_user: int,
    oldest_all: bool = False,
) -> int:
    import redis

    r = redis.Redis(host=server.host, port=server.port)
    rng = random.Random(16)
    last = recent.bucket_at()
    buckets = recent._window.buckets
    deadline = int((recent.bucket_start(last + 1) + recent.window).timestamp() * 1000)
    entries = 0
    pipe = r.pipeline(transaction=False)
    for i in range(users):
        user = f"user-{i:06d}"
        chosen = rng.sample(range(last - buckets + 1, last + 1), per_user)
        if oldest_all and last - buckets + 1 not in chosen:
            chosen[0] = last - buckets + 1
        for b in chosen:
            pipe.zadd(recent._window.bucket_key(b), {user: rng.randrange(1, 1000)})
            entries += 1
        pipe.hset(f"{recent.key}:user:{user}", mapping=META)
        pipe.pexpireat(f"{recent.key}:user:{user}", deadline)
        if plain_key:
            pipe.zadd(plain_key, {user: rng.randrange(1, 100_000)})
            pipe.hset(f"{plain_key}:user:{user}", mapping=META)
        if i % 2000 == 1999:
            pipe.execute()
    for b in range(last - buckets + 1, last + 1):
        pipe.pexpireat(recent._window.bucket_key(b), deadline)
    pipe.execute()
    r.close()
    return entries


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ahead_state(r: Any, board: RollingLeaderboard) -> str:
    """The window ahead's state: the marker's third word ('r' ready, 'L..'/'E..' its job; '':
    none)."""
    words = (r.get(f"{board.key}:window") or b"").split()
    return words[2].decode() if len(words) == 3 else ""


def drive_ahead(
    r: Any, board: RollingLeaderboard, pid: int
) -> tuple[int, list[float], list[float]]:
    """get_top(10) until the window ahead is ready (each does a slice of its job): the calls it
    took, their wall-clock µs and server CPU µs."""
    wall: list[float] = []
    cpu: list[float] = []
    while ahead_state(r, board) not in ("r", ""):
        c0 = server_cpu_ns(pid)
        t0 = time.perf_counter_ns()
        board.get_top(10)
        wall.append((time.perf_counter_ns() - t0) / 1000)
        cpu.append((server_cpu_ns(pid) - c0) / 1000)
    return len(wall), wall, cpu


def bucket_changes(
    r: Any,
    windows: list[RollingLeaderboard],
    clocks: dict[str, list[datetime]],
    changes: int,
    cached: int,
    pid: int,
    slowlog_us: int,
) -> dict[str, list[float]]:
    """Per window: first-read p50/p99 and its server CPU p50 (µs), reads during the window
    ahead's job p50/p99 and how many (median), cached p50/p99 (µs), the longest command in the
    slow log while the first read and the job's reads ran (µs; 0: none of `slowlog_us` or
    more), and the median round trips the first read took. Each change's job is finished (by
    the reads) before the next change."""
    out: dict[str, list[float]] = {}
    r.config_set("slowlog-max-len", 100000)
    for board in windows:
        clock = clocks["recent" if board.key == "bench:7d" else "full"]
        first: list[float] = []
        first_cpu: list[float] = []
        during: list[float] = []
        jobs: list[int] = []
        warm: list[float] = []
        longest = 0
        calls: list[int] = []
        for _ in range(changes):
            drive_ahead(r, board, pid)  # the last change's job done (the reads before did it)
            clock[0] += board.bucket
            r.config_set("slowlog-log-slower-than", slowlog_us)
            r.slowlog_reset()
            trips = board.redis.stats()["round_trips"]
            c0 = server_cpu_ns(pid)
            t0 = time.perf_counter_ns()
            board.get_top(10)
            first.append((time.perf_counter_ns() - t0) / 1000)
            first_cpu.append((server_cpu_ns(pid) - c0) / 1000)
            calls.append(board.redis.stats()["round_trips"] - trips)
            n, wall, _ = drive_ahead(r, board, pid)
            jobs.append(n)
            during.extend(wall)
            r.config_set("slowlog-log-slower-than", 10000)
            log = [e for e in r.slowlog_get(100000) if b"slowlog" not in e["command"].lower()]
            log = [e for e in log if not e["command"].lower().startswith(b"config")]
            longest = max([longest] + [e["duration"] for e in log])
            for e in sorted(log, key=lambda e: -e["duration"])[:3]:
                print(f"  slow: {e['duration']:,} µs {e['command'][:90]!r}", file=sys.stderr)
            for _ in range(cached):
                t0 = time.perf_counter_ns()
                board.get_top(10)
                warm.append((time.perf_counter_ns() - t0) / 1000)
        label = f"{board.key} (max_entries={board._window.max_entries or 'None'})"
        out[label] = [
            percentile(first, 50), percentile(first, 99), percentile(first_cpu, 50),
            percentile(during or [0], 50), percentile(during or [0], 99), statistics.median(jobs),
            percentile(warm, 50), percentile(warm, 99), longest, statistics.median(calls),
        ]  # fmt: skip
    return out


def resp_end(data: bytes, at: int) -> int | None:
    """Where the RESP value starting at `at` ends, or None if it is not all in `data`."""
    line = data.find(b"\r\n", at)
    if line < 0:
        return None
    kind, head = data[at : at + 1], data[at + 1 : line]
    if kind in (b"+", b"-", b":"):
        return line + 2
    if kind == b"$":
        end = line + 2 + int(head) + 2 if int(head) >= 0 else line + 2
        return end if end <= len(data) else None
    at = line + 2
    for _ in range(max(0, int(head))):
        end = resp_end(data, at)
        if end is None:
            return None
        at = end
    return at


def step_costs(server: Any, pid: int, board: RollingLeaderboard) -> tuple[int, float, float]:
    """The refresh of `board`'s window to its clock's bucket sent alone, one step a call, on a
    raw connection: (steps, median and longest server CPU µs of a step). The redis-server main
    thread's CPU time is what a loaded machine inflates least (SLOWLOG times the wall clock).
    The window ahead is dropped first (the marker's third word), so this is the fallback: the
    cost of a change the window ahead was not ready for."""
    import socket

    import redis

    r = redis.Redis(host=server.host, port=server.port)
    words = (r.get(f"{board.key}:window") or b"").split()
    if len(words) == 3:
        r.set(f"{board.key}:window", b" ".join(words[:2]), keepttl=True)
    r.close()

    op = board._refreshed(board._board.get_top(10))
    request = op.request()
    refresh = request[: resp_end(request, 0)]
    sock = socket.create_connection((server.host, server.port))
    costs: list[float] = []
    try:
        while True:
            c0 = server_cpu_ns(pid)
            sock.sendall(refresh)
            data = b""
            while resp_end(data, 0) is None:
                data += sock.recv(1 << 16)
            costs.append((server_cpu_ns(pid) - c0) / 1000)
            if data.startswith(b"-"):
                raise RuntimeError(data.decode())
            if data.startswith(b"$"):  # complete: the marker's text
                return len(costs), statistics.median(costs), max(costs)
    finally:
        sock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--per-user", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--uncached-calls", type=int, default=15)
    parser.add_argument("--max-entries", type=int, default=100)
    parser.add_argument("--bucket-changes", type=int, default=10)
    parser.add_argument("--cached-after", type=int, default=20)
    parser.add_argument("--oldest-all", action="store_true")
    parser.add_argument("--no-steady", action="store_true", help="only the bucket changes")
    parser.add_argument("--no-full", action="store_true", help="no untrimmed window")
    parser.add_argument("--aggregate", choices=["sum", "max", "min"], default="sum")
    parser.add_argument("--slowlog-us", type=int, default=1000)
    parser.add_argument(
        "--full-unlimited", action="store_true",
        help="the untrimmed window with max_entries=None (the union is its aggregate)",
    )  # fmt: skip
    args = parser.parse_args(argv)

    server = _redis_server.RedisServer(dir_prefix="bench-rolling-")
    server.start()
    try:
        pid = server.pid
        assert pid is not None
        client = redis_leaderboard.Client(host=server.host, port=server.port)
        clocks = {"recent": [NOW], "full": [NOW]}
        recent = RollingLeaderboard(
            client, key="bench:7d", window=timedelta(days=7), bucket=timedelta(hours=1),
            max_entries=args.max_entries, clock=lambda: clocks["recent"][0],
            aggregate=args.aggregate,
        )  # fmt: skip
        full = RollingLeaderboard(
            client, key="bench:7d-full", window=timedelta(days=7), bucket=timedelta(hours=1),
            max_entries=None if args.full_unlimited else args.users,
            clock=lambda: clocks["full"][0],
            aggregate=args.aggregate,
        )  # fmt: skip
        plain = redis_leaderboard.RedisLeaderboard(client, key="bench:plain", max_entries=10**9)
        t0 = time.perf_counter()
        entries = fill(
            server, recent, "" if args.no_steady else plain.key, args.users, args.per_user,
            args.oldest_all,
        )  # fmt: skip
        # The same buckets for the untrimmed window (max_entries = every user).
        import redis

        r = redis.Redis(host=server.host, port=server.port)
        windows = [recent] if args.no_full else [recent, full]
        for b in range(recent.bucket_at() - 167, recent.bucket_at() + 1):
            if r.exists(recent._window.bucket_key(b)) and not args.no_full:
                r.copy(recent._window.bucket_key(b), full._window.bucket_key(b))
        print(
            f"filled {args.users:,} users, {entries:,} bucket entries in 168 buckets "
            f"({time.perf_counter() - t0:.1f} s)",
            file=sys.stderr,
        )
        for board in windows:
            t0 = time.perf_counter()
            board.get_top(10)  # builds the union, loads the scripts
            print(f"{board.key}: first build {time.perf_counter() - t0:.2f} s", file=sys.stderr)
            # Built afresh with its newest bucket already written (the fill): no window ahead
            # (its job reads only buckets nobody writes). The next bucket's first read moves
            # the window on in steps, then the window ahead is built from empty (job 'E').
            clocks["recent" if board.key == "bench:7d" else "full"][0] += board.bucket
            t0 = time.perf_counter()
            board.get_top(10)
            print(f"{board.key}: next bucket, in steps {time.perf_counter() - t0:.2f} s",
                  file=sys.stderr)  # fmt: skip
            t0 = time.perf_counter()
            n, wall, cpu = drive_ahead(r, board, pid)
            print(
                f"{board.key}: window ahead built from empty (job 'E') in {n:,} calls, "
                f"{time.perf_counter() - t0:.1f} s; a call p50 {percentile(wall or [0], 50):,.0f}"
                f" µs, p99 {percentile(wall or [0], 99):,.0f} µs, server CPU p50 "
                f"{percentile(cpu or [0], 50):,.0f} µs",
                file=sys.stderr,
            )
        if not args.no_steady:
            plain.get_top(10)
        size = {b.key: b.get_size() for b in windows}

        def nothing() -> None:
            pass

        def forget(board: RollingLeaderboard) -> Callable[[], Any]:
            return lambda: r.delete(f"{board.key}:window")

        def with_ahead(ready: bool) -> Callable[[], Any]:
            """The marker with (ready) or without the window ahead: a write by a user adding 0
            leaves it exact either way, so the two alternate on the same data."""

            def set_marker() -> None:
                if ready and ahead_state(r, recent) == "":  # built afresh by an uncached read
                    clocks["recent"][0] += recent.bucket  # the next change takes steps, then
                    recent.get_top(10)  # the window ahead is built from empty
                drive_ahead(r, recent, pid)  # a job left by an uncached read: finished first
                words = r.get(f"{recent.key}:window").split()[:2]
                r.set(f"{recent.key}:window", b" ".join(words + [b"r"] * ready), keepttl=True)

            return set_marker

        inside = recent.get_top(1)[0]["user_id"]
        outside = "user-099999" if args.users == 100_000 else f"user-{args.users - 1:06d}"
        rows: dict[str, list[tuple[float, float]]] = {}
        every = f"union of all {size.get(full.key, 0):,}"
        n = args.uncached_calls
        variants: list[tuple[str, Callable[[], Any], Callable[[], Any], int]] = [
            ("get_top(10), cached", lambda: recent.get_top(10), nothing, 100),
            ("get_top(10), uncached", lambda: recent.get_top(10), forget(recent), n),
            (f"get_top(10), cached, {every}", lambda: full.get_top(10), nothing, 100),
            (f"get_top(10), uncached, {every}", lambda: full.get_top(10), forget(full), n),
            (f"get_top(10), plain board of {args.users:,}", lambda: plain.get_top(10),
             nothing, 100),
            ("get_around_user(id, 10), cached", lambda: recent.get_around_user(inside, 10),
             nothing, 100),
            ("submit(incr), user on the window's board",
             lambda: recent.submit(inside, 0, mode="incr"), with_ahead(True), 100),
            ("submit(incr), user on the window's board, no window ahead",
             lambda: recent.submit(inside, 0, mode="incr"), with_ahead(False), 100),
            ("submit(incr), user outside its max_entries",
             lambda: recent.submit(outside, 0, mode="incr"), with_ahead(True), 100),
            ("submit(incr), user outside its max_entries, no window ahead",
             lambda: recent.submit(outside, 0, mode="incr"), with_ahead(False), 100),
        ]  # fmt: skip
        if args.no_full:
            variants = [v for v in variants if "union of all" not in v[0]]
        for _ in range(0 if args.no_steady else args.rounds):
            for label, call, before, calls in variants:
                seconds = args.seconds if calls >= 100 else 0
                rows.setdefault(label, []).append(sample(call, pid, calls, seconds, before))
        print(
            f"\nRolling window, 7 days by 1-hour buckets, {args.users:,} users "
            f"({entries:,} bucket entries), max_entries={args.max_entries}; medians of "
            f"{args.rounds} rounds\n"
        )
        if rows:
            print("| call | p50 µs | server CPU µs |")
            print("|---|---:|---:|")
        for label, samples in rows.items():
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            print(f"| {label} | {wall:,.0f} | {cpu:,.0f} |")
        if not args.no_steady:
            with_ahead(True)()  # the window ahead left ready
        for board in windows:  # a window built afresh by an uncached read: moved on once
            if ahead_state(r, board) == "":
                clocks["recent" if board.key == "bench:7d" else "full"][0] += board.bucket
                board.get_top(10)
            drive_ahead(r, board, pid)
        changes = bucket_changes(
            r, windows, clocks, args.bucket_changes, args.cached_after, pid, args.slowlog_us
        )
        steps = {}
        for board in windows:  # the next bucket changes, driven step by step
            clock = clocks["recent" if board.key == "bench:7d" else "full"]
            rows = []
            for _ in range(args.bucket_changes):
                clock[0] += board.bucket
                rows.append(step_costs(server, pid, board))
            label = f"{board.key} (max_entries={board._window.max_entries or 'None'})"
            steps[label] = [
                statistics.median(s[0] for s in rows), statistics.median(s[1] for s in rows),
                max(s[2] for s in rows),
            ]  # fmt: skip
        print(
            f"\nBucket changes: {args.bucket_changes} per window, the first get_top(10) after "
            "each, then get_top(10)s until the window ahead's job is done, then "
            f"{args.cached_after} cached; longest command in SLOWLOG (>= {args.slowlog_us} µs) "
            "during the first read and the job's reads\n"
        )
        print(
            "| window | first read p50 µs | first read p99 µs | first read server CPU p50 µs "
            "| reads during the job p50 µs | p99 µs | reads the job took (median) "
            "| cached p50 µs | cached p99 µs "
            "| longest script µs (max) | round trips of the first read (median) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for label, row in changes.items():
            print(f"| {label} | " + " | ".join(f"{v:,.0f}" for v in row) + " |")
        print(
            f"\nThe next {args.bucket_changes} bucket changes without the window ahead (the "
            "fallback), the refresh sent alone step by step: server CPU of a step (the "
            "redis-server main thread's)\n"
        )
        print("| window | steps (median) | CPU µs a step (median) | CPU µs a step (max) |")
        print("|---|---:|---:|---:|")
        for label, row in steps.items():
            print(f"| {label} | " + " | ".join(f"{v:,.0f}" for v in row) + " |")
        r.close()
        client.close()
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
