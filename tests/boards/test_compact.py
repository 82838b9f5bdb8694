"""The compact layout (``layout="compact"``): every player's metadata in one hash per board,
``f"{key}:meta"`` (field: the user id; value: the player's fields as the RESP array HGETALL
would answer), recorded in the board's options. Every method's answers are pinned against the
guide's layout by the differential tests (test_ranking_differential.py,
test_queries_differential.py: the same model, the board's keys compared whole); this file covers
what is the layout's own: its keys, its refusals, and the board types built on plain boards.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from apis import Api
from conftest import RedisServer
from helpers import UTC, FakeClock, compact_value, entry, keys_under, snapshot, written
from redis_leaderboard import NoPermissionError, OptionsMismatch, RedisLeaderboard, ResponseError

ADA = {"name": "Ada", "team": "red"}


def test_every_players_metadata_is_one_field_of_one_hash(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, 3, layout="compact")
    assert board.layout == "compact"
    assert board.upsert_user("ada", 10, ADA) == written(1, "ada", 10, ADA)
    assert board.upsert_user("ada", 12, {"team": "blue", "lvl": "3"}) == written(
        1, "ada", 12, {"name": "Ada", "team": "blue", "lvl": "3"}
    )  # merged as HSET merges: the fields given replace theirs, the others stay
    board.increment_score("bob", 5)
    odd = {"a\r\nb": "$3\r\n*1", "": "é€", "n": ""}  # RESP's own bytes, empty and non-ASCII
    board.upsert_user("cy", 7, odd)
    assert keys_under(r, board_key) == {board_key, f"{board_key}:options", f"{board_key}:meta"}
    assert r.hgetall(f"{board_key}:options") == {
        "order": "desc", "ties": "lexicographic", "layout": "compact"
    }  # fmt: skip
    assert r.hgetall(f"{board_key}:meta") == {
        "ada": compact_value({"name": "Ada", "team": "blue", "lvl": "3"}),
        "cy": compact_value(odd),
    }  # bob wrote none: no field
    assert board.get_top(10) == [
        entry(1, "ada", 12, {"name": "Ada", "team": "blue", "lvl": "3"}),
        entry(2, "cy", 7, odd),
        entry(3, "bob", 5),
    ]
    assert board.get_user_metadata("cy") == odd
    assert board.get_user_metadata("bob") == {} and board.get_user_metadata("zed") == {}
    # A write that trims the worst deletes their field; delete_user its own.
    assert board.upsert_user("dan", 20, {"x": "1"})["trimmed_user_ids"] == ["bob"]
    board.upsert_user("eve", 15)  # trims cy, and cy's metadata with them
    assert set(r.hkeys(f"{board_key}:meta")) == {"ada", "dan"}
    assert board.delete_user("dan") is True
    assert set(r.hkeys(f"{board_key}:meta")) == {"ada"}
    board.clear()
    assert keys_under(r, board_key) == set()


def test_the_layout_is_recorded_and_a_client_of_the_other_is_refused(
    api: Api, board_key: str, r: Any
) -> None:
    compact = api.leaderboard(board_key, 10, layout="compact")
    compact.upsert_user("ada", 1, ADA)
    before = snapshot(r, board_key)
    guide = api.leaderboard(board_key, 10, layout="guide")
    for call in (lambda: guide.upsert_user("bob", 2, {"a": "b"}), lambda: guide.get_top(5)):
        with pytest.raises(OptionsMismatch, match="layout='compact' \\(recorded in Redis\\)"):
            call()
    assert snapshot(r, board_key) == before
    other = f"{board_key}:guide"
    api.leaderboard(other, 10, layout="guide").upsert_user("ada", 1, ADA)
    with pytest.raises(
        OptionsMismatch,
        match=r"layout='guide' \(recorded in Redis\); this client opened it with .*'compact'",
    ):
        api.leaderboard(other, 10, layout="compact").upsert_user("bob", 2)
    assert keys_under(r, other) == {other, f"{other}:user:ada"}
    with pytest.raises(ValueError, match="layout must be 'guide' or 'compact', not 'flat'"):
        api.leaderboard(board_key, layout="flat")
    with pytest.raises(TypeError, match="layout must be a str"):
        api.leaderboard(board_key, layout=1)
    name = "redis_leaderboard.asyncio.RedisLeaderboard" if api.asynchronous else "RedisLeaderboard"
    assert repr(compact) == f"{name}(key='{board_key}', max_entries=10, layout='compact')"


def test_a_hash_of_another_type_or_a_denied_one_refuses_and_changes_nothing(
    redis_server: RedisServer, board_key: str, r: Any
) -> None:
    url = f"redis://{redis_server.host}:{redis_server.port}"
    board = RedisLeaderboard(url=url, key=board_key, max_entries=10, layout="compact")
    board.upsert_user("ada", 1, ADA)
    r.delete(f"{board_key}:meta")
    r.set(f"{board_key}:meta", "not a hash")
    before = snapshot(r, board_key)
    with pytest.raises(ResponseError, match=r"WRONGTYPE .*:meta is a string, not a hash"):
        board.upsert_user("bob", 2, {"a": "b"})
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        board.get_top(5)
    assert snapshot(r, board_key) == before
    r.delete(f"{board_key}:meta")
    # An ACL user who may use the board and its options, not its metadata hash.
    name, password = f"app-{uuid.uuid4().hex[:8]}", "secret-compact"
    r.execute_command(
        "ACL", "SETUSER", name, "on", f">{password}", "+@all", f"~{board_key}",
        f"~{board_key}:options",
    )  # fmt: skip
    try:
        limited = RedisLeaderboard(
            url=f"redis://{name}:{password}@{redis_server.host}:{redis_server.port}",
            key=board_key, max_entries=10, layout="compact",
        )  # fmt: skip
        before = snapshot(r, board_key)
        # The hash is a declared key of every script: the server refuses the call up front.
        with pytest.raises(NoPermissionError, match="NOPERM"):
            limited.upsert_user("bob", 2, {"a": "b"})
        with pytest.raises(NoPermissionError, match="NOPERM"):
            limited.get_top(5)
        assert snapshot(r, board_key) == before
    finally:
        r.acl_deluser(name)


def test_a_submit_resending_an_id_a_bulk_load_applied_answers_with_its_own_metadata(
    api: Api, board_key: str
) -> None:
    # The resend's answer is the user's entry now: their fields of the board's hash, never the
    # whole hash (every player's).
    board = api.leaderboard(board_key, 10, layout="compact")
    board.upsert_many([("ann", 5, {"name": "Ann"}, "load:ann"), ("bob", 3, {"name": "Bob"})])
    result = board.submit("ann", 5, {"name": "Ann"}, submission_id="load:ann")
    assert (result["duplicate"], result["metadata"], result["rank"]) == (True, {"name": "Ann"}, 1)


def test_a_periodic_board_in_the_compact_layout(api: Api, board_key: str, r: Any) -> None:
    clock = FakeClock(datetime(2027, 11, 28, 23, 30, tzinfo=UTC))
    daily = api.periodic(key=board_key, period="day", keep=2, clock=clock, layout="compact")
    daily.submit("ada", 10, ADA)
    period = daily.current().key
    assert keys_under(r, board_key) == {period, f"{period}:options", f"{period}:meta"}
    # The hash expires with the period, as every key of it.
    deadline = r.pexpiretime(period)
    assert deadline > 0 and r.pexpiretime(f"{period}:meta") == deadline
    clock.advance(timedelta(days=1))
    daily.submit("bob", 3, {"name": "Bob"})
    assert daily.previous().get_top() == [entry(1, "ada", 10, ADA)]
    assert daily.get_top() == [entry(1, "bob", 3, {"name": "Bob"})]


def test_a_group_write_over_boards_of_both_layouts(api: Api, board_key: str, r: Any) -> None:
    compact = api.leaderboard(f"{board_key}:c", 10, layout="compact")
    guide = api.leaderboard(f"{board_key}:g", 10, layout="guide")
    group = api.group([compact, guide])
    results = group.submit("ada", 5, ADA, submission_id="m1")
    assert [result["metadata"] for result in results.values()] == [ADA, ADA]
    assert r.hget(f"{board_key}:c:meta", "ada") == compact_value(ADA)
    assert r.hgetall(f"{board_key}:g:user:ada") == ADA
    assert compact.get_user_entry("ada") == entry(1, "ada", 5, ADA)


# --- converting a board of the guide's layout ----------------------------------------------------


def one_page(r: Any, key: str, page: int, cursor: str = "0") -> list[Any]:
    """One page of convert_layout, sent by hand (layout.lua's EVALSHA, its cursor replaced)."""
    from redis_leaderboard._core import Board
    from test_core_offline import parse_request

    args = parse_request(Board(key, None, layout="compact").convert_layout(page).request())
    at = args.index(b"0", 3)  # the cursor, after the keys
    args[at] = cursor.encode()
    return list(r.execute_command(*args))


def guide_board(redis_server: RedisServer, key: str, players: int) -> RedisLeaderboard:
    url = f"redis://{redis_server.host}:{redis_server.port}"
    # The script loaded once (one_page sends its SHA alone): an empty board's conversion.
    RedisLeaderboard(url=url, key=f"{key}:empty", layout="compact").convert_layout()
    guide = RedisLeaderboard(url=url, key=key, max_entries=None)
    guide.upsert_many((f"u{i}", i, {"n": str(i)}) for i in range(players))
    guide.upsert_user("bare", -1)  # no metadata
    guide.hide("u7")  # hidden: off the board, metadata kept
    return guide


def test_a_board_converts_in_place_and_reads_the_same(
    redis_server: RedisServer, board_key: str, r: Any
) -> None:
    guide = guide_board(redis_server, board_key, 2500)
    before = guide.list_all()
    compact = RedisLeaderboard(guide.redis, key=board_key, max_entries=None, layout="compact")
    assert compact.convert_layout(page=300) == 2500  # every player with metadata, u7 included
    assert keys_under(r, board_key) == {
        board_key, f"{board_key}:options", f"{board_key}:meta", f"{board_key}:hidden",
        f"{board_key}:empty:options",  # an empty board's conversion: the layout recorded
    }  # fmt: skip
    assert r.hget(f"{board_key}:options", "layout") == "compact"
    assert r.hlen(f"{board_key}:meta") == 2500
    assert compact.list_all() == before
    compact.unhide("u7")
    assert compact.get_user_entry("u7") == entry(2493, "u7", 7, {"n": "7"})
    assert compact.convert_layout() == 0  # compact already: nothing to do
    with pytest.raises(ValueError, match="open it with layout='compact'"):
        guide.convert_layout()
    with pytest.raises(ValueError, match="page must be between 1 and 10000"):
        compact.convert_layout(page=0)
    with pytest.raises(OptionsMismatch):  # the guide's clients are refused
        guide.upsert_user("u1", 5)
    other = RedisLeaderboard(guide.redis, key=board_key, order="asc", layout="compact")
    with pytest.raises(OptionsMismatch):
        other.convert_layout()


def test_a_conversion_stopped_midway_serves_compact_clients_and_goes_on(
    redis_server: RedisServer, board_key: str, r: Any
) -> None:
    guide = guide_board(redis_server, board_key, 300)  # past a listpack's 128: ZSCAN pages
    before = {e["user_id"]: e for e in guide.list_all()}
    cursor, moved, size = one_page(r, board_key, 5)
    assert cursor != "0" and 0 < moved < 100 and size == 300
    assert r.hget(f"{board_key}:options", "layout") == "migrating"
    compact = RedisLeaderboard(guide.redis, key=board_key, max_entries=None, layout="compact")
    # Reads are whole, moved or not; the guide's clients are refused, nothing changed.
    assert {e["user_id"]: e for e in compact.list_all()} == before
    # A big read in two steps: the HMGET finds the moved players' fields; the others (the board
    # records 'migrating') take a third round trip, their guide's hash then their field.
    trips = guide.redis.stats()["round_trips"]
    assert {e["user_id"]: e for e in compact.get_top(300)} == before
    assert guide.redis.stats()["round_trips"] - trips == 3
    snap = snapshot(r, board_key)
    with pytest.raises(OptionsMismatch, match="conversion from the guide's layout is under way"):
        guide.upsert_user("u5", 1, {"x": "y"})
    assert snapshot(r, board_key) == snap
    # A write moves its player (merged), a removal deletes both, entries read either place.
    unmoved = [u for u in before if r.exists(f"{board_key}:user:{u}")]
    first, second = unmoved[0], unmoved[1]
    assert compact.upsert_user(first, 1000, {"x": "y"})["metadata"] == {
        "n": before[first]["metadata"]["n"], "x": "y"
    }  # fmt: skip
    assert not r.exists(f"{board_key}:user:{first}")
    assert compact.delete_user(second) is True
    assert not r.exists(f"{board_key}:user:{second}")
    third = compact.get_entries([first, second, unmoved[2]])[2]
    assert third["metadata"] == before[unmoved[2]]["metadata"] != {}
    assert compact.get_user_metadata(unmoved[2]) == before[unmoved[2]]["metadata"]
    assert compact.get_user_metadata(first) == {"n": before[first]["metadata"]["n"], "x": "y"}
    # get_user_entry: one transaction (its options checked), the field or the guide's hash.
    entry = compact.get_user_entry(unmoved[2])
    assert entry is not None and entry["metadata"] == before[unmoved[2]]["metadata"]
    assert entry["rank"] == compact.get_rank(unmoved[2])
    assert compact.get_user_entry(first)["metadata"] == {  # type: ignore[index]
        "n": before[first]["metadata"]["n"], "x": "y"
    }  # fmt: skip
    # Stopped and started again: it goes on from the first page, finding what is left.
    assert compact.convert_layout(page=7) == len(unmoved) - 2 + 1  # and the hidden u7
    assert r.hget(f"{board_key}:options", "layout") == "compact"
    assert {k for k in keys_under(r, board_key) if ":user:" in k} == set()
    after = {e["user_id"]: e for e in compact.list_all()}
    assert after[first]["metadata"] == {"n": before[first]["metadata"]["n"], "x": "y"}
    assert second not in after and len(after) == len(before) - 1
    assert all(after[u]["metadata"] == before[u]["metadata"] for u in after if u != first)
    assert compact.get_user_metadata(unmoved[2]) == before[unmoved[2]]["metadata"]


def test_writes_during_a_conversion_are_kept(
    redis_server: RedisServer, board_key: str, r: Any
) -> None:
    import threading

    guide = guide_board(redis_server, board_key, 3000)
    expected = {e["user_id"]: dict(e["metadata"]) for e in guide.list_all()}
    one_page(r, board_key, 10)  # started: compact clients may write
    url = f"redis://{redis_server.host}:{redis_server.port}"
    compact = RedisLeaderboard(url=url, key=board_key, max_entries=None, layout="compact")
    converter = RedisLeaderboard(url=url, key=board_key, max_entries=None, layout="compact")
    moved: list[int] = []
    thread = threading.Thread(target=lambda: moved.append(converter.convert_layout(page=20)))
    thread.start()
    for i in range(0, 3000, 7):  # while the pages go on: writes of moved and unmoved players
        compact.upsert_user(f"u{i}", i, {"w": str(i)})
        if i != 7:  # u7 is hidden: written, kept off the board
            expected[f"u{i}"]["w"] = str(i)
    thread.join()
    assert moved and r.hget(f"{board_key}:options", "layout") == "compact"
    assert {k for k in keys_under(r, board_key) if ":user:" in k} == set()
    assert {e["user_id"]: e["metadata"] for e in compact.list_all()} == expected
    assert compact.get_user_metadata("u7") == {"n": "7", "w": "7"}


def test_the_acl_rule_of_a_compact_board(acl_server: RedisServer) -> None:
    # docs/pages/deployment/acl.md: the minimal rule, plus +zrank +zcount +hget +hmget +hdel for
    # a compact board (+zscan +hkeys to convert one); without +hmget its pages are refused.
    from test_atomicity import PASSWORD, minimal_rule

    admin = acl_server.redis_py()
    key = f"lb:{uuid.uuid4().hex[:8]}"
    compact_rule = ["+zrank", "+zcount", "+hget", "+hmget", "+hdel"]
    hiding = ["+hkeys", "+hlen", "+hexists", "+exists"]  # and these for hidden players
    try:
        admin.execute_command(
            "ACL", "SETUSER", "compact", "reset", *minimal_rule(), *compact_rule, *hiding
        )
        admin.execute_command(
            "ACL", "SETUSER", "converter", "reset", *minimal_rule(), *compact_rule, *hiding,
            "+zscan",
        )  # fmt: skip
        admin.execute_command("ACL", "SETUSER", "nohmget", "reset", *minimal_rule(), *compact_rule,
                              "-hmget")  # fmt: skip
        url = f"redis://{{}}:{PASSWORD}@{acl_server.host}:{acl_server.port}"
        guide = RedisLeaderboard(url=url.format("converter"), key=key, max_entries=None)
        guide.upsert_many([(f"p{i}", i, {"n": str(i)}) for i in range(300)])
        guide.hide("p1")
        converter = RedisLeaderboard(
            url=url.format("converter"), key=key, max_entries=None, layout="compact"
        )
        assert converter.convert_layout(page=50) == 300
        board = RedisLeaderboard(
            url=url.format("compact"), key=key, max_entries=3, layout="compact"
        )
        assert board.upsert_user("new", 1000, {"n": "x"})["trimmed_user_ids"]  # a trim: HDEL
        assert board.get_top(2)[0]["metadata"] == {"n": "x"}
        assert board.get_entries(["new"])[0]["metadata"] == {"n": "x"}
        assert board.get_user_metadata("p299") == {"n": "299"}
        assert board.unhide("p1") is True  # back, and trimmed at once (a board of 3)
        assert board.get_user_metadata("p1") == {}
        assert board.delete_user("p299") is True
        denied = RedisLeaderboard(url=url.format("nohmget"), key=key, layout="compact")
        with pytest.raises(NoPermissionError, match="'HMGET' command"):
            denied.get_top(2)
    finally:
        names = list(admin.scan_iter(match=f"{key}*"))
        if names:
            admin.delete(*names)
        for name in ("compact", "converter", "nohmget"):
            admin.acl_deluser(name)
        admin.close()


def test_convert_layout_on_every_api(api: Api, board_key: str, r: Any) -> None:
    guide = api.leaderboard(board_key, None, layout="guide")
    guide.upsert_many([(f"p{i}", i, {"n": str(i)}) for i in range(300)])
    compact = api.leaderboard(board_key, None, layout="compact")
    assert compact.convert_layout(page=100) == 300
    assert compact.convert_layout() == 0
    assert compact.get_top(2) == [entry(1, "p299", 299, {"n": "299"}),
                                  entry(2, "p298", 298, {"n": "298"})]  # fmt: skip
    assert r.hlen(f"{board_key}:meta") == 300 and not r.exists(f"{board_key}:user:p0")


def test_a_board_of_the_guides_rules_reads_with_the_guides_commands(
    api: Api, board_key: str, r: Any
) -> None:
    # The sorted set is the guide's in either layout: once its options are checked, a compact
    # board of the guide's ranking rules ranks with ZREVRANK and starts a page of 50 or more
    # with ZRANGE, its metadata then one HGET of the layout and one HMGET: no script.
    board = api.leaderboard(board_key, None, layout="compact")
    board.upsert_many((f"u{i:03d}", i, {"i": i}) for i in range(120))
    board.get_top(1)  # the options checked

    def calls() -> dict[str, int]:
        return {k[8:]: v["calls"] for k, v in r.info("commandstats").items()}

    before = calls()
    assert board.get_rank("u100") == 20
    top = board.get_top(60)
    after = calls()
    assert [e["metadata"] for e in top] == [{"i": str(i)} for i in range(119, 59, -1)]
    spent = {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}
    spent.pop("info", None)
    assert spent == {"zrevrank": 1, "zrange": 1, "hget": 1, "hmget": 1}
