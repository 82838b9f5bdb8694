"""The boards are written once (redis_leaderboard.boards: one-trip methods and plans) and run
by a sync and an asyncio driver (redis_leaderboard._drive): the two APIs have the same methods,
plain on one side and coroutines on the other, at the cost of hand-written ones; a period's
board is built once; current() follows the clock across boundaries."""

from __future__ import annotations

import asyncio
import dis
import inspect
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import redis_leaderboard.asyncio as aio
from helpers import FakeClock
from redis_leaderboard import (
    LeaderboardGroup,
    PeriodicLeaderboard,
    RedisLeaderboard,
    RollingLeaderboard,
)
from redis_leaderboard._drive import one_trip, plan
from redis_leaderboard.seasons import PeriodBoard

UTC = timezone.utc
PAIRS = [
    (RedisLeaderboard, aio.RedisLeaderboard),
    (PeriodicLeaderboard, aio.PeriodicLeaderboard),
    (PeriodBoard, aio.PeriodicLeaderboard._board_class),
    (RollingLeaderboard, aio.RollingLeaderboard),
    (LeaderboardGroup, aio.LeaderboardGroup),
]


def public_methods(cls: type) -> dict[str, Any]:
    return {
        name: inspect.getattr_static(cls, name)
        for name in dir(cls)
        if not name.startswith("_") and callable(inspect.getattr_static(cls, name))
    }


@pytest.mark.parametrize(("sync", "async_"), PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_the_twins_have_the_same_methods_plain_and_coroutine(sync: type, async_: type) -> None:
    ours, theirs = public_methods(sync), public_methods(async_)
    assert set(ours) == set(theirs)
    talking = 0
    for name, method in ours.items():
        assert not isinstance(method, (plan, one_trip)), name  # each got a driver
        if inspect.iscoroutinefunction(theirs[name]):
            talking += 1
            assert not inspect.iscoroutinefunction(method), name
            assert method.__doc__ == theirs[name].__doc__, name  # one docstring
    assert talking >= 1


def test_the_asyncio_board_methods_are_coroutines_where_the_plain_boards_are() -> None:
    # Every method that is a coroutine on asyncio's RedisLeaderboard is one on its subclasses.
    for cls in (aio.PeriodicLeaderboard._board_class, aio.RollingLeaderboard):
        for name, method in public_methods(aio.RedisLeaderboard).items():
            if inspect.iscoroutinefunction(method):
                assert inspect.iscoroutinefunction(getattr(cls, name)), (cls, name)
    for cls in (PeriodBoard, RollingLeaderboard):
        for name in public_methods(RedisLeaderboard):
            assert not inspect.iscoroutinefunction(getattr(cls, name)), (cls, name)


def test_a_period_board_is_built_once_with_its_deadline(client: Any, board_key: str) -> None:
    clock = FakeClock(datetime(2031, 3, 30, 0, 30, tzinfo=UTC))
    daily = PeriodicLeaderboard(client, key=board_key, period="day", tz="Europe/Paris", clock=clock)
    board = daily.current()
    assert board._board.expire_at == int(daily.expire_at(board.start).timestamp() * 1000)
    assert board.key == f"{board_key}:2031-03-30"
    assert repr(board).startswith(f"PeriodBoard(key='{board_key}:2031-03-30', expires=")


def test_current_follows_the_clock_forward_and_back(client: Any, board_key: str) -> None:
    # Around the spring-forward day in Paris (23 hours long): current() must agree with at().
    clock = FakeClock(datetime(2031, 3, 29, 22, 59, 59, tzinfo=UTC))
    daily = PeriodicLeaderboard(client, key=board_key, period="day", tz="Europe/Paris", clock=clock)
    steps = [timedelta(seconds=1), timedelta(hours=22, minutes=59, seconds=59), timedelta(0)]
    steps += [timedelta(seconds=1), -timedelta(seconds=1), -timedelta(days=3), timedelta(days=3)]
    for step in steps:
        clock.now += step
        # The same period's board (at()'s names its period explicitly: another object).
        assert daily.current().key == daily.at(clock.now).key, clock.now
        assert daily.current() is daily.current(), clock.now
        assert daily.current().period == daily.period_id(), clock.now


def test_asyncio_periodic_writes_and_reads_run_through_the_driver(
    redis_server: Any, board_key: str
) -> None:
    async def main() -> None:
        async with aio.Client(host=redis_server.host, port=redis_server.port) as aclient:
            clock = FakeClock(datetime(2031, 1, 1, 12, tzinfo=UTC))
            hourly = aio.PeriodicLeaderboard(
                aclient, key=f"{board_key}:hourly", period="hour", clock=clock
            )
            call = hourly.submit("ada", 3)
            assert inspect.iscoroutine(call)
            assert (await call)["rank"] == 1
            assert [e["user_id"] for e in await hourly.get_top()] == ["ada"]
            summary = await hourly.current().upsert_many([("bob", 1.0)])
            assert summary["written"] == 1
            stale = hourly.current()
            clock.now += timedelta(hours=2)
            with pytest.raises(ValueError, match="takes no writes after"):
                await stale.upsert_many([("eve", 2.0)])
            with pytest.raises(TypeError, match="does not apply to a rolling window"):
                await aio.RollingLeaderboard(aclient, key=f"{board_key}:recent").set_max_entries(3)

    asyncio.run(main())


def instructions(function: Any) -> list[tuple[str, Any]]:
    return [(i.opname, i.argval) for i in dis.get_instructions(function)]


def one_trip_names() -> list[str]:
    from redis_leaderboard.boards.plain import LeaderboardBase

    return [
        name
        for name in dir(LeaderboardBase)
        if isinstance(inspect.getattr_static(LeaderboardBase, name), one_trip)
    ]


def test_a_one_trip_method_is_the_written_function_itself_on_the_sync_class() -> None:
    from redis_leaderboard.boards.plain import LeaderboardBase

    names = one_trip_names()
    assert {"get_rank", "get_top", "upsert_user", "submit", "get_histogram"} <= set(names)
    for name in names:
        written = inspect.getattr_static(LeaderboardBase, name).function
        assert inspect.getattr_static(RedisLeaderboard, name) is written, name  # no wrapper


def test_a_one_trip_method_on_the_asyncio_class_is_its_awaiting_copy() -> None:
    # Compiled from the method's source with each return awaited: the same instructions as a
    # hand-written `return await self._run(...)`, no wrapper's frame between (per-call CPU).
    async def hand_written(self: Any, user_id: str) -> Any:
        return await self._run(self._board.get_rank(user_id))

    copy = aio.RedisLeaderboard.get_rank
    assert inspect.iscoroutinefunction(copy)
    assert instructions(copy) == instructions(hand_written)
    for name in one_trip_names():
        method = getattr(aio.RedisLeaderboard, name)
        sync = getattr(RedisLeaderboard, name)
        assert inspect.iscoroutinefunction(method), name
        assert method.__code__.co_freevars == (), name  # not a wrapper around the function
        assert method.__code__.co_filename == sync.__code__.co_filename, name
        assert inspect.signature(method) == inspect.signature(sync), name
        assert method.__doc__ == sync.__doc__ and sync.__doc__, name


def test_signatures_show_what_a_method_gives_not_how_it_is_written() -> None:
    for cls in (RedisLeaderboard, aio.RedisLeaderboard, PeriodicLeaderboard):
        assert inspect.signature(cls.get_rank).return_annotation == "Optional[int]"
    for cls in (RedisLeaderboard, aio.RedisLeaderboard, aio.PeriodicLeaderboard._board_class):
        assert inspect.signature(cls.upsert_many).return_annotation == "ImportSummary"


def test_an_error_in_a_step_reaches_the_plan_which_may_clean_up(
    client: Any, board_key: str
) -> None:
    # upsert_many's plan trims after a failed chunk: the driver throws the error into it.
    board = RedisLeaderboard(client, key=board_key, max_entries=2)
    entries = [("a", 1.0), ("b", 2.0), ("c", 3.0), ("bad", "x")]
    with pytest.raises(ValueError, match="entry 3"):
        board.upsert_many(entries, chunk_size=3)
    assert [e["user_id"] for e in board.list_all()] == ["c", "b"]  # written, then trimmed


def test_a_method_written_once_cannot_be_called_on_an_undriven_class() -> None:
    from redis_leaderboard.boards.plain import LeaderboardBase

    with pytest.raises(TypeError, match="written once for both APIs"):
        LeaderboardBase.__new__(LeaderboardBase).get_rank("x")
