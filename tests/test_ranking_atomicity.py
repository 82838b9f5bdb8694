"""A write that raises changed nothing, on boards with options too (issue 12): the option keys
(f"{key}:options", f"{key}:first", f"{key}:first:keys", f"{key}:dense") are type-checked, and
the commands the scripts run on them permission-checked, before the first write. As
test_atomicity.py: plant the fault on a real server, make the write raise, compare snapshots.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

import pytest

import redis_leaderboard
from conftest import RedisServer
from redis_leaderboard import RedisLeaderboard, ResponseError
from test_atomicity import (
    EVERY_METHOD,
    PASSWORD,
    assert_raises_and_changes_nothing,
    call,
    make_user,
    minimal_rule,
    snapshot,
)

OPTION_BOARDS = [
    {"order": o, "ties": t}
    for o, t in itertools.product(
        ["desc", "asc"], ["lexicographic", "first", "competition", "dense"]
    )
    if (o, t) != ("desc", "lexicographic")
]
# What boards with options run besides the minimal rule of a default board.
OPTION_COMMANDS = ["zrank", "zcount", "hget", "hdel"]
WRITES: list[tuple[str, tuple]] = [
    ("upsert_user", ("c", 30, {"name": "C"})),  # trims the worst
    ("increment_score", ("c", 30)),
    ("submit", ("a", 99)),
    ("delete_user", ("a",)),
    ("set_max_entries", (1,)),
    ("clear", ()),
    ("upsert_many", ([("x", 5, {"m": "1"})],)),
]


def filled(client: Any, key: str, options: dict) -> RedisLeaderboard:
    board = RedisLeaderboard(client, key=key, max_entries=3, **options)
    for user_id, score in [("a", 10), ("b", 20), ("d", 40)]:
        board.upsert_user(user_id, score, {"name": user_id.upper()})
    return board


def option_keys(key: str, ties: str) -> list[str]:
    extra = {"first": [f"{key}:first", f"{key}:first:keys"], "dense": [f"{key}:dense"]}
    return [f"{key}:options", *extra.get(ties, [])]


def replace_with_string(r: Any, name: str) -> None:
    r.delete(name)
    r.set(name, "not mine")


@pytest.mark.parametrize("options", OPTION_BOARDS, ids=lambda o: f"{o['order']}-{o['ties']}")
@pytest.mark.parametrize(("method", "args"), WRITES)
def test_an_option_key_of_another_type_changes_nothing(
    redis_server: RedisServer, r: Any, board_key: str, options: dict, method: str, args: tuple
) -> None:
    for name in option_keys(board_key, options["ties"]):
        r.delete(board_key, *r.scan_iter(match=f"{board_key}*"))
        with redis_leaderboard.Client(host=redis_server.host, port=redis_server.port) as client:
            filled(client, board_key, options)
            board = RedisLeaderboard(client, key=board_key, max_entries=3, **options)
            replace_with_string(r, name)
            error = assert_raises_and_changes_nothing(
                r, board_key, "WRONGTYPE", lambda b=board: getattr(b, method)(*args)
            )
            assert "WRONGTYPE" in str(error), (name, str(error))


@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_a_default_board_with_its_options_key_of_another_type_changes_nothing(
    redis_server: RedisServer, r: Any, board_key: str, kind: str
) -> None:
    with redis_leaderboard.Client(host=redis_server.host, port=redis_server.port) as client:
        filled(client, board_key, {})
    replace_with_string(r, f"{board_key}:options")
    for method, args in WRITES:
        assert_raises_and_changes_nothing(
            r,
            board_key,
            "WRONGTYPE",
            lambda m=method, a=args: call(redis_server, kind, board_key, 3, m, *a),
        )


# --- ACL ---


@pytest.fixture
def acl(acl_server: RedisServer) -> Iterator[tuple[RedisServer, Any, str]]:
    admin = acl_server.redis_py()
    key = "lb:ranking"
    yield acl_server, admin, key
    names = list(admin.scan_iter(match=f"{key}*"))
    if names:
        admin.delete(*names)
    for user in admin.acl_users():
        if user != "default":
            admin.acl_deluser(user)
    admin.close()


def options_rule() -> list[str]:
    return [*minimal_rule(), *(f"+{c}" for c in OPTION_COMMANDS)]


def run_as(server: RedisServer, user: str, key: str, options: dict, method: str, *args: Any) -> Any:
    with redis_leaderboard.Client(
        host=server.host, port=server.port, username=user, password=PASSWORD
    ) as client:
        board = RedisLeaderboard(client, key=key, max_entries=3, **options)
        return getattr(board, method)(*args)


@pytest.mark.parametrize("options", OPTION_BOARDS, ids=lambda o: f"{o['order']}-{o['ties']}")
def test_the_options_rule_runs_every_method(acl: tuple, options: dict) -> None:
    server, admin, key = acl
    user = make_user(admin, "options", options_rule())
    admin.script_flush()
    with redis_leaderboard.Client(host=server.host, port=server.port) as client:
        filled(client, key, options)
    for method, args in [*EVERY_METHOD, ("submit", ("z", 1)), ("upsert_many", ([("y", 2)],))]:
        run_as(server, user, key, options, method, *args)
    assert list(admin.scan_iter(match=f"{key}*")) != []


@pytest.mark.parametrize("options", OPTION_BOARDS, ids=lambda o: f"{o['order']}-{o['ties']}")
def test_without_an_option_command_writes_raise_and_change_nothing(
    acl: tuple, options: dict
) -> None:
    server, admin, key = acl
    failures = []
    for command in OPTION_COMMANDS:
        user = make_user(admin, f"without-{command}", [*options_rule(), f"-{command}"])
        admin.delete(*admin.scan_iter(match=f"{key}*"), key)
        with redis_leaderboard.Client(host=server.host, port=server.port) as client:
            filled(client, key, options)
        for method, args in WRITES:
            before = snapshot(admin, key)
            try:
                run_as(server, user, key, options, method, *args)
            except ResponseError as e:
                assert "NOPERM" in str(e), (command, method, str(e))
                assert snapshot(admin, key) == before, (command, method)
                failures.append((command, method))
    # zcount is needed by every board with options; zrank by asc ones, hget and hdel by first.
    needed = {c for c, _ in failures}
    assert "zcount" in needed
    assert ("zrank" in needed) == (options["order"] == "asc")
    assert ("hdel" in needed) == (options["ties"] == "first")
