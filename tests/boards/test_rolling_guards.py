"""Rolling windows' guards (issue 40), sync and asyncio: a rate limit over the server's clock,
whatever the bucket; score limits on the user's bucket score; change events about the window's
board (writes, delete_user, clear); each refusal raises as a plain board's and changes nothing;
a resend answers its first result, never refused by a limit; options recorded and checked; a
window in a group honours its own guards; and a differential test of limits and events against
a plain-Python model (window_model.py and ranking_model.py's limit rule) over seeded random
writes across buckets."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, Optional

import pytest

from apis import Api, sync_and_one_loop
from conftest import RedisServer, unique_key
from helpers import UTC, FakeClock, snapshot
from ranking_model import RankingModel, Rejected
from redis_leaderboard import NoPermissionError, OptionsMismatch, RateLimited, ScoreRejected
from test_atomicity import PASSWORD, make_user
from window_model import WindowModel

MINUTE = timedelta(minutes=1)
T0 = datetime(2031, 5, 4, 12, 0, tzinfo=UTC)


def window(api: Api, key: str, clock: FakeClock, **options: Any) -> Any:
    return api.rolling(key=key, window=3 * MINUTE, bucket=MINUTE, clock=clock, **options)


def events(board: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "id"} for e in board.events("0", block=0)]


# ---- Rate limits --------------------------------------------------------------------------------


@sync_and_one_loop
def test_a_rate_limit_counts_writes_on_the_servers_clock_whatever_the_bucket(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(T0)
    recent = window(api, board_key, clock, rate_limit=(3, 120.0))
    recent.increment_score("ada", 1)
    recent.increment_score("bob", 1)  # per user
    clock.advance(MINUTE)  # another bucket: the same limit
    recent.increment_score("ada", 2)
    recent.increment_score("ada", 3)
    before = snapshot(r, board_key)
    with pytest.raises(RateLimited) as raised:
        recent.increment_score("ada", 100, {"x": "y"})
    assert 59.0 < raised.value.retry_after <= 60.0  # the first write leaves its 120 s
    assert snapshot(r, board_key) == before  # nothing changed, no transition step either
    assert recent.get_user_entry("ada")["score"] == 6.0
    clock.advance(MINUTE)  # 120 s after the first write: room for one
    assert recent.increment_score("ada", 4)["score"] == 10.0
    with pytest.raises(RateLimited):
        recent.increment_score("ada", 4)


@sync_and_one_loop
def test_a_resend_is_never_refused_by_the_rate_limit(api: Api, board_key: str) -> None:
    clock = FakeClock(T0)
    recent = window(api, board_key, clock, rate_limit=(1, 600.0))
    first = recent.submit("ada", 5, submission_id="s1")
    assert first["duplicate"] is False
    with pytest.raises(RateLimited):
        recent.submit("ada", 6, submission_id="s2")
    clock.advance(MINUTE)
    again = recent.submit("ada", 5, submission_id="s1")
    assert again == {**first, "duplicate": True}


# ---- Score limits -------------------------------------------------------------------------------


@sync_and_one_loop
def test_score_range_bounds_the_bucket_score_not_the_window_sum(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(T0)
    recent = window(api, board_key, clock, score_range=(0, 100))
    recent.increment_score("ada", 80)
    before = snapshot(r, board_key)
    with pytest.raises(ScoreRejected, match="outside score_range"):
        recent.increment_score("ada", 30)  # 110 in this bucket
    with pytest.raises(ScoreRejected):
        recent.submit("ada", -1)
    assert snapshot(r, board_key) == before
    clock.advance(MINUTE)
    # Another bucket: its own 80; the window's sum (160) is a total of claims, not one.
    assert recent.increment_score("ada", 80)["score"] == 160.0


@sync_and_one_loop
def test_max_increment_bounds_one_writes_gain_in_the_bucket_in_the_windows_order(
    api: Api, board_key: str, r: Any
) -> None:
    clock = FakeClock(T0)
    fastest = window(api, board_key, clock, aggregate="min", order="asc", max_increment=10)
    fastest.submit("ada", 50)  # a new entry's first score: no gain to bound
    before = snapshot(r, board_key)
    with pytest.raises(ScoreRejected, match="more than max_increment 10"):
        fastest.submit("ada", 39, mode="best")  # 11 better (lower)
    assert snapshot(r, board_key) == before
    assert fastest.submit("ada", 40, mode="best")["score"] == 40.0
    assert fastest.submit("ada", 45, mode="best")["changed"] is False  # not better: never refused
    clock.advance(MINUTE)
    # A new bucket: the user's first score there, as a new entry's.
    assert fastest.submit("ada", 1, mode="best")["score"] == 1.0


@sync_and_one_loop
def test_a_window_in_a_group_honours_its_own_guards(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    plain = api.leaderboard(f"{board_key}:all-time", 10)
    recent = window(api, f"{board_key}:recent", clock, score_range=(0, 100), rate_limit=(2, 60.0))
    group = api.group([plain, recent])
    group.submit("ada", 10, mode="incr")
    before = snapshot(r, board_key)
    with pytest.raises(ScoreRejected):
        group.submit("ada", 95, mode="incr")  # the window's bucket would hold 105
    assert snapshot(r, board_key) == before
    group.submit("ada", 5, mode="incr")
    before = snapshot(r, board_key)
    with pytest.raises(RateLimited):
        group.submit("ada", 1, mode="incr")
    assert snapshot(r, board_key) == before
    assert plain.get_user_entry("ada")["score"] == 15.0


# ---- Options ------------------------------------------------------------------------------------


@sync_and_one_loop
def test_a_client_with_other_guards_is_refused(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    guarded = window(api, board_key, clock, rate_limit=(5, 60.0), events=True)
    guarded.submit("ada", 1)
    assert r.hgetall(f"{board_key}:options") == {"rate_limit": "5/60000", "events": "1"}
    before = snapshot(r, board_key)
    for other in [{}, {"rate_limit": (6, 60.0), "events": True}, {"rate_limit": (5, 60.0)}]:
        with pytest.raises(OptionsMismatch, match="rate_limit=\\(5, 60\\), events=True"):
            window(api, board_key, clock, **other).submit("ada", 2)
    with pytest.raises(OptionsMismatch):  # its delete would leave watchers without the event
        window(api, board_key, clock, rate_limit=(5, 60.0)).delete_user("ada")
    with pytest.raises(OptionsMismatch):
        window(api, board_key, clock).clear()
    assert snapshot(r, board_key) == before
    assert issubclass(OptionsMismatch, ValueError)


@sync_and_one_loop
def test_a_window_without_guards_records_nothing(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(T0)
    recent = window(api, board_key, clock)
    recent.submit("ada", 1, submission_id="s")
    assert not r.exists(f"{board_key}:options")
    assert not r.exists(f"{board_key}:events")
    assert "rate_limit" not in repr(recent)
    guarded = window(api, board_key, clock, score_range=(0, None), max_increment=5)
    assert repr(guarded).endswith("score_range=(0.0, None), max_increment=5.0)")
    assert guarded.score_range == (0.0, None) and guarded.max_increment == 5.0


def test_guards_are_checked_before_anything_is_sent(api: Api, board_key: str) -> None:
    clock = FakeClock(T0)
    with pytest.raises(ValueError, match="max_writes"):
        window(api, board_key, clock, rate_limit=(0, 60.0))
    with pytest.raises(ValueError, match="min <= max"):
        window(api, board_key, clock, score_range=(5, 1))
    with pytest.raises(TypeError, match="events must be a bool"):
        window(api, board_key, clock, events=1)


# ---- Events -------------------------------------------------------------------------------------


@sync_and_one_loop
def test_events_tell_each_change_of_the_windows_board(api: Api, board_key: str) -> None:
    clock = FakeClock(T0)
    recent = window(api, board_key, clock, events=True, max_entries=2)
    assert recent.events_enabled
    recent.increment_score("ada", 5)
    recent.increment_score("bob", 3)
    clock.advance(MINUTE)
    recent.increment_score("bob", 4)  # 7 over the window: overtakes ada
    recent.increment_score("cy", 1)  # trimmed away at once (max_entries=2)
    recent.submit("ada", 1, mode="best")  # this bucket's first: 6 over the window
    recent.submit("ada", 1, mode="best")  # not better: no change, no event
    recent.delete_user("bob")
    recent.delete_user("nobody")  # not on the board: no event
    none: dict[str, Any] = {"overtaken": [], "trimmed_user_ids": []}
    assert events(recent) == [
        {**none, "kind": "score", "user_id": "ada", "score": 5.0, "rank": 1,
         "previous_score": None, "previous_rank": None},
        {**none, "kind": "score", "user_id": "bob", "score": 3.0, "rank": 2,
         "previous_score": None, "previous_rank": None},
        {**none, "kind": "score", "user_id": "bob", "score": 7.0, "rank": 1,
         "previous_score": 3.0, "previous_rank": 2, "overtaken": ["ada"]},
        {**none, "kind": "score", "user_id": "cy", "score": 1.0, "rank": None,
         "previous_score": None, "previous_rank": None, "trimmed_user_ids": ["cy"]},
        {**none, "kind": "score", "user_id": "ada", "score": 6.0, "rank": 2,
         "previous_score": 5.0, "previous_rank": 2},
        {**none, "kind": "delete", "user_id": "bob", "score": 7.0, "rank": None,
         "previous_score": 7.0, "previous_rank": 1},
    ]  # fmt: skip
    recent.clear()
    assert events(recent)[-1] == {
        "kind": "clear", "removed": 2, "size": 0, "user_id": None, "score": None, "rank": None,
        "previous_score": None, "previous_rank": None, "overtaken": [], "trimmed_user_ids": [],
    }  # fmt: skip


@sync_and_one_loop
def test_a_group_write_appends_the_windows_event(api: Api, board_key: str) -> None:
    clock = FakeClock(T0)
    plain = api.leaderboard(f"{board_key}:all-time", 10, events=True)
    recent = window(api, f"{board_key}:recent", clock, events=True)
    group = api.group([plain, recent])
    group.submit("ada", 10, mode="incr")
    clock.advance(MINUTE)
    group.submit("ada", 5, mode="incr")
    assert [(e["score"], e["previous_score"]) for e in events(recent)] == [
        (10.0, None),
        (15.0, 10.0),
    ]
    assert [e["score"] for e in events(plain)] == [10.0, 15.0]


@sync_and_one_loop
def test_a_bucket_leaving_the_window_appends_nothing(api: Api, board_key: str) -> None:
    clock = FakeClock(T0)
    recent = window(api, board_key, clock, events=True)
    recent.increment_score("ada", 5)
    clock.advance(3 * MINUTE)  # ada's bucket left: she is off the board
    assert recent.get_top() == []
    recent.increment_score("bob", 1)
    assert [(e["user_id"], e["previous_score"]) for e in events(recent)] == [
        ("ada", None),
        ("bob", None),
    ]


@sync_and_one_loop
def test_a_resend_appends_no_second_event(api: Api, board_key: str) -> None:
    clock = FakeClock(T0)
    recent = window(api, board_key, clock, events=True)
    recent.submit("ada", 5, submission_id="s1")
    recent.submit("ada", 5, submission_id="s1")
    assert len(events(recent)) == 1


@pytest.fixture
def acl_key(acl_server: RedisServer) -> Iterator[tuple[RedisServer, Any, str]]:
    """(the ACL server, an admin redis-py client, a window key under "lb:"); cleaned up after."""
    admin = acl_server.redis_py()
    with unique_key(acl_server, "lb:window-guards") as name:
        yield acl_server, admin, name
    admin.acl_deluser("window-no-xadd")
    admin.close()


@sync_and_one_loop
def test_a_write_or_removal_the_acl_denies_xadd_changes_nothing(
    api: Api, acl_key: tuple[RedisServer, Any, str]
) -> None:
    server, admin, key = acl_key
    clock = FakeClock(T0)
    owner = window(api, key, clock, events=True, client=api.connect(port=server.port))
    owner.submit("ada", 3, {"name": "Ada"})
    rule = ["on", f">{PASSWORD}", "resetkeys", "~lb:*", "+@all", "-xadd"]
    make_user(admin, "window-no-xadd", rule)
    user = api.connect(port=server.port, username="window-no-xadd", password=PASSWORD)
    denied = window(api, key, clock, events=True, client=user)
    before = snapshot(admin, key)
    for method, args in [("submit", ("bob", 5)), ("delete_user", ("ada",)), ("clear", ())]:
        with pytest.raises(NoPermissionError, match="'XADD'"):
            getattr(denied, method)(*args)
    assert snapshot(admin, key) == before


# ---- A model: limits and events over random writes across buckets -----------------------------


class GuardedWindowModel(WindowModel):
    """A window with score limits on each user's bucket score (ranking_model's rule) and the
    events its writes append."""

    def __init__(self, limits: RankingModel, **options: Any) -> None:
        super().__init__(**options)
        self.limits = limits
        self.events: list[dict[str, Any]] = []

    def guarded_submit(self, bucket: int, user: str, number: float, mode: str) -> Optional[Any]:
        self.refresh(bucket)
        old = self.buckets.get(bucket, {}).get(user)
        if mode == "incr" and old is not None:
            new = old + number
        elif mode == "best" and old is not None and not self.better(number, old):
            new = old
        else:
            new = float(number)
        try:
            self.limits._check_limits(old, new, mode)
        except Rejected:
            return None
        before = self.board.ordered()
        result = self.submit(bucket, user, number, None, mode)
        after = self.board.ordered()
        if result["changed"] or result["trimmed_user_ids"]:
            ahead = set(before[: before.index(user)] if user in before else before)
            behind = after[after.index(user) + 1 :] if user in after else []
            self.events.append(
                {
                    "kind": "score",
                    "user_id": user,
                    "score": result["score"],
                    "rank": result["rank"],
                    "previous_score": result["previous_score"],
                    "previous_rank": result["previous_rank"],
                    "overtaken": [u for u in behind if u in ahead][:10],
                    "trimmed_user_ids": result["trimmed_user_ids"],
                }
            )
        return result


@pytest.mark.parametrize(
    ("seed", "aggregate", "order"),
    [(1, "sum", "desc"), (2, "max", "desc"), (3, "min", "asc"), (4, "max", "asc")],
)
def test_limits_and_events_match_a_model_over_random_writes(
    api: Api, board_key: str, seed: int, aggregate: str, order: str
) -> None:
    clock = FakeClock(T0)
    limits = {"score_range": (-20, 60), "max_increment": 25}
    recent = api.rolling(
        key=board_key, window=4 * MINUTE, bucket=MINUTE, clock=clock, aggregate=aggregate,
        order=order, max_entries=5, events=True, **limits,
    )  # fmt: skip
    model = GuardedWindowModel(
        RankingModel(order=order, **limits),  # type: ignore[arg-type]
        buckets=4, aggregate=aggregate, max_entries=5, order=order,
    )  # fmt: skip
    rng = random.Random(seed)
    refused = 0
    for _ in range(80):
        clock.advance(timedelta(seconds=rng.choice([0, 0, 0, 20, 45, 90])))
        user = f"p{rng.randrange(8)}"
        number = rng.randrange(-30, 70)
        mode = rng.choice(["set", "best", "incr"])
        expected = model.guarded_submit(recent.bucket_at(), user, number, mode)
        if expected is None:
            refused += 1
            with pytest.raises(ScoreRejected):
                recent.submit(user, number, mode=mode)
            continue
        got = recent.submit(user, number, mode=mode)
        assert {k: got[k] for k in expected if k in got} == {
            k: v for k, v in expected.items() if k in got
        }
    assert 5 < refused < 60  # the limits were exercised both ways
    assert events(recent) == model.events
