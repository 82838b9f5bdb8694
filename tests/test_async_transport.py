"""The asyncio transport: ``redis_leaderboard.asyncio``'s multiplexed ``Client`` under the
boards.

Many tasks share one connection whose requests are pipelined automatically. What every board
method does is tested over both APIs in tests/boards/; these tests are about what only the
asyncio client has: pipelined calls (NOSCRIPT, undecodable replies and pages in a batch),
exact results under load and back-pressure, cancellation, killed and paused servers, closing,
and the client's lifecycle (event loop binding, interpreter exit, fork). They run against the
private redis-server of the test suite (``fresh_redis_server`` for those that kill, pause or
restart it).
"""

from __future__ import annotations

import asyncio
import gc
import random
import subprocess
import sys
import textwrap
import time
from typing import Any, Optional

import pytest
import pytest_asyncio
import redis.asyncio

import redis_leaderboard
from conftest import EVENT_LOOPS, LoopFactory
from helpers import entry, written
from redis_leaderboard import AuthenticationError, ConnectionError, RedisError, ResponseError
from redis_leaderboard import RedisLeaderboard as SyncLeaderboard
from redis_leaderboard import TimeoutError as RedisTimeoutError
from redis_leaderboard.asyncio import Client, RedisLeaderboard

STATS_KEYS = {"round_trips", "commands", "calls", "reconnects", "connections"}


async def load_scripts(client: Client, key: str) -> None:
    """Run every kind of operation once, so that the server has every script cached and no
    later call pays for a NOSCRIPT retry."""
    board = RedisLeaderboard(client, key=key, max_entries=1)
    await board.upsert_user("a", 1, {"m": "x"})
    await board.increment_score("b", 2)
    for read in (board.get_top(), board.get_around_rank(1), board.list_all()):
        await read
    await board.get_user_entry("b")
    await board.set_max_entries(1)
    await board.delete_user("b")
    await board.clear()


def calls_and_trips(client: Client) -> tuple[int, int, int]:
    stats = client.stats()
    return stats["calls"], stats["round_trips"], stats["commands"]


@pytest_asyncio.fixture
async def aboard(aclient: Client, board_key: str) -> RedisLeaderboard:
    return RedisLeaderboard(aclient, key=board_key, max_entries=100)


# --- scripts, errors, replies ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_scripts_flushed_while_calls_are_pipelined_are_reloaded(
    aboard: RedisLeaderboard, r: Any
) -> None:
    assert await aboard.upsert_user("a", 1) == written(1, "a", 1)
    r.script_flush()
    results = await asyncio.gather(*(aboard.upsert_user(f"u{i}", 10 + i) for i in range(20)))
    assert [res["user_id"] for res in results] == [f"u{i}" for i in range(20)]
    assert await aboard.get_top(2) == [entry(1, "u19", 29), entry(2, "u18", 28)]
    assert await aboard.get_size() == 21


@pytest.mark.asyncio
async def test_a_reply_that_cannot_be_decoded_fails_that_call_only(
    aclient: Client, client: redis_leaderboard.Client, board_key: str, r: Any
) -> None:
    # Data written by another client that is not UTF-8: the same error as the sync class,
    # for the calls that read it, and only for them, in a pipelined batch.
    r.zadd(board_key, {"a": 1, b"\xfe": 2})
    r.hset(f"{board_key}:user:a", "f", b"\xff")
    sync_board = SyncLeaderboard(client, key=board_key)
    board = RedisLeaderboard(aclient, key=board_key)
    with pytest.raises(UnicodeDecodeError) as sync_error:
        sync_board.get_user_metadata("a")
    before = calls_and_trips(aclient)
    results = await asyncio.gather(
        board.get_user_metadata("a"),
        board.get_rank("a"),
        board.get_top(),
        aclient.ping(),
        board.get_size(),
        return_exceptions=True,
    )
    assert calls_and_trips(aclient)[1] - before[1] < 5  # pipelined
    assert type(results[0]) is UnicodeDecodeError
    assert str(results[0]) == str(sync_error.value)
    assert type(results[2]) is UnicodeDecodeError
    assert [results[1], results[3], results[4]] == [2, True, 2]
    assert aclient._core.pending == 0


@pytest.mark.asyncio
async def test_a_database_out_of_range_is_a_response_error(redis_server: Any) -> None:
    async with Client(host=redis_server.host, port=redis_server.port, db=99) as c:
        with pytest.raises(ResponseError, match="DB index is out of range"):
            await asyncio.wait_for(c.ping(), 5)
        assert c._core.pending == 0


@pytest.mark.asyncio
async def test_paged_operations_on_a_large_board(aclient: Client, board_key: str) -> None:
    await load_scripts(aclient, f"{board_key}:warm")
    board = RedisLeaderboard(aclient, key=board_key, max_entries=60_000)
    await board.upsert_many((f"u{i:05d}", i) for i in range(12_000))
    before = calls_and_trips(aclient)
    everyone = await board.list_all()
    after = calls_and_trips(aclient)
    assert after[0] - before[0] == 1
    # In two steps, as the sync client's: the first 200 with their metadata, the rest in pages
    # of 5,000 without (3), then their 11,800 HGETALLs, 5,000 a round trip (3).
    assert after[1] - before[1] == 7
    assert everyone == [
        entry(rank, f"u{12_000 - rank:05d}", 12_000 - rank) for rank in range(1, 12_001)
    ]
    assert await board.get_top(1) == [entry(1, "u11999", 11_999)]
    # cancelled between pages: the page in flight is read and dropped, the later ones (the I/O
    # thread runs the pages) are never sent
    await board.upsert_many((f"v{i:05d}", -1 - i) for i in range(40_000))  # 52,000: 11 pages
    round_trips = aclient.stats()["round_trips"]
    task = asyncio.create_task(board.list_all())
    deadline = time.monotonic() + 5
    while aclient.stats()["round_trips"] - round_trips < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await board.get_top(1) == [entry(1, "u11999", 11_999)]
    assert aclient.stats()["round_trips"] - round_trips < 11 + 1
    assert aclient._core.pending == 0
    await board.set_max_entries(12_000)
    assert await board.set_max_entries(11_990) == [f"u{i:05d}" for i in range(10)]
    assert await board.get_size() == 11_990
    await board.clear()
    assert await board.get_size() == 0


@pytest.mark.asyncio
async def test_a_big_read_takes_two_steps_and_calls_made_meanwhile_run_between(
    aclient: Client, board_key: str
) -> None:
    # A read of many entries is the guide's two steps on the asyncio client too: its ranks and
    # scores one snapshot, its second step (the HGETALLs) queued behind the calls made while
    # its first was in flight, as a paged read's next page. A write made meanwhile may show its
    # metadata beside the older rank, never a rank or score of its own; the read of a pipelined
    # stream (run_pipelined) is one script, in order with what is written behind it.
    await load_scripts(aclient, f"{board_key}:warm")
    board = RedisLeaderboard(aclient, key=board_key, max_entries=None)
    await board.upsert_many((f"p{i:03d}", i, {"name": f"Player {i}"}) for i in range(120))
    await board.get_size()  # options checked: get_top's first step is the guide's ZRANGE
    before = calls_and_trips(aclient)
    top = await board.get_top(100)
    after = calls_and_trips(aclient)
    assert (after[1] - before[1], after[2] - before[2]) == (2, 101)
    assert top[0] == entry(1, "p119", 119, {"name": "Player 119"})
    read = asyncio.ensure_future(board.get_top(100))
    await asyncio.sleep(0)  # its first step written
    write = await board.upsert_user("p119", -1, {"name": "renamed"})
    top = await read
    assert write["rank"] == 120
    assert (top[0]["rank"], top[0]["user_id"], top[0]["score"]) == (1, "p119", 119.0)
    assert top[0]["metadata"] in ({"name": "Player 119"}, {"name": "renamed"})
    assert [e["user_id"] for e in top] == [f"p{i:03d}" for i in range(119, 19, -1)]

    results: list[Any] = []
    operations = [
        board._board.get_top(100),
        board._board.upsert_user("p117", 500, {"name": "moved"}),
        board._board.get_top(100),
    ]
    await aclient.run_pipelined(iter(operations), results.append, 3)
    assert results[0][1] == entry(2, "p117", 117, {"name": "Player 117"})  # not the write's
    assert results[2][0] == entry(1, "p117", 500, {"name": "moved"})


# --- bulk imports: cancelled, or cut by a dying server --------------------------------------


class UnretrievedFutures:
    """Collects the event loop's "exception was never retrieved" reports."""

    def __init__(self) -> None:
        self.reports: list[str] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: self.reports.append(context["message"])
        )

    async def close_and_check(self, client: Client) -> None:
        """Close ``client``: nothing pending, no future left with an unread exception."""
        await client.aclose()
        assert client._core.pending == 0
        gc.collect()
        await asyncio.sleep(0)
        assert self.reports == []


@pytest.mark.asyncio
async def test_cancelling_an_import_leaves_the_client_clean(
    redis_server: Any, board_key: str
) -> None:
    reports = UnretrievedFutures()
    client = Client(host=redis_server.host, port=redis_server.port)
    board = RedisLeaderboard(client, key=board_key, max_entries=1_000_000)
    started = asyncio.Event()
    task = asyncio.create_task(
        board.upsert_many(
            ((f"u{i}", i, {"m": "x" * 50}) for i in range(200_000)),
            chunk_size=500,
            progress=lambda _n: started.set(),
        )
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The connection is still in step: a normal call answers correctly.
    assert await board.upsert_user("after", 1e9) == {
        "rank": 1,
        "user_id": "after",
        "score": 1e9,
        "metadata": {},
        "trimmed_user_ids": [],
    }
    await reports.close_and_check(client)


@pytest.mark.asyncio
async def test_a_server_dying_mid_import_raises_connection_error_and_orphans_nothing(
    fresh_redis_server: Any, board_key: str
) -> None:
    reports = UnretrievedFutures()
    client = Client(host=fresh_redis_server.host, port=fresh_redis_server.port)
    board = RedisLeaderboard(client, key=board_key, max_entries=1_000_000)

    def kill_after_first_chunk(written: int) -> None:
        if written == 500:
            fresh_redis_server.kill()

    with pytest.raises(ConnectionError):
        await board.upsert_many(
            ((f"u{i}", i) for i in range(100_000)),
            chunk_size=500,
            progress=kill_after_first_chunk,
        )
    await reports.close_and_check(client)


# --- the client --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_client_basics(redis_server: Any, board_key: str, r: Any) -> None:
    assert redis_leaderboard.AsyncRedisLeaderboard is RedisLeaderboard
    async with Client(host=redis_server.host, port=redis_server.port, client_name="async-t") as c:
        assert await c.ping() is True
        assert set(c.stats()) == STATS_KEYS
        assert c.stats()["connections"] == 1
        assert repr(c).startswith("redis_leaderboard.asyncio.Client(")
        assert "async-t" in [info["name"] for info in r.client_list()]
    assert c._core.closed
    with pytest.raises(ConnectionError, match="closed"):
        await c.ping()
    assert c._core.pending == 0

    for make in (
        lambda: Client.from_url(redis_server.url),
        lambda: Client.from_url(f"unix://{redis_server.unix_path}"),
        lambda: Client(unix_socket_path=redis_server.unix_path),
    ):
        async with make() as c:
            board = RedisLeaderboard(c, key=board_key)
            assert await board.upsert_user("a", 1) == written(1, "a", 1)
            assert await board.get_user_entry("a") == entry(1, "a", 1)
            await board.clear()
    with pytest.raises(ValueError):
        Client.from_url("redis://localhost:6379/0?ssl=maybe")


@pytest.mark.asyncio
async def test_leaderboard_client_resolution(redis_server: Any, board_key: str) -> None:
    board = RedisLeaderboard(url=redis_server.url, key=board_key, max_entries=5)
    assert isinstance(board.redis, Client)
    assert await board.upsert_user("a", 3) == written(1, "a", 3)
    await board.redis.aclose()

    rp = redis.asyncio.Redis(host=redis_server.host, port=redis_server.port, db=0)
    board = RedisLeaderboard(rp, key=board_key)
    assert await board.get_user_entry("a") == entry(1, "a", 3)
    await board.redis.aclose()
    await rp.aclose()

    async with Client(host=redis_server.host, port=redis_server.port) as c:
        assert RedisLeaderboard(c, key=board_key).redis is c
        with pytest.raises(TypeError):
            RedisLeaderboard(c, key=board_key, url=redis_server.url)
    with pytest.raises(TypeError):
        RedisLeaderboard(object(), key=board_key)


# --- load: pipelining and exactness ------------------------------------------------------------


def expected_board(scores: dict[str, float], metadata: dict[str, dict[str, str]]) -> list[Any]:
    """Redis order: highest score first, ties by the greater member first."""
    ordered = sorted(scores.items(), key=lambda item: (item[1], item[0].encode()), reverse=True)
    return [
        entry(rank, user_id, score, metadata.get(user_id))
        for rank, (user_id, score) in enumerate(ordered, start=1)
    ]


@pytest.mark.asyncio
async def test_a_thousand_tasks_match_a_sequential_replay(
    aclient: Client, client: redis_leaderboard.Client, board_key: str
) -> None:
    """1,000 tasks, 10,000 upserts and increments. Each task owns three users (its calls on them
    run in order) and shares ten users that get only integer increments, each task writing its
    own metadata field: so the final board does not depend on the interleaving, and a replay of
    each task's calls in Python gives it exactly."""
    board = RedisLeaderboard(aclient, key=board_key, max_entries=100_000)
    await board.upsert_user("warm-up", 0)
    await board.delete_user("warm-up")
    shared = [f"shared-{k}" for k in range(10)]
    plans: list[list[tuple[str, str, float, Optional[dict[str, str]]]]] = []
    rng = random.Random(1234)
    for t in range(1000):
        plan = []
        for step in range(10):
            roll = rng.random()
            if roll < 0.3:
                user = rng.choice(shared)
                plan.append(
                    ("increment_score", user, float(rng.randint(-5, 9)), {f"t{t}": str(step)})
                )
            else:
                user = f"t{t:04d}-{rng.randrange(3)}"
                kind = "upsert_user" if roll < 0.65 else "increment_score"
                number = rng.randint(-1000, 1000) / 4
                meta = {"task": str(t), "step": str(step)} if rng.random() < 0.5 else None
                plan.append((kind, user, number, meta))
        plans.append(plan)

    # the sequential replay
    scores: dict[str, float] = {}
    metadata: dict[str, dict[str, str]] = {}
    expected_results: list[list[tuple[float, dict[str, str]] | None]] = []
    for plan in plans:
        per_task: list[tuple[float, dict[str, str]] | None] = []
        for kind, user, number, meta in plan:
            scores[user] = number if kind == "upsert_user" else scores.get(user, 0.0) + number
            if meta:
                metadata.setdefault(user, {}).update(meta)
            per_task.append(
                None if user in shared else (scores[user], dict(metadata.get(user, {})))
            )
        expected_results.append(per_task)

    async def run(t: int) -> None:
        for (kind, user, number, meta), expected in zip(plans[t], expected_results[t]):
            result = await getattr(board, kind)(user, number, meta)
            assert result["user_id"] == user
            assert result["trimmed_user_ids"] == []
            assert 1 <= result["rank"] <= len(scores)
            if expected is None:  # a shared user: our own field is there
                assert result["metadata"][f"t{t}"] == meta[f"t{t}"]  # type: ignore[index]
            else:
                assert (result["score"], result["metadata"]) == expected

    before = aclient.stats()
    await asyncio.gather(*(run(t) for t in range(1000)))
    after = aclient.stats()

    calls = after["calls"] - before["calls"]
    round_trips = after["round_trips"] - before["round_trips"]
    assert calls == 10_000
    assert after["commands"] - before["commands"] == 10_000
    assert round_trips / calls < 1, (round_trips, calls)
    assert after["connections"] == 1 and after["reconnects"] == 0

    final = expected_board(scores, metadata)
    assert await board.get_size() == len(scores)
    assert await board.list_all() == final
    assert SyncLeaderboard(client, key=board_key).list_all() == final
    # trimming the replayed board removes exactly the lowest, ties by the smaller member first
    trimmed = await board.set_max_entries(len(scores) - 25)
    assert trimmed == [e["user_id"] for e in reversed(final[-25:])]
    assert aclient._core.pending == 0


@pytest.mark.asyncio
async def test_back_pressure_limits_keep_results_exact(redis_server: Any, board_key: str) -> None:
    async with Client(
        host=redis_server.host, port=redis_server.port, max_in_flight=3, max_pending=5
    ) as c:
        board = RedisLeaderboard(c, key=board_key, max_entries=1000)
        results = await asyncio.gather(
            *(board.upsert_user(f"u{i:03d}", i, {"i": str(i)}) for i in range(400))
        )
        assert [(res["user_id"], res["score"], res["metadata"]) for res in results] == [
            (f"u{i:03d}", float(i), {"i": str(i)}) for i in range(400)
        ]
        reads = await asyncio.gather(*(board.get_rank(f"u{i:03d}") for i in range(400)))
        assert reads == [400 - i for i in range(400)]
        assert c._core.pending == 0


# --- cancellation ------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "limits", [{}, {"max_in_flight": 8, "max_pending": 32}], ids=["default", "back-pressure"]
)
async def test_a_storm_of_cancellations_then_normal_use(
    redis_server: Any, board_key: str, limits: dict[str, int]
) -> None:
    async with Client(host=redis_server.host, port=redis_server.port, **limits) as c:
        board = RedisLeaderboard(c, key=board_key, max_entries=100_000)
        # 100 stable users scored 1000..1099; the storm writes only other users, below them
        await board.upsert_many((f"s{i:03d}", 1000 + i, {"i": str(i)}) for i in range(100))
        stable_top = [
            entry(rank, f"s{100 - rank:03d}", 1100 - rank, {"i": str(100 - rank)})
            for rank in range(1, 101)
        ]
        rng = random.Random(7)

        def storm_call(n: int) -> Any:
            kind = n % 4
            if kind == 0:
                return board.upsert_user(f"w{n}", -n, {"n": str(n)})
            if kind == 1:
                return board.increment_score(f"w{n % 50}", 1)
            if kind == 2:
                return board.get_top(50)
            return board.get_user_entry(f"s{n % 100:03d}")

        def check(n: int, result: Any) -> None:
            if n % 4 == 2:
                assert result == stable_top[:50]
            elif n % 4 == 3:
                assert result == stable_top[99 - n % 100]
            else:
                assert result["user_id"] == (f"w{n}" if n % 4 == 0 else f"w{n % 50}")

        cancelled = finished = in_flight_at_cancel = 0
        calls_before = c.stats()["calls"]
        for round_no in range(6):
            tasks = [asyncio.create_task(storm_call(n)) for n in range(600)]
            timed = [
                asyncio.create_task(asyncio.wait_for(storm_call(n), rng.uniform(0, 0.003)))
                for n in range(600, 800)
            ]
            for _ in range(round_no):  # cancel before, while and after the writes go out
                await asyncio.sleep(0)
            if round_no == 5:
                await asyncio.sleep(0.001)
            in_flight_at_cancel = max(in_flight_at_cancel, c._core.pending)
            for i, task in enumerate(tasks):
                if i % 3 != 2:
                    task.cancel()
            results = await asyncio.gather(*tasks, *timed, return_exceptions=True)
            for n, result in enumerate(results):
                if isinstance(result, (asyncio.CancelledError, asyncio.TimeoutError)):
                    cancelled += 1
                else:
                    assert not isinstance(result, BaseException), result
                    check(n, result)
                    finished += 1
        assert cancelled > 1000 and finished > 500
        # many were cancelled with their request already handed to the transport
        assert in_flight_at_cancel > 300
        assert c.stats()["calls"] - calls_before > finished + 500

        # Normal use: exact answers, on the same connection, nothing left behind.
        assert await c.ping() is True
        assert c._core.pending == 0
        assert await board.upsert_user("after", 5000, {"ok": "yes"}) == written(
            1, "after", 5000, {"ok": "yes"}
        )
        assert await board.get_top(3) == [
            entry(1, "after", 5000, {"ok": "yes"}),
            *[{**e, "rank": e["rank"] + 1} for e in stable_top[:2]],
        ]
        results = await asyncio.gather(*(board.get_user_entry(f"s{i:03d}") for i in range(100)))
        assert results == [{**e, "rank": e["rank"] + 1} for e in reversed(stable_top)]
        assert await board.delete_user("after") is True
        stats = c.stats()
        assert stats["connections"] == 1 and stats["reconnects"] == 0
        assert c._core.pending == 0


# --- failures ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_killed_server_fails_in_flight_calls_then_recovers(fresh_redis_server: Any) -> None:
    server = fresh_redis_server
    async with Client(host=server.host, port=server.port) as c:
        board = RedisLeaderboard(c, key="lb", max_entries=10_000)
        await board.upsert_user("warm", 1)
        completed = 0

        async def worker(i: int) -> RedisError:
            nonlocal completed
            step = 0
            while True:
                try:
                    result = await board.increment_score(f"w{i}", 1)
                except RedisError as exc:
                    return exc
                step += 1
                completed += 1
                assert result["score"] == step  # its own user: replies stay matched

        tasks = [asyncio.create_task(worker(i)) for i in range(200)]
        deadline = time.monotonic() + 5
        while completed < 2000 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert completed >= 2000
        server.kill()  # mid-load: calls in flight and queued
        errors = await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert {type(e) for e in errors} == {ConnectionError}, errors[:3]
        with pytest.raises(ConnectionError):  # still down: refused, not hung
            await asyncio.wait_for(board.get_size(), 5)

        server.start()  # same port, empty (no persistence)
        assert await asyncio.wait_for(board.upsert_user("back", 2), 5) == written(1, "back", 2)
        assert await board.get_top() == [entry(1, "back", 2)]
        assert c.stats()["reconnects"] >= 1
        assert c._core.pending == 0


@pytest.mark.asyncio
async def test_requests_written_to_a_server_that_dies_raise_connection_error(
    fresh_redis_server: Any,
) -> None:
    server = fresh_redis_server
    async with Client(host=server.host, port=server.port) as c:
        board = RedisLeaderboard(c, key="lb")
        await board.upsert_user("warm", 1)
        server.pause()  # written, never answered ...
        tasks = [asyncio.create_task(board.upsert_user(f"u{i}", i)) for i in range(300)]
        await asyncio.sleep(0.2)
        assert c._core.pending == 300
        server.kill()  # ... then the connection drops
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
        assert all(type(res) is ConnectionError for res in results), results[:3]
        assert c._core.pending == 0
        server.start()
        assert await asyncio.wait_for(board.get_size(), 5) == 0  # never retried on the new one
        assert c.stats()["reconnects"] == 1


@pytest.mark.asyncio
async def test_paused_server_times_out_then_recovers(fresh_redis_server: Any) -> None:
    server = fresh_redis_server
    async with Client(host=server.host, port=server.port, socket_timeout=0.5) as c:
        board = RedisLeaderboard(c, key="lb")
        assert await board.upsert_user("a", 1) == written(1, "a", 1)
        server.pause()
        try:
            start = time.monotonic()
            tasks = [asyncio.create_task(board.get_user_entry("a")) for _ in range(50)]
            results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
            elapsed = time.monotonic() - start
            assert all(type(res) is RedisTimeoutError for res in results), results[:3]
            assert 0.4 <= elapsed <= 2.5, elapsed
            # a new call while still paused goes on a new connection and times out too
            start = time.monotonic()
            with pytest.raises(RedisTimeoutError):
                await asyncio.wait_for(board.increment_score("a", 10), 5)
            assert 0.4 <= time.monotonic() - start <= 2.5
        finally:
            server.resume()
        # Late replies to timed-out calls must never answer new ones. The increment was sent,
        # so it may have been applied (never retried).
        a = await asyncio.wait_for(board.get_user_entry("a"), 5)
        assert a in (entry(1, "a", 1), entry(1, "a", 11))
        assert await board.get_size() == 1
        assert await board.get_rank("zz") is None
        assert c.stats()["reconnects"] >= 1
        assert c._core.pending == 0


@pytest.mark.asyncio
async def test_wrong_password_is_an_authentication_error(password_redis_server: Any) -> None:
    server = password_redis_server
    async with Client(host=server.host, port=server.port, password="wrong") as c:
        with pytest.raises(AuthenticationError, match=r"^WRONGPASS"):
            await asyncio.wait_for(c.ping(), 5)
        board = RedisLeaderboard(c, key="lb")
        results = await asyncio.wait_for(
            asyncio.gather(*(board.get_top() for _ in range(20)), return_exceptions=True), 5
        )
        assert all(type(res) is AuthenticationError for res in results), results[:3]
        assert c._core.pending == 0
    async with Client.from_url(f"redis://:wrong@{server.host}:{server.port}/0") as c:
        with pytest.raises(AuthenticationError):
            await asyncio.wait_for(RedisLeaderboard(c, key="lb").get_size(), 5)
    async with Client.from_url(server.url) as c:
        assert await RedisLeaderboard(c, key="lb").upsert_user("a", 1) == written(1, "a", 1)


@pytest.mark.asyncio
async def test_closing_with_requests_in_flight(fresh_redis_server: Any) -> None:
    server = fresh_redis_server
    c = Client(host=server.host, port=server.port)
    board = RedisLeaderboard(c, key="lb")
    await board.upsert_user("warm", 1)
    server.pause()
    try:
        tasks = [asyncio.create_task(board.upsert_user(f"u{i}", i)) for i in range(200)]
        await asyncio.sleep(0.1)
        start = time.monotonic()
        await asyncio.wait_for(c.aclose(), 5)
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
        assert time.monotonic() - start < 1
        assert all(type(res) is ConnectionError for res in results), results[:3]
        assert c._core.pending == 0
        with pytest.raises(ConnectionError, match="closed"):
            await board.get_size()
        await c.aclose()  # idempotent
    finally:
        server.resume()


@pytest.mark.asyncio
async def test_closing_under_load_settles_every_call(redis_server: Any, board_key: str) -> None:
    c = Client(host=redis_server.host, port=redis_server.port)
    board = RedisLeaderboard(c, key=board_key, max_entries=10_000)
    await board.get_size()
    tasks = [asyncio.create_task(board.upsert_user(f"u{i}", i)) for i in range(2000)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    await c.aclose()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
    for i, res in enumerate(results):
        assert type(res) is ConnectionError or res["user_id"] == f"u{i}", res
    assert c._core.pending == 0


# --- lifecycle ---------------------------------------------------------------------------------


@pytest.mark.parametrize("second_loop", ["asyncio", "uvloop"])
def test_use_from_a_second_event_loop_is_a_clear_runtime_error(
    redis_server: Any, board_key: str, loop_factory: LoopFactory, second_loop: str
) -> None:
    first, second = loop_factory(), EVENT_LOOPS[second_loop]()
    c = Client(host=redis_server.host, port=redis_server.port)
    try:
        board = RedisLeaderboard(c, key=board_key)
        assert first.run_until_complete(board.upsert_user("a", 1)) == written(1, "a", 1)
        stats = c.stats()
        with pytest.raises(RuntimeError, match="bound to the event loop") as info:
            second.run_until_complete(board.get_size())
        assert "one client per event loop" in str(info.value)
        with pytest.raises(RuntimeError, match="event loop"):
            second.run_until_complete(c.ping())
        assert c.stats() == stats
        # the first loop still works
        assert first.run_until_complete(board.get_user_entry("a")) == entry(1, "a", 1)
    finally:
        c.close()
        first.close()
        second.close()
    assert c._core.pending == 0


# What a script's `run` (asyncio.run) and `new_loop` (asyncio.new_event_loop) are, per loop.
SCRIPT_LOOPS = {
    "asyncio": "import asyncio\nrun, new_loop = asyncio.run, asyncio.new_event_loop\n",
    "uvloop": "import uvloop\nrun, new_loop = uvloop.run, uvloop.new_event_loop\n",
}


def run_script(
    code: str, *args: str, loop: str, timeout: float = 10
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-c", SCRIPT_LOOPS[loop] + textwrap.dedent(code), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the script did not exit within {timeout} s: {exc.stdout!r} {exc.stderr!r}")


LEFT_OPEN = """
    import asyncio, sys
    from redis_leaderboard.asyncio import Client, RedisLeaderboard

    host, port, key, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    client = Client(host=host, port=port)
    board = RedisLeaderboard(client, key=key, max_entries=10_000)
    if mode == "asyncio.run":
        print(run(board.upsert_user("a", 1))["rank"])
    else:  # the loop left open too, with calls in flight
        loop = new_loop()
        print(loop.run_until_complete(board.upsert_user("a", 1))["rank"])
        tasks = [loop.create_task(board.upsert_user(f"u{i}", i)) for i in range(500)]
        loop.run_until_complete(asyncio.sleep(0))
    print("exiting", flush=True)
"""


@pytest.mark.parametrize("mode", ["asyncio.run", "calls-in-flight"])
def test_a_client_left_open_at_exit_neither_hangs_nor_crashes(
    redis_server: Any, board_key: str, mode: str, loop_name: str
) -> None:
    done = run_script(
        LEFT_OPEN, redis_server.host, str(redis_server.port), board_key, mode, loop=loop_name
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1\nexiting\n"
    assert "Fatal" not in done.stderr and "terminate" not in done.stderr
    if mode == "asyncio.run":
        assert done.stderr == ""


FORK = """
    import asyncio, os, sys
    import redis_leaderboard
    from redis_leaderboard.asyncio import Client, RedisLeaderboard

    host, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    client = Client(host=host, port=port)
    board = RedisLeaderboard(client, key=key)
    run(board.upsert_user("parent", 1))
    pid = os.fork()
    if pid == 0:
        async def child():
            try:
                await board.get_size()
            except redis_leaderboard.RedisError as exc:
                return f"{type(exc).__name__}: {exc}"
            return "no error"
        outcome = run(child())
        print("child", outcome, flush=True)
        sys.exit(42 if "fork" in outcome else 1)  # a normal exit: atexit runs in the child
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status))
    print("parent", run(board.get_user_entry("parent"))["score"], flush=True)
"""


def test_fork_after_use_is_a_clear_error_in_the_child(
    redis_server: Any, board_key: str, loop_name: str
) -> None:
    done = run_script(FORK, redis_server.host, str(redis_server.port), board_key, loop=loop_name)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("child RedisError: "), lines
    assert "fork" in lines[0]
    assert lines[1:] == ["child exit 42", "parent 1.0"]


FORK_AND_DROP = """
    import asyncio, gc, os, sys
    from redis_leaderboard.asyncio import Client, RedisLeaderboard

    host, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    client = Client(host=host, port=port)
    board = RedisLeaderboard(client, key=key)
    run(board.upsert_user("parent", 1))
    pid = os.fork()
    if pid == 0:
        client.close()
        del board, client
        gc.collect()
        sys.exit(7)  # a normal exit: atexit and every destructor run in the child
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status))
    async def parent():
        return [await board.get_rank("parent") for _ in range(100)]
    print("parent", set(run(parent())), flush=True)
"""


def test_a_forked_child_may_drop_the_parents_client(
    redis_server: Any, board_key: str, loop_name: str
) -> None:
    # Deleting the client in the child must neither abort the child (a joinable std::thread)
    # nor unregister the parent's sockets from their shared epoll instance.
    done = run_script(
        FORK_AND_DROP, redis_server.host, str(redis_server.port), board_key, loop=loop_name
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["child exit 7", "parent {1}"]


FORK_WHILE_PARENT_WORKS = """
    import asyncio, os, sys, time
    import redis_leaderboard
    from redis_leaderboard.asyncio import Client, RedisLeaderboard

    host, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    client = Client(host=host, port=port)
    board = RedisLeaderboard(client, key=key, max_entries=100_000)
    run(board.get_size())
    pid = os.fork()
    if pid == 0:
        async def child():
            try:
                await board.get_size()
            except redis_leaderboard.RedisError:
                pass
            await asyncio.sleep(2)  # the child's loop keeps running
        run(child())
        os._exit(0)

    async def parent():
        async def worker(i):
            for j in range(100):
                await asyncio.wait_for(board.upsert_user(f"u{i}-{j}", j), 3)
        await asyncio.gather(*(worker(i) for i in range(100)))
        return await board.get_size()

    try:
        print("parent", run(parent()), flush=True)
    except asyncio.TimeoutError:
        print("parent hung", flush=True)
    os.waitpid(pid, 0)
"""


def test_a_forked_child_does_not_steal_the_parents_completions(
    redis_server: Any, board_key: str, loop_name: str
) -> None:
    """The child inherits the client's eventfd: its event loop must not drain the parent's
    wake-ups (the parent would then wait forever for completions already queued)."""
    done = run_script(
        FORK_WHILE_PARENT_WORKS,
        redis_server.host,
        str(redis_server.port),
        board_key,
        loop=loop_name,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "parent 10000\n"
