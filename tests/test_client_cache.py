"""Client-side caching of metadata (``client_cache=True``): reads equal uncached reads, a name
is never stale once its writer's call returned, and any doubt (the invalidation connection
killed, the server restarted, FLUSHALL, tracking refused) flushes the cache instead of trusting
it. Real servers only; writers and readers run concurrently on threads."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any, Callable, Iterator

import pytest

import redis_leaderboard
from conftest import RedisServer, unique_key
from redis_leaderboard import RedisLeaderboard


def caching_client(server: RedisServer, **kwargs: Any) -> redis_leaderboard.Client:
    return redis_leaderboard.Client(
        host=server.host, port=server.port, password=server.password, client_cache=True, **kwargs
    )


def plain_client(server: RedisServer) -> redis_leaderboard.Client:
    return redis_leaderboard.Client(host=server.host, port=server.port, password=server.password)


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "cache") as k:
        yield k


def reads(board: RedisLeaderboard, ids: list[str]) -> dict[str, Any]:
    """Every read that goes through the cache, on one board."""
    return {
        "top": board.get_top(100),
        "around_rank": board.get_around_rank(7, 5),
        "page": board.get_page(2, 4),
        "entries": board.get_entries([*ids, "nobody"]),
        "around_user": board.get_around_user(ids[3], 4),
        "all": board.list_all(),
    }


def test_options_are_checked() -> None:
    with pytest.raises(TypeError, match="client_cache must be a bool"):
        redis_leaderboard.Client(client_cache="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="client_cache_size"):
        redis_leaderboard.Client(client_cache=True, client_cache_size=0)
    with pytest.raises(ValueError, match="client_cache_max_bytes"):
        redis_leaderboard.Client(client_cache=True, client_cache_max_bytes=0)
    with pytest.raises(TypeError, match="client_cache_size must be an int"):
        redis_leaderboard.Client(client_cache=True, client_cache_size=1.5)  # type: ignore[arg-type]
    assert redis_leaderboard.Client().cache_info() is None  # off by default


def test_cached_reads_equal_uncached_reads_after_every_write(
    redis_server: RedisServer, key: str
) -> None:
    """A random seeded sequence of writes (the board's own, and raw HSET/DEL/HDEL of the
    metadata hashes from redis-py); after each one returned, every cached read equals the
    uncached read."""
    rng = random.Random(1515)
    ids = [f"u{i}" for i in range(20)]
    writer = plain_client(redis_server)
    cached = caching_client(redis_server)
    raw = redis_server.redis_py()
    try:
        truth = RedisLeaderboard(writer, key=key, max_entries=18)
        board = RedisLeaderboard(cached, key=key, max_entries=18)
        for user in ids:
            truth.upsert_user(user, rng.randrange(100), {"name": f"{user}-0", "team": "a"})
        for step in range(150):
            user = rng.choice(ids)
            action = rng.randrange(7)
            if action == 0:
                truth.upsert_user(user, rng.randrange(100), {"name": f"{user}-{step}"})
            elif action == 1:
                truth.increment_score(user, 1, {"team": rng.choice("abc")})
            elif action == 2:
                truth.increment_score(user, 2)  # no metadata: the hash is not written
            elif action == 3:
                raw.hset(f"{key}:user:{user}", "name", f"raw-{step}")
            elif action == 4:
                raw.delete(f"{key}:user:{user}")
            elif action == 5:
                raw.hdel(f"{key}:user:{user}", "team")
            else:
                truth.delete_user(user)
            assert reads(board, ids) == reads(truth, ids), f"step {step}"
        info = cached.cache_info()
        assert info is not None and info["hits"] > 0 and info["invalidations"] > 0
    finally:
        raw.close()


def test_warm_cache_reads_send_only_the_rank_query(redis_server: RedisServer, key: str) -> None:
    writer = plain_client(redis_server)
    cached = caching_client(redis_server)
    RedisLeaderboard(writer, key=key, max_entries=1000).upsert_many(
        (f"u{i}", i, {"name": f"Player {i}"}) for i in range(150)
    )
    board = RedisLeaderboard(cached, key=key, max_entries=1000)
    first = board.get_top(100)
    before = cached.stats()
    assert board.get_top(100) == first
    after = cached.stats()
    # One round trip, one command (the script without metadata): no HGETALL.
    assert after["round_trips"] - before["round_trips"] == 1
    assert after["commands"] - before["commands"] == 1
    info = cached.cache_info()
    assert info is not None and info["entries"] == 100 and info["tracking"]


def test_a_name_is_never_stale_after_its_writer_returned(
    redis_server: RedisServer, key: str
) -> None:
    """Writer threads rename users (each user has one writer, versions grow); reader threads
    note the versions whose writes had returned when their call started and check every name
    they read is at least that new."""
    users = [f"u{i}" for i in range(8)]
    committed = {u: 0 for u in users}
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[str] = []
    reads_done = [0]
    setup = plain_client(redis_server)
    RedisLeaderboard(setup, key=key, max_entries=100).upsert_many(
        (u, i, {"name": f"{u}:0"}) for i, u in enumerate(users)
    )
    raw_writer = redis_server.redis_py()
    cached = caching_client(redis_server)  # shared by the reader threads (a pool)

    def writer(mine: list[str], use_raw: bool) -> None:
        client = plain_client(redis_server)
        board = RedisLeaderboard(client, key=key, max_entries=100)
        version = 0
        while not stop.is_set():
            version += 1
            for user in mine:
                if use_raw:
                    raw_writer.hset(f"{key}:user:{user}", "name", f"{user}:{version}")
                else:
                    board.upsert_user(user, version, {"name": f"{user}:{version}"})
                with lock:
                    committed[user] = version

    def reader(read: Callable[[RedisLeaderboard], list[dict[str, Any]]]) -> None:
        board = RedisLeaderboard(cached, key=key, max_entries=100)
        while not stop.is_set():
            with lock:
                floor = dict(committed)
            for entry in read(board):
                name = entry["metadata"]["name"]
                user, version = name.split(":")
                if int(version) < floor[user]:
                    errors.append(f"{user}: read {name} after version {floor[user]} returned")
            reads_done[0] += 1

    threads = [
        threading.Thread(target=writer, args=(users[:4], False)),
        threading.Thread(target=writer, args=(users[4:], True)),
        threading.Thread(target=reader, args=(lambda b: b.get_top(100),)),
        threading.Thread(target=reader, args=(lambda b: b.get_page(1, 8)["entries"],)),
        threading.Thread(target=reader, args=(lambda b: [e for e in b.get_entries(users) if e],)),
    ]
    for thread in threads:
        thread.start()
    time.sleep(3)
    stop.set()
    for thread in threads:
        thread.join()
    raw_writer.close()
    assert not errors, errors[:5]
    info = cached.cache_info()
    assert info is not None
    assert reads_done[0] > 50 and info["hits"] > 0 and info["invalidations"] > 0


def kill_invalidation_connections(server: RedisServer) -> int:
    raw = server.redis_py()
    try:
        return int(raw.execute_command("CLIENT", "KILL", "TYPE", "pubsub"))
    finally:
        raw.close()


def test_invalidation_connection_killed(redis_server: RedisServer, key: str) -> None:
    """CLIENT KILL of the invalidation connection: the write that follows sends its invalidation
    nowhere, yet the next read shows the new name (the barrier fails, the cache is flushed), and
    the cache is set up again and used after."""
    writer = RedisLeaderboard(plain_client(redis_server), key=key, max_entries=10)
    cached = caching_client(redis_server)
    board = RedisLeaderboard(cached, key=key, max_entries=10)
    writer.upsert_user("a", 1, {"name": "old"})
    assert board.get_top(1)[0]["metadata"] == {"name": "old"}
    assert board.get_top(1)[0]["metadata"] == {"name": "old"}  # from the cache
    flushes = cached.cache_info()["flushes"]  # type: ignore[index]
    assert kill_invalidation_connections(redis_server) == 1
    writer.upsert_user("a", 1, {"name": "new"})
    assert board.get_top(1)[0]["metadata"] == {"name": "new"}
    info = cached.cache_info()
    assert info is not None and info["flushes"] > flushes
    # Set up again (at most a second later): reads are cached and invalidated again.
    deadline = time.monotonic() + 5
    while not cached.cache_info()["tracking"]:  # type: ignore[index]
        assert time.monotonic() < deadline
        time.sleep(0.05)
        board.get_top(1)
    hits = cached.cache_info()["hits"]  # type: ignore[index]
    assert board.get_top(1)[0]["metadata"] == {"name": "new"}
    writer.upsert_user("a", 1, {"name": "newer"})
    assert board.get_top(1)[0]["metadata"] == {"name": "newer"}
    assert cached.cache_info()["hits"] > hits  # type: ignore[index]


def test_server_restarted(fresh_redis_server: RedisServer) -> None:
    """The server restarts empty (no persistence) and the board is written again with other
    names: reads show them, never the cached ones."""
    server = fresh_redis_server
    cached = caching_client(server)
    board = RedisLeaderboard(cached, key="restart", max_entries=10)
    RedisLeaderboard(plain_client(server), key="restart", max_entries=10).upsert_user(
        "a", 1, {"name": "before"}
    )
    assert board.get_top(1)[0]["metadata"] == {"name": "before"}
    assert board.get_top(1)[0]["metadata"] == {"name": "before"}
    server.kill()
    server.start()  # same port, empty
    RedisLeaderboard(plain_client(server), key="restart", max_entries=10).upsert_user(
        "a", 1, {"name": "after"}
    )
    for _ in range(3):
        try:
            top = board.get_top(1)
        except redis_leaderboard.ConnectionError:
            continue  # a pooled connection to the old server, found dead: never retried
        assert top[0]["metadata"] == {"name": "after"}
        break
    else:
        pytest.fail("no read succeeded after the restart")
    assert board.get_top(1)[0]["metadata"] == {"name": "after"}


def test_flushall_flushes_the_cache(redis_server: RedisServer, key: str) -> None:
    writer = RedisLeaderboard(plain_client(redis_server), key=key, max_entries=10)
    cached = caching_client(redis_server)
    board = RedisLeaderboard(cached, key=key, max_entries=10)
    writer.upsert_user("a", 1, {"name": "x"})
    board.get_top(1)
    board.get_top(1)
    flushes = cached.cache_info()["flushes"]  # type: ignore[index]
    raw = redis_server.redis_py()
    try:
        raw.flushdb()
    finally:
        raw.close()
    assert board.get_top(1) == []
    writer.upsert_user("a", 1)  # no metadata now
    assert board.get_top(1)[0]["metadata"] == {}
    assert cached.cache_info()["flushes"] > flushes  # type: ignore[index]


def test_memory_bounds(redis_server: RedisServer, key: str) -> None:
    writer = RedisLeaderboard(plain_client(redis_server), key=key, max_entries=1000)
    writer.upsert_many((f"u{i:03d}", i, {"name": "x" * 100}) for i in range(200))
    by_count = caching_client(redis_server, client_cache_size=25)
    top = RedisLeaderboard(by_count, key=key, max_entries=1000).get_top(200)
    assert top == writer.get_top(200)
    info = by_count.cache_info()
    assert info is not None and info["entries"] == 25 and info["max_entries"] == 25
    by_bytes = caching_client(redis_server, client_cache_max_bytes=4000)
    board = RedisLeaderboard(by_bytes, key=key, max_entries=1000)
    for _ in range(2):
        assert board.get_top(200) == top
        info = by_bytes.cache_info()
        assert info is not None and 0 < info["bytes"] <= 4000 and info["entries"] < 200


def test_lru_keeps_the_most_recently_used(redis_server: RedisServer, key: str) -> None:
    writer = RedisLeaderboard(plain_client(redis_server), key=key, max_entries=1000)
    writer.upsert_many((f"u{i}", i, {"name": f"n{i}"}) for i in range(10))
    cached = caching_client(redis_server, client_cache_size=3)
    board = RedisLeaderboard(cached, key=key, max_entries=1000)
    board.get_entries(["u1", "u2", "u3"])
    board.get_entries(["u1"])  # u1 used last: u2 goes first
    board.get_entries(["u4"])
    hits = cached.cache_info()["hits"]  # type: ignore[index]
    board.get_entries(["u1", "u3", "u4"])
    assert cached.cache_info()["hits"] == hits + 3  # type: ignore[index]


def test_tracking_refused_reads_run_uncached(acl_server: RedisServer) -> None:
    """A user who may not run CLIENT (nor SUBSCRIBE): the cache never turns on, reads work."""
    raw = acl_server.redis_py()
    try:
        raw.execute_command(
            "ACL", "SETUSER", "nocache", "on", ">pw", "~*", "&*", "+@all", "-client", "-subscribe"
        )
    finally:
        raw.close()
    client = redis_leaderboard.Client(
        host=acl_server.host, port=acl_server.port, username="nocache", password="pw",
        client_cache=True,
    )  # fmt: skip
    board = RedisLeaderboard(client, key="refused", max_entries=10)
    board.upsert_user("a", 1, {"name": "x"})
    for _ in range(2):
        assert board.get_top(1)[0]["metadata"] == {"name": "x"}
    info = client.cache_info()
    assert info is not None and not info["tracking"] and info["entries"] == 0


# --- asyncio -------------------------------------------------------------------------------------


def async_caching_client(server: RedisServer) -> Any:
    import redis_leaderboard.asyncio as rl_asyncio

    return rl_asyncio.Client(
        host=server.host, port=server.port, password=server.password, client_cache=True
    )


async def warm(board: Any, client: Any) -> None:
    """Reads until the invalidation connection is set up (on an executor thread)."""
    deadline = time.monotonic() + 5
    while not client.cache_info()["tracking"]:
        assert time.monotonic() < deadline, "the cache never turned on"
        await board.get_top(1)
        await asyncio.sleep(0.01)


async def async_reads(board: Any, ids: list[str]) -> dict[str, Any]:
    return {
        "top": await board.get_top(100),
        "around_rank": await board.get_around_rank(7, 5),
        "page": await board.get_page(2, 4),
        "entries": await board.get_entries([*ids, "nobody"]),
        "around_user": await board.get_around_user(ids[3], 4),
        "all": await board.list_all(),
    }


def test_asyncio_cached_reads_equal_uncached_reads(
    redis_server: RedisServer, key: str, arun: Callable[..., Any]
) -> None:
    import redis_leaderboard.asyncio as rl_asyncio

    rng = random.Random(15)
    ids = [f"u{i}" for i in range(12)]
    truth = RedisLeaderboard(plain_client(redis_server), key=key, max_entries=100)
    raw = redis_server.redis_py()

    async def main() -> None:
        client = async_caching_client(redis_server)
        board = rl_asyncio.RedisLeaderboard(client, key=key, max_entries=100)
        for user in ids:
            truth.upsert_user(user, rng.randrange(50), {"name": f"{user}-0"})
        await warm(board, client)
        for step in range(60):
            user = rng.choice(ids)
            if step % 3 == 0:
                raw.hset(f"{key}:user:{user}", "name", f"raw-{step}")
            else:
                truth.upsert_user(user, rng.randrange(50), {"name": f"{user}-{step}"})
            assert await async_reads(board, ids) == reads(truth, ids), f"step {step}"
        info = client.cache_info()
        assert info["hits"] > 0 and info["invalidations"] > 0
        await client.aclose()

    try:
        arun(main())
    finally:
        raw.close()


def test_asyncio_never_stale_and_survives_a_killed_invalidation_connection(
    redis_server: RedisServer, key: str, arun: Callable[..., Any]
) -> None:
    """A writer thread renames users while reader tasks check every name against the versions
    whose writes had returned when their call started; halfway, the invalidation connection is
    killed."""
    import redis_leaderboard.asyncio as rl_asyncio

    users = [f"u{i}" for i in range(6)]
    committed = {u: 0 for u in users}
    lock = threading.Lock()
    stop = threading.Event()
    truth = RedisLeaderboard(plain_client(redis_server), key=key, max_entries=100)
    truth.upsert_many((u, i, {"name": f"{u}:0"}) for i, u in enumerate(users))

    def writer() -> None:
        board = RedisLeaderboard(plain_client(redis_server), key=key, max_entries=100)
        version = 0
        while not stop.is_set():
            version += 1
            for user in users:
                board.upsert_user(user, version, {"name": f"{user}:{version}"})
                with lock:
                    committed[user] = version

    async def main() -> list[str]:
        client = async_caching_client(redis_server)
        board = rl_asyncio.RedisLeaderboard(client, key=key, max_entries=100)
        await warm(board, client)
        errors: list[str] = []
        done = time.monotonic() + 3

        async def reader() -> None:
            while time.monotonic() < done:
                with lock:
                    floor = dict(committed)
                for entry in await board.get_top(100):
                    user, version = entry["metadata"]["name"].split(":")
                    if int(version) < floor[user]:
                        errors.append(f"{user}: {version} after {floor[user]} returned")

        async def killer() -> None:
            await asyncio.sleep(1.5)
            assert kill_invalidation_connections(redis_server) == 1

        await asyncio.gather(*[reader() for _ in range(4)], killer())
        assert client.cache_info()["hits"] > 0
        await client.aclose()
        return errors

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        errors = arun(main())
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:5]


def test_results_are_new_objects_every_call(redis_server: RedisServer, key: str) -> None:
    """Cached or not, metadata dicts are copied per result (the conversion reuses dicts of
    equal content): mutating one result never shows in another."""
    writer = RedisLeaderboard(plain_client(redis_server), key=key, max_entries=10)
    writer.upsert_user("a", 1, {"name": "x", "team": "t"})
    for client in (plain_client(redis_server), caching_client(redis_server)):
        board = RedisLeaderboard(client, key=key, max_entries=10)
        first = board.get_top(1)
        first[0]["metadata"]["name"] = "mutated"
        first[0]["metadata"]["extra"] = "1"
        second = board.get_top(1)
        assert second[0]["metadata"] == {"name": "x", "team": "t"}
        assert second[0]["metadata"] is not first[0]["metadata"]
        assert board.get_user_entry("a")["metadata"] == {"name": "x", "team": "t"}  # type: ignore[index]
