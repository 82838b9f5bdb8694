"""The Client: options, URLs, redis-py clients, failures and recovery, threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import redis_leaderboard
from redis_leaderboard import Client, RedisLeaderboard


@pytest.fixture
def db_key(redis_server: Any) -> Iterator[str]:
    """A board key to be used in databases 0..3; removed from all of them after the test."""
    key = f"test:{uuid.uuid4().hex[:12]}"
    yield key
    for db in range(4):
        r = redis_server.redis_py(db=db)
        names = list(r.scan_iter(match=f"{key}*"))
        if names:
            r.delete(*names)
        r.close()


def names_of_connected_clients(r: Any) -> list[str]:
    return [c["name"] for c in r.client_list()]


def wait_until_disconnected(r: Any, name: str) -> None:
    """The server notices a closed connection a moment after the client closes it."""
    deadline = time.monotonic() + 5
    while name in names_of_connected_clients(r) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert name not in names_of_connected_clients(r)


def zset_in_db(server: Any, db: int, key: str) -> list[tuple[str, float]]:
    r = server.redis_py(db=db)
    try:
        return r.zrange(key, 0, -1, withscores=True)
    finally:
        r.close()


# --- Client options ---


def test_ping_execute_command_and_stats(redis_server: Any, board_key: str) -> None:
    with Client(host=redis_server.host, port=redis_server.port) as c:
        assert c.stats() == {"round_trips": 0, "commands": 0, "reconnects": 0, "connections": 0}
        assert c.ping() is True
        assert c.execute_command("SET", board_key, b"v\x00\xff") == "OK"
        assert c.execute_command("GET", board_key) == b"v\x00\xff"
        assert c.execute_command("GET", f"{board_key}:missing") is None
        assert c.execute_command("RPUSH", f"{board_key}:list", 1, 2.5, "x") == 3
        assert c.execute_command("LRANGE", f"{board_key}:list", 0, -1) == [b"1", b"2.5", b"x"]
        stats = c.stats()
        assert stats["round_trips"] == 6
        assert stats["commands"] >= 6
        assert stats["connections"] == 1
        assert stats["reconnects"] == 0
        with pytest.raises(redis_leaderboard.ResponseError, match=r"^WRONGTYPE"):
            c.execute_command("LPUSH", board_key, "x")
        with pytest.raises(redis_leaderboard.ResponseError, match="unknown command"):
            c.execute_command("NOT-A-COMMAND")
        assert c.ping() is True
        c.execute_command("DEL", board_key, f"{board_key}:list")


def test_db_option_selects_the_database(redis_server: Any, db_key: str) -> None:
    with Client(host=redis_server.host, port=redis_server.port, db=2) as c:
        RedisLeaderboard(c, key=db_key).upsert_user("a", 1)
    assert zset_in_db(redis_server, 2, db_key) == [("a", 1.0)]
    assert zset_in_db(redis_server, 0, db_key) == []


def test_client_name_is_set_on_the_connection(redis_server: Any, r: Any) -> None:
    name = f"lb-{uuid.uuid4().hex[:8]}"
    with Client(host=redis_server.host, port=redis_server.port, client_name=name) as c:
        assert c.execute_command("CLIENT", "GETNAME") == name.encode()
        assert name in names_of_connected_clients(r)
    wait_until_disconnected(r, name)


def test_unix_socket_path(redis_server: Any, board_key: str, r: Any) -> None:
    with Client(unix_socket_path=redis_server.unix_path) as c:
        board = RedisLeaderboard(c, key=board_key)
        assert board.upsert_user("a", 1)["rank"] == 1
    assert r.zrange(board_key, 0, -1) == ["a"]


def test_username_and_password(password_redis_server: Any) -> None:
    server = password_redis_server
    with Client(host=server.host, port=server.port, password="s3cret-pass") as c:
        assert c.ping() is True
    with Client(
        host=server.host, port=server.port, username="default", password="s3cret-pass"
    ) as c:
        assert c.ping() is True


def test_close_closes_the_connection(redis_server: Any, r: Any) -> None:
    name = f"lb-{uuid.uuid4().hex[:8]}"
    c = Client(host=redis_server.host, port=redis_server.port, client_name=name)
    assert c.ping() is True
    assert name in names_of_connected_clients(r)
    c.close()
    wait_until_disconnected(r, name)
    c.close()  # closing twice is harmless


def test_context_manager_returns_the_client_and_closes_it(redis_server: Any, r: Any) -> None:
    name = f"lb-{uuid.uuid4().hex[:8]}"
    c = Client(host=redis_server.host, port=redis_server.port, client_name=name)
    with c as entered:
        assert entered is c
        assert c.ping() is True
        assert name in names_of_connected_clients(r)
    wait_until_disconnected(r, name)


def test_context_manager_closes_on_error(redis_server: Any, r: Any) -> None:
    name = f"lb-{uuid.uuid4().hex[:8]}"
    with pytest.raises(KeyError):
        with Client(host=redis_server.host, port=redis_server.port, client_name=name) as c:
            c.ping()
            raise KeyError("boom")
    wait_until_disconnected(r, name)


# --- from_url ---


def test_from_url_host_port_db(redis_server: Any, db_key: str) -> None:
    url = f"redis://{redis_server.host}:{redis_server.port}/3"
    with Client.from_url(url) as c:
        RedisLeaderboard(c, key=db_key).upsert_user("a", 3)
    assert zset_in_db(redis_server, 3, db_key) == [("a", 3.0)]


def test_from_url_without_db_uses_db_zero(redis_server: Any, board_key: str, r: Any) -> None:
    for url in (
        f"redis://{redis_server.host}:{redis_server.port}",
        f"redis://{redis_server.host}:{redis_server.port}/",
    ):
        with Client.from_url(url) as c:
            RedisLeaderboard(c, key=board_key).increment_score("a", 1)
    assert r.zrange(board_key, 0, -1, withscores=True) == [("a", 2.0)]


def test_from_url_with_password(password_redis_server: Any) -> None:
    server = password_redis_server
    for url in (
        f"redis://:s3cret-pass@{server.host}:{server.port}/0",
        f"redis://default:s3cret-pass@{server.host}:{server.port}/0",
        server.url,
    ):
        with Client.from_url(url) as c:
            assert c.ping() is True
    with Client.from_url(f"redis://:wrong@{server.host}:{server.port}/0") as c:
        with pytest.raises(redis_leaderboard.AuthenticationError):
            c.ping()


def test_from_url_unix_socket(redis_server: Any, db_key: str) -> None:
    with Client.from_url(f"unix://{redis_server.unix_path}") as c:
        RedisLeaderboard(c, key=db_key).upsert_user("zero", 0)
    with Client.from_url(f"unix://{redis_server.unix_path}?db=1") as c:
        RedisLeaderboard(c, key=db_key).upsert_user("one", 1)
    assert zset_in_db(redis_server, 0, db_key) == [("zero", 0.0)]
    assert zset_in_db(redis_server, 1, db_key) == [("one", 1.0)]


def test_from_url_options(redis_server: Any) -> None:
    name = f"lb-{uuid.uuid4().hex[:8]}"
    url = f"redis://{redis_server.host}:{redis_server.port}/0"
    with Client.from_url(url, socket_timeout=5, socket_connect_timeout=5, client_name=name) as c:
        assert c.execute_command("CLIENT", "GETNAME") == name.encode()


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:6379",
        "localhost:6379",
        "redis://host:notaport",
        "redis://host/0?ssl=sometimes",
        "redis://host/0?no_such_option=1",
    ],
)
def test_bad_urls_are_value_errors(url: str) -> None:
    with pytest.raises(ValueError):
        Client.from_url(url)


# --- what RedisLeaderboard connects to ---


def test_redis_py_client_options_are_reused(redis_server: Any, db_key: str) -> None:
    name = f"lb-{uuid.uuid4().hex[:8]}"
    rp = redis.Redis(
        host=redis_server.host, port=redis_server.port, db=1, client_name=name, socket_timeout=7
    )
    board = RedisLeaderboard(rp, key=db_key, max_entries=2)
    assert isinstance(board.redis, Client)
    board.upsert_user("a", 1)
    board.upsert_user("b", 2)
    assert board.upsert_user("c", 3)["trimmed_user_ids"] == ["a"]
    assert zset_in_db(redis_server, 1, db_key) == [("b", 2.0), ("c", 3.0)]
    assert board.redis.execute_command("CLIENT", "GETNAME") == name.encode()
    board.redis.close()
    rp.close()


def test_redis_py_client_with_decode_responses_and_guide_usage(
    redis_server: Any, board_key: str
) -> None:
    # The guide's own snippet: a decode_responses redis-py client handed to the class.
    rp = redis.Redis(host=redis_server.host, port=redis_server.port, decode_responses=True)
    board = RedisLeaderboard(redis_client=rp, key=board_key, max_entries=100)
    board.upsert_user("player-1", 1200, {"name": "Ada"})
    board.increment_score("player-1", 25)
    assert board.get_top(5) == [
        {"rank": 1, "user_id": "player-1", "score": 1225.0, "metadata": {"name": "Ada"}}
    ]
    assert rp.zscore(board_key, "player-1") == 1225.0
    board.redis.close()
    rp.close()


def test_redis_py_unix_socket_client(redis_server: Any, board_key: str, r: Any) -> None:
    rp = redis.Redis(unix_socket_path=redis_server.unix_path)
    board = RedisLeaderboard(rp, key=board_key)
    board.upsert_user("u", 1)
    assert r.zrange(board_key, 0, -1) == ["u"]
    board.redis.close()
    rp.close()


def test_redis_py_client_password_is_reused(password_redis_server: Any, board_key: str) -> None:
    server = password_redis_server
    rp = server.redis_py()
    board = RedisLeaderboard(rp, key=board_key)
    assert board.upsert_user("a", 1)["rank"] == 1
    assert rp.zrange(board_key, 0, -1) == ["a"]
    board.redis.close()
    rp.close()


def test_redis_py_socket_timeout_is_reused(fresh_redis_server: Any) -> None:
    server = fresh_redis_server
    rp = redis.Redis(host=server.host, port=server.port, socket_timeout=0.5)
    board = RedisLeaderboard(rp, key="lb")
    assert board.get_size() == 0
    server.pause()
    try:
        start = time.monotonic()
        with pytest.raises(redis_leaderboard.TimeoutError):
            board.get_size()
        assert time.monotonic() - start < 0.5 + 2
    finally:
        server.resume()
    board.redis.close()
    rp.close()


def test_url_keyword(redis_server: Any, db_key: str) -> None:
    board = RedisLeaderboard(url=f"redis://{redis_server.host}:{redis_server.port}/2", key=db_key)
    board.upsert_user("a", 1)
    assert zset_in_db(redis_server, 2, db_key) == [("a", 1.0)]
    board.redis.close()


def test_redis_url_environment_variable(
    redis_server: Any, db_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", f"redis://{redis_server.host}:{redis_server.port}/3")
    board = RedisLeaderboard(key=db_key)
    board.upsert_user("env", 1)
    assert zset_in_db(redis_server, 3, db_key) == [("env", 1.0)]
    board.redis.close()

    # An explicit url wins over the environment.
    board = RedisLeaderboard(url=f"redis://{redis_server.host}:{redis_server.port}/1", key=db_key)
    board.upsert_user("url", 1)
    assert zset_in_db(redis_server, 1, db_key) == [("url", 1.0)]
    board.redis.close()


def test_client_is_shared_not_copied(client: Client, board_key: str) -> None:
    board = RedisLeaderboard(client, key=board_key)
    assert board.redis is client


def test_client_and_url_together_are_refused(client: Client, redis_server: Any) -> None:
    with pytest.raises(TypeError):
        RedisLeaderboard(client, url=redis_server.url)
    rp = redis_server.redis_py()
    with pytest.raises(TypeError):
        RedisLeaderboard(rp, url=redis_server.url)
    rp.close()


@pytest.mark.parametrize("thing", ["redis://localhost:6379", 6379, object()])
def test_other_redis_client_types_are_refused(thing: Any) -> None:
    with pytest.raises(TypeError):
        RedisLeaderboard(thing)


# --- failures ---


def test_wrong_password_is_an_authentication_error(password_redis_server: Any) -> None:
    server = password_redis_server
    with pytest.raises(redis_leaderboard.AuthenticationError, match=r"^WRONGPASS"):
        with Client(host=server.host, port=server.port, password="wrong") as c:
            c.ping()
    with pytest.raises(redis_leaderboard.AuthenticationError, match=r"^WRONGPASS"):
        with Client(host=server.host, port=server.port, username="nobody", password="x") as c:
            c.ping()
    # No password at all: the server's NOAUTH is an authentication error too (as redis-py).
    with pytest.raises(redis_leaderboard.AuthenticationError, match=r"^NOAUTH"):
        with Client(host=server.host, port=server.port) as c:
            RedisLeaderboard(c, key="lb").get_top()
    board = RedisLeaderboard(url=f"redis://:wrong@{server.host}:{server.port}/0", key="lb")
    with pytest.raises(redis_leaderboard.AuthenticationError) as info:
        board.get_top()
    assert isinstance(info.value, redis_leaderboard.ConnectionError)
    assert isinstance(info.value, redis_leaderboard.RedisError)
    board.redis.close()


def test_error_tree_mirrors_redis_py() -> None:
    assert issubclass(redis_leaderboard.ConnectionError, redis_leaderboard.RedisError)
    assert issubclass(redis_leaderboard.AuthenticationError, redis_leaderboard.ConnectionError)
    assert issubclass(redis_leaderboard.TimeoutError, redis_leaderboard.RedisError)
    assert issubclass(redis_leaderboard.ResponseError, redis_leaderboard.RedisError)
    assert issubclass(redis_leaderboard.RedisError, Exception)
    assert not issubclass(redis_leaderboard.TimeoutError, redis_leaderboard.ConnectionError)


def test_server_down_is_a_connection_error_within_the_connect_timeout(
    fresh_redis_server: Any,
) -> None:
    server = fresh_redis_server
    server.stop()
    with Client(host=server.host, port=server.port, socket_connect_timeout=1) as c:
        start = time.monotonic()
        with pytest.raises(redis_leaderboard.ConnectionError):
            c.ping()
        assert time.monotonic() - start < 1 + 2
        board = RedisLeaderboard(c, key="lb")
        start = time.monotonic()
        with pytest.raises(redis_leaderboard.ConnectionError):
            board.upsert_user("a", 1)
        assert time.monotonic() - start < 1 + 2
        # It comes back once the server does.
        server.start()
        assert board.upsert_user("a", 1)["rank"] == 1


UNANSWERED_CONNECT = """
import socket, sys, time
import redis_leaderboard

# A listener whose accept queue is full: the kernel drops further SYNs, so a connect hangs
# until the client's own connect timeout (or the kernel's, about two minutes) gives up.
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(0)
port = listener.getsockname()[1]
queued = []
for _ in range(8):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    queued.append(s)
time.sleep(0.2)
probe = socket.socket()
probe.settimeout(0.3)
try:
    probe.connect(("127.0.0.1", port))
    print("SKIP accept queue not full")
    sys.exit(0)
except OSError:
    pass

client = redis_leaderboard.Client(host="127.0.0.1", port=port, socket_connect_timeout=0.5)
start = time.monotonic()
try:
    client.ping()
    print("NO-ERROR", time.monotonic() - start)
except redis_leaderboard.RedisError as exc:
    print(type(exc).__name__, time.monotonic() - start)
"""


def test_unanswered_connect_gives_up_within_the_connect_timeout() -> None:
    # Run in a child process: if the timeout is ignored, the connect blocks for minutes.
    try:
        done = subprocess.run(
            [sys.executable, "-c", UNANSWERED_CONNECT],
            capture_output=True,
            text=True,
            timeout=0.5 + 5,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("connect with socket_connect_timeout=0.5 was still blocked after 5.5 s")
    assert done.returncode == 0, done.stderr
    outcome, _, elapsed = done.stdout.strip().partition(" ")
    if outcome == "SKIP":
        pytest.skip(elapsed)
    assert outcome in ("ConnectionError", "TimeoutError"), done.stdout
    assert float(elapsed) < 0.5 + 2


def test_paused_server_is_a_timeout_error_within_socket_timeout(fresh_redis_server: Any) -> None:
    server = fresh_redis_server
    with Client(host=server.host, port=server.port, socket_timeout=0.5) as c:
        board = RedisLeaderboard(c, key="lb")
        board.upsert_user("a", 1)
        board.upsert_user("b", 2)
        server.pause()
        try:
            start = time.monotonic()
            with pytest.raises(redis_leaderboard.TimeoutError):
                board.get_size()
            assert time.monotonic() - start < 0.5 + 2
            start = time.monotonic()
            with pytest.raises(redis_leaderboard.TimeoutError):
                board.increment_score("a", 10)
            assert time.monotonic() - start < 0.5 + 2
        finally:
            server.resume()
        # The late replies to the timed-out calls must never be read as answers to new ones.
        a = board.get_user_entry("a")
        assert a is not None
        # The increment was sent, so it may have been applied; it was never retried.
        assert a["score"] in (1.0, 11.0)
        assert a["rank"] == (1 if a["score"] == 11.0 else 2)
        assert board.get_rank("b") == (2 if a["score"] == 11.0 else 1)
        assert board.get_rank("zz") is None
        assert board.get_size() == 2
        assert c.ping() is True


def test_killed_server_is_a_connection_error_then_recovers(fresh_redis_server: Any) -> None:
    server = fresh_redis_server
    with Client(host=server.host, port=server.port, socket_timeout=5) as c:
        board = RedisLeaderboard(c, key="lb")
        board.upsert_user("a", 1)
        assert c.stats()["reconnects"] == 0
        server.kill()
        start = time.monotonic()
        with pytest.raises(redis_leaderboard.ConnectionError):
            board.get_top()
        assert time.monotonic() - start < 5
        server.start()
        # The server kept no data (no persistence): the board starts empty again.
        assert board.get_top() == []
        assert board.upsert_user("b", 2) == {
            "rank": 1,
            "user_id": "b",
            "score": 2.0,
            "metadata": {},
            "trimmed_user_ids": [],
        }
        assert c.ping() is True
        assert c.stats()["reconnects"] >= 1


def test_killed_server_during_a_write_is_not_retried(fresh_redis_server: Any) -> None:
    server = fresh_redis_server
    with Client(host=server.host, port=server.port) as c:
        board = RedisLeaderboard(c, key="lb")
        board.increment_score("a", 1)
        server.kill()
        server.start()  # empty: no persistence
        # The pooled connection is dead. The client may notice before sending and reconnect,
        # or fail with ConnectionError; it must never send the increment twice.
        try:
            first: float = board.increment_score("a", 1)["score"]
        except redis_leaderboard.ConnectionError:
            first = 0.0
        assert first in (0.0, 1.0)
        assert board.increment_score("a", 1)["score"] == first + 1
        assert board.get_size() == 1
        assert c.stats()["reconnects"] >= 1


# --- threads ---


def test_eight_threads_share_one_client(client: Client, board_key: str, r: Any) -> None:
    board = RedisLeaderboard(client, key=board_key, max_entries=1000)
    threads_n, per_thread = 8, 200
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads_n)

    def work(t: int) -> None:
        try:
            barrier.wait()
            for i in range(per_thread):
                board.increment_score("shared", 1)
                board.increment_score(f"user-{(t + i) % 4}", 0.5, {"last": str(t)})
                board.increment_score(f"thread-{t}", 2)
                assert board.get_rank(f"thread-{t}") is not None
        except BaseException as exc:  # reported below
            errors.append(exc)

    before = client.stats()["round_trips"]
    threads = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    scores = dict(r.zrange(board_key, 0, -1, withscores=True))
    assert scores["shared"] == threads_n * per_thread
    for t in range(threads_n):
        assert scores[f"thread-{t}"] == 2 * per_thread
    for u in range(4):
        assert scores[f"user-{u}"] == threads_n * per_thread * 0.5 / 4
    assert len(scores) == 1 + threads_n + 4
    assert client.stats()["round_trips"] - before == threads_n * per_thread * 4
    assert client.stats()["connections"] <= threads_n + 1


CTRL_C_SCRIPT = """
import os, signal, sys, threading, time
import redis_leaderboard
# Python's own Ctrl+C handler, even when started with SIGINT ignored (a non-interactive shell's
# background job: Python then installs none).
signal.signal(signal.SIGINT, signal.default_int_handler)
client = redis_leaderboard.Client(port=int(sys.argv[1]))  # no timeout: waits without limit
client.ping()
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
started = time.monotonic()
try:
    client.execute_command("BLPOP", "a-list-nobody-pushes-to", "0")
except KeyboardInterrupt:
    print("interrupted", round(time.monotonic() - started, 1))
print("then", client.ping(), client.stats()["reconnects"])
"""


def assert_ctrl_c_interrupts(script: str, port: int) -> None:
    """The script's call is interrupted within 3 s, and the next call works on a new connection."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(port)], capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("interrupted ")
    assert float(lines[0].split()[1]) < 3
    assert lines[1] == "then True 1"


def test_ctrl_c_interrupts_a_call_waiting_without_timeout(redis_server: Any) -> None:
    # A user pressing Ctrl+C on a call that waits forever gets KeyboardInterrupt at once; the
    # connection, its reply now out of step, is replaced on the next call.
    assert_ctrl_c_interrupts(CTRL_C_SCRIPT, redis_server.port)


# The same, the signal handled on another thread (a Ctrl+C the kernel gives to a thread other
# than the waiting one, or one handled after the call released the GIL and before it began to
# wait): no EINTR reaches the waiting call, which still sees it within a fraction of a second.
CTRL_C_ELSEWHERE_SCRIPT = CTRL_C_SCRIPT.replace(
    "lambda: os.kill(os.getpid(), signal.SIGINT)",
    "lambda: signal.pthread_kill(threading.get_ident(), signal.SIGINT)",
)


def test_ctrl_c_handled_on_another_thread_still_interrupts_the_call(redis_server: Any) -> None:
    assert CTRL_C_ELSEWHERE_SCRIPT != CTRL_C_SCRIPT
    assert_ctrl_c_interrupts(CTRL_C_ELSEWHERE_SCRIPT, redis_server.port)


def test_a_forked_child_opens_its_own_connection(redis_server: Any, board_key: str) -> None:
    """A pooled connection made before fork() is never reused in the child: parent and child
    would read each other's replies."""
    client = Client(host=redis_server.host, port=redis_server.port)
    board = RedisLeaderboard(client, key=board_key, max_entries=10)
    board.upsert_user("parent", 1)
    connections = client.stats()["connections"]
    pid = os.fork()
    if pid == 0:  # the child: must not touch the parent's socket
        try:
            ok = (
                board.upsert_user("child", 2)["rank"] == 1
                and client.stats()["connections"] == connections + 1
            )
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent's pooled connection is still in step.
    assert board.get_rank("parent") == 2
    assert client.stats()["connections"] == connections
    client.close()


def test_one_operation_run_from_two_threads_runs_once(redis_server: Any, board_key: str) -> None:
    client = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    board = redis_leaderboard.RedisLeaderboard(client, key=board_key)
    for _ in range(50):
        operation = board._board.get_size()
        outcomes: list[object] = []

        def run(operation: object = operation, outcomes: list[object] = outcomes) -> None:
            try:
                outcomes.append(client.run(operation))
            except ValueError as error:
                outcomes.append(error)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(type(o).__name__ for o in outcomes) == ["ValueError", "int"]
    client.close()
