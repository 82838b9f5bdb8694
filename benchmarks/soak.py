"""A soak: mixed load on one board for a long time, with a fault every few minutes, checking
every answer and the client process's resources.

Starts its own redis-server (``appendonly yes``, ``appendfsync always``: an acknowledged write
survives a kill) behind a relay in a process of its own, so the client process holds only the
client's own sockets and threads. Then, for ``--minutes``:

- ``--threads`` sync threads sharing one sync ``Client`` and ``--tasks`` asyncio tasks sharing
  one asyncio ``Client`` (on an event loop in a thread of its own) each own a few users of one
  board and call every ``RedisLeaderboard`` method on it at random: the guide's writes,
  ``submit`` (every mode, with a submission id), ``delete_user``, ``hide``/``unhide`` and every
  read (entries, ranks, windows, pages, score ranges, percentiles, histograms, sizes);
- every ``--fault-every`` seconds one fault, in turn: the server killed (SIGKILL) and restarted
  a second later; paused (SIGSTOP) for ``--pause`` seconds; the relay partitioned (it holds
  every connection open and moves no byte, accepting none) for ``--pause`` seconds.

Each worker keeps a plain-Python model of its own users (nobody else writes them) and checks
every reply against it: its own users' scores, metadata, ranks and hidden state in every read
that shows them, and the shape of every window (ranks consecutive, scores in order, no user
twice). A write that raised ``ConnectionError``/``TimeoutError`` may or may not have applied: the
worker reads the user back and accepts the state before or after it, nothing else (a write
applied twice or half shows up here). A call is late if it takes longer than its deadline
(``socket_timeout``, times the attempts ``submit`` may make) plus ``--late-margin``.

Every ``--sample`` seconds the client process's RSS, open fds and threads (and its C heap in use
and Python's allocated blocks, to tell a leak from fragmentation) are written to
``<out>/samples.csv``; ``<out>/summary.json`` has the totals. Exits 1 on any wrong answer, late
call or worker crash (and, with ``--max-rss-growth``, on RSS growing more than that many MiB
between the end of the first fault cycle and the end).

    python benchmarks/soak.py --minutes 60 --think 0.005 --out soak-results
    python benchmarks/soak.py --seconds 20 --fault-every 4   # a short run (the tests' own)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

BOARD = "soak:{board}"
USERS_PER_WORKER = 6

# ---- The relay (a process of its own) ----------------------------------------------------------


def relay_main(listen_port: int, upstream_port: int) -> None:
    """Relays 127.0.0.1:listen_port to 127.0.0.1:upstream_port. SIGUSR1 partitions it (no byte
    moves, no connection is accepted, none is closed); SIGUSR2 heals it."""
    import selectors

    partitioned = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: partitioned.set())
    signal.signal(signal.SIGUSR2, lambda *_: partitioned.clear())
    listener = socket.create_server(("127.0.0.1", listen_port), backlog=512)
    listener.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    peers: dict[socket.socket, socket.socket] = {}

    def close(sock: socket.socket) -> None:
        other = peers.pop(sock, None)
        for s in (sock, other):
            if s is None:
                continue
            peers.pop(s, None)
            try:
                sel.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()

    while True:
        if partitioned.is_set():
            time.sleep(0.01)
            continue
        for key, _ in sel.select(timeout=0.05):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if sock is listener:
                try:
                    client, _ = listener.accept()
                except OSError:
                    continue
                try:
                    upstream = socket.create_connection(("127.0.0.1", upstream_port), timeout=1)
                except OSError:
                    client.close()  # the server is down: the client sees its connection end
                    continue
                for s in (client, upstream):
                    s.setblocking(False)
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    sel.register(s, selectors.EVENT_READ, None)
                peers[client], peers[upstream] = upstream, client
                continue
            try:
                data = sock.recv(1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                close(sock)
                continue
            other = peers.get(sock)
            if other is None:
                close(sock)
                continue
            try:
                other.setblocking(True)
                other.sendall(data)
                other.setblocking(False)
            except OSError:
                close(sock)


# ---- The model and the checks ------------------------------------------------------------------


class Wrong(Exception):
    """A reply the model says cannot be."""


@dataclass
class User:
    score: Optional[float] = None  # None: absent
    meta: dict[str, str] = field(default_factory=dict)
    hidden: bool = False


@dataclass
class Call:
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    check: Callable[[Any], None]
    write: Optional[tuple[str, User, User]] = None  # (user, before, after) of a write
    attempts: int = 1


class Worker:
    """One worker's users, its model of them, the next call and the check of its reply."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.rng = random.Random(seed)
        self.ids = [f"{name}-{i}" for i in range(USERS_PER_WORKER)]
        self.users = {u: User() for u in self.ids}
        self.unresolved: list[tuple[str, User, User]] = []  # writes that may have applied
        self.writes = 0
        self.resolved = {"applied": 0, "not applied": 0}  # unanswered writes, read back

    def _meta(self) -> dict[str, str]:
        self.writes += 1
        return {"n": f"{self.name}:{self.writes}"}

    # -- calls --

    def next_call(self) -> Call:
        if self.unresolved:
            return self._resolve_call()
        rng, u = self.rng, self.rng.choice(self.ids)
        have = self.users[u]
        roll = rng.random()
        if roll < 0.40:
            return self._write_call(u, have)
        pick = rng.randrange(16)
        if pick == 0:
            return Call("get_user_entry", (u,), {}, lambda r: self._check_entry(u, r))
        if pick == 1:
            return Call("get_rank", (u,), {}, lambda r: self._check_rank(u, r))
        if pick == 2:
            return Call("get_user_metadata", (u,), {}, lambda r: self._check_meta(u, r))
        if pick == 3:
            ids = list(self.ids)
            return Call("get_entries", (ids,), {}, lambda r: self._check_entries(ids, r))
        if pick == 4:
            return Call("get_around_user", (u, 3), {}, lambda r: self._check_around(u, r))
        if pick == 5:
            return Call("get_top", (10,), {}, lambda r: self._check_window(r, 1))
        if pick == 6:
            page = rng.randint(1, 3)
            return Call("get_page", (page, 10), {}, lambda r: self._check_page(page, r))
        if pick == 7:
            lo = rng.randint(0, 500)
            return Call(
                "get_by_score",
                (lo, lo + 300),
                {"limit": 20},
                lambda r: self._check_by_score(lo, lo + 300, r),
            )
        if pick == 8:
            return Call("count_by_score", (0, 1000), {}, self._check_count)
        if pick == 9:
            return Call("get_percentile", (u,), {}, lambda r: self._check_percentile(u, r))
        if pick == 10:
            return Call("get_histogram", (5,), {}, self._check_histogram)
        if pick == 11:
            return Call("score_at_percentile", (50,), {}, self._check_optional_number)
        if pick == 12:
            return Call("rank_for_score", (rng.randint(0, 1000),), {}, self._check_count)
        if pick == 13:
            return Call("get_size", (), {}, self._check_count)
        if pick == 14:
            return Call("get_around_rank", (rng.randint(1, 20), 3), {}, self._check_window_any)
        return Call("hidden", (), {}, self._check_hidden)

    def _write_call(self, u: str, have: User) -> Call:
        rng = self.rng
        after = User(have.score, dict(have.meta), have.hidden)
        pick = rng.randrange(10)
        if pick < 3:
            score = float(rng.randint(0, 1000))
            meta = self._meta()
            after.score, after.meta = score, meta
            return Call(
                "upsert_user",
                (u, score, meta),
                {},
                lambda r: self._check_write(u, r, after),
                (u, have, after),
            )
        if pick < 5:
            amount, meta = float(rng.randint(-50, 100)), self._meta()
            after.score, after.meta = (have.score or 0.0) + amount, meta
            return Call(
                "increment_score",
                (u, amount, meta),
                {},
                lambda r: self._check_write(u, r, after),
                (u, have, after),
            )
        if pick < 8:
            mode = rng.choice(["set", "best", "incr"])
            score = float(rng.randint(0, 1000))
            meta = self._meta()
            if mode == "set" or have.score is None:
                after.score = score
            elif mode == "best":
                after.score = max(have.score, score)
            else:
                after.score = have.score + score
            after.meta = meta
            return Call(
                "submit",
                (u, score, meta),
                {"mode": mode, "submission_id": uuid.uuid4().hex},
                lambda r: self._check_submit(u, r, have, after),
                (u, have, after),
                attempts=3,  # submit's retries=2 resends a write carrying an id
            )
        if pick == 8:
            after = User(None, {}, have.hidden)
            return Call(
                "delete_user",
                (u,),
                {},
                lambda r: self._expect(
                    r is (have.score is not None) or (have.hidden and isinstance(r, bool)),
                    f"delete_user {u}: {r} for {have}",
                ),
                (u, have, after),
            )
        method = "unhide" if have.hidden else "hide"
        after.hidden = not have.hidden
        return Call(
            method,
            (u,),
            {},
            lambda r: self._expect(isinstance(r, bool), f"{method} {u}: {r!r}"),
            (u, have, after),
        )

    def _resolve_call(self) -> Call:
        """Reads back a user whose write may or may not have applied. Every write carries
        metadata no other write carries, so the metadata tells which, and the hidden list tells
        a hide or unhide; the score must then be the one of that state."""
        u, before, after = self.unresolved[0]
        ids = list(self.ids)

        def check(result: Any) -> None:
            entries, meta, hidden = result
            entry = entries[ids.index(u)]
            seen = User(entry and entry["score"], meta, u in hidden)
            for candidate in (after, before):
                if self._same(seen, candidate):
                    self.resolved["applied" if candidate is after else "not applied"] += 1
                    self.users[u] = candidate
                    self.unresolved.pop(0)
                    return
            raise Wrong(
                f"{u} after an unanswered write: {seen} is neither before {before} nor "
                f"after {after}"
            )

        return Call("_resolve", (u, ids), {}, check)

    @staticmethod
    def _same(seen: User, model: User) -> bool:
        want_meta = model.meta if model.score is not None else {}
        if seen.hidden != model.hidden or seen.meta != want_meta:
            return False
        return model.hidden or seen.score == model.score  # a hidden user's score is not shown

    def outcome(self, call: Call, result: Any, error: Optional[BaseException]) -> None:
        """The reply (or the error) of `call`; raises Wrong."""
        if error is None:
            call.check(result)
            if call.write is not None:
                u, _, after = call.write
                self.users[u] = after
            return
        if call.write is not None and not self.unresolved:
            self.unresolved.append(call.write)  # applied or not: read it back next

    # -- checks --

    @staticmethod
    def _expect(ok: bool, what: str) -> None:
        if not ok:
            raise Wrong(what)

    def _visible(self, u: str) -> bool:
        have = self.users[u]
        return have.score is not None and not have.hidden

    def _check_entry(self, u: str, entry: Any) -> None:
        have = self.users[u]
        if not self._visible(u):
            self._expect(entry is None, f"get_user_entry {u}: {entry} for {have}")
            return
        self._expect(
            entry is not None
            and entry["user_id"] == u
            and entry["score"] == have.score
            and entry["metadata"] == have.meta
            and entry["rank"] >= 1,
            f"get_user_entry {u}: {entry} for {have}",
        )

    def _check_rank(self, u: str, rank: Any) -> None:
        ok = (rank is None) if not self._visible(u) else (isinstance(rank, int) and rank >= 1)
        self._expect(ok, f"get_rank {u}: {rank} for {self.users[u]}")

    def _check_meta(self, u: str, meta: Any) -> None:
        have = self.users[u]
        want = have.meta if have.score is not None else {}
        self._expect(meta == want, f"get_user_metadata {u}: {meta} for {have}")

    def _check_entries(self, ids: list[str], entries: Any) -> None:
        self._expect(len(entries) == len(ids), f"get_entries: {len(entries)} for {len(ids)}")
        for u, entry in zip(ids, entries):
            self._check_entry(u, entry)

    def _check_mine(self, entries: list[Any]) -> None:
        for entry in entries:
            u = entry["user_id"]
            if u in self.users:
                self._check_entry(u, entry)

    def _check_window(self, entries: Any, first_rank: int) -> None:
        self._check_window_any(entries)
        if entries:
            self._expect(entries[0]["rank"] == first_rank, f"window from {first_rank}: {entries}")

    def _check_window_any(self, entries: Any) -> None:
        ids = [e["user_id"] for e in entries]
        self._expect(len(set(ids)) == len(ids), f"a user twice: {ids}")
        for a, b in itertools.pairwise(entries):
            self._expect(
                b["rank"] == a["rank"] + 1 and b["score"] <= a["score"], f"out of order: {a} {b}"
            )
        self._check_mine(entries)

    def _check_around(self, u: str, entries: Any) -> None:
        self._check_window_any(entries)
        ids = [e["user_id"] for e in entries]
        self._expect((u in ids) == self._visible(u), f"get_around_user {u}: {ids}")

    def _check_page(self, page: int, result: Any) -> None:
        self._expect(result["page"] == page, f"get_page {page}: {result}")
        self._check_window(result["entries"], (page - 1) * 10 + 1)

    def _check_by_score(self, lo: float, hi: float, entries: Any) -> None:
        self._expect(all(lo <= e["score"] <= hi for e in entries), f"by_score: {entries}")
        self._check_window_any(entries)

    def _check_count(self, n: Any) -> None:
        self._expect(isinstance(n, int) and n >= 0, f"a count: {n!r}")

    def _check_optional_number(self, x: Any) -> None:
        self._expect(x is None or isinstance(x, float), f"a number: {x!r}")

    def _check_percentile(self, u: str, p: Any) -> None:
        if not self._visible(u):
            self._expect(p is None, f"get_percentile {u}: {p} for {self.users[u]}")
        else:
            self._expect(isinstance(p, float) and 0 <= p <= 100, f"get_percentile {u}: {p}")

    def _check_histogram(self, bins: Any) -> None:
        self._expect(isinstance(bins, list) and len(bins) in (0, 5), f"histogram: {bins}")

    def _check_hidden(self, hidden: Any) -> None:
        mine = {u for u in hidden if u in self.users}
        want = {u for u, have in self.users.items() if have.hidden}
        self._expect(mine == want, f"hidden(): {sorted(mine)} for {sorted(want)}")

    def _check_write(self, u: str, result: Any, after: User) -> None:
        if after.hidden:
            self._expect(result.get("rank") is None, f"a hidden write ranked: {result}")
        else:
            self._expect(
                result["user_id"] == u and result["score"] == after.score,
                f"write {u}: {result} for {after}",
            )

    def _check_submit(self, u: str, result: Any, before: User, after: User) -> None:
        if after.hidden:
            self._expect(result.get("rank") is None, f"a hidden submit ranked: {result}")
            return
        # A resend of an id whose first attempt had applied answers that attempt's result.
        previous = before.score
        self._expect(
            result["user_id"] == u
            and result["score"] == after.score
            and result["previous_score"] == previous
            and result["metadata"] == after.meta,
            f"submit {u}: {result} from {before} to {after}",
        )


# ---- Running the workers -----------------------------------------------------------------------


@dataclass
class Tally:
    calls: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)
    late: list[str] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    slowest: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(
        self,
        worker: Worker,
        call: Call,
        elapsed: float,
        error: Optional[BaseException],
        deadline: float,
    ) -> None:
        with self.lock:
            self.calls += 1
            self.slowest[call.method] = max(self.slowest.get(call.method, 0.0), elapsed)
            if error is not None:
                name = type(error).__name__
                self.errors[name] = self.errors.get(name, 0) + 1
            if elapsed > deadline * call.attempts:
                self.late.append(f"{worker.name} {call.method}: {elapsed:.3f} s ({error!r})")


def read_back(board: Any, u: str, ids: list[str]) -> tuple[Any, Any, Any]:
    return board.get_entries(ids), board.get_user_metadata(u), board.hidden()


async def read_back_async(board: Any, u: str, ids: list[str]) -> tuple[Any, Any, Any]:
    return await board.get_entries(ids), await board.get_user_metadata(u), await board.hidden()


def settle(worker: Worker, call: Call, result: Any, error: Optional[BaseException]) -> None:
    import redis_leaderboard

    if error is not None and not isinstance(
        error, (redis_leaderboard.ConnectionError, redis_leaderboard.TimeoutError)
    ):
        raise Wrong(f"{worker.name} {call.method}{call.args}: {error!r}")
    worker.outcome(call, result, error)


def sync_worker(
    board: Any, worker: Worker, tally: Tally, stop: threading.Event, dl: float, think: float
) -> None:
    try:
        while not stop.is_set():
            call = worker.next_call()
            t0 = time.monotonic()
            result, error = None, None
            try:
                if call.method == "_resolve":
                    result = read_back(board, *call.args)
                else:
                    result = getattr(board, call.method)(*call.args, **call.kwargs)
            except Exception as exc:
                error = exc
            tally.record(worker, call, time.monotonic() - t0, error, dl)
            try:
                settle(worker, call, result, error)
            except Wrong as exc:
                tally.wrong.append(str(exc))
            time.sleep(0.05 if error is not None else think)
    except Exception as exc:  # a crash of the soak itself: counted, never hidden
        tally.crashed.append(f"{worker.name}: {exc!r}")


def asyncio_workers(
    url: str, options: dict[str, Any], workers: list[Worker], tally: Tally, stop: threading.Event
) -> None:
    from redis_leaderboard import asyncio as aio

    dl = options["late"]

    async def one(board: Any, worker: Worker) -> None:
        while not stop.is_set():
            call = worker.next_call()
            t0 = time.monotonic()
            result, error = None, None
            try:
                if call.method == "_resolve":
                    result = await read_back_async(board, *call.args)
                else:
                    result = await getattr(board, call.method)(*call.args, **call.kwargs)
            except Exception as exc:
                error = exc
            tally.record(worker, call, time.monotonic() - t0, error, dl)
            try:
                settle(worker, call, result, error)
            except Wrong as exc:
                tally.wrong.append(str(exc))
            await asyncio.sleep(0.05 if error is not None else options["think"])

    async def main() -> None:
        async with aio.Client.from_url(url, socket_timeout=options["timeout"]) as client:
            board = aio.RedisLeaderboard(client, BOARD, None)
            results = await asyncio.gather(
                *(one(board, w) for w in workers), return_exceptions=True
            )
            for worker, outcome in zip(workers, results):
                if isinstance(outcome, BaseException):
                    tally.crashed.append(f"{worker.name}: {outcome!r}")

    asyncio.run(main())


def resources() -> tuple[float, int, int]:
    """The client process's RSS (MiB), open fds and threads."""
    with open("/proc/self/statm") as f:
        rss_pages = int(f.read().split()[1])
    rss = rss_pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    return rss, len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def heap() -> tuple[float, int]:
    """The C heap in use (MiB, glibc's mallinfo2: what RSS holds that is not free memory
    malloc keeps) and the Python objects' allocated blocks: a leak grows them, where
    fragmentation grows RSS alone."""
    import ctypes

    class Mallinfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks "
            "keepcost".split()
        ]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = Mallinfo2
    info = libc.mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20, sys.getallocatedblocks()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--seconds", type=float, help="the run's length in seconds instead")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--fault-every", type=float, default=120.0)
    parser.add_argument("--pause", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--think", type=float, default=0.0, help="seconds between a worker's calls")
    parser.add_argument("--late-margin", type=float, default=0.5)
    parser.add_argument("--sample", type=float, default=10.0)
    parser.add_argument("--max-rss-growth", type=float, default=None)
    parser.add_argument("--out", default="soak-results")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--relay", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.relay:
        relay_main(*args.relay)
        return 0

    import redis_leaderboard
    from redis_leaderboard._redis_server import RedisServer, free_port

    length = args.seconds if args.seconds is not None else args.minutes * 60
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    server = RedisServer(extra_args=["--appendonly", "yes", "--appendfsync", "always"])
    server.start()
    relay_port = free_port()
    relay = subprocess.Popen(
        [sys.executable, __file__, "--relay", str(relay_port), str(server.port)],
        start_new_session=True,
    )
    tally, stop = Tally(), threading.Event()
    threads: list[threading.Thread] = []
    workers: list[Worker] = []
    faults: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", relay_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        url = f"redis://127.0.0.1:{relay_port}/0"
        late = args.timeout + args.late_margin
        client = redis_leaderboard.Client.from_url(url, socket_timeout=args.timeout)
        board = redis_leaderboard.RedisLeaderboard(client, BOARD, None)
        board.clear()
        for i in range(args.threads):
            worker = Worker(f"s{i}", args.seed * 1000 + i)
            workers.append(worker)
            threads.append(
                threading.Thread(
                    target=sync_worker,
                    args=(board, worker, tally, stop, late, args.think),
                    daemon=True,
                )
            )
        async_workers = [Worker(f"a{i}", args.seed * 1000 + 500 + i) for i in range(args.tasks)]
        workers += async_workers
        threads.append(
            threading.Thread(
                target=asyncio_workers,
                args=(
                    url,
                    {"timeout": args.timeout, "late": late, "think": args.think},
                    async_workers,
                    tally,
                    stop,
                ),
                daemon=True,
            )
        )
        for t in threads:
            t.start()

        start = time.monotonic()
        samples = out / "samples.csv"
        with samples.open("w") as f:
            f.write("seconds,calls,rss_mib,fds,threads,fault,heap_mib,py_blocks\n")
        next_sample, next_fault, fault_index = start, start + args.fault_every, 0
        rss_after_cycle: Optional[float] = None
        while time.monotonic() - start < length:
            now = time.monotonic()
            fault = ""
            if now >= next_fault:
                fault = ("kill", "pause", "partition")[fault_index % 3]
                t0 = time.monotonic()
                if fault == "kill":
                    server.kill()
                    time.sleep(1.0)
                    server.start()
                elif fault == "pause":
                    server.pause()
                    time.sleep(args.pause)
                    server.resume()
                else:
                    relay.send_signal(signal.SIGUSR1)
                    time.sleep(args.pause)
                    relay.send_signal(signal.SIGUSR2)
                calls_before = tally.calls
                recovered = None
                while time.monotonic() - t0 < 60:  # time until calls succeed again
                    try:
                        board.get_size()
                        recovered = time.monotonic() - t0
                        break
                    except (redis_leaderboard.ConnectionError, redis_leaderboard.TimeoutError):
                        time.sleep(0.05)
                faults.append(
                    {
                        "at": round(t0 - start, 1),
                        "fault": fault,
                        "recovered_after_s": recovered and round(recovered, 3),
                        "calls_during": tally.calls - calls_before,
                    }
                )
                fault_index += 1
                next_fault = time.monotonic() + args.fault_every
                if fault_index == 3:
                    rss_after_cycle = resources()[0]
            if now >= next_sample or fault:
                rss, fds, nthreads = resources()
                in_use, blocks = heap()
                with samples.open("a") as f:
                    f.write(
                        f"{now - start:.1f},{tally.calls},{rss:.1f},{fds},{nthreads},{fault},"
                        f"{in_use:.2f},{blocks}\n"
                    )
                next_sample = now + args.sample
            if tally.crashed:
                break
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        relay.kill()
        relay.wait()
        server.cleanup()

    rss, fds, nthreads = resources()
    rows = [line.split(",") for line in samples.read_text().splitlines()[1:]]
    summary = {
        "seconds": round(length, 1),
        "calls": tally.calls,
        "errors": tally.errors,
        "wrong": len(tally.wrong),
        "late": len(tally.late),
        "crashed": tally.crashed,
        "unanswered_writes": {
            outcome: sum(w.resolved[outcome] for w in workers)
            for outcome in ("applied", "not applied")
        },
        "slowest_s": {m: round(t, 3) for m, t in sorted(tally.slowest.items())},
        "faults": faults,
        "rss_mib": {
            "first": float(rows[0][2]) if rows else None,
            "after_first_cycle": rss_after_cycle,
            "max": max((float(r[2]) for r in rows), default=None),
            "last": rss,
        },
        "fds": {
            "min": min((int(r[3]) for r in rows), default=fds),
            "max": max((int(r[3]) for r in rows), default=fds),
        },
        "threads": {
            "min": min((int(r[4]) for r in rows), default=nthreads),
            "max": max((int(r[4]) for r in rows), default=nthreads),
        },
        "wrong_examples": tally.wrong[:20],
        "late_examples": tally.late[:20],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    failed = bool(tally.wrong or tally.late or tally.crashed)
    if args.max_rss_growth is not None and rss_after_cycle is not None:
        failed |= rss - rss_after_cycle > args.max_rss_growth
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
