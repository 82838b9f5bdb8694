"""Rolling windows, sync and asyncio: a score leaves the window exactly when its bucket does
(injected clock, key deadlines checked, no sleeping), every read of the guide and of the queries
on the window with metadata, one round trip per read, aggregates and orders, and a differential
test against a plain-Python model (window_model.py)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from apis import Api, sync_and_one_loop
from helpers import UTC, FakeClock, millis
from redis_leaderboard import ResponseError
from window_model import WindowModel

MINUTE = timedelta(minutes=1)
# Keys expire by the server's real clock: the injected clocks run in the future.
T0 = datetime(2031, 5, 4, 12, 0, tzinfo=UTC)


def scores(board: Any) -> list[tuple[str, float]]:
    return [(e["user_id"], e["score"]) for e in board.list_all()]


def test_a_score_leaves_the_window_exactly_when_its_bucket_does(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=3 * MINUTE, bucket=MINUTE, clock=clock)
    first = recent.bucket_at()
    assert recent.bucket_start(first) == T0
    recent.increment_score("ada", 1, {"name": "Ada"})
    clock.advance(MINUTE)
    recent.increment_score("ada", 2)
    recent.increment_score("bob", 5, {"name": "Bob"})
    clock.advance(MINUTE)
    assert recent.increment_score("ada", 4)["score"] == 7.0
    assert scores(recent) == [("ada", 7.0), ("bob", 5.0)]
    # Each bucket expires one bucket after it left the window: (i + 1) * bucket + window.
    for i in range(3):
        deadline = millis(T0 + (i + 1) * MINUTE + 3 * MINUTE)
        assert r.pexpiretime(f"{board_key}:bucket:{first + i}") == deadline
    # A user's metadata lives as long as their newest bucket.
    assert r.pexpiretime(f"{board_key}:user:ada") == millis(T0 + 3 * MINUTE + 3 * MINUTE)
    assert r.pexpiretime(f"{board_key}:user:bob") == millis(T0 + 2 * MINUTE + 3 * MINUTE)

    clock.now = T0 + 3 * MINUTE - timedelta(milliseconds=1)  # the first bucket's last instant
    assert scores(recent) == [("ada", 7.0), ("bob", 5.0)]
    clock.now = T0 + 3 * MINUTE  # the window now starts with the second bucket
    assert recent.window_start() == T0 + MINUTE
    assert scores(recent) == [("ada", 6.0), ("bob", 5.0)]
    clock.advance(MINUTE)  # the second bucket leaves: bob's only score, and 2 of ada's
    assert scores(recent) == [("ada", 4.0)]
    assert recent.get_user_entry("bob") is None
    assert recent.get_user_metadata("bob") == {"name": "Bob"}  # until its bucket expires
    clock.advance(MINUTE)
    assert scores(recent) == []
    assert recent.get_size() == 0
    # The deadlines do the rest: no score or metadata outlives the window by more than a
    # bucket; the (empty) window's marker lives as long as the window the reader built.
    keys = r.keys(f"{board_key}*")
    assert max(r.pexpiretime(k) for k in keys if ":window" not in k) == millis(T0 + 6 * MINUTE)
    assert r.pexpiretime(f"{board_key}:window") == millis(T0 + 6 * MINUTE + 3 * MINUTE)


def test_every_read_sees_the_window_with_metadata(api: Api, board_key: str) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(
        key=board_key, window=timedelta(hours=2), bucket=timedelta(minutes=10),
        clock=clock,
    )  # fmt: skip
    model = WindowModel(buckets=12)
    rng = random.Random(3)
    for step in range(60):
        clock.advance(timedelta(minutes=rng.randrange(0, 7)))
        user = f"player-{rng.randrange(12)}"
        points = rng.randrange(1, 50)
        meta = {"name": user.title(), "step": step}
        assert recent.submit(user, points, meta, mode="incr") == model.submit(
            recent.bucket_at(), user, points, meta, "incr"
        )
    board = model.read(recent.bucket_at())
    assert recent.get_top(5) == board.get_top(5)
    assert recent.get_around_rank(4, 3) == board.get_around_rank(4, 3)
    assert recent.list_all() == board.list_all()
    assert recent.get_size() == board.get_size()
    for user in ["player-1", "player-7", "nobody"]:
        assert recent.get_rank(user) == board.get_rank(user)
        assert recent.get_user_entry(user) == board.get_user_entry(user)
        assert recent.get_around_user(user, 3) == board.get_around_user(user, 3)
        assert recent.get_percentile(user) == board.get_percentile(user)
    assert recent.get_user_metadata("player-1") == model.metadata["player-1"]
    assert recent.get_entries(["player-2", "nobody", "player-3"]) == board.get_entries(
        ["player-2", "nobody", "player-3"]
    )
    assert recent.get_page(2, 4) == board.get_page(2, 4)
    assert recent.get_by_score(20, 120, offset=1, limit=3) == board.get_by_score(
        20, 120, offset=1, limit=3
    )
    assert recent.count_by_score(50, 1e9) == board.count_by_score(50, 1e9)
    assert recent.rank_for_score(60) == board.rank_for_score(60)
    assert recent.score_at_percentile(50) == board.score_at_percentile(50)
    assert recent.get_histogram(4) == board.get_histogram(4)


def test_a_read_is_one_round_trip_and_rebuilds_once_per_bucket(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=5 * MINUTE, bucket=MINUTE, clock=clock)
    recent.submit("ada", 3)
    recent.get_size()  # the scripts are cached now
    clock.advance(MINUTE)
    before = api.client.stats()["round_trips"]
    recent.get_top()
    assert api.client.stats()["round_trips"] - before == 1
    # The marker: the bucket, the sums' flag, the window ahead's state (issue 30).
    assert r.get(f"{board_key}:window").split()[:2] == [str(recent.bucket_at()), "0"]
    # Between bucket changes a read only checks the marker: a union changed behind its back
    # stays; at a bucket change the window ahead becomes the window, the union refilled from it.
    r.zadd(board_key, {"planted": 99})
    assert recent.get_top()[0]["user_id"] == "planted"
    clock.advance(MINUTE)
    assert [e["user_id"] for e in recent.get_top()] == ["ada"]
    r.delete(f"{board_key}:window")  # a window without its marker starts afresh: rebuilt
    assert [e["user_id"] for e in recent.get_top()] == ["ada"]
    # A reader whose clock lags never rebuilds an older window over a newer one.
    lagging = api.rolling(
        key=board_key, window=5 * MINUTE, bucket=MINUTE,
        clock=lambda: T0 - timedelta(hours=1),
    )  # fmt: skip
    assert lagging.get_top() == recent.get_top()
    assert r.get(f"{board_key}:window").split()[:2] == [str(recent.bucket_at()), "0"]


@pytest.mark.parametrize(
    ("aggregate", "order", "mode", "expected"),
    [
        ("max", "desc", "best", [("bob", 9.0), ("ada", 7.0)]),
        ("min", "asc", "best", [("ada", 2.0), ("bob", 4.0)]),  # fastest lap of the window
        ("sum", "asc", "incr", [("bob", 13.0), ("ada", 14.0)]),
    ],
)
def test_aggregates_and_orders(
    api: Api, board_key: str, aggregate: str, order: str, mode: str, expected: list[Any]
) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(
        key=board_key, window=2 * MINUTE, bucket=MINUTE,
        aggregate=aggregate, order=order, clock=clock,  # type: ignore[arg-type]
    )  # fmt: skip
    for bucket_writes in ([("ada", 5), ("bob", 4), ("ada", 2)], [("ada", 7), ("bob", 9)]):
        for user, score in bucket_writes:
            recent.submit(user, score, mode=mode)  # type: ignore[arg-type]
        clock.advance(MINUTE)
    clock.advance(-MINUTE)
    assert scores(recent) == expected
    assert recent.get_rank(expected[0][0]) == 1


def test_max_entries_trims_the_window_not_the_buckets(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(
        key=board_key, window=3 * MINUTE, bucket=MINUTE, max_entries=2, clock=clock
    )
    recent.increment_score("ada", 5, {"name": "Ada"})
    recent.increment_score("bob", 4)
    result = recent.increment_score("cy", 3)
    assert result["trimmed_user_ids"] == ["cy"] and "rank" not in result
    clock.advance(MINUTE)
    assert recent.increment_score("cy", 3)["rank"] == 1  # 3 + 3 from its buckets
    assert scores(recent) == [("cy", 6.0), ("ada", 5.0)]
    assert recent.get_user_metadata("ada") == {"name": "Ada"}
    assert r.zscore(f"{board_key}:bucket:{recent.bucket_at() - 1}", "bob") == 4.0


def test_a_write_refused_changes_nothing(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=3 * MINUTE, bucket=MINUTE, clock=clock)
    recent.submit("ada", 1, {"name": "Ada"})
    clock.advance(MINUTE)  # the next write rebuilds the union, reading every bucket
    r.set(f"{board_key}:bucket:{recent.bucket_at() - 2}", "not a sorted set")
    snapshot = {k: r.dump(k) for k in r.keys(f"{board_key}*")}
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        recent.submit("bob", 2, {"name": "Bob"})
    assert {k: r.dump(k) for k in r.keys(f"{board_key}*")} == snapshot
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        recent.get_top()


def test_a_write_that_counts_the_buckets_checks_them_first(
    api: Api, board_key: str, r: Any
) -> None:
    """A write that lowers a user's score in a bucket of a max window counts its other buckets
    (its window score may have come from that bucket), and a bucket of another type there fails
    it before anything is written; a write that raises it reads only the window's aggregates."""
    clock = FakeClock(T0)
    recent = api.rolling(
        key=board_key, window=3 * MINUTE, bucket=MINUTE, aggregate="max", clock=clock
    )
    recent.upsert_user("ada", 9)
    clock.advance(MINUTE)
    recent.upsert_user("ada", 5)
    r.delete(f"{board_key}:bucket:{recent.bucket_at() - 1}")
    r.rpush(f"{board_key}:bucket:{recent.bucket_at() - 1}", "x")
    snapshot = {k: r.dump(k) for k in r.keys(f"{board_key}*")}
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        recent.upsert_user("ada", 3, {"name": "Ada"})
    assert {k: r.dump(k) for k in r.keys(f"{board_key}*")} == snapshot
    assert recent.upsert_user("ada", 7)["score"] == 9.0  # no count needed: max(9, 7)
    for method in ("set_max_entries", "upsert_many"):
        with pytest.raises(TypeError, match="rolling window"):
            getattr(recent, method)([] if method == "upsert_many" else 5)
    with pytest.raises(ValueError, match="whole number of buckets"):
        api.rolling(key=board_key, window=90 * timedelta(seconds=1), bucket=MINUTE)
    with pytest.raises(ValueError, match="aggregate"):
        api.rolling(key=board_key, aggregate="avg")  # type: ignore[arg-type]


def test_delete_user_and_clear(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=3 * MINUTE, bucket=MINUTE, clock=clock)
    for user in ("ada", "bob", "cy"):
        recent.increment_score(user, 1, {"name": user})
        clock.advance(MINUTE)
        recent.increment_score(user, 1)
    assert recent.delete_user("bob") is True
    assert recent.delete_user("bob") is False
    assert [u for u, _ in scores(recent)] == ["cy", "ada"]
    assert not [k for k in r.keys(f"{board_key}*") if "bob" in k]
    assert not any(r.zscore(k, "bob") for k in r.keys(f"{board_key}:bucket:*"))
    recent.clear()
    assert r.keys(f"{board_key}*") == []


@sync_and_one_loop
def test_differential_against_a_model(api: Api, board_key: str) -> None:
    """Random writes (every mode, small max_entries, negative increments) at random times: each
    result and the window's board after each step as the model says."""
    for seed, aggregate, order in [(1, "sum", "desc"), (2, "max", "desc"), (3, "min", "asc")]:
        rng = random.Random(seed)
        clock = FakeClock(T0 + timedelta(days=seed))
        key = f"{board_key}:{seed}"
        recent = api.rolling(
            key=key, window=4 * MINUTE, bucket=MINUTE, aggregate=aggregate,  # type: ignore[arg-type]
            max_entries=4, order=order, clock=clock,  # type: ignore[arg-type]
        )  # fmt: skip
        model = WindowModel(4, aggregate, 4, order)
        for _ in range(150):
            clock.advance(timedelta(seconds=rng.randrange(0, 40)))
            user = f"u{rng.randrange(7)}"
            mode = rng.choice(["set", "best", "incr"])
            score = float(rng.randrange(-10, 30))
            if rng.random() < 0.2:
                bucket = recent.bucket_at()
                assert recent.list_all() == model.read(bucket).list_all()
                continue
            got = recent.submit(user, score, {"m": mode}, mode=mode)  # type: ignore[arg-type]
            assert got == model.submit(recent.bucket_at(), user, score, {"m": mode}, mode)


def test_a_window_of_two_buckets_end_to_end(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    recent = api.rolling(key=board_key, window=2 * MINUTE, bucket=MINUTE, clock=clock)
    assert recent.increment_score("ada", 2, {"n": "a"})["score"] == 2.0
    recent.upsert_user("bob", 1)
    clock.advance(MINUTE)
    recent.increment_score("ada", 3)
    assert recent.submit("bob", 9, mode="best")["score"] == 10.0
    assert [e["user_id"] for e in recent.get_top()] == ["bob", "ada"]
    clock.advance(MINUTE)
    assert recent.get_top() == [
        {"rank": 1, "user_id": "bob", "score": 9.0, "metadata": {}},
        {"rank": 2, "user_id": "ada", "score": 3.0, "metadata": {"n": "a"}},
    ]
    assert recent.get_page(1, 1)["total_pages"] == 2
    assert recent.delete_user("ada")
    with pytest.raises(TypeError):
        recent.upsert_many([])
    recent.clear()
    assert r.keys(f"{board_key}*") == []
