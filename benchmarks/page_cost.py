"""Where a page's server time goes: the server CPU of reading 100 entries with their metadata,
step by step, in a script and as commands, on one board of 1,000 players stored in both layouts
(the guide's hash per player, and the compact layout's one hash, ``f"{key}:meta"``).

    python benchmarks/page_cost.py [--players 1000] [--count 100] [--calls 2000]

Starts its own redis-server (never the machine's 6379), pinned to CPU 1 with this client on
CPU 0. Each line is the server's own main-thread CPU (INFO CPU) per call over ``--calls`` calls
made one after the other (one round trip each, so each line includes a round trip's system
calls, about what the empty script costs): an empty script; a script returning a ``ZRANGE`` of
``--count`` entries; one that adds the ``HMGET`` of their compact values (returned as two
arrays, or merged into one list of entries as window.lua's hydrate does); and the two-step
reads, the guide's (``ZRANGE``, then a pipelined ``HGETALL`` per entry) and the compact
layout's (``ZRANGE``, then one ``HMGET``). It shows what the compact layout can and cannot
save: the number of keys a page reads, not each entry's conversions between Redis replies, Lua
tables and RESP (docs/pages/guides/board.md, the compact layout).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

from bench_sync import RedisServer
from server_cost import compact_value, server_cpu


def per_call(admin: redis.Redis, call: Callable[[], Any], calls: int) -> float:
    for _ in range(50):
        call()
    before = server_cpu(admin)
    for _ in range(calls):
        call()
    return (server_cpu(admin) - before) * 1e6 / calls


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args(argv)
    with RedisServer() as server:  # type: ignore[no-untyped-call]
        if (os.cpu_count() or 1) >= 2:
            os.sched_setaffinity(server.proc.pid, {1})
            os.sched_setaffinity(0, {0})
        r = redis.Redis(port=server.port)
        rng = random.Random(7)
        pipe = r.pipeline(transaction=False)
        for i in range(args.players):
            user = f"user:{i:07d}"
            fields = {"name": f"Player {i}", "country": "NZ"}
            pipe.zadd("b", {user: rng.randrange(args.players)})
            pipe.hset("b:meta", user, compact_value(fields))
            pipe.hset(f"b:user:{user}", mapping=fields)
        pipe.execute()
        last = args.count - 1
        zrange = f"local r = redis.call('ZRANGE', KEYS[1], 0, {last}, 'REV', 'WITHSCORES')"
        ids = "local ids = {} for i = 1, #r, 2 do ids[#ids + 1] = r[i] end"
        scripts = {
            "script: empty": "return 1",
            "script: ZRANGE": f"{zrange} return r",
            "script: ZRANGE, HMGET (two arrays)": (
                f"{zrange} {ids} return {{r, redis.call('HMGET', KEYS[2], unpack(ids))}}"
            ),
            "script: ZRANGE, HMGET (entries)": (
                f"{zrange} {ids} local v = redis.call('HMGET', KEYS[2], unpack(ids)) "
                "local out = {} for j = 1, #v do out[3 * j - 2] = ids[j] "
                "out[3 * j - 1] = r[2 * j] out[3 * j] = v[j] end return {0, 0, out}"
            ),
        }
        print(f"server CPU per call, µs ({args.count} of {args.players} entries; one round trip "
              "a call unless said)")  # fmt: skip
        for name, body in scripts.items():
            sha = r.script_load(body)
            cost = per_call(r, lambda s=sha: r.evalsha(s, 2, "b", "b:meta"), args.calls)
            print(f"{name:<40} {cost:8.1f}")

        def guide() -> None:
            top = r.zrange("b", 0, last, desc=True, withscores=True)
            steps = r.pipeline(transaction=False)
            for user, _ in top:
                steps.hgetall(b"b:user:" + user)
            steps.execute()

        def compact() -> None:
            top = r.zrange("b", 0, last, desc=True, withscores=True)
            r.hmget("b:meta", [user for user, _ in top])

        print(f"{'the guide: ZRANGE, then HGETALL each':<40} {per_call(r, guide, args.calls):8.1f}"
              "  (2 round trips)")  # fmt: skip
        print(f"{'compact: ZRANGE, then one HMGET':<40} {per_call(r, compact, args.calls):8.1f}"
              "  (2 round trips)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
