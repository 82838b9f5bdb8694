"""``upsert_many``: the bulk import, sync and asyncio, against the private redis-server.

Checked: the keys written (the guide's layout, or the compact one's: tests/helpers.py), one
round trip per chunk plus one trim, a single trim at the
end with at most 1,000 reported ids, lazy reading of the iterable, arguments checked before
anything is written, error positions counted over the whole iterable (with the chunks before
the bad one written, nothing after, and the board trimmed), and the trim after any failure once
chunks were sent. Cancellation and a dying server under the asyncio client:
tests/test_async_transport.py.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from apis import Api, sync_and_one_loop
from helpers import TEST_LAYOUT, contents, every_stored_metadata, stored_metadata
from redis_leaderboard import Client, ConnectionError, RedisLeaderboard, ResponseError
from redis_leaderboard.options import CHUNKS_IN_FLIGHT


@sync_and_one_loop
def test_writes_the_guide_layout_one_round_trip_per_chunk(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=10_000)
    entries = (
        (f"user {i}", float(i * 10), {"name": f"P{i}", "level": i} if i % 2 else {})
        for i in range(2500)
    )
    progress: list[int] = []
    assert board.upsert_many([]) == {"written": 0, "trimmed": 0, "trimmed_user_ids": []}
    before = api.client.stats()  # the trim script is cached now: no NOSCRIPT retry
    summary = board.upsert_many(entries, chunk_size=1000, progress=progress.append)
    after = api.client.stats()
    trips = after["round_trips"] - before["round_trips"]
    if api.asynchronous:  # one call a chunk, one for the trim; chunks in flight share writes
        assert after["calls"] - before["calls"] == 3 + 1
        assert trips <= 3 + 1
    elif board.layout == "compact":  # script chunks (bulk.lua): those in flight share writes
        assert after["commands"] - before["commands"] <= 3 + 1 + 1  # and the trim, its check
        assert trips <= 3 + 1
    else:  # three chunks, one trim
        assert trips == 3 + 1
    assert summary == {"written": 2500, "trimmed": 0, "trimmed_user_ids": []}
    assert progress == [1000, 2000, 2500]
    assert r.zcard(board_key) == 2500
    assert r.zscore(board_key, "user 2499") == 24990.0
    assert stored_metadata(r, board, "user 7") == {"name": "P7", "level": "7"}
    assert len(every_stored_metadata(r, board)) == 1250  # none stored for entries without any
    assert board.get_user_entry("user 7") == {
        "rank": 2493,
        "user_id": "user 7",
        "score": 70.0,
        "metadata": {"name": "P7", "level": "7"},
    }


def test_matches_the_sync_class_chunk_by_chunk(
    api: Api, client: Client, board_key: str, r: Any
) -> None:
    entries = [(f"u{i:05d}", float(i % 977), {"n": str(i)} if i % 3 else {}) for i in range(2500)]
    sync_board = RedisLeaderboard(
        client, key=f"{board_key}:s", max_entries=2000, layout=TEST_LAYOUT
    )
    board = api.leaderboard(key=f"{board_key}:a", max_entries=2000)
    sync_progress: list[int] = []
    progress: list[int] = []
    expected = sync_board.upsert_many(entries, chunk_size=300, progress=sync_progress.append)
    got = board.upsert_many(entries, chunk_size=300, progress=progress.append)
    assert got == expected
    assert got["written"] == 2500 and got["trimmed"] == 500
    assert progress == sync_progress == [*range(300, 2500, 300), 2500]
    assert board.list_all() == sync_board.list_all()
    assert contents(r, f"{board_key}:a") == contents(r, f"{board_key}:s")
    # a bad entry: the same error as the sync class
    bad = [("ok", 1), ("", 2)]
    with pytest.raises(ValueError) as sync_error:
        sync_board.upsert_many(bad)
    with pytest.raises(ValueError) as error:
        board.upsert_many(bad)
    assert str(error.value) == str(sync_error.value)


def test_later_duplicates_win_and_metadata_merges(api: Api, board_key: str) -> None:
    board = api.leaderboard(key=board_key, max_entries=10)
    board.upsert_user("a", 1, {"name": "Ada", "team": "red"})
    board.upsert_many([("a", 5, {"team": "blue"}), ("b", 2), ("a", 7), ("b", 3, {"x": "y"})])
    assert board.list_all() == [
        {"rank": 1, "user_id": "a", "score": 7.0, "metadata": {"name": "Ada", "team": "blue"}},
        {"rank": 2, "user_id": "b", "score": 3.0, "metadata": {"x": "y"}},
    ]


@sync_and_one_loop
def test_trims_once_and_reports_at_most_1000_lowest_ids(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=100)
    summary = board.upsert_many(((f"u{i:05d}", i, {"i": i}) for i in range(5000)), chunk_size=700)
    assert summary["written"] == 5000
    assert summary["trimmed"] == 4900
    assert summary["trimmed_user_ids"] == [f"u{i:05d}" for i in range(1000)]
    assert r.zrange(board_key, 0, -1) == [f"u{i:05d}" for i in range(4900, 5000)]
    assert set(every_stored_metadata(r, board)) == {f"u{i:05d}" for i in range(4900, 5000)}


@sync_and_one_loop
def test_reads_the_iterable_lazily(api: Api, board_key: str) -> None:
    board = api.leaderboard(key=board_key, max_entries=100_000)
    consumed = 0

    def entries() -> Iterator[tuple[str, int]]:
        nonlocal consumed
        for i in range(20_000):
            consumed += 1
            yield f"u{i}", i

    ahead: list[int] = []
    board.upsert_many(entries(), chunk_size=1000, progress=lambda n: ahead.append(consumed - n))
    assert consumed == 20_000
    # At most the chunks in flight are read ahead of what is written.
    assert max(ahead) <= CHUNKS_IN_FLIGHT * 1000


@sync_and_one_loop
def test_an_error_mid_import_leaves_the_connection_in_step(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.leaderboard(key=board_key, max_entries=100_000)
    assert board.get_size() == 0
    before = api.client.stats()["connections"]

    def stop(written: int) -> None:
        if written == 1000:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        board.upsert_many(((f"u{i}", i) for i in range(50_000)), chunk_size=1000, progress=stop)
    # The chunks written before the callback raised were applied; their replies were read.
    assert r.zcard(board_key) in range(1000, 1000 * (CHUNKS_IN_FLIGHT + 1) + 1)
    assert board.get_rank("u0") is not None
    # A Redis error in a chunk (the board key holds a string): ResponseError, still in step.
    r.set(f"{board_key}:s", "not a sorted set")
    other = api.leaderboard(key=f"{board_key}:s", max_entries=10)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        other.upsert_many(((f"u{i}", i) for i in range(10_000)), chunk_size=1000)
    assert board.get_size() == r.zcard(board_key)
    assert api.client.stats()["connections"] == before  # no connection was dropped


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (("u1700", math.nan), ValueError, "entry 1700: score must be a finite number"),
        (("", 1.0), ValueError, "entry 1700: user_id must not be empty"),
        (("u1700",), TypeError, "entry 1700: must have 2 to 4 items"),
        ("u1700", TypeError, "entry 1700: must be a (user_id, score) or"),
        (("u1700", 1.0, ["x"]), TypeError, "entry 1700: "),
    ],
)
def test_a_bad_entry_names_its_position_over_the_whole_iterable(
    api: Api, board_key: str, r: Any, bad: Any, error: type, message: str
) -> None:
    entries: list[Any] = [(f"u{i:04d}", i) for i in range(3000)]
    entries[1700] = bad
    board = api.leaderboard(key=board_key, max_entries=10)
    with pytest.raises(error) as raised:
        board.upsert_many(iter(entries), chunk_size=500)
    assert str(raised.value).startswith(message)
    # The chunks before the bad entry's chunk (entries 0..1499) were written, then trimmed to
    # max_entries; nothing of its chunk or after it.
    assert r.zrange(board_key, 0, -1) == [f"u{i:04d}" for i in range(1490, 1500)]


@pytest.mark.parametrize(
    ("kw", "error", "message"),
    [
        ({"progress": "not callable"}, TypeError, "progress must be callable or None, not str"),
        ({"progress": 3}, TypeError, "progress must be callable or None, not int"),
        ({"chunk_size": 0}, ValueError, "chunk_size must be at least 1"),
        ({"chunk_size": "10"}, TypeError, "chunk_size must be an int, not str"),
        ({"chunk_size": True}, TypeError, "chunk_size must be an int, not bool"),
    ],
)
def test_bad_arguments_raise_before_anything_is_read_or_written(
    api: Api, board_key: str, r: Any, kw: dict[str, Any], error: type, message: str
) -> None:
    read = 0

    def entries() -> Iterator[tuple[str, int]]:
        nonlocal read
        for i in range(5000):
            read += 1
            yield f"u{i}", i

    board = api.leaderboard(key=board_key, max_entries=10)
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        board.upsert_many(entries(), **kw)
    assert read == 0
    assert r.exists(board_key) == 0


@sync_and_one_loop
def test_a_progress_callback_raising_leaves_the_board_trimmed(
    api: Api, board_key: str, r: Any
) -> None:
    def stop(written: int) -> None:
        if written >= 1000:
            raise RuntimeError("stop here")

    entries = ((f"u{i:05d}", i, {"i": i}) for i in range(20_000))
    board = api.leaderboard(key=board_key, max_entries=50)
    with pytest.raises(RuntimeError, match="stop here"):
        board.upsert_many(entries, chunk_size=500, progress=stop)
    # At least the two chunks before the callback raised were written (more may have been in
    # flight); the board was trimmed to the 50 best of them, with exactly their metadata.
    kept = r.zrange(board_key, 0, -1)
    assert len(kept) == 50
    assert kept[-1] >= "u00999"
    assert every_stored_metadata(r, board) == {u: {"i": str(int(u[1:]))} for u in kept}


@sync_and_one_loop
@pytest.mark.guide_layout(
    "fails one HSET inside the guide's MULTI/EXEC chunk; a compact chunk is a script that "
    "checks its keys first"
)
def test_a_chunk_failing_on_the_server_leaves_the_board_trimmed(
    api: Api, board_key: str, r: Any
) -> None:
    # Entry 1234's metadata key holds a string: its HSET fails inside the third chunk's
    # MULTI/EXEC (the chunk's other commands apply, as Redis runs them, its score included).
    # It scores highest, so the trim keeps it (a trim never deletes a key that is not a hash).
    bad = f"{board_key}:user:u01234"
    r.set(bad, "not a hash")
    entries = ((f"u{i:05d}", 1e9 if i == 1234 else i, {"i": i}) for i in range(20_000))
    board = api.leaderboard(key=board_key, max_entries=30)
    with pytest.raises(ResponseError, match=r"^WRONGTYPE"):
        board.upsert_many(entries, chunk_size=500)
    kept = r.zrange(board_key, 0, -1)
    assert len(kept) == 30
    assert kept[-2:] == ["u01499", "u01234"] or kept[-2] > "u01499"
    assert every_stored_metadata(r, board) == {u: {"i": str(int(u[1:]))} for u in kept[:-1]}
    assert r.get(bad) == "not a hash"


def test_a_bad_entry_in_the_first_chunk_writes_and_trims_nothing(
    api: Api, board_key: str, r: Any
) -> None:
    # Over max_entries already (another client's larger limit): a failed import that sent
    # nothing does not trim it either.
    r.zadd(board_key, {f"old{i}": i for i in range(20)})
    board = api.leaderboard(key=board_key, max_entries=5)
    with pytest.raises(ValueError, match=r"^entry 3: "):
        board.upsert_many([("a", 1), ("b", 2), ("c", 3), ("", 4)])
    assert r.zcard(board_key) == 20


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11+")
def test_a_trim_that_fails_after_the_error_is_noted(
    api: Api, fresh_redis_server: Any, board_key: str
) -> None:
    client = api.connect(host=fresh_redis_server.host, port=fresh_redis_server.port)
    board = api.leaderboard(key=board_key, max_entries=10, client=client)

    def kill_after_first_chunk(written: int) -> None:
        if written == 500:
            fresh_redis_server.kill()

    with pytest.raises(ConnectionError) as raised:
        board.upsert_many(
            ((f"u{i}", i) for i in range(100_000)), chunk_size=500, progress=kill_after_first_chunk
        )
    notes = getattr(raised.value, "__notes__", [])
    assert len(notes) == 1
    assert notes[0].startswith(
        "upsert_many could not trim the board to max_entries after this error: ConnectionError"
    )
