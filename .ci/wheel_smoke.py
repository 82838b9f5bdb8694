"""The installed wheel's smoke test, run by .ci/wheel-smoke inside a fresh Debian without a
compiler or -dev package: python wheel_smoke.py CERT_DIR (trustme's ca/server PEM files, the CA
also installed in the system's trust store).

Python's ssl is imported and used first, and hiredis-py is imported beside us: the module must
work with both in the process (its hiredis is private, its OpenSSL is the system's).
"""

import asyncio
import os
import socket
import ssl  # first, on purpose
import sys

import hiredis  # hiredis-py: its own hiredis, in the same process

import redis_leaderboard
from redis_leaderboard import Client, RedisLeaderboard, _core
from redis_leaderboard import asyncio as rl_asyncio
from redis_leaderboard._redis_server import RedisServer, TlsFiles

checks = 0


def check(condition: bool, what: str) -> None:
    global checks
    if not condition:
        raise SystemExit(f"wheel smoke: FAILED: {what}")
    checks += 1
    print(f"ok: {what}")


certs = sys.argv[1]
ca = os.path.join(certs, "ca.pem")
tls = TlsFiles(os.path.join(certs, "server.pem"), os.path.join(certs, "server.key"), ca)

print(f"python {sys.version.split()[0]}, {ssl.OPENSSL_VERSION}, hiredis-py {hiredis.__version__}")
check("site-packages" in _core.__file__, f"the module comes from the wheel: {_core.__file__}")
check(
    "site-packages" in redis_leaderboard.__file__, f"the package too: {redis_leaderboard.__file__}"
)
reader = hiredis.Reader()
reader.feed(b"*2\r\n$1\r\na\r\n:7\r\n")
check(reader.gets() == [b"a", 7], "hiredis-py parses beside us")

with RedisServer(tls=tls) as server:
    # Python's ssl first: a handshake and a PING through it.
    context = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("localhost", server.tls_port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as conn:
            conn.sendall(b"PING\r\n")
            check(conn.recv(64) == b"+PONG\r\n", "Python's ssl: PING over TLS")

    board = RedisLeaderboard(Client(host="127.0.0.1", port=server.port), key="smoke", max_entries=3)
    entry = board.upsert_user("ada", 1200, {"name": "Ada"})
    check(entry["rank"] == 1 and entry["metadata"] == {"name": "Ada"}, "upsert_user")
    for i in range(4):
        board.upsert_user(f"p{i}", i)
    top = board.get_top(5)
    check([e["user_id"] for e in top] == ["ada", "p3", "p2"], f"get_top, trimmed: {top}")
    first = board.submit("ada", 5, mode="incr", submission_id="match-1:ada")
    again = board.submit("ada", 5, mode="incr", submission_id="match-1:ada")
    check(
        not first["duplicate"] and again["duplicate"] and board.get_top(1)[0]["score"] == 1205,
        "submit with submission_id applies once",
    )

    # Our TLS, CA given, then the system's trust store (the CA was installed there).
    for what, extra in (("ssl_ca_certs", {"ssl_ca_certs": ca}), ("the system trust store", {})):
        client = Client(host="localhost", port=server.tls_port, ssl=True, **extra)
        tls_board = RedisLeaderboard(client, key="smoke", max_entries=3)
        check(tls_board.get_top(1)[0]["score"] == 1205, f"TLS with {what}")
    try:
        other = os.path.join(certs, "other.pem")
        client = Client(host="localhost", port=server.tls_port, ssl=True, ssl_ca_certs=other)
        RedisLeaderboard(client, key="smoke").get_top(1)
        check(False, "a certificate from another CA is refused")
    except redis_leaderboard.ConnectionError as exc:
        check("certificate" in str(exc) or "CA" in str(exc), f"another CA is refused: {exc}")

    async def main() -> list[object]:
        async with rl_asyncio.Client.from_url(
            f"rediss://localhost:{server.tls_port}/0", ssl_ca_certs=ca, socket_timeout=5
        ) as client:
            async_board = rl_asyncio.RedisLeaderboard(client, key="smoke:async")
            await asyncio.gather(*(async_board.increment_score("p0", 1) for _ in range(100)))
            return await async_board.get_top(3)

    top = asyncio.run(main())
    check([(e["user_id"], e["score"]) for e in top] == [("p0", 100)], "asyncio over TLS")

print(f"{checks} passed, 0 failed")
