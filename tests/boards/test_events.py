"""Change events (``events=True``, ``board.events()``), sync and asyncio: every change appends
its event (writes with their overtakes, deletions, trims, clears, bulk loads), as a plain-Python
model says; a reader resumes from its last id and misses nothing; the stream stays capped; a
removal whose event cannot be appended changes nothing; ``events()`` checks its arguments when
called; a group's write appends each board's event."""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Callable, Optional

import pytest

from apis import Api, asyncio_only, sync_and_one_loop, sync_only, unwrap
from conftest import RedisServer, unique_key
from helpers import UTC, FakeClock, layout_acl_commands, snapshot
from redis_leaderboard import NoPermissionError, ResponseError, _core
from test_atomicity import PASSWORD, make_user, minimal_rule


@pytest.fixture
def key(board_key: str) -> str:
    return board_key


# ---- Events ---------------------------------------------------------------------------------


def overtaken_model(before: list[str], after: list[str], user: str) -> list[str]:
    """Ids ahead of `user` before (all if it was absent) and behind it after, nearest first."""
    if user not in after:
        return []
    ahead_before = set(before[: before.index(user)] if user in before else before)
    behind = after[after.index(user) + 1 :]
    return [u for u in behind if u in ahead_before][:10]


@sync_and_one_loop
def test_events_match_a_model_over_random_writes(api: Api, key: str) -> None:
    rng = random.Random(17)
    board = api.leaderboard(key, 15, events=True)
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


def test_no_event_for_a_write_that_changed_nothing(api: Api, key: str) -> None:
    board = api.leaderboard(key, 10, events=True)
    board.submit("u", 10, mode="best")
    board.submit("u", 5, mode="best")  # not better: nothing changes
    board.upsert_user("u", 10)  # the same score
    assert [e["score"] for e in board.events("0", block=0)] == [10.0]


def test_a_reader_resumes_from_its_last_id_and_misses_nothing(api: Api, key: str) -> None:
    board = api.leaderboard(key, 100, events=True)
    for i in range(5):
        board.upsert_user(f"u{i}", i)
    reader = board.events("0", block=0)
    seen = [next(reader) for _ in range(3)]
    reader.close()  # disconnects
    for i in range(5, 8):
        board.upsert_user(f"u{i}", i)
    rest = list(board.events(seen[-1]["id"], block=0))
    assert [e["user_id"] for e in seen + rest] == [f"u{i}" for i in range(8)]


@sync_and_one_loop
def test_the_stream_stays_capped(api: Api, key: str, r: Any) -> None:
    board = api.leaderboard(key, 2000, events=True, events_maxlen=100)
    board.upsert_many((f"u{i}", i) for i in range(1000))
    for i in range(300):
        board.increment_score(f"u{i}", 1000)
    length = r.xlen(f"{key}:events")
    assert 100 <= length < 300  # MAXLEN ~: whole macro nodes of 100 entries


@sync_only  # a thread blocked in XREAD while the test's thread writes
def test_a_blocked_reader_gets_a_write_made_after_it_started(api: Api, key: str) -> None:
    board = api.leaderboard(key, 10, events=True)
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


@asyncio_only  # a task blocked in XREAD while other tasks write on the shared connection
def test_a_blocked_task_gets_the_writes_of_other_tasks(api: Api, key: str) -> None:
    board = unwrap(api.leaderboard(key, 10, events=True))

    async def main() -> list[str]:
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

    assert api.run(main()) == ["a", "b", "c"]


@sync_and_one_loop  # its cost is its wait
def test_events_with_block_end_when_nothing_comes(api: Api, key: str) -> None:
    board = api.leaderboard(key, 10, events=True)
    started = time.monotonic()
    assert list(board.events(block=0.3)) == []
    assert 0.25 < time.monotonic() - started < 3
    with pytest.raises(ValueError):
        list(board.events(block=-1))


def test_upsert_many_appends_events(api: Api, key: str) -> None:
    board = api.leaderboard(key, 10, events=True)
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


def drive_model(board: Any, seed: int) -> BoardModel:
    """Random writes, deletions, trims, bulk loads and clears on `board` and on the model, their
    results checked as they go; returns the model (its events are what the stream must hold)."""

    def call(name: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(board, name)(*args, **kwargs)

    rng = random.Random(seed)
    model = BoardModel(board.max_entries)
    for _ in range(250):
        user = f"p{rng.randrange(25)}"
        action = rng.choices(
            ["submit", "delete", "delete_absent", "trim", "bulk", "clear"], [60, 12, 3, 8, 12, 3]
        )[0]
        if action == "submit":
            mode, score = rng.choice(["set", "best", "incr"]), rng.randrange(-5, 40)
            result = call("submit", user, score, mode=mode)
            expected = model.submit(user, score, mode)
            assert {k: result[k] for k in expected} == expected
        elif action in ("delete", "delete_absent"):
            if action == "delete" and model.scores:
                user = rng.choice(sorted(model.scores))
            assert call("delete_user", user) == model.delete_user(user)
        elif action == "trim":
            limit = rng.randrange(4, 20)
            assert call("set_max_entries", limit) == model.set_max_entries(limit)
        elif action == "bulk":
            entries = [(f"p{rng.randrange(25)}", float(rng.randrange(-5, 40))) for _ in range(6)]
            summary = call("upsert_many", entries)
            assert summary["trimmed"] == model.upsert_many(entries)
        else:
            call("clear")
            model.clear()
    assert [e["user_id"] for e in call("list_all")] == model.order()
    return model


def without_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "id"} for e in events]


@pytest.mark.parametrize("seed", [171, 172])
@sync_and_one_loop
def test_every_change_appends_the_models_events(api: Api, key: str, seed: int) -> None:
    board = api.leaderboard(key, 12, events=True)
    model = drive_model(board, seed=seed)
    kinds = {e["kind"] for e in model.events}
    assert kinds == {"score", "delete", "trim", "clear"}  # the run exercised every kind
    with board.events("0", block=0) as stream:
        assert without_ids(list(stream)) == model.events


def test_removal_events_have_every_field_of_a_write_event(api: Api, key: str) -> None:
    board = api.leaderboard(key, 10, events=True)
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
    api: Api, key: str, r: Any, ties: Any
) -> None:
    board = api.leaderboard(key, 10, ties=ties, events=True)
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
    assert r.keys(f"{key}*") == [f"{key}:events"]


@sync_and_one_loop
def test_a_big_clear_appends_one_event_a_page_not_one_an_entry(api: Api, key: str, r: Any) -> None:
    # Loaded by a client without events (the board records none), cleared by one with them.
    api.leaderboard(key, 20_000).upsert_many((f"u{i}", i) for i in range(12_000))
    board = api.leaderboard(key, 20_000, events=True)
    board.clear()
    events = list(board.events("0", block=0))
    assert [(e["kind"], e["removed"], e["size"]) for e in events] == [
        ("clear", 5000, 7000),
        ("clear", 5000, 2000),
        ("clear", 2000, 0),
    ]
    assert all(e["trimmed_user_ids"] == [] and e["user_id"] is None for e in events)
    assert r.exists(key) == 0


@sync_and_one_loop
def test_a_big_trim_lists_every_id_a_thousand_an_event(api: Api, key: str) -> None:
    api.leaderboard(key, 20_000).upsert_many((f"u{i:05}", i) for i in range(12_000))
    board = api.leaderboard(key, 20_000, events=True)
    assert len(board.set_max_entries(100)) == 11_900
    events = list(board.events("0", block=0))
    assert {e["kind"] for e in events} == {"trim"}
    assert [len(e["trimmed_user_ids"]) for e in events] == [1000] * 11 + [900]
    ids = [u for e in events for u in e["trimmed_user_ids"]]
    assert ids == [f"u{i:05}" for i in range(11_900)]  # worst first


def test_upsert_many_appends_trim_events_for_its_closing_trim(api: Api, key: str) -> None:
    board = api.leaderboard(key, 2, events=True)
    summary = board.upsert_many([("a", 1), ("b", 2), ("c", 3), ("d", 4)])
    assert summary["trimmed_user_ids"] == ["a", "b"]
    events = list(board.events("0", block=0))
    assert [e["kind"] for e in events] == ["score"] * 4 + ["trim"]
    assert events[-1]["trimmed_user_ids"] == ["a", "b"]


REMOVALS: list[tuple[str, tuple[Any, ...]]] = [
    ("delete_user", ("b",)),
    ("clear", ()),
    ("set_max_entries", (1,)),
]


@pytest.mark.parametrize("method, args", REMOVALS)
def test_a_removal_whose_event_cannot_be_appended_changes_nothing(
    api: Api, key: str, r: Any, method: str, args: tuple[Any, ...]
) -> None:
    board = api.leaderboard(key, 10, events=True)
    board.upsert_many([("a", 3), ("b", 2, {"name": "B"}), ("c", 1)])
    r.delete(f"{key}:events")
    r.set(f"{key}:events", "not a stream")
    before = snapshot(r, key)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        getattr(board, method)(*args)
    assert snapshot(r, key) == before
    assert board.max_entries == 10


@pytest.fixture
def acl_key(acl_server: RedisServer) -> Iterator[tuple[RedisServer, Any, str]]:
    """(the ACL server, an admin redis-py client, a board key under "lb:"); cleaned up after."""
    admin = acl_server.redis_py()
    with unique_key(acl_server, "lb:guards") as name:
        yield acl_server, admin, name
    admin.acl_deluser("no-xadd")
    admin.close()


def test_a_removal_the_acl_denies_xadd_changes_nothing(
    api: Api, acl_key: tuple[RedisServer, Any, str]
) -> None:
    server, admin, key = acl_key
    owner = api.leaderboard(key, 10, events=True, client=api.connect(port=server.port))
    owner.upsert_many([("a", 3), ("b", 2, {"name": "B"}), ("c", 1)])
    # The README's rule for a default board (and the compact layout's commands): no XADD.
    make_user(admin, "no-xadd", minimal_rule() + layout_acl_commands(owner))
    user = api.connect(port=server.port, username="no-xadd", password=PASSWORD)
    denied = api.leaderboard(key, 10, events=True, client=user)
    before = snapshot(admin, key)
    for method, args in REMOVALS:
        with pytest.raises(NoPermissionError, match="'XADD'"):
            getattr(denied, method)(*args)
    assert snapshot(admin, key) == before


def test_a_client_without_events_may_not_remove_from_a_board_with_them(
    api: Api, key: str, r: Any
) -> None:
    api.leaderboard(key, 10, events=True).upsert_many([("a", 3), ("b", 2)])
    plain = api.leaderboard(key, 10)
    before = snapshot(r, key)
    for method, args in REMOVALS:
        with pytest.raises(ValueError, match="events=True"):
            getattr(plain, method)(*args)
    assert snapshot(r, key) == before


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


def test_a_periods_removal_events_expire_with_the_period(api: Api, key: str, r: Any) -> None:
    weekly = api.periodic(key=key, period="week", events=True)
    weekly.upsert_user("ada", 5)
    board = weekly.current()
    r.persist(f"{board.key}:events")  # as if its stream had no deadline
    assert weekly.delete_user("ada") is True
    assert [e["kind"] for e in board.events("0", block=0)] == ["score", "delete"]
    # The board's sorted set is gone (its last entry deleted): its options hash has the deadline.
    deadline = r.pttl(f"{board.key}:options")
    assert 0 < r.pttl(f"{board.key}:events") <= deadline + 1000


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


@sync_and_one_loop
def test_a_write_trimming_more_than_a_thousand_lists_the_rest_in_trim_events(
    api: Api, key: str
) -> None:
    api.leaderboard(key, 10_000, events=True).upsert_many((f"u{i:04}", i) for i in range(2500))
    small = api.leaderboard(key, 100, events=True)  # a smaller limit: 2,401 go
    result = small.upsert_user("top", 1e6)
    assert len(result["trimmed_user_ids"]) == 2401
    events = list(small.events("0", block=0))[2500:]
    assert [(e["kind"], len(e["trimmed_user_ids"])) for e in events] == [
        ("score", 1000),
        ("trim", 1000),
        ("trim", 401),
    ]
    assert [u for e in events for u in e["trimmed_user_ids"]] == result["trimmed_user_ids"]


# ---- Groups -------------------------------------------------------------------------------------


def test_a_group_write_appends_each_boards_event(api: Api, key: str) -> None:
    clock = FakeClock(datetime.now(UTC))
    alltime = api.leaderboard(key=f"{key}:all", events=True)
    daily = api.periodic(key=f"{key}:daily", period="day", clock=clock, events=True)
    group = api.group([alltime, daily])
    group.submit("ada", 3)
    group.submit("bob", 4)
    # block=0: what is there, no waiting (the server's clock stands still under a FakeClock,
    # and a blocking read's timeout is counted on it).
    with alltime.events(last_id="0", block=0) as stream:
        seen = [(e["user_id"], e["rank"], e["overtaken"]) for e in stream]
    assert seen == [("ada", 1, []), ("bob", 1, ["ada"])]
    with daily.current().events(last_id="0", block=0) as stream:
        assert [(e["user_id"], e["rank"]) for e in stream] == [("ada", 1), ("bob", 1)]


def test_a_group_write_without_a_boards_recorded_events_is_refused(
    api: Api, key: str, r: Any
) -> None:
    api.leaderboard(key=key, events=True).submit("ada", 1)
    plain = api.leaderboard(key=key)  # no events: the recorded guard differs
    other = api.leaderboard(key=f"{key}:other")
    before = snapshot(r, key)
    with pytest.raises(ValueError, match="events"):
        api.group([other, plain]).submit("bob", 5)
    assert snapshot(r, key) == before


# ---- events()'s arguments -----------------------------------------------------------------------
# Every argument is checked when ``events()`` is called, before any state or connection exists,
# so a bad one raises there and nothing is left for ``__del__`` to trip on; ``read(0)`` answers
# at once (XREAD without BLOCK).

BAD_ARGUMENTS = [
    ({"count": -5}, ValueError, "count"),
    ({"count": 0}, ValueError, "count"),
    ({"count": "x"}, TypeError, "count"),
    ({"block": "x"}, TypeError, "block"),
    ({"block": -1}, ValueError, "block"),
    ({"block": True}, TypeError, "block"),
    ({"last_id": ""}, ValueError, "last_id"),
]


@pytest.fixture
def unraisable() -> Iterator[list[Any]]:
    """What ``sys.unraisablehook`` saw during the test (an exception in ``__del__``)."""
    seen: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        yield seen
    finally:
        sys.unraisablehook = previous


@pytest.mark.parametrize(("kwargs", "error", "name"), BAD_ARGUMENTS)
def test_events_checks_every_argument_when_called(
    api: Api, key: str, unraisable: list[Any], kwargs: dict[str, Any], error: type, name: str
) -> None:
    board = api.leaderboard(key, 10, events=True)
    with pytest.raises(error, match=name):
        board.events(**kwargs)  # raises here, not at the first iteration
    gc.collect()  # the half-made stream (if any) is gone: its __del__ has run
    assert [str(u.exc_value) for u in unraisable] == []


def test_read_checks_block(api: Api, key: str) -> None:
    board = api.leaderboard(key, 10, events=True)
    with board.events("0") as stream:
        with pytest.raises(TypeError, match="block"):
            stream.read("x")
        with pytest.raises(ValueError, match="block"):
            stream.read(-1)


def timed(read: Callable[[], Any], times: int = 5) -> float:
    """The median seconds of ``times`` calls of ``read``."""
    took = []
    for _ in range(times):
        started = time.perf_counter()
        assert read() == []
        took.append(time.perf_counter() - started)
    return statistics.median(took)


def test_read_zero_does_not_block(api: Api, key: str) -> None:
    # An idle stream: "XREAD BLOCK 1" would wait for the server's timer (about 100 ms at the
    # default hz 10); block=0 is "what is there now": XREAD without BLOCK.
    board = api.leaderboard(key, 10, events=True)
    board.upsert_user("a", 1)
    with board.events("$") as stream:
        assert stream.read(0) == []  # resolves "$" and connects
        assert timed(lambda: stream.read(0)) < 0.03
        assert timed(lambda: stream.read(None)) < 0.03
        board.upsert_user("b", 2)
        assert [e["user_id"] for e in stream.read(0)] == ["b"]
