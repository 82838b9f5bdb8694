"""Rolling windows brought to a later bucket incrementally, in bounded steps (issue 30).

The window's buckets that leave are subtracted from its aggregates ("<key>:window:all"), a step
of at most a given number of element operations per script call, the position recorded in the
marker; every read, write and delete_user finishes a transition before it reads or writes. A small
step ("<key>:window:step") makes every transition here take many calls. Checked against the
plain-Python model (window_model.py): bucket changes one at a time, many buckets at once, a gap
longer than the window, readers and writers whose clocks lag, max_entries trimming (a user trimmed
away comes back when others' aggregates fall), the three aggregates, scores that are not
integers; a read between two steps of a transition (driven by hand, request by request) never sees
the window half done; writers in threads across transitions leave the window exact; a window
written before issue 30 (a union and a marker of the old format) is rebuilt once.
"""

from __future__ import annotations

import random
import socket
import threading
from datetime import datetime, timedelta
from typing import Any, Optional

import pytest

from apis import Api, sync_and_one_loop, sync_only
from helpers import UTC, FakeClock
from window_model import WindowModel

MINUTE = timedelta(minutes=1)
T0 = datetime(2031, 7, 1, 12, 0, tzinfo=UTC)  # keys expire by the server's real clock


def scores(board: Any) -> list[tuple[str, float]]:
    return [(e["user_id"], e["score"]) for e in board.list_all()]


def no_window_ahead(r: Any, key: str) -> None:
    """The marker without the window ahead (as a board of the layout before it): the next bucket
    change takes steps."""
    words = r.get(f"{key}:window").split()
    if len(words) == 3:
        r.set(f"{key}:window", " ".join(words[:2]), keepttl=True)


def exact_window(r: Any, key: str, last: int, n: int, aggregate: str) -> dict[str, float]:
    """Every user's aggregate over the buckets last - n + 1 .. last, read from the buckets."""
    totals: dict[str, float] = {}
    for bucket in range(last - n + 1, last + 1):
        for user, score in r.zrange(f"{key}:bucket:{bucket}", 0, -1, withscores=True):
            if user not in totals:
                totals[user] = score
            elif aggregate == "sum":
                totals[user] += score
            else:
                totals[user] = (max if aggregate == "max" else min)(totals[user], score)
    return totals


@sync_and_one_loop
@pytest.mark.parametrize("step", [1, 3, None])
@pytest.mark.parametrize(
    ("aggregate", "order", "seed"),
    [("sum", "desc", 11), ("max", "desc", 12), ("min", "asc", 13), ("sum", "asc", 14)],
)
def test_differential_across_bucket_changes_in_steps(
    api: Api, board_key: str, r: Any, aggregate: str, order: str, seed: int, step: Optional[int]
) -> None:
    """Random writes (every mode, negative increments, some scores not integers), reads by a
    reader in step and one whose clock lags a bucket, writes by a writer whose clock lags, and the
    clock moving by seconds, one bucket, several, or more than the window: each result and the
    window's board after each step as the model says."""
    rng = random.Random(seed * 100 + (step or 0))
    clock = FakeClock(T0 + timedelta(days=seed))
    # A client whose clock lags a bucket (its own clock: the server's is `clock`'s). The server's
    # clock decides the bucket: its reads and writes are the server's bucket's.
    lagging = FakeClock(clock.now, server=False)
    options: dict[str, Any] = dict(
        window=4 * MINUTE, bucket=MINUTE, aggregate=aggregate, max_entries=4, order=order
    )
    recent = api.rolling(key=board_key, clock=clock, **options)
    behind = api.rolling(key=board_key, clock=lagging, **options)
    if step is not None:
        r.set(f"{board_key}:window:step", step)
    model = WindowModel(4, aggregate, 4, order)
    fractions = aggregate != "sum" or seed == 14  # sums of 0.1s drift unless recounted
    for _ in range(160):
        roll = rng.random()
        if roll < 0.25:
            clock.advance(timedelta(seconds=rng.randrange(0, 40)))
        elif roll < 0.32:
            clock.advance(MINUTE * rng.choice([1, 1, 2, 3, 5, 9]))
        lagging.now = clock.now - MINUTE
        user = f"u{rng.randrange(9)}"
        mode = rng.choice(["set", "best", "incr"])
        score = float(rng.randrange(-10, 30))
        if fractions and rng.random() < 0.3:
            score += rng.choice([0.1, 0.2, 0.7, 1e-9])
        action = rng.random()
        if action < 0.15:
            bucket = recent.bucket_at()
            assert recent.list_all() == model.read(bucket).list_all()
            assert recent.get_size() == model.read(bucket).get_size()
        elif action < 0.22:
            assert behind.list_all() == model.read(recent.bucket_at()).list_all()
        elif action < 0.3 and model.built is not None and model.built == recent.bucket_at():
            # A writer a bucket behind, inside the window: its bucket, the window's score.
            got = behind.submit(user, score, {"m": mode}, mode=mode)  # type: ignore[arg-type]
            assert got == model.submit(recent.bucket_at(), user, score, {"m": mode}, mode)
        else:
            got = recent.submit(user, score, {"m": mode}, mode=mode)  # type: ignore[arg-type]
            assert got == model.submit(recent.bucket_at(), user, score, {"m": mode}, mode)
    clock.advance(MINUTE)
    assert recent.list_all() == model.read(recent.bucket_at()).list_all()
    assert r.zcard(f"{board_key}:window:all") == len(
        exact_window(r, board_key, recent.bucket_at(), 4, aggregate)
    )


@sync_and_one_loop
@pytest.mark.parametrize("aggregate", ["sum", "max", "min"])
def test_a_user_trimmed_away_comes_back_when_others_leave(
    api: Api, board_key: str, r: Any, aggregate: str
) -> None:
    clock = FakeClock(T0)
    order = "asc" if aggregate == "min" else "desc"
    sign = -1 if aggregate == "min" else 1
    recent = api.rolling(
        key=board_key, window=3 * MINUTE, bucket=MINUTE, aggregate=aggregate,  # type: ignore[arg-type]
        max_entries=2, order=order, clock=clock,  # type: ignore[arg-type]
    )  # fmt: skip
    r.set(f"{board_key}:window:step", 2)
    recent.submit("ada", sign * 50)
    recent.submit("bob", sign * 40)
    clock.advance(MINUTE)
    assert recent.submit("cy", sign * 10)["trimmed_user_ids"] == ["cy"]
    assert [u for u, _ in scores(recent)] == ["ada", "bob"]
    clock.advance(2 * MINUTE)  # ada's and bob's bucket leaves: cy is back, alone
    assert scores(recent) == [("cy", sign * 10.0)]
    assert r.zrange(f"{board_key}:window:all", 0, -1) == ["cy"]


@sync_only
def test_a_window_of_many_entries_moves_on_in_many_short_steps(
    api: Api, board_key: str, r: Any
) -> None:
    """Buckets filled behind the window's back (as a bulk load would): the first read builds the
    window, then each bucket change subtracts a bucket of 3,000 entries, in steps of 500 element
    operations: many round trips, and the window exact after each."""
    clock = FakeClock(T0)
    recent = api.rolling(
        key=board_key, window=4 * MINUTE, bucket=MINUTE, max_entries=50, clock=clock
    )
    first = recent.bucket_at()
    rng = random.Random(5)
    for b in range(first - 3, first + 1):
        r.zadd(f"{board_key}:bucket:{b}", {f"p{i}": rng.randrange(1, 100) for i in range(3000)})
    r.set(f"{board_key}:window:step", 500)
    calls = api.client.stats()["round_trips"]
    assert recent.get_size() == 50
    assert api.client.stats()["round_trips"] - calls > 20  # 12,000 entries added, in steps
    for _ in range(4):
        clock.advance(MINUTE)
        exact = exact_window(r, board_key, recent.bucket_at(), 4, "sum")
        by_name = sorted(exact.items(), reverse=True)  # equal scores: Redis's REV order
        best = sorted(by_name, key=lambda kv: -kv[1])[:50]
        assert scores(recent) == [(u, s) for u, s in best]
        assert r.zcard(f"{board_key}:window:all") == len(exact)
    assert recent.get_size() == 0


def resp_end(data: bytes, at: int) -> Optional[int]:
    """Where the RESP reply starting at `at` ends, or None if it is not all in `data`."""
    line = data.find(b"\r\n", at)
    if line < 0:
        return None
    kind, head = data[at : at + 1], data[at + 1 : line]
    if kind in (b"+", b"-", b":"):
        return line + 2
    if kind == b"$":
        size = int(head)
        end = line + 2 + size + 2 if size >= 0 else line + 2
        return end if end <= len(data) else None
    assert kind == b"*", data[at : at + 20]
    at = line + 2
    for _ in range(max(0, int(head))):
        end = resp_end(data, at)
        if end is None:
            return None
        at = end
    return at


def split_requests(data: bytes) -> list[bytes]:
    """The commands of a request (RESP arrays of bulk strings), each whole."""
    commands, at = [], 0
    while at < len(data):
        end = resp_end(data, at)
        assert end is not None
        commands.append(data[at:end])
        at = end
    return commands


class Wire:
    """A raw connection to the server: sends commands, returns their replies' bytes."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        self.buffer = b""

    def send(self, commands: list[bytes]) -> bytes:
        self.sock.sendall(b"".join(commands))
        replies, at = b"", 0
        for _ in commands:
            while (end := resp_end(self.buffer, at)) is None:
                self.buffer += self.sock.recv(1 << 20)
            at = end
        replies, self.buffer = self.buffer[:at], self.buffer[at:]
        return replies

    def close(self) -> None:
        self.sock.close()


@sync_only
def test_a_read_between_steps_never_sees_a_window_half_done(
    api: Api, board_key: str, r: Any, redis_server: Any
) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=4 * MINUTE, bucket=MINUTE, clock=clock)
    model = WindowModel(4)
    rng = random.Random(8)
    for _ in range(4):
        for i in range(12):
            user, points = f"p{i}", float(rng.randrange(1, 50))
            assert recent.increment_score(user, points) == recent._entry(
                model.submit(recent.bucket_at(), user, points, None, "incr")
            )
        clock.advance(MINUTE)
    r.set(f"{board_key}:window:step", 2)
    no_window_ahead(r, board_key)
    wire = Wire(redis_server.host, redis_server.port)
    try:
        # A reader's first round trip does one step of the transition: its read is dropped.
        op = recent._refreshed(recent._board.get_top(20))
        assert op.feed(wire.send(split_requests(op.request()))) is False
        assert len(r.get(f"{board_key}:window").split()) == 5  # under way
        # A writer meanwhile finishes the transition (WINDOWBUSY, sent again), then writes.
        written = recent.increment_score("p3", 7)
        assert written == recent._entry(model.submit(recent.bucket_at(), "p3", 7, None, "incr"))
        while not op.feed(wire.send(split_requests(op.request()))):
            pass
        assert op.result() == model.read(recent.bucket_at()).get_top(20)

        # A reader whose refresh says "complete" but whose read comes after another reader's
        # first step of the next transition: its check sees the marker changed, it reads again
        # (driving that transition to its end: it reads the newer window).
        op = recent._refreshed(recent._board.get_top(20))
        refresh, *rest = split_requests(op.request())
        replies = wire.send([refresh])
        assert replies.startswith(b"$")  # complete: the marker's text
        no_window_ahead(r, board_key)
        clock.advance(MINUTE)
        ahead = recent._refreshed(recent._board.get_top(20))
        assert ahead.feed(wire.send(split_requests(ahead.request()))) is False
        replies += wire.send(rest)
        assert op.feed(replies) is False  # the check differed: again
        while not op.feed(wire.send(split_requests(op.request()))):
            pass
        assert op.result() == model.read(recent.bucket_at()).get_top(20)
        while not ahead.feed(wire.send(split_requests(ahead.request()))):
            pass
        assert ahead.result() == op.result()
    finally:
        wire.close()


@sync_only
@pytest.mark.parametrize("aggregate", ["sum", "max"])
def test_writers_in_threads_across_transitions_leave_the_window_exact(
    api: Api, board_key: str, r: Any, aggregate: str
) -> None:
    clock = FakeClock(T0)
    lock = threading.Lock()

    def now() -> datetime:
        with lock:
            return clock.now

    recent = api.rolling(
        key=board_key, window=3 * MINUTE, bucket=MINUTE, aggregate=aggregate,  # type: ignore[arg-type]
        max_entries=1000, clock=now,
    )  # fmt: skip
    r.set(f"{board_key}:window:step", 3)
    errors: list[BaseException] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(120):
                user = f"t{seed}-{rng.randrange(15)}"
                recent.submit(user, rng.randrange(-5, 20), mode=rng.choice(["set", "incr", "best"]))
                if rng.random() < 0.2:
                    recent.get_top(5)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for _ in range(12):
        threading.Event().wait(0.02)
        with lock:
            clock.now += MINUTE * random.Random(len(errors)).choice([1, 1, 2])
    for t in threads:
        t.join()
    assert not errors
    exact = exact_window(r, board_key, recent.bucket_at(), 3, aggregate)
    assert dict(scores(recent)) == exact
    assert dict(r.zrange(f"{board_key}:window:all", 0, -1, withscores=True)) == exact


@sync_and_one_loop
def test_a_window_written_before_issue_30_is_rebuilt_once(api: Api, board_key: str, r: Any) -> None:
    """The old layout: a union built by ZUNIONSTORE and a marker naming its bucket (no :all):
    the first read builds the window afresh from the buckets, then it moves on in steps."""
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=3 * MINUTE, bucket=MINUTE, clock=clock)
    model = WindowModel(3)
    for minute in range(3):
        for user, points in [("ada", 1 + minute), ("bob", 5), (f"cy{minute}", 2)]:
            recent.increment_score(user, points)
            model.submit(recent.bucket_at(), user, points, None, "incr")
        clock.advance(MINUTE)
    clock.advance(-MINUTE)
    last = recent.bucket_at()
    r.delete(f"{board_key}:window:all", f"{board_key}:window:newest")
    r.zadd(board_key, {"stale": 99})  # an old union, out of date
    r.set(f"{board_key}:window", str(last))
    assert scores(recent) == [(e["user_id"], e["score"]) for e in model.read(last).list_all()]
    assert r.get(f"{board_key}:window").split()[:2] == [str(last), "0"]
    clock.advance(MINUTE)
    assert recent.list_all() == model.read(recent.bucket_at()).list_all()


@sync_and_one_loop
def test_delete_user_and_clear_during_a_transition(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=2 * MINUTE, bucket=MINUTE, clock=clock)
    for i in range(30):
        recent.increment_score(f"p{i}", i + 1)
    clock.advance(MINUTE)
    recent.increment_score("p1", 1)
    r.set(f"{board_key}:window:step", 2)
    clock.advance(MINUTE)  # the first bucket leaves: 30 entries, in steps
    assert recent.delete_user("p1") is True  # finishes the transition first
    assert recent.get_user_entry("p1") is None
    assert r.zscore(f"{board_key}:window:all", "p1") is None
    assert recent.get_size() == 0
    clock.advance(-MINUTE)  # a clock that lags: the newer window
    assert recent.get_size() == 0
    recent.increment_score("ada", 1)
    clock.advance(3 * MINUTE)
    recent.clear()
    assert r.keys(f"{board_key}*") == []


def test_a_refreshed_read_counts_only_after_a_complete_refresh_and_an_equal_check() -> None:
    """Offline: the operation's replies fed by hand (test_core_offline's RESP helpers)."""
    from redis_leaderboard._core import Board, Window
    from test_core_offline import array, bulk, integer
    from test_window_reader import window

    read = window(0, 1, [(bulk("ada"), bulk("3"), array())])

    def op() -> Any:
        o = Window("lb", 60_000, 240_000).refreshed(Board("lb", 5).get_top(1))
        assert len(split_requests(o.request())) == 3  # refresh, read, check
        return o

    o = op()
    assert o.feed(integer(0) + read + bulk("6 0 7 1 12")) is False  # a step: again
    assert len(split_requests(o.request())) == 3
    assert o.feed(bulk("7 0") + read + bulk("8 0 9 1 0")) is False  # a transition in between
    assert o.feed(bulk("7 0") + read + bulk("7 0")) is True
    assert [e["user_id"] for e in o.result()] == ["ada"]
    o = op()
    assert o.feed(bulk("7 0") + read + b"$-1\r\n") is False  # the marker expired: again
    with pytest.raises(Exception, match="unexpected reply"):
        op().feed(integer(1) + read + bulk("7 0"))
