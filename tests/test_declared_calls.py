"""A script call built by name (``_core.Scripts.call``): what a board type written in Python alone
sends, from its script's declaration (``--: KEYS``, ``--: ARGV``, ``--: REPLY``), and how the
reply is read as declared. Nothing here needs a server: requests are read as bytes, replies fed
as bytes; the board tests (tests/boards/test_team*.py) run the same calls on real servers."""

from __future__ import annotations

import math
from typing import Any

import pytest

from redis_leaderboard import OptionsMismatch, _core

COMMON = {
    "team_options": "t:options",
    "memberships": "t:team_of",
    "team_board": "t",
    "member_board": "t:members",
    "aggregate": "sum",
    "order": "desc",
}


def scripts(**options: Any) -> Any:
    return _core.Scripts("team board", "t", "aggregate=sum order=desc", **options)


def sent(operation: Any) -> list[bytes]:
    """The EVALSHA's arguments after the SHA."""
    parts = operation.request().split(b"\r\n")
    words = parts[2::2]  # RESP: *n, then $len / word pairs
    assert words[0] == b"EVALSHA"
    return list(words[2:])


def test_keys_then_the_calls_word_then_arguments_in_the_declared_order() -> None:
    values = {**COMMON, "member": "ann"}
    assert sent(scripts().call("team_read.team_of", "TeamLeaderboard.team_of", values)) == [
        b"4", b"t:options", b"t:team_of", b"t", b"t:members",
        b"team_of", b"sum", b"desc", b"ann",
    ]  # fmt: skip


def test_a_number_is_sent_as_a_score_a_list_and_a_mapping_as_a_declared_list() -> None:
    values = {
        **COMMON,
        "ties": "lexicographic",
        "member_key": "t:members:user:ann",
        "write_keys": ["t:members:options"],
        "member": "ann",
        "mode": "set",
        "score": 2.5,
        "guard_words": "",
        "metadata": {"name": "Ann", "level": 3},
    }
    words = sent(scripts().call("team.submit_own", "TeamLeaderboard.submit", values))
    assert words[:7] == [b"6", b"t:options", b"t:team_of", b"t", b"t:members",
                         b"t:members:user:ann", b"t:members:options"]  # fmt: skip
    assert words[7:] == [b"submit_own", b"sum", b"desc", b"lexicographic", b"ann", b"set",
                         b"2.5", b"", b"name", b"Ann", b"level", b"3"]  # fmt: skip
    values["score"] = 7  # an int as the guide's float(7) sends it
    assert b"7" in sent(scripts().call("team.submit_own", "x", values))


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"team_options": None}, TypeError, "missing key team_options"),
        ({"member": None}, TypeError, "missing argument member"),
        ({"tag": "x"}, TypeError, "declares no key or argument tag"),
        ({"member": b"ann"}, TypeError, "member must be a number"),
        ({"member": math.nan}, ValueError, "member must be a finite number"),
        ({"member": 2**60 + 1}, ValueError, "beyond 2\\*\\*53"),
    ],
)
def test_a_wrong_value_raises_before_anything_is_sent(
    change: dict[str, Any], error: type[Exception], message: str
) -> None:
    values = {**COMMON, "member": "ann", **change}
    values = {name: value for name, value in values.items() if value is not None}
    with pytest.raises(error, match=message):
        scripts().call("team_read.team_of", "TeamLeaderboard.team_of", values)


def test_only_a_call_whose_script_declares_its_reply_is_built_by_name() -> None:
    with pytest.raises(ValueError, match="no script call declares its reply: entry"):
        scripts().call("entry", "x", {})
    with pytest.raises(ValueError, match="resends must be at least 0"):
        scripts().call("team_read.team_of", "x", {**COMMON, "member": "a"}, resends=-1)


def fed(operation: Any, reply: bytes) -> Any:
    operation.request()
    assert operation.feed(reply)
    return operation.result()


def test_a_reply_is_read_as_declared() -> None:
    calls = scripts()
    # One value: text? (nil is None), bool, texts.
    of = {**COMMON, "member": "ann"}
    assert fed(calls.call("team_read.team_of", "x", of), b"$3\r\nred\r\n") == "red"
    assert fed(calls.call("team_read.team_of", "x", of), b"$-1\r\n") is None
    hidden = {**COMMON, "option_keys": ["t:members:options"], "member": "ann"}
    assert fed(calls.call("team_read.is_hidden", "x", hidden), b":1\r\n") is True
    del hidden["member"]
    assert fed(calls.call("team_read.hidden", "x", hidden), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n") == [
        "a",
        "b",
    ]
    # Records: a flat array of [user_id: text, contribution: score].
    members = {**COMMON, "team_key": "t:team:red", "team": "red"}
    reply = b"*4\r\n$3\r\nann\r\n$3\r\n2.5\r\n$3\r\nbob\r\n$1\r\n1\r\n"
    assert fed(calls.call("team_read.members", "x", members), reply) == [
        {"user_id": "ann", "contribution": 2.5},
        {"user_id": "bob", "contribution": 1.0},
    ]
    # Fields: an array of exactly the declared ones, optional ones None for Lua's false (nil).
    move = {**COMMON, "ties": "lexicographic", "team_key": "t:team:red", "option_keys": [],
            "member": "ann", "team": "red", "guard_words": ""}  # fmt: skip
    assert fed(calls.call("team.move", "x", move), b"*4\r\n$-1\r\n$3\r\nred\r\n$-1\r\n$-1\r\n") == {
        "previous_team": None,
        "team": "red",
        "team_score": None,
        "team_rank": None,
    }


def test_a_reply_of_another_shape_or_a_refusal_raises() -> None:
    calls = scripts()
    move = {**COMMON, "ties": "lexicographic", "team_key": "t:team:red", "option_keys": [],
            "member": "ann", "team": "red", "guard_words": ""}  # fmt: skip
    with pytest.raises(_core.RedisError, match="unexpected reply from Redis for TeamLeaderboard"):
        fed(calls.call("team.move", "TeamLeaderboard.move", move), b"*1\r\n$3\r\nred\r\n")
    with pytest.raises(OptionsMismatch, match="team board 't' has options aggregate=best"):
        fed(calls.call("team.move", "x", move), b"+OPTIONS aggregate=best order=desc\r\n")


LEAGUE_READ = {
    "league_options": "l:options",
    "league_tier": "l:tier",
    "league_tiers": "l:tiers",
    "league_open": "l:open",
    "tier_count": "3",
    "cohort_size": "50",
    "promote": "5",
    "demote": "5",
    "demote_idle": "0",
    "order": "desc",
    "write_rule": "incr",
}


def league_call(name: str, tiebreak: Any = None) -> Any:
    """A league family's prepared read (its reply may be UNSETTLED or nil)."""
    ties = "tb:seconds.asc" if tiebreak else "lexicographic"
    scripts = _core.Scripts("league", "l", "tiers=3", tiebreak=tiebreak, unsettled=True)
    return scripts.prepare(f"league_read.{name}", f"League.{name}", {**LEAGUE_READ, "ties": ties})


def period_values(**more: Any) -> dict[str, Any]:
    return {
        "period_state": "l:p:state",
        "period_where": "l:p:where",
        "period_result": "l:p:result",
        "period": "p",
        "period_start": "0",
        "read_check": "",
        **more,
    }


def test_a_prepared_call_sends_its_fixed_values_and_a_league_reply_may_be_unsettled() -> None:
    call = league_call("tier_of")
    operation = call(period_values(user_id="ann"))
    words = sent(operation)
    assert words[:8] == [b"7", b"l:options", b"l:tier", b"l:tiers", b"l:open", b"l:p:state",
                         b"l:p:where", b"l:p:result"]  # fmt: skip
    assert words[8:] == [b"tier_of", b"3", b"50", b"5", b"5", b"0", b"desc", b"lexicographic",
                         b"incr", b"p", b"0", b"", b"ann"]  # fmt: skip
    assert operation.feed(b":2\r\n") and operation.result() == 2
    assert fed(call(period_values(user_id="ann")), b"$-1\r\n") is None
    assert fed(call(period_values(user_id="ann")), b"+UNSETTLED 1700000000000 2026-W48\r\n") == {
        "unsettled": "2026-W48",
        "unsettled_start": 1700000000000,
    }
    with pytest.raises(TypeError, match="declares no key or argument order \\(or it is fixed\\)"):
        call(period_values(user_id="ann", order="asc"))


def test_a_tiebreak_is_read_only_on_a_board_with_columns() -> None:
    entry = b"*5\r\n$3\r\nann\r\n$1\r\n7\r\n:1\r\n$7\r\npromote\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n"
    head = b"*6\r\n:0\r\n:1\r\n$0\r\n\r\n:1\r\n:0\r\n"
    plain = fed(
        league_call("standings")(period_values(user_id="ann")), head + b"*5\r\n" + entry[4:]
    )
    assert plain["entries"] == [
        {"user_id": "ann", "score": 7.0, "rank": 1, "zone": "promote", "metadata": {"k": "v"}}
    ]
    columns = (("seconds", "asc"),)
    with_columns = league_call("standings", columns)(period_values(user_id="ann"))
    reply = head + b"*6\r\n" + entry[4:] + b"$-1\r\n"  # the ranked member's key: none given
    (only,) = fed(with_columns, reply)["entries"]
    assert only["tiebreak"] == {"seconds": None}
    # Without columns, an entry of six elements is another shape.
    with pytest.raises(_core.RedisError, match="unexpected reply"):
        fed(league_call("standings")(period_values(user_id="ann")), reply)


def test_a_prepared_call_refuses_an_unknown_fixed_value_and_a_str_for_a_list() -> None:
    with pytest.raises(TypeError, match="declares no key or argument tag"):
        scripts().prepare("team_read.team_of", "x", {**COMMON, "tag": "x"})
    values = {**COMMON, "option_keys": "t:members:options", "member": "ann"}
    with pytest.raises(TypeError, match="option_keys must be a list or a mapping, not str"):
        scripts().call("team_read.is_hidden", "x", values)
