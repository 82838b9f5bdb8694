"""A tournament's guards (sync and asyncio), the plain boards' mechanism (``lib/guards.lua``):
``rate_limit`` (a player's submissions beyond it raise ``RateLimited`` and change nothing, no
attempt used; a resend of an applied id is answered, never limited; the limit is recorded with
the options) and ``events`` (the tournament's one stream: a plain board's events plus the
period, in order, asyncio too; a refused submit appends none; hide and unhide appear)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from apis import Api, asyncio_only, unwrap
from conftest import RedisServer, unique_key
from helpers import FakeClock, snapshot
from redis_leaderboard import (
    AttemptsExhausted,
    OptionsMismatch,
    RateLimited,
    Tournament,
    TournamentFull,
)

UTC = timezone.utc
# Today's midnight (UTC): a period's keys expire by the real clock.
DAY0 = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "tournament") as k:
        yield k


def _clock() -> FakeClock:
    # The server's clock is in today's period (its window is the whole day).
    return FakeClock(datetime.now(UTC))


# -- rate_limit -------------------------------------------------------------------------------


def test_beyond_the_rate_limit_raises_and_changes_nothing(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    t = api.tournament(key, _clock(), schedule="day", max_attempts=5, rate_limit=(2, 60))
    assert t.rate_limit == (2, 60.0)
    api.call(t.submit, "ann", 1)
    api.call(t.submit, "ann", 2)
    api.call(t.submit, "bob", 3)  # another player's window
    r = redis_server.redis_py()
    before = snapshot(r, key)
    with pytest.raises(RateLimited) as raised:
        api.call(t.submit, "ann", 50, {"x": "1"})
    assert 0 < raised.value.retry_after <= 60
    assert snapshot(r, key) == before  # no attempt used, no score, no window entry
    status = api.call(t.status, "ann")
    assert status["attempts_left"] == 3
    assert api.call(t.get_user_entry, "ann")["score"] == 2


def test_a_resend_of_an_applied_id_is_never_limited(api: Api, key: str) -> None:
    t = api.tournament(key, _clock(), schedule="day", rate_limit=(1, 60))
    first = api.call(t.submit, "ann", 7, submission_id="s1")
    again = api.call(t.submit, "ann", 7, submission_id="s1")  # the limit is reached
    assert again["duplicate"] is True
    assert {k: v for k, v in again.items() if k != "duplicate"} == {
        k: v for k, v in first.items() if k != "duplicate"
    }
    with pytest.raises(RateLimited):  # a new submission is limited
        api.call(t.submit, "ann", 8, submission_id="s2")


def test_a_refused_write_is_not_counted(api: Api, key: str) -> None:
    t = api.tournament(key, _clock(), schedule="day", max_attempts=1, rate_limit=(2, 60))
    api.call(t.submit, "ann", 1)
    for _ in range(3):  # refused by max_attempts: never counted in the window
        with pytest.raises(AttemptsExhausted):
            api.call(t.submit, "ann", 2)
    api.call(t.add_attempts, "ann", 1)
    api.call(t.submit, "ann", 3)  # the second write of the window
    api.call(t.add_attempts, "ann", 1)
    with pytest.raises(RateLimited):
        api.call(t.submit, "ann", 4)


def test_the_limit_is_recorded_with_the_options(api: Api, key: str) -> None:
    clock = _clock()
    t = api.tournament(key, clock, schedule="day", rate_limit=(2, 60))
    api.call(t.join, "ann")
    for other in (
        api.tournament(key, clock, schedule="day"),  # would bypass the limit
        api.tournament(key, clock, schedule="day", rate_limit=(3, 60)),
        api.tournament(key, clock, schedule="day", rate_limit=(2, 60), events=True),
    ):
        with pytest.raises(OptionsMismatch, match=r"rate:2:60000"):
            api.call(other.submit, "bob", 1)
        with pytest.raises(ValueError):  # OptionsMismatch is a ValueError
            api.call(other.join, "bob")
    assert api.call(t.submit, "bob", 1)["size"] == 2


def test_a_tournament_without_guards_records_the_same_config(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    t = api.tournament(key, _clock(), schedule="day", max_attempts=3)
    api.call(t.submit, "ann", 1)
    config = redis_server.redis_py().hget(f"{key}:options", "config")
    assert config == (
        "max_size= join_required=0 max_attempts=3 mode=best order=desc ties=lexicographic"
    )
    assert not redis_server.redis_py().exists(f"{key}:events")


def test_bad_guards_raise_before_anything_is_sent(api: Api, key: str) -> None:
    clock = _clock()
    with pytest.raises(ValueError, match="max_writes"):
        api.tournament(key, clock, schedule="day", rate_limit=(0, 1))
    with pytest.raises(ValueError, match="per_seconds"):
        api.tournament(key, clock, schedule="day", rate_limit=(1, 0))
    with pytest.raises(TypeError, match="rate_limit"):
        api.tournament(key, clock, schedule="day", rate_limit=5)
    with pytest.raises(TypeError, match="events"):
        api.tournament(key, clock, schedule="day", events=1)
    with pytest.raises(ValueError, match="events_maxlen"):
        api.tournament(key, clock, schedule="day", events=True, events_maxlen=0)
    t = api.tournament(key, clock, schedule="day")
    with pytest.raises(ValueError, match="no events"):
        t.events()


def test_repr_names_the_guards() -> None:
    t = Tournament(
        None, "t:repr", schedule="day", rate_limit=(5, 1), events=True, url="redis://x:1"
    )
    assert repr(t).endswith("ties='lexicographic', rate_limit=(5, 1.0), events=True)")
    plain = Tournament(None, "t:repr", schedule="day", url="redis://x:1")
    assert repr(plain).endswith("ties='lexicographic')")
    assert plain.rate_limit is None and plain.events_enabled is False


# -- events -----------------------------------------------------------------------------------


def _fields(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k != "id"}


def test_events_in_order_with_the_period(api: Api, key: str) -> None:
    t = api.tournament(key, _clock(), schedule="day", max_attempts=3, events=True)
    assert t.events_key() == f"{key}:events" and t.events_enabled
    a = api.call(t.submit, "ann", 10)
    b = api.call(t.submit, "bob", 20)
    api.call(t.submit, "ann", 5)  # "best": not better, no event (an attempt used)
    c = api.call(t.submit, "ann", 30)
    period = a["period"]
    events = list(t.events("0", block=0))
    assert [_fields(e) for e in events] == [
        {
            "kind": "score", "user_id": "ann", "score": 10.0, "rank": 1,
            "previous_score": None, "previous_rank": None, "trimmed_user_ids": [],
            "overtaken": [], "period": period,
        },
        {
            "kind": "score", "user_id": "bob", "score": 20.0, "rank": 1,
            "previous_score": None, "previous_rank": None, "trimmed_user_ids": [],
            "overtaken": ["ann"], "period": period,
        },
        {
            "kind": "score", "user_id": "ann", "score": 30.0, "rank": 1,
            "previous_score": 10.0, "previous_rank": 2, "trimmed_user_ids": [],
            "overtaken": ["bob"], "period": period,
        },
    ]  # fmt: skip
    assert (b["rank"], c["rank"]) == (1, 1)
    ids = [e["id"] for e in events]
    assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))


def test_a_refused_submit_appends_no_event(api: Api, key: str, redis_server: RedisServer) -> None:
    clock = _clock()
    t = api.tournament(
        key, clock, schedule="day", max_size=1, max_attempts=1, events=True, rate_limit=(2, 60)
    )
    api.call(t.submit, "ann", 10)
    with pytest.raises(AttemptsExhausted):
        api.call(t.submit, "ann", 20)
    with pytest.raises(TournamentFull):
        api.call(t.submit, "bob", 20)
    api.call(t.add_attempts, "ann", 2)
    api.call(t.submit, "ann", 30)
    with pytest.raises(RateLimited):
        api.call(t.submit, "ann", 40)
    assert [(e["user_id"], e["score"]) for e in t.events("0", block=0)] == [
        ("ann", 10.0),
        ("ann", 30.0),
    ]
    # The stream expires with the period written (it never outlives the tournament's boards).
    r = redis_server.redis_py()
    board = f"{key}:{api.call(t.status, 'ann')['period']}"
    assert r.pexpiretime(f"{key}:events") == r.pexpiretime(board) > 0


def test_hide_and_unhide_appear(api: Api, key: str) -> None:
    t = api.tournament(key, _clock(), schedule="day", events=True)
    api.call(t.submit, "ann", 10)
    api.call(t.submit, "bob", 5)
    assert api.call(t.hide, "ann") is True
    api.call(t.submit, "ann", 50)  # hidden: kept aside, no event
    assert api.call(t.unhide, "ann") is True
    events = [_fields(e) for e in t.events("0", block=0)]
    period = events[0]["period"]
    assert [(e["kind"], e["user_id"], e["score"], e["rank"], e["period"]) for e in events] == [
        ("score", "ann", 10.0, 1, period),
        ("score", "bob", 5.0, 2, period),
        ("hide", "ann", 10.0, None, period),
        ("score", "ann", 50.0, 1, period),
    ]
    assert events[2]["previous_rank"] == 1


@asyncio_only  # a task blocked in XREAD while other tasks submit on the shared connection
def test_events_asyncio_as_they_come(api: Api, key: str) -> None:
    t = unwrap(api.tournament(key, _clock(), schedule="day", events=True))

    async def main() -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []

        async def watch() -> None:
            async for event in t.events(block=5):
                seen.append(event)
                if len(seen) == 2:
                    return

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.2)  # the watcher is waiting on "$"
        await t.submit("ann", 1)
        await t.submit("bob", 2)
        await asyncio.wait_for(watcher, 10)
        return seen

    seen = api.run(main())
    assert [(e["user_id"], e["score"]) for e in seen] == [("ann", 1.0), ("bob", 2.0)]
    assert all(e["period"] for e in seen)


# -- a plain-Python model ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_differential_against_a_model(api: Api, key: str, seed: int) -> None:
    """Random submissions (some resending an earlier id) against a model of the order of the
    checks: a resend of an applied id answers its first result; then the rate limit (the
    writes applied in the window: the test runs well within its 60 s; refused ones are not
    counted); then the attempts (``max_attempts`` plus those granted). Every applied write
    that changes a score is an event, in order; nothing else is."""
    rng = random.Random(seed)
    limit, attempts = 5, 3
    t = api.tournament(
        key, _clock(), schedule="day", max_attempts=attempts, rate_limit=(limit, 60), events=True
    )
    applied: dict[str, int] = {}  # user -> writes applied (in the window; attempts used)
    granted: dict[str, int] = {}
    best: dict[str, float] = {}
    ids: dict[str, tuple[str, float, dict[str, Any]]] = {}  # id -> (user, score, first result)
    expected_events: list[tuple[str, float]] = []
    for i in range(60):
        if ids and rng.random() < 0.25:
            sid = rng.choice(sorted(ids))
            user, score, first = ids[sid]
            assert api.call(t.submit, user, score, submission_id=sid) == {
                **first,
                "duplicate": True,
            }
            continue
        user, score, sid = rng.choice("abc"), float(rng.randrange(100)), f"s{i}"
        used = applied.get(user, 0)
        if used >= limit:
            with pytest.raises(RateLimited):
                api.call(t.submit, user, score, submission_id=sid)
        elif used >= attempts + granted.get(user, 0):
            with pytest.raises(AttemptsExhausted):
                api.call(t.submit, user, score, submission_id=sid)
            if rng.random() < 0.7:
                api.call(t.add_attempts, user, 1)
                granted[user] = granted.get(user, 0) + 1
        else:
            result = api.call(t.submit, user, score, submission_id=sid)
            applied[user] = used + 1
            assert result["attempts_used"] == used + 1 and result["duplicate"] is False
            ids[sid] = (user, score, result)
            if user not in best or score > best[user]:
                best[user] = score
                expected_events.append((user, score))
        assert api.call(t.status, user)["attempts_left"] == max(
            attempts + granted.get(user, 0) - applied.get(user, 0), 0
        )
    assert max(applied.values()) == limit  # the limit was reached
    events = [(e["user_id"], e["score"]) for e in t.events("0", block=0)]
    assert events == expected_events
