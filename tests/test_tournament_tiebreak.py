"""Tie-break columns on tournaments (``Tournament(..., tiebreak=...)``, sync and asyncio): a
period's board is a plain board with the tournament's columns, written by the plain board's
write, so its order is pinned against the plain-Python ranking model (``ranking_model.py``);
the columns are recorded with the tournament's options (a client with others is refused, a
tournament without columns records what it always did); a resend answers the first result;
bad values raise before anything is sent."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from apis import Api
from conftest import RedisServer, unique_key
from helpers import FakeClock, ReplyDropper, snapshot
from ranking_model import RankingModel
from redis_leaderboard import OptionsMismatch, SubmissionIdReused

UTC = timezone.utc
DAY0 = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
COLUMNS = (("kills", "desc"), ("seconds", "asc"))


@pytest.fixture
def key(redis_server: RedisServer) -> Iterator[str]:
    with unique_key(redis_server, "tournament") as k:
        yield k


def test_equal_scores_rank_by_the_columns_in_every_read(api: Api, key: str) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    cup = api.tournament(key, clock, schedule="day", tiebreak=COLUMNS)
    assert cup.tiebreak == COLUMNS
    cup.submit("ann", 100, tiebreak={"kills": 3, "seconds": 41.5})
    cup.submit("bob", 100, tiebreak={"kills": 3, "seconds": 40})
    cup.submit("cid", 100, tiebreak={"kills": 5, "seconds": 90})
    cup.submit("dan", 100)  # no values: the worst of each, shown as None
    expected = [
        ("cid", 1, {"kills": 5.0, "seconds": 90.0}),
        ("bob", 2, {"kills": 3.0, "seconds": 40.0}),
        ("ann", 3, {"kills": 3.0, "seconds": 41.5}),
        ("dan", 4, {"kills": None, "seconds": None}),
    ]
    for entries in (cup.standings(), cup.get_top(10), cup.current().list_all()):
        assert [(e["user_id"], e["rank"], e["tiebreak"]) for e in entries] == expected
    assert cup.get_rank("ann") == 3
    assert cup.get_user_entry("bob")["tiebreak"] == {"kills": 3.0, "seconds": 40.0}
    # mode="best" keeps the better (score, columns) tuple whole
    assert cup.submit("ann", 100, tiebreak={"kills": 3, "seconds": 45})["changed"] is False
    assert cup.submit("ann", 100, tiebreak={"kills": 3, "seconds": 39})["rank"] == 2
    # A past period's final standings keep their columns.
    period = clock.now.strftime("%Y-%m-%d")
    clock.now += timedelta(days=1)
    past = cup.standings(period)
    assert [(e["user_id"], e["tiebreak"]["seconds"]) for e in past][:2] == [
        ("cid", 90.0), ("ann", 39.0),
    ]  # fmt: skip
    assert cup.at(period).get_user_entry("bob")["tiebreak"] == {"kills": 3.0, "seconds": 40.0}


@pytest.mark.parametrize("seed", range(3))
def test_order_against_the_ranking_model(api: Api, key: str, seed: int) -> None:
    rng = random.Random(seed)
    order = "desc" if seed % 2 == 0 else "asc"
    mode = ("best", "set", "incr")[seed % 3]
    clock = FakeClock(DAY0 + timedelta(hours=2))
    cup = api.tournament(key, clock, schedule="day", mode=mode, order=order, tiebreak=COLUMNS)
    model = RankingModel(10**6, order, tiebreak=COLUMNS)
    for _ in range(80):
        user = f"p{rng.randrange(12)}"
        score = float(rng.randrange(4))
        values = None
        if rng.random() < 0.8:
            values = {"kills": float(rng.randrange(3)), "seconds": rng.choice([0.5, 1.0, -2.0])}
        result = cup.submit(user, score, tiebreak=values)
        expected = model.submit(user, score, mode=mode, tiebreak=values)
        assert (result["score"], result["rank"], result["changed"]) == (
            expected["score"], expected["rank"], expected["changed"],
        )  # fmt: skip
    assert cup.standings(count=100) == model.get_top(100)


def test_the_columns_are_recorded_with_the_tournament(api: Api, key: str, r: Any) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    cup = api.tournament(key, clock, schedule="day", tiebreak=COLUMNS)
    cup.submit("ann", 1, tiebreak={"kills": 1, "seconds": 2})
    assert r.hget(f"{key}:options", "config") == (
        "max_size= join_required=0 max_attempts= mode=best order=desc "
        "ties=tb:kills.desc,seconds.asc"
    )
    before = snapshot(r, key)
    for other in [{}, {"tiebreak": (("kills", "desc"), ("seconds", "desc"))}]:
        stranger = api.tournament(key, clock, schedule="day", **other)
        with pytest.raises(OptionsMismatch, match=r"ties=tb:kills.desc,seconds.asc"):
            stranger.submit("ann", 5)
        with pytest.raises(OptionsMismatch):
            stranger.status("ann")
    assert snapshot(r, key) == before


def test_a_tournament_without_columns_records_what_it_always_did(
    api: Api, key: str, r: Any
) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    cup = api.tournament(key, clock, schedule="day", max_attempts=3)
    cup.submit("ann", 1)
    # Byte for byte the config an older client recorded: both read the same tournament.
    assert r.hget(f"{key}:options", "config") == (
        "max_size= join_required=0 max_attempts=3 mode=best order=desc ties=lexicographic"
    )
    assert "tiebreak" not in cup.get_top(1)[0] and cup.tiebreak is None
    with pytest.raises(OptionsMismatch):
        api.tournament(key, clock, schedule="day", max_attempts=3, tiebreak=COLUMNS).submit(
            "ann", 2, tiebreak={"kills": 1, "seconds": 1}
        )


def test_a_resend_answers_the_first_result(api: Api, key: str) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    cup = api.tournament(
        key, clock, schedule="day", max_attempts=5, tiebreak=COLUMNS, submission_ttl=30 * 86400
    )  # the test server's clock follows the test's: a day passes for the record
    values = {"kills": 2, "seconds": 30}
    first = cup.submit("ann", 50, submission_id="m1:ann", tiebreak=values)
    cup.submit("bob", 50, tiebreak={"kills": 2, "seconds": 10})  # ranks ahead of ann now
    again = cup.submit("ann", 50, submission_id="m1:ann", tiebreak=values)
    assert again == {**first, "duplicate": True}
    assert cup.status("ann")["attempts_left"] == 4  # the resend used no attempt
    with pytest.raises(SubmissionIdReused):  # the columns are part of the payload
        cup.submit("ann", 50, submission_id="m1:ann", tiebreak={"kills": 2, "seconds": 31})
    # Across the day boundary: the first result still, whatever the clock says.
    clock.now += timedelta(days=1)
    assert cup.submit("ann", 50, submission_id="m1:ann", tiebreak=values) == again


def test_bad_values_raise_before_anything_is_sent(api: Api, key: str, r: Any) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    with pytest.raises(ValueError, match="ties must be 'lexicographic'"):
        api.tournament(key, clock, schedule="day", ties="dense", tiebreak=COLUMNS)
    for bad, error in [((("a", "desc"),) * 2, ValueError), ((("a", "up"),), ValueError),
                       (("a", "desc"), TypeError)]:  # fmt: skip
        with pytest.raises(error):
            api.tournament(key, clock, schedule="day", tiebreak=bad)
    cup = api.tournament(key, clock, schedule="day", tiebreak=COLUMNS)
    for values in [
        {"kills": 1},  # a value missing
        {"kills": 1, "seconds": 2, "deaths": 3},  # an unknown column
        {"kills": 1, "deaths": 3},
        {"kills": 1, "seconds": float("nan")},
        {"kills": float("inf"), "seconds": 1},
        [1, 2],
    ]:
        with pytest.raises((ValueError, TypeError)):
            cup.submit("u", 1, tiebreak=values, submission_id="s1")
    plain = api.tournament(f"{key}:plain", clock, schedule="day")
    with pytest.raises(ValueError, match="without tie-break columns"):
        plain.submit("u", 1, tiebreak={"kills": 1})
    assert r.keys(f"{key}*") == []


def test_hidden_players_keep_their_columns(api: Api, key: str) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    cup = api.tournament(key, clock, schedule="day", tiebreak=COLUMNS)
    cup.submit("ann", 10, tiebreak={"kills": 1, "seconds": 5})
    cup.submit("bob", 10, tiebreak={"kills": 1, "seconds": 7})
    assert cup.hide("ann") is True
    assert [e["user_id"] for e in cup.get_top()] == ["bob"]
    cup.submit("ann", 10, tiebreak={"kills": 1, "seconds": 4})  # judged and kept aside
    assert cup.unhide("ann") is True
    assert [(e["user_id"], e["tiebreak"]["seconds"]) for e in cup.get_top()] == [
        ("ann", 4.0), ("bob", 7.0),
    ]  # fmt: skip


def test_a_lost_reply_is_resent_and_answers_this_call(
    api: Api, key: str, redis_server: RedisServer
) -> None:
    clock = FakeClock(DAY0 + timedelta(hours=1))
    values = {"kills": 4, "seconds": 12.25}
    proxy = ReplyDropper(redis_server.port, drops=1)
    try:
        client = api.connect(port=proxy.port, socket_timeout=5)
        cup = api.make("Tournament", key, client=client, clock=clock, schedule="day",
                       max_attempts=3, tiebreak=COLUMNS)  # fmt: skip
        result = cup.submit("ann", 7, submission_id="lost", tiebreak=values)
    finally:
        proxy.close()
    assert proxy.dropped == 1 and result["duplicate"] is False  # the library's own resend
    assert (result["score"], result["rank"], result["attempts_used"]) == (7.0, 1, 1)
    direct = api.tournament(key, clock, schedule="day", max_attempts=3, tiebreak=COLUMNS)
    again = direct.submit("ann", 7, submission_id="lost", tiebreak=values)  # another call
    assert again == {**result, "duplicate": True}
    assert direct.get_user_entry("ann")["tiebreak"] == {"kills": 4.0, "seconds": 12.25}
