"""Reads survive a dropped connection: a read (a request that writes nothing) whose reply was
lost is sent once more on a fresh connection, within the deadline it had; a write without a
submission id never is (it may have been applied).

Two real faults: a TCP proxy in front of a real redis-server that closes the client's
connection instead of forwarding one reply (the request did run), and connections killed with
CLIENT KILL from another connection, in a loop, on a standalone server and on a cluster.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, Callable

import pytest

import redis_leaderboard
from conftest import RedisServer
from launchers import RedisCluster
from redis_leaderboard import Client, ClusterClient, RedisLeaderboard, RollingLeaderboard
from redis_leaderboard import asyncio as rl_asyncio

# ---- A proxy that loses replies ----------------------------------------------------------------


def complete_requests(data: bytes) -> bool:
    """Whether `data` is whole RESP requests (arrays of bulk strings), none cut short."""
    at = 0
    while at < len(data):
        end = data.find(b"\r\n", at)
        if end < 0 or data[at : at + 1] != b"*":
            return end >= 0 and data[at : at + 1] != b"*"  # inline commands: whole lines
        count = int(data[at + 1 : end])
        at = end + 2
        for _ in range(count):
            end = data.find(b"\r\n", at)
            if end < 0:
                return False
            at = end + 2 + int(data[at + 1 : end]) + 2
            if at > len(data):
                return False
    return True


class DroppingProxy:
    """Forwards 127.0.0.1:<port> to a real server. While ``drops`` > 0, the reply to the next
    request a client sends is read from the server (so the request ran) and then, instead of
    being forwarded, the client's connection is closed. ``requests`` counts the requests (the
    client's writes) forwarded, a connection's handshake (its first write, HELLO) left out."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.drops = 0
        self.delay = 0.0  # seconds each reply (or drop) waits
        self.requests = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.host = "127.0.0.1"
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self.connections += 1
                self._sockets += [client, upstream]
            threading.Thread(target=self._serve, args=(client, upstream), daemon=True).start()

    def _serve(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while True:
                data = client.recv(1 << 16)
                if not data:
                    return
                while not complete_requests(data):  # a request longer than one recv (a script)
                    more = client.recv(1 << 16)
                    if not more:
                        return
                    data += more
                handshake = b"$5\r\nHELLO\r\n" in data[:64]
                with self._lock:
                    drop = self.drops > 0 and not handshake
                    if not handshake:
                        self.requests += 1
                    if drop:
                        self.drops -= 1
                upstream.sendall(data)
                reply = upstream.recv(1 << 20)  # the request ran: its reply (or a part) is here
                time.sleep(self.delay)
                if drop:
                    return
                client.sendall(reply)
                # The rest of a longer reply, without blocking on one that is complete.
                upstream.settimeout(0.02)
                try:
                    while True:
                        more = upstream.recv(1 << 20)
                        if not more:
                            return
                        client.sendall(more)
                except TimeoutError:
                    pass
                upstream.settimeout(None)
        except OSError:
            return
        finally:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def __enter__(self) -> DroppingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def proxy(redis_server: RedisServer) -> Iterator[DroppingProxy]:
    with DroppingProxy((redis_server.host, redis_server.port)) as p:
        yield p


def fill(redis_server: RedisServer, key: str, **options: Any) -> None:
    """Five players written directly (and every script cached on the server)."""
    with Client(host=redis_server.host, port=redis_server.port) as direct:
        board = RedisLeaderboard(direct, key=key, **options)
        for i, name in enumerate(["ada", "bob", "cy", "dee", "eve"]):
            board.upsert_user(name, 10 * (i + 1), {"name": name})
        # Every read once, so that the server has each script cached (no NOSCRIPT round trip).
        for read in READS.values():
            read(board)


READS: dict[str, Callable[[Any], Any]] = {
    "get_top": lambda b: b.get_top(3),
    "get_rank": lambda b: b.get_rank("bob"),
    "get_size": lambda b: b.get_size(),
    "get_user_entry": lambda b: b.get_user_entry("cy"),
    "get_user_metadata": lambda b: b.get_user_metadata("cy"),
    "get_around_rank": lambda b: b.get_around_rank(2, 3),
    "get_around_user": lambda b: b.get_around_user("cy", 3),
    "get_page": lambda b: b.get_page(1, 2),
    "get_entries": lambda b: b.get_entries(["ada", "zed"]),
    "get_by_score": lambda b: b.get_by_score(10, 30),
    "count_by_score": lambda b: b.count_by_score(10, 30),
    "rank_for_score": lambda b: b.rank_for_score(25),
    "get_percentile": lambda b: b.get_percentile("cy"),
    "get_histogram": lambda b: b.get_histogram(2),
    "list_all": lambda b: b.list_all(),
}


@pytest.mark.parametrize("ties", ["lexicographic", "first"])
@pytest.mark.parametrize("name", READS)
def test_a_read_whose_reply_was_lost_is_sent_again_once_sync(
    redis_server: RedisServer, proxy: DroppingProxy, name: str, ties: str
) -> None:
    key = f"retry:{uuid.uuid4().hex[:8]}"
    fill(redis_server, key, ties=ties)
    with Client(host=redis_server.host, port=redis_server.port) as direct:
        expected = READS[name](RedisLeaderboard(direct, key=key, ties=ties))
    with Client(host=proxy.host, port=proxy.port, socket_timeout=5) as client:
        board = RedisLeaderboard(client, key=key, ties=ties)
        READS[name](board)  # the connection is open and the board's options checked
        before = proxy.requests
        proxy.drops = 1
        assert READS[name](board) == expected
        assert proxy.requests - before == 2  # the lost one, and its second sending
        assert proxy.drops == 0
        # Lost twice in a row: one retry only, then the ConnectionError.
        proxy.drops = 2
        with pytest.raises(redis_leaderboard.ConnectionError):
            READS[name](board)
        assert READS[name](board) == expected


def test_a_read_is_retried_on_the_asyncio_client(
    redis_server: RedisServer, proxy: DroppingProxy
) -> None:
    key = f"retry:{uuid.uuid4().hex[:8]}"
    fill(redis_server, key)

    async def main() -> None:
        async with rl_asyncio.Client(host=proxy.host, port=proxy.port, socket_timeout=5) as c:
            board = rl_asyncio.RedisLeaderboard(c, key=key)
            assert await board.get_size() == 5
            for name in ("get_top", "get_rank", "get_page", "get_entries", "list_all"):
                before = proxy.requests
                proxy.drops = 1
                expected = await READS[name](board)
                assert expected == await READS[name](board)
                assert proxy.requests - before == 3, name
            proxy.drops = 2
            with pytest.raises(redis_leaderboard.ConnectionError):
                await board.get_top(3)
            assert len(await board.get_top(3)) == 3

    asyncio.run(main())


def test_a_write_without_an_id_is_never_sent_again(
    redis_server: RedisServer, proxy: DroppingProxy
) -> None:
    key = f"retry:{uuid.uuid4().hex[:8]}"
    fill(redis_server, key)
    with Client(host=proxy.host, port=proxy.port, socket_timeout=5) as client:
        board = RedisLeaderboard(client, key=key)
        assert board.get_size() == 5
        before = proxy.requests
        proxy.drops = 1
        with pytest.raises(redis_leaderboard.ConnectionError):
            board.increment_score("ada", 1)
        assert proxy.requests - before == 1
        proxy.drops = 1
        with pytest.raises(redis_leaderboard.ConnectionError):
            board.submit("bob", 5, mode="incr")
        assert board.get_user_entry("ada")["score"] == 11  # applied once, not twice
        assert board.get_user_entry("bob")["score"] == 25

    async def main() -> None:
        async with rl_asyncio.Client(host=proxy.host, port=proxy.port, socket_timeout=5) as c:
            aboard = rl_asyncio.RedisLeaderboard(c, key=key)
            proxy.drops = 1
            with pytest.raises(redis_leaderboard.ConnectionError):
                await aboard.increment_score("ada", 1)
            assert (await aboard.get_user_entry("ada"))["score"] == 12

    asyncio.run(main())


def test_a_write_with_a_submission_id_is_still_resent(
    redis_server: RedisServer, proxy: DroppingProxy
) -> None:
    key = f"retry:{uuid.uuid4().hex[:8]}"
    with Client(host=proxy.host, port=proxy.port, socket_timeout=5) as client:
        board = RedisLeaderboard(client, key=key)
        board.submit("ada", 1, submission_id="warm-up")
        proxy.drops = 1
        result = board.submit("ada", 5, mode="incr", submission_id="run-1")
        assert result["score"] == 6
        assert board.get_user_entry("ada")["score"] == 6


def test_an_event_read_and_a_rolling_window_read_are_retried(
    redis_server: RedisServer, proxy: DroppingProxy
) -> None:
    key = f"retry:{uuid.uuid4().hex[:8]}"
    with Client(host=proxy.host, port=proxy.port, socket_timeout=5) as client:
        board = RedisLeaderboard(client, key=key, events=True)
        board.upsert_user("ada", 1)
        stream = board.events(last_id="0", block=None)
        before = proxy.requests
        proxy.drops = 1
        events = stream.read()
        assert [e["user_id"] for e in events] == ["ada"]
        assert proxy.requests - before == 2

        window = RollingLeaderboard(
            client, key=f"{key}:7d", window=timedelta(days=7), bucket=timedelta(hours=1)
        )
        window.submit("ada", 3)
        assert window.get_top(1)[0]["score"] == 3
        window.submit("bob", 4)  # the next read refreshes the window first
        before = proxy.requests
        proxy.drops = 1
        assert [e["user_id"] for e in window.get_top(2)] == ["bob", "ada"]
        assert proxy.requests - before == 2


def test_a_retried_read_keeps_its_deadline(redis_server: RedisServer, proxy: DroppingProxy) -> None:
    # Each reply takes 0.3 s; the first is lost: the second sending would end at 0.6 s, past
    # the 0.5 s timeout, so the call ends at its deadline with TimeoutError (a retry with a new
    # deadline would have succeeded).
    key = f"retry:{uuid.uuid4().hex[:8]}"
    fill(redis_server, key)
    with Client(host=proxy.host, port=proxy.port, socket_timeout=0.5) as client:
        board = RedisLeaderboard(client, key=key)
        assert board.get_size() == 5
        proxy.delay = 0.3
        proxy.drops = 1
        started = time.monotonic()
        with pytest.raises(redis_leaderboard.TimeoutError):
            board.get_size()
        elapsed = time.monotonic() - started
        assert 0.45 < elapsed < 0.5 + 0.15
        proxy.delay = 0
        assert board.get_size() == 5


@pytest.mark.parametrize("api", ["sync", "asyncio"])
def test_a_script_sent_again_with_its_body_keeps_the_calls_deadline(
    redis_server: RedisServer, proxy: DroppingProxy, api: str
) -> None:
    # A server that lost its script cache (a failover to a replica, SCRIPT FLUSH, a restart)
    # answers the EVALSHA with NOSCRIPT; the script goes again with its body, in the same call.
    # With replies taking 0.3 s each the call would end at 0.6 s, past its 0.5 s timeout: it
    # ends at its deadline with TimeoutError (the body's sending had a new deadline of its own,
    # and the call succeeded at 0.6 s: found by tests/test_partitions.py, calls late after an
    # earlier test's failover had left the new primary without our scripts).
    key = f"noscript:{uuid.uuid4().hex[:8]}"
    fill(redis_server, key)
    flush = Client(host=redis_server.host, port=redis_server.port)

    def check(call: Callable[[], Any]) -> None:
        expected = call()  # connected, the script loaded
        assert len(expected) == 3
        flush.execute_command("SCRIPT", "FLUSH")
        proxy.delay = 0.3
        started = time.monotonic()
        with pytest.raises(redis_leaderboard.TimeoutError):
            call()
        elapsed = time.monotonic() - started
        assert 0.45 < elapsed < 0.5 + 0.15, elapsed
        proxy.delay = 0
        assert call() == expected

    if api == "sync":
        with Client(host=proxy.host, port=proxy.port, socket_timeout=0.5) as client:
            board = RedisLeaderboard(client, key=key)
            check(lambda: board.get_top(3))
    else:

        async def main() -> None:
            async with rl_asyncio.Client(
                host=proxy.host, port=proxy.port, socket_timeout=0.5
            ) as client:
                board = rl_asyncio.RedisLeaderboard(client, key=key)
                loop = asyncio.get_running_loop()

                def call() -> Any:
                    return asyncio.run_coroutine_threadsafe(board.get_top(3), loop).result()

                await loop.run_in_executor(None, check, call)

        asyncio.run(main())
    flush.close()


# ---- Connections killed from another connection, in a loop -------------------------------------


class Killer:
    """CLIENT KILL TYPE normal (not itself) on every `servers` every `interval` seconds."""

    def __init__(self, servers: list[Any], interval: float) -> None:
        self.servers = servers
        self.interval = interval
        self.kills = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import redis

        admins = [redis.Redis(host=s.host, port=s.port, socket_timeout=5) for s in self.servers]
        try:
            while not self._stop.wait(self.interval):
                for admin in admins:
                    self.kills += admin.execute_command(
                        "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"
                    )
        finally:
            for admin in admins:
                admin.close()

    def __enter__(self) -> Killer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def read_until(deadline: float, read: Callable[[], Any]) -> tuple[int, list[str]]:
    count, errors = 0, []
    while time.monotonic() < deadline:
        try:
            read()
        except redis_leaderboard.ConnectionError as e:
            errors.append(str(e))
        count += 1
    return count, errors


def test_reads_survive_connections_killed_in_a_loop(redis_server: RedisServer) -> None:
    key = f"retry:{uuid.uuid4().hex[:8]}"
    fill(redis_server, key)
    with Client(host=redis_server.host, port=redis_server.port, socket_timeout=5) as client:
        board = RedisLeaderboard(client, key=key)
        with Killer([redis_server], 0.03) as killer:
            count, errors = read_until(time.monotonic() + 2, lambda: board.get_top(5))
        assert killer.kills > 10
        assert count > 100
        assert errors == []

    async def main() -> tuple[int, list[str]]:
        async with rl_asyncio.Client(host=redis_server.host, port=redis_server.port) as c:
            aboard = rl_asyncio.RedisLeaderboard(c, key=key)
            count, errors = 0, []
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                try:
                    await aboard.get_page(1, 3)
                except redis_leaderboard.ConnectionError as e:
                    errors.append(str(e))
                count += 1
            return count, errors

    with Killer([redis_server], 0.03) as killer:
        count, errors = asyncio.run(main())
    assert killer.kills > 10
    assert count > 100
    assert errors == []


def test_cluster_reads_survive_connections_killed_in_a_loop(
    redis_cluster: RedisCluster, cluster_key: str
) -> None:
    with ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as client:
        board = RedisLeaderboard(client, key=cluster_key)
        for i in range(5):
            board.upsert_user(f"u{i}", i)
        with Killer(list(redis_cluster.nodes), 0.03) as killer:
            count, errors = read_until(time.monotonic() + 2, lambda: board.get_top(5))
        assert killer.kills > 10
        assert count > 100
        assert errors == []
