"""Writes the fuzz targets' seed corpora from the tests' replies: every RESP byte string the tests
feed the codec, the connection core or a hostile server (tests/*.py, read with ast, nothing
imported), plus the cluster replies and redirects the cluster tests script, each laid out in the
input format of the target it seeds (see each cpp/fuzz/fuzz_*.cpp's header).

    python3 cpp/fuzz/seeds.py OUT_DIR     # OUT_DIR/{resp,window,core,cluster}/seed-<sha1>
"""

from __future__ import annotations

import ast
import base64
import hashlib
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def resp(value: Any) -> bytes:
    if value is None:
        return b"$-1\r\n"
    if isinstance(value, int):
        return b":%d\r\n" % value
    if isinstance(value, (str, bytes)):
        data = value.encode() if isinstance(value, str) else value
        return b"$%d\r\n%s\r\n" % (len(data), data)
    return b"*%d\r\n" % len(value) + b"".join(resp(item) for item in value)


def test_replies() -> list[bytes]:
    """Every bytes literal of the tests that starts like a RESP reply (adjacent literals joined)."""
    found: set[bytes] = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
                if node.value[:1] in (b"+", b"-", b":", b"$", b"*") and b"\r\n" in node.value:
                    found.add(node.value)
    return sorted(found)


def windows() -> list[bytes]:
    """Rank windows as window.lua, around.lua and by_score.lua answer (with ranks: shared ties)."""
    row = ["a", "10", ["name", "Ada"], "b", "5", []]
    return [
        resp([0, 2, row]),
        resp([3, 7, row, [3, 3]]),
        resp([0, -1, []]),
        resp([0, 1, ["u", "1.5", ["k", "v", "k2", "v2"]]]),
        resp(None),
        resp([0, 6000, row]),  # list_all: more pages to read
    ]


def cluster_replies() -> list[bytes]:
    def node(port: int, role: str, health: str) -> list[Any]:
        return ["id", f"{port:040d}", "port", port, "ip", "127.0.0.1", "endpoint", "127.0.0.1",
                "role", role, "replication-offset", 0, "health", health]  # fmt: skip

    shards = [
        ["slots", [0, 8191], "nodes", [node(7000, "master", "online"),
                                       node(7003, "replica", "online")]],
        ["slots", [8192, 16383], "nodes", [node(7001, "master", "online")]],
        ["slots", [], "nodes", [node(7002, "master", "fail")]],
    ]  # fmt: skip
    slots = [[0, 8191, ["127.0.0.1", 7000, "id"], ["", 7003]], [8192, 16383, ["?", 7001]]]
    return [resp(shards), resp(slots)]


REDIRECTS = [
    b"MOVED 3999 127.0.0.1:6381",
    b"ASK 3999 127.0.0.1:6381",
    b"MOVED 12182 :7001",
    b"MOVED 1 ::1:7000",
    b"TRYAGAIN Multiple keys request during rehashing of slot",
    b"CLUSTERDOWN The cluster is down",
    b"ERR Script attempted to access a non local key in a cluster node",
]


class Core:
    """An input of fuzz_core: integers are taken from the end (FuzzedDataProvider), the bytes
    a `received` event feeds from the front."""

    def __init__(self, flags: int, max_in_flight: int = 4) -> None:
        self.front = b""
        self.tail = [flags]  # in the order they are taken
        if flags & 16:
            self.tail += [0, 199]  # socket_timeout: 0.2 s
        self.tail.append(max_in_flight - 1)

    def op(self, code: int, *operands: int) -> Core:
        self.tail += [code, *operands]
        return self

    def received(self, data: bytes) -> Core:
        for at in range(0, len(data), 255):
            piece = data[at : at + 255]
            self.tail += [7, len(piece)]
            self.front += piece
        return self

    def bytes(self) -> bytes:
        return self.front + bytes(reversed(self.tail))


def core_seeds(reply: bytes) -> list[bytes]:
    """The reply answering a request of each kind, after a plain and an authenticated connect."""
    out = []
    for pick in (0, 1, 2, 3, 4, 5):
        plain = Core(0).op(pick << 4, 0).op(3).op(5).op(6).received(reply).op(10, 0, 10)
        out.append(plain.bytes())
    authed = Core(1 | 16, 2).op(1 << 4, 0).op(3).op(5).op(6).received(b"+OK\r\n")
    out.append(authed.op(5).op(6).received(reply).op(12).bytes())
    raw = Core(0).op(0x80, 0).op(3).op(5).op(6).received(reply + reply).op(9).op(3).op(5)
    out.append(raw.bytes())
    return out


# Inputs that once failed a target, replayed first by every run (CI's too) as seeds: each a
# regression test of its fix. (target, base64 of the reproducer, what it found.)
FINDINGS = [
    (
        "core",
        "MTotTk9TQ1JJUFQrK09QVElPIC1XLU9PTSB4DQpST8fHxwAAAAAAAAAUx8fHx05HUEFTUSBpfnZhbGlkIGl+dmFO"
        "R1BBU1EgaX52YWxpCi15MjMAMg==",
        "a request failed behind a blocking read (XREAD BLOCK) keeps its place until its reply "
        "comes: outstanding() counts it, the harness's invariant did not (Core::expired())",
    ),
]


def main() -> None:
    out = Path(sys.argv[1])
    replies = test_replies()
    seeds: dict[str, list[bytes]] = {"resp": [], "window": [], "core": [], "cluster": []}
    for reply in replies + windows():
        seeds["resp"] += [reply + bytes([chunk, mode]) for chunk, mode in ((63, 1), (2, 3))]
        seeds["window"] += [reply + bytes([7, m, pick]) for pick in range(10) for m in (0, 0x12)]
        seeds["core"] += core_seeds(reply)
    for reply in cluster_replies():
        seeds["cluster"] += [reply + bytes([1]), reply + bytes([2])]
        seeds["resp"].append(reply + bytes([63, 1]))
    seeds["cluster"] += [redirect + b"\0" for redirect in REDIRECTS]
    for target, encoded, _found in FINDINGS:
        seeds[target].append(base64.b64decode(encoded))
    for target, inputs in seeds.items():
        folder = out / target
        folder.mkdir(parents=True, exist_ok=True)
        for data in inputs:
            (folder / f"seed-{hashlib.sha1(data).hexdigest()}").write_bytes(data)
        print(f"{target}: {len(set(inputs))} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
