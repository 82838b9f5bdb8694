"""Shared fixtures: a private redis-server for the whole test session.

Every test talks to a real ``redis-server`` started here on a free port, in a temporary
directory, and stopped at the end. The machine's own Redis (port 6379) is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The guide's reference algorithm lives in benchmarks/ and is shared with the tests.
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A redis-server child process with its data in a temporary directory."""

    def __init__(self, *, password: Optional[str] = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.exit(
                "redis-server not found on PATH: install it (apt-get install -y redis-server)",
                returncode=2,
            )
        self.binary = binary
        self.password = password
        self.host = "127.0.0.1"
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="redis-leaderboard-test-")
        self.unix_path = os.path.join(self.dir, "redis.sock")
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.start()

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}{self.host}:{self.port}/0"

    def start(self) -> None:
        """Start (or restart, on the same port) the server and wait until it answers PING."""
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", self.host,
            "--unixsocket", self.unix_path,
            "--unixsocketperm", "700",
            "--dir", self.dir,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--logfile", os.path.join(self.dir, "redis.log"),
        ]  # fmt: skip
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = Path(self.dir, "redis.log")
                text = log.read_text() if log.exists() else ""
                raise RuntimeError(f"redis-server exited at start:\n{text}")
            with contextlib.suppress(OSError):
                with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64):
                        return
            time.sleep(0.02)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # in case a test left it paused
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: the server vanishes without closing connections cleanly."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def pause(self) -> None:
        """SIGSTOP: the server keeps its sockets open but answers nothing."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def redis_py(self, **kwargs: object):  # -> redis.Redis
        """A redis-py client on this server (decode_responses, as the guide uses)."""
        import redis

        return redis.Redis(
            host=self.host,
            port=self.port,
            password=self.password,
            decode_responses=True,
            **kwargs,  # type: ignore[arg-type]
        )


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """The session's shared private redis-server."""
    server = RedisServer()
    yield server
    server.cleanup()


@pytest.fixture
def fresh_redis_server() -> Iterator[RedisServer]:
    """A private redis-server for one test: for tests that kill, pause or restart it."""
    server = RedisServer()
    yield server
    server.cleanup()


@pytest.fixture
def password_redis_server() -> Iterator[RedisServer]:
    """A private redis-server that requires a password."""
    server = RedisServer(password="s3cret-pass")
    yield server
    server.cleanup()


@pytest.fixture
def board_key(redis_server: RedisServer) -> Iterator[str]:
    """A board key unique to the test; the board and its metadata hashes are removed after."""
    key = f"test:{uuid.uuid4().hex[:12]}"
    yield key
    r = redis_server.redis_py()
    try:
        names = list(r.scan_iter(match=f"{key}*", count=1000))
        if names:
            r.delete(*names)
    finally:
        r.close()


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[object]:
    """A redis_leaderboard.Client on the session's server."""
    import redis_leaderboard

    c = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    yield c
    c.close()


@pytest.fixture
def board(client: object, board_key: str) -> object:
    """A RedisLeaderboard with the guide's default max_entries=100 on a fresh key."""
    import redis_leaderboard

    return redis_leaderboard.RedisLeaderboard(client, key=board_key, max_entries=100)
