"""A private ``redis-server`` child process for the demo.

Started from PATH on a free port of 127.0.0.1 with its data in a temporary directory and no
persistence; stopped (and the directory removed) by :meth:`EmbeddedRedis.stop`. On Linux the
child also gets SIGTERM from the kernel if the demo dies without cleaning up, so it never
outlives the demo as an orphan.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

INSTALL_HINT = (
    "install Redis (Debian/Ubuntu: sudo apt-get install redis-server; Fedora: sudo dnf install "
    "redis; macOS: brew install redis) or point the demo at a running Redis with --redis-url"
)


class EmbeddedRedisError(RuntimeError):
    """The private redis-server could not be found or started."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _parent_death_signal() -> Optional[Callable[[], None]]:
    """A preexec_fn asking Linux to SIGTERM the child when the demo process dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:  # runs in the child between fork and exec
        prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


class EmbeddedRedis:
    """A ``redis-server`` child on 127.0.0.1, private to this process."""

    host = "127.0.0.1"

    def __init__(self, binary: Optional[str] = None) -> None:
        found = binary or shutil.which("redis-server")
        if found is None:
            raise EmbeddedRedisError(f"redis-server was not found on PATH: {INSTALL_HINT}")
        self.binary = found
        self.port = 0
        self.dir: Optional[str] = None
        self.proc: Optional[subprocess.Popen[bytes]] = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None else None

    @property
    def log_path(self) -> str:
        assert self.dir is not None
        return os.path.join(self.dir, "redis.log")

    def start(self, timeout: float = 10.0) -> None:
        """Start the server and wait until it answers PING (a few tries if a port is taken)."""
        self.dir = tempfile.mkdtemp(prefix="redis-leaderboard-demo-")
        last_error = ""
        for _attempt in range(5):
            self.port = free_port(self.host)
            try:
                self._start_once(timeout)
                return
            except EmbeddedRedisError as exc:
                last_error = str(exc)
                self._terminate()
        self.stop()
        raise EmbeddedRedisError(last_error)

    def _start_once(self, timeout: float) -> None:
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", self.host,
            "--dir", self.dir,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--logfile", self.log_path,
        ]  # fmt: skip
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # Its own session: a Ctrl+C in the terminal reaches the demo, which then stops
                # the server in order, rather than both at once.
                start_new_session=True,
                preexec_fn=_parent_death_signal(),
            )
        except OSError as exc:
            raise EmbeddedRedisError(f"cannot run {self.binary}: {exc}") from exc
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise EmbeddedRedisError(
                    f"redis-server exited at start (code {self.proc.returncode}): "
                    + self._log_tail()
                )
            if self._answers_ping():
                return
            time.sleep(0.02)
        raise EmbeddedRedisError(f"redis-server did not answer on port {self.port}")

    def _answers_ping(self) -> bool:
        with contextlib.suppress(OSError):
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        return False

    def _log_tail(self, lines: int = 5) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _terminate(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and remove its directory."""
        self._terminate()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
