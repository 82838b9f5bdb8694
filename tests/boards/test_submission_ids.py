"""Submission ids (``submit(..., submission_id=...)``, ``upsert_many``'s fourth item), sync and
asyncio: a user retrying a write after a timeout.

- A repeat writes nothing and returns the stored result with ``duplicate=True``; a lost reply
  is resent (at most ``retries`` times) and applies once; without an id the same loss raises.
- An id belongs to one user and one payload (score, mode, metadata in any field order): reusing
  it with another raises ``SubmissionIdReused`` (a ValueError), changes nothing, and never
  answers with another user's data.
- ``submit`` and ``upsert_many`` share ids; each board of a group applies the id once, as its
  own ``submit()`` would, in the one atomic script; a rolling window's id is the window's,
  whatever the bucket; a periodic board's is the board's, whatever the period (a resend after
  a period boundary returns the first result, whose "period" is the first write's).
- A write that fails (a planted WRONGTYPE key) stores no id and writes nothing anywhere.

Lost replies are made by ``ReplyDropper``, a proxy that forwards a request and then, instead of
the reply, closes the connection: the write reached Redis, its reply never reached the client.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime, timedelta
from typing import Any

import pytest

from apis import Api, asyncio_only, sync_and_one_loop, sync_only, unwrap
from conftest import RedisServer
from helpers import TEST_LAYOUT, UTC, FakeClock, ReplyDropper, snapshot
from redis_leaderboard import (
    Client,
    ConnectionError,
    OptionsMismatch,
    PeriodClosed,
    RedisLeaderboard,
    ResponseError,
    SubmissionIdReused,
)


def _sunday_late() -> datetime:
    """One second before midnight (UTC) at the end of the ISO week after this one: a week
    boundary in the future whatever day the tests run, so that no period written there has
    expired (a fixed date in the past made this file fail once the date had passed)."""
    today = datetime.now(UTC).replace(hour=23, minute=59, second=59, microsecond=0)
    return today + timedelta(days=6 - today.weekday() + 7)


SUNDAY_LATE = _sunday_late()
MONDAY = SUNDAY_LATE + timedelta(seconds=2)
# The ids of the periods either side of the boundary: the week ending at SUNDAY_LATE, the next
# week, and SUNDAY_LATE's day.
W_OLD = "{}-W{:02d}".format(*SUNDAY_LATE.isocalendar()[:2])
W_NEW = "{}-W{:02d}".format(*MONDAY.isocalendar()[:2])
DAY_OLD = SUNDAY_LATE.date().isoformat()


# ---- One board ----------------------------------------------------------------------------------


def test_a_repeated_submission_returns_the_stored_result(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10)
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


@sync_only
def test_the_same_id_from_8_threads_applies_once(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10)
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
    assert board.get_user_entry("u")["score"] == 1.0


@asyncio_only
def test_the_same_id_from_500_tasks_applies_once(api: Api, board_key: str, r: Any) -> None:
    board = unwrap(api.leaderboard(board_key, 10))

    async def task() -> list[dict[str, Any]]:
        return [await board.submit("u", 1, mode="incr", submission_id="once") for _ in range(2)]

    async def main() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(*(task() for _ in range(500)))

    batches = api.run(main())
    results = [r for batch in batches for r in batch]
    assert len(results) == 1000
    assert sum(not r["duplicate"] for r in results) == 1
    assert r.zscore(board_key, "u") == 1.0


@sync_and_one_loop
def test_ids_expire_after_the_ttl(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 10, submission_ttl=0.2)
    assert board.submit("u", 1, mode="incr", submission_id="x")["duplicate"] is False
    assert 0 < r.pttl(f"{board_key}:submission:x") <= 200
    assert board.submit("u", 1, mode="incr", submission_id="x")["duplicate"] is True
    time.sleep(0.3)
    again = board.submit("u", 1, mode="incr", submission_id="x")
    assert again["duplicate"] is False and again["score"] == 2.0


def test_a_lost_reply_is_resent_and_applies_once(
    api: Api, redis_server: RedisServer, client: Client, board_key: str, r: Any
) -> None:
    # The script is cached: the first attempt runs, not NOSCRIPT.
    RedisLeaderboard(client, board_key, 10, layout=TEST_LAYOUT).submit("warm", 1)
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        board = api.leaderboard(
            board_key, 10, client=api.connect(port=proxy.port, socket_timeout=5)
        )
        result = board.submit("u", 7, mode="incr", submission_id="lost")
        # Without an id, the same loss (a new client: a new connection) raises, not resent.
        proxy.drops += 1
        other = api.leaderboard(
            board_key, 10, client=api.connect(port=proxy.port, socket_timeout=5)
        )
        with pytest.raises(ConnectionError):
            other.submit("v", 1, mode="incr")
    finally:
        proxy.close()
    assert proxy.dropped == 2
    # The first attempt applied (its reply was lost); the resend found its stored result, and
    # being this call's own (its call token), it is no duplicate: this call applied it.
    assert result["duplicate"] is False and result["score"] == 7.0
    assert r.zscore(board_key, "u") == 7.0
    assert r.zscore(board_key, "v") == 1.0  # applied once, reported as a ConnectionError


@pytest.mark.parametrize(("retries", "attempts"), [(None, 3), (1, 2)], ids=["default", "retries1"])
def test_resends_are_bounded_then_connection_error(
    api: Api,
    redis_server: RedisServer,
    client: Client,
    board_key: str,
    r: Any,
    retries: Any,
    attempts: int,
) -> None:
    RedisLeaderboard(client, board_key, 10, layout=TEST_LAYOUT).submit("warm", 1)
    proxy = ReplyDropper(redis_server.port, drops=100)
    options = {} if retries is None else {"retries": retries}
    try:
        board = api.leaderboard(
            board_key, 10, client=api.connect(port=proxy.port, socket_timeout=5)
        )
        with pytest.raises(ConnectionError, match=f"no reply after {attempts} attempts"):
            board.submit("u", 7, mode="incr", submission_id="never", **options)
    finally:
        proxy.close()
    assert proxy.dropped == attempts
    assert r.zscore(board_key, "u") == 7.0  # applied exactly once


def test_bad_submission_ids_raise_before_anything_is_sent(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 10)
    with pytest.raises(ValueError):
        board.submit("u", 1, submission_id="")
    with pytest.raises(TypeError):
        board.submit("u", 1, submission_id=5)
    with pytest.raises(ValueError):
        board.submit("u", 1, submission_id="x", retries=-1)
    with pytest.raises(TypeError):
        board.upsert_many([("u", 1, None, 7)])
    assert r.exists(board_key) == 0


# ---- One user, one payload ----------------------------------------------------------------------


def test_an_id_reused_for_another_user_raises_and_never_answers_with_their_data(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.leaderboard(board_key)
    ann = board.submit(
        "ann", 100, {"name": "Ann", "email": "ann@example.com"}, submission_id="run-1"
    )
    assert ann["duplicate"] is False
    before = snapshot(r, board_key)
    with pytest.raises(SubmissionIdReused, match="another user") as raised:
        board.submit("bob", 500, {"name": "Bob"}, submission_id="run-1")
    assert isinstance(raised.value, ValueError)
    assert "ann" not in str(raised.value).replace(board_key, "")  # no trace of Ann's data
    assert snapshot(r, board_key) == before  # Bob never written, nothing changed
    assert board.get_user_entry("bob") is None
    # Ann's own resend is a duplicate: her first result.
    again = board.submit(
        "ann", 100, {"name": "Ann", "email": "ann@example.com"}, submission_id="run-1"
    )
    assert again == {**ann, "duplicate": True}


def test_an_id_reused_with_another_payload_raises(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, ties="dense")
    first = board.submit("ann", 10, {"a": "1", "b": "2"}, mode="best", submission_id="s")
    before = snapshot(r, board_key)
    for score, metadata, mode in [
        (11, {"a": "1", "b": "2"}, "best"),  # another score
        (10, {"a": "1", "b": "2"}, "set"),  # another mode
        (10, {"a": "1"}, "best"),  # another metadata
        (10, {"a": "1", "b": "3"}, "best"),
        (10, None, "best"),
    ]:
        with pytest.raises(SubmissionIdReused, match="another score, mode or metadata"):
            board.submit("ann", score, metadata, mode=mode, submission_id="s")
        assert snapshot(r, board_key) == before
    # The metadata's field order is not part of the payload: a resend from another dict order.
    again = board.submit("ann", 10, {"b": "2", "a": "1"}, mode="best", submission_id="s")
    assert again == {**first, "duplicate": True}


def test_each_refusal_has_its_own_valueerror(api: Api, board_key: str) -> None:
    for error in (OptionsMismatch, PeriodClosed, SubmissionIdReused):
        assert issubclass(error, ValueError)
    api.leaderboard(board_key, order="asc").upsert_user("a", 1)
    with pytest.raises(OptionsMismatch, match="order='asc'"):
        api.leaderboard(board_key).submit("b", 1)
    other = f"{board_key}:g"
    group = api.group([api.leaderboard(other), api.leaderboard(board_key)])
    with pytest.raises(OptionsMismatch, match=board_key):
        group.submit("b", 1)
    clock = FakeClock(MONDAY)
    weekly = api.periodic(f"{board_key}:w", period="week", clock=clock)
    last_week = weekly.previous()
    with pytest.raises(PeriodClosed, match=W_OLD):
        last_week.submit("a", 1)


# ---- submit() and upsert_many() share ids -------------------------------------------------------


def test_upsert_many_skips_entries_whose_id_was_applied(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 100)
    entries = [(f"u{i}", i, None, f"import-1:{i}") for i in range(10)]
    assert board.upsert_many(entries)["written"] == 10
    board.upsert_user("u3", 100)
    again = board.upsert_many([*entries, ("u10", 10, {"a": "b"}, "import-1:10"), ("u11", 11)])
    assert again["written"] == 2 and again["duplicates"] == 10
    assert board.get_user_entry("u3")["score"] == 100.0
    # The same id twice in one chunk, for the same payload, applies once.
    dup = board.upsert_many([("w", 1, None, "same"), ("w", 1, None, "same")])
    assert dup["written"] == 1 and board.get_user_entry("w")["score"] == 1.0
    # For another payload or user, the chunk is refused whole: nothing written.
    size = board.get_size()
    for clash in [("w", 2, None, "same"), ("x", 1, None, "same"), ("w", 1, {"a": "b"}, "same")]:
        with pytest.raises(SubmissionIdReused):
            board.upsert_many([("y", 1), clash])
        assert board.get_size() == size and board.get_user_entry("y") is None


@pytest.mark.parametrize("ties", ["lexicographic", "competition"])
def test_submit_with_an_id_upsert_many_applied_is_a_duplicate(
    api: Api, board_key: str, ties: Any
) -> None:
    board = api.leaderboard(board_key, 10, ties=ties, events=True)
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
    assert board.get_user_entry("u")["score"] == 6.0
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


def test_upsert_many_skips_an_id_submit_applied(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10)
    board.submit("u", 3, submission_id="s:1")
    summary = board.upsert_many([("u", 3, None, "s:1"), ("v", 1, None, "s:2")])
    assert (summary["written"], summary["duplicates"]) == (1, 1)
    assert board.get_user_entry("u")["score"] == 3.0
    with pytest.raises(SubmissionIdReused):  # another score than submit()'s
        board.upsert_many([("u", 50, None, "s:1")])
    # And the id upsert_many applied gives submit() a duplicate, not an error.
    assert board.submit("v", 1, submission_id="s:2")["duplicate"] is True


def test_ids_shared_by_upsert_many_and_submit(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10)
    board.upsert_many([("u", 5, None, "a:1")])
    with pytest.raises(SubmissionIdReused):
        board.submit("u", 1, mode="incr", submission_id="a:1")
    again = board.submit("u", 5, submission_id="a:1")
    assert (again["duplicate"], again["score"], again["rank"]) == (True, 5.0, 1)
    board.submit("w", 2, submission_id="a:2")
    summary = board.upsert_many([("w", 2, None, "a:2")])
    assert (summary["written"], summary["duplicates"]) == (0, 1)
    assert board.get_user_entry("w")["score"] == 2.0


# ---- Groups and rolling windows -----------------------------------------------------------------


def clear_of_midnight() -> datetime:
    """Now, or 40 minutes earlier within 40 minutes of a UTC midnight: the tests move the clock
    by up to 30 minutes and expect the daily board's period to stay the same (a resend across
    the boundary is tested below, at a fixed time). Near now: the keys' deadlines are real."""
    now = datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return now - timedelta(minutes=40) if midnight - now < timedelta(minutes=40) else now


def make_boards(api: Api, key: str, clock: FakeClock, client: Any = None) -> list[Any]:
    return [
        api.leaderboard(key=f"{key}:alltime", max_entries=10, client=client),
        api.leaderboard(key=f"{key}:fastest", order="asc", ties="first", client=client),
        api.periodic(key=f"{key}:daily", period="day", clock=clock, client=client),
        api.rolling(
            key=f"{key}:recent",
            window=timedelta(hours=1),
            bucket=timedelta(minutes=10),
            clock=clock,
            submission_ttl=3600,
            client=client,
        ),
    ]


def scores(r: Any, boards: list[Any], user: str) -> list[Any]:
    keys = [b.current().key if hasattr(b, "current") else b.key for b in boards]
    return [r.zscore(k, user) for k in keys]


def test_a_repeated_group_write_returns_the_stored_results(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = make_boards(api, board_key, clock)
    group = api.group(boards)
    first = group.submit("ada", 5, {"team": "red"}, mode="incr", submission_id="match-1")
    assert [res["duplicate"] for res in first.values()] == [False] * 4
    group.submit("bob", 9, mode="incr")
    clock.now += timedelta(minutes=10)  # the window's next bucket: the id is the window's
    again = group.submit("ada", 5, {"team": "red"}, mode="incr", submission_id="match-1")
    assert again == {k: {**res, "duplicate": True} for k, res in first.items()}
    # The id belongs to one payload: another one raises and changes nothing.
    before = snapshot(r, board_key)
    with pytest.raises(SubmissionIdReused, match="another score"):
        group.submit("ada", 5, {"team": "blue"}, mode="incr", submission_id="match-1")
    assert snapshot(r, board_key) == before
    assert scores(r, boards, "ada") == [5.0, 5.0, 5.0, 5.0]
    assert boards[0].get_user_metadata("ada") == {"team": "red"}
    # Each board's id lives under that board, for that board's submission_ttl; a periodic
    # board's under its own key, whatever the period.
    assert r.pttl(f"{board_key}:alltime:submission:match-1") == 86_400_000 - 600_000
    # (the server's clock moved 10 minutes: 50 of the window's 60 are left)
    assert 0 < r.pttl(f"{board_key}:recent:submission:match-1") <= 3_000_000
    assert r.exists(f"{boards[2].key}:submission:match-1")
    # Without an id there is no "duplicate" key: the shape is unchanged.
    assert all("duplicate" not in res for res in group.submit("cy", 1).values())


def test_a_board_that_applied_the_id_alone_replies_its_stored_result(
    api: Api, board_key: str
) -> None:
    alltime = api.leaderboard(key=f"{board_key}:alltime")
    weekly = api.leaderboard(key=f"{board_key}:weekly")
    alone = alltime.submit("ada", 3, mode="incr", submission_id="m")
    out = api.group([alltime, weekly]).submit("ada", 3, mode="incr", submission_id="m")
    assert out[alltime.key] == {**alone, "duplicate": True}
    assert out[weekly.key]["duplicate"] is False and out[weekly.key]["score"] == 3.0
    assert alltime.get_user_entry("ada")["score"] == 3.0


def test_a_rolling_windows_repeated_write_returns_the_stored_result(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(clear_of_midnight())
    recent = api.rolling(
        key=board_key, window=timedelta(hours=1), bucket=timedelta(minutes=5), clock=clock
    )
    assert recent.submission_ttl == 86400
    first = recent.submit("ada", 4, {"n": "a"}, mode="incr", submission_id="s-1")
    assert first["duplicate"] is False and first["score"] == 4.0
    recent.increment_score("ada", 1)
    clock.now += timedelta(minutes=5)
    again = recent.submit("ada", 4, {"n": "a"}, mode="incr", submission_id="s-1")
    assert again == {**first, "duplicate": True}
    with pytest.raises(SubmissionIdReused):  # without the metadata: another payload
        recent.submit("ada", 4, mode="incr", submission_id="s-1")
    with pytest.raises(SubmissionIdReused, match="another user"):
        recent.submit("bob", 4, {"n": "a"}, mode="incr", submission_id="s-1")
    assert recent.get_user_entry("ada")["score"] == 5.0
    assert 0 < r.pttl(f"{board_key}:submission:s-1") <= 86_400_000


@sync_only
def test_the_same_group_id_from_8_threads_applies_once(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(clear_of_midnight())
    api_boards = make_boards(api, board_key, clock)
    group = api.group(api_boards)
    results: list[dict[str, Any]] = []
    windowed: list[dict[str, Any]] = []

    def worker() -> None:
        for _ in range(40):
            results.append(group.submit("u", 1, mode="incr", submission_id="once"))
            windowed.append(api_boards[3].submit("w", 1, mode="incr", submission_id="w-once"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 320
    firsts = [res for res in results if not any(v["duplicate"] for v in res.values())]
    assert len(firsts) == 1
    assert all(all(v["duplicate"] for v in res.values()) for res in results if res is not firsts[0])
    assert scores(r, api_boards, "u") == [1.0, 1.0, 1.0, 1.0]
    assert sum(not res["duplicate"] for res in windowed) == 1
    assert api_boards[3].get_user_entry("w")["score"] == 1.0


@asyncio_only
def test_the_same_group_id_from_300_tasks_applies_once(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = [unwrap(b) for b in make_boards(api, board_key, clock)]
    group = unwrap(api.group(boards))

    async def task() -> tuple[Any, Any]:
        return (
            await group.submit("u", 2, mode="incr", submission_id="once"),
            await boards[3].submit("w", 2, mode="incr", submission_id="w-once"),
        )

    async def main() -> list[tuple[Any, Any]]:
        return await asyncio.gather(*(task() for _ in range(300)))

    pairs = api.run(main())
    grouped, windowed = [p[0] for p in pairs], [p[1] for p in pairs]
    assert sum(not any(v["duplicate"] for v in res.values()) for res in grouped) == 1
    assert sum(all(v["duplicate"] for v in res.values()) for res in grouped) == 299
    assert scores(r, boards, "u") == [2.0, 2.0, 2.0, 2.0]
    assert sum(not res["duplicate"] for res in windowed) == 1
    assert r.zscore(f"{board_key}:recent", "w") == 2.0


@pytest.mark.parametrize(
    "plant",
    [
        lambda k, rec: f"{k}:fastest:submission:m",  # the id's own key
        lambda k, rec: f"{k}:recent:submission:m",
        lambda k, rec: f"{k}:recent:bucket:{rec.bucket_at()}",
        lambda k, rec: f"{k}:recent:user:ada",
    ],
    ids=["board-id-key", "window-id-key", "window-bucket", "window-metadata"],
)
def test_a_refused_write_with_an_id_writes_nothing_and_stores_no_id(
    api: Api, board_key: str, r: Any, plant: Any
) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = make_boards(api, board_key, clock)
    group = api.group(boards)
    group.submit("bob", 1)  # every board exists
    planted = plant(board_key, boards[3])
    r.delete(planted)
    r.rpush(planted, "x")
    before = snapshot(r, board_key)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        group.submit("ada", 5, {"n": "a"}, mode="incr", submission_id="m")
    assert snapshot(r, board_key) == before  # nothing anywhere: no score, no id
    if "recent" in planted:
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            boards[3].submit("ada", 5, mode="incr", submission_id="m")
        assert snapshot(r, board_key) == before
    # Once the key is gone the id applies: nothing had been recorded under it.
    r.delete(planted)
    out = group.submit("ada", 5, mode="incr", submission_id="m")
    assert [res["duplicate"] for res in out.values()] == [False] * 4
    assert scores(r, boards, "ada") == [5.0, 5.0, 5.0, 5.0]


def test_a_lost_group_reply_is_resent_and_applies_once(
    api: Api, redis_server: RedisServer, board_key: str, r: Any
) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = make_boards(api, board_key, clock)
    api.group(boards).submit("warm", 1)  # the script is cached: the first attempt runs
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        lossy = api.connect(port=proxy.port, socket_timeout=5)
        lossy_boards = make_boards(api, board_key, clock, client=lossy)
        group = api.group(lossy_boards, client=lossy)
        out = group.submit("u", 7, mode="incr", submission_id="lost")
    finally:
        proxy.close()
    assert proxy.dropped == 1
    # The first attempt applied (its reply was lost); the resend found the stored results: this
    # call's own, so no duplicate anywhere.
    assert all(res["duplicate"] is False and res["score"] == 7.0 for res in out.values())
    # Another call with the id is one.
    again = api.group(boards).submit("u", 7, mode="incr", submission_id="lost")
    # (Another group, of other board objects on the same keys: compared by the boards' keys.)
    assert again.by_key() == {k: {**v, "duplicate": True} for k, v in out.by_key().items()}
    assert scores(r, boards, "u") == [7.0] * 4


def test_bad_group_and_window_ids_raise_before_anything_is_sent(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(clear_of_midnight())
    boards = make_boards(api, board_key, clock)
    group = api.group(boards)
    with pytest.raises(ValueError):
        group.submit("u", 1, submission_id="")
    with pytest.raises(TypeError):
        group.submit("u", 1, submission_id=5)
    with pytest.raises(ValueError):
        group.submit("u", 1, submission_id="x", retries=-1)
    with pytest.raises(ValueError):
        boards[3].submit("u", 1, submission_id="")
    with pytest.raises(ValueError):
        api.rolling(key=board_key, submission_ttl=0)
    assert r.keys(f"{board_key}*") == []


def test_ids_of_group_writes_belong_to_one_user(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(SUNDAY_LATE)
    boards = [
        api.leaderboard(f"{board_key}:alltime"),
        api.periodic(f"{board_key}:weekly", period="week", clock=clock),
        api.rolling(
            f"{board_key}:recent",
            window=timedelta(hours=1),
            bucket=timedelta(minutes=5),
            clock=clock,
        ),
    ]
    group = api.group(boards)
    group.submit("ann", 7, {"email": "ann@example.com"}, mode="incr", submission_id="g")
    before = snapshot(r, board_key)
    with pytest.raises(SubmissionIdReused, match="another user"):
        group.submit("bob", 7, {"email": "ann@example.com"}, mode="incr", submission_id="g")
    with pytest.raises(SubmissionIdReused, match="another score"):
        group.submit("ann", 8, {"email": "ann@example.com"}, mode="incr", submission_id="g")
    assert snapshot(r, board_key) == before


# ---- The submission, not the period -------------------------------------------------------------


def weekly_group(api: Api, key: str, clock: FakeClock, client: Any = None) -> tuple[Any, list[Any]]:
    boards = [
        api.leaderboard(f"{key}:alltime", client=client),
        api.periodic(f"{key}:weekly", period="week", clock=clock, client=client),
        api.periodic(f"{key}:daily", period="day", clock=clock, client=client),
    ]
    return api.group(boards, client=client), boards


def test_a_group_resend_across_a_period_boundary_applies_once(
    api: Api, redis_server: RedisServer, board_key: str, r: Any
) -> None:
    """Sent at 23:59:59 Sunday, its reply lost, resent after midnight."""
    clock = FakeClock(SUNDAY_LATE)
    dropper = ReplyDropper(redis_server.port, drops=1)
    try:
        lossy = api.connect(port=dropper.port)
        group, _ = weekly_group(api, board_key, clock, client=lossy)
        with pytest.raises(ConnectionError):  # applied; its reply went nowhere
            group.submit("ann", 3, {"team": "red"}, mode="incr", submission_id="m-1", retries=0)
    finally:
        dropper.close()
    assert r.zscore(f"{board_key}:weekly:{W_OLD}", "ann") == 3.0
    clock.now = MONDAY
    group, boards = weekly_group(api, board_key, clock)
    again = group.submit("ann", 3, {"team": "red"}, mode="incr", submission_id="m-1")
    assert {k: (v["duplicate"], v.get("period")) for k, v in again.by_key().items()} == {
        f"{board_key}:alltime": (True, None),
        f"{board_key}:weekly": (True, W_OLD),
        f"{board_key}:daily": (True, DAY_OLD),
    }
    assert all(v["score"] == 3.0 for v in again.values())
    # Nothing in the new periods; the old ones hold the one write.
    assert boards[1].current().key == f"{board_key}:weekly:{W_NEW}"
    assert boards[1].get_size() == 0 and boards[2].get_size() == 0
    assert r.zscore(f"{board_key}:alltime", "ann") == 3.0
    assert r.zscore(f"{board_key}:daily:{DAY_OLD}", "ann") == 3.0
    # A new submission in the new week is written there, and says so.
    new = group.submit("ann", 1, mode="incr", submission_id="m-2")
    assert new[f"{board_key}:weekly"]["period"] == W_NEW
    assert new[f"{board_key}:weekly"]["duplicate"] is False
    assert new[f"{board_key}:alltime"]["score"] == 4.0


def test_a_group_resend_after_the_boundary_returns_the_first_results(
    api: Api, board_key: str
) -> None:
    clock = FakeClock(SUNDAY_LATE)
    group, boards = weekly_group(api, board_key, clock)
    first = group.submit("ann", 2, mode="incr", submission_id="a-1")
    clock.now = MONDAY
    again = group.submit("ann", 2, mode="incr", submission_id="a-1")
    assert again == {k: {**v, "duplicate": True} for k, v in first.items()}
    assert again[f"{board_key}:weekly"]["period"] == W_OLD
    assert boards[1].get_size() == 0
    with pytest.raises(SubmissionIdReused, match="another user"):
        group.submit("bob", 2, mode="incr", submission_id="a-1")
    weekly = boards[1]
    one = weekly.submit("cy", 1, submission_id="a-2")
    assert one["period"] == W_NEW


def test_a_periodic_boards_resend_after_the_boundary_returns_the_first_result(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(SUNDAY_LATE)
    weekly = api.periodic(board_key, period="week", clock=clock, submission_ttl=8 * 86400)
    first = weekly.submit("ann", 5, mode="incr", submission_id="x")
    assert (first["period"], first["duplicate"]) == (W_OLD, False)
    clock.now = MONDAY
    again = weekly.submit("ann", 5, mode="incr", submission_id="x")
    assert again == {**first, "duplicate": True}
    assert weekly.get_size() == 0  # W49 untouched
    assert r.zscore(f"{board_key}:{W_OLD}", "ann") == 5.0
    # The record is the periodic board's, kept for submission_ttl (8 days of the server's
    # clock, which moved 2 seconds), not for the period.
    assert 8 * 86_400_000 - 3_000 < r.pttl(f"{board_key}:submission:x") <= 8 * 86_400_000 - 2_000
    assert not r.exists(f"{board_key}:{W_OLD}:submission:x")
    # upsert_many's ids are the periodic board's too.
    weekly.current().upsert_many([("bea", 2, None, "bulk-1")])
    clock.now = MONDAY + timedelta(days=7)  # the week after
    dup = weekly.submit("bea", 2, submission_id="bulk-1")
    assert (dup["duplicate"], dup["period"], dup["rank"]) == (True, W_NEW, None)
    assert weekly.get_size() == 0


def test_a_periods_submission_id_applies_once(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(datetime.now(UTC))
    weekly = api.periodic(key=board_key, period="week", clock=clock, submission_ttl=30)
    first = weekly.submit("ada", 5, mode="incr", submission_id="match-1")
    again = weekly.submit("ada", 5, mode="incr", submission_id="match-1")
    assert (first["duplicate"], again["duplicate"]) == (False, True)
    assert weekly.get_user_entry("ada")["score"] == 5.0
    # The id is the periodic board's, whatever the period.
    key = f"{board_key}:submission:match-1"
    assert 0 < r.pttl(key) <= 30_000
