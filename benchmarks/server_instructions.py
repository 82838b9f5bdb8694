"""Server instructions per call (callgrind on redis-server), by how the calls reach it: one
connection pipelining D requests at a time, or C connections with one request each. A loaded
machine does not blur instruction counts as it blurs calls a second.

    python benchmarks/server_instructions.py [--calls 400] [--layouts 1x1,1x10,1x100,10x1,100x1]
                                             [--method get_top(100)] [--server redis-server]

Starts its own redis-server under ``valgrind --tool=callgrind`` (a free port, a temporary
directory; never the machine's 6379) with a board of 1,000 users (two metadata fields each, as
``run.py``), loads our scripts with one call, then for each layout ``CxD`` sends ``--calls``
copies of the very request ``redis_leaderboard`` sends for ``--method`` (captured from
``_core.Board(...).<method>.request()``) from C threads, each on its own connection, each
writing D requests and reading their D replies before the next D. The server's counters are
zeroed before a layout and dumped after it (``callgrind_control``), so each figure is that
layout's instructions divided by its calls: the server's work per call, whatever the client.

It answers whether a client's connection layout changes the server's work: the question of
``get_top(100)`` from 100 asyncio tasks, where ours pipelines every call on one connection and
redis.asyncio spreads them over 100 (``docs/pages/benchmarks.md``).

A write (``--method "submit (guards)"`` and the others of ``WRITES``) cannot be one request sent
again (a resend is a duplicate): its ``--calls`` calls go through the library, one connection,
each its own (a new submission id, another user), on a board with the guards it names; the
figure is the server's work per call, ``--layouts`` ignored. ``COMPETITION_WRITES`` measure a
tournament's and a league's ``submit`` the same way (``--method tournament.submit``), with and
without tie-break columns, a team board's (``team.submit``; ``"team.submit (guards)"`` with
a submission id, a rate limit, events and a score range; ``team.move``, a member to another
team), and a rolling window's
(``rolling.submit``; ``rolling.submit (guards)``: a submission id, a rate limit, events and a
score range, as ``submit (guards)``).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

KEY = "bench:server"
METHODS = {
    "get_top(100)": lambda board: board.get_top(100),
    "get_top(10)": lambda board: board.get_top(10),
    "get_rank": lambda board: board.get_rank("user:00000500"),
    "get_user_entry": lambda board: board.get_user_entry("user:00000500"),
}
# Writes, through the library: (the board's options, the i-th call).
GUARDS = {"rate_limit": (1_000_000, 1.0), "events": True, "score_range": (0, 1e9)}
WRITES: dict[str, tuple[dict[str, Any], Any]] = {
    "submit": ({}, lambda board, i: board.submit(f"user:{i % 1500:08d}", i)),
    "submit (guards)": (
        GUARDS,
        lambda board, i: board.submit(f"user:{i % 1500:08d}", i, submission_id=f"s{i}"),
    ),
    "upsert_user (guards)": (
        GUARDS,
        lambda board, i: board.upsert_user(f"user:{i % 1500:08d}", i, {"level": "3"}),
    ),
    "delete_user (events)": ({"events": True}, lambda board, i: board.delete_user(f"user:{i:08d}")),
}


def _rolling_board(**guards: Any) -> Any:
    """A rolling window (hour buckets, a day) of 1,000 users written in its current bucket."""

    def make(rl: Any, client: Any) -> Any:
        from datetime import timedelta

        from run import board_entries

        board = rl.RollingLeaderboard(
            client, "bench:rolling", window=timedelta(days=1), bucket=timedelta(hours=1), **guards
        )
        for user, score, metadata in board_entries(1000):
            board.submit(user, score, metadata)
        return board

    return make


def _team_board(rl: Any, client: Any, **options: Any) -> Any:
    """A team board of 1,000 members (two metadata fields each) in 20 teams."""
    from run import board_entries

    board = rl.TeamLeaderboard(client, "bench:teams", **options)
    for n, (user, score, metadata) in enumerate(board_entries(1000)):
        board.submit(user, score, metadata, team=f"team:{n % 20}")
    return board


# Writes of the other board types, through the library: (the object on a client, the i-th call).
# Each call is another player (a tournament's best score; a league's first write places them; a
# team board's member of a team of 50).
COMPETITION_WRITES: dict[str, tuple[Any, Any]] = {
    "tournament.submit": (
        lambda rl, client: rl.Tournament(client, "bench:cup", schedule="day"),
        lambda cup, i: cup.submit(f"user:{i % 1500:08d}", i),
    ),
    "tournament.submit (tiebreak)": (
        lambda rl, client: rl.Tournament(
            client, "bench:cup:tb", schedule="day", tiebreak=(("seconds", "asc"),)
        ),
        lambda cup, i: cup.submit(f"user:{i % 1500:08d}", i % 7, tiebreak={"seconds": i}),
    ),
    "tournament.submit (guards)": (
        lambda rl, client: rl.Tournament(
            client, "bench:cup:guards", schedule="day", rate_limit=(1_000_000, 1.0), events=True
        ),
        lambda cup, i: cup.submit(f"user:{i % 1500:08d}", i),
    ),
    "league.submit": (
        lambda rl, client: rl.League(client, "bench:league"),
        lambda league, i: league.submit(f"user:{i % 1500:08d}", i),
    ),
    "league.submit (tiebreak)": (
        lambda rl, client: rl.League(client, "bench:league:tb", tiebreak=(("seconds", "asc"),)),
        lambda league, i: league.submit(f"user:{i % 1500:08d}", i % 7, tiebreak={"seconds": i}),
    ),
    "league.submit (rate_limit)": (
        lambda rl, client: rl.League(client, "bench:league:rate", rate_limit=(1_000_000, 1.0)),
        lambda league, i: league.submit(f"user:{i % 1500:08d}", i),
    ),
    "rolling.submit": (
        _rolling_board(),
        lambda board, i: board.submit(f"user:{i % 1500:08d}", i),
    ),
    "rolling.submit (guards)": (
        _rolling_board(**GUARDS),
        lambda board, i: board.submit(f"user:{i % 1500:08d}", i, submission_id=f"s{i}"),
    ),
    "team.submit": (
        _team_board,
        lambda board, i: board.submit(f"user:{i % 1500:08d}", i, team=f"team:{i % 20}"),
    ),
    "team.submit (id)": (
        _team_board,
        lambda board, i: board.submit(
            f"user:{i % 1500:08d}", i, team=f"team:{i % 20}", submission_id=f"s{i}"
        ),
    ),
    "team.move": (  # a member of the 1,000 to the next team
        _team_board,
        lambda board, i: board.move(f"user:{i % 1000:08d}", f"team:{(i + 1) % 20}"),
    ),
    "team.submit (guards)": (  # an id, a rate limit, events and a score range, as GUARDS
        lambda rl, client: _team_board(rl, client, **GUARDS),
        lambda board, i: board.submit(
            f"user:{i % 1500:08d}", i, team=f"team:{i % 20}", submission_id=f"s{i}"
        ),
    ),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dumped_instructions(folder: str) -> int:
    """The Ir total of the newest callgrind dump in `folder`."""
    total = 0
    for path in glob.glob(os.path.join(folder, "callgrind.out.*")):
        with open(path) as dump:
            for line in dump:
                if line.startswith(("summary:", "totals:")):
                    total = max(total, int(line.split()[1]))
    return total


def dump(folder: str, pid: int) -> int:
    """The server's instructions since its counters were last zeroed (a callgrind dump)."""
    for path in glob.glob(os.path.join(folder, "callgrind.out.*")):
        os.unlink(path)
    subprocess.run(["callgrind_control", "-d", str(pid)], capture_output=True)
    for _ in range(50):
        if glob.glob(os.path.join(folder, "callgrind.out.*")):
            break
        time.sleep(0.1)
    time.sleep(0.3)  # the dump is written whole
    return dumped_instructions(folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--layouts", default="1x1,1x10,1x100,10x1,100x1")
    parser.add_argument(
        "--method",
        default="get_top(100)",
        choices=sorted([*METHODS, *WRITES, *COMPETITION_WRITES]),
    )
    parser.add_argument("--server", default="redis-server")
    args = parser.parse_args(argv)
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        parser.error("needs valgrind (callgrind_control)")
    layouts = [tuple(int(n) for n in layout.split("x")) for layout in args.layouts.split(",")]

    import redis

    import redis_leaderboard as rl
    from redis_leaderboard import _core
    from run import MAX_ENTRIES, board_entries, parse_request

    folder = tempfile.mkdtemp(prefix="rlb-server-instructions-")
    port = free_port()
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/callgrind.out.%p",
         shutil.which(args.server) or args.server, "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", folder],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        probe = redis.Redis(port=port)
        for _ in range(600):
            try:
                probe.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        version = probe.info("server")["redis_version"]
        if args.method in WRITES or args.method in COMPETITION_WRITES:
            if args.method in WRITES:
                options, call = WRITES[args.method]
                board = rl.RedisLeaderboard(
                    rl.Client(port=port), key=KEY, max_entries=MAX_ENTRIES, **options
                )
                board.upsert_many(board_entries(1000))
            else:
                make, call = COMPETITION_WRITES[args.method]
                board = make(rl, rl.Client(port=port))
            call(board, 10**6)  # loads the script
            subprocess.run(["callgrind_control", "-z", str(server.pid)], capture_output=True)
            for i in range(args.calls):
                call(board, i)
            per_call = dump(folder, server.pid) / args.calls
            print(
                f"server instructions per {args.method} call: {args.server} {version} under "
                f"callgrind, {args.calls} calls through the library: {per_call:,.0f}"
            )
            return 0
        board = rl.RedisLeaderboard(rl.Client(port=port), key=KEY, max_entries=MAX_ENTRIES)
        board.upsert_many(board_entries(1000))
        METHODS[args.method](board)  # loads the script: the raw EVALSHAs find it
        request = parse_request(
            METHODS[args.method](_core.Board(KEY, MAX_ENTRIES)).request()  # type: ignore[no-untyped-call]
        )
        if len(request) != 1:
            parser.error(f"{args.method} sends {len(request)} commands; one is measured here")
        command = request[0]
        print(
            f"server instructions per {args.method} call: {args.server} {version} under "
            f"callgrind, {args.calls} calls per layout (C connections x D requests pipelined)\n"
        )
        print("| connections x pipelined | instructions per call |\n|---|---:|")
        for connections, depth in layouts:
            clients = [redis.Redis(port=port) for _ in range(connections)]
            for client in clients:
                client.ping()
            subprocess.run(["callgrind_control", "-z", str(server.pid)], capture_output=True)

            def work(client: Any, calls: int, depth: int = depth) -> None:
                done = 0
                while done < calls:
                    pipe = client.pipeline(transaction=False)
                    for _ in range(min(depth, calls - done)):
                        pipe.execute_command(*command)
                    done += len(pipe.execute())

            per = args.calls // connections
            threads = [threading.Thread(target=work, args=(c, per)) for c in clients]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            per_call = dump(folder, server.pid) / (per * connections)
            print(f"| {connections} x {depth} | {per_call:,.0f} |", flush=True)
            for client in clients:
                client.close()
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
