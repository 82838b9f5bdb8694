"""A league's ``rate_limit`` (sync and asyncio), the plain boards' mechanism (``rate`` guard
word, ``plan_guards``): a player's writes beyond it raise ``RateLimited`` with ``retry_after``
and change nothing (no placement, no score, no window entry); a resend of an applied id is
answered, never limited; the limit is part of the recorded config (a client with another, or
none, is refused); a league without it records the same config as before."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from apis import Api
from conftest import RedisServer, unique_key
from helpers import FakeClock, snapshot
from redis_leaderboard import League, OptionsMismatch, RateLimited

UTC = timezone.utc
TIERS = ("bronze", "silver", "gold")


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "league") as k:
        yield k


def _clock() -> FakeClock:
    return FakeClock(datetime.now(UTC))  # the server's clock is in this week


def test_beyond_the_rate_limit_raises_and_changes_nothing(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    league = api.league(key, _clock(), tiers=TIERS, cohort_size=10, rate_limit=(2, 60))
    assert league.rate_limit == (2, 60.0)
    api.call(league.submit, "ann", 1)
    api.call(league.submit, "ann", 2)
    api.call(league.submit, "bob", 5)  # another player's window
    r = redis_server.redis_py()
    before = snapshot(r, key)
    with pytest.raises(RateLimited) as raised:
        api.call(league.submit, "ann", 10, {"x": "1"})
    assert 0 < raised.value.retry_after <= 60
    assert snapshot(r, key) == before
    standings = api.call(league.standings, "ann")
    assert [(e["user_id"], e["score"]) for e in standings["entries"]] == [
        ("bob", 5.0),
        ("ann", 3.0),
    ]


def test_a_resend_of_an_applied_id_is_never_limited(api: Api, key: str) -> None:
    league = api.league(key, _clock(), tiers=TIERS, cohort_size=10, rate_limit=(1, 60))
    first = api.call(league.submit, "ann", 7, submission_id="s1")
    again = api.call(league.submit, "ann", 7, submission_id="s1")  # the limit is reached
    assert again["duplicate"] is True
    assert {k: v for k, v in again.items() if k != "duplicate"} == {
        k: v for k, v in first.items() if k != "duplicate"
    }
    with pytest.raises(RateLimited):
        api.call(league.submit, "ann", 8, submission_id="s2")


def test_the_limit_is_recorded_with_the_options(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = _clock()
    league = api.league(key, clock, tiers=TIERS, cohort_size=10, rate_limit=(2, 60))
    api.call(league.submit, "ann", 1)
    for other in (
        api.league(key, clock, tiers=TIERS, cohort_size=10),  # would bypass the limit
        api.league(key, clock, tiers=TIERS, cohort_size=10, rate_limit=(3, 60)),
    ):
        with pytest.raises(OptionsMismatch, match=r"rate:2:60000"):
            api.call(other.submit, "bob", 1)
        with pytest.raises(ValueError):  # OptionsMismatch is a ValueError
            api.call(other.join, "bob")
    config = redis_server.redis_py().hget(f"{key}:options", "config")
    assert config.endswith(" mode=incr rate:2:60000")


def test_a_league_without_it_records_the_same_config(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    league = api.league(key, _clock(), tiers=TIERS, cohort_size=10)
    api.call(league.submit, "ann", 1)
    config = redis_server.redis_py().hget(f"{key}:options", "config")
    assert config == (
        "tiers=3 size=10 promote=5 demote=5 idle=1 order=desc ties=lexicographic mode=incr"
    )


def test_bad_limits_raise_before_anything_is_sent_and_repr() -> None:
    with pytest.raises(ValueError, match="max_writes"):
        League(None, "l:x", tiers=TIERS, cohort_size=10, rate_limit=(0, 1), url="redis://x:1")
    with pytest.raises(TypeError, match="rate_limit"):
        League(None, "l:x", tiers=TIERS, cohort_size=10, rate_limit=3, url="redis://x:1")
    league = League(None, "l:x", tiers=TIERS, cohort_size=10, rate_limit=(5, 2), url="redis://x:1")
    assert repr(league).endswith("partitions=1, rate_limit=(5, 2.0))")
    plain = League(None, "l:x", tiers=TIERS, cohort_size=10, url="redis://x:1")
    assert repr(plain).endswith("partitions=1)") and plain.rate_limit is None
