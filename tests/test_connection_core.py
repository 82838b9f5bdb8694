"""The connection core without a server: events, bytes and time in (``_core.ConnectionCore``),
bytes to write, closes and completions out. Both transports run this core; these tests are the
byte-level twins of the kill/pause tests against real servers."""

from __future__ import annotations

from typing import Any

import pytest

import redis_leaderboard as rl
from hostile import hello_reply
from redis_leaderboard import _core


def board() -> _core.Board:
    return _core.Board("lb", 100)


def cmd(*args: Any) -> bytes:
    return _core.encode_command(*args)


def zcard() -> bytes:
    return cmd("ZCARD", "lb")


def new_core(**options: Any) -> _core.ConnectionCore:
    """A core whose server is taken to have run every script for it already, as on a connection
    in use (the hold of a script's first use on a connection: test_a_script_the_connection_has_
    not_run_holds_what_comes_after_it)."""
    core = _core.ConnectionCore(**options)
    core.assume_scripts_loaded()
    return core


def connect(core: _core.ConnectionCore, now: float) -> None:
    """The socket is open at ``now``: the handshake (HELLO 2 alone, with the default options)
    goes first, answered as Redis 7.0 does."""
    core.connected(now)
    assert flush(core) == cmd("HELLO", "2")
    core.received(hello_reply(), now)


def connected_core(**options: Any) -> _core.ConnectionCore:
    core = new_core(**options)
    connect(core, 0.0)
    return core


def sizes(core: _core.ConnectionCore, *ids: int, started: float = 0.0) -> None:
    for id in ids:
        core.submit(id, board().get_size(), started)


def flush(core: _core.ConnectionCore) -> bytes:
    """What the core writes now, acknowledged as written."""
    out = core.take_write()
    if out:
        core.wrote()
    return out


def results(core: _core.ConnectionCore) -> dict[int, Any]:
    return dict(core.take_completions())


# get_top(2)'s reply: {start, size, {id, score, {field, value...}, ...}}
TOP_REPLY = (
    b"*3\r\n:0\r\n:-1\r\n*6\r\n$1\r\na\r\n$2\r\n10\r\n*2\r\n$4\r\nname\r\n$3\r\nAda\r\n"
    b"$1\r\nb\r\n$1\r\n5\r\n*0\r\n"
)
TOP_RESULT = [
    {"rank": 1, "user_id": "a", "score": 10.0, "metadata": {"name": "Ada"}},
    {"rank": 2, "user_id": "b", "score": 5.0, "metadata": {}},
]


# ---- Writing ------------------------------------------------------------------------------------


def test_requests_wait_for_a_connection_then_go_out_in_one_write() -> None:
    core = new_core()
    sizes(core, 1, 2, 3)
    assert core.take_write() == b""
    assert core.wants_connection
    connect(core, 0.0)
    assert flush(core) == zcard() * 3
    core.received(b":1\r\n:2\r\n:3\r\n", 0.0)
    assert results(core) == {1: 1, 2: 2, 3: 3}
    assert core.stats()["round_trips"] == 1 and core.stats()["commands"] == 3
    assert core.outstanding == 0


def test_requests_made_during_a_write_go_out_together_in_the_next() -> None:
    core = connected_core()
    sizes(core, 1)
    assert core.take_write() == zcard()
    sizes(core, 2, 3)
    assert core.take_write() == b""  # the first write is still going
    core.wrote()
    assert flush(core) == zcard() * 2


def test_back_pressure_keeps_at_most_max_in_flight_written() -> None:
    core = connected_core(max_in_flight=2)
    sizes(core, 1, 2, 3, 4, 5)
    assert flush(core) == zcard() * 2
    assert flush(core) == b""
    core.received(b":1\r\n", 0.0)
    assert flush(core) == zcard()
    core.received(b":2\r\n:3\r\n", 0.0)
    assert flush(core) == zcard() * 2
    core.received(b":4\r\n:5\r\n", 0.0)
    assert results(core) == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5}


def test_big_replies_stop_at_max_bytes_in_flight_and_cheap_ones_do_not() -> None:
    # Each operation is expected to take what its last replies took: get_top(2) len(TOP_REPLY)
    # bytes, get_size 4. Two get_tops fit in the budget, a third does not; a request alone
    # always goes.
    budget = 2 * len(TOP_REPLY) + len(TOP_REPLY) // 2
    core = connected_core(max_bytes_in_flight=budget)
    core.submit(1, board().get_top(2), 0.0)
    sizes(core, 2)
    assert flush(core) == core_request(board().get_top(2)) + zcard()  # nothing learnt yet
    core.received(TOP_REPLY + b":7\r\n", 0.0)
    assert results(core) == {1: TOP_RESULT, 2: 7}
    for id in (3, 4, 5):
        core.submit(id, board().get_top(2), 0.0)
    sizes(core, 6, 7)
    top = core_request(board().get_top(2))
    assert flush(core) == top * 2  # the third get_top would pass the budget
    core.received(TOP_REPLY, 0.0)
    assert flush(core) == top + zcard() * 2  # one left: one more fits, and the cheap ones
    core.received(TOP_REPLY * 2 + b":1\r\n:2\r\n", 0.0)
    assert results(core) == {3: TOP_RESULT, 4: TOP_RESULT, 5: TOP_RESULT, 6: 1, 7: 2}
    # A budget smaller than one reply: one at a time, never none.
    small = connected_core(max_bytes_in_flight=10)
    small.submit(1, board().get_top(2), 0.0)
    assert flush(small) == top
    small.received(TOP_REPLY, 0.0)
    small.submit(2, board().get_top(2), 0.0)
    small.submit(3, board().get_top(2), 0.0)
    assert flush(small) == top
    small.received(TOP_REPLY, 0.0)
    assert flush(small) == top
    # 0: no limit.
    unlimited = connected_core(max_bytes_in_flight=0)
    unlimited.submit(1, board().get_top(2), 0.0)
    assert flush(unlimited) == top
    unlimited.received(TOP_REPLY, 0.0)
    for id in range(2, 12):
        unlimited.submit(id, board().get_top(2), 0.0)
    assert flush(unlimited) == top * 10


def core_request(operation: Any) -> bytes:
    """The bytes ``operation``'s first request takes on the wire."""
    return bytes(operation.request())


def test_the_handshake_goes_alone_before_any_request() -> None:
    core = new_core(password="pw", db=2, client_name="me")
    sizes(core, 1)
    core.connected(0.0)
    assert flush(core) == (
        cmd("AUTH", "pw") + cmd("HELLO", "2") + cmd("SELECT", "2") + cmd("CLIENT", "SETNAME", "me")
    )
    assert flush(core) == b""  # a request must never run before SELECT took effect
    core.received(b"+OK\r\n" + hello_reply() + b"+OK\r\n+OK\r\n", 0.0)
    assert flush(core) == zcard()
    core.received(b":4\r\n", 0.0)
    assert results(core) == {1: 4}
    assert core.stats()["round_trips"] == 1  # the handshake is not counted


@pytest.mark.parametrize(
    ("replies", "error"),
    [
        (
            b"-WRONGPASS invalid username-password pair\r\n"
            b"-NOAUTH HELLO must be called with the client already authenticated\r\n"
            b"-NOAUTH Authentication required.\r\n",
            rl.AuthenticationError,
        ),
        (b"+OK\r\n" + hello_reply() + b"-ERR DB index is out of range\r\n", rl.ResponseError),
    ],
    ids=["auth", "select"],
)
def test_a_failed_handshake_fails_the_waiting_requests_unsent(replies: bytes, error: type) -> None:
    core = new_core(password="pw", db=99)
    sizes(core, 1, 2)
    core.connected(0.0)
    written = flush(core)
    core.received(replies, 0.0)
    done = results(core)
    assert isinstance(done[1], error) and isinstance(done[2], error)
    assert core.take_close()
    written += flush(core)
    assert b"ZCARD" not in written


# ---- Reading ------------------------------------------------------------------------------------


@pytest.mark.parametrize("split", range(len(TOP_REPLY) + 1))
def test_a_reply_split_anywhere_reads_the_same(split: int) -> None:
    core = connected_core()
    core.submit(1, board().get_top(2), 0.0)
    flush(core)
    core.received(TOP_REPLY[:split], 0.0)
    core.received(TOP_REPLY[split:], 0.0)
    assert results(core) == {1: TOP_RESULT}


def test_a_reply_fed_byte_by_byte_reads_the_same() -> None:
    core = connected_core()
    core.submit(1, board().get_top(2), 0.0)
    flush(core)
    for i in range(len(TOP_REPLY)):
        assert core.take_completions() == []
        core.received(TOP_REPLY[i : i + 1], 0.0)
    assert results(core) == {1: TOP_RESULT}


def test_an_error_reply_fails_only_its_request() -> None:
    core = connected_core()
    sizes(core, 1, 2)
    flush(core)
    core.received(b"-ERR boom\r\n:7\r\n", 0.0)
    done = results(core)
    assert isinstance(done[1], rl.ResponseError) and str(done[1]) == "ERR boom"
    assert done[2] == 7
    assert not core.take_close() and core.is_connected


def test_noscript_sends_the_body_once_then_succeeds() -> None:
    core = connected_core()
    core.submit(1, board().get_top(2), 0.0)
    assert b"$7\r\nEVALSHA\r\n" in flush(core)
    core.received(b"-NOSCRIPT No matching script.\r\n", 0.0)
    resent = flush(core)
    assert b"$4\r\nEVAL\r\n" in resent and b"#!lua" in resent
    core.received(TOP_REPLY, 0.0)
    assert results(core) == {1: TOP_RESULT}
    assert core.stats()["round_trips"] == 2


def test_noscript_for_the_body_too_is_an_error() -> None:
    core = connected_core()
    core.submit(1, board().get_top(2), 0.0)
    flush(core)
    core.received(b"-NOSCRIPT No matching script.\r\n", 0.0)
    flush(core)
    core.received(b"-NOSCRIPT No matching script.\r\n", 0.0)
    assert isinstance(results(core)[1], rl.NoScriptError)
    assert flush(core) == b""


@pytest.mark.parametrize(
    "stray", [b":1\r\n:99\r\n", b":1\r\n*", b":1\r\n$3\r\nab"], ids=["reply", "byte", "bulk"]
)
def test_bytes_nobody_asked_for_close_the_connection(stray: bytes) -> None:
    core = connected_core()
    sizes(core, 1)
    flush(core)
    core.received(stray, 0.0)
    assert results(core) == {1: 1}  # its own reply came first
    assert core.take_close() and not core.is_connected


def test_a_reply_while_nothing_is_asked_closes_the_connection() -> None:
    core = connected_core()
    core.received(b":5\r\n", 0.0)
    assert core.take_close()


def test_malformed_bytes_fail_what_is_written_and_close() -> None:
    core = connected_core()
    sizes(core, 1, 2)
    flush(core)
    core.received(b"?what\r\n", 0.0)
    done = results(core)
    assert all(isinstance(e, rl.ConnectionError) for e in done.values()) and len(done) == 2
    assert core.take_close()


def test_a_reply_over_max_reply_bytes_closes_the_connection() -> None:
    core = connected_core(max_reply_bytes=4096)
    sizes(core, 1)
    flush(core)
    core.received(b"$100000\r\n" + b"x" * 5000, 0.0)
    error = results(core)[1]
    assert isinstance(error, rl.ConnectionError) and "max_reply_bytes" in str(error)
    assert core.take_close()


# ---- Losing the connection -------------------------------------------------------------------


def increments(core: _core.ConnectionCore, *ids: int, started: float = 0.0) -> None:
    for id in ids:
        core.submit(id, board().increment_score("u", 1), started)


@pytest.mark.parametrize("answered", range(5))
def test_a_connection_lost_at_every_point_of_a_pipeline(answered: int) -> None:
    core = connected_core()
    sizes(core, 1, 2, 3, 4)
    flush(core)
    core.received(b"".join(b":%d\r\n" % i for i in range(1, answered + 1)), 0.0)
    core.lost("gone", 0.0)
    done = results(core)
    assert done == {i: i for i in range(1, answered + 1)}
    # Reads write nothing: those unanswered go first on the next connection, once.
    assert core.wants_connection == (answered < 4)
    connect(core, 0.0)
    assert flush(core) == zcard() * (4 - answered)
    core.lost("gone again", 0.0)
    done = results(core)
    assert sorted(done) == list(range(answered + 1, 5))
    for error in done.values():
        assert isinstance(error, rl.ConnectionError) and str(error) == "gone again"
    connect(core, 0.0)
    assert flush(core) == b""
    assert core.outstanding == 0


def test_written_writes_are_never_sent_again() -> None:
    # Writes may have run: none is re-sent on the next connection.
    core = connected_core()
    increments(core, 1, 2)
    sizes(core, 3)
    flush(core)
    core.lost("gone", 0.0)
    done = results(core)
    assert sorted(done) == [1, 2]
    assert all(isinstance(e, rl.ConnectionError) and str(e) == "gone" for e in done.values())
    connect(core, 0.0)
    assert flush(core) == zcard()  # the read only
    core.received(b":7\r\n", 0.0)
    assert results(core) == {3: 7}


def test_a_protocol_error_is_not_retried() -> None:
    core = connected_core()
    sizes(core, 1)
    flush(core)
    core.received(b"?garbage\r\n", 0.0)
    assert isinstance(results(core)[1], rl.ConnectionError)
    assert not core.wants_connection


def test_a_read_sent_again_keeps_its_deadline() -> None:
    core = connected_core(socket_timeout=1.0)
    sizes(core, 1, started=0.0)
    flush(core)
    core.lost("gone", 0.6)
    assert results(core) == {}
    connect(core, 0.6)
    assert flush(core) == zcard()
    assert core.next_deadline == pytest.approx(1.0)  # the call's, not 0.6 + 1.0
    core.tick(1.0)
    assert isinstance(results(core)[1], rl.TimeoutError)


def test_a_read_lost_after_its_deadline_is_not_sent_again() -> None:
    core = connected_core(socket_timeout=1.0)
    sizes(core, 1, started=0.0)
    flush(core)
    core.lost("gone", 1.0)
    error = results(core)[1]
    assert isinstance(error, rl.ConnectionError) and str(error) == "gone"


def test_requests_not_written_wait_for_the_next_connection() -> None:
    core = connected_core(max_in_flight=2)
    increments(core, 1, 2)
    sizes(core, 3, 4)
    assert len(flush(core)) > 0
    core.lost("gone", 0.0)
    assert sorted(results(core)) == [1, 2]
    assert core.wants_connection
    connect(core, 0.0)
    assert flush(core) == zcard() * 2
    core.received(b":3\r\n:4\r\n", 0.0)
    assert results(core) == {3: 3, 4: 4}


def test_a_failed_connect_fails_the_waiting_requests() -> None:
    core = new_core()
    sizes(core, 1)
    core.connect_failed("refused")
    error = results(core)[1]
    assert isinstance(error, rl.ConnectionError) and str(error) == "refused"
    assert not core.wants_connection


def test_abort_fails_everything() -> None:
    core = connected_core(max_in_flight=1)
    sizes(core, 1, 2)
    flush(core)
    core.abort("closed")
    assert sorted(results(core)) == [1, 2]
    assert core.outstanding == 0


# ---- Time -------------------------------------------------------------------------------------


def test_an_overdue_reply_fails_what_is_written_and_closes() -> None:
    core = connected_core(socket_timeout=1.0)
    sizes(core, 1, started=0.0)
    flush(core)
    assert core.next_deadline == pytest.approx(1.0)
    core.tick(0.999)
    assert core.take_completions() == [] and not core.take_close()
    core.tick(1.0)
    assert isinstance(results(core)[1], rl.TimeoutError)
    assert core.take_close()


def test_the_timeout_counts_from_the_call_not_from_the_write() -> None:
    core = connected_core(socket_timeout=1.0, max_in_flight=1)
    sizes(core, 1, started=0.0)
    flush(core)
    sizes(core, 2, started=0.2)  # queued behind max_in_flight
    core.tick(1.0)
    done = results(core)
    assert isinstance(done[1], rl.TimeoutError) and "reading" in str(done[1])
    assert core.outstanding == 1
    core.tick(1.2)
    error = results(core)[2]
    assert isinstance(error, rl.TimeoutError) and "waiting to send" in str(error)


def test_a_reply_that_keeps_arriving_fails_at_its_deadline() -> None:
    # Bytes of an unfinished reply arrive past the deadline: the core gives up with the chunk,
    # though the driver never had to wait (and so never ticked).
    core = connected_core(socket_timeout=1.0)
    sizes(core, 1, started=0.0)
    flush(core)
    core.received(b"$1000000\r\n" + b"x" * 1000, 0.5)
    assert results(core) == {}
    core.received(b"x" * 1000, 1.0)
    assert isinstance(results(core)[1], rl.TimeoutError)
    assert core.take_close()


def test_a_request_waiting_for_a_connection_times_out_unsent() -> None:
    core = new_core(socket_timeout=0.5)
    sizes(core, 1, started=3.0)
    assert core.next_deadline == pytest.approx(3.5)
    core.tick(3.5)
    assert isinstance(results(core)[1], rl.TimeoutError)
    assert not core.take_close() and not core.wants_connection


def test_each_page_gets_its_own_timeout() -> None:
    core = connected_core(socket_timeout=1.0)
    core.submit(1, board().clear(), 0.0)
    flush(core)
    core.received(b":3\r\n", 0.9)  # more left: the next page goes out
    assert flush(core)
    core.tick(1.5)
    assert core.take_completions() == []
    core.received(b":0\r\n", 1.6)
    assert results(core) == {1: None}


# ---- Pages and cancellation --------------------------------------------------------------------


def test_a_paged_operation_runs_every_page_before_completing() -> None:
    core = connected_core()
    core.submit(1, board().clear(), 0.0)
    for left in (b":10000\r\n", b":5000\r\n"):
        assert flush(core)
        core.received(left, 0.0)
        assert core.take_completions() == []
    assert flush(core)
    core.received(b":0\r\n", 0.0)
    assert results(core) == {1: None}
    assert core.stats()["round_trips"] == 3


def test_a_cancelled_paged_operation_sends_no_next_page() -> None:
    core = connected_core()
    core.submit(1, board().clear(), 0.0)
    flush(core)
    core.cancel(1)
    core.received(b":10000\r\n", 0.0)  # the page in flight is read and dropped
    assert isinstance(results(core)[1], rl.ConnectionError)
    assert flush(core) == b""
    assert core.is_connected


def test_a_request_cancelled_before_it_is_written_is_never_written() -> None:
    core = new_core()
    sizes(core, 1, 2)
    core.cancel(1)
    connect(core, 0.0)
    assert flush(core) == zcard()


def test_raw_requests_return_their_replies_as_they_are() -> None:
    core = connected_core()
    core.submit_raw(1, cmd("GET", "x") + cmd("GET", "y"), 2)
    assert flush(core) == cmd("GET", "x") + cmd("GET", "y")
    core.received(b"$1\r\nv\r\n-ERR no\r\n", 0.0)
    replies = results(core)[1]
    assert replies[0] == b"v" and isinstance(replies[1], rl.ResponseError)


def test_an_operation_runs_once() -> None:
    core = connected_core()
    operation = board().get_size()
    core.submit(1, operation)
    with pytest.raises(ValueError, match="already been run"):
        core.submit(2, operation)


def test_a_script_first_loaded_is_not_a_reload_and_one_loaded_again_is() -> None:
    # Three requests pipelined before the server had the script: three NOSCRIPTs, one load.
    core = connected_core()
    for id in (1, 2, 3):
        core.submit(id, board().get_top(2), 0.0)
    assert flush(core)
    before = _core.observed()["script_reload"]
    core.received(b"-NOSCRIPT No matching script.\r\n" * 3, 0.0)
    assert b"EVAL" in flush(core)  # sent again, with the body
    core.received(TOP_REPLY * 3, 0.0)
    assert results(core) == {1: TOP_RESULT, 2: TOP_RESULT, 3: TOP_RESULT}
    assert _core.observed()["script_reload"] == before
    # Sent after it was loaded on this connection: the server's cache was emptied.
    core.submit(4, board().get_top(2), 0.0)
    assert flush(core)
    core.received(b"-NOSCRIPT No matching script.\r\n", 0.0)
    assert flush(core)
    core.received(TOP_REPLY, 0.0)
    assert results(core) == {4: TOP_RESULT}
    assert _core.observed()["script_reload"] == before + 1


def test_a_request_written_before_the_body_is_not_a_reload() -> None:
    # Two EVALSHAs written together (the server taken to have run the script for this
    # connection) both come back NOSCRIPT: the second was written before the first's body,
    # so its NOSCRIPT is the same first load, not a reload. Each is sent again first, before
    # anything made after it (calls run in the order they were made).
    core = connected_core()
    core.submit(1, board().get_top(2), 0.0)
    core.submit(2, board().get_top(2), 0.0)
    assert flush(core).count(b"EVALSHA") == 2  # write 1: both
    core.submit(3, board().get_size(), 0.0)
    before = _core.observed()["script_reload"]
    core.received(b"-NOSCRIPT No matching script.\r\n", 0.0)
    core.received(b"-NOSCRIPT No matching script.\r\n", 0.0)
    second = flush(core)  # write 2: the two bodies, in their order, then the ZCARD
    assert second.count(b"$4\r\nEVAL\r\n") == 2 and second.endswith(zcard())
    other = TOP_REPLY.replace(b"Ada", b"Bob")
    core.received(TOP_REPLY + other + b":2\r\n", 0.0)
    done = results(core)
    assert done[1] == TOP_RESULT and done[2][0]["metadata"] == {"name": "Bob"} and done[3] == 2
    assert _core.observed()["script_reload"] == before
    core.submit(3, board().get_top(2), 0.0)  # written after the body: a NOSCRIPT is a reload
    assert flush(core)
    core.received(b"-NOSCRIPT No matching script.\r\n", 0.0)
    assert flush(core)
    core.received(TOP_REPLY, 0.0)
    assert results(core) == {3: TOP_RESULT}
    assert _core.observed()["script_reload"] == before + 1


# ---- Durable acknowledgements (min_replicas) ----------------------------------------------------


def wait(replicas: int = 1, ms: int = 2000) -> bytes:
    return cmd("WAIT", str(replicas), str(ms))


def test_a_write_carries_wait_after_its_commands_and_a_read_none() -> None:
    core = connected_core(min_replicas=1)
    core.submit(1, board().delete_user("u"), 0.0)
    core.submit(2, board().get_top(2), 0.0)
    written = flush(core)
    assert written.endswith(wait() + written[written.rindex(b"*") :])
    assert written.count(b"WAIT") == 1
    assert written.index(b"EVALSHA") < written.index(b"WAIT")
    core.received(b":1\r\n:1\r\n" + TOP_REPLY, 0.0)  # the removal, WAIT's 1, get_top
    assert results(core) == {1: True, 2: TOP_RESULT}
    # A default client sends no WAIT, and a write's replies are its own.
    core = connected_core()
    core.submit(1, board().delete_user("u"), 0.0)
    assert b"WAIT" not in flush(core)
    core.received(b":1\r\n", 0.0)
    assert results(core) == {1: True}


def test_too_few_replicas_raise_not_replicated_and_the_connection_goes_on() -> None:
    core = connected_core(min_replicas=2, replica_timeout=0.25)
    core.submit(1, board().delete_user("u"), 0.0)
    core.submit(2, board().get_size(), 0.0)
    assert flush(core).count(wait(2, 250)) == 1
    core.received(b":1\r\n:1\r\n:5\r\n", 0.0)
    done = results(core)
    error = done[1]
    assert isinstance(error, rl.NotReplicatedError)
    assert not isinstance(error, (rl.ConnectionError, rl.TimeoutError))
    assert (error.replicas, error.min_replicas) == (1, 2)
    assert str(error).startswith(
        "delete_user: applied on the primary but confirmed by 1 of 2 replicas within 0.25 s (WAIT)"
    )
    assert done[2] == 5
    assert core.is_connected and not core.take_close() and flush(core) == b""


def test_an_error_reply_wins_over_the_wait_and_waitaof_counts_replicas() -> None:
    core = connected_core(min_replicas=1)
    core.submit(1, board().delete_user("u"), 0.0)
    flush(core)
    core.received(b"-ERR boom\r\n:0\r\n", 0.0)  # the write refused: nothing was applied
    error = results(core)[1]
    assert isinstance(error, rl.ResponseError) and str(error) == "ERR boom"
    core = new_core(min_replicas=1, wait_aof=True)
    core.connected(0.0)
    assert flush(core) == cmd("HELLO", "2") + cmd("WAITAOF", "0", "0", "0")  # WAITAOF's probe
    core.received(hello_reply() + b"*2\r\n:0\r\n:0\r\n", 0.0)
    core.submit(1, board().delete_user("u"), 0.0)
    core.submit(2, board().delete_user("v"), 0.0)
    assert flush(core).count(cmd("WAITAOF", "0", "1", "2000")) == 2
    core.received(b":1\r\n*2\r\n:0\r\n:1\r\n:1\r\n*2\r\n:1\r\n:0\r\n", 0.0)
    done = results(core)
    assert done[1] is True
    assert isinstance(done[2], rl.NotReplicatedError) and "(WAITAOF: in their" in str(done[2])


def test_noscript_resends_the_body_and_the_wait_again() -> None:
    core = connected_core(min_replicas=1)
    core.submit(1, board().delete_user("u"), 0.0)
    flush(core)
    core.received(b"-NOSCRIPT No matching script.\r\n:1\r\n", 0.0)
    resent = flush(core)
    assert b"$4\r\nEVAL\r\n" in resent and resent.endswith(wait())
    core.received(b":1\r\n:1\r\n", 0.0)
    assert results(core) == {1: True}


def test_a_write_behind_another_s_wait_allows_it_and_gets_its_own_answer() -> None:
    # Issue 39, item 11: the server runs a write pipelined behind another's WAIT only once that
    # WAIT returns. Its deadline allowed its own wait only, so it timed out ("Timeout reading")
    # while still to run (and then ran); now it allows the waits ahead and gets its own answer.
    core = connected_core(min_replicas=1, replica_timeout=1, socket_timeout=0.5)
    core.submit(1, board().delete_user("u"), 0.0)
    core.submit(2, board().delete_user("v"), 0.0)
    assert flush(core).count(wait(ms=1000)) == 2  # one write, both with their WAIT
    core.received(b":1\r\n:0\r\n", 1.0)  # the first, its WAIT: no replica within 1 s
    assert isinstance(results(core)[1], rl.NotReplicatedError)
    core.tick(1.9)  # past 0.5 + 1 from the call: the second has run for 0.9 s of its wait
    assert not results(core) and core.is_connected and not core.take_close()
    core.received(b":1\r\n:0\r\n", 2.0)
    error = results(core)[2]
    assert isinstance(error, rl.NotReplicatedError) and "applied on the primary" in str(error)


def test_a_write_s_deadline_allows_replica_timeout() -> None:
    core = connected_core(min_replicas=1, replica_timeout=5, socket_timeout=1)
    core.submit(1, board().delete_user("u"), 0.0)
    core.submit(2, board().get_size(), 0.0)
    flush(core)
    core.received(b":1\r\n", 0.0)  # the write's reply; WAIT's still to come
    core.tick(0.9)
    assert not results(core)
    # Past socket_timeout: the read behind the WAIT fails alone; the write may wait on.
    core.tick(1.5)
    done = results(core)
    assert list(done) == [2] and isinstance(done[2], rl.TimeoutError)
    assert "behind a request the server holds" in str(done[2])
    assert core.is_connected and not core.take_close()
    # WAIT's reply comes within socket_timeout + replica_timeout; the read's is dropped.
    core.received(b":1\r\n:9\r\n", 5.5)
    assert results(core) == {1: True}
    assert core.outstanding == 0
    # A write whose WAIT is not answered in time: the connection is stuck.
    core.submit(3, board().delete_user("u"), 6.0)
    flush(core)
    core.tick(12.5)
    done = results(core)
    assert isinstance(done[3], rl.TimeoutError) and core.take_close()


def test_a_script_the_connection_has_not_run_holds_what_comes_after_it() -> None:
    # Calls run in the order they were made, also when the server lost its scripts (a restart,
    # a failover): a request naming a script by SHA that the server has not run for this
    # connection is written last, and nothing after it until its reply; a NOSCRIPT sends it
    # again first, with the script's body, so a call made after it cannot run before it.
    core = _core.ConnectionCore()
    connect(core, 0.0)
    increments(core, 1)
    sizes(core, 2)
    first = flush(core)
    assert first.count(b"EVALSHA") == 1 and not first.endswith(zcard())
    assert flush(core) == b""  # held until its reply
    core.received(b"-NOSCRIPT No matching script. Please use EVAL.\r\n", 0.0)
    again = flush(core)
    assert again.startswith(b"*") and b"$4\r\nEVAL\r\n" in again[:20] and again.endswith(zcard())
    core.received(b"-ERR refused\r\n:5\r\n", 0.0)
    done = results(core)
    assert isinstance(done[1], rl.ResponseError) and done[2] == 5
    # The script has run for this connection now: its next call goes with what follows.
    increments(core, 3)
    sizes(core, 4)
    third = flush(core)
    assert third.count(b"EVALSHA") == 1 and third.endswith(zcard())
