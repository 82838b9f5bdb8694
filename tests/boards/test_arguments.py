"""Bad arguments raise ``TypeError``/``ValueError`` before anything is sent, sync and asyncio,
with the same type and words whichever API: the board unchanged, the client's counters too."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from apis import Api
from helpers import TEST_LAYOUT, contents
from redis_leaderboard import Client, RedisLeaderboard

BAD_CALLS: list[tuple[str, tuple[Any, ...]]] = [
    ("upsert_user", ("", 1)),
    ("upsert_user", (None, 1)),
    ("upsert_user", (b"alice", 1)),
    ("upsert_user", (1.5, 1)),
    ("upsert_user", ("alice", math.nan)),
    ("upsert_user", ("alice", math.inf, {"m": "x"})),
    ("upsert_user", ("alice", 1, ["name", "x"])),
    ("upsert_user", ("alice", 1, {1: "x"})),
    ("increment_score", ("", 1)),
    ("increment_score", ("alice", -math.inf)),
    ("increment_score", ("alice", 1, "name=x")),
    ("increment_score", ("alice", 1, {b"k": "x"})),
    ("get_top", (0,)),
    ("get_top", (-1,)),
    ("get_around_rank", (0,)),
    ("get_around_rank", (1, 0)),
    ("set_max_entries", (0,)),
    ("set_max_entries", (-5,)),
    ("get_rank", ("",)),
    ("get_rank", (None,)),
    ("get_user_metadata", ("",)),
    ("get_user_entry", (["alice"],)),
    ("delete_user", ("",)),
    ("upsert_many", ([("ok", 1), ("bad", math.nan)],)),
]


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


@pytest.mark.parametrize(("name", "args"), BAD_CALLS, ids=[f"{n}{a!r}" for n, a in BAD_CALLS])
def test_bad_arguments_raise_before_any_io(
    api: Api, client: Client, board_key: str, r: Any, name: str, args: tuple[Any, ...]
) -> None:
    board = api.leaderboard(key=board_key, max_entries=10)
    board.upsert_user("alice", 10, {"name": "Alice"})
    sync_board = RedisLeaderboard(client, key=board_key, max_entries=10, layout=TEST_LAYOUT)
    with pytest.raises((TypeError, ValueError)) as sync_error:  # the sync class's, to compare
        getattr(sync_board, name)(*args)
    stats, before = api.client.stats(), contents(r, board_key)
    with pytest.raises(sync_error.type, match=exactly(str(sync_error.value))):
        getattr(board, name)(*args)
    assert api.client.stats() == stats
    assert contents(r, board_key) == before
    assert board.max_entries == 10


def test_constructor_validates_before_connecting(api: Api) -> None:
    with pytest.raises(ValueError, match=exactly("max_entries must be at least 1")):
        api.module.RedisLeaderboard(url="redis://127.0.0.1:1/0", max_entries=0)
    with pytest.raises(TypeError):
        api.module.RedisLeaderboard(url="redis://127.0.0.1:1/0", key=5)


def test_an_int_user_id_is_its_str_on_every_board_type(api: Api, board_key: str) -> None:
    # 7 and "7" are one player on every board, as the guide's f-strings write str(7): the
    # boards that route by the id in Python (league, tournament; sharded boards in
    # test_cluster_sharded.py) included.
    plain = api.leaderboard(key=board_key, max_entries=10)
    plain.upsert_user(7, 5)
    assert plain.get_user_entry("7")["user_id"] == "7"
    league = api.league(f"{board_key}:league", None, tiers=("low", "high"))
    league.submit(7, 5)
    assert [e["user_id"] for e in league.standings("7")["entries"]] == ["7"]
    assert league.tier_of(7) == league.tier_of("7") == "low"
    tournament = api.tournament(f"{board_key}:tournament", None, schedule="day")
    tournament.submit(7, 5)
    assert tournament.status("7")["joined"] is True
    assert tournament.get_user_entry(7)["user_id"] == "7"
    for bad in (7.0, True, b"7", None):
        for call in (league.submit, tournament.submit):
            with pytest.raises(TypeError, match=r"^user_id must be str, not "):
                call(bad, 1)
