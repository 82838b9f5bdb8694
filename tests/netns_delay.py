"""The delaying process of tests/netns.py: run inside the router namespace as
``python netns_delay.py QUEUE SECONDS``, it binds NFQUEUE ``QUEUE`` and accepts each packet
queued there SECONDS after it arrived, in order (raw netlink, nfnetlink_queue; no package
needed). It imports nothing of redis_leaderboard: under .ci/sanitize the package's core needs
ASan preloaded, which this process runs without."""

from __future__ import annotations

import heapq
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NLM_F_REQUEST = 1
NF_ACCEPT = 1


def _attr(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def _message(msg: int, queue: int, attrs: bytes) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs
    kind = (NFNL_SUBSYS_QUEUE << 8) | msg
    return struct.pack("=IHHII", 16 + len(body), kind, NLM_F_REQUEST, 0, 0) + body


def run_delayer(queue: int, delay: float) -> None:
    """Bind NFQUEUE ``queue`` (in this process's namespace) and accept each packet ``delay``
    seconds after it was queued, in order. Prints ``ready`` once bound."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((0, 0))
    cmd = struct.pack("=BBH", NFQNL_CFG_CMD_BIND, 0, 0)
    sock.send(_message(NFQNL_MSG_CONFIG, queue, _attr(NFQA_CFG_CMD, cmd)))
    params = struct.pack(">IB", 0, NFQNL_COPY_META)
    sock.send(_message(NFQNL_MSG_CONFIG, queue, _attr(NFQA_CFG_PARAMS, params)))
    maxlen = struct.pack(">I", 100_000)
    sock.send(_message(NFQNL_MSG_CONFIG, queue, _attr(NFQA_CFG_QUEUE_MAXLEN, maxlen)))
    print("ready", flush=True)
    due: list[tuple[float, int]] = []  # (release time, packet id)
    while True:
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, packet_id = heapq.heappop(due)
            verdict = struct.pack(">II", NF_ACCEPT, packet_id)
            sock.send(_message(NFQNL_MSG_VERDICT, queue, _attr(NFQA_VERDICT_HDR, verdict)))
        sock.settimeout(max(0.0, due[0][0] - now) if due else None)
        try:
            data = sock.recv(1 << 16)
        except TimeoutError:
            continue
        except OSError:  # ENOBUFS: messages lost (those packets stay queued: never here)
            continue
        arrived = time.monotonic()
        offset = 0
        while offset + 16 <= len(data):
            length, kind = struct.unpack_from("=IH", data, offset)
            if length < 16:
                break
            if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                at = offset + 20  # nlmsghdr (16) + nfgenmsg (4)
                while at + 4 <= offset + length:
                    alen, atype = struct.unpack_from("=HH", data, at)
                    if alen < 4:
                        break
                    if atype & 0x7FFF == NFQA_PACKET_HDR:
                        (packet_id,) = struct.unpack_from(">I", data, at + 4)
                        heapq.heappush(due, (arrived + delay, packet_id))
                    at += (alen + 3) & ~3
            offset += (length + 3) & ~3


if __name__ == "__main__":
    run_delayer(int(sys.argv[1]), float(sys.argv[2]))
