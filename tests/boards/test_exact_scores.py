"""Integer scores beyond 2^53 (issue 39, item 7): a score is a double, which beyond 2^53 skips
integers. An ``int`` argument a double cannot hold exactly raises ``ValueError`` before anything
is sent (``upsert_user("u", 2**53 + 1)`` stored 2^53); an increment whose result a double cannot
hold is refused by the script and changes nothing (``increment_score`` by 1 at 2^53 answered
2^53). Ints a double holds (2^53 + 2, 2^60) are written as they are. Sync and asyncio, on a
default board (the guide's path), a board with options and a periodic board."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from apis import Api
from helpers import keys_under, snapshot

BIG = 2**53

BOARDS: dict[str, Callable[[Api, str], Any]] = {
    "default": lambda api, key: api.leaderboard(key=key),
    "options": lambda api, key: api.leaderboard(key=key, ties="first"),
    "periodic": lambda api, key: api.periodic(key=key, period="day"),
}


@pytest.mark.parametrize("kind", BOARDS)
def test_an_int_a_double_cannot_hold_raises_before_anything_is_sent(
    api: Api, board_key: str, r: Any, kind: str
) -> None:
    board = BOARDS[kind](api, board_key)
    for value in (BIG + 1, -(BIG + 1), 2**64 - 1):
        with pytest.raises(ValueError, match=r"is an int a double cannot hold exactly"):
            board.upsert_user("u", value)
        with pytest.raises(ValueError, match=r"is an int a double cannot hold exactly"):
            board.increment_score("u", value)
    assert keys_under(r, board_key) == set()
    # Ints a double holds exactly, beyond 2^53 too, and floats (already doubles), go as they are.
    assert board.upsert_user("u", BIG + 2)["score"] == BIG + 2
    assert board.upsert_user("v", 2**60)["score"] == 2**60
    assert board.upsert_user("w", float(BIG + 1))["score"] == BIG  # the caller's own rounding


@pytest.mark.parametrize("kind", BOARDS)
def test_an_increment_whose_result_a_double_cannot_hold_changes_nothing(
    api: Api, board_key: str, r: Any, kind: str
) -> None:
    board = BOARDS[kind](api, board_key)
    board.upsert_user("u", BIG, {"name": "Ada"})
    board.upsert_user("n", -BIG)
    before = snapshot(r, board_key)
    for user_id, amount in [("u", 1), ("u", 3), ("n", -1)]:
        with pytest.raises(ValueError, match=r"beyond the integers a score holds exactly"):
            board.increment_score(user_id, amount, {"name": "Bob"})
    assert snapshot(r, board_key) == before
    assert board.get_user_entry("u")["score"] == BIG
    # A result a double holds goes through: beyond 2^53 by an even amount, or back below it.
    assert board.increment_score("u", 2)["score"] == BIG + 2
    assert board.increment_score("u", -3)["score"] == BIG - 1
    assert board.increment_score("n", 1)["score"] == -BIG + 1
