"""Tie-break columns: ``tiebreak=(("kills", "desc"), ("time", "asc"))`` ranks equal scores by up
to 4 named columns, each with its direction, then by user id; ``submit(..., tiebreak={...})``
gives the values; reads' entries carry them; ``mode="best"`` keeps the better (score, columns)
tuple whole. Every method's agreement with the order is pinned by the differential tests
(test_ranking_differential.py, test_queries_differential.py); this file covers the options, the
errors and the board types."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from apis import Api
from helpers import UTC, FakeClock, snapshot
from redis_leaderboard import OptionsMismatch

COLUMNS = (("kills", "desc"), ("time", "asc"))


def test_equal_scores_rank_by_the_columns_in_order(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 10, tiebreak=COLUMNS)
    assert board.tiebreak == COLUMNS
    board.submit("ann", 100, tiebreak={"kills": 12, "time": 93.5})
    board.submit("bob", 100, tiebreak={"kills": 12, "time": 90})
    board.submit("cid", 100, tiebreak={"kills": 15, "time": 120})
    board.submit("dan", 120)  # no values: the worst of each, shown as None
    top = board.get_top(10)
    assert [e["user_id"] for e in top] == ["dan", "cid", "bob", "ann"]
    assert top[0]["tiebreak"] == {"kills": None, "time": None}
    assert top[2] == {"rank": 3, "user_id": "bob", "score": 100.0, "metadata": {},
                      "tiebreak": {"kills": 12.0, "time": 90.0}}  # fmt: skip
    assert board.get_user_entry("ann")["tiebreak"] == {"kills": 12.0, "time": 93.5}
    assert board.get_rank("ann") == 4 and board.get_percentile("bob") == 100 / 3


def test_best_keeps_the_better_tuple_whole(api: Api, board_key: str) -> None:
    # Nakama's subscore takes the best of each column apart: (90, 9) over (100, 5) would store
    # (100, 9), a record nobody made. Here the tuple is kept or replaced whole.
    board = api.leaderboard(board_key, 10, tiebreak=(("bonus", "desc"),))
    board.submit("p", 100, tiebreak={"bonus": 5}, mode="best")
    assert board.submit("p", 90, tiebreak={"bonus": 9}, mode="best")["changed"] is False
    assert board.get_user_entry("p")["tiebreak"] == {"bonus": 5.0}
    assert board.submit("p", 100, tiebreak={"bonus": 4}, mode="best")["changed"] is False
    assert board.submit("p", 100, tiebreak={"bonus": 6}, mode="best")["changed"] is True
    assert board.get_user_entry("p")["tiebreak"] == {"bonus": 6.0}
    board.increment_score("p", 1)  # a write without values keeps the stored ones
    assert board.get_user_entry("p") == {"rank": 1, "user_id": "p", "score": 101.0,
                                         "metadata": {}, "tiebreak": {"bonus": 6.0}}  # fmt: skip


def test_an_ascending_board_trims_by_the_tuple(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, 3, order="asc", tiebreak=(("x", "desc"),))
    for user, score, x in [("p", 5, 1), ("q", 5, 2), ("r", 4, 0)]:
        board.submit(user, score, tiebreak={"x": x})
    assert board.submit("s", 5, tiebreak={"x": 0})["trimmed_user_ids"] == ["s"]
    assert [(e["user_id"], e["tiebreak"]["x"]) for e in board.list_all()] == [
        ("r", 0.0), ("q", 2.0), ("p", 1.0),
    ]  # fmt: skip


def test_bad_options_and_values_raise_before_anything_is_sent(
    api: Api, board_key: str, r: Any
) -> None:
    for bad, error in [
        ((("a", "desc"),) * 2, ValueError),
        (tuple((f"c{i}", "desc") for i in range(5)), ValueError),
        ((("1st", "desc"),), ValueError),
        ((("a b", "desc"),), ValueError),
        ((("a", "up"),), ValueError),
        (("a", "desc"), TypeError),
        ((("a",),), TypeError),
    ]:
        with pytest.raises(error):
            api.leaderboard(board_key, 10, tiebreak=bad)
    with pytest.raises(ValueError, match="ties must be 'lexicographic'"):
        api.leaderboard(board_key, 10, ties="dense", tiebreak=COLUMNS)
    board = api.leaderboard(board_key, 10, tiebreak=COLUMNS)
    for values in [
        {"kills": 1},
        {"kills": 1, "time": 2, "x": 3},
        {"kills": 1, "time": float("nan")},
        [1, 2],
    ]:
        with pytest.raises((ValueError, TypeError)):
            board.submit("u", 1, tiebreak=values)
    with pytest.raises(ValueError, match="without tie-break columns"):
        api.leaderboard(f"{board_key}:plain", 10).submit("u", 1, tiebreak={"kills": 1})
    assert r.keys(f"{board_key}*") == []


def test_the_columns_are_recorded_with_the_board(api: Api, board_key: str, r: Any) -> None:
    api.leaderboard(board_key, 10, tiebreak=COLUMNS).submit(
        "u", 1, tiebreak={"kills": 1, "time": 2}
    )
    before = snapshot(r, board_key)
    for other in [{}, {"tiebreak": (("kills", "desc"), ("time", "desc"))}]:
        with pytest.raises(
            OptionsMismatch, match=r"tiebreak=\(\('kills', 'desc'\), \('time', 'asc'\)\)"
        ):
            api.leaderboard(board_key, 10, **other).upsert_user("u", 5)
    assert snapshot(r, board_key) == before


def test_every_period_of_a_periodic_board_has_the_columns(api: Api, board_key: str) -> None:
    clock = FakeClock(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
    board = api.periodic(board_key, "day", clock=clock, tiebreak=COLUMNS)
    board.submit("a", 1, tiebreak={"kills": 1, "time": 5})
    board.submit("b", 1, tiebreak={"kills": 1, "time": 4})
    assert [e["user_id"] for e in board.get_top()] == ["b", "a"]
    group = api.group([board, api.leaderboard(f"{board_key}:alltime", 10)])
    group.submit("a", 2)  # a group's write gives no values: the stored ones stay
    assert board.get_user_entry("a")["tiebreak"] == {"kills": 1.0, "time": 5.0}


def test_a_hidden_players_score_kept_by_a_bulk_load_has_the_worst_columns(
    api: Api, board_key: str
) -> None:
    # A bulk load carries no columns: the score it keeps aside for a hidden player has the
    # worst ones. A tied 'best' submit with columns then improves them (it failed with a Lua
    # runtime error: the kept score had no columns to compare with).
    board = api.leaderboard(board_key, 10, tiebreak=(("kills", "desc"),))
    board.hide("ann")
    board.upsert_many([("ann", 7)])
    result = board.submit("ann", 7, mode="best", tiebreak={"kills": 2})
    assert (result["score"], result["rank"], result["changed"]) == (7.0, None, True)
    assert board.submit("ann", 7, mode="best")["changed"] is False  # the worst: no change
    board.unhide("ann")
    assert board.get_user_entry("ann")["tiebreak"] == {"kills": 2.0}


def test_hidden_players_keep_their_columns_and_resends_repeat_them(
    api: Api, board_key: str
) -> None:
    from redis_leaderboard import SubmissionIdReused

    board = api.leaderboard(board_key, 10, tiebreak=(("kills", "desc"),))
    board.submit("ann", 10, tiebreak={"kills": 5})
    board.submit("bob", 10, tiebreak={"kills": 3})
    board.hide("ann")
    board.unhide("ann")
    assert board.get_user_entry("ann")["tiebreak"] == {"kills": 5.0}
    assert board.get_rank("ann") == 1
    board.hide("bob")
    board.submit("bob", 10, tiebreak={"kills": 99})  # kept aside with its columns
    board.unhide("bob")
    assert board.get_user_entry("bob") == {"rank": 1, "user_id": "bob", "score": 10.0,
                                           "metadata": {}, "tiebreak": {"kills": 99.0}}  # fmt: skip
    board.submit("cid", 5, tiebreak={"kills": 1}, submission_id="m1:cid")
    with pytest.raises(SubmissionIdReused):  # the columns are part of the payload
        board.submit("cid", 5, tiebreak={"kills": 9}, submission_id="m1:cid")
