"""Client instructions per big read (callgrind), ours against the exact floor: a loaded machine
does not blur them as it blurs time.

    python benchmarks/read_instructions.py [--python PYTHON] [--calls 500]

Starts its own redis-server with a board of 1,000 users (two metadata fields each, as
``run.py``), then measures ``get_top(100)`` and ``list_all`` (a board of 100 users) of
``RedisLeaderboard`` (sync), and the exact floor: the same request's bytes on a raw socket, the
reply read by hiredis-py (raw nested lists of bytes, as ``run.py``'s RawFloor). Each figure is the
difference between a run of ``--calls`` calls and a run of none, divided by ``--calls``, so
start-up cancels out. ``--python`` measures another build (a venv's interpreter). Needs valgrind
and hiredis-py (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CASES = ("get_top(100)", "list_all")


def worker(case: str, side: str, calls: int) -> None:
    import socket

    import hiredis

    import redis_leaderboard as rl
    from redis_leaderboard import _core
    from redis_leaderboard._redis_server import RedisServer
    from run import MAX_ENTRIES, board_entries

    server = RedisServer()
    server.start()
    try:
        client = rl.Client(host=server.host, port=server.port)
        key, users = ("lb", 1000) if case == "get_top(100)" else ("lb:small", 100)
        board = rl.RedisLeaderboard(client, key=key, max_entries=MAX_ENTRIES)
        board.upsert_many(board_entries(users))
        ours = (lambda: board.get_top(100)) if case == "get_top(100)" else board.list_all
        ours()  # the script is loaded: the floor's EVALSHA finds it
        call = ours
        if side == "floor":
            core = _core.Board(key, MAX_ENTRIES)
            request = (core.get_top(100) if case == "get_top(100)" else core.list_all()).request()
            sock = socket.create_connection((server.host, server.port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader = hiredis.Reader()

            def floor() -> object:
                sock.sendall(request)
                while True:
                    reply = reader.gets()
                    if reply is not False:
                        return reply
                    reader.feed(sock.recv(1 << 16))

            call = floor
        for _ in range(3):
            call()
        for _ in range(calls):
            call()
    finally:
        server.cleanup()


def instructions(python: str, case: str, side: str, calls: int) -> int:
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            python,
            str(Path(__file__).resolve()),
            "--worker",
            case,
            side,
            str(calls),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    found = re.search(r"Collected : (\d+)", out)
    if found is None:
        raise RuntimeError(f"no callgrind total in:\n{out}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the build to measure")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        worker(opts.worker[0], opts.worker[1], int(opts.worker[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 1
    print("| read | ours (instructions/call) | exact floor | ours / floor |")
    print("| --- | ---: | ---: | ---: |")
    for case in CASES:
        per_call = {}
        for side in ("ours", "floor"):
            many = instructions(opts.python, case, side, opts.calls)
            none = instructions(opts.python, case, side, 0)
            per_call[side] = (many - none) / opts.calls
        ratio = per_call["ours"] / per_call["floor"]
        print(f"| {case} | {per_call['ours']:,.0f} | {per_call['floor']:,.0f} | {ratio:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
