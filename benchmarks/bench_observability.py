"""What ``redis_leaderboard.observability`` costs a call, as client instructions (callgrind),
which a busy machine does not blur: off (never imported), on (metrics) and with spans.

    python benchmarks/bench_observability.py [--mode off|on|spans] [--calls 2000] [--repeat K]
                                             [--apis sync,asyncio] [--methods get_rank,...]

Starts its own redis-server with a board of ``--users`` users (two metadata fields each), then
measures ``get_rank`` and ``upsert_user`` of ``RedisLeaderboard``, sync and asyncio (one task:
the calls awaited one after another in one ``asyncio.run``), in a child process under
callgrind. The server is another process: only the client's instructions are counted (every
thread of it). Each figure is the difference between a run of 2 x ``--calls`` calls and one of
``--calls`` calls (both after the same warm-up calls), divided by ``--calls``, so start-up
cancels out. The children run with ``PYTHONHASHSEED=0``: against one server a figure repeats
to within a few instructions a call; from one run of this script to the next (a new server) it
may move by up to about 0.2% (where the allocators' free lists happen to be). ``--repeat``
gives the median and the range.

Modes: ``off``, the module never imported (what every build before it has); ``on``,
``instrument(MeterProvider(metric_readers=[InMemoryMetricReader()]), spans=False)``; ``spans``,
also a ``TracerProvider`` whose one span processor drops every span. ``on`` and ``spans`` need
a build with ``redis_leaderboard.observability`` and the OpenTelemetry SDK (the ``otel``
extra); the child checks that every call was recorded (and, with spans, made a span) and that
``off`` never imported the module.

The interpreter running this script is the build measured: run it with another build's venv
python (``off`` only, before the module existed) to compare. Needs valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Callable, Optional

MODES = ("off", "on", "spans")
APIS = ("sync", "asyncio")
METHODS = ("get_rank", "upsert_user")
KEY = "lb"
USER = "user:000000000500"  # in the middle of the board
META = {"name": "Player", "country": "NL"}
# upsert_user alternates two scores: every call moves the user (a real write), and the pair
# of calls repeats exactly.
SCORES = (500.0, 501.0)
WARMUP = 50


def user_id(i: int) -> str:
    return f"user:{i:012d}"  # run.py's shape


def unavailable(mode: str) -> Optional[str]:
    """Why this interpreter's build cannot measure ``mode`` (None: it can)."""
    if mode == "off":
        return None
    if importlib.util.find_spec("redis_leaderboard.observability") is None:
        return (
            f"--mode {mode}: this build ({sys.executable}) has no redis_leaderboard.observability "
            "(it predates it); only --mode off can be measured with it"
        )
    if importlib.util.find_spec("opentelemetry") is None or (
        importlib.util.find_spec("opentelemetry.sdk") is None
    ):
        return f'--mode {mode} needs the OpenTelemetry SDK: pip install ".[otel]"'
    return None


def switch_on(mode: str) -> Callable[[], dict[str, Any]]:
    """Instruments the process as ``mode`` says; returns what reads back the calls recorded."""
    if mode == "off":
        return lambda: {"observability_imported": "redis_leaderboard.observability" in sys.modules}
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

    from redis_leaderboard import observability

    reader = InMemoryMetricReader()
    ended = [0]

    class Drop(SpanProcessor):
        """Ends every span into nothing (but counts them)."""

        def on_end(self, span: ReadableSpan) -> None:
            ended[0] += 1

    tracer_provider = None
    if mode == "spans":
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(Drop())
    observability.instrument(
        MeterProvider(metric_readers=[reader]),
        tracer_provider,
        spans=mode == "spans",
    )

    def recorded() -> dict[str, Any]:
        calls = 0
        data = reader.get_metrics_data()
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == "db.client.operation.duration":
                        calls += sum(point.count for point in metric.data.data_points)
        return {"recorded": calls, "spans": ended[0]}

    return recorded


def worker(api: str, method: str, mode: str, host: str, port: int, calls: int) -> None:
    recorded = switch_on(mode)
    import redis_leaderboard
    import redis_leaderboard.asyncio

    arguments: list[tuple[Any, ...]] = (
        [(USER, score, META) for score in SCORES] if method == "upsert_user" else [(USER,)] * 2
    )
    total = WARMUP + calls
    if api == "sync":
        board = redis_leaderboard.RedisLeaderboard(
            redis_leaderboard.Client(host=host, port=port), key=KEY
        )
        call = getattr(board, method)
        for i in range(total):
            call(*arguments[i & 1])
    else:

        async def main() -> None:
            async with redis_leaderboard.asyncio.Client(host=host, port=port) as client:
                call = getattr(redis_leaderboard.asyncio.RedisLeaderboard(client, key=KEY), method)
                for i in range(total):
                    await call(*arguments[i & 1])

        asyncio.run(main())
    print(json.dumps(recorded()))


def instructions(api: str, method: str, mode: str, host: str, port: int, calls: int) -> int:
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    argv += [__file__, "--worker", api, method, mode, host, str(port), str(calls)]
    done = subprocess.run(
        argv, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}
    )
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    if done.returncode or not found:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    expected: dict[str, Any] = (
        {"observability_imported": False}
        if mode == "off"
        else {"recorded": WARMUP + calls, "spans": WARMUP + calls if mode == "spans" else 0}
    )
    if seen != expected:
        raise SystemExit(f"{api} {method} --mode {mode}: the child saw {seen}, not {expected}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=MODES, default="off")
    parser.add_argument("--calls", type=int, default=2000, help="N: runs of N and 2N calls")
    parser.add_argument("--users", type=int, default=1000, help="the board's size")
    parser.add_argument("--apis", default=",".join(APIS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="measure each figure this many times: the median, and the range",
    )
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        api, method, mode, host, port, calls = opts.worker
        worker(api, method, mode, host, int(port), int(calls))
        return 0
    why = unavailable(opts.mode)
    if why is not None:
        print(why, file=sys.stderr)
        return 2
    if shutil.which("valgrind") is None:
        print("needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 1
    apis = [a for a in opts.apis.split(",") if a]
    methods = [m for m in opts.methods.split(",") if m]
    for name, given, known in (("api", apis, APIS), ("method", methods, METHODS)):
        for value in given:
            if value not in known:
                parser.error(f"unknown {name} {value!r}: one of {', '.join(known)}")
    import redis_leaderboard
    from redis_leaderboard._redis_server import RedisServer

    rows = []
    with RedisServer() as server:
        loader = redis_leaderboard.Client(host=server.host, port=server.port)
        redis_leaderboard.RedisLeaderboard(loader, key=KEY).upsert_many(
            [
                (user_id(i), float(i), {"name": f"Player {i}", "country": "NL"})
                for i in range(opts.users)
            ]
        )
        loader.close()
        for api in apis:
            for method in methods:
                figures = []
                for _ in range(opts.repeat):
                    one = instructions(api, method, opts.mode, server.host, server.port, opts.calls)
                    two = instructions(
                        api, method, opts.mode, server.host, server.port, 2 * opts.calls
                    )
                    figures.append((two - one) / opts.calls)
                figures.sort()
                row = f"| {api} | {method} | {opts.mode} | {figures[len(figures) // 2]:,.0f} |"
                if opts.repeat > 1:
                    row += f" {figures[0]:,.0f} to {figures[-1]:,.0f} |"
                rows.append(row)
                print(rows[-1], file=sys.stderr, flush=True)
    if opts.repeat > 1:
        print(f"| api | method | mode | instructions/call (median of {opts.repeat}) | range |")
        print("| --- | --- | --- | ---: | ---: |")
    else:
        print("| api | method | mode | instructions/call |")
        print("| --- | --- | --- | ---: |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
