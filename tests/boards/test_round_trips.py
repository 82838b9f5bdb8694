"""What every board method costs and how it fails on the wire, sync and asyncio: one round trip
and one command a call once the scripts are loaded (``get_user_entry`` of a board known to
record no options: the guide's MULTI, ZSCORE, ZREVRANK, HGETALL, EXEC, five commands in the one
write, six on a compact board, with HGET of the player's field; its ``get_user_metadata``:
HGETALL and HGET, two), scripts flushed from the server loaded again (NOSCRIPT), and an error
reply raised as ``ResponseError`` for that call only, the connection kept."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import pytest

from apis import Api, asyncio_only, unwrap
from helpers import ADA, TEST_LAYOUT, entry, has_stored_metadata, written
from redis_leaderboard import Client, RedisLeaderboard, ResponseError, _core


def test_every_method_is_one_round_trip(api: Api, board_key: str) -> None:
    board = api.leaderboard(key=board_key, max_entries=3)
    calls: list[Callable[[], Any]] = [
        lambda: board.upsert_user("a", 1, {"name": "A"}),
        lambda: board.upsert_user("b", 2),
        lambda: board.increment_score("c", 3, {"name": "C"}),
        lambda: board.increment_score("a", 5),
        lambda: board.increment_score("a", 2, {"x": "y"}),
        lambda: board.upsert_user("a", 1, ADA),
        lambda: board.upsert_user("d", 0.5),  # trimmed away
        lambda: board.upsert_user("e", 10),  # trims another
        lambda: board.get_top(2),
        lambda: board.get_top(),
        lambda: board.get_around_rank(2, 2),
        lambda: board.get_around_rank(1, 10),
        lambda: board.get_rank("a"),
        lambda: board.get_rank("zz"),
        metadata_read := lambda: board.get_user_metadata("a"),
        entry_read := lambda: board.get_user_entry("a"),
        absent_entry_read := lambda: board.get_user_entry("zz"),
        lambda: board.list_all(),
        lambda: board.get_size(),
        lambda: board.set_max_entries(2),
        lambda: board.delete_user("a"),
        lambda: board.delete_user("a"),
        lambda: board.clear(),
        lambda: board.get_top(),  # on an empty board
        lambda: board.get_around_rank(1),
        lambda: board.list_all(),
        lambda: api.client.ping(),
    ]
    board.get_size()  # connect first: the handshake is not a method call
    for warm_up in (True, False):
        board.set_max_entries(3)
        board.clear()
        for call in calls:
            before = api.client.stats()
            call()
            after = api.client.stats()
            trips = after["round_trips"] - before["round_trips"]
            commands = after["commands"] - before["commands"]
            if warm_up:  # the first time, a script the server lacks costs a second write
                assert trips in (1, 2)
            elif call in (entry_read, absent_entry_read):  # the guide's transaction
                assert (trips, commands) == (1, 6 if board.layout == "compact" else 5)
            elif call is metadata_read and board.layout == "compact":
                assert (trips, commands) == (1, 2)  # the guide's hash and the board's, pipelined
            else:  # every script loaded: one write, one command
                assert (trips, commands) == (1, 1)
            if api.asynchronous:  # the sync client counts no calls
                assert after["calls"] - before["calls"] == 1
            assert after["reconnects"] == before["reconnects"]
            assert after["connections"] == before["connections"]


def test_scripts_flushed_from_the_server_are_reloaded(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(key=board_key, max_entries=100)
    board.upsert_user("a", 1)
    r.script_flush()
    # The script the request names by SHA is the one loaded after NOSCRIPT.
    request = _core.Board(board_key, 100, layout=TEST_LAYOUT).get_top(3).request()
    sha = request.split(b"\r\n")[4].decode()
    assert r.script_exists(sha) == [False]
    board.get_top(3)
    assert r.script_exists(sha) == [True]
    r.script_flush()
    assert board.upsert_user("b", 2) == written(1, "b", 2)
    r.script_flush()
    assert board.get_top() == [entry(1, "b", 2), entry(2, "a", 1)]
    r.script_flush()
    assert board.increment_score("a", 5) == written(1, "a", 6)
    assert board.get_around_rank(1) == [entry(1, "a", 6), entry(2, "b", 2)]


def test_a_server_error_is_a_response_error(
    api: Api, client: Client, board_key: str, r: Any
) -> None:
    board = api.leaderboard(key=board_key, max_entries=100)
    r.set(board.key, "not a sorted set")
    with pytest.raises(ResponseError) as sync_error:  # the sync class's error, to compare
        RedisLeaderboard(client, key=board_key, layout=TEST_LAYOUT).upsert_user("a", 1)
    for call in (
        lambda: board.upsert_user("a", 1),
        lambda: board.get_top(),
        lambda: board.get_size(),
    ):
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            call()
    with pytest.raises(ResponseError) as raised:
        board.upsert_user("a", 1)
    assert str(raised.value) == str(sync_error.value)  # the same words whichever API
    assert r.get(board.key) == "not a sorted set"
    # An error reply fails that call only: the connection is still in step.
    other = api.leaderboard(key=board_key + ":ok")
    assert other.upsert_user("a", 1) == written(1, "a", 1)
    r.delete(board.key)
    assert board.upsert_user("a", 1) == written(1, "a", 1)
    assert api.client.stats()["reconnects"] == 0


@asyncio_only
def test_concurrent_calls_run_in_their_order_when_the_server_lost_its_scripts(
    api: Api, board_key: str, r: Any
) -> None:
    # Calls pipelined on one connection run in the order they were made, also when the server
    # answers the first NOSCRIPT (a restart, a failover, SCRIPT FLUSH emptied its cache): the
    # call sent again with its script's body must not run after one written behind it. Here a
    # write (write.lua, not cached) then the same player's removal (remove.lua, cached):
    # applied out of order, the player would be left on the board.
    for round_ in range(5):
        r.script_flush()
        client = api.connect()
        board = unwrap(api.leaderboard(board_key, 10, client=client))
        key = f"u{round_}"

        async def main(board: Any, key: str) -> list[Any]:
            await board.delete_user("warm")  # remove.lua: loaded, and run on this connection
            return list(
                await asyncio.gather(
                    board.upsert_user(key, 1, {"n": "1"}),
                    board.delete_user(key),
                    board.get_rank(key),
                )
            )

        written, removed, rank = api.run(main(board, key))
        assert written["rank"] == 1 and removed is True and rank is None
        assert r.zscore(board_key, key) is None and not has_stored_metadata(r, board, key)
