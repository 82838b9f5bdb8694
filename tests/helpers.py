"""Helpers the test files share: the shapes of results, a clock tests move, what a board's keys
hold (to check what a call wrote, or that a refused call changed nothing), and a proxy that
loses replies. The fixtures (servers, clients, ``r``, ``api``) are in conftest.py."""

from __future__ import annotations

import socket
import threading
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import server_clock

UTC = timezone.utc


# --- Results ------------------------------------------------------------------------------------

ADA = {"name": "Ada", "description": "Solves production incidents before breakfast."}


def entry(
    rank: int, user_id: str, score: float, metadata: Optional[dict[str, str]] = None
) -> dict[str, Any]:
    """An entry as every read returns it."""
    return {"rank": rank, "user_id": user_id, "score": float(score), "metadata": metadata or {}}


def written(
    rank: int,
    user_id: str,
    score: float,
    metadata: Optional[dict[str, str]] = None,
    trimmed: Optional[list[str]] = None,
) -> dict[str, Any]:
    """What upsert_user / increment_score return when the user is still on the board."""
    return {**entry(rank, user_id, score, metadata), "trimmed_user_ids": trimmed or []}


def trimmed_away(
    user_id: str, score: float, metadata: dict[str, str], trimmed: list[str]
) -> dict[str, Any]:
    """What they return when the write itself was trimmed away: no rank, the payload sent."""
    return {
        "user_id": user_id,
        "score": float(score),
        "metadata": metadata,
        "trimmed_user_ids": trimmed,
    }


def small_board(board: Any) -> Any:
    """``board`` with ten users u01..u10 scored 10..100 (u10 is rank 1, u01 rank 10)."""
    for i in range(1, 11):
        board.upsert_user(f"u{i:02d}", i * 10, {"n": str(i)})
    return board


def small_board_entry(rank: int) -> dict[str, Any]:
    """The entry at ``rank`` of :func:`small_board`."""
    i = 11 - rank
    return entry(rank, f"u{i:02d}", i * 10, {"n": str(i)})


# --- Time ---------------------------------------------------------------------------------------


class FakeClock:
    """An injectable clock: an aware datetime that tests move, kept in UTC (adding a timedelta
    to a datetime in a zone with daylight saving adds wall time, and would skip a repeated
    hour).

    The server decides what time it is (which period, bucket or window a write belongs to), so
    setting or advancing a FakeClock moves the test servers' clocks to the same instant, frozen
    there (tests/server_clock.py). ``server=False``: a client's own clock, off from the server's
    (the server's is left where it is). Against a server whose clock cannot be moved (a static
    build), a test that moves it is skipped. While the server's clock stands still, a blocking
    read's timeout (XREAD BLOCK, ``events(block=...)`` above 0) never passes: read with
    ``block=0``."""

    movable = True  # conftest's redis_server fixture says whether the session's server follows

    def __init__(self, now: datetime, *, server: bool = True) -> None:
        self.server = server
        self.now = now

    @property
    def now(self) -> datetime:
        return self._now

    @now.setter
    def now(self, value: datetime) -> None:
        self._now = value.astimezone(UTC)
        if self.server:
            if not FakeClock.movable:
                import pytest

                pytest.skip("the server's clock cannot be moved (a statically linked server)")
            server_clock.freeze(self._now)

    def __call__(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        self.now = self._now + delta

    def release(self) -> None:
        """The server's clock is the real one again; this one stays where it is, a client's
        own clock from now on (for a process, such as the CLI, that runs on the real one)."""
        self.server = False
        server_clock.reset()


def millis(moment: datetime) -> int:
    """A moment as Redis's PEXPIRETIME reports a deadline: Unix milliseconds."""
    return round(moment.timestamp() * 1000)


# --- What the server holds ----------------------------------------------------------------------


def pattern(key: str) -> str:
    """A SCAN/KEYS pattern matching ``key`` and every key that starts with it."""
    escaped = "".join("\\" + c if c in "*?[]\\" else c for c in key)
    return escaped + "*"


def keys_under(r: Any, key: str) -> set[str]:
    """The names of ``key`` and of every key under it (its metadata hashes, options, ...)."""
    return set(r.scan_iter(match=pattern(key), count=1000))


def snapshot(r: Any, key: str) -> dict[str, Any]:
    """Every key under ``key``: its whole value (DUMP: type, content and encoding) and its
    deadline (PEXPIRETIME). Equal snapshots before and after a call: it changed nothing."""
    return {name: (r.dump(name), r.pexpiretime(name)) for name in sorted(keys_under(r, key))}


def contents(r: Any, key: str) -> dict[str, Any]:
    """Every key under ``key``, named without ``key``, with its type and content as redis-py
    reads it: to compare two boards written by different code on different keys."""
    out: dict[str, Any] = {}
    for name in keys_under(r, key):
        kind = r.type(name)
        if kind == "zset":
            value: Any = r.zrange(name, 0, -1, withscores=True)
        elif kind == "hash":
            value = r.hgetall(name)
        else:
            value = None
        out[name[len(key) :]] = (kind, value)
    return out


# --- Lost replies -------------------------------------------------------------------------------


class ReplyDropper:
    """A TCP proxy to `port`: its first `drops` connections forward the client's bytes and
    close as soon as the server answers (the reply is dropped); later ones pass through. A
    write sent through it reached Redis; its reply never reaches the client. The connection's
    handshake (HELLO, answered before any request is sent) passes."""

    def __init__(self, port: int, drops: int) -> None:
        self.port_to = port
        self.drops = drops
        self.dropped = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.port_to))
            drop = self.may_drop()
            threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, drop), daemon=True).start()

    def may_drop(self) -> bool:
        """Whether a new connection may drop a reply (then ``drops_at`` says where): its first
        ``drops`` connections here; a subclass may decide otherwise."""
        if self.dropped >= self.drops:
            return False
        self.dropped += 1
        return True

    @staticmethod
    def drops_at(data: bytes) -> bool:
        """Whether a dropped connection closes at ``data``, the server's next bytes (passed on
        before it): at its first reply here; a subclass may wait for a reply of its own."""
        return True

    def _pipe(self, source: socket.socket, sink: socket.socket, drop: bool) -> None:
        try:
            while data := source.recv(65536):
                handshake = b"$6\r\nserver\r\n" in data[:64]  # HELLO's reply
                # The write ran; its reply goes nowhere.
                if drop and not handshake and self.drops_at(data):
                    break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.closing = True
        self.listener.close()
