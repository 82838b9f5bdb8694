"""Helpers the test files share: the shapes of results, a clock tests move, what a board's keys
hold (to check what a call wrote, or that a refused call changed nothing), and a proxy that
loses replies. The fixtures (servers, clients, ``r``, ``api``) are in conftest.py."""

from __future__ import annotations

import inspect
import os
import socket
import threading
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import server_clock

UTC = timezone.utc

# --- The layout under test ----------------------------------------------------------------------
# ``LB_TEST_LAYOUT=compact`` runs the board tests in the compact layout: every board a test
# builds through tests/apis.py whose class takes ``layout=`` (plain, periodic, sharded, team
# boards, tournaments, leagues; not rolling boards) takes ``layout="compact"`` unless the test
# gives a layout. Tests of the guide's layout itself are marked ``guide_layout`` (with their
# reason) and deselected then.

TEST_LAYOUT = os.environ.get("LB_TEST_LAYOUT") or "guide"
if TEST_LAYOUT not in ("guide", "compact"):
    raise RuntimeError(f"LB_TEST_LAYOUT must be 'guide' or 'compact', not {TEST_LAYOUT!r}")
COMPACT = TEST_LAYOUT == "compact"


def seeds_in_both_layouts(seeds: int, compact_every: int = 3) -> list[tuple[int, str]]:
    """A differential test's ``(seed, layout)`` parameters: every seed in the guide's layout,
    every ``compact_every``-th in the compact one too."""
    return [
        *((seed, "guide") for seed in range(seeds)),
        *((seed, "compact") for seed in range(0, seeds, compact_every)),
    ]


def takes_layout(cls: type) -> bool:
    """Whether a board class has layouts (a ``layout`` argument)."""
    return "layout" in inspect.signature(cls).parameters


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


def pipelined_read_write_read(
    client: Any, board: Any, count: int, user_id: str, score: float, metadata: dict[str, Any]
) -> tuple[list[Any], list[Any]]:
    """``board.get_top(count)``, a write of ``user_id``, ``get_top(count)`` again, as one
    ``client.run_pipelined`` stream (a sync client's or cluster client's, operations written
    ahead of their replies): the two reads' results. In order, the first read does not see the
    write (its metadata no newer than its ranks), the second does."""
    results: list[Any] = []
    operations = [
        board._board.get_top(count),
        board._board.upsert_user(user_id, score, metadata),
        board._board.get_top(count),
    ]
    client.run_pipelined(iter(operations), results.append, 3)
    return results[0], results[2]


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


# --- A player's metadata, in either layout -------------------------------------------------------
# Each takes a board (its ``key`` and ``layout``: a board the test built with a layout of its
# own) or a board's key (a board of the run's layout, ``TEST_LAYOUT``).


def key_and_layout(board: Any) -> tuple[str, str]:
    """A board's key and layout (a key alone: the run's layout)."""
    if isinstance(board, str):
        return board, TEST_LAYOUT
    return board.key, board.layout


def compact_value(fields: dict[str, str]) -> str:
    """A compact board's stored value for a player's fields: the RESP array HGETALL answers."""
    items = [text for pair in fields.items() for text in pair]
    return f"*{len(items)}\r\n" + "".join(f"${len(t.encode())}\r\n{t}\r\n" for t in items)


def decode_compact_value(value: str) -> dict[str, str]:
    """A compact board's stored value read back as the fields it holds (the lengths count
    bytes: read as UTF-8, as the tests write it)."""
    data = value.encode()
    assert data.startswith(b"*"), value[:20]
    head, _, rest = data.partition(b"\r\n")
    items: list[str] = []
    for _ in range(int(head[1:])):
        assert rest.startswith(b"$"), rest[:20]
        size, _, rest = rest[1:].partition(b"\r\n")
        items.append(rest[: int(size)].decode())
        assert rest[int(size) : int(size) + 2] == b"\r\n"
        rest = rest[int(size) + 2 :]
    assert rest == b"", rest[:20]
    return dict(zip(items[::2], items[1::2]))


def stored_metadata(r: Any, board: Any, user_id: str) -> dict[str, str]:
    """A player's metadata as the board stores it (read with redis-py, not the board): their
    hash ``f"{key}:user:{user_id}"``, or their field of the compact board's ``f"{key}:meta"``."""
    key, layout = key_and_layout(board)
    if layout == "compact":
        value = r.hget(f"{key}:meta", user_id)
        return {} if value is None else decode_compact_value(value)
    return dict(r.hgetall(f"{key}:user:{user_id}"))


def every_stored_metadata(r: Any, board: Any) -> dict[str, dict[str, str]]:
    """Every player's stored metadata by user id (the players who have some)."""
    key, layout = key_and_layout(board)
    if layout == "compact":
        return {u: decode_compact_value(v) for u, v in r.hgetall(f"{key}:meta").items()}
    prefix = f"{key}:user:"
    names = r.scan_iter(match=pattern(prefix), count=1000)
    return {name[len(prefix) :]: r.hgetall(name) for name in names if r.type(name) == "hash"}


def has_stored_metadata(r: Any, board: Any, user_id: str) -> bool:
    """Whether the board stores metadata for the player."""
    key, layout = key_and_layout(board)
    if layout == "compact":
        return bool(r.hexists(f"{key}:meta", user_id))
    return bool(r.exists(f"{key}:user:{user_id}"))


def put_metadata(
    r: Any, board: Any, user_id: str, fields: dict[str, str], *, merge: bool = True
) -> None:
    """Stores metadata for a player behind the board's back, merged as HSET merges
    (``merge=False``: for a player who has none yet, ``r`` may be a pipeline)."""
    key, layout = key_and_layout(board)
    if layout == "compact":
        merged = {**stored_metadata(r, board, user_id), **fields} if merge else fields
        r.hset(f"{key}:meta", user_id, compact_value(merged))
    else:
        r.hset(f"{key}:user:{user_id}", mapping=fields)


PLACEHOLDER = "placeholder:record-the-layout"


def record_layout(board: Any) -> None:
    """Before a test writes an empty board's keys behind its back (as another client of the
    board would): a compact board records its options first, as its first write does (else it
    takes the keys for a guide board's and refuses them, OptionsMismatch). A write and a
    removal of a placeholder player; nothing for the guide's layout."""
    if key_and_layout(board)[1] == "compact":
        board.upsert_user(PLACEHOLDER, 0)
        assert board.delete_user(PLACEHOLDER) is True


def metadata_keys(board: Any, user_ids: Any = ()) -> set[str]:
    """The keys holding these players' metadata (players who have some): their hashes, or the
    compact board's one hash (none if no player has metadata)."""
    key, layout = key_and_layout(board)
    user_ids = list(user_ids)
    if layout == "compact":
        return {f"{key}:meta"} if user_ids else set()
    return {f"{key}:user:{u}" for u in user_ids}


def recorded_options(board: Any) -> set[str]:
    """The option keys a default board keeps, players or not: none (the guide's keys only), or
    (the compact layout, recorded in the board's options) ``f"{key}:options"``."""
    key, layout = key_and_layout(board)
    return {f"{key}:options"} if layout == "compact" else set()


def layout_option_fields(
    board: Any, order: str = "desc", ties: str = "lexicographic"
) -> dict[str, str]:
    """The fields a compact board records in its options hash whatever its other options: its
    order, ties (a guide board records them only when one is not the default) and layout; none
    in the guide's layout."""
    if key_and_layout(board)[1] != "compact":
        return {}
    return {"order": order, "ties": ties, "layout": "compact"}


def layout_acl_commands(board: Any) -> list[str]:
    """What an ACL rule adds for the board's layout (docs/pages/deployment/acl.md): nothing, or
    ``+zrank +zcount +hget +hmget +hdel`` for a compact board."""
    _, layout = key_and_layout(board)
    return ["+zrank", "+zcount", "+hget", "+hmget", "+hdel"] if layout == "compact" else []


def board_keys(board: Any, with_metadata: Any = ()) -> set[str]:
    """Every key of a default board that has players, ``with_metadata`` those who have
    metadata: its sorted set, their metadata keys and its recorded options."""
    key, _ = key_and_layout(board)
    return {key} | metadata_keys(board, with_metadata) | recorded_options(board)


def contents_as_guide(r: Any, board: Any) -> dict[str, Any]:
    """:func:`contents` of the board as the guide's layout holds the same players, to compare
    a board of either layout with the guide's code's keys or a model's: a compact board's
    metadata hash made one hash per player, its options without the layout (and without the
    order and ties a compact board records even when they are the defaults, which a guide board
    records only beside each other when one is not). A compact board holding a hash of the
    guide's layout fails."""
    key, layout = key_and_layout(board)
    out = contents(r, key)
    if layout != "compact":
        return out
    stray = sorted(name for name in out if name.startswith(":user:"))
    assert not stray, f"a compact board holds the guide's hashes: {stray}"
    kind, value = out.pop(":meta", ("hash", {}))
    assert kind == "hash", kind
    for user_id, stored in value.items():
        out[f":user:{user_id}"] = ("hash", decode_compact_value(stored))
    if ":options" in out:
        kind, fields = out.pop(":options")
        fields = dict(fields)
        assert kind == "hash" and fields.pop("layout") == "compact", (kind, fields)
        if (fields.get("order"), fields.get("ties")) == ("desc", "lexicographic"):
            del fields["order"], fields["ties"]
        if fields:
            out[":options"] = ("hash", fields)
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
