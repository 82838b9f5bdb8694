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
from typing import Any, Callable, Iterator, Optional

import pytest

from conftest import RedisServer, unique_key
from redis_leaderboard import (
    AsyncRedisLeaderboard,
    Client,
    ConnectionError,
    NoPermissionError,
    PeriodicLeaderboard,
    RateLimited,
    RedisLeaderboard,
    ResponseError,
    SubmissionIdReused,
    _core,
)
from redis_leaderboard.asyncio import Client as AsyncClient
from test_atomicity import PASSWORD, make_user, minimal_rule


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
    again = board.submit("mina", 5, {"team": "red"}, mode="incr", submission_id="m1:p1")
    assert again == {**first, "duplicate": True}  # the stored result, rank then included
    # The id belongs to that payload: another score, mode or metadata raises, writes nothing.
    clashes: list[tuple[float, Any, Any]] = [(5, {"team": "blue"}, "incr"), (6, None, "incr")]
    for score, metadata, mode in [*clashes, (5, {"team": "red"}, "set")]:
        with pytest.raises(SubmissionIdReused, match="another score, mode or metadata"):
            board.submit("mina", score, metadata, mode=mode, submission_id="m1:p1")
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
    # The same id twice in one chunk, for the same payload, applies once.
    dup = board.upsert_many([("w", 1, None, "same"), ("w", 1, None, "same")])
    assert dup["written"] == 1 and board.get_user_entry("w")["score"] == 1.0  # type: ignore[index]
    # For another payload or user, the chunk is refused whole: nothing written.
    size = board.get_size()
    for clash in [("w", 2, None, "same"), ("x", 1, None, "same"), ("w", 1, {"a": "b"}, "same")]:
        with pytest.raises(SubmissionIdReused):
            board.upsert_many([("y", 1), clash])
        assert board.get_size() == size and board.get_user_entry("y") is None


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
                    "kind": "score",
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


# ---- Events of every change (deletions, trims, clears, bulk loads) ----------------------------


class BoardModel:
    """A default board (desc, lexicographic ties) in plain Python, with the events each change
    appends to its stream: what the scripts must do, written the slow, obvious way."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.scores: dict[str, float] = {}
        self.events: list[dict[str, Any]] = []

    def order(self) -> list[str]:
        """Best first: higher scores, then (Redis's ZREVRANGE) greater member bytes."""
        return sorted(self.scores, key=lambda u: (self.scores[u], u.encode()), reverse=True)

    def _trim(self) -> list[str]:
        """Removes the worst entries beyond max_entries; returns them, worst first."""
        overflow = len(self.scores) - self.max_entries
        worst = list(reversed(self.order()))[: max(0, overflow)]
        for user in worst:
            del self.scores[user]
        return worst

    @staticmethod
    def _nothing() -> dict[str, Any]:
        return {
            "user_id": None,
            "score": None,
            "rank": None,
            "previous_score": None,
            "previous_rank": None,
            "trimmed_user_ids": [],
            "overtaken": [],
        }

    def _score_event(
        self, user: str, written: float, before: list[str], old: Optional[float], trimmed: list[str]
    ) -> None:
        after = self.order()
        self.events.append(
            {
                "kind": "score",
                "user_id": user,
                "score": self.scores.get(user, written),
                "rank": after.index(user) + 1 if user in self.scores else None,
                "previous_score": old,
                "previous_rank": before.index(user) + 1 if old is not None else None,
                "trimmed_user_ids": trimmed,
                "overtaken": overtaken_model(before, after, user),
            }
        )

    def _trim_events(self, trimmed: list[str]) -> None:
        for i in range(0, len(trimmed), 1000):
            self.events.append(
                {**self._nothing(), "kind": "trim", "trimmed_user_ids": trimmed[i : i + 1000]}
            )

    def submit(self, user: str, score: float, mode: str) -> dict[str, Any]:
        before, old = self.order(), self.scores.get(user)
        new = score
        if old is not None and mode == "incr":
            new = old + score
        elif old is not None and mode == "best" and not score > old:
            new = old
        changed = old is None or new != old
        self.scores[user] = new
        trimmed = self._trim()
        if changed or trimmed:
            self._score_event(user, new, before, old, trimmed)
        return {"score": new, "changed": changed, "trimmed_user_ids": trimmed}

    def delete_user(self, user: str) -> bool:
        if user not in self.scores:
            return False
        rank = self.order().index(user) + 1
        score = self.scores.pop(user)
        self.events.append(
            {
                **self._nothing(),
                "kind": "delete",
                "user_id": user,
                "score": score,
                "previous_score": score,
                "previous_rank": rank,
            }
        )
        return True

    def set_max_entries(self, max_entries: int) -> list[str]:
        self.max_entries = max_entries
        trimmed = self._trim()
        self._trim_events(trimmed)
        return trimmed

    def upsert_many(self, entries: list[tuple[str, float]]) -> int:
        for user, score in entries:
            before, old = self.order(), self.scores.get(user)
            self.scores[user] = score
            if old is None or score != old:
                self._score_event(user, score, before, old, [])
        trimmed = self._trim()
        self._trim_events(trimmed)
        return len(trimmed)

    def clear(self) -> None:
        # Boards of up to 5,000 entries clear in one page: one event.
        if self.scores:
            self.events.append({**self._nothing(), "kind": "clear", "removed": len(self.scores)})
            self.events[-1]["size"] = 0
        self.scores.clear()


async def drive_model(board: Any, asynchronous: bool, seed: int) -> BoardModel:
    """Random writes, deletions, trims, bulk loads and clears on `board` and on the model, their
    results checked as they go; returns the model (its events are what the stream must hold)."""

    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        out = getattr(board, name)(*args, **kwargs)
        return await out if asynchronous else out

    rng = random.Random(seed)
    model = BoardModel(board.max_entries)
    for _ in range(250):
        user = f"p{rng.randrange(25)}"
        action = rng.choices(
            ["submit", "delete", "delete_absent", "trim", "bulk", "clear"], [60, 12, 3, 8, 12, 3]
        )[0]
        if action == "submit":
            mode, score = rng.choice(["set", "best", "incr"]), rng.randrange(-5, 40)
            result = await call("submit", user, score, mode=mode)
            expected = model.submit(user, score, mode)
            assert {k: result[k] for k in expected} == expected
        elif action in ("delete", "delete_absent"):
            if action == "delete" and model.scores:
                user = rng.choice(sorted(model.scores))
            assert await call("delete_user", user) == model.delete_user(user)
        elif action == "trim":
            limit = rng.randrange(4, 20)
            assert await call("set_max_entries", limit) == model.set_max_entries(limit)
        elif action == "bulk":
            entries = [(f"p{rng.randrange(25)}", float(rng.randrange(-5, 40))) for _ in range(6)]
            summary = await call("upsert_many", entries)
            assert summary["trimmed"] == model.upsert_many(entries)
        else:
            await call("clear")
            model.clear()
    assert [e["user_id"] for e in await call("list_all")] == model.order()
    return model


def without_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "id"} for e in events]


def test_every_change_appends_the_models_events(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 12, events=True)
    model = asyncio.run(drive_model(board, False, seed=171))
    kinds = {e["kind"] for e in model.events}
    assert kinds == {"score", "delete", "trim", "clear"}  # the run exercised every kind
    assert without_ids(list(board.events("0", block=0))) == model.events


def test_async_every_change_appends_the_models_events(redis_server: RedisServer, key: str) -> None:
    async def main() -> tuple[BoardModel, list[dict[str, Any]]]:
        async with AsyncClient(port=redis_server.port) as aclient:
            board = AsyncRedisLeaderboard(aclient, key, 12, events=True)
            model = await drive_model(board, True, seed=172)
            async with board.events("0", block=0) as stream:
                return model, [e async for e in stream]

    model, events = asyncio.run(main())
    assert {e["kind"] for e in model.events} == {"score", "delete", "trim", "clear"}
    assert without_ids(events) == model.events


def test_removal_events_have_every_field_of_a_write_event(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10, events=True)
    board.upsert_many([("a", 3), ("b", 2), ("c", 1)])
    board.delete_user("b")
    assert board.delete_user("nobody") is False  # no entry changed: no event
    board.set_max_entries(1)
    board.clear()
    events = list(board.events("0", block=0))
    assert [e["kind"] for e in events] == ["score"] * 3 + ["delete", "trim", "clear"]
    write_fields = set(events[0])
    assert write_fields == {
        "id",
        "kind",
        "user_id",
        "score",
        "rank",
        "previous_score",
        "previous_rank",
        "trimmed_user_ids",
        "overtaken",
    }
    assert set(events[3]) == set(events[4]) == write_fields
    assert set(events[5]) == write_fields | {"removed", "size"}
    assert without_ids(events[3:]) == [
        {
            "kind": "delete",
            "user_id": "b",
            "score": 2.0,
            "rank": None,
            "previous_score": 2.0,
            "previous_rank": 2,
            "trimmed_user_ids": [],
            "overtaken": [],
        },
        {**BoardModel._nothing(), "kind": "trim", "trimmed_user_ids": ["c"]},
        {**BoardModel._nothing(), "kind": "clear", "removed": 1, "size": 0},
    ]


@pytest.mark.parametrize("ties", ["first", "competition", "dense"])
def test_a_deletion_reports_the_rank_under_the_boards_tie_rule(
    client: Client, key: str, ties: Any
) -> None:
    board = RedisLeaderboard(client, key, 10, ties=ties, events=True)
    for user, score in (("a", 5), ("b", 7), ("c", 5), ("d", 1)):
        board.upsert_user(user, score)
    rank = board.get_rank("c")
    assert board.delete_user("c") is True
    board.set_max_entries(2)  # trims d
    event, trim = list(board.events("0", block=0))[-2:]
    assert (event["kind"], event["previous_rank"], event["score"]) == ("delete", rank, 5.0)
    assert (trim["kind"], trim["trimmed_user_ids"]) == ("trim", ["d"])
    assert board.list_all()[-1]["user_id"] == "a"
    # A clear removes the option keys with the last entry; its event stays.
    board.clear()
    last = list(board.events("0", block=0))[-1]
    assert (last["kind"], last["removed"], last["size"]) == ("clear", 2, 0)
    assert client.execute_command("KEYS", f"{key}*") == [f"{key}:events".encode()]


def test_a_big_clear_appends_one_event_a_page_not_one_an_entry(client: Client, key: str) -> None:
    # Loaded by a client without events (the board records none), cleared by one with them.
    RedisLeaderboard(client, key, 20_000).upsert_many((f"u{i}", i) for i in range(12_000))
    board = RedisLeaderboard(client, key, 20_000, events=True)
    board.clear()
    events = list(board.events("0", block=0))
    assert [(e["kind"], e["removed"], e["size"]) for e in events] == [
        ("clear", 5000, 7000),
        ("clear", 5000, 2000),
        ("clear", 2000, 0),
    ]
    assert all(e["trimmed_user_ids"] == [] and e["user_id"] is None for e in events)
    assert client.execute_command("EXISTS", key) == 0


def test_a_big_trim_lists_every_id_a_thousand_an_event(client: Client, key: str) -> None:
    RedisLeaderboard(client, key, 20_000).upsert_many((f"u{i:05}", i) for i in range(12_000))
    board = RedisLeaderboard(client, key, 20_000, events=True)
    assert len(board.set_max_entries(100)) == 11_900
    events = list(board.events("0", block=0))
    assert {e["kind"] for e in events} == {"trim"}
    assert [len(e["trimmed_user_ids"]) for e in events] == [1000] * 11 + [900]
    ids = [u for e in events for u in e["trimmed_user_ids"]]
    assert ids == [f"u{i:05}" for i in range(11_900)]  # worst first


def test_upsert_many_appends_trim_events_for_its_closing_trim(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 2, events=True)
    summary = board.upsert_many([("a", 1), ("b", 2), ("c", 3), ("d", 4)])
    assert summary["trimmed_user_ids"] == ["a", "b"]
    events = list(board.events("0", block=0))
    assert [e["kind"] for e in events] == ["score"] * 4 + ["trim"]
    assert events[-1]["trimmed_user_ids"] == ["a", "b"]


def snapshot(client: Client, key: str) -> dict[str, Any]:
    """Every key of the board (and its stream) with its type and content (DUMP)."""
    names = sorted(client.execute_command("KEYS", f"{key}*"))
    return {name: client.execute_command("DUMP", name) for name in names}


REMOVALS: list[tuple[str, tuple[Any, ...]]] = [
    ("delete_user", ("b",)),
    ("clear", ()),
    ("set_max_entries", (1,)),
]


@pytest.mark.parametrize("method, args", REMOVALS)
def test_a_removal_whose_event_cannot_be_appended_changes_nothing(
    client: Client, key: str, method: str, args: tuple[Any, ...]
) -> None:
    board = RedisLeaderboard(client, key, 10, events=True)
    board.upsert_many([("a", 3), ("b", 2, {"name": "B"}), ("c", 1)])
    client.execute_command("DEL", f"{key}:events")
    client.execute_command("SET", f"{key}:events", "not a stream")
    before = snapshot(client, key)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        getattr(board, method)(*args)
    assert snapshot(client, key) == before
    assert board.max_entries == 10


def test_async_a_removal_whose_event_cannot_be_appended_changes_nothing(
    redis_server: RedisServer, client: Client, key: str
) -> None:
    async def main() -> None:
        async with AsyncClient(port=redis_server.port) as aclient:
            board = AsyncRedisLeaderboard(aclient, key, 10, events=True)
            await board.upsert_many([("a", 3), ("b", 2, {"name": "B"}), ("c", 1)])
            client.execute_command("DEL", f"{key}:events")
            client.execute_command("SET", f"{key}:events", "not a stream")
            before = snapshot(client, key)
            for method, args in REMOVALS:
                with pytest.raises(ResponseError, match="WRONGTYPE"):
                    await getattr(board, method)(*args)
                assert snapshot(client, key) == before

    asyncio.run(main())


@pytest.fixture
def acl_key(acl_server: RedisServer) -> Iterator[tuple[RedisServer, Any, str]]:
    """(the ACL server, an admin redis-py client, a board key under "lb:"); cleaned up after."""
    admin = acl_server.redis_py()
    with unique_key(acl_server, "lb:guards") as name:
        yield acl_server, admin, name
    admin.acl_deluser("no-xadd")
    admin.close()


def test_a_removal_the_acl_denies_xadd_changes_nothing(
    acl_key: tuple[RedisServer, Any, str],
) -> None:
    server, admin, key = acl_key
    owner = RedisLeaderboard(Client(port=server.port), key, 10, events=True)
    owner.upsert_many([("a", 3), ("b", 2, {"name": "B"}), ("c", 1)])
    make_user(admin, "no-xadd", minimal_rule())  # the README's rule for a default board: no XADD
    denied = RedisLeaderboard(
        Client(port=server.port, username="no-xadd", password=PASSWORD), key, 10, events=True
    )
    before = {name: admin.dump(name) for name in sorted(admin.scan_iter(match=f"{key}*"))}
    for method, args in REMOVALS:
        with pytest.raises(NoPermissionError, match="'XADD'"):
            getattr(denied, method)(*args)
    assert {name: admin.dump(name) for name in sorted(admin.scan_iter(match=f"{key}*"))} == before


def test_a_client_without_events_may_not_remove_from_a_board_with_them(
    client: Client, key: str
) -> None:
    RedisLeaderboard(client, key, 10, events=True).upsert_many([("a", 3), ("b", 2)])
    plain = RedisLeaderboard(client, key, 10)
    before = snapshot(client, key)
    for method, args in REMOVALS:
        with pytest.raises(ValueError, match="events=True"):
            getattr(plain, method)(*args)
    assert snapshot(client, key) == before


def test_a_default_boards_removals_send_exactly_what_they_sent() -> None:
    # No events: the guide's path, its keys and arguments unchanged (no stream, no words).
    plain = _core.Board("lb", 10)
    for operation in (
        plain.delete_user("u"),
        plain.clear(),
        plain.set_max_entries(5),
        plain.trim_to_max_entries(),
    ):
        request = operation.request()
        assert b"events" not in request and b"desc" not in request
    request = plain.delete_user("u").request()
    assert request.startswith(b"*7\r\n$7\r\nEVALSHA\r\n")
    assert request.endswith(
        b"\r\n$1\r\n3\r\n$2\r\nlb\r\n$9\r\nlb:user:u\r\n$10\r\nlb:options\r\n$1\r\nu\r\n"
    )
    guarded = _core.Board("lb", 10, events=True, events_maxlen=50)
    assert (
        guarded.delete_user("u")
        .request()
        .endswith(
            b"$1\r\n4\r\n$2\r\nlb\r\n$9\r\nlb:user:u\r\n$10\r\nlb:options\r\n$9\r\nlb:events\r\n"
            b"$1\r\nu\r\n$4\r\ndesc\r\n$13\r\nlexicographic\r\n$9\r\nevents:50\r\n"
        )
    )


def test_a_periods_removal_events_expire_with_the_period(client: Client, key: str) -> None:
    weekly = PeriodicLeaderboard(client, key=key, period="week", events=True)
    weekly.upsert_user("ada", 5)
    board = weekly.current()
    client.execute_command("PERSIST", f"{board.key}:events")  # as if its stream had no deadline
    assert weekly.delete_user("ada") is True
    assert [e["kind"] for e in board.events("0", block=0)] == ["score", "delete"]
    # The board's sorted set is gone (its last entry deleted): its options hash has the deadline.
    deadline = client.execute_command("PTTL", f"{board.key}:options")
    assert 0 < client.execute_command("PTTL", f"{board.key}:events") <= deadline + 1000


# ---- Submission ids shared by upsert_many and submit ----------------------------------------


@pytest.mark.parametrize("ties", ["lexicographic", "competition"])
def test_submit_with_an_id_upsert_many_applied_is_a_duplicate(
    client: Client, key: str, ties: Any
) -> None:
    board = RedisLeaderboard(client, key, 10, ties=ties, events=True)
    board.upsert_many([("u", 5, {"team": "red"}, "import:1"), ("v", 9)])
    board.increment_score("u", 1)  # after the import: the entry now is what is reported
    events = len(list(board.events("0", block=0)))
    with pytest.raises(SubmissionIdReused):  # not the payload upsert_many applied
        board.submit("u", 99, {"team": "blue"}, mode="incr", submission_id="import:1")
    again = board.submit("u", 5, {"team": "red"}, submission_id="import:1")
    assert again == {
        "user_id": "u",
        "score": 6.0,
        "rank": 2,
        "previous_score": None,
        "previous_rank": None,
        "changed": False,
        "metadata": {"team": "red"},
        "trimmed_user_ids": [],
        "duplicate": True,
    }
    assert board.get_user_entry("u")["score"] == 6.0  # type: ignore[index]
    assert len(list(board.events("0", block=0))) == events  # nothing written, no event
    # Once the user has left the board: the score upsert_many wrote, as a write trimmed away.
    board.delete_user("u")
    gone = board.submit("u", 5, {"team": "red"}, submission_id="import:1")
    assert (gone["score"], gone["rank"], gone["metadata"], gone["duplicate"]) == (
        5.0,
        None,
        {},
        True,
    )
    assert board.get_user_entry("u") is None


def test_upsert_many_skips_an_id_submit_applied(client: Client, key: str) -> None:
    board = RedisLeaderboard(client, key, 10)
    board.submit("u", 3, submission_id="s:1")
    summary = board.upsert_many([("u", 3, None, "s:1"), ("v", 1, None, "s:2")])
    assert (summary["written"], summary["duplicates"]) == (1, 1)
    assert board.get_user_entry("u")["score"] == 3.0  # type: ignore[index]
    with pytest.raises(SubmissionIdReused):  # another score than submit()'s
        board.upsert_many([("u", 50, None, "s:1")])
    # And the id upsert_many applied gives submit() a duplicate, not an error.
    assert board.submit("v", 1, submission_id="s:2")["duplicate"] is True


def test_async_ids_shared_by_upsert_many_and_submit(redis_server: RedisServer, key: str) -> None:
    async def main() -> None:
        async with AsyncClient(port=redis_server.port) as aclient:
            board = AsyncRedisLeaderboard(aclient, key, 10)
            await board.upsert_many([("u", 5, None, "a:1")])
            with pytest.raises(SubmissionIdReused):
                await board.submit("u", 1, mode="incr", submission_id="a:1")
            again = await board.submit("u", 5, submission_id="a:1")
            assert (again["duplicate"], again["score"], again["rank"]) == (True, 5.0, 1)
            await board.submit("w", 2, submission_id="a:2")
            summary = await board.upsert_many([("w", 2, None, "a:2")])
            assert (summary["written"], summary["duplicates"]) == (0, 1)
            assert (await board.get_user_entry("w"))["score"] == 2.0  # type: ignore[index]

    asyncio.run(main())


def resp(value: Any) -> bytes:
    """RESP2 bytes of nested lists of strings (bulk strings) and None (a nil)."""
    if value is None:
        return b"$-1\r\n"
    if isinstance(value, list):
        return b"*%d\r\n" % len(value) + b"".join(resp(v) for v in value)
    data = value.encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


def test_events_are_parsed_by_kind_and_an_old_event_is_a_score_event() -> None:
    operation = _core.Board("lb", 10, events=True).read_events("0", 10)
    operation.request()
    entries = [
        # Written before events had kinds: a write's.
        ["1-0", ["user_id", "a", "score", "5", "rank", "1", "previous_score", ""]],
        ["2-0", ["kind", "clear", "removed", "5000", "size", "7000", "from_the_future", "x"]],
        ["3-0", ["kind", "trim", "trimmed", "a", "trimmed", "b"]],
    ]
    assert operation.feed(resp([["lb:events", entries]])) is True
    batch = operation.result()
    assert batch["last_id"] == "3-0"
    old, clear, trim = batch["events"]
    assert (old["kind"], old["user_id"], old["score"], old["rank"]) == ("score", "a", 5.0, 1)
    assert "removed" not in old and old["previous_rank"] is None
    assert clear == {
        "id": "2-0",
        "kind": "clear",
        **BoardModel._nothing(),
        "removed": 5000,
        "size": 7000,
    }
    assert (trim["kind"], trim["trimmed_user_ids"], trim["user_id"]) == ("trim", ["a", "b"], None)


def test_a_write_trimming_more_than_a_thousand_lists_the_rest_in_trim_events(
    client: Client, key: str
) -> None:
    RedisLeaderboard(client, key, 10_000, events=True).upsert_many(
        (f"u{i:04}", i) for i in range(2500)
    )
    small = RedisLeaderboard(client, key, 100, events=True)  # a smaller limit: 2,401 go
    result = small.upsert_user("top", 1e6)
    assert len(result["trimmed_user_ids"]) == 2401
    events = list(small.events("0", block=0))[2500:]
    assert [(e["kind"], len(e["trimmed_user_ids"])) for e in events] == [
        ("score", 1000),
        ("trim", 1000),
        ("trim", 401),
    ]
    assert [u for e in events for u in e["trimmed_user_ids"]] == result["trimmed_user_ids"]
