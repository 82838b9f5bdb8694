"""Seeded, bounded fuzzing of every public method with random Python values (issue 9).

A call either works or raises TypeError/ValueError/OverflowError, or the exception a
misbehaving argument raises itself; never a crash, never anything else, and a call that raises
sends nothing (the client's round-trip counter does not move).
"""

from __future__ import annotations

import asyncio
import decimal
import fractions
import random
from collections.abc import Iterator, Mapping
from typing import Any, Callable

import pytest

import redis_leaderboard
from redis_leaderboard import asyncio as rl_asyncio


class Boom(Exception):
    """Raised by the misbehaving objects below: the only foreign exception a call may pass on."""


class StrRaises:
    def __str__(self) -> str:
        raise Boom("__str__")


class StrNotStr:
    def __str__(self) -> Any:
        return 42


class FloatRaises:
    def __float__(self) -> float:
        raise Boom("__float__")


class FloatNotFloat:
    def __float__(self) -> Any:
        return "1.0"


class IndexRaises:
    def __index__(self) -> int:
        raise Boom("__index__")


class IndexHuge:
    def __index__(self) -> int:
        return 2**200


class IterRaises:
    def __iter__(self) -> Iterator[Any]:
        raise Boom("__iter__")


class IterMidway:
    def __iter__(self) -> Iterator[Any]:
        yield ("ok", 1)
        raise Boom("midway")


class ItemsRaises(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise Boom("items")


class ItemsLists(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        return [[1, 2], [3]]


class ItemsGenerator(Mapping):  # type: ignore[type-arg]
    def __getitem__(self, key: str) -> str:
        return "v"

    def __iter__(self) -> Iterator[str]:
        return iter(["k"])

    def __len__(self) -> int:
        return 1

    def items(self) -> Any:
        yield ("k", StrRaises())


class StrSubclass(str):
    def __str__(self) -> str:
        raise Boom("str subclass")


def weird_values() -> list[Any]:
    return [
        None, True, False, 0, -1, 1, 7, 2**31, 2**63, 2**70, -(2**70),
        0.5, -1e308, 1e308, float("nan"), float("inf"), float("-inf"),
        decimal.Decimal("1.5"), decimal.Decimal("nan"), fractions.Fraction(1, 3), 1 + 2j,
        "", "a", "player-1", "\ud800", "x" * 5000, "ü\x00é", StrSubclass("s"),
        b"bytes", bytearray(b"ba"), [], [1], [("a", 1)], (), ("a", 1, {"n": "1"}),
        {}, {"name": "Ada"}, {1: 2}, {"k": None}, {"k": StrRaises()}, {"k": StrNotStr()},
        object(), StrRaises(), StrNotStr(), FloatRaises(), FloatNotFloat(), IndexRaises(),
        IndexHuge(), IterRaises(), IterMidway(), ItemsRaises(a=1), ItemsLists(a=1),
        ItemsGenerator(), len, lambda n: None, iter([]),
    ]  # fmt: skip


ALLOWED = (TypeError, ValueError, OverflowError, Boom)

# method name -> generator of plausible valid arguments, each a list of positional values
VALID: dict[str, Callable[[random.Random], list[Any]]] = {
    "upsert_user": lambda r: [f"u{r.randrange(50)}", r.randrange(1000), {"n": "x"}],
    "increment_score": lambda r: [f"u{r.randrange(50)}", r.randrange(10), None],
    "set_max_entries": lambda r: [r.randrange(20, 200)],
    "get_top": lambda r: [r.randrange(1, 20)],
    "get_around_rank": lambda r: [r.randrange(1, 60), r.randrange(1, 10)],
    "get_rank": lambda r: [f"u{r.randrange(50)}"],
    "get_user_metadata": lambda r: [f"u{r.randrange(50)}"],
    "get_user_entry": lambda r: [f"u{r.randrange(50)}"],
    "list_all": lambda r: [],
    "get_size": lambda r: [],
    "delete_user": lambda r: [f"u{r.randrange(50)}"],
    "upsert_many": lambda r: [[(f"u{i}", i) for i in range(r.randrange(3))]],
}


def random_call(rng: random.Random, values: list[Any]) -> tuple[str, list[Any], dict[str, Any]]:
    name = rng.choice(sorted(VALID))
    args = VALID[name](rng)
    for i in range(len(args)):
        if rng.random() < 0.5:
            args[i] = rng.choice(values)
    kwargs: dict[str, Any] = {}
    if name == "upsert_many":
        if rng.random() < 0.3:
            kwargs["chunk_size"] = rng.choice(values)
        if rng.random() < 0.3:
            kwargs["progress"] = rng.choice(values)
    return name, args, kwargs


def describe(name: str, args: list[Any], kwargs: dict[str, Any]) -> str:
    return f"{name}(*{[type(a).__name__ for a in args]}, **{list(kwargs)})"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzz_sync_methods(redis_server: Any, board_key: str, seed: int) -> None:
    rng = random.Random(seed)
    values = weird_values()
    client = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    board = redis_leaderboard.RedisLeaderboard(client, key=board_key)
    try:
        for _ in range(700):
            name, args, kwargs = random_call(rng, values)
            before = client.stats()["round_trips"]
            try:
                getattr(board, name)(*args, **kwargs)
            except ALLOWED as exc:
                # The one refusal the server makes: an increment whose result a double cannot
                # hold (the stored score decides it; the script changes nothing).
                sent = "beyond the integers a score holds exactly" in str(exc)
                assert client.stats()["round_trips"] == before + sent, describe(name, args, kwargs)
        assert board.get_size() >= 0  # the connection is still in step
    finally:
        client.close()


@pytest.mark.parametrize("seed", [4, 5])
def test_fuzz_asyncio_methods(redis_server: Any, board_key: str, seed: int) -> None:
    async def main() -> None:
        rng = random.Random(seed)
        values = weird_values()
        async with rl_asyncio.Client(host=redis_server.host, port=redis_server.port) as client:
            board = rl_asyncio.RedisLeaderboard(client, key=board_key)
            for _ in range(500):
                name, args, kwargs = random_call(rng, values)
                before = client.stats()["round_trips"]
                try:
                    await getattr(board, name)(*args, **kwargs)
                except ALLOWED:
                    assert client.stats()["round_trips"] == before, describe(name, args, kwargs)
            assert await board.get_size() >= 0

    asyncio.run(main())


@pytest.mark.parametrize("seed", [6])
def test_fuzz_constructors_and_clients(redis_server: Any, seed: int) -> None:
    rng = random.Random(seed)
    values = weird_values()
    client = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    try:
        for _ in range(400):
            key = rng.choice(values) if rng.random() < 0.5 else "lb:fuzz"
            max_entries = rng.choice(values) if rng.random() < 0.5 else 10
            for cls in (redis_leaderboard.RedisLeaderboard, rl_asyncio.RedisLeaderboard):
                try:
                    cls(client if cls is redis_leaderboard.RedisLeaderboard else None,
                        key=key, max_entries=max_entries)  # fmt: skip
                except ALLOWED:
                    pass
            options = {
                name: rng.choice(values)
                for name in ("host", "port", "db", "socket_timeout", "max_reply_bytes")
                if rng.random() < 0.4
            }
            for cls in (redis_leaderboard.Client, rl_asyncio.Client):
                try:
                    c = cls(**options)
                except ALLOWED:
                    continue
                c.close()
            try:
                redis_leaderboard.Client.from_url(rng.choice(values))
            except ALLOWED:
                pass
    finally:
        client.close()
