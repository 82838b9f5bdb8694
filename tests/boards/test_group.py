"""One write, many boards: LeaderboardGroup.submit is one round trip, atomic (a key of the wrong
type planted in any board: the whole write fails, nothing written anywhere), with each board's
own order, ties, max_entries and mode; differential against plain-Python models; sync and
asyncio. (A group's submission ids, rate limits and events: tests/boards/test_submission_ids.py,
test_rate_limits.py, test_events.py.)"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any, Callable

import pytest

from apis import Api, sync_and_one_loop, unwrap
from helpers import UTC, FakeClock, metadata_keys, snapshot
from ranking_model import RankingModel
from redis_leaderboard import ResponseError
from window_model import WindowModel

T0 = datetime(2031, 5, 4, 23, 58, tzinfo=UTC)  # keys expire by the server's real clock


def make_boards(api: Api, key: str, clock: FakeClock) -> dict[str, Any]:
    return {
        "alltime": api.leaderboard(key=f"{key}:alltime", max_entries=3),
        "fastest": api.leaderboard(key=f"{key}:fastest", max_entries=3, order="asc", ties="first"),
        "daily": api.periodic(
            key=f"{key}:daily",
            period="day",
            tz="Europe/Amsterdam",
            clock=clock,
            ties="dense",
        ),
        "recent": api.rolling(
            key=f"{key}:recent",
            window=timedelta(hours=1),
            bucket=timedelta(minutes=10),
            max_entries=3,
            clock=clock,
        ),
    }


def test_one_round_trip_to_every_board_each_with_its_rules(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(T0)
    boards = make_boards(api, board_key, clock)
    group = api.group(list(boards.values()))
    out = group.submit("ada", 61.5, {"name": "Ada"}, mode="best")
    before = api.client.stats()["round_trips"]  # the script is cached now (a first may EVAL)
    group.submit("ada", 61.5, mode="best")
    assert api.client.stats()["round_trips"] - before == 1
    # Keyed by the board objects given, in the group's order; a board's key finds its result.
    assert list(out) == [unwrap(b) for b in boards.values()]
    assert out[unwrap(boards["daily"])]["period"] == "2031-05-05"  # already 5 May in Amsterdam
    assert out[f"{board_key}:daily"] is out[unwrap(boards["daily"])]
    assert list(out.by_key()) == [b.key for b in boards.values()]
    assert unwrap(boards["daily"]) in out and f"{board_key}:daily" in out and "x" not in out
    with pytest.raises(KeyError):
        out[api.leaderboard(key=f"{board_key}:daily")]  # the same key, another board object
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
    deadline = round(daily.expires.timestamp() * 1000)
    (daily_metadata,) = metadata_keys(daily, ["bob"])  # the layout's: bob's hash, or the board's
    assert r.pexpiretime(daily_metadata) == deadline
    assert r.pexpiretime(f"{daily.key}:dense") == deadline
    assert r.ttl(f"{board_key}:recent:user:bob") > 0
    (alltime_metadata,) = metadata_keys(boards["alltime"], ["bob"])
    assert r.ttl(alltime_metadata) == -1


def replace_with_list(r: Any, name: str) -> None:
    """``name`` (ada's metadata hash, or the compact board's, which holds bob's) made a list."""
    r.delete(name)
    r.rpush(name, "x")


@pytest.mark.parametrize(
    "plant",
    [
        lambda r, k, rec: r.set(f"{k}:alltime", "x"),
        lambda r, k, rec: replace_with_list(r, *metadata_keys(f"{k}:fastest", ["ada"])),
        lambda r, k, rec: r.set(f"{k}:fastest:first:keys", "x"),
        lambda r, k, rec: r.set(f"{k}:daily:2031-05-05:dense", "x"),
        lambda r, k, rec: r.set(f"{k}:recent:bucket:{rec.bucket_at()}", "x"),
        # The bucket that leaves at the change: the window ahead's job subtracts it.
        lambda r, k, rec: r.set(f"{k}:recent:bucket:{rec.bucket_at() - 6}", "x"),
        lambda r, k, rec: (r.delete(f"{k}:recent:window"), r.rpush(f"{k}:recent:window", "x")),
        lambda r, k, rec: r.set(f"{k}:recent:user:ada", "x"),
    ],
    ids=["board", "metadata", "option-key", "period-key", "bucket", "old-bucket", "marker", "meta"],
)
def test_a_wrong_type_anywhere_fails_the_whole_write(
    api: Api, board_key: str, r: Any, plant: Callable[[Any, str, Any], None]
) -> None:
    clock = FakeClock(T0)
    boards = make_boards(api, board_key, clock)
    group = api.group(list(boards.values()))
    group.submit("bob", 5, {"name": "Bob"})
    clock.now = T0 + timedelta(minutes=10)  # the next write rebuilds the window's union
    plant(r, board_key, boards["recent"])
    before = snapshot(r, board_key)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        group.submit("ada", 7, {"name": "Ada"}, mode="best")
    assert snapshot(r, board_key) == before


def test_refusals_before_anything_is_sent(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    boards = make_boards(api, board_key, clock)
    group = api.group(list(boards.values()))
    with pytest.raises(ValueError, match="mode must name every board"):
        group.submit("ada", 1, mode={f"{board_key}:alltime": "set"})  # type: ignore[arg-type]
    every = {unwrap(b): "set" for b in boards.values()}
    with pytest.raises(ValueError, match=r"named twice \['.*:alltime'\]"):
        group.submit("ada", 1, mode={**every, f"{board_key}:alltime": "best"})
    stranger = unwrap(api.leaderboard(key=f"{board_key}:alltime"))  # not the group's object
    with pytest.raises(ValueError, match="unknown"):
        group.submit("ada", 1, mode={**every, stranger: "set"})
    with pytest.raises(ValueError, match="mode must be"):
        group.submit("ada", 1, mode="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        group.submit("ada", float("nan"))
    with pytest.raises(ValueError, match="twice"):
        api.group([boards["alltime"], boards["alltime"]])
    with pytest.raises(TypeError):
        api.group([object()])
    with pytest.raises(TypeError):  # a board of the other API (asyncio in sync, and the reverse)
        api.group([api.other_module.RedisLeaderboard(api.other_module.Client(), key="x")])
    # A period's board past its grace.
    late = boards["daily"].at(T0 - timedelta(days=2))
    with pytest.raises(ValueError, match="takes no writes"):
        api.group([boards["alltime"], late]).submit("ada", 1)
    assert r.keys(f"{board_key}*") == []
    # A board recorded with other options: ValueError naming it, nothing written anywhere.
    api.leaderboard(key=f"{board_key}:alltime", ties="competition").submit("cy", 1)
    before = snapshot(r, board_key)
    with pytest.raises(ValueError, match=f"'{board_key}:alltime' has order='desc', ties='comp"):
        group.submit("ada", 1)
    assert snapshot(r, board_key) == before


@sync_and_one_loop
def test_differential_against_models(api: Api, board_key: str) -> None:
    rng = random.Random(1616)
    clock = FakeClock(T0 - timedelta(hours=8))  # 17:58 in Amsterdam, 200 writes in ~13 hours
    boards = make_boards(api, board_key, clock)
    group = api.group(list(boards.values()))
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
        # Modes by board object or by key, as the round draws.
        named = {n: unwrap(boards[n]) if rng.random() < 0.5 else boards[n].key for n in boards}
        out = group.submit(user, score, meta, mode={named[n]: m for n, m in modes.items()})
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
        assert out.by_key() == {boards[n].key: expected[n] for n in boards}
        assert out == {unwrap(boards[n]): expected[n] for n in boards}
    assert len(daily_models) >= 2  # the group crossed midnight in Amsterdam


def test_a_group_of_default_boards(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    alltime = api.leaderboard(key=f"{board_key}:alltime")
    daily = api.periodic(key=f"{board_key}:daily", clock=clock)
    recent = api.rolling(
        key=f"{board_key}:recent", window=timedelta(hours=1), bucket=timedelta(minutes=10),
        clock=clock,
    )  # fmt: skip
    group = api.group([alltime, daily, recent])
    out = group.submit("ada", 3, {"name": "Ada"}, mode="incr")
    assert [v["score"] for v in out.values()] == [3.0, 3.0, 3.0]
    assert out[f"{board_key}:daily"]["period"] == "2031-05-04"
    r.set(f"{board_key}:recent", "x")
    before = snapshot(r, board_key)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        group.submit("ada", 3, mode="incr")
    assert snapshot(r, board_key) == before
