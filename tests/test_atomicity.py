"""A write that raises changed nothing; reads and deletes work when the server is out of memory.

Every writing script (upsert_user / increment_score, set_max_entries' trim, clear, delete_user)
checks what can fail before its first write: key types (the board, the writer's metadata hash,
the metadata hashes of the users it will trim) and the caller's ACL permissions; its ``#!lua``
flags let Redis refuse it up front when out of memory. Each test plants the fault on a real
private redis-server, makes the write raise, and compares a snapshot of every key of the board
(the sorted set with its scores, every metadata hash) taken before and after, for the sync and
the asyncio classes.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Callable, Optional

import pytest

import redis_leaderboard
from apis import Api
from conftest import EVENT_LOOPS, RedisServer
from helpers import UTC, FakeClock, snapshot
from redis_leaderboard import NoPermissionError, OutOfMemoryError, RedisLeaderboard, ResponseError
from redis_leaderboard._redis_server import ServerVersion
from redis_leaderboard.asyncio import Client as AsyncClient
from redis_leaderboard.asyncio import RedisLeaderboard as AsyncRedisLeaderboard

KINDS = ["sync", "asyncio"]
PASSWORD = "acl-pass"
# How a server words its refusal of a command's keys (a script's declared keys included), before
# running it: Redis 7.0 "this user has no permissions to access one of the keys used as
# arguments"; Redis 7.2+ and Valkey "No permissions to access a key".
DECLARED_KEYS_REFUSED = (
    "no permissions to access one of the keys",
    "No permissions to access a key",
)


def call(
    server: RedisServer,
    kind: str,
    key: str,
    max_entries: int,
    method: str,
    *args: Any,
    username: Optional[str] = None,
    password: Optional[str] = None,
    board_options: Optional[dict[str, Any]] = None,
) -> Any:
    """``RedisLeaderboard(..., **board_options).method(*args)`` on a new sync or asyncio
    client."""
    options = {"host": server.host, "port": server.port, "username": username, "password": password}
    extra = board_options or {}
    if kind == "sync":
        with redis_leaderboard.Client(**options) as client:
            board = RedisLeaderboard(client, key=key, max_entries=max_entries, **extra)
            return getattr(board, method)(*args)

    async def run() -> Any:
        async with AsyncClient(**options) as client:
            board = AsyncRedisLeaderboard(client, key=key, max_entries=max_entries, **extra)
            return await getattr(board, method)(*args)

    return asyncio.run(run())


def assert_raises_and_changes_nothing(
    r: Any, key: str, prefix: str, run: Callable[[], Any]
) -> ResponseError:
    before = snapshot(r, key)
    with pytest.raises(ResponseError) as raised:
        run()
    assert str(raised.value).startswith(prefix), str(raised.value)
    assert snapshot(r, key) == before
    return raised.value


def fill(r: Any, key: str) -> None:
    """A full board of three (max_entries=3): a 10, b 20, d 40, each with metadata."""
    r.zadd(key, {"a": 10, "b": 20, "d": 40})
    for user_id in "abd":
        r.hset(f"{key}:user:{user_id}", mapping={"name": user_id.upper(), "level": "1"})


# --- key types ---


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("upsert_user", ("c", 30, {"name": "C"})),
        ("increment_score", ("c", 30, {"name": "C"})),
        ("upsert_user", ("c", 30)),
        ("upsert_user", ("a", 5)),  # the writer is trimmed away by its own write
        ("delete_user", ("c",)),
    ],
)
def test_a_writers_metadata_key_of_another_type(
    redis_server: RedisServer, r: Any, board_key: str, kind: str, method: str, args: tuple
) -> None:
    fill(r, board_key)
    writer = args[0]
    r.delete(f"{board_key}:user:{writer}")
    r.set(f"{board_key}:user:{writer}", "x")
    error = assert_raises_and_changes_nothing(
        r, board_key, "WRONGTYPE", lambda: call(redis_server, kind, board_key, 3, method, *args)
    )
    assert f"{board_key}:user:{writer} is a string, not a hash" in str(error)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("upsert_user", ("c", 30, {"name": "C"})),
        ("increment_score", ("c", 30)),
        ("delete_user", ("a",)),
        ("clear", ()),
        ("set_max_entries", (1,)),
    ],
)
def test_a_board_key_of_another_type(
    redis_server: RedisServer, r: Any, board_key: str, kind: str, method: str, args: tuple
) -> None:
    r.set(board_key, "not a sorted set")
    r.hset(f"{board_key}:user:a", mapping={"name": "A"})
    r.hset(f"{board_key}:user:c", mapping={"name": "old C"})
    error = assert_raises_and_changes_nothing(
        r, board_key, "WRONGTYPE", lambda: call(redis_server, kind, board_key, 3, method, *args)
    )
    assert f"{board_key} is a string, not a zset" in str(error)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("method", "args", "max_entries"),
    [
        ("upsert_user", ("c", 30, {"name": "C"}), 3),  # trims a
        ("increment_score", ("c", 30), 3),
        ("upsert_user", ("b", 5), 1),  # b moves below a: both are trimmed
        ("set_max_entries", (2,), 3),
        ("clear", (), 3),
    ],
)
def test_a_trimmed_users_metadata_key_of_another_type(
    redis_server: RedisServer,
    r: Any,
    board_key: str,
    kind: str,
    method: str,
    args: tuple,
    max_entries: int,
) -> None:
    fill(r, board_key)
    r.delete(f"{board_key}:user:a")
    r.rpush(f"{board_key}:user:a", "not", "a", "hash")
    error = assert_raises_and_changes_nothing(
        r,
        board_key,
        "WRONGTYPE",
        lambda: call(redis_server, kind, board_key, max_entries, method, *args),
    )
    assert f"{board_key}:user:a is a list, not a hash" in str(error)


@pytest.mark.parametrize("kind", KINDS)
def test_only_the_users_a_write_trims_are_checked(
    redis_server: RedisServer, r: Any, board_key: str, kind: str
) -> None:
    # a, the lowest, has a list at its metadata key; a write that trims someone else (here the
    # writer itself, lower than everyone) or no one succeeds and leaves that key alone.
    fill(r, board_key)
    r.delete(f"{board_key}:user:a")
    r.rpush(f"{board_key}:user:a", "x")
    assert call(redis_server, kind, board_key, 3, "upsert_user", "low", 1, {"n": "1"}) == {
        "user_id": "low",
        "score": 1.0,
        "metadata": {"n": "1"},
        "trimmed_user_ids": ["low"],
    }
    # A tie on the score: members order by their bytes, "A" < "a", so "A" is trimmed.
    assert call(redis_server, kind, board_key, 3, "upsert_user", "A", 10)["trimmed_user_ids"] == [
        "A"
    ]
    assert call(redis_server, kind, board_key, 4, "upsert_user", "c", 30)["trimmed_user_ids"] == []
    assert r.lrange(f"{board_key}:user:a", 0, -1) == ["x"]
    assert r.zrange(board_key, 0, -1) == ["a", "b", "c", "d"]
    assert not r.exists(f"{board_key}:user:low", f"{board_key}:user:A")


def guide_write(r: Any, key: str, max_entries: int, user_id: str, score: float, incr: bool) -> list:
    """The guide's upsert / increment and _trim_to_max_entries, command by command."""
    if incr:
        r.zincrby(key, score, user_id)
    else:
        r.zadd(key, {user_id: score})
    r.hset(f"{key}:user:{user_id}", "seen", "1")
    overflow = r.zcard(key) - max_entries
    if overflow <= 0:
        return []
    trimmed = r.zrange(key, 0, overflow - 1)
    r.zremrangebyrank(key, 0, overflow - 1)
    r.delete(*(f"{key}:user:{u}" for u in trimmed))
    return trimmed


def test_the_trim_planned_before_the_write_is_the_guides(
    client: redis_leaderboard.Client, r: Any, board_key: str
) -> None:
    # The script works out whom the write will trim before writing (to check their keys): it
    # must be exactly whom the guide's trim after the write removes, ties and all.
    rng = random.Random(9)
    reference = f"{board_key}:reference"
    names = ["a", "b", "B", "aa", "ab", "é", "a\x00", "z", "zz", "m"]
    board = RedisLeaderboard(client, key=board_key, max_entries=5)
    for step in range(600):
        if step % 150 == 0:
            max_entries = rng.choice([1, 2, 5])
            board = RedisLeaderboard(client, key=board_key, max_entries=max_entries)
        user_id = rng.choice(names)
        score = float(rng.choice([-1, 0, 0, 1, 1, 2, 3.5]))
        incr = rng.random() < 0.4
        expected = guide_write(r, reference, max_entries, user_id, score, incr)
        if incr:
            result = board.increment_score(user_id, score, {"seen": "1"})
        else:
            result = board.upsert_user(user_id, score, {"seen": "1"})
        assert result["trimmed_user_ids"] == expected, step
        assert r.zrange(board_key, 0, -1, withscores=True) == r.zrange(
            reference, 0, -1, withscores=True
        )
    r.delete(reference, *r.scan_iter(match=f"{reference}:*"))


# --- ACL permissions ---

# The smallest rule that runs every method (ping included), for a board under "lb:".
MINIMAL_COMMANDS = [
    "evalsha",
    "eval",  # the NOSCRIPT fallback, after a restart or SCRIPT FLUSH
    "type",
    "zscore",
    "zcard",
    "zrange",
    "zrevrank",
    "hgetall",
    "zadd",
    "zincrby",
    "hset",
    "zrem",
    "zremrangebyrank",
    "unlink",
    "multi",  # upsert_many's chunks
    "exec",
    "ping",
]


def minimal_rule(keys: str = "~lb:*") -> list[str]:
    return ["on", f">{PASSWORD}", "resetkeys", keys, "-@all"] + [f"+{c}" for c in MINIMAL_COMMANDS]


@pytest.fixture
def acl(acl_server: RedisServer) -> Iterator[tuple[RedisServer, Any, str]]:
    """(server, admin redis-py client, a fresh board key under "lb:")."""
    admin = acl_server.redis_py()
    key = f"lb:{random.getrandbits(48):x}"
    yield acl_server, admin, key
    names = list(admin.scan_iter(match=f"{key}*"))
    if names:
        admin.delete(*names)
    for user in admin.acl_users():
        if user != "default":
            admin.acl_deluser(user)
    admin.close()


def make_user(admin: Any, name: str, rule: list[str]) -> str:
    admin.execute_command("ACL", "SETUSER", name, "reset", *rule)
    return name


EVERY_METHOD: list[tuple[str, tuple]] = [
    ("upsert_user", ("c", 30, {"name": "C"})),  # trims a
    ("increment_score", ("c", 1, {"level": "2"})),
    ("get_top", (2,)),
    ("get_around_rank", (2, 3)),
    ("get_rank", ("c",)),
    ("get_user_metadata", ("c",)),
    ("get_user_entry", ("c",)),
    ("list_all", ()),
    ("get_size", ()),
    ("delete_user", ("c",)),
    ("set_max_entries", (1,)),
    ("clear", ()),
]


@pytest.mark.parametrize("kind", KINDS)
def test_the_minimal_acl_rule_runs_every_method(acl: tuple, kind: str) -> None:
    server, admin, key = acl
    fill(admin, key)
    user = make_user(admin, f"minimal-{kind}", minimal_rule())
    admin.script_flush()  # every script goes through the NOSCRIPT fallback (EVAL) once
    results = {}
    for method, args in EVERY_METHOD:
        results[method] = call(
            server, kind, key, 3, method, *args, username=user, password=PASSWORD
        )
    assert results["upsert_user"]["trimmed_user_ids"] == ["a"]
    assert results["get_user_entry"] == {
        "rank": 2,
        "user_id": "c",
        "score": 31.0,
        "metadata": {"name": "C", "level": "2"},
    }
    assert results["delete_user"] is True
    assert results["set_max_entries"] == ["b"]
    assert admin.exists(key) == 0
    assert list(admin.scan_iter(match=f"{key}*")) == []
    with redis_leaderboard.Client(
        host=server.host, port=server.port, username=user, password=PASSWORD
    ) as client:
        assert client.ping() is True
        board = RedisLeaderboard(client, key=key, max_entries=2)
        assert board.upsert_many([("x", 1, {"m": "1"}), ("y", 2), ("z", 3)]) == {
            "written": 3,
            "trimmed": 1,
            "trimmed_user_ids": ["x"],
        }


@pytest.mark.parametrize("kind", KINDS)
def test_hiding_without_its_commands_changes_nothing(acl: tuple, kind: str) -> None:
    # Fair play: hide and unhide check every command they will run before their first write.
    server, admin, key = acl
    fill(admin, key)
    hiding = ["+hget", "+hdel", "+hkeys", "+hlen", "+hexists", "+exists"]
    user = make_user(admin, f"hider-{kind}", minimal_rule())
    assert_raises_and_changes_nothing(
        admin, key, "NOPERM",
        lambda: call(server, kind, key, 3, "hide", "a", username=user, password=PASSWORD),
    )  # fmt: skip
    user = make_user(admin, f"hider-{kind}", [*minimal_rule(), *hiding])
    assert call(server, kind, key, 3, "hide", "a", username=user, password=PASSWORD) is True
    assert admin.zscore(key, "a") is None and admin.hget(f"{key}:hidden", "a") == "10"
    # Unhiding without HLEN or HGET: NOPERM, nothing changed (without HLEN it took the player out
    # of the hidden hash, then failed with a Lua error: their score was kept nowhere).
    for missing in ("+hlen", "+hget"):
        rule = [*minimal_rule(), *(c for c in hiding if c != missing)]
        unhider = make_user(admin, f"unhider-{kind}", rule)
        assert_raises_and_changes_nothing(
            admin, key, "NOPERM",
            lambda u=unhider: call(server, kind, key, 3, "unhide", "a", username=u,
                                   password=PASSWORD),
        )  # fmt: skip
    assert call(server, kind, key, 3, "unhide", "a", username=user, password=PASSWORD) is True


def test_every_command_of_the_minimal_rule_is_needed(acl: tuple) -> None:
    # Without any one of them, some method raises NOPERM, and changes nothing.
    server, admin, key = acl
    for command in MINIMAL_COMMANDS:
        rule = [*minimal_rule(), f"-{command}"]
        user = make_user(admin, f"without-{command}", rule)
        admin.delete(*admin.scan_iter(match=f"{key}*"), key)
        fill(admin, key)
        admin.script_flush()
        failures = []
        for method, args in [*EVERY_METHOD, ("ping", ()), ("upsert_many", ([("x", 50)],))]:
            before = snapshot(admin, key)
            try:
                if method == "ping":
                    with redis_leaderboard.Client(
                        host=server.host, port=server.port, username=user, password=PASSWORD
                    ) as client:
                        client.ping()
                else:
                    call(server, "sync", key, 3, method, *args, username=user, password=PASSWORD)
            except ResponseError as e:
                if method == "upsert_many":  # EXECABORT ... NOPERM, or NOPERM
                    assert "NOPERM" in str(e), (command, str(e))
                else:  # (without MULTI, a chunk's commands would run one by one)
                    assert str(e).startswith("NOPERM"), (command, method, str(e))
                    assert snapshot(admin, key) == before, (command, method)
                failures.append(method)
        assert failures, f"every method works without +{command}"


# The reads run their commands without an ACL check of each first (redis.pcall): a refused one
# still raises NoPermissionError (NOPERM), whichever command or key it is.
READS_REFUSED = [
    ("-hgetall", "get_top", (2,)),
    ("-hgetall", "get_around_rank", (2, 3)),
    ("-hgetall", "list_all", ()),
    ("-hgetall", "get_user_entry", ("b",)),
    ("-zscore", "get_user_entry", ("b",)),
    ("-zrevrank", "get_user_entry", ("b",)),
    ("board only", "get_top", (2,)),  # the metadata hashes' keys refused
    ("board only", "get_user_entry", ("b",)),
]


def filled_for_reader(admin: Any, key: str, name: str, denied: str) -> str:
    """The board filled, and a user ``name`` of the minimal rule less ``denied`` (a command, or
    "board only": no key but the board's)."""
    fill(admin, key)
    rule = minimal_rule(f"~{key}") if denied == "board only" else [*minimal_rule(), denied]
    return make_user(admin, name, rule)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("denied", "method", "args"), READS_REFUSED)
def test_a_read_refused_a_command_or_key_raises_no_permission(
    acl: tuple, kind: str, denied: str, method: str, args: tuple
) -> None:
    server, admin, key = acl
    user = filled_for_reader(admin, key, f"reader-{kind}", denied)
    with pytest.raises(NoPermissionError, match=r"^NOPERM"):
        call(server, kind, key, 3, method, *args, username=user, password=PASSWORD)


def entry_after_rank(
    server: RedisServer, kind: str, key: str, user: str = "b", **login: Any
) -> Any:
    """``get_user_entry(user)`` on a board a ``get_rank`` has shown to record no options (a
    client that knows it sends no options key, and ``get_rank`` a bare ZREVRANK). The entry
    read is then the guide's MULTI, ZSCORE, ZREVRANK, HGETALL, EXEC; Redis before 7.4 refuses to
    queue them out of memory, and the script answers instead (see the out-of-memory test)."""
    options = {"host": server.host, "port": server.port, **login}
    if kind == "sync":
        with redis_leaderboard.Client(**options) as client:
            board = RedisLeaderboard(client, key=key, max_entries=3)
            board.get_rank(user)
            return board.get_user_entry(user)

    async def run() -> Any:
        async with AsyncClient(**options) as client:
            board = AsyncRedisLeaderboard(client, key=key, max_entries=3)
            await board.get_rank(user)
            return await board.get_user_entry(user)

    return asyncio.run(run())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("denied", ["-zscore", "-zrevrank", "-hgetall", "board only"])
def test_the_entry_read_of_a_known_board_refused_raises_no_permission(
    acl: tuple, kind: str, denied: str
) -> None:
    server, admin, key = acl
    user = filled_for_reader(admin, key, f"entry-{kind}", denied)
    with pytest.raises(NoPermissionError, match=r"^NOPERM"):
        entry_after_rank(server, kind, key, username=user, password=PASSWORD)
    allowed = make_user(admin, f"entry-ok-{kind}", minimal_rule())
    entry = entry_after_rank(server, kind, key, username=allowed, password=PASSWORD)
    assert entry == {
        "rank": 2,
        "user_id": "b",
        "score": 20.0,
        "metadata": {"name": "B", "level": "1"},
    }


@pytest.mark.parametrize("kind", KINDS)
def test_the_entry_read_of_a_known_board_of_a_wrong_type_raises(acl: tuple, kind: str) -> None:
    server, admin, key = acl
    fill(admin, key)
    admin.delete(f"{key}:user:b")
    admin.set(f"{key}:user:b", "not a hash")
    with pytest.raises(ResponseError, match=r"^WRONGTYPE"):
        entry_after_rank(server, kind, key)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("denied", "method", "args", "max_entries"),
    [
        ("hset", "upsert_user", ("c", 30, {"name": "C"}), 3),  # would write the score first
        ("hset", "increment_score", ("a", 30, {"name": "C"}), 3),
        ("unlink", "upsert_user", ("c", 30, {"name": "C"}), 3),  # would trim a, then fail
        ("unlink", "delete_user", ("a",), 3),
        ("unlink", "set_max_entries", (2,), 3),
        ("unlink", "clear", (), 3),
        ("zadd", "upsert_user", ("c", 30), 10),
        ("zincrby", "increment_score", ("c", 30), 10),
        ("zremrangebyrank", "upsert_user", ("c", 30), 3),
        ("zremrangebyrank", "set_max_entries", (1,), 3),
        ("zremrangebyrank", "clear", (), 3),
        ("zrem", "delete_user", ("a",), 3),
        ("zrevrank", "upsert_user", ("c", 30), 10),  # read back after the write
        ("hgetall", "increment_score", ("a", 30), 10),
    ],
)
def test_a_denied_command_changes_nothing(
    acl: tuple, kind: str, denied: str, method: str, args: tuple, max_entries: int
) -> None:
    server, admin, key = acl
    fill(admin, key)
    user = make_user(admin, f"no-{denied}-{kind}", [*minimal_rule(), f"-{denied}"])
    error = assert_raises_and_changes_nothing(
        admin,
        key,
        "NOPERM",
        lambda: call(
            server, kind, key, max_entries, method, *args, username=user, password=PASSWORD
        ),
    )
    assert f"'{denied.upper()}'" in str(error)


@pytest.mark.parametrize("kind", KINDS)
def test_a_denied_key_changes_nothing(acl: tuple, kind: str) -> None:
    # Every key of the board but a's metadata hash, which is read-only: a write that would trim
    # a raises before writing. (Every script declares the options hash f"{key}:options", read
    # to refuse a board recorded with other options, though a default board never creates it.)
    server, admin, key = acl
    fill(admin, key)
    rule = [*minimal_rule(f"~{key}"), f"~{key}:options", f"~{key}:user:[bcd]", f"%R~{key}:user:a"]
    user = make_user(admin, f"keys-{kind}", rule)
    # The script's own check names the command and key it refused (the same on every server).
    by_script = ("'UNLINK' command or to access its key",)
    for method, args, denied in [
        ("upsert_user", ("c", 30, {"name": "C"}), by_script),
        ("increment_score", ("c", 30), by_script),
        ("set_max_entries", (2,), by_script),
        ("clear", (), by_script),
        # The server itself refuses a script whose declared keys the user may not write
        # (EVALSHA declares its keys read-write), before it runs.
        ("delete_user", ("a",), DECLARED_KEYS_REFUSED),
        ("get_user_entry", ("a",), DECLARED_KEYS_REFUSED),
    ]:
        error = assert_raises_and_changes_nothing(
            admin,
            key,
            "NOPERM",
            lambda m=method, a=args: call(
                server, kind, key, 3, m, *a, username=user, password=PASSWORD
            ),
        )
        assert isinstance(error, NoPermissionError), (method, repr(error))
        assert any(text in str(error) for text in denied), (method, str(error))
    # What touches neither works.
    assert call(
        server, kind, key, 4, "upsert_user", "b", 25, {"name": "B2"}, username=user,
        password=PASSWORD,
    )["rank"] == 2  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_score_limits_a_writer_may_not_record_change_nothing(acl: tuple, kind: str) -> None:
    # Fair play: the first write carrying score limits records them in the options hash; a user
    # who may only read that hash is refused before anything is written (the limits are never
    # left unrecorded behind a write).
    server, admin, key = acl
    fill(admin, key)
    rule = [*minimal_rule(f"~{key}"), f"%R~{key}:options", f"~{key}:user:*"]
    user = make_user(admin, f"limits-{kind}", rule)
    for method, args in [("upsert_user", ("c", 5)), ("increment_score", ("a", 1))]:
        error = assert_raises_and_changes_nothing(
            admin,
            key,
            "NOPERM",
            lambda m=method, a=args: call(
                server,
                kind,
                key,
                3,
                m,
                *a,
                username=user,
                password=PASSWORD,
                board_options={"score_range": (0, 100), "max_increment": 50},
            ),
        )
        assert isinstance(error, NoPermissionError)


# --- out of memory ---


def used_memory(r: Any) -> int:
    return int(r.info("memory")["used_memory"])


@pytest.fixture
def oom_server() -> Iterator[tuple[RedisServer, Any]]:
    """A private server with a small maxmemory and noeviction (set once it has started)."""
    server = RedisServer()
    admin = server.redis_py()
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", used_memory(admin) + 4 * 1024 * 1024)
    yield server, admin
    admin.close()
    server.cleanup()


def fill_until_oom(server: RedisServer, admin: Any, key: str) -> None:
    """Bulk-load the board until the server refuses writes with OOM."""
    with redis_leaderboard.Client(host=server.host, port=server.port) as client:
        board = RedisLeaderboard(client, key=key, max_entries=1_000_000)
        base = 0
        with pytest.raises(ResponseError, match=r"^OOM"):
            while True:
                board.upsert_many(
                    (f"u{base + i:07d}", base + i, {"m": "x" * 200}) for i in range(2000)
                )
                base += 2000
    assert admin.zcard(key) > 1000


@pytest.mark.parametrize("kind", KINDS)
def test_out_of_memory_reads_and_deletes_work_writes_change_nothing(
    oom_server: tuple[RedisServer, Any], kind: str, server_version: ServerVersion
) -> None:
    server, admin = oom_server
    key = "lb:oom"
    fill_until_oom(server, admin, key)
    size = admin.zcard(key)
    top = admin.zrevrange(key, 0, 0)[0]

    def run(method: str, *args: Any, max_entries: int = 1_000_000) -> Any:
        # Still out of memory before every call.
        admin.config_set("maxmemory", used_memory(admin) // 2)
        return call(server, kind, key, max_entries, method, *args)

    for method, args in [
        ("upsert_user", ("new", 1e9, {"m": "y"})),
        ("increment_score", (top, 1)),
        ("hide", (top,)),  # fair play: refused up front too
    ]:
        assert_raises_and_changes_nothing(admin, key, "OOM", lambda m=method, a=args: run(m, *a))
    # The scripts' reads below run out of memory on every server. A MULTI/EXEC of the same
    # reads does only from Redis 7.4 and Valkey 8.0 on (redis#12961); before, the server
    # refused the transaction.
    pipe = admin.pipeline(transaction=True)
    pipe.zscore(key, top).zrevrank(key, top).hgetall(f"{key}:user:{top}")
    admin.config_set("maxmemory", used_memory(admin) // 2)
    if server_version.at_least("redis", 7, 4) or server_version.at_least("valkey", 8):
        assert pipe.execute() == [float(size - 1), 0, {"m": "x" * 200}]
    else:
        with pytest.raises(Exception, match="used memory > 'maxmemory'"):
            pipe.execute()

    admin.script_flush()  # the scripts load (EVAL) out of memory too
    assert run("get_user_entry", top) == {
        "rank": 1,
        "user_id": top,
        "score": float(size - 1),
        "metadata": {"m": "x" * 200},
    }
    assert [e["user_id"] for e in run("get_top", 3)] == admin.zrevrange(key, 0, 2)
    assert [e["rank"] for e in run("get_around_rank", 10, 3)] == [9, 10, 11]
    assert len(run("list_all")) == size
    # A client that knows the board records no options reads out of memory all the same.
    admin.config_set("maxmemory", used_memory(admin) // 2)
    assert entry_after_rank(server, kind, key) is None  # (no "b" on this board)
    admin.config_set("maxmemory", used_memory(admin) // 2)
    assert entry_after_rank(server, kind, key, top) == {
        "rank": 1,
        "user_id": top,
        "score": float(size - 1),
        "metadata": {"m": "x" * 200},
    }
    assert run("get_rank", top) == 1
    assert run("get_user_metadata", top) == {"m": "x" * 200}
    assert run("get_size") == size
    assert run("delete_user", top) is True
    assert admin.zscore(key, top) is None and not admin.exists(f"{key}:user:{top}")
    trimmed = run("set_max_entries", size - 11, max_entries=size)
    assert len(trimmed) == 10
    assert admin.zcard(key) == size - 11
    assert run("clear") is None
    assert admin.exists(key) == 0
    assert list(admin.scan_iter(match=f"{key}*")) == []


@pytest.mark.parametrize("kind", KINDS)
def test_out_of_memory_every_board_types_hidden_reads_answer(
    oom_server: tuple[RedisServer, Any], kind: str
) -> None:
    # hidden(), is_hidden() (and a team board's team_members(), team_of()) are reads: no-writes
    # scripts, answered out of memory on every board type that hides, while hide and unhide
    # are refused up front as any write.
    server, admin = oom_server
    api = Api(kind, server.host, server.port, EVENT_LOOPS.get(kind))
    try:
        clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
        boards = {
            "plain": (api.leaderboard("h:plain", 10), "upsert_user", {}),
            "periodic": (api.periodic("h:periodic", "day", clock=clock), "upsert_user", {}),
            "tournament": (api.tournament("h:cup", clock, schedule="day"), "submit", {}),
            "league": (api.league("h:league", clock, tiers=("b", "a")), "submit", {}),
            "team": (api.make("TeamLeaderboard", "h:clans"), "submit", {"team": "x"}),
        }
        for board, write, options in boards.values():
            for i, user in enumerate(["fair", "cheat"]):
                getattr(board, write)(user, 10 * (i + 1), **options)
            assert board.hide("cheat") is True
        fill_until_oom(server, admin, "lb:oom")
        admin.config_set("maxmemory", used_memory(admin) // 2)
        admin.script_flush()  # each read loads its script (EVAL) out of memory too
        for name, (board, _, _) in boards.items():
            assert board.hidden() == ["cheat"], name
            states = {user: board.is_hidden(user) for user in ("fair", "cheat", "never")}
            assert states == {"fair": False, "cheat": True, "never": False}, name
            with pytest.raises(OutOfMemoryError):
                board.unhide("cheat")
            assert board.is_hidden("cheat") is True, name
        team = boards["team"][0]
        assert team.team_of("fair") == "x" and team.team_of("never") is None
        assert team.team_members("x") == [{"user_id": "fair", "contribution": 10.0}]
    finally:
        api.close()


@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_unhide_without_hlen_changes_nothing_on_every_board_type(acl: tuple, kind: str) -> None:
    # The last player out of a hidden hash takes the 'hidden' field with them (forget_hidden:
    # HDEL, then HLEN): a user without +hlen had the player out of the hash, then a Lua error.
    # Every board type that hides checks HLEN (and the hashes' reads) before its first write.
    server, admin, key = acl
    api = Api(kind, server.host, server.port, EVENT_LOOPS.get(kind))
    try:
        admin.execute_command("ACL", "SETUSER", f"nohlen-{kind}", "reset", "on",
                              f">{PASSWORD}", "~*", "+@all", "-hlen")  # fmt: skip
        limited = api.connect(username=f"nohlen-{kind}", password=PASSWORD)
        clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
        makers = {
            "plain": (lambda c: api.make("RedisLeaderboard", f"{key}:plain", 10, client=c),
                      "upsert_user", {}),
            "tournament": (lambda c: api.make("Tournament", f"{key}:cup", clock=clock,
                                              schedule="day", client=c), "submit", {}),
            "league": (lambda c: api.make("League", f"{key}:league", clock=clock,
                                          tiers=("b", "a"), client=c), "submit", {}),
            "team": (lambda c: api.make("TeamLeaderboard", f"{key}:clans", client=c), "submit",
                     {"team": "x"}),
        }  # fmt: skip
        for name, (make, write, options) in makers.items():
            board = make(None)
            for i, user in enumerate(["fair", "cheat"]):
                getattr(board, write)(user, 10 * (i + 1), **options)
            assert board.hide("cheat") is True, name
            before = snapshot(admin, key)
            with pytest.raises(NoPermissionError, match="HLEN"):
                make(limited).unhide("cheat")
            assert snapshot(admin, key) == before, name
            assert board.unhide("cheat") is True, name
    finally:
        api.close()


def key_limited(acl: tuple, kind: str, user: str) -> tuple[Api, str, Any]:
    """(the API, the board key, a client of ``user``): a user whose rule allows every command on
    the keys under the board's key only."""
    server, admin, key = acl
    api = Api(kind, server.host, server.port, EVENT_LOOPS.get(kind))
    admin.execute_command("ACL", "SETUSER", user, "reset", "on", f">{PASSWORD}", f"~{key}*",
                          "+@all")  # fmt: skip
    return api, key, api.connect(username=user, password=PASSWORD)


@pytest.mark.parametrize("layout", ["guide", "compact"])
@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_a_user_limited_to_the_boards_keys_runs_every_team_call(
    acl: tuple, kind: str, layout: str
) -> None:
    # Every key a team board's call checks is one of the board's: a permission checked with a
    # member's name where a key goes (UNLINK's argument list) refused a user whose rule names
    # only the board's keys.
    api, key, client = key_limited(acl, kind, f"clans-{kind}-{layout}")
    try:
        team = api.make("TeamLeaderboard", f"{key}:clans", client=client, layout=layout)
        team.submit("ann", 10, {"name": "Ann"}, team="red")
        team.submit("bob", 5, team="blue")
        assert team.move("bob", "red")["team_score"] == 15.0
        assert team.hide("bob") is True and team.unhide("bob") is True
        assert team.remove("ann") is True and team.remove("ann") is False
        assert team.members.get_top(5)[0]["user_id"] == "bob"
        assert team.team_members("red") == [{"user_id": "bob", "contribution": 5.0}]
    finally:
        api.close()


@pytest.mark.parametrize("layout", ["guide", "compact"])
@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_a_user_limited_to_the_leagues_keys_runs_its_calls(
    acl: tuple, kind: str, layout: str
) -> None:
    # As the team board's: every permission a league's call checks names one of its keys.
    api, key, client = key_limited(acl, kind, f"league-{kind}-{layout}")
    try:
        clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
        league = api.make(
            "League", f"{key}:league", clock=clock, tiers=("b", "a"), cohort_size=4,
            promote=1, demote=1, layout=layout, client=client,
        )  # fmt: skip
        league.submit("ann", 10, {"name": "Ann"})
        league.submit("bob", 5, {"name": "Bob"})
        assert league.hide("bob") is True
        league.submit("bob", 1, {"level": "2"})
        assert league.unhide("bob") is True
        entries = {e["user_id"]: e for e in league.standings("ann")["entries"]}
        assert entries["ann"]["metadata"] == {"name": "Ann"}
        assert (entries["bob"]["score"], entries["bob"]["metadata"]) == (
            6.0, {"name": "Bob", "level": "2"}
        )  # fmt: skip
    finally:
        api.close()
