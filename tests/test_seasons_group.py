"""One write, many boards (issue 16): LeaderboardGroup.submit is one round trip, atomic (a key of
the wrong type planted in any board: the whole write fails, nothing written anywhere), with each
board's own order, ties, max_entries and mode; differential against plain-Python models;
asyncio."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator

import pytest

import redis_leaderboard.asyncio as aio
from ranking_model import RankingModel
from redis_leaderboard import (
    LeaderboardGroup,
    PeriodicLeaderboard,
    RedisLeaderboard,
    ResponseError,
    RollingLeaderboard,
)
from window_model import WindowModel

UTC = timezone.utc
T0 = datetime(2031, 5, 4, 23, 58, tzinfo=UTC)  # keys expire by the server's real clock


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


def make_boards(client: Any, key: str, clock: FakeClock) -> dict[str, Any]:
    return {
        "alltime": RedisLeaderboard(client, key=f"{key}:alltime", max_entries=3),
        "fastest": RedisLeaderboard(
            client, key=f"{key}:fastest", max_entries=3, order="asc", ties="first"
        ),
        "daily": PeriodicLeaderboard(
            client,
            key=f"{key}:daily",
            period="day",
            tz="Europe/Amsterdam",
            clock=clock,
            ties="dense",
        ),
        "recent": RollingLeaderboard(
            client,
            key=f"{key}:recent",
            window=timedelta(hours=1),
            bucket=timedelta(minutes=10),
            max_entries=3,
            clock=clock,
        ),
    }


def snapshot(r: Any, key: str) -> dict[str, Any]:
    return {k: (r.dump(k), r.pexpiretime(k)) for k in sorted(r.keys(f"{key}*"))}


def test_one_round_trip_to_every_board_each_with_its_rules(
    client: Any, board_key: str, r: Any
) -> None:
    clock = FakeClock(T0)
    boards = make_boards(client, board_key, clock)
    group = LeaderboardGroup(client, list(boards.values()))
    out = group.submit("ada", 61.5, {"name": "Ada"}, mode="best")
    before = client.stats()["round_trips"]  # the script is cached now (a first call may EVAL)
    group.submit("ada", 61.5, mode="best")
    assert client.stats()["round_trips"] - before == 1
    assert list(out) == [b.key for b in boards.values()]
    assert out[f"{board_key}:daily"]["period"] == "2031-05-05"  # already 5 May in Amsterdam
    group.submit("bob", 58.25, {"name": "Bob"}, mode="best")
    out = group.submit("ada", 57.0, mode="best")
    # Mixed orders: 57 is better than 61.5 only where lower is better.
    assert out[f"{board_key}:alltime"]["score"] == 61.5
    assert out[f"{board_key}:alltime"]["changed"] is False
    assert out[f"{board_key}:fastest"]["score"] == 57.0
    assert out[f"{board_key}:fastest"]["previous_rank"] == 2
    assert out[f"{board_key}:fastest"]["rank"] == 1
    assert [e["user_id"] for e in boards["alltime"].get_top()] == ["ada", "bob"]
    assert [e["user_id"] for e in boards["fastest"].get_top()] == ["ada", "bob"]
    assert boards["daily"].get_top()[0]["metadata"] == {"name": "Ada"}
    assert boards["recent"].get_user_entry("ada")["score"] == 61.5
    # A mode per board: an endurance total beside the best lap.
    modes = {b.key: "best" for b in boards.values()}
    modes[f"{board_key}:recent"] = "incr"
    out = group.submit("bob", 1.0, mode=modes)  # type: ignore[arg-type]
    assert out[f"{board_key}:recent"]["score"] == 59.25
    assert out[f"{board_key}:fastest"]["score"] == 1.0
    assert out[f"{board_key}:alltime"]["score"] == 58.25
    # The periodic board's keys carry its deadline, the rolling window's metadata its bucket's.
    daily = boards["daily"].current()
    assert r.pexpiretime(f"{daily.key}:user:bob") == round(daily.expires.timestamp() * 1000)
    assert r.pexpiretime(f"{daily.key}:dense") == round(daily.expires.timestamp() * 1000)
    assert r.ttl(f"{board_key}:recent:user:bob") > 0
    assert r.ttl(f"{board_key}:alltime:user:bob") == -1


@pytest.mark.parametrize(
    "plant",
    [
        lambda r, k, rec: r.set(f"{k}:alltime", "x"),
        lambda r, k, rec: r.rpush(f"{k}:fastest:user:ada", "x"),
        lambda r, k, rec: r.set(f"{k}:fastest:first:keys", "x"),
        lambda r, k, rec: r.set(f"{k}:daily:2031-05-05:dense", "x"),
        lambda r, k, rec: r.set(rec._window.bucket_key(rec.bucket_at()), "x"),
        lambda r, k, rec: r.set(rec._window.bucket_key(rec.bucket_at() - 3), "x"),  # a rebuild's
        lambda r, k, rec: (r.delete(f"{k}:recent:window"), r.rpush(f"{k}:recent:window", "x")),
        lambda r, k, rec: r.set(f"{k}:recent:user:ada", "x"),
    ],
    ids=["board", "metadata", "option-key", "period-key", "bucket", "old-bucket", "marker", "meta"],
)
def test_a_wrong_type_anywhere_fails_the_whole_write(
    client: Any, board_key: str, r: Any, plant: Callable[[Any, str, Any], None]
) -> None:
    clock = FakeClock(T0)
    boards = make_boards(client, board_key, clock)
    group = LeaderboardGroup(client, list(boards.values()))
    group.submit("bob", 5, {"name": "Bob"})
    clock.now = T0 + timedelta(minutes=10)  # the next write rebuilds the window's union
    plant(r, board_key, boards["recent"])
    before = snapshot(r, board_key)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        group.submit("ada", 7, {"name": "Ada"}, mode="best")
    assert snapshot(r, board_key) == before


def test_refusals_before_anything_is_sent(client: Any, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    boards = make_boards(client, board_key, clock)
    group = LeaderboardGroup(client, list(boards.values()))
    with pytest.raises(ValueError, match="mode must name every board"):
        group.submit("ada", 1, mode={f"{board_key}:alltime": "set"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode must be"):
        group.submit("ada", 1, mode="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        group.submit("ada", float("nan"))
    with pytest.raises(ValueError, match="twice"):
        LeaderboardGroup(client, [boards["alltime"], boards["alltime"]])
    with pytest.raises(TypeError):
        LeaderboardGroup(client, [object()])
    with pytest.raises(TypeError):  # an asyncio board in a sync group
        LeaderboardGroup(client, [aio.RedisLeaderboard(aio.Client(), key="x")])
    # A period's board past its grace.
    late = boards["daily"].at(T0 - timedelta(days=2))
    with pytest.raises(ValueError, match="takes no writes"):
        LeaderboardGroup(client, [boards["alltime"], late]).submit("ada", 1)
    assert r.keys(f"{board_key}*") == []
    # A board recorded with other options: ValueError naming it, nothing written anywhere.
    RedisLeaderboard(client, key=f"{board_key}:alltime", ties="competition").submit("cy", 1)
    before = snapshot(r, board_key)
    with pytest.raises(ValueError, match=f"'{board_key}:alltime' has order='desc', ties='comp"):
        group.submit("ada", 1)
    assert snapshot(r, board_key) == before


def test_differential_against_models(client: Any, board_key: str) -> None:
    rng = random.Random(1616)
    clock = FakeClock(T0 - timedelta(hours=8))  # 17:58 in Amsterdam, 200 writes in ~13 hours
    boards = make_boards(client, board_key, clock)
    group = LeaderboardGroup(client, list(boards.values()))
    models: dict[str, Any] = {
        "alltime": RankingModel(max_entries=3),
        "fastest": RankingModel(max_entries=3, order="asc", ties="first"),
        "recent": WindowModel(buckets=6, max_entries=3),
    }
    daily_models: dict[str, RankingModel] = {}
    for _ in range(200):
        clock.now += timedelta(minutes=rng.randrange(0, 9))
        user = f"u{rng.randrange(6)}"
        score = float(rng.randrange(0, 40))
        modes = {name: rng.choice(["set", "best", "incr"]) for name in boards}
        meta = {"n": str(rng.randrange(3))}
        out = group.submit(user, score, meta, mode={boards[n].key: m for n, m in modes.items()})
        expected = {
            "alltime": models["alltime"].submit(user, score, meta, mode=modes["alltime"]),
            "fastest": models["fastest"].submit(user, score, meta, mode=modes["fastest"]),
            "recent": models["recent"].submit(
                boards["recent"].bucket_at(), user, score, meta, modes["recent"]
            ),
        }
        period = boards["daily"].period_id()
        daily = daily_models.setdefault(period, RankingModel(max_entries=100, ties="dense"))
        expected["daily"] = {
            **daily.submit(user, score, meta, mode=modes["daily"]),
            "period": period,
        }
        assert out == {boards[n].key: expected[n] for n in boards}
    assert len(daily_models) >= 2  # the group crossed midnight in Amsterdam


def test_asyncio_twin(redis_server: Any, board_key: str, r: Any) -> None:
    async def main() -> None:
        async with aio.Client(host=redis_server.host, port=redis_server.port) as aclient:
            clock = FakeClock(T0)
            alltime = aio.RedisLeaderboard(aclient, key=f"{board_key}:alltime")
            daily = aio.PeriodicLeaderboard(aclient, key=f"{board_key}:daily", clock=clock)
            recent = aio.RollingLeaderboard(
                aclient, key=f"{board_key}:recent", window=timedelta(hours=1),
                bucket=timedelta(minutes=10), clock=clock,
            )  # fmt: skip
            group = aio.LeaderboardGroup(aclient, [alltime, daily, recent])
            out = await group.submit("ada", 3, {"name": "Ada"}, mode="incr")
            assert [v["score"] for v in out.values()] == [3.0, 3.0, 3.0]
            assert out[f"{board_key}:daily"]["period"] == "2031-05-04"
            r.set(f"{board_key}:recent", "x")
            before = snapshot(r, board_key)
            with pytest.raises(ResponseError, match="WRONGTYPE"):
                await group.submit("ada", 3, mode="incr")
            assert snapshot(r, board_key) == before
            with pytest.raises(TypeError):
                aio.LeaderboardGroup(aclient, [RedisLeaderboard(key="x")])

    asyncio.run(main())
