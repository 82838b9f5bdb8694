"""Launchers of the test topologies: Sentinel and Cluster (the installed package keeps only
the standalone server the demo's ``--embedded-redis`` needs, ``redis_leaderboard._redis_server``).

The binaries: ``$REDIS_LEADERBOARD_SENTINEL`` (:func:`find_sentinel`) and
``$REDIS_LEADERBOARD_CLI`` (:func:`find_cli`), each a path or a name on PATH, else found beside
or like the server (``$REDIS_LEADERBOARD_SERVER``, see ``_redis_server.find_server``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

from redis_leaderboard._redis_server import (
    INSTALL_HINT,
    SERVER_ENV,
    RedisServer,
    RedisServerError,
    TlsFiles,
    _from_env,
    find_server,
    free_port,
)

__all__ = [
    "CLI_ENV",
    "SENTINEL_ENV",
    "RedisCluster",
    "RedisClusterNode",
    "RedisSentinel",
    "find_cli",
    "find_sentinel",
]

SENTINEL_ENV = "REDIS_LEADERBOARD_SENTINEL"
CLI_ENV = "REDIS_LEADERBOARD_CLI"


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


class RedisSentinel(RedisServer):
    """A sentinel child on 127.0.0.1 (:func:`find_sentinel`: ``redis-sentinel``, or the server
    binary run with ``--sentinel``) watching ``service_name`` at ``primary_port``, with a
    configuration file of its own in its directory (Sentinel rewrites it). ``quorum``
    sentinels must agree the primary is down; ``down_after_ms`` and ``failover_timeout_ms``
    make a failover quick; ``primary_host`` is the primary's address (default: the sentinel's
    own, loopback). ``auth_user`` and ``auth_pass`` are the data nodes' credentials;
    ``password`` the sentinel's own.
    """

    def __init__(
        self,
        primary_port: int,
        *,
        primary_host: Optional[str] = None,
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
        self.primary_host = primary_host
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
                f"sentinel monitor {name} {self.primary_host or self.host} {self.primary_port} "
                f"{self.quorum}",
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
    that stops answering is failed over after about that long (plus the election).
    ``node_factory(index, **options)`` makes each node (default: a :class:`RedisClusterNode` of
    those options on loopback; ``tests/netns.py`` puts each in a network namespace)."""

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
        node_factory: Optional[Callable[..., RedisClusterNode]] = None,
    ) -> None:
        self.primaries = primaries
        self.replicas = replicas
        self.password = password
        self.tls = tls
        # With ``tls``: every node has a TLS port (``tls_port``) besides its plaintext one (for
        # administration), the cluster bus and replication go over TLS, and the nodes announce
        # their TLS ports (CLUSTER SHARDS ``tls-port``).
        tls_args = ["--tls-cluster", "yes", "--tls-replication", "yes"] if tls else []
        make = node_factory or (lambda _index, **options: RedisClusterNode(**options))
        self.nodes = [
            make(
                index,
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
            for index in range(primaries * (1 + replicas))
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
        from redis_leaderboard import _core

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
