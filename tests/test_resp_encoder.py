"""The RESP encoder (cpp/codec/resp.cpp) against hiredis's own formatter, over random commands:
byte for byte what redisFormatCommandArgv writes (hiredis-py's ``pack_command`` is that C code)."""

from __future__ import annotations

import random

import hiredis

from redis_leaderboard import _core


def random_argument(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return b""
    if kind == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    if kind == 2:
        return b"\r\n" * rng.randrange(1, 5)
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.choice((9, 10, 99, 100, 1000, 70_000))))
    return str(rng.randrange(-(10**12), 10**12)).encode()


def test_random_commands_encode_as_hiredis_formats_them() -> None:
    rng = random.Random(15)
    for _ in range(2000):
        argv = [random_argument(rng) for _ in range(rng.randrange(1, 12))]
        assert _core.encode_command(*argv) == hiredis.pack_command(tuple(argv)), argv[:3]


def test_many_arguments_and_long_counts() -> None:
    argv = [b"x"] * 12_345
    assert _core.encode_command(*argv) == hiredis.pack_command(tuple(argv))
    big = b"y" * 1_000_003
    assert _core.encode_command("SET", "k", big) == hiredis.pack_command((b"SET", b"k", big))
