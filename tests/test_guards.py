"""Issue 17: idempotent submissions, rate limits and change events, on a real redis-server.

Lost replies are made by a small TCP proxy in front of the server that forwards a request and
then, instead of the reply, closes the connection: the write reached Redis, its reply never
reached the client.
"""

from __future__ import annotations

import asyncio
import random
import socket
import threading
import time
from typing import Any, Callable, Iterator

import pytest

from conftest import RedisServer, unique_key
from redis_leaderboard import (
    AsyncRedisLeaderboard,
    Client,
    ConnectionError,
    RateLimited,
    RedisLeaderboard,
    ResponseError,
)
from redis_leaderboard.asyncio import Client as AsyncClient


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "guards") as name:
        yield name


class ReplyDropper:
    """A TCP proxy to `port`: its first `drops` connections forward the client's bytes and
    close as soon as the server answers (the reply is dropped); later ones pass through."""

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
            drop = self.dropped < self.drops
            if drop:
                self.dropped += 1
            threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, drop), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket, drop: bool) -> None:
        try:
            while data := source.recv(65536):
                if drop:  # the write ran; its reply goes nowhere
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


# ---- Idempotency ----------------------------------------------------------------------------


def test_a_repeated_submission_returns_the_stored_result(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10)
    first = board.submit("mina", 5, {"team": "red"}, mode="incr", submission_id="m1:p1")
    assert first["duplicate"] is False and first["score"] == 5
    board.submit("priya", 9)
    again = board.submit("mina", 5, {"team": "blue"}, mode="incr", submission_id="m1:p1")
    assert again == {**first, "duplicate": True}  # the stored result, rank then included
    assert board.get_user_entry("mina") == {
        "user_id": "mina",
        "score": 5.0,
        "rank": 2,
        "metadata": {"team": "red"},
    }
    # Without an id there is no "duplicate" key: submit()'s shape is unchanged.
    assert "duplicate" not in board.submit("mina", 1, mode="incr")


def test_the_same_id_from_8_threads_applies_once(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10)
    results: list[dict[str, Any]] = []

    def worker() -> None:
        for _ in range(125):
            results.append(board.submit("u", 1, mode="incr", submission_id="once"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 1000
    assert sum(not r["duplicate"] for r in results) == 1
    assert all(r["score"] == 1.0 for r in results)
    assert board.get_user_entry("u")["score"] == 1.0  # type: ignore[index]


def test_the_same_id_from_500_tasks_applies_once(redis_server: RedisServer, key: str) -> None:
    async def main() -> list[dict[str, Any]]:
        async with AsyncClient(port=redis_server.port) as aclient:
            board = AsyncRedisLeaderboard(aclient, key, 10)

            async def task() -> list[dict[str, Any]]:
                return [
                    await board.submit("u", 1, mode="incr", submission_id="once") for _ in range(2)
                ]

            batches = await asyncio.gather(*(task() for _ in range(500)))
            return [r for batch in batches for r in batch]

    results = asyncio.run(main())
    assert len(results) == 1000
    assert sum(not r["duplicate"] for r in results) == 1
    assert redis_server.redis_py().zscore(key, "u") == 1.0


def test_ids_expire_after_the_ttl(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, submission_ttl=0.2)
    assert board.submit("u", 1, mode="incr", submission_id="x")["duplicate"] is False
    assert 0 < client.execute_command("PTTL", f"{key}:submission:x") <= 200
    assert board.submit("u", 1, mode="incr", submission_id="x")["duplicate"] is True
    time.sleep(0.3)
    again = board.submit("u", 1, mode="incr", submission_id="x")
    assert again["duplicate"] is False and again["score"] == 2.0


@pytest.mark.parametrize("flavour", ["sync", "asyncio"])
def test_a_lost_reply_is_resent_and_applies_once(
    redis_server: RedisServer, key: str, flavour: str
) -> None:
    direct = RedisLeaderboard(Client(port=redis_server.port), key, 10)
    direct.submit("warm", 1)  # the script is cached: the first attempt runs, not NOSCRIPT
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        if flavour == "sync":
            board = RedisLeaderboard(Client(port=proxy.port, socket_timeout=5), key, 10)
            result = board.submit("u", 7, mode="incr", submission_id="lost")
            # Without an id, the same loss (a new client: a new connection) raises, not resent.
            proxy.drops += 1
            other = RedisLeaderboard(Client(port=proxy.port, socket_timeout=5), key, 10)
            with pytest.raises(ConnectionError):
                other.submit("v", 1, mode="incr")
        else:

            async def main() -> dict[str, Any]:
                async with AsyncClient(port=proxy.port, socket_timeout=5) as aclient:
                    board = AsyncRedisLeaderboard(aclient, key, 10)
                    out = await board.submit("u", 7, mode="incr", submission_id="lost")
                proxy.drops += 1
                async with AsyncClient(port=proxy.port, socket_timeout=5) as aclient:
                    other = AsyncRedisLeaderboard(aclient, key, 10)
                    with pytest.raises(ConnectionError):
                        await other.submit("v", 1, mode="incr")
                return out

            result = asyncio.run(main())
    finally:
        proxy.close()
    assert proxy.dropped == 2
    # The first attempt applied (its reply was lost); the resend found its stored result.
    assert result["duplicate"] is True and result["score"] == 7.0
    r = redis_server.redis_py()
    assert r.zscore(key, "u") == 7.0
    assert r.zscore(key, "v") == 1.0  # applied once, reported as a ConnectionError


@pytest.mark.parametrize("flavour", ["sync", "asyncio"])
def test_resends_are_bounded_then_connection_error(
    redis_server: RedisServer, key: str, flavour: str
) -> None:
    RedisLeaderboard(Client(port=redis_server.port), key, 10).submit("warm", 1)
    proxy = ReplyDropper(redis_server.port, drops=100)
    try:
        if flavour == "sync":
            board = RedisLeaderboard(Client(port=proxy.port, socket_timeout=5), key, 10)
            with pytest.raises(ConnectionError, match="no reply after 3 attempts"):
                board.submit("u", 7, mode="incr", submission_id="never")
        else:

            async def main() -> None:
                async with AsyncClient(port=proxy.port, socket_timeout=5) as aclient:
                    board = AsyncRedisLeaderboard(aclient, key, 10)
                    with pytest.raises(ConnectionError, match="no reply after 2 attempts"):
                        await board.submit("u", 7, mode="incr", submission_id="never", retries=1)

            asyncio.run(main())
    finally:
        proxy.close()
    assert proxy.dropped == (3 if flavour == "sync" else 2)
    assert redis_server.redis_py().zscore(key, "u") == 7.0  # applied exactly once


def test_upsert_many_skips_entries_whose_id_was_applied(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 100)
    entries = [(f"u{i}", i, None, f"import-1:{i}") for i in range(10)]
    assert board.upsert_many(entries)["written"] == 10
    board.upsert_user("u3", 100)
    again = board.upsert_many([*entries, ("u10", 10, {"a": "b"}, "import-1:10"), ("u11", 11)])
    assert again["written"] == 2 and again["duplicates"] == 10
    assert board.get_user_entry("u3")["score"] == 100.0  # type: ignore[index]
    # The same id twice in one chunk applies once.
    dup = board.upsert_many([("w", 1, None, "same"), ("w", 2, None, "same")])
    assert dup["written"] == 1 and board.get_user_entry("w")["score"] == 1.0  # type: ignore[index]


def test_bad_submission_ids_raise_before_anything_is_sent(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10)
    with pytest.raises(ValueError):
        board.submit("u", 1, submission_id="")
    with pytest.raises(TypeError):
        board.submit("u", 1, submission_id=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        board.submit("u", 1, submission_id="x", retries=-1)
    with pytest.raises(TypeError):
        board.upsert_many([("u", 1, None, 7)])
    assert client.execute_command("EXISTS", key) == 0


# ---- Rate limits ----------------------------------------------------------------------------


def test_rate_limited_is_a_response_error_not_a_connection_error() -> None:
    assert issubclass(RateLimited, ResponseError)
    assert not issubclass(RateLimited, ConnectionError)


def test_a_burst_gets_exactly_max_writes(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, rate_limit=(5, 2.0))
    for i in range(5):
        board.submit("spammer", i)
    board.submit("other", 1)  # per user
    with pytest.raises(RateLimited) as raised:
        board.submit("spammer", 99, {"x": "y"})
    assert 1.0 < raised.value.retry_after <= 2.0
    # Nothing was written.
    assert board.get_user_entry("spammer") == {
        "user_id": "spammer",
        "score": 4.0,
        "rank": 1,
        "metadata": {},
    }
    # The window slides: still full a little before retry_after, room after it.
    waited = time.monotonic()
    time.sleep(raised.value.retry_after - 0.5)
    with pytest.raises(RateLimited) as again:
        board.submit("spammer", 100)
    assert again.value.retry_after <= raised.value.retry_after - (time.monotonic() - waited) + 0.05
    time.sleep(again.value.retry_after + 0.01)
    board.submit("spammer", 100)


def test_an_idle_user_leaves_no_key(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, rate_limit=(3, 0.2))
    board.upsert_user("u", 1)
    board.increment_score("u", 1)
    assert 0 < client.execute_command("PTTL", f"{key}:rate:u") <= 200
    time.sleep(0.3)
    assert client.execute_command("EXISTS", f"{key}:rate:u") == 0


def test_a_duplicate_does_not_count_against_the_limit(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, rate_limit=(1, 60))
    board.submit("u", 1, submission_id="a")
    assert board.submit("u", 1, submission_id="a")["duplicate"] is True
    with pytest.raises(RateLimited):
        board.submit("u", 2, submission_id="b")


def test_guards_are_recorded_and_a_client_without_them_is_refused(client: Client, key: str) -> None:
    RedisLeaderboard(client, key, 10, rate_limit=(5, 60), events=True).submit("u", 1)
    plain = RedisLeaderboard(client, key, 10)
    with pytest.raises(ValueError, match=r"rate_limit=\(5, 60\), events=True"):
        plain.upsert_user("v", 1)
    with pytest.raises(ValueError, match="rate_limit"):
        plain.upsert_many([("v", 1)])
    with pytest.raises(ValueError):
        RedisLeaderboard(client, key, 10, rate_limit=(6, 60), events=True).submit("v", 1)
    assert plain.get_top(10)[0]["user_id"] == "u"  # reads are not refused
    assert client.execute_command("ZSCORE", key, "v") is None


def test_async_rate_limit(redis_server: RedisServer, key: str) -> None:
    async def main() -> None:
        async with AsyncClient(port=redis_server.port) as aclient:
            board = AsyncRedisLeaderboard(aclient, key, 10, rate_limit=(3, 30))
            outcomes = await asyncio.gather(
                *(board.submit("u", i) for i in range(10)), return_exceptions=True
            )
            assert sum(not isinstance(o, BaseException) for o in outcomes) == 3
            assert all(isinstance(o, RateLimited) for o in outcomes[3:])

    asyncio.run(main())


# ---- Events ---------------------------------------------------------------------------------


def overtaken_model(before: list[str], after: list[str], user: str) -> list[str]:
    """Ids ahead of `user` before (all if it was absent) and behind it after, nearest first."""
    if user not in after:
        return []
    ahead_before = set(before[: before.index(user)] if user in before else before)
    behind = after[after.index(user) + 1 :]
    return [u for u in behind if u in ahead_before][:10]


def test_events_match_a_model_over_random_writes(client: Client, key: str) -> None:
    rng = random.Random(17)
    board = RedisLeaderboard(client, key, 15, events=True)
    expected: list[dict[str, Any]] = []
    for _ in range(300):
        before = [e["user_id"] for e in board.list_all()]
        user = f"p{rng.randrange(25)}"
        mode = rng.choice(["set", "best", "incr"])
        result = board.submit(user, rng.randrange(-5, 40), mode=mode)
        after = [e["user_id"] for e in board.list_all()]
        if result["changed"] or result["trimmed_user_ids"]:
            expected.append(
                {
                    "user_id": user,
                    "score": result["score"],
                    "rank": result["rank"],
                    "previous_score": result["previous_score"],
                    "previous_rank": result["previous_rank"],
                    "trimmed_user_ids": result["trimmed_user_ids"],
                    "overtaken": overtaken_model(before, after, user),
                }
            )
    events = list(board.events("0", block=0))
    assert [{k: v for k, v in e.items() if k != "id"} for e in events] == expected
    ids = [e["id"] for e in events]
    assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))


def test_no_event_for_a_write_that_changed_nothing(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, events=True)
    board.submit("u", 10, mode="best")
    board.submit("u", 5, mode="best")  # not better: nothing changes
    board.upsert_user("u", 10)  # the same score
    assert [e["score"] for e in board.events("0", block=0)] == [10.0]


def test_a_reader_resumes_from_its_last_id_and_misses_nothing(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 100, events=True)
    for i in range(5):
        board.upsert_user(f"u{i}", i)
    reader = board.events("0", block=0)
    seen = [next(reader) for _ in range(3)]
    reader.close()  # disconnects
    for i in range(5, 8):
        board.upsert_user(f"u{i}", i)
    rest = list(board.events(seen[-1]["id"], block=0))
    assert [e["user_id"] for e in seen + rest] == [f"u{i}" for i in range(8)]


def test_the_stream_stays_capped(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 2000, events=True, events_maxlen=100)
    board.upsert_many((f"u{i}", i) for i in range(1000))
    for i in range(300):
        board.increment_score(f"u{i}", 1000)
    length = client.execute_command("XLEN", f"{key}:events")
    assert 100 <= length < 300  # MAXLEN ~: whole macro nodes of 100 entries


def test_a_blocked_reader_gets_a_write_made_after_it_started(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, events=True)
    board.upsert_user("old", 1)  # before the reader: not seen with "$"
    got: list[dict[str, Any]] = []
    started = threading.Event()

    def read() -> None:
        reader = board.events(block=5)
        started.set()
        got.append(next(reader))
        reader.close()

    thread = threading.Thread(target=read)
    thread.start()
    started.wait()
    time.sleep(0.3)  # the reader is blocked in XREAD (its own connection)
    board.upsert_user("mina", 7)  # the pooled connection is free for this write
    thread.join(10)
    assert got and got[0]["user_id"] == "mina" and got[0]["overtaken"] == ["old"]


def test_async_events(redis_server: RedisServer, key: str, arun: Callable[..., Any]) -> None:
    async def main() -> list[str]:
        async with AsyncClient(port=redis_server.port) as aclient:
            board = AsyncRedisLeaderboard(aclient, key, 10, events=True)
            seen: list[str] = []

            async def read() -> None:
                async for event in board.events(block=5):
                    seen.append(event["user_id"])
                    if len(seen) == 3:
                        return

            reader = asyncio.create_task(read())
            await asyncio.sleep(0.2)
            for user in ("a", "b", "c"):
                await board.upsert_user(user, 1)  # the shared connection is not blocked
            await asyncio.wait_for(reader, 10)
            # A reader left blocked is cancelled cleanly.
            idle = asyncio.create_task(board.events(block=None).__anext__())
            await asyncio.sleep(0.1)
            idle.cancel()
            with pytest.raises(asyncio.CancelledError):
                await idle
            return seen

    assert arun(main()) == ["a", "b", "c"]


def test_events_with_block_end_when_nothing_comes(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, events=True)
    started = time.monotonic()
    assert list(board.events(block=0.3)) == []
    assert 0.25 < time.monotonic() - started < 3
    with pytest.raises(ValueError):
        list(board.events(block=-1))


def test_upsert_many_appends_events(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, events=True)
    board.upsert_user("a", 5)
    board.upsert_many([("b", 9), ("a", 5), ("c", 1)])
    events = list(board.events("0", block=0))
    assert [(e["user_id"], e["rank"], e["overtaken"]) for e in events] == [
        ("a", 1, []),
        ("b", 1, ["a"]),
        ("c", 3, []),
    ]
