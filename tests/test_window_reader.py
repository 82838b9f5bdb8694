"""Rank windows are read as they are decoded (codec::ReplySink), not through a reply tree.

A connection streams a window reply's elements straight into entries; an operation handed a
decoded tree instead replays it into the same reader. Both must agree on every reply, well-formed
or not: seeded random windows here, fed both ways (``feed(..., stream=...)``), against the
entries a plain-Python reading of the same reply gives; and a real server's replies large enough
to arrive in many reads.
"""

from __future__ import annotations

import random
from typing import Any, Optional

import pytest

import redis_leaderboard
from redis_leaderboard._core import Board
from test_core_offline import array, bulk, integer


def window(
    start: int, size: int, rows: list[tuple[Any, Any, Any]], ranks: Optional[list[int]] = None
) -> bytes:
    """window.lua's reply; rows are (user_id, score, metadata items) as RESP fragments."""
    items = [part for row in rows for part in row]
    parts = [integer(start), integer(size), array(*items)]
    if ranks is not None:
        parts.append(array(*(integer(r) for r in ranks)))
    return array(*parts)


def random_text(rng: random.Random) -> str:
    alphabet = "abcXYZ09 _:-é🏆\x00\r\n"
    return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 5, 15, 16, 17, 40])))


def random_window(rng: random.Random) -> tuple[bytes, int, list[dict[str, Any]]]:
    """A well-formed reply, its start, and the entries it holds (ranks from the reply's)."""
    start = rng.randrange(0, 1000)
    n = rng.choice([0, 1, 2, 7, 30])
    rows, expected = [], []
    shared = rng.random() < 0.3
    ranks = sorted(rng.randrange(0, 2000) for _ in range(n)) if shared else None
    for i in range(n):
        user = random_text(rng) or "u"
        score = rng.choice([0.0, -1.5, 1e300, 0.1 + 0.2, float(rng.randrange(-(10**6), 10**6))])
        fields = {random_text(rng): random_text(rng) for _ in range(rng.choice([0, 1, 2, 5]))}
        meta = array(*(bulk(part) for pair in fields.items() for part in pair))
        rows.append((bulk(user), bulk(repr(score)), meta))
        rank = ranks[i] + 1 if ranks is not None else start + i + 1
        expected.append({"rank": rank, "user_id": user, "score": score, "metadata": fields})
    return window(start, start + n, rows, ranks), start, expected


def run(make: Any, reply: bytes, stream: bool) -> Any:
    op = make()
    op.request()
    try:
        assert op.feed(reply, stream=stream) is True
    except redis_leaderboard.RedisError as e:
        return ("raised", type(e), str(e))
    return op.result()


READS = {
    "get_around_rank": lambda: Board("lb", 5).get_around_rank(3, 5),
    "get_by_score": lambda: Board("lb", 5).get_by_score(0, 1, offset=0, limit=50),
    "get_around_user": lambda: Board("lb", 5).get_around_user("u", 5),
}


@pytest.mark.parametrize("seed", range(40))
def test_random_windows_read_the_same_streamed_or_replayed(seed: int) -> None:
    rng = random.Random(seed)
    reply, start, expected = random_window(rng)
    for name, make in READS.items():
        streamed, replayed = run(make, reply, True), run(make, reply, False)
        assert streamed == replayed == expected, name
    top = run(lambda: Board("lb", 5).get_top(50), reply, True)
    assert top == run(lambda: Board("lb", 5).get_top(50), reply, False)
    if expected and all(e["rank"] == start + i + 1 for i, e in enumerate(expected)):
        assert [e["rank"] for e in top] == list(range(1, len(expected) + 1))


ROW = (bulk("u"), bulk("1"), array(bulk("k"), bulk("v")))
MALFORMED = {
    "not an array": integer(3),
    "two elements": array(integer(0), integer(1)),
    "five elements": array(integer(0), integer(1), array(*ROW), array(integer(0)), integer(9)),
    "start as a string": array(bulk("0"), integer(1), array(*ROW)),
    "size missing, entries twice": array(integer(0), array(*ROW), array(*ROW)),
    "entries not a multiple of 3": array(integer(0), integer(1), array(bulk("u"), bulk("1"))),
    "entries as an integer": array(integer(0), integer(1), integer(5)),
    "nil user id": array(integer(0), integer(1), array(b"$-1\r\n", bulk("1"), array())),
    "integer user id": array(integer(0), integer(1), array(integer(7), bulk("1"), array())),
    "array user id": array(integer(0), integer(1), array(array(), bulk("1"), array())),
    "score not a number": array(integer(0), integer(1), array(bulk("u"), bulk("x"), array())),
    "score an array": array(integer(0), integer(1), array(bulk("u"), array(), array())),
    "error score": array(integer(0), integer(1), array(bulk("u"), b"-ERR x\r\n", array())),
    # A string is a compact board's value (the RESP array HGETALL would answer): not this one.
    "metadata a string": array(integer(0), integer(1), array(bulk("u"), bulk("1"), bulk("k"))),
    "metadata a truncated compact value": array(
        integer(0), integer(1), array(bulk("u"), bulk("1"), bulk("*2\r\n$1\r\nk\r\n$5\r\nv\r\n"))
    ),
    "metadata odd": array(integer(0), integer(1), array(bulk("u"), bulk("1"), array(bulk("k")))),
    "metadata nested": array(
        integer(0), integer(1), array(bulk("u"), bulk("1"), array(bulk("k"), array()))
    ),
    "metadata integer value": array(
        integer(0), integer(1), array(bulk("u"), bulk("1"), array(bulk("k"), integer(1)))
    ),
    "ranks short": array(integer(0), integer(2), array(*ROW, *ROW), array(integer(0))),
    "ranks long": array(integer(0), integer(1), array(*ROW), array(integer(0), integer(1))),
    "ranks strings": array(integer(0), integer(1), array(*ROW), array(bulk("0"))),
    "rank negative": array(integer(0), integer(1), array(*ROW), array(integer(-1))),
    "rank huge": array(integer(0), integer(1), array(*ROW), array(integer(2**32))),
    "start negative": array(integer(-1), integer(1), array(*ROW)),
    "nil in the root": array(integer(0), b"$-1\r\n", array(*ROW)),
}


def test_a_compact_boards_metadata_is_read_streamed_or_replayed() -> None:
    value = bulk("*4\r\n$1\r\nk\r\n$2\r\nv\n\r\n$0\r\n\r\n$1\r\n$\r\n")
    reply = array(
        integer(0), integer(2), array(bulk("u"), bulk("1"), value, bulk("w"), bulk("0"), bulk(""))
    )
    for make in READS.values():
        streamed, replayed = run(make, reply, True), run(make, reply, False)
        assert streamed == replayed
        assert [e["metadata"] for e in streamed] == [{"k": "v\n", "": "$"}, {}]


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_windows_are_refused_the_same_way(name: str) -> None:
    reply = MALFORMED[name]
    for make in READS.values():
        streamed, replayed = run(make, reply, True), run(make, reply, False)
        assert streamed == replayed
        assert streamed[0] == "raised", streamed
        assert streamed[2].startswith("unexpected reply from Redis")


def test_a_nil_reply_is_an_absent_user_for_get_around_user_only() -> None:
    nil = b"$-1\r\n"
    assert run(READS["get_around_user"], nil, True) == []
    raised = run(READS["get_around_rank"], nil, True)
    assert raised[0] == "raised"


def test_a_streamed_reply_after_a_malformed_one_starts_afresh() -> None:
    # list_all reads pages with one reader: a page is read whole, never with the last one's rows.
    op = Board("lb", 5).list_all()
    op.request()
    rows = [(bulk(f"u{i}"), bulk("1"), array()) for i in range(5000)]
    assert op.feed(window(0, 5001, rows)) is False
    op.request()
    assert op.feed(window(5000, 5001, [ROW])) is True
    result = op.result()
    assert len(result) == 5001
    assert result[-1] == {"rank": 5001, "user_id": "u", "score": 1.0, "metadata": {"k": "v"}}


@pytest.mark.parametrize("mode", ["sync", "asyncio"])
def test_windows_larger_than_many_reads_arrive_whole(
    client: Any, redis_server: Any, board_key: str, mode: str
) -> None:
    # ~3 MB of metadata in one reply: many recv() calls, the reader's sink kept across them.
    board = redis_leaderboard.RedisLeaderboard(client, key=board_key, max_entries=1000)
    rng = random.Random(7)
    expected = []
    for i in range(300):
        meta = {"blob": random_text(rng) * 800 + str(i), "n": str(i)}
        board.upsert_user(f"user:{i:04d}", float(i), meta)
        expected.append({"user_id": f"user:{i:04d}", "score": float(i), "metadata": meta})
    expected.sort(key=lambda e: (-e["score"], e["user_id"]))
    expected = [{"rank": r + 1, **e} for r, e in enumerate(expected)]
    if mode == "sync":
        top, everything = board.get_top(300), board.list_all()
    else:
        import asyncio

        from redis_leaderboard import asyncio as rla

        async def read() -> tuple[Any, Any]:
            aclient = rla.Client(host=redis_server.host, port=redis_server.port)
            try:
                aboard = rla.RedisLeaderboard(aclient, key=board_key, max_entries=1000)
                return await aboard.get_top(300), await aboard.list_all()
            finally:
                await aclient.aclose()

        top, everything = asyncio.run(read())
    assert top == expected
    assert everything == expected
