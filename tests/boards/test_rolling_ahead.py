"""The window ahead (issue 30): a read right after a bucket change does not step.

Beside the window at bucket t, "<key>:window:ahead" holds the aggregates over buckets
t - n + 2 .. t (the next window, as it will be when bucket t + 1 begins), kept up to date by
every write. At the change it becomes the window (a RENAME; a trimmed union refilled with its
best max_entries), and the old window's storage becomes the new window ahead by a job whose
slices later calls do (the marker's third word: 'r' ready, 'L<k>.<offset>' / 'E<k>.<offset>' a
job). When the job is not done by the next change, that change takes steps (WINDOWBUSY).
Checked against the plain-Python model after every call, and the window ahead itself against
the buckets whenever the marker says it is ready.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any, Optional

import pytest
from test_rolling_steps import MINUTE, T0, exact_window, no_window_ahead

from apis import Api, sync_and_one_loop
from helpers import FakeClock
from window_model import WindowModel

N = 4


def marker(r: Any, key: str) -> list[str]:
    return str(r.get(f"{key}:window")).split()


def check_ahead(r: Any, key: str, aggregate: str) -> None:
    """When the marker says the window ahead is ready: it is the aggregate over buckets
    t - n + 2 .. t, exactly (and the window's :all over t - n + 1 .. t)."""
    words = marker(r, key)
    if len(words) != 3 or words[2] != "r":
        return
    t = int(words[0])
    expected = exact_window(r, key, t, N - 1, aggregate)
    got = dict(r.zrange(f"{key}:window:ahead", 0, -1, withscores=True))
    assert got == pytest.approx(expected), (words, got, expected)


def round_trips(api: Api) -> int:
    return int(api.client.stats()["round_trips"])


@sync_and_one_loop
@pytest.mark.parametrize("max_entries", [4, None])
@pytest.mark.parametrize("step", [None, 1])
@pytest.mark.parametrize(
    ("aggregate", "order", "seed"),
    [("sum", "desc", 21), ("max", "desc", 22), ("min", "asc", 23), ("sum", "asc", 24)],
)
def test_differential_with_the_window_ahead(
    api: Api,
    board_key: str,
    r: Any,
    aggregate: str,
    order: str,
    seed: int,
    step: Optional[int],
    max_entries: Optional[int],
) -> None:
    """Random writes (every mode, some scores not integers), reads by a reader in step and one a
    bucket behind, writes a bucket behind, the clock moving by seconds, one bucket (mostly: the
    swap), several, or longer than the window: every reply as the model says, and the window
    ahead exact whenever it is ready."""
    rng = random.Random(seed * 10 + (step or 0) + (max_entries or 7))
    clock = FakeClock(T0 + timedelta(days=seed))
    # A client whose clock lags a bucket (its own clock: the server's is `clock`'s). The server's
    # clock decides the bucket: its reads and writes are the server's bucket's.
    lagging = FakeClock(clock.now, server=False)
    options: dict[str, Any] = dict(
        window=N * MINUTE, bucket=MINUTE, aggregate=aggregate, max_entries=max_entries,
        order=order,
    )  # fmt: skip
    recent = api.rolling(key=board_key, clock=clock, **options)
    behind = api.rolling(key=board_key, clock=lagging, **options)
    if step is not None:
        r.set(f"{board_key}:window:step", step)
    model = WindowModel(N, aggregate, max_entries or 10**9, order)
    fractions = aggregate != "sum" or seed == 24
    swaps = 0
    for _ in range(220):
        roll = rng.random()
        if roll < 0.2:
            clock.advance(timedelta(seconds=rng.randrange(0, 40)))
        elif roll < 0.3:
            clock.advance(MINUTE * rng.choice([1, 1, 1, 1, 2, 3, 6]))
        lagging.now = clock.now - MINUTE
        user = f"u{rng.randrange(12)}"
        mode = rng.choice(["set", "best", "incr"])
        score = float(rng.randrange(-10, 30))
        if fractions and rng.random() < 0.2:
            score += rng.choice([0.1, 0.5, 1e-9])
        before = marker(r, board_key) if r.exists(f"{board_key}:window") else []
        action = rng.random()
        if action < 0.2:
            bucket = recent.bucket_at()
            assert recent.list_all() == model.read(bucket).list_all()
        elif action < 0.25:
            assert behind.list_all() == model.read(recent.bucket_at()).list_all()
        elif action < 0.3 and model.built is not None and model.built == recent.bucket_at():
            got = behind.submit(user, score, {"m": mode}, mode=mode)  # type: ignore[arg-type]
            assert got == model.submit(recent.bucket_at(), user, score, {"m": mode}, mode)
        else:
            got = recent.submit(user, score, {"m": mode}, mode=mode)  # type: ignore[arg-type]
            assert got == model.submit(recent.bucket_at(), user, score, {"m": mode}, mode)
        after = marker(r, board_key)
        if before and len(before) == 3 and before[2] == "r" and int(after[0]) == int(before[0]) + 1:
            swaps += 1
            assert len(after) == 3  # the swap left a window ahead (ready, or its job)
        check_ahead(r, board_key, aggregate)
    clock.advance(MINUTE)
    assert recent.list_all() == model.read(recent.bucket_at()).list_all()
    assert swaps >= (1 if step else 3)  # single-bucket changes that found the window ahead ready


@sync_and_one_loop
@pytest.mark.parametrize("aggregate", ["sum", "max", "min"])
@pytest.mark.parametrize("max_entries", [10, None])
def test_the_job_finishes_ahead_of_time_and_the_read_after_a_change_does_not_step(
    api: Api, board_key: str, r: Any, aggregate: str, max_entries: Optional[int]
) -> None:
    """Buckets of 150 users each: at each change the first read is one round trip (the swap:
    no step, no resend), the job then takes a few dozen later calls (each one round trip), and
    is done long before the next change."""
    clock = FakeClock(T0)
    order = "asc" if aggregate == "min" else "desc"
    recent = api.rolling(
        key=board_key, window=N * MINUTE, bucket=MINUTE, aggregate=aggregate,  # type: ignore[arg-type]
        max_entries=max_entries, order=order, clock=clock,  # type: ignore[arg-type]
    )  # fmt: skip
    model = WindowModel(N, aggregate, max_entries or 10**9, order)
    rng = random.Random(31)
    for change in range(7):
        for _ in range(150):
            user, points = f"p{rng.randrange(400)}", float(rng.randrange(1, 1000))
            got = recent.increment_score(user, points)
            assert got == recent._entry(
                model.submit(recent.bucket_at(), user, points, None, "incr")
            )
        # The job left by the last change is done by now: the window ahead is ready, exact.
        assert marker(r, board_key)[2:] == ["r"], change
        check_ahead(r, board_key, aggregate)
        clock.advance(MINUTE)
        calls = round_trips(api)
        top = recent.get_top(10)
        assert round_trips(api) - calls == 1  # the swap: no step, nothing sent again
        assert top == model.read(recent.bucket_at()).get_top(10)
        assert marker(r, board_key)[2][0] == "L"  # the job, not started yet
        reads = 0
        while marker(r, board_key)[2] != "r":
            calls = round_trips(api)
            assert recent.get_top(5) == model.read(recent.bucket_at()).get_top(5)
            assert round_trips(api) - calls == 1
            reads += 1
            assert reads < 60  # two buckets of at most 150 entries, ~32 a slice (max: fewer)
        check_ahead(r, board_key, aggregate)


@sync_and_one_loop
def test_no_traffic_for_a_bucket_falls_back_to_steps_and_builds_the_window_ahead_again(
    api: Api, board_key: str, r: Any
) -> None:
    """The job not done by the next change (nobody called): that change takes steps (a small
    step: several round trips), exact; then the job 'E' builds the window ahead from empty, and
    the change after is a swap again."""
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=N * MINUTE, bucket=MINUTE, clock=clock)
    model = WindowModel(N, "sum", 100)
    for minute in range(N):
        for i in range(40):
            recent.increment_score(f"p{i}", minute + i)
            model.submit(recent.bucket_at(), f"p{i}", minute + i, None, "incr")
        clock.advance(MINUTE)
    assert recent.get_size() == 40  # the swap; the job 'L' pending
    assert marker(r, board_key)[2][0] == "L"
    r.set(f"{board_key}:window:step", 20)
    clock.advance(MINUTE)  # the job never ran: steps
    calls = round_trips(api)
    assert recent.list_all() == model.read(recent.bucket_at()).list_all()
    assert round_trips(api) - calls > 3
    assert marker(r, board_key)[2][0] == "E"
    r.delete(f"{board_key}:window:step")
    while marker(r, board_key)[2] != "r":
        assert recent.get_size() == model.read(recent.bucket_at()).get_size()
    check_ahead(r, board_key, "sum")
    recent.increment_score("p1", 5)
    model.submit(recent.bucket_at(), "p1", 5, None, "incr")
    clock.advance(MINUTE)
    calls = round_trips(api)
    assert recent.list_all() == model.read(recent.bucket_at()).list_all()
    assert round_trips(api) - calls == 1


@sync_and_one_loop
@pytest.mark.parametrize("max_entries", [3, None])
def test_a_board_of_the_layout_before_the_window_ahead_is_read_then_migrates(
    api: Api, board_key: str, r: Any, max_entries: Optional[int]
) -> None:
    """A marker of two words and a union beside ":window:all" (the layout of the first issue-30
    change; an unlimited board now keeps its aggregates in the union itself): read as it is,
    the next change takes steps, then the window ahead is built and changes swap."""
    clock = FakeClock(T0)
    recent = api.rolling(
        key=board_key, window=N * MINUTE, bucket=MINUTE, max_entries=max_entries, clock=clock
    )
    model = WindowModel(N, "sum", max_entries or 10**9)
    for minute in range(N):
        for i in range(6):
            recent.increment_score(f"p{i}", minute * 3 + i)
            model.submit(recent.bucket_at(), f"p{i}", minute * 3 + i, None, "incr")
        clock.advance(MINUTE)
    clock.advance(-MINUTE)
    # The previous layout: a separate :window:all, a two-word marker, no window ahead.
    all_key = f"{board_key}:window:all"
    if max_entries is None:
        r.zunionstore(all_key, [board_key])
    r.delete(f"{board_key}:window:ahead")
    no_window_ahead(r, board_key)
    assert recent.list_all() == model.read(recent.bucket_at()).list_all()
    for _ in range(3):
        clock.advance(MINUTE)
        recent.increment_score("p0", 1)
        model.submit(recent.bucket_at(), "p0", 1, None, "incr")
        for _ in range(5):
            assert recent.list_all() == model.read(recent.bucket_at()).list_all()
        assert marker(r, board_key)[2] == "r"
        check_ahead(r, board_key, "sum")
    if max_entries is None:
        assert not r.exists(all_key)  # the union is the aggregate now
