"""Hosts in network namespaces, and a network between them that the tests can break.

Every host but the client is a namespace of its own (``ip netns``) holding one veth, linked to a
router namespace that forwards between them (``ip_forward``): the network. The client is the
test process itself, in the root namespace, linked to the router by a veth too, with a route to
the hosts' subnet. A host ``k`` is ``10.S.k.2``, its router side ``10.S.k.1`` (``S`` picked per
run among prefixes no route uses).

What the network does to packets is decided in the router, in its forward hook, so every host's
own stack stays as it is (a packet dropped in a host's OUTPUT hook fails the send with EPERM,
which a real partition never does):

- a partition between two hosts drops every packet between them, silently, both ways (nftables;
  no RST, no ICMP): their TCP connections stall and retransmit, as across a cut link;
- loss drops a share of the packets between two hosts (nftables ``numgen random``);
- latency holds each packet between two hosts for a while before forwarding it. This kernel has
  no ``sch_netem`` (nor ``sch_fq``, which would honour a BPF-set departure time), so the router
  queues those packets to user space (iptables ``NFQUEUE``: the kernel's ``nft queue`` is not
  built either) where ``netns_delay.py``, a process inside the router namespace, gives each its
  verdict (accept) once its delay has passed. The packets themselves wait (in the kernel's
  queue), so TCP sees the longer round trip: its RTO, retransmissions and ACKs are the real ones.
  :meth:`Network.measure_rtt` measures what it adds.

Servers run in their hosts' namespaces (``ip netns exec NS redis-server ...``) through
:class:`InNamespace`, a mixin of the launchers' server classes. Names carry the test process's
pid so parallel runs do not collide; :meth:`Network.cleanup` kills the processes and deletes
every namespace (their veths go with them) whatever happened before.

Needs root, ``ip``, ``nft`` and ``iptables`` (Debian: ``apt-get install -y iproute2 nftables
iptables``): :func:`unavailable` says why not, for a skip reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Optional

from launchers import RedisClusterNode, RedisSentinel
from redis_leaderboard._redis_server import RedisServer

__all__ = ["Host", "InNamespace", "Network", "unavailable"]

# The delaying process (NFQUEUE): a script of its own, importing nothing of the package (under
# .ci/sanitize the package's core needs ASan preloaded, which the tools here run without).
DELAYER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns_delay.py")
PORT = 6379  # every host is a namespace of its own: the usual ports are free there
QUEUE_NUM = 7  # the NFQUEUE number of the delayed packets (per router namespace)


def _environment() -> dict[str, str]:
    """This process's environment without LD_PRELOAD: .ci/sanitize preloads ASan for the
    package's core, and the tools run here are not what is under test (``ip`` itself trips it)."""
    return {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}


# A command prefix that drops LD_PRELOAD (see _environment) for a child started by others.
NO_PRELOAD = ["env", "-u", "LD_PRELOAD"]


def _run(*args: str, input: Optional[str] = None, check: bool = True) -> str:
    done = subprocess.run(
        list(args), capture_output=True, text=True, input=input, timeout=30, env=_environment()
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def unavailable() -> Optional[str]:
    """Why these tests cannot run here (a skip reason), or None."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux's"
    if os.geteuid() != 0:
        return "network namespaces, veths and nftables need root"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables"), ("iptables", "iptables")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install -y {package})"
    probe = f"rlprobe{os.getpid()}"
    try:
        _run("ip", "netns", "add", probe)
    except RuntimeError as exc:
        return f"ip netns add failed: {exc}"
    try:
        _run("ip", "netns", "exec", probe, "nft", "add", "table", "inet", "probe")
        _run("ip", "netns", "exec", probe, "iptables", "-A", "FORWARD", "-j", "NFQUEUE",
             "--queue-num", "1")  # fmt: skip
    except RuntimeError as exc:
        return f"nftables or iptables' NFQUEUE does not work in a namespace: {exc}"
    finally:
        _run("ip", "netns", "del", probe, check=False)
    return None


def _free_prefix() -> int:
    """A second octet S such that no route of the root namespace is in 10.S.0.0/16."""
    routes = _run("ip", "-4", "route", "show", "table", "all")
    used = {line.split()[0] for line in routes.splitlines() if line.strip()}
    start = 100 + os.getpid() % 100
    for offset in range(150):
        s = 100 + (start - 100 + offset) % 150
        if not any(r.startswith(f"10.{s}.") for r in used):
            return s
    raise RuntimeError("no free 10.S.0.0/16 prefix")


def sweep_stale() -> None:
    """Namespaces left by a run that died without cleaning up (SIGKILL): those named for a pid
    that no longer runs, with their processes, are removed."""
    for line in _run("ip", "netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        match = re.fullmatch(r"rl(\d+)-.+", name)
        if not match:
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # its run is alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        for pid in _run("ip", "netns", "pids", name, check=False).split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        _run("ip", "netns", "del", name, check=False)


class Host:
    """One host: ``name``, its namespace ``netns`` (None: the client, the root namespace) and
    its address ``ip``."""

    def __init__(self, name: str, netns: Optional[str], ip: str) -> None:
        self.name = name
        self.netns = netns
        self.ip = ip

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.ip})"


class Network:
    """A router namespace and the hosts linked to it; the client is host 0, the root
    namespace. Use as a context manager, or call :meth:`cleanup` in a ``finally``."""

    def __init__(self) -> None:
        sweep_stale()
        self.tag = f"rl{os.getpid()}"  # its links' names: at most 15 characters
        self.prefix = _free_prefix()
        self.router = f"{self.tag}-router"
        self.hosts: dict[str, Host] = {}
        self.namespaces: list[str] = []
        self.root_links: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.partitions: set[frozenset[str]] = set()
        self.losses: dict[frozenset[str], int] = {}
        self.delayer: Optional[subprocess.Popen[bytes]] = None
        self.delayed: set[frozenset[str]] = set()
        try:
            self._add_namespace(self.router)
            self._exec_router("sysctl", "-qw", "net.ipv4.ip_forward=1")
            self._exec_router(
                "nft", "-f", "-",
                input=f"table inet {self.tag} {{\n"
                "  chain forward { type filter hook forward priority -10; policy accept; }\n"
                "}\n",
            )  # fmt: skip
            self.client = self._link("client", None)
            _run("ip", "route", "add", f"10.{self.prefix}.0.0/16", "via", self._router_ip(0))
        except BaseException:
            self.cleanup()
            raise

    # --- building --------------------------------------------------------------------------

    def _exec_router(self, *args: str, input: Optional[str] = None) -> str:
        return _run("ip", "netns", "exec", self.router, *args, input=input)

    def _add_namespace(self, name: str) -> None:
        _run("ip", "netns", "add", name)
        self.namespaces.append(name)
        _run("ip", "-n", name, "link", "set", "lo", "up")

    def _router_ip(self, index: int) -> str:
        return f"10.{self.prefix}.{index}.1"

    def _link(self, name: str, netns: Optional[str]) -> Host:
        index = len(self.hosts)
        ip = f"10.{self.prefix}.{index}.2"
        outer = f"{self.tag}r{index}"  # the router's end (at most 15 characters)
        inner = f"{self.tag}h{index}" if netns is None else "eth0"
        _run("ip", "link", "add", outer, "netns", self.router, "type", "veth", "peer", "name",
             inner, *(["netns", netns] if netns else []))  # fmt: skip
        if netns is None:
            self.root_links.append(inner)
        _run("ip", "-n", self.router, "addr", "add", f"{self._router_ip(index)}/24", "dev", outer)
        _run("ip", "-n", self.router, "link", "set", outer, "up")
        where = ["-n", netns] if netns else []
        _run("ip", *where, "addr", "add", f"{ip}/24", "dev", inner)
        _run("ip", *where, "link", "set", inner, "up")
        if netns:
            _run("ip", *where, "route", "add", "default", "via", self._router_ip(index))
        host = Host(name, netns, ip)
        self.hosts[name] = host
        return host

    def add_host(self, name: str) -> Host:
        """A new host ``name`` in a namespace of its own, linked to the router."""
        netns = f"{self.tag}-{name}"
        self._add_namespace(netns)
        return self._link(name, netns)

    def spawn(self, host: Host, args: list[str]) -> subprocess.Popen[bytes]:
        """A process in ``host``'s namespace, killed by :meth:`cleanup`."""
        prefix = ["ip", "netns", "exec", host.netns] if host.netns else []
        proc = subprocess.Popen(
            [*prefix, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True, env=_environment(),
        )  # fmt: skip
        self.processes.append(proc)
        return proc

    # --- breaking --------------------------------------------------------------------------

    def _pair(self, a: Host, b: Host) -> frozenset[str]:
        return frozenset((a.ip, b.ip))

    def _apply(self) -> None:
        """The router's forward chain, rewritten at once (one nft transaction)."""
        rules = []
        for pair in sorted(self.partitions, key=sorted):
            x, y = sorted(pair)
            rules += [f"ip saddr {x} ip daddr {y} drop", f"ip saddr {y} ip daddr {x} drop"]
        for pair, percent in sorted(self.losses.items(), key=lambda kv: sorted(kv[0])):
            x, y = sorted(pair)
            for s, d in ((x, y), (y, x)):
                rules.append(
                    f"ip saddr {s} ip daddr {d} counter numgen random mod 100 < {percent} "
                    "counter drop"
                )
        script = f"flush chain inet {self.tag} forward\n" + "".join(
            f"add rule inet {self.tag} forward {rule}\n" for rule in rules
        )
        self._exec_router("nft", "-f", "-", input=script)

    def partition(self, side: list[Host], other: list[Host]) -> None:
        """Drop every packet between a host of ``side`` and a host of ``other``."""
        for a in side:
            for b in other:
                self.partitions.add(self._pair(a, b))
        self._apply()

    def heal(self) -> None:
        """Every partition gone (loss and latency stay)."""
        self.partitions.clear()
        self._apply()

    def lose(self, a: Host, b: Host, percent: int) -> None:
        """Drop ``percent`` % of the packets between ``a`` and ``b``, each way, at random."""
        self.losses[self._pair(a, b)] = percent
        self._apply()

    def loss_counters(self, a: Host, b: Host) -> tuple[int, int]:
        """(packets dropped, packets seen) by :meth:`lose`'s rules between ``a`` and ``b``, both
        ways, since the chain was last rewritten."""
        dropped = seen = 0
        listing = self._exec_router("nft", "list", "chain", "inet", self.tag, "forward")
        for line in listing.splitlines():
            if "numgen" not in line or a.ip not in line or b.ip not in line:
                continue
            counts = [int(part.split()[0]) for part in line.split("counter packets ")[1:]]
            seen += counts[0]
            dropped += counts[1]
        return dropped, seen

    def delay(self, a: Host, b: Host, one_way_ms: float) -> None:
        """Hold each packet between ``a`` and ``b`` ``one_way_ms`` in the router, each way (the
        round trip grows by twice that). One delay per network."""
        if self.delayer is None:
            self.delayer = subprocess.Popen(
                ["ip", "netns", "exec", self.router, sys.executable, DELAYER,
                 str(QUEUE_NUM), str(one_way_ms / 1000)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True,
                env=_environment(),
            )  # fmt: skip
            self.processes.append(self.delayer)
            assert self.delayer.stdout is not None
            ready = self.delayer.stdout.readline()
            if ready.strip() != b"ready":
                raise RuntimeError(f"the delaying process did not start: {ready!r}")
        for s, d in ((a, b), (b, a)):
            self._exec_router("iptables", "-A", "FORWARD", "-s", s.ip, "-d", d.ip,
                              "-j", "NFQUEUE", "--queue-num", str(QUEUE_NUM))  # fmt: skip
        self.delayed.add(self._pair(a, b))

    def measure_rtt(self, host: Host, port: int, samples: int = 5) -> float:
        """The median time of a TCP connect from the client to ``host:port`` (one round trip:
        SYN, SYN-ACK), in seconds."""
        times = []
        for _ in range(samples):
            started = time.monotonic()
            with socket.create_connection((host.ip, port), timeout=10):
                times.append(time.monotonic() - started)
        return sorted(times)[len(times) // 2]

    # --- cleaning up -----------------------------------------------------------------------

    def cleanup(self) -> None:
        """Kill what runs in the namespaces, delete them (their links go with them)."""
        for proc in self.processes:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self.processes.clear()
        for netns in reversed(self.namespaces):
            _run("ip", "netns", "del", netns, check=False)
        self.namespaces.clear()
        for link in self.root_links:  # gone with the router's end; in case it was not
            _run("ip", "link", "del", link, check=False)
        self.root_links.clear()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


class InNamespace:
    """A mixin for a launcher's server class (``class S(InNamespace, RedisServer)``): the
    server runs in ``host``'s namespace (``ip netns exec``), bound to its address on
    :data:`PORT` (its cluster bus, if any, on PORT + 10000)."""

    def __init__(self, host: Host, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.net_host = host
        self.host = host.ip
        if hasattr(self, "bus_port"):
            self.bus_port = PORT + 10000

    def _free_port(self) -> int:
        return PORT

    def _command(self) -> list[str]:
        # Reached from other addresses than loopback, without a password: protected mode off.
        command = [*super()._command(), "--protected-mode", "no"]  # type: ignore[misc]
        return [*NO_PRELOAD, "ip", "netns", "exec", self.net_host.netns, *command]


class NetServer(InNamespace, RedisServer):
    """A redis-server in a host's namespace."""


class NetSentinel(InNamespace, RedisSentinel):
    """A sentinel in a host's namespace."""


class NetClusterNode(InNamespace, RedisClusterNode):
    """A cluster node in a host's namespace, announcing its address."""

    def _command(self) -> list[str]:
        return [*super()._command(), "--cluster-announce-ip", self.host]
