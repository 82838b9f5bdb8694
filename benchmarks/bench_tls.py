"""TLS vs plaintext (and a unix socket), ours vs redis-py over TLS, and plaintext of another
build vs this one: what TLS costs, and that it costs plaintext nothing.

Starts its own redis-server with a TLS port (a throwaway self-signed certificate for 127.0.0.1
made with the ``openssl`` command) besides its plaintext port and unix socket. Every
measurement runs in a child process (``--worker``), variants alternating round after round;
the report gives medians over rounds, and ratios as medians of per-round ratios.

- sync: p50 (µs) and calls/s of ``get_rank`` and ``upsert_user`` one call after another on a
  board of ``--board-size`` users; ours over plaintext TCP, a unix socket and TLS, and the
  guide's algorithm on redis-py (hiredis parser) over TLS and plaintext;
- asyncio: ``upsert_user`` calls/s from 1,000 tasks; ours over plaintext and TLS, the guide's
  algorithm on redis.asyncio over TLS.

``--base-pythonpath DIR`` adds this package's plaintext and unix rows from the build importable
from DIR (``pip install --target DIR`` of another commit), for a before/after comparison.

    python benchmarks/bench_tls.py [--rounds 5] [--seconds 1] [--base-pythonpath DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

META = {"name": "Player", "description": "Solves production incidents before breakfast."}
SYNC_VARIANTS = ["ours tcp", "ours unix", "ours tls", "guide tls", "guide tcp"]
ASYNC_VARIANTS = ["ours tcp", "ours tls", "guide tls"]
TASKS = 1000


def make_certificate(directory: str) -> tuple[str, str]:
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


# --- the worker: one variant, in a child process -------------------------------------------------


def sync_worker(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(7)
    ids = [f"user-{i:06d}" for i in range(args.board_size)]
    key = f"bench:tls:{os.getpid()}"
    ours, transport = args.variant.split()
    if ours == "ours":
        import redis_leaderboard

        options: dict[str, Any] = {"host": "127.0.0.1", "port": args.port}
        if transport == "unix":
            options = {"unix_socket_path": args.unix}
        elif transport == "tls":
            options.update(port=args.tls_port, ssl=True, ssl_ca_certs=args.ca)
        client: Any = redis_leaderboard.Client(**options)
        board: Any = redis_leaderboard.RedisLeaderboard(client, key=key, max_entries=len(ids))
        board.upsert_many((user, i, META) for i, user in enumerate(ids))
    else:
        import redis

        from guide_leaderboard import GuideLeaderboard

        tls = transport == "tls"
        client = redis.Redis(
            host="127.0.0.1", port=args.tls_port if tls else args.port, ssl=tls,
            ssl_ca_certs=args.ca if tls else None, decode_responses=True,
        )  # fmt: skip
        board = GuideLeaderboard(client, key=key, max_entries=len(ids))
        with client.pipeline(transaction=False) as pipe:
            for i, user in enumerate(ids):
                pipe.zadd(key, {user: i})
                pipe.hset(f"{key}:user:{user}", mapping=META)
            pipe.execute()
    calls: dict[str, Callable[[], Any]] = {
        "get_rank": lambda: board.get_rank(rng.choice(ids)),
        "upsert_user": lambda: board.upsert_user(rng.choice(ids), rng.randrange(10**6), META),
    }
    out: dict[str, Any] = {}
    for method, call in calls.items():
        for _ in range(200):
            call()
        samples: list[int] = []
        clock = time.perf_counter_ns
        start = now = clock()
        deadline = start + int(args.seconds * 1e9)
        while now < deadline:
            call()
            after = clock()
            samples.append(after - now)
            now = after
        out[method] = {
            "p50_us": statistics.median(samples) / 1000,
            "calls_per_s": len(samples) / ((now - start) / 1e9),
        }
    board.clear() if ours == "ours" else client.delete(key)
    client.close()
    return out


async def async_worker(args: argparse.Namespace) -> dict[str, Any]:
    ours, transport = args.variant.split()
    key = f"bench:tls:{os.getpid()}"
    rng = random.Random(7)
    pairs = [
        (f"user-{rng.randrange(10_000):05d}", float(rng.randrange(10**6))) for _ in range(4096)
    ]
    if ours == "ours":
        from redis_leaderboard import asyncio as rl_asyncio

        options: dict[str, Any] = {"host": "127.0.0.1", "port": args.port}
        if transport == "tls":
            options.update(port=args.tls_port, ssl=True, ssl_ca_certs=args.ca)
        client: Any = rl_asyncio.Client(**options)
        board: Any = rl_asyncio.RedisLeaderboard(client, key=key, max_entries=10_000)
    else:
        import redis.asyncio

        from guide_leaderboard import AsyncGuideLeaderboard

        client = redis.asyncio.Redis(
            host="127.0.0.1", port=args.tls_port, ssl=True, ssl_ca_certs=args.ca,
            decode_responses=True, max_connections=TASKS,
        )  # fmt: skip
        board = AsyncGuideLeaderboard(client, key=key, max_entries=10_000)
    counter = iter(range(10**12))
    clock = time.perf_counter

    async def worker(deadline: float) -> int:
        calls = 0
        while clock() < deadline:
            user, score = pairs[next(counter) & 4095]
            await board.upsert_user(user, score, META)
            calls += 1
        return calls

    # Warm up: every task calls at least once (redis.asyncio opens a connection per task).
    first = [pairs[i & 4095] for i in range(TASKS)]
    await asyncio.gather(*(board.upsert_user(user, score, META) for user, score in first))
    await asyncio.gather(*(worker(clock() + 0.3) for _ in range(TASKS)))
    start = clock()
    counts = await asyncio.gather(*(worker(start + args.seconds) for _ in range(TASKS)))
    rate = sum(counts) / (clock() - start)
    if ours == "ours":
        await board.clear()
        await client.aclose()
    else:
        await client.delete(key)
        await client.aclose()
    return {"upsert_user": {"calls_per_s": rate}}


def worker(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    result = sync_worker(args) if args.mode == "sync" else asyncio.run(async_worker(args))
    print(json.dumps(result))


# --- the parent ----------------------------------------------------------------------------------


def run_worker(a: Any, server: Any, ca: str, mode: str, variant: str, path: Optional[str]) -> Any:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = path
    else:
        env.pop("PYTHONPATH", None)
    command = [
        sys.executable, __file__, "--worker", "--mode", mode, "--variant", variant,
        "--port", str(server.port), "--tls-port", str(server.tls_port),
        "--unix", server.unix_path, "--ca", ca, "--seconds", str(a.seconds),
        "--board-size", str(a.board_size),
    ]  # fmt: skip
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--board-size", type=int, default=1000)
    parser.add_argument("--base-pythonpath")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for name in ("--mode", "--variant", "--unix", "--ca"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    for name in ("--port", "--tls-port"):
        parser.add_argument(name, type=int, help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.worker:
        return worker(a)

    from redis_leaderboard import _redis_server

    directory = tempfile.mkdtemp(prefix="bench-tls-")
    cert, key = make_certificate(directory)
    tls = _redis_server.TlsFiles(cert_file=cert, key_file=key, ca_file=cert)
    runs: list[tuple[str, str, Optional[str]]] = [("sync", v, None) for v in SYNC_VARIANTS] + [
        ("async", v, None) for v in ASYNC_VARIANTS
    ]
    if a.base_pythonpath:
        runs += [("sync", "ours tcp", a.base_pythonpath), ("sync", "ours unix", a.base_pythonpath)]
        runs += [("async", "ours tcp", a.base_pythonpath)]
    rounds: list[dict[tuple[str, str, Optional[str]], Any]] = []
    with _redis_server.RedisServer(unix_socket=True, tls=tls) as server:
        for number in range(a.rounds):
            order = runs if number % 2 == 0 else list(reversed(runs))
            rounds.append({run: run_worker(a, server, cert, *run) for run in order})
            print(f"round {number + 1}/{a.rounds} done", file=sys.stderr)

    def median(run: tuple[str, str, Optional[str]], method: str, field: str) -> float:
        return statistics.median(r[run][method][field] for r in rounds)

    def ratio(run: Any, reference: Any, method: str, field: str) -> float:
        return statistics.median(
            r[run][method][field] / r[reference][method][field] for r in rounds
        )

    label = {None: "this build", a.base_pythonpath: "base build"}
    print(f"\nsync, one call after another, board of {a.board_size} (medians of {a.rounds} rounds)")
    print(
        "| client | transport | build | get_rank p50 µs | upsert_user p50 µs "
        "| upsert_user calls/s | p50 / ours tcp (get_rank; upsert_user) |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    reference = ("sync", "ours tcp", None)
    for run in runs:
        if run[0] != "sync":
            continue
        who, transport = run[1].split()
        print(
            f"| {'redis_leaderboard' if who == 'ours' else 'guide (redis-py)'} | {transport} "
            f"| {label[run[2]]} | {median(run, 'get_rank', 'p50_us'):.1f} "
            f"| {median(run, 'upsert_user', 'p50_us'):.1f} "
            f"| {median(run, 'upsert_user', 'calls_per_s'):,.0f} "
            f"| {ratio(run, reference, 'get_rank', 'p50_us'):.2f}x; "
            f"{ratio(run, reference, 'upsert_user', 'p50_us'):.2f}x |"
        )
    print(f"\nasyncio, upsert_user from {TASKS} tasks (medians of {a.rounds} rounds)")
    print("| client | transport | build | calls/s | / ours tcp |")
    print("| --- | --- | --- | ---: | ---: |")
    reference = ("async", "ours tcp", None)
    for run in runs:
        if run[0] != "async":
            continue
        who, transport = run[1].split()
        print(
            f"| {'redis_leaderboard' if who == 'ours' else 'guide (redis.asyncio)'} | {transport} "
            f"| {label[run[2]]} | {median(run, 'upsert_user', 'calls_per_s'):,.0f} "
            f"| {ratio(run, reference, 'upsert_user', 'calls_per_s'):.2f}x |"
        )


if __name__ == "__main__":
    main()
