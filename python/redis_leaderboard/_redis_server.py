"""A private ``redis-server`` child process: the demo's, the tests' and the benchmarks'.

The server binary is ``$REDIS_LEADERBOARD_SERVER`` if set (a path, or a name on PATH), else
``redis-server`` or ``valkey-server`` from PATH (:func:`find_server`; sentinels and the cluster
tool likewise: :func:`find_sentinel`, :func:`find_cli`), so the demo and the tests run on
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
    "CLI_ENV",
    "INSTALL_HINT",
    "SENTINEL_ENV",
    "SERVER_ENV",
    "RedisCluster",
    "RedisClusterNode",
    "RedisSentinel",
    "RedisServer",
    "RedisServerError",
    "ServerVersion",
    "TlsFiles",
    "TlsUnsupported",
    "find_cli",
    "find_sentinel",
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
SENTINEL_ENV = "REDIS_LEADERBOARD_SENTINEL"
CLI_ENV = "REDIS_LEADERBOARD_CLI"


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


def find_sentinel() -> list[str]:
    """The command (without its configuration file) that starts a sentinel:
    ``$REDIS_LEADERBOARD_SENTINEL``; else, when ``$REDIS_LEADERBOARD_SERVER`` names the server,
    that server with ``--sentinel``; else ``redis-sentinel`` or ``valkey-sentinel`` from PATH;
    else the server found with ``--sentinel`` (the server binary is the sentinel's too)."""
    named = _from_env(SENTINEL_ENV)
    if named is not None:
        return [named]
    if os.environ.get(SERVER_ENV):
        return [find_server(), "--sentinel"]
    found = shutil.which("redis-sentinel") or shutil.which("valkey-sentinel")
    return [found] if found is not None else [find_server(), "--sentinel"]


def find_cli(server: Optional[str] = None) -> str:
    """The command-line tool that creates clusters: ``$REDIS_LEADERBOARD_CLI``; else a
    ``redis-cli`` or ``valkey-cli`` beside ``server`` (default :func:`find_server`); else
    either from PATH (any version creates any server's cluster)."""
    named = _from_env(CLI_ENV)
    if named is not None:
        return named
    where = os.path.dirname(server or find_server())
    for name in ("redis-cli", "valkey-cli"):
        beside = os.path.join(where, name)
        if os.access(beside, os.X_OK) and os.path.isfile(beside):
            return beside
    found = shutil.which("redis-cli") or shutil.which("valkey-cli")
    if found is None:
        raise RedisServerError(
            f"neither redis-cli nor valkey-cli was found (or set {CLI_ENV}): {INSTALL_HINT}"
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
    ) -> None:
        self.binary = binary or find_server()
        self.password = password
        self.unix_socket = unix_socket
        self.tls = tls
        self.tls_port = 0
        self.extra_args = list(extra_args)
        self.dir_prefix = dir_prefix
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
                self.port = free_port(self.host)
                if self.tls is not None:
                    self.tls_port = free_port(self.host)
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
        from . import _core

        with _core.Client(self.host, self.port, password=self.password, socket_timeout=5) as c:
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


class RedisSentinel(RedisServer):
    """A sentinel child on 127.0.0.1 (:func:`find_sentinel`: ``redis-sentinel``, or the server
    binary run with ``--sentinel``) watching ``service_name`` at ``primary_port``, with a
    configuration file of its own in its directory (Sentinel rewrites it). ``quorum``
    sentinels must agree the primary is down; ``down_after_ms`` and ``failover_timeout_ms``
    make a failover quick. ``auth_user`` and ``auth_pass`` are the data nodes' credentials;
    ``password`` the sentinel's own.
    """

    def __init__(
        self,
        primary_port: int,
        *,
        service_name: str = "mymaster",
        quorum: int = 2,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 5000,
        auth_user: Optional[str] = None,
        auth_pass: Optional[str] = None,
        password: Optional[str] = None,
        dir_prefix: str = "redis-leaderboard-sentinel-",
    ) -> None:
        binary, *self.sentinel_args = find_sentinel()
        super().__init__(binary=binary, password=password, dir_prefix=dir_prefix)
        self.primary_port = primary_port
        self.service_name = service_name
        self.quorum = quorum
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.auth_user = auth_user
        self.auth_pass = auth_pass

    def _command(self) -> list[str]:
        assert self.dir is not None
        config = os.path.join(self.dir, "sentinel.conf")
        if not os.path.exists(config):  # a restart keeps what Sentinel rewrote
            name = self.service_name
            lines = [
                f"port {self.port}",
                f"bind {self.host}",
                f"dir {self.dir}",
                f"logfile {self.log_path}",
                "daemonize no",
                f"sentinel monitor {name} {self.host} {self.primary_port} {self.quorum}",
                f"sentinel down-after-milliseconds {name} {self.down_after_ms}",
                f"sentinel failover-timeout {name} {self.failover_timeout_ms}",
                f"sentinel parallel-syncs {name} 1",
            ]
            if self.auth_user:
                lines.append(f"sentinel auth-user {name} {self.auth_user}")
            if self.auth_pass:
                lines.append(f"sentinel auth-pass {name} {self.auth_pass}")
            if self.password:
                lines.append(f"requirepass {self.password}")
            Path(config).write_text("\n".join(lines) + "\n")
        return [self.binary, config, *self.sentinel_args]


class RedisClusterNode(RedisServer):
    """A ``redis-server`` with ``--cluster-enabled yes``: its cluster bus on a free port of its
    own (:attr:`bus_port`, kept by restarts) and its ``nodes.conf`` in its directory, so a
    restarted node rejoins its cluster."""

    def __init__(self, *, node_timeout_ms: int = 1000, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.node_timeout_ms = node_timeout_ms
        self.bus_port = 0

    def _command(self) -> list[str]:
        if not self.bus_port:
            self.bus_port = free_port(self.host)
        return [
            *super()._command(),
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(self.node_timeout_ms),
            "--cluster-port", str(self.bus_port),
            # A replica whose primary died takes over however long it was cut off.
            "--cluster-replica-validity-factor", "0",
            "--cluster-allow-replica-migration", "no",
        ]  # fmt: skip


class RedisCluster:
    """A Redis Cluster on loopback: ``primaries`` primaries with ``replicas`` replicas each
    (``redis-cli --cluster create``, :func:`find_cli`), every node a :class:`RedisClusterNode`
    in its own temporary directory. ``node_timeout_ms`` is ``cluster-node-timeout``: a primary
    that stops answering is failed over after about that long (plus the election)."""

    def __init__(
        self,
        primaries: int = 3,
        replicas: int = 1,
        *,
        node_timeout_ms: int = 1000,
        password: Optional[str] = None,
        tls: Optional[TlsFiles] = None,
        extra_args: Sequence[str] = (),
        dir_prefix: str = "redis-leaderboard-cluster-",
    ) -> None:
        self.primaries = primaries
        self.replicas = replicas
        self.password = password
        self.tls = tls
        # With ``tls``: every node has a TLS port (``tls_port``) besides its plaintext one (for
        # administration), the cluster bus and replication go over TLS, and the nodes announce
        # their TLS ports (CLUSTER SHARDS ``tls-port``).
        tls_args = ["--tls-cluster", "yes", "--tls-replication", "yes"] if tls else []
        self.nodes = [
            RedisClusterNode(
                node_timeout_ms=node_timeout_ms,
                password=password,
                tls=tls,
                extra_args=[
                    *(["--masterauth", password] if password else []),
                    *tls_args,
                    *extra_args,
                ],
                dir_prefix=dir_prefix,
            )
            for _ in range(primaries * (1 + replicas))
        ]
        self.redis_cli = find_cli(self.nodes[0].binary)

    @property
    def host(self) -> str:
        return RedisServer.host

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        return [(node.host, node.port) for node in self.nodes if node.running()]

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        node = self.nodes[0]
        return f"redis://{auth}{node.host}:{node.port}?cluster=true"

    @property
    def tls_startup_nodes(self) -> list[tuple[str, int]]:
        """The running nodes' TLS ports (a cluster started with ``tls``)."""
        return [(node.host, node.tls_port) for node in self.nodes if node.running()]

    def start(self, timeout: float = 30.0) -> None:
        """Start every node, create the cluster and wait until every node serves it."""
        try:
            for node in self.nodes:
                node.start()
            args = [self.redis_cli, "--cluster", "create"]
            args += [f"{node.host}:{node.port}" for node in self.nodes]
            args += ["--cluster-replicas", str(self.replicas), "--cluster-yes"]
            if self.password:
                args += ["-a", self.password, "--no-auth-warning"]
            done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
            if done.returncode != 0:
                raise RedisServerError(f"redis-cli --cluster create failed: {done.stdout[-500:]}")
            self.wait_until_healthy(timeout)
        except BaseException:
            self.cleanup()
            raise

    def node_command(self, node: RedisServer, *args: str | bytes | int | float) -> Any:
        """One command to one node (a plain client; error replies raise)."""
        from . import _core

        with _core.Client(node.host, node.port, password=self.password, socket_timeout=5) as c:
            reply = c.execute_command(*args)
        return reply.decode() if isinstance(reply, bytes) else reply

    def node_at(self, port: int) -> RedisClusterNode:
        for node in self.nodes:
            if node.port == port:
                return node
        raise KeyError(port)

    def role(self, node: RedisServer) -> str:
        """``"master"`` or ``"slave"`` (INFO replication)."""
        info = str(self.node_command(node, "INFO", "replication"))
        return "master" if "role:master" in info else "slave"

    def wait_until_healthy(self, timeout: float = 30.0) -> None:
        """Until every running node says ``cluster_state:ok``, knows every running node, sees
        ``primaries`` primaries serving all 16384 slots and (for replicas) an up link."""
        deadline = time.monotonic() + timeout
        last = ""
        running = [node for node in self.nodes if node.running()]
        while time.monotonic() < deadline:
            try:
                healthy = True
                for node in running:
                    info = str(self.node_command(node, "CLUSTER", "INFO"))
                    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
                    replication = str(self.node_command(node, "INFO", "replication"))
                    if (
                        fields.get("cluster_state") != "ok"
                        or fields.get("cluster_slots_ok") != "16384"
                        or int(fields.get("cluster_known_nodes", 0)) < len(running)
                        or int(fields.get("cluster_size", 0)) != self.primaries
                        or (
                            "role:slave" in replication
                            and "master_link_status:up" not in replication
                        )
                    ):
                        healthy = False
                        last = f"{node.port}: {fields}"
                        break
                if healthy:
                    return
            except Exception as exc:  # a node still starting
                last = str(exc)
            time.sleep(0.05)
        raise RedisServerError(f"the cluster did not become healthy: {last}")

    def primaries_running(self) -> list[RedisClusterNode]:
        return [node for node in self.nodes if node.running() and self.role(node) == "master"]

    def owner(self, slot: int) -> RedisClusterNode:
        """The primary serving ``slot``, as the running nodes say (CLUSTER SLOTS)."""
        node = next(node for node in self.nodes if node.running())
        for first, last, primary, *_ in self.node_command(node, "CLUSTER", "SLOTS"):
            if first <= slot <= last:
                return self.node_at(int(primary[1]))
        raise KeyError(slot)

    def migrate_slot(
        self,
        slot: int,
        target: RedisClusterNode,
        *,
        keys_per_migrate: int = 10,
        pause: float = 0.0,
    ) -> int:
        """Move ``slot`` to ``target`` as ``redis-cli --cluster reshard`` does: IMPORTING on the
        target, MIGRATING on the source, the keys by ``MIGRATE ... KEYS`` (``keys_per_migrate``
        at a time, sleeping ``pause`` between), then ``SETSLOT NODE`` on both and on every other
        primary. Returns how many keys moved."""
        source = self.owner(slot)
        if source is target:
            return 0
        source_id = self.node_command(source, "CLUSTER", "MYID")
        target_id = self.node_command(target, "CLUSTER", "MYID")
        self.node_command(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        self.node_command(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        moved = 0
        while True:
            keys = self.node_command(source, "CLUSTER", "GETKEYSINSLOT", slot, keys_per_migrate)
            if not keys:
                break
            auth = ["AUTH", self.password] if self.password else []
            self.node_command(
                source,
                "MIGRATE",
                target.host,
                target.port,
                "",
                0,
                5000,
                *auth,
                "KEYS",
                *keys,
            )
            moved += len(keys)
            if pause:
                time.sleep(pause)
        for node in [target, source, *self.primaries_running()]:
            self.node_command(node, "CLUSTER", "SETSLOT", slot, "NODE", target_id)
        return moved

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()

    def __enter__(self) -> RedisCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
