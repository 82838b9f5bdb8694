"""Submission ids on group writes and rolling windows (issue 17 on issue 16's writes): a user
retrying a write after a timeout. Each board of a group applies the id once, as its own submit()
with that id would, all in the one atomic script; a rolling window's id is the window's, whatever
the bucket. A repeat writes nothing and returns the stored results with duplicate=True; a lost
reply is resent (at most ``retries`` times); a write that fails (a planted WRONGTYPE key) stores
no id and writes nothing anywhere."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import pytest

import redis_leaderboard as redis_leaderboard_sync
import redis_leaderboard.asyncio as aio
from redis_leaderboard import (
    Client,
    LeaderboardGroup,
    PeriodicLeaderboard,
    RedisLeaderboard,
    ResponseError,
    RollingLeaderboard,
    SubmissionIdReused,
)
from test_guards import ReplyDropper

UTC = timezone.utc


def clear_of_midnight() -> datetime:
    """Now, or 40 minutes earlier within 40 minutes of a UTC midnight: the tests move the clock
    by up to 30 minutes and expect the daily board's period to stay the same (a resend across
    the boundary is test_submission_ownership.py's). Near now: the keys' deadlines are real."""
    now = datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return now - timedelta(minutes=40) if midnight - now < timedelta(minutes=40) else now


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def r(redis_server: Any) -> Iterator[Any]:
    client = redis_server.redis_py()
    yield client
    client.close()


def make_boards(api: Any, client: Any, key: str, clock: FakeClock) -> list[Any]:
    return [
        api.RedisLeaderboard(client, key=f"{key}:alltime", max_entries=10),
        api.RedisLeaderboard(client, key=f"{key}:fastest", order="asc", ties="first"),
        api.PeriodicLeaderboard(client, key=f"{key}:daily", period="day", clock=clock),
        api.RollingLeaderboard(
            client,
            key=f"{key}:recent",
            window=timedelta(hours=1),
            bucket=timedelta(minutes=10),
            clock=clock,
            submission_ttl=60,
        ),
    ]


def snapshot(r: Any, key: str) -> dict[str, Any]:
    return {k: (r.dump(k), r.pttl(k) > 0) for k in sorted(r.keys(f"{key}*"))}


def scores(r: Any, boards: list[Any], user: str) -> list[Any]:
    keys = [b.current().key if isinstance(b, PeriodicLeaderboard) else b.key for b in boards]
    return [r.zscore(k, user) for k in keys]


def test_a_repeated_group_write_returns_the_stored_results(
    client: Any, board_key: str, r: Any
) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = make_boards(redis_leaderboard_sync, client, board_key, clock)
    group = LeaderboardGroup(client, boards)
    first = group.submit("ada", 5, {"team": "red"}, mode="incr", submission_id="match-1")
    assert [res["duplicate"] for res in first.values()] == [False] * 4
    group.submit("bob", 9, mode="incr")
    clock.now += timedelta(minutes=10)  # the window's next bucket: the id is the window's
    again = group.submit("ada", 5, {"team": "red"}, mode="incr", submission_id="match-1")
    assert again == {k: {**res, "duplicate": True} for k, res in first.items()}
    # The id belongs to one payload: another one raises and changes nothing.
    before = snapshot(r, board_key)
    with pytest.raises(redis_leaderboard_sync.SubmissionIdReused, match="another score"):
        group.submit("ada", 5, {"team": "blue"}, mode="incr", submission_id="match-1")
    assert snapshot(r, board_key) == before
    assert scores(r, boards, "ada") == [5.0, 5.0, 5.0, 5.0]
    assert boards[0].get_user_metadata("ada") == {"team": "red"}
    # Each board's id lives under that board, for that board's submission_ttl; a periodic
    # board's under its own key, whatever the period.
    assert 86_000_000 < r.pttl(f"{board_key}:alltime:submission:match-1") <= 86_400_000
    assert 0 < r.pttl(f"{board_key}:recent:submission:match-1") <= 60_000
    assert r.exists(f"{boards[2].key}:submission:match-1")
    # Without an id there is no "duplicate" key: the shape is unchanged.
    assert all("duplicate" not in res for res in group.submit("cy", 1).values())


def test_a_board_that_applied_the_id_alone_replies_its_stored_result(
    client: Any, board_key: str
) -> None:
    alltime = RedisLeaderboard(client, key=f"{board_key}:alltime")
    weekly = RedisLeaderboard(client, key=f"{board_key}:weekly")
    alone = alltime.submit("ada", 3, mode="incr", submission_id="m")
    out = LeaderboardGroup(client, [alltime, weekly]).submit(
        "ada", 3, mode="incr", submission_id="m"
    )
    assert out[alltime.key] == {**alone, "duplicate": True}
    assert out[weekly.key]["duplicate"] is False and out[weekly.key]["score"] == 3.0
    assert alltime.get_user_entry("ada")["score"] == 3.0  # type: ignore[index]


def test_a_rolling_windows_repeated_write_returns_the_stored_result(
    client: Any, board_key: str, r: Any
) -> None:
    clock = FakeClock(clear_of_midnight())
    recent = RollingLeaderboard(
        client, key=board_key, window=timedelta(hours=1), bucket=timedelta(minutes=5), clock=clock
    )
    assert recent.submission_ttl == 86400
    first = recent.submit("ada", 4, {"n": "a"}, mode="incr", submission_id="s-1")
    assert first["duplicate"] is False and first["score"] == 4.0
    recent.increment_score("ada", 1)
    clock.now += timedelta(minutes=5)
    again = recent.submit("ada", 4, {"n": "a"}, mode="incr", submission_id="s-1")
    assert again == {**first, "duplicate": True}
    with pytest.raises(SubmissionIdReused):  # without the metadata: another payload
        recent.submit("ada", 4, mode="incr", submission_id="s-1")
    with pytest.raises(SubmissionIdReused, match="another user"):
        recent.submit("bob", 4, {"n": "a"}, mode="incr", submission_id="s-1")
    assert recent.get_user_entry("ada")["score"] == 5.0  # type: ignore[index]
    assert 0 < r.pttl(f"{board_key}:submission:s-1") <= 86_400_000


def test_the_same_id_from_8_threads_applies_once(client: Any, board_key: str, r: Any) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = make_boards(redis_leaderboard_sync, client, board_key, clock)
    group = LeaderboardGroup(client, boards)
    results: list[dict[str, Any]] = []
    windowed: list[dict[str, Any]] = []

    def worker() -> None:
        for _ in range(40):
            results.append(group.submit("u", 1, mode="incr", submission_id="once"))
            windowed.append(boards[3].submit("w", 1, mode="incr", submission_id="w-once"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 320
    firsts = [res for res in results if not any(v["duplicate"] for v in res.values())]
    assert len(firsts) == 1
    assert all(all(v["duplicate"] for v in res.values()) for res in results if res is not firsts[0])
    assert scores(r, boards, "u") == [1.0, 1.0, 1.0, 1.0]
    assert sum(not res["duplicate"] for res in windowed) == 1
    assert boards[3].get_user_entry("w")["score"] == 1.0


def test_the_same_id_from_300_tasks_applies_once(redis_server: Any, board_key: str, r: Any) -> None:
    async def main() -> tuple[list[Any], list[Any], list[Any]]:
        async with aio.Client(host=redis_server.host, port=redis_server.port) as aclient:
            clock = FakeClock(clear_of_midnight())
            boards = make_boards(aio, aclient, board_key, clock)
            group = aio.LeaderboardGroup(aclient, boards)

            async def task() -> tuple[Any, Any]:
                return (
                    await group.submit("u", 2, mode="incr", submission_id="once"),
                    await boards[3].submit("w", 2, mode="incr", submission_id="w-once"),
                )

            pairs = await asyncio.gather(*(task() for _ in range(300)))
            keys = [b.current().key if hasattr(b, "current") else b.key for b in boards]
            return [p[0] for p in pairs], [p[1] for p in pairs], keys

    grouped, windowed, keys = asyncio.run(main())
    assert sum(not any(v["duplicate"] for v in res.values()) for res in grouped) == 1
    assert sum(all(v["duplicate"] for v in res.values()) for res in grouped) == 299
    assert [r.zscore(k, "u") for k in keys] == [2.0, 2.0, 2.0, 2.0]
    assert sum(not res["duplicate"] for res in windowed) == 1
    assert r.zscore(f"{board_key}:recent", "w") == 2.0


@pytest.mark.parametrize(
    "plant",
    [
        lambda k, rec: f"{k}:fastest:submission:m",  # the id's own key
        lambda k, rec: f"{k}:recent:submission:m",
        lambda k, rec: rec._window.bucket_key(rec.bucket_at()),
        lambda k, rec: f"{k}:recent:user:ada",
    ],
    ids=["board-id-key", "window-id-key", "window-bucket", "window-metadata"],
)
def test_a_refused_write_with_an_id_writes_nothing_and_stores_no_id(
    client: Any, board_key: str, r: Any, plant: Any
) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = make_boards(redis_leaderboard_sync, client, board_key, clock)
    group = LeaderboardGroup(client, boards)
    group.submit("bob", 1)  # every board exists
    planted = plant(board_key, boards[3])
    r.delete(planted)
    r.rpush(planted, "x")
    before = snapshot(r, board_key)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        group.submit("ada", 5, {"n": "a"}, mode="incr", submission_id="m")
    assert snapshot(r, board_key) == before  # nothing anywhere: no score, no id stored
    if "recent" in planted:
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            boards[3].submit("ada", 5, mode="incr", submission_id="m")
        assert snapshot(r, board_key) == before
    # Once the key is gone the id applies: nothing had been recorded under it.
    r.delete(planted)
    out = group.submit("ada", 5, mode="incr", submission_id="m")
    assert [res["duplicate"] for res in out.values()] == [False] * 4
    assert scores(r, boards, "ada") == [5.0, 5.0, 5.0, 5.0]


@pytest.mark.parametrize("flavour", ["sync", "asyncio"])
def test_a_lost_group_reply_is_resent_and_applies_once(
    redis_server: Any, board_key: str, r: Any, flavour: str
) -> None:
    clock = FakeClock(clear_of_midnight())
    warm = Client(host=redis_server.host, port=redis_server.port)
    LeaderboardGroup(warm, make_boards(redis_leaderboard_sync, warm, board_key, clock)).submit(
        "warm", 1
    )  # the script is cached: the first attempt runs, not NOSCRIPT
    warm.close()
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        if flavour == "sync":
            client = Client(port=proxy.port, socket_timeout=5)
            boards = make_boards(redis_leaderboard_sync, client, board_key, clock)
            out = LeaderboardGroup(client, boards).submit("u", 7, mode="incr", submission_id="lost")
            client.close()
        else:

            async def main() -> dict[str, Any]:
                async with aio.Client(port=proxy.port, socket_timeout=5) as aclient:
                    boards = make_boards(aio, aclient, board_key, clock)
                    group = aio.LeaderboardGroup(aclient, boards)
                    return await group.submit("u", 7, mode="incr", submission_id="lost")

            out = asyncio.run(main())
    finally:
        proxy.close()
    assert proxy.dropped == 1
    # The first attempt applied (its reply was lost); the resend found the stored results.
    assert all(res["duplicate"] is True and res["score"] == 7.0 for res in out.values())
    check = Client(host=redis_server.host, port=redis_server.port)
    assert scores(r, make_boards(redis_leaderboard_sync, check, board_key, clock), "u") == [7.0] * 4
    check.close()


def test_bad_ids_raise_before_anything_is_sent(client: Any, board_key: str, r: Any) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = make_boards(redis_leaderboard_sync, client, board_key, clock)
    group = LeaderboardGroup(client, boards)
    with pytest.raises(ValueError):
        group.submit("u", 1, submission_id="")
    with pytest.raises(TypeError):
        group.submit("u", 1, submission_id=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        group.submit("u", 1, submission_id="x", retries=-1)
    with pytest.raises(ValueError):
        boards[3].submit("u", 1, submission_id="")
    with pytest.raises(ValueError):
        RollingLeaderboard(client, key=board_key, submission_ttl=0)
    assert r.keys(f"{board_key}*") == []
