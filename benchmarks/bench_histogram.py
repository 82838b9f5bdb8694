"""get_histogram's server time at 1,000 and 1,000,000 entries, against its floor.

Starts its own redis-server. For each size, fills a board (scores on 100,000 values), then
calls ``get_histogram(bins)`` ``--calls`` times and reads the server's own time per call from
``INFO commandstats`` (the script's ``evalsha`` usec_per_call: CPU time in the server, which a
busy machine blurs far less than a client's clock). Next to it, the same server time of two
floors run as scripts of their own on the same board: the ``bins + 1`` cumulative ZCOUNTs alone
(what the histogram's script does per edge, without the rest), and an empty script (what any
script call costs). Prints each, and each at the largest size over the smallest.

    python benchmarks/bench_histogram.py [--sizes 1000,1000000] [--bins 100] [--calls 2000]
"""

from __future__ import annotations

import argparse
import functools
import random
from typing import Any, Optional

ZCOUNTS = """
local below = 0
for i = 0, tonumber(ARGV[1]) do
  below = below + redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. (i * 100000 / ARGV[1]))
end
return below
"""
EMPTY = "return 1"


def usec_per_call(client: Any, command: str) -> float:
    stats = client.execute_command("INFO", "commandstats")
    text = stats.decode() if isinstance(stats, bytes) else str(stats)
    for line in text.splitlines():
        if line.startswith(f"cmdstat_{command}:"):
            fields = dict(part.split("=") for part in line.split(":", 1)[1].split(","))
            return float(fields["usec_per_call"])
    raise RuntimeError(f"no {command} in commandstats")


def measure(client: Any, calls: int, call: Any, command: str) -> float:
    call()  # loads the script
    client.execute_command("CONFIG", "RESETSTAT")
    for _ in range(calls):
        call()
    return usec_per_call(client, command)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,1000000")
    parser.add_argument("--bins", type=int, default=100)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args(argv)

    import redis_leaderboard
    from redis_leaderboard._redis_server import RedisServer

    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[tuple[int, float, float, float]] = []
    with RedisServer() as server:
        client = redis_leaderboard.Client(host=server.host, port=server.port, socket_timeout=60)
        rng = random.Random(1)
        for size in sizes:
            key = f"bench:hist:{size}"
            board = redis_leaderboard.RedisLeaderboard(client, key, None)
            board.upsert_many((f"user-{i:07d}", rng.randrange(100_000), None) for i in range(size))
            ours = measure(
                client, args.calls, functools.partial(board.get_histogram, args.bins), "evalsha"
            )
            sha_z = client.execute_command("SCRIPT", "LOAD", ZCOUNTS)
            sha_e = client.execute_command("SCRIPT", "LOAD", EMPTY)
            zcounts = measure(
                client,
                args.calls,
                functools.partial(client.execute_command, "EVALSHA", sha_z, 1, key, args.bins),
                "evalsha",
            )
            empty = measure(
                client,
                args.calls,
                functools.partial(client.execute_command, "EVALSHA", sha_e, 1, key),
                "evalsha",
            )
            rows.append((size, ours, zcounts, empty))
            board.clear()
    print(f"get_histogram({args.bins}): server µs per call (INFO commandstats), {args.calls} calls")
    print("| entries | get_histogram | its ZCOUNTs alone | an empty script |")
    print("| ---: | ---: | ---: | ---: |")
    for size, ours, zcounts, empty in rows:
        print(f"| {size:,} | {ours:.1f} | {zcounts:.1f} | {empty:.1f} |")
    if len(rows) > 1:
        (_, o1, z1, _), (_, o2, z2, _) = rows[0], rows[-1]
        print(f"| largest / smallest | {o2 / o1:.2f}x | {z2 / z1:.2f}x | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
