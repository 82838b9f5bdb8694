"""The codec and the leaderboard operations, without a server.

``_core.encode_command`` / ``_core.decode_replies`` are the RESP codec; ``Board(...).<method>()``
returns an Operation whose ``request()`` is the RESP to send and whose ``feed(reply)`` takes the
server's reply. Nothing here opens a socket.
"""

from __future__ import annotations

import ctypes
import os
import re
from typing import Any

import pytest

import redis_leaderboard
from hostile import hello_reply
from redis_leaderboard import _core
from redis_leaderboard._core import Board


def parse_request(data: bytes) -> list[bytes]:
    """A request is a RESP array of bulk strings; parsed here independently of the codec."""
    (args,) = parse_requests(data)
    return args


def parse_requests(data: bytes) -> list[list[bytes]]:
    """The commands of a request (RESP arrays of bulk strings, one after the other)."""
    commands = []
    rest = data
    while rest:
        assert rest.startswith(b"*")
        header, _, rest = rest.partition(b"\r\n")
        args = []
        for _ in range(int(header[1:])):
            assert rest.startswith(b"$")
            length_text, _, rest = rest.partition(b"\r\n")
            length = int(length_text[1:])
            args.append(rest[:length])
            assert rest[length : length + 2] == b"\r\n"
            rest = rest[length + 2 :]
        commands.append(args)
    return commands


def bulk(value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return b"$%d\r\n%s\r\n" % (len(raw), raw)


def array(*items: bytes) -> bytes:
    return b"*%d\r\n" % len(items) + b"".join(items)


def integer(value: int) -> bytes:
    return b":%d\r\n" % value


def flat(fields: dict[str, str]) -> bytes:
    return array(*(bulk(part) for pair in fields.items() for part in pair))


def answer(op: Any, reply: bytes) -> bool:
    """Take the operation's next request, as a transport would, then feed it ``reply``."""
    op.request()
    return op.feed(reply)


def is_sha(value: bytes) -> bool:
    return re.fullmatch(rb"[0-9a-f]{40}", value) is not None


# --- encode_command ---


def test_encode_command_exact_bytes() -> None:
    assert _core.encode_command("PING") == b"*1\r\n$4\r\nPING\r\n"
    assert _core.encode_command("SET", "k", "v") == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
    assert _core.encode_command("ZADD", "lb", 1.5, "u") == (
        b"*4\r\n$4\r\nZADD\r\n$2\r\nlb\r\n$3\r\n1.5\r\n$1\r\nu\r\n"
    )
    assert _core.encode_command("INCRBY", "n", -42) == (
        b"*3\r\n$6\r\nINCRBY\r\n$1\r\nn\r\n$3\r\n-42\r\n"
    )


def test_encode_command_is_binary_safe() -> None:
    assert _core.encode_command("SET", b"k\x00", b"a\r\nb\xff") == (
        b"*3\r\n$3\r\nSET\r\n$2\r\nk\x00\r\n$5\r\na\r\nb\xff\r\n"
    )
    assert _core.encode_command("SET", "", b"") == b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n"
    # str arguments are sent as UTF-8; lengths count bytes.
    assert _core.encode_command("é🏆") == b"*1\r\n$6\r\n\xc3\xa9\xf0\x9f\x8f\x86\r\n"


@pytest.mark.parametrize(
    "value",
    [0.1 + 0.2, 1 / 3, 2.0**53, 1e300, 5e-324, -1.5e-7, 1.7976931348623157e308, 123.0, -0.0],
)
def test_encode_command_floats_keep_every_bit(value: float) -> None:
    (_, sent) = parse_request(_core.encode_command("X", value))
    assert float(sent) == value
    assert sent == repr(value).encode()


def test_encode_command_large_ints() -> None:
    assert parse_request(_core.encode_command(10**20, -(2**63))) == [
        b"100000000000000000000",
        b"-9223372036854775808",
    ]


def test_encode_command_refuses_other_types() -> None:
    with pytest.raises(TypeError):
        _core.encode_command("SET", "k", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.encode_command("SET", "k", ["v"])  # type: ignore[arg-type]


# --- decode_replies ---


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"+OK\r\n", ["OK"]),
        (b"+\r\n", [""]),
        (b":5\r\n", [5]),
        (b":-9223372036854775808\r\n", [-(2**63)]),
        (b"$3\r\nfoo\r\n", [b"foo"]),
        (b"$0\r\n\r\n", [b""]),
        (b"$-1\r\n", [None]),
        (b"*-1\r\n", [None]),
        (b"*0\r\n", [[]]),
        (b"$4\r\na\r\nb\r\n", [b"a\r\nb"]),  # binary-safe: CRLF inside a bulk string
        (b"$3\r\n\x00\xff\x01\r\n", [b"\x00\xff\x01"]),
        ("$4\r\n🏆\r\n".encode(), ["🏆".encode()]),
        (b"*2\r\n*1\r\n:1\r\n$-1\r\n", [[[1], None]]),
        (
            b"*3\r\n*2\r\n*1\r\n*0\r\n+x\r\n$1\r\ny\r\n*-1\r\n",
            [[[[[]], "x"], b"y", None]],
        ),
        (b":1\r\n:2\r\n+x\r\n$1\r\nz\r\n", [1, 2, "x", b"z"]),  # several replies
        (b"", []),
    ],
)
def test_decode_replies(data: bytes, expected: list[Any]) -> None:
    assert _core.decode_replies(data) == expected


def test_decode_replies_errors_become_response_error_instances() -> None:
    replies = _core.decode_replies(b"-ERR bad thing\r\n:7\r\n*2\r\n-WRONGTYPE no\r\n:1\r\n")
    assert len(replies) == 3
    error = replies[0]
    assert type(error) is redis_leaderboard.ResponseError
    assert str(error) == "ERR bad thing"
    assert replies[1] == 7
    nested_error, one = replies[2]
    assert isinstance(nested_error, redis_leaderboard.ResponseError)
    assert str(nested_error) == "WRONGTYPE no"
    assert one == 1


@pytest.mark.parametrize(
    "data",
    [b"$5\r\nhel", b"+OK", b"*2\r\n:1\r\n", b":1\r\n$3\r\nab", b"*1\r\n*1\r\n"],
)
def test_decode_replies_refuses_partial_input(data: bytes) -> None:
    with pytest.raises(redis_leaderboard.ConnectionError, match="incomplete"):
        _core.decode_replies(data)


@pytest.mark.parametrize("data", [b"?what\r\n", b"$abc\r\n", b"*2147483647\r\n"])
def test_decode_replies_refuses_malformed_input(data: bytes) -> None:
    # Malformed input (and absurd array sizes, refused before any allocation) is a protocol
    # error: the connection it came from can no longer be trusted.
    with pytest.raises(redis_leaderboard.ConnectionError, match="Protocol error"):
        _core.decode_replies(data)


# --- Board: requests ---


def test_board_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match=r"^max_entries must be at least 1$"):
        Board("lb", 0)
    board = Board("lb", 5)
    assert (board.key, board.max_entries) == ("lb", 5)
    with pytest.raises(ValueError, match=r"^count must be at least 1$"):
        board.get_top(0)
    with pytest.raises(ValueError, match=r"^rank must be at least 1$"):
        board.get_around_rank(0, 3)
    with pytest.raises(ValueError, match=r"^max_entries must be at least 1$"):
        board.set_max_entries(0)
    assert board.max_entries == 5
    with pytest.raises(ValueError):
        board.upsert_user("", 1)
    with pytest.raises(TypeError):
        board.get_rank(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        board.increment_score("u", float("nan"))


def test_get_top_request_is_one_evalsha_on_the_board_key() -> None:
    op = Board("lb", 5).get_top(3)
    assert op.name == "get_top"
    args = parse_request(op.request())
    assert args[0] == b"EVALSHA"
    assert is_sha(args[1])
    # Two keys: the board, and its options hash (read to refuse a board recorded with other
    # options; a default board never creates it).
    assert args[2:5] == [b"2", b"lb", b"lb:options"]
    assert b"3" in args[5:]
    # The same script for every board and count; only arguments differ.
    other = parse_request(Board("{other}", 100).get_top(7).request())
    assert other[:5] == [b"EVALSHA", args[1], b"2", b"{other}", b"{other}:options"]


def test_user_requests_name_the_metadata_hash_as_a_key() -> None:
    board = Board("{lb}:season 1", 5)
    for op in (
        board.upsert_user("ü:1", 3, {"name": "N"}),
        board.increment_score("ü:1", 3),
    ):
        args = parse_request(op.request())
        assert args[0] == b"EVALSHA", op.name
        assert is_sha(args[1]), op.name
        # Every key declared: the board, f"{key}:user:{user_id}", f"{key}:options".
        assert args[2:6] == [
            b"3",
            b"{lb}:season 1",
            "{lb}:season 1:user:ü:1".encode(),
            b"{lb}:season 1:options",
        ], op.name


def test_user_entry_and_delete_are_one_script_call_each() -> None:
    # Scripts (not MULTI/EXEC, which Redis 7 refuses out of memory): one EVALSHA each, with the
    # board and the metadata hash declared as keys and the user id as the argument.
    board = Board("{lb}:season 1", 5)
    shas = set()
    for op in (board.get_user_entry("ü:1"), board.delete_user("ü:1")):
        args = parse_request(op.request())
        assert args[0] == b"EVALSHA", op.name
        assert is_sha(args[1]), op.name
        shas.add(args[1])
        assert args[2:] == [
            b"3",
            b"{lb}:season 1",
            "{lb}:season 1:user:ü:1".encode(),
            b"{lb}:season 1:options",
            "ü:1".encode(),
        ], op.name
    assert len(shas) == 2


def test_an_error_reply_to_a_user_entry_raises() -> None:
    op = Board("lb", 5).get_user_entry("u")
    op.request()
    with pytest.raises(_core.ResponseError, match=r"^WRONGTYPE"):
        op.feed(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")


def test_upsert_and_increment_share_the_write_script() -> None:
    board = Board("lb", 5)
    upsert = parse_request(board.upsert_user("u", 1.25, {"a": 1, "b": "x"}).request())
    increment = parse_request(board.increment_score("u", 2).request())
    assert upsert[1] == increment[1]
    assert b"1.25" in upsert
    # Metadata values go as str(value), after the fields.
    assert upsert[-4:] == [b"a", b"1", b"b", b"x"]


def test_simple_reads_are_plain_commands() -> None:
    board = Board("lb", 5)
    # get_rank is ZREVRANK once a script's reply has shown the board has no other options.
    assert parse_request(board.get_rank("u 1").request())[0] == b"EVALSHA"
    assert answer(board.get_top(1), window_reply(0, -1, [])) is True
    assert board.options_checked
    assert board.get_size().request() == _core.encode_command("ZCARD", "lb")
    assert board.get_rank("u 1").request() == _core.encode_command("ZREVRANK", "lb", "u 1")
    assert board.get_user_metadata("u").request() == _core.encode_command("HGETALL", "lb:user:u")
    assert board.get_rank(42).request() == _core.encode_command("ZREVRANK", "lb", "42")


def test_a_checked_default_board_reads_without_its_options_key_and_writes_with_it() -> None:
    # A default board's scripts read its options hash (to refuse a board recorded with other
    # options) until a reply has shown there is none; then reads leave the key out and skip the
    # check. Writes declare it on every call: a board another client has since created with
    # options is refused, never written the guide's way.
    board = Board("lb", 5)
    options = b"lb:options"

    def keys(op: Any) -> list[bytes]:
        args = parse_request(op.request())
        assert args[0] == b"EVALSHA", op.name
        return args[3 : 3 + int(args[2])]

    def reads() -> list[Any]:
        return [
            board.get_top(3),
            board.get_around_rank(2, 3),
            board.list_all(),
        ]

    def writes() -> list[Any]:
        return [
            board.upsert_user("u", 1),
            board.increment_score("u", 1),
            board.submit("u", 1, mode="best"),
            board.delete_user("u"),
            board.set_max_entries(3),
            board.clear(),
        ]

    for op in [*reads(), *writes(), board.get_rank("u"), board.get_user_entry("u")]:
        assert keys(op)[-1] == options, op.name
    assert answer(board.get_top(1), window_reply(0, -1, [])) is True
    assert board.options_checked
    for op in reads():
        assert options not in keys(op), op.name
    # An entry is then read as the guide reads it: one transaction, no script.
    assert parse_requests(board.get_user_entry("u").request()) == [
        [b"MULTI"],
        [b"ZSCORE", b"lb", b"u"],
        [b"ZREVRANK", b"lb", b"u"],
        [b"HGETALL", b"lb:user:u"],
        [b"EXEC"],
    ]
    for op in writes():
        assert keys(op)[-1] == options, op.name
    # upsert_many's check, run when a default board is not checked yet, always checks.
    assert keys(board.check_options()) == [b"lb", options]
    # A board with options declares its option keys on every call.
    dense = Board("lb", 5, ties="dense")
    assert answer(dense.get_top(1), window_reply(0, -1, [])) is True
    assert dense.options_checked
    for op in [dense.get_top(3), dense.get_user_entry("u"), dense.get_rank("u")]:
        assert keys(op)[-2:] == [options, b"lb:dense"], op.name


def test_set_max_entries_changes_the_board_once_the_trim_has_finished() -> None:
    board = Board("lb", 5)
    op = board.set_max_entries(2)
    assert board.max_entries == 5
    assert parse_request(op.request())[0] == b"EVALSHA"
    assert answer(op, array(integer(0), integer(0), array())) is True
    assert board.max_entries == 2
    assert b"2" in parse_request(board.upsert_user("u", 1).request())
    # A trim that fails keeps the old limit.
    failed = board.set_max_entries(9)
    failed.request()
    with pytest.raises(_core.ResponseError):
        failed.feed(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
    assert board.max_entries == 2


def test_scripts_are_called_by_sha_never_sent_whole() -> None:
    board = Board("lb", 5)
    ops = [
        board.upsert_user("u", 1, {"m": "x" * 1000}),
        board.increment_score("u", 1),
        board.get_top(3),
        board.get_around_rank(2, 3),
        board.list_all(),
        board.clear(),
        board.get_user_entry("u"),
        board.delete_user("u"),
        board.set_max_entries(3),
    ]
    for op in ops:
        request = op.request()
        assert parse_request(request)[0] == b"EVALSHA", op.name
        assert b"redis.call" not in request, op.name


# --- Board: replies ---


def window_reply(start: int, size: int, rows: list[tuple[str, str, dict[str, str]]]) -> bytes:
    """The window script's reply: {start, size, {user_id, score, {field, value...}, ...}}."""
    items = [part for u, s, m in rows for part in (bulk(u), bulk(s), flat(m))]
    return array(integer(start), integer(size), array(*items))


def test_get_top_reads_a_hand_built_reply() -> None:
    op = Board("lb", 5).get_top(3)
    with pytest.raises(ValueError):
        op.result()  # not finished yet
    reply = window_reply(
        0,
        4,
        [("b", "2.5", {"name": "B", "emoji": "🏆"}), ("a", "1", {}), ("z", "-0.125", {"k": ""})],
    )
    assert answer(op, reply) is True
    assert op.result() == [
        {"rank": 1, "user_id": "b", "score": 2.5, "metadata": {"name": "B", "emoji": "🏆"}},
        {"rank": 2, "user_id": "a", "score": 1.0, "metadata": {}},
        {"rank": 3, "user_id": "z", "score": -0.125, "metadata": {"k": ""}},
    ]


def test_get_around_rank_numbers_entries_from_the_reply_start() -> None:
    op = Board("lb", 5).get_around_rank(9, 2)
    assert answer(op, window_reply(7, 9, [("h", "2", {}), ("i", "1", {})])) is True
    assert op.result() == [
        {"rank": 8, "user_id": "h", "score": 2.0, "metadata": {}},
        {"rank": 9, "user_id": "i", "score": 1.0, "metadata": {}},
    ]


def test_empty_window_reply() -> None:
    op = Board("lb", 5).get_around_rank(1)
    assert answer(op, window_reply(0, 0, [])) is True
    assert op.result() == []


def test_scores_keep_full_precision_from_replies() -> None:
    op = Board("lb", 5).get_top(1)
    answer(op, window_reply(0, 1, [("p", "0.30000000000000004", {})]))
    assert op.result()[0]["score"] == 0.1 + 0.2
    op = Board("lb", 5).get_top(1)
    answer(op, window_reply(0, 1, [("p", "1.7976931348623157e+308", {})]))
    assert op.result()[0]["score"] == 1.7976931348623157e308


def test_list_all_pages_until_the_board_is_read() -> None:
    op = Board("lb", 5).list_all()
    first = parse_request(op.request())
    rows = [(f"u{i:05d}", str(10_000 - i), {}) for i in range(5000)]
    if op.feed(window_reply(0, 5002, rows)):
        pytest.fail("list_all finished after one page of a 5002-entry board")
    second = parse_request(op.request())
    assert second[:4] == first[:4]
    assert second != first  # the next page
    assert op.feed(window_reply(5000, 5002, [("x", "2", {"m": "1"}), ("y", "1", {})])) is True
    result = op.result()
    assert len(result) == 5002
    assert result[0] == {"rank": 1, "user_id": "u00000", "score": 10_000.0, "metadata": {}}
    assert result[4999]["rank"] == 5000
    assert result[-2:] == [
        {"rank": 5001, "user_id": "x", "score": 2.0, "metadata": {"m": "1"}},
        {"rank": 5002, "user_id": "y", "score": 1.0, "metadata": {}},
    ]


def test_write_reply_with_the_user_on_the_board() -> None:
    op = Board("lb", 5).upsert_user("u", 3, {"n": 1})
    reply = array(array(bulk("x")), bulk("3"), integer(0), flat({"n": "1", "old": "o"}))
    assert answer(op, reply) is True
    assert op.result() == {
        "rank": 1,
        "user_id": "u",
        "score": 3.0,
        "metadata": {"n": "1", "old": "o"},
        "trimmed_user_ids": ["x"],
    }


def test_write_reply_with_the_user_trimmed_away() -> None:
    op = Board("lb", 1).increment_score("u", 2, {"n": 1, "t": True})
    assert answer(op, array(array(bulk("u")), bulk("7"))) is True
    assert op.result() == {
        "user_id": "u",
        "score": 7.0,
        "metadata": {"n": "1", "t": "True"},
        "trimmed_user_ids": ["u"],
    }


def test_simple_replies() -> None:
    board = Board("lb", 5)
    cases = [
        (board.get_size(), integer(3), 3),
        (board.get_rank("u"), integer(0), 1),
        (board.get_rank("u"), integer(41), 42),
        (board.get_rank("u"), b"$-1\r\n", None),
        (board.get_user_metadata("u"), flat({"a": "b", "c": ""}), {"a": "b", "c": ""}),
        (board.get_user_metadata("u"), b"*0\r\n", {}),
        (board.get_user_entry("u"), b"$-1\r\n", None),
        (
            board.get_user_entry("u"),
            array(bulk("1.5"), integer(4), flat({"k": "v"})),
            {"rank": 5, "user_id": "u", "score": 1.5, "metadata": {"k": "v"}},
        ),
        (board.delete_user("u"), integer(1), True),
        (board.delete_user("u"), integer(0), False),
    ]
    for op, reply, expected in cases:
        assert answer(op, reply) is True, op.name
        assert op.result() == expected, op.name


def test_clear_pages_until_nothing_remains() -> None:
    op = Board("lb", 5).clear()
    first = op.request()
    assert op.feed(integer(7)) is False
    assert op.request() == first
    assert op.feed(integer(0)) is True
    assert op.result() is None


def test_set_max_entries_collects_trimmed_ids_over_pages() -> None:
    # The trim script's reply: {entries still over the limit, entries trimmed, trimmed ids}.
    op = Board("lb", 5).set_max_entries(2)
    assert answer(op, array(integer(3), integer(1), array(bulk("a")))) is False
    assert answer(op, array(integer(0), integer(2), array(bulk("b"), bulk("c")))) is True
    assert op.result() == ["a", "b", "c"]


def test_error_replies_raise_response_error() -> None:
    op = Board("lb", 5).get_top(3)
    with pytest.raises(redis_leaderboard.ResponseError, match=r"^WRONGTYPE Operation"):
        answer(op, b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
        op.result()


def test_feed_needs_a_request_first() -> None:
    op = Board("lb", 5).get_size()
    with pytest.raises(ValueError):
        op.feed(integer(3))


def test_replies_of_the_wrong_shape_are_refused() -> None:
    with pytest.raises(redis_leaderboard.RedisError):
        op = Board("lb", 5).get_top(3)
        answer(op, integer(1))
        op.result()
    with pytest.raises(redis_leaderboard.RedisError):
        op = Board("lb", 5).get_size()
        answer(op, bulk("3"))
        op.result()


# --- Board: replies out of range, and paged operations that never end ---

PAGE = 5000  # Board.kPageSize: entries per round trip of list_all, clear and trims
LLONG_MAX = 2**63 - 1


@pytest.mark.parametrize("value", [LLONG_MAX, 2**32, -1, -(2**63)])
def test_ranks_and_starts_from_the_wire_are_range_checked(value: int) -> None:
    # Each of these added one to a rank read from the reply: LLONG_MAX overflowed (UBSan).
    board = Board("lb", 5)
    cases = [
        (board.get_rank("u"), integer(value)),
        (board.get_around_rank(3, 2), window_reply(value, 9, [("h", "2", {})])),
        (board.upsert_user("u", 3), array(array(), bulk("3"), integer(value), flat({}))),
        (board.get_user_entry("u"), array(bulk("1"), integer(value), flat({}))),
    ]
    for op, reply in cases:
        with pytest.raises(redis_leaderboard.RedisError, match=r"^unexpected reply"):
            answer(op, reply)


@pytest.mark.parametrize("value", [LLONG_MAX, 2**32 + 1, -1])
def test_counts_from_the_wire_are_range_checked(value: int) -> None:
    board = Board("lb", 5)
    cases = [
        (board.get_size(), integer(value)),
        (board.clear(), integer(value)),
        (board.delete_user("u"), integer(value)),
        (board.list_all(), window_reply(0, value, [("h", "2", {})])),
        (board.set_max_entries(1), array(integer(value), integer(0), array())),
        (board.set_max_entries(1), array(integer(0), integer(value), array())),
    ]
    for op, reply in cases:
        with pytest.raises(redis_leaderboard.RedisError, match=r"^unexpected reply"):
            answer(op, reply)


def test_the_largest_valid_rank_is_accepted() -> None:
    op = Board("lb", 5).get_rank("u")
    assert answer(op, integer(2**32 - 1)) is True
    assert op.result() == 2**32


def test_a_trim_reply_listing_more_ids_than_it_trimmed_is_refused() -> None:
    op = Board("lb", 5).set_max_entries(1)
    with pytest.raises(redis_leaderboard.RedisError, match=r"^unexpected reply"):
        answer(op, array(integer(0), integer(1), array(bulk("a"), bulk("b"))))


def test_a_list_all_page_longer_than_asked_is_refused() -> None:
    op = Board("lb", 5).list_all()
    rows = [(f"u{i}", "1", {}) for i in range(PAGE + 1)]
    with pytest.raises(redis_leaderboard.RedisError, match=r"^unexpected reply"):
        answer(op, window_reply(0, PAGE + 1, rows))


def feed_until_raised(op: Any, reply: Any, limit: int) -> int:
    """Feed ``reply(step)`` until the operation raises; returns the round trips it took."""
    for step in range(limit):
        try:
            if answer(op, reply(step)):
                pytest.fail(f"{op.name} finished after {step + 1} round trips")
        except redis_leaderboard.RedisError as e:
            assert "gave up after" in str(e), str(e)
            assert type(e) is redis_leaderboard.RedisError
            return step + 1
    pytest.fail(f"{op.name} still asking after {limit} round trips")


def test_clear_against_a_server_always_reporting_work_left_raises() -> None:
    # Seven entries left after the first page: three round trips at most, then RedisError.
    assert feed_until_raised(Board("lb", 5).clear(), lambda _: integer(7), 100) == 3
    # A board of 12,000 (over 5,000-entry pages) that never shrinks: 2 * (2 + 1) + 1 trips.
    assert feed_until_raised(Board("lb", 5).clear(), lambda _: integer(12_000), 100) == 7
    # A board that is still growing, but slowly, while it is cleared: allowed to finish.
    op = Board("lb", 5).clear()
    for left in (12_000, 9_000, 5_000, 1_000):
        assert answer(op, integer(left)) is False
    assert answer(op, integer(0)) is True


def test_set_max_entries_against_a_server_always_reporting_work_left_raises() -> None:
    def reply(_step: int) -> bytes:
        return array(integer(3), integer(1), array(bulk("a")))

    assert feed_until_raised(Board("lb", 5).set_max_entries(1), reply, 100) == 3
    # The bulk trim after upsert_many too (it reports at most 1,000 ids).
    op = _core.Board("lb", 5).trim_to_max_entries(1000)
    assert feed_until_raised(op, reply, 100) == 3


def test_list_all_against_endless_pages_raises() -> None:
    rows = [(f"u{i:05d}", "1", {}) for i in range(PAGE)]

    def growing(step: int) -> bytes:  # full pages of a board always one page bigger
        return window_reply(step * PAGE, (step + 2) * PAGE, rows)

    # 10,000 entries, 5,000 left after the first page: 2 * (1 + 1) + 1 round trips, then
    # RedisError, having held at most that many pages.
    assert feed_until_raised(Board("lb", 5).list_all(), growing, 100) == 5
    # A board that grows while it is read, but not without end, is read whole.
    op = Board("lb", 5).list_all()
    sizes = [10_000, 12_000, 16_000, 16_001]
    for step, size in enumerate(sizes[:-1]):
        assert answer(op, window_reply(step * PAGE, size, rows)) is False
    assert answer(op, window_reply(3 * PAGE, sizes[-1], [("last", "0", {})])) is True
    assert len(op.result()) == 3 * PAGE + 1


# A str option holding a lone surrogate (os.fsdecode of undecodable bytes, a URL with one) cannot
# be sent as UTF-8: UnicodeEncodeError (a ValueError), as a user id's, not "must be a str, not
# str" (found by cpp/fuzz/fuzz_url.py).
@pytest.mark.parametrize(
    "make",
    [
        lambda: redis_leaderboard.Client.from_url("redis://h\udcffx:1"),
        lambda: redis_leaderboard.Client(host="h\udcff"),
        lambda: redis_leaderboard.Client(password="\udcff"),
        lambda: redis_leaderboard.Client.from_url("unix:///tmp/\udc95s"),
        lambda: redis_leaderboard.Client(sentinels=[("h\udcff", 1)], service_name="m"),
        lambda: _core.ConnectionCore(client_name="\ud800"),
    ],
    ids=["url host", "host", "password", "socket path", "sentinel host", "client name"],
)
def test_an_option_that_is_not_utf8_raises_unicode_encode_error(make: Any) -> None:
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
        make()


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]  # fmt: skip


def _mapped_bytes() -> int:
    """glibc's bytes in mmap'd blocks: where a large allocation goes, touched or not."""
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = _MallInfo2
    return int(mallinfo2().hblkhd)


# A rank window whose header announces millions of entries, ranks or metadata fields takes no
# more memory than the bytes that came (a few dozen here): the reader reserved what the header
# announced, 160 MB and more (found by cpp/fuzz/fuzz_window.cpp under -malloc_limit_mb).
@pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""), reason="ASan's allocator is not glibc's"
)
@pytest.mark.parametrize(
    "header",
    [
        b"*3\r\n:0\r\n:0\r\n*6000000\r\n",
        b"*4\r\n:0\r\n:0\r\n*0\r\n*6000000\r\n",
        b"*3\r\n:0\r\n:0\r\n*3\r\n$1\r\na\r\n$1\r\n1\r\n*6000000\r\n",
    ],
    ids=["entries", "ranks", "metadata"],
)
def test_a_window_header_takes_no_memory_before_its_elements_come(header: bytes) -> None:
    core = _core.ConnectionCore()
    core.connected(0.0)
    assert core.take_write() == _core.encode_command("HELLO", "2")  # the handshake, alone
    core.wrote()
    core.received(hello_reply(), 0.0)
    core.submit(1, Board("lb", 100).get_top(3), 0.0)
    assert core.take_write()
    core.wrote()
    before = _mapped_bytes()
    core.received(header, 0.0)
    grown = _mapped_bytes() - before
    assert core.take_completions() == [] and core.outstanding == 1  # the reply is still coming
    assert grown < 16 << 20, f"{grown} bytes taken for {len(header)} bytes of reply"


def test_a_compact_boards_entry_read_is_one_transaction_its_field_or_the_guides_hash() -> None:
    # A compact board of the guide's rules, its options checked: MULTI, ZSCORE, ZREVRANK, HGET of
    # the user's field, HGETALL of the guide's hash (a player a conversion has not moved), EXEC.
    board = Board("lb", 5, layout="compact")
    assert answer(board.get_top(1), window_reply(0, -1, [])) is True  # options checked
    queued = b"+OK\r\n" + b"+QUEUED\r\n" * 4
    field = bulk(flat({"m": "x"}))  # the field's value: the RESP array HGETALL would answer

    op = board.get_user_entry("u")
    request = parse_requests(op.request())
    assert [c[0] for c in request] == [
        b"MULTI",
        b"ZSCORE",
        b"ZREVRANK",
        b"HGET",
        b"HGETALL",
        b"EXEC",
    ]
    assert request[3][1:] == [b"lb:meta", b"u"] and request[4][1:] == [b"lb:user:u"]
    assert op.feed(queued + array(bulk("7"), integer(2), field, array())) is True
    assert op.result() == {"rank": 3, "user_id": "u", "score": 7.0, "metadata": {"m": "x"}}
    op = board.get_user_entry("u")  # not moved yet: the guide's hash
    assert answer(op, queued + array(bulk("7"), integer(2), b"$-1\r\n", flat({"g": "h"}))) is True
    assert op.result() == {"rank": 3, "user_id": "u", "score": 7.0, "metadata": {"g": "h"}}
    op = board.get_user_entry("u")  # no metadata either place
    assert answer(op, queued + array(bulk("7"), integer(0), b"$-1\r\n", array())) is True
    assert op.result() == {"rank": 1, "user_id": "u", "score": 7.0, "metadata": {}}
    op = board.get_user_entry("u")
    assert answer(op, queued + array(b"$-1\r\n", b"$-1\r\n", b"$-1\r\n", array())) is True
    assert op.result() is None

    # Out of memory before Redis 7.4: the board's script (its options and rules) answers next.
    oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    op = board.get_user_entry("u")
    assert answer(op, b"+OK\r\n" + oom * 4 + b"-EXECABORT Transaction discarded.\r\n") is False
    args = parse_request(op.request())
    assert args[0] == b"EVALSHA" and args[3:5] == [b"lb", b"lb:meta"]
    assert args[-2:] == [b"desc", b"lexicographic+compact"]
    assert op.feed(array(bulk("7"), integer(2), field)) is True
    assert op.result() == {"rank": 3, "user_id": "u", "score": 7.0, "metadata": {"m": "x"}}

    # Other rules, or options not yet checked: the script.
    for other in (Board("lb", 5, order="asc", layout="compact"), Board("lb", 5, layout="compact")):
        if other.order == "asc":
            assert answer(other.get_top(1), window_reply(0, -1, [])) is True
        assert parse_request(other.get_user_entry("u").request())[0] == b"EVALSHA"


# ---- Classes made without their constructor -----------------------------------------------------

# Every class of _core, and the package's subclasses of them.
CORE_CLASSES = [
    cls for cls in vars(_core).values() if isinstance(cls, type) and not issubclass(cls, Exception)
]


class _SubBoard(Board):
    pass


@pytest.mark.parametrize(
    "cls",
    [*CORE_CLASSES, redis_leaderboard.Client, redis_leaderboard.ClusterClient, _SubBoard],
    ids=lambda cls: cls.__qualname__,
)
def test_a_class_made_with_new_alone_raises_instead_of_crashing(cls: type) -> None:
    # Issue 39, item 12: cls.__new__(cls) made an object whose C++ value was never constructed,
    # and any method called on it crashed the interpreter.
    assert len(CORE_CLASSES) >= 13
    with pytest.raises(TypeError, match=r"__new__\(\) alone makes an object with nothing in it"):
        cls.__new__(cls)


def test_the_guides_entry_read_falls_back_to_the_script_when_refused_out_of_memory() -> None:
    board = Board("lb", 5)
    assert answer(board.get_top(1), window_reply(0, -1, [])) is True  # no options recorded
    queued = b"+OK\r\n" + b"+QUEUED\r\n" * 3
    meta = flat({"m": "x"})

    op = board.get_user_entry("u")
    assert answer(op, queued + array(bulk("7"), integer(2), meta)) is True
    assert op.result() == {"rank": 3, "user_id": "u", "score": 7.0, "metadata": {"m": "x"}}
    op = board.get_user_entry("u")
    assert answer(op, queued + array(b"$-1\r\n", b"$-1\r\n", array())) is True
    assert op.result() is None

    # Redis before 7.4 out of memory: nothing is queued, EXEC aborts; the script answers next.
    oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    op = board.get_user_entry("u")
    refused = b"+OK\r\n" + oom * 3 + b"-EXECABORT Transaction discarded.\r\n"
    assert answer(op, refused) is False
    args = parse_request(op.request())
    assert args[0] == b"EVALSHA" and args[3:5] == [b"lb", b"lb:user:u"]
    assert op.feed(array(bulk("7"), integer(2), meta)) is True
    assert op.result() == {"rank": 3, "user_id": "u", "score": 7.0, "metadata": {"m": "x"}}

    # Any other refusal is the call's error, as the script's would be.
    op = board.get_user_entry("u")
    noperm = b"-NOPERM User r has no permissions to run the 'zscore' command\r\n"
    with pytest.raises(_core.NoPermissionError, match="zscore"):
        answer(op, b"+OK\r\n" + noperm + b"+QUEUED\r\n" * 2 + b"-EXECABORT Discarded.\r\n")
    op = board.get_user_entry("u")
    wrongtype = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    with pytest.raises(_core.ResponseError, match="WRONGTYPE"):
        answer(op, queued + array(bulk("7"), integer(2), wrongtype))
