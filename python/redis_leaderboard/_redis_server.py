"""A private ``redis-server`` child process: the demo's, the tests' and the benchmarks'.

The server binary is ``$REDIS_LEADERBOARD_SERVER`` if set (a path, or a name on PATH), else
``redis-server`` or ``valkey-server`` from PATH (:func:`find_server`; sentinels and the cluster
tool likewise: ``tests/launchers.py``), so the demo and the tests run on
whichever server a machine has, and the test suite runs against any server it is given.

Started on a free port of 127.0.0.1 (and, if asked, a unix socket) with its data in a
temporary directory and no persistence. :meth:`RedisServer.stop` stops it and keeps the
directory, so :meth:`RedisServer.start` can restart it on the same port; :meth:`cleanup` also
removes the directory. It runs in its own session (a Ctrl+C in the terminal reaches its parent,
which stops it in order), and on Linux it gets SIGTERM from the kernel if its parent dies
without cleaning up, so it never outlives it as an orphan. (The kernel watches the thread that
started it: start servers from a thread that outlives them, such as the main thread.)
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Union

__all__ = [
    "INSTALL_HINT",
    "SERVER_ENV",
    "RedisServer",
    "RedisServerError",
    "ServerVersion",
    "TlsFiles",
    "TlsUnsupported",
    "find_server",
    "free_port",
    "parse_server_version",
]

INSTALL_HINT = (
    "install Redis (Debian/Ubuntu: sudo apt-get install redis-server; Fedora: sudo dnf install "
    "redis; macOS: brew install redis)"
)
# Tries of a fresh port when the one picked was taken before the server bound it.
START_ATTEMPTS = 5


# Environment variables naming the binaries: a path, or a name looked up on PATH.
SERVER_ENV = "REDIS_LEADERBOARD_SERVER"


class RedisServerError(RuntimeError):
    """redis-server could not be found or started."""


class TlsUnsupported(RedisServerError):
    """The server was asked for a TLS port but was built without TLS."""


def _from_env(variable: str) -> Optional[str]:
    value = os.environ.get(variable)
    if not value:
        return None
    found = shutil.which(value)
    if found is None:
        raise RedisServerError(f"{variable}={value!r} is not an executable file or on PATH")
    return os.path.abspath(found)


def find_server() -> str:
    """The server binary: ``$REDIS_LEADERBOARD_SERVER``, else ``redis-server``, else
    ``valkey-server`` (Valkey-only machines have only ``valkey-*`` names) from PATH."""
    found = _from_env(SERVER_ENV) or shutil.which("redis-server") or shutil.which("valkey-server")
    if found is None:
        raise RedisServerError(
            f"neither redis-server nor valkey-server was found on PATH (or set {SERVER_ENV}): "
            + INSTALL_HINT
        )
    return found


@dataclass(frozen=True)
class ServerVersion:
    """What a server is: ``name`` (``"redis"`` or ``"valkey"``) and its real ``version``
    (INFO's ``valkey_version`` on Valkey, whose ``redis_version`` says 7.2.4 for compatibility).
    """

    name: str
    version: tuple[int, ...]

    def at_least(self, name: str, *version: int) -> bool:
        """Whether this is ``name`` at ``version`` or later (``at_least("redis", 7, 4)``)."""
        return self.name == name and self.version >= version

    def __str__(self) -> str:
        return f"{self.name} {'.'.join(map(str, self.version))}"


def parse_server_version(info: Union[str, bytes, Mapping[str, Any]]) -> ServerVersion:
    """The :class:`ServerVersion` in ``INFO server``'s reply (text, or a mapping such as
    redis-py's)."""
    if isinstance(info, bytes):
        info = info.decode()
    if isinstance(info, str):
        info = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    fields = {str(k): str(v).strip() for k, v in info.items()}
    if "valkey_version" in fields:
        name, text = "valkey", fields["valkey_version"]
    else:
        name, text = fields.get("server_name", "redis"), fields["redis_version"]
    version = tuple(int(part) for part in text.split(".") if part.isdigit())
    return ServerVersion(name, version)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _parent_death_signal() -> Optional[Callable[[], None]]:
    """A preexec_fn asking Linux to SIGTERM the child when its parent dies."""
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


@dataclass(frozen=True)
class TlsFiles:
    """A server's TLS files (PEM): its certificate and key, and the CA that client
    certificates must come from (``auth_clients``: ``tls-auth-clients yes``)."""

    cert_file: str
    key_file: str
    ca_file: str
    auth_clients: bool = False


class RedisServer:
    """A ``redis-server`` child on 127.0.0.1, private to this process (``binary``: default
    :func:`find_server`).

    ``password`` sets ``requirepass``; ``unix_socket`` adds a socket at :attr:`unix_path`;
    ``tls`` adds a TLS port, :attr:`tls_port` (the plaintext port stays, for readiness checks
    and administration); ``extra_args`` go on the command line as they are
    (``["--maxmemory", "10mb"]``).
    """

    host = "127.0.0.1"

    def __init__(
        self,
        *,
        binary: Optional[str] = None,
        password: Optional[str] = None,
        unix_socket: bool = False,
        tls: Optional[TlsFiles] = None,
        extra_args: Sequence[str] = (),
        dir_prefix: str = "redis-leaderboard-",
        avoid_ports: Sequence[int] = (),
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.binary = binary or find_server()
        # Variables added to the server's environment (the tests' clock: tests/server_clock.py).
        self.env = dict(env or {})
        self.password = password
        self.unix_socket = unix_socket
        self.tls = tls
        self.tls_port = 0
        self.extra_args = list(extra_args)
        self.dir_prefix = dir_prefix
        # Ports the first start must not pick: one its caller is about to listen on (the demo's).
        self.avoid_ports = frozenset(avoid_ports)
        self.port = 0  # chosen by the first start, kept by restarts
        self.dir: Optional[str] = None
        self.proc: Optional[subprocess.Popen[bytes]] = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}{self.host}:{self.port}/0"

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None else None

    @property
    def log_path(self) -> str:
        assert self.dir is not None
        return os.path.join(self.dir, "redis.log")

    @property
    def unix_path(self) -> str:
        """The unix socket (``unix_socket=True``), in the server's directory."""
        assert self.dir is not None and self.unix_socket
        return os.path.join(self.dir, "redis.sock")

    def start(self, timeout: float = 10.0) -> None:
        """Start the server and wait until it answers PING. The first start picks a free port
        (another if that one is taken meanwhile); a restart reuses it."""
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix=self.dir_prefix)
        restart = bool(self.port)
        last_error = ""
        for _attempt in range(1 if restart else START_ATTEMPTS):
            if not restart:
                self.port = self._free_port()
                if self.tls is not None:
                    self.tls_port = self._free_port()
            try:
                self._start_once(timeout)
                return
            except TlsUnsupported:
                self.cleanup()
                self.port = 0
                raise
            except RedisServerError as exc:
                last_error = str(exc)
                self.stop()
        if not restart:
            self.cleanup()
            self.port = 0
        raise RedisServerError(last_error)

    def _free_port(self) -> int:
        while True:
            port = free_port(self.host)
            if port not in self.avoid_ports:
                return port

    def _command(self) -> list[str]:
        assert self.dir is not None
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
        if self.unix_socket:
            args += ["--unixsocket", self.unix_path, "--unixsocketperm", "700"]
        if self.password:
            args += ["--requirepass", self.password]
        if self.tls is not None:
            args += [
                "--tls-port", str(self.tls_port),
                "--tls-cert-file", self.tls.cert_file,
                "--tls-key-file", self.tls.key_file,
                "--tls-ca-cert-file", self.tls.ca_file,
                "--tls-auth-clients", "yes" if self.tls.auth_clients else "no",
            ]  # fmt: skip
        return args + self.extra_args

    def _start_once(self, timeout: float) -> None:
        try:
            self.proc = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_parent_death_signal(),
                env={**os.environ, **self.env} if self.env else None,
            )
        except OSError as exc:
            raise RedisServerError(f"cannot run {self.binary}: {exc}") from exc
        name = os.path.basename(self.binary)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self._log_tail()
                if "TLS support" in log:  # "Failed finding TLS support."
                    raise TlsUnsupported(f"{self.binary} was built without TLS")
                raise RedisServerError(
                    f"{name} exited at start (code {self.proc.returncode}): {log}"
                )
            if self._answers_ping():
                return
            time.sleep(0.02)
        raise RedisServerError(f"{name} did not answer on port {self.port}")

    def _answers_ping(self) -> bool:
        with contextlib.suppress(OSError):
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                reply = s.recv(64)
                # With a password the server answers, refusing: that is ready too.
                return reply.startswith(b"+PONG") or reply.startswith(b"-NOAUTH")
        return False

    def _log_tail(self, lines: int = 5) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"

    def version(self) -> str:
        """``redis-server --version``'s ``v=`` field (``7.0.15``; Valkey's real version)."""
        out = subprocess.run([self.binary, "--version"], capture_output=True, text=True).stdout
        fields = dict(part.split("=", 1) for part in out.split() if "=" in part)
        return fields.get("v", out.strip())

    def server_version(self) -> ServerVersion:
        """The running server's name and real version, from ``INFO server``."""
        from ._core import Client

        with Client(self.host, self.port, password=self.password, socket_timeout=5) as c:
            return parse_server_version(c.execute_command("INFO", "server"))

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 10 s), waiting for the exit; the directory stays."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # in case it was paused
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
        """SIGCONT, after :meth:`pause`."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def cleanup(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
