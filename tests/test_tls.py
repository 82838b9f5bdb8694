"""TLS: a team on a hosted Redis (Redis Cloud, ElastiCache with in-transit encryption, ...)
connects with ``rediss://`` or redis-py's ``ssl_*`` options, sync and asyncio alike.

Every test talks to a real ``redis-server`` with a TLS port and certificates made for the
session by ``trustme`` (tests/conftest.py). A certificate that fails verification raises
``ConnectionError`` naming the reason, quickly, and nothing is ever sent in plaintext.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import redis_leaderboard
from conftest import Certificates, RedisServer, unique_key
from redis_leaderboard import Client, RedisLeaderboard
from redis_leaderboard import asyncio as rl_asyncio


def tls_client(server: RedisServer, certificates: Certificates, **options: Any) -> Client:
    options.setdefault("ssl_ca_certs", certificates.ca)
    options.setdefault("socket_timeout", 5)
    return Client(host="127.0.0.1", port=server.tls_port, ssl=True, **options)


@pytest.fixture
def key(tls_redis_server: RedisServer) -> Iterator[str]:
    with unique_key(tls_redis_server, "tls") as name:
        yield name


def every_method(board: RedisLeaderboard) -> list[Any]:
    """The guide's methods and ours, in an order whose results depend on each other."""
    return [
        board.upsert_user("ada", 10, {"name": "Ada"}),
        board.increment_score("ada", 5),
        board.upsert_user("bob", 7, {"name": "Bob"}),
        board.submit("cy", 12, {"name": "Cy"}),
        board.upsert_many([("dee", 3, {"name": "Dee"}), ("eve", 1, None)]),
        board.set_max_entries(4),
        board.get_top(10),
        board.get_around_rank(2, 3),
        board.get_rank("bob"),
        board.get_user_metadata("ada"),
        board.get_user_entry("cy"),
        board.list_all(),
        board.get_size(),
        board.delete_user("bob"),
        board.clear(),
        board.get_size(),
    ]


def test_every_method_over_tls_answers_as_over_plaintext(
    tls_redis_server: RedisServer, certificates: Certificates, key: str
) -> None:
    plain = Client(host="127.0.0.1", port=tls_redis_server.port)
    with tls_client(tls_redis_server, certificates) as client:
        over_tls = every_method(RedisLeaderboard(client, key=f"{key}:tls", max_entries=10))
        assert client.stats()["connections"] == 1
    assert over_tls == every_method(RedisLeaderboard(plain, key=f"{key}:plain", max_entries=10))
    plain.close()


def test_rediss_url_with_a_host_name_sends_sni_and_checks_it(
    tls_redis_server: RedisServer, certificates: Certificates, key: str
) -> None:
    url = f"rediss://localhost:{tls_redis_server.tls_port}/0?ssl_ca_certs={certificates.ca}"
    board = RedisLeaderboard(url=url, key=key)
    assert board.upsert_user("ada", 1)["rank"] == 1
    with Client.from_url(url, client_name="over-tls") as client:
        assert client.execute_command("CLIENT", "GETNAME") == b"over-tls"
        assert client.ping() is True


def test_many_threads_share_one_tls_client(
    tls_redis_server: RedisServer, certificates: Certificates, key: str
) -> None:
    import threading

    with tls_client(tls_redis_server, certificates) as client:
        board = RedisLeaderboard(client, key=key, max_entries=1000)

        def work(n: int) -> None:
            for i in range(50):
                board.increment_score(f"user-{i % 10}", 1)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sum(entry["score"] for entry in board.list_all()) == 8 * 50


@pytest.mark.asyncio
async def test_asyncio_over_tls_with_1000_concurrent_tasks(
    tls_redis_server: RedisServer, certificates: Certificates, key: str
) -> None:
    async with rl_asyncio.Client(
        host="127.0.0.1",
        port=tls_redis_server.tls_port,
        ssl=True,
        ssl_ca_certs=certificates.ca,
        socket_timeout=10,
    ) as client:
        board = rl_asyncio.RedisLeaderboard(client, key=key, max_entries=2000)
        await asyncio.gather(*(board.increment_score(f"user-{i}", i) for i in range(1000)))
        assert await board.get_size() == 1000
        top = await board.get_top(3)
        assert [entry["user_id"] for entry in top] == ["user-999", "user-998", "user-997"]
        stats = client.stats()
        assert stats["round_trips"] < 1000  # pipelined over the one TLS connection
        assert stats["connections"] == 1


@pytest.mark.asyncio
async def test_asyncio_rediss_url_and_every_page_of_a_large_board(
    tls_redis_server: RedisServer, certificates: Certificates, key: str
) -> None:
    url = f"rediss://127.0.0.1:{tls_redis_server.tls_port}?ssl_ca_certs={certificates.ca}"
    async with rl_asyncio.Client.from_url(url) as client:
        board = rl_asyncio.RedisLeaderboard(client, key=key, max_entries=20_000)
        await board.upsert_many((f"u{i}", i, {"name": "x" * 50}) for i in range(12_000))
        entries = await board.list_all()  # pages of 5,000, replies of ~1 MB over TLS
        assert len(entries) == 12_000 and entries[0]["user_id"] == "u11999"


# --- certificates that must not pass -------------------------------------------------------------


@pytest.fixture(scope="module")
def expired_server(certificates: Certificates) -> Iterator[RedisServer]:
    server = RedisServer(tls=certificates.server_files("expired"))
    yield server
    server.cleanup()


@pytest.fixture(scope="module")
def wrong_host_server(certificates: Certificates) -> Iterator[RedisServer]:
    server = RedisServer(tls=certificates.server_files("wrong_host"))
    yield server
    server.cleanup()


def raises_quickly(make: Any, message: str) -> None:
    """``make()`` then a call: both clients raise ConnectionError matching ``message``, in
    well under the 5 s timeout (a verification failure is not a wait)."""
    started = time.monotonic()
    with pytest.raises(redis_leaderboard.ConnectionError, match=message):
        client = make(Client)
        try:
            client.ping()
        finally:
            client.close()

    async def main() -> None:
        async with make(rl_asyncio.Client) as client:
            await client.ping()

    with pytest.raises(redis_leaderboard.ConnectionError, match=message):
        asyncio.run(main())
    assert time.monotonic() - started < 3


def test_an_unknown_ca_is_refused(
    tls_redis_server: RedisServer, certificates: Certificates
) -> None:
    port = tls_redis_server.tls_port
    raises_quickly(
        lambda cls: cls(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=certificates.other_ca),
        "certificate verify failed: .*unknown CA",
    )


def test_without_a_ca_the_system_trust_store_is_used(
    tls_redis_server: RedisServer, certificates: Certificates
) -> None:
    # The session's CA is in no system store: refused, as a hosted Redis's would be accepted.
    port = tls_redis_server.tls_port
    raises_quickly(
        lambda cls: cls(host="127.0.0.1", port=port, ssl=True, socket_timeout=5),
        "certificate verify failed: .*unknown CA",
    )


def test_an_expired_certificate_is_refused(
    expired_server: RedisServer, certificates: Certificates
) -> None:
    port = expired_server.tls_port
    raises_quickly(
        lambda cls: cls(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=certificates.ca),
        "certificate has expired",
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_certificate_for_another_host_is_refused(
    wrong_host_server: RedisServer, certificates: Certificates, host: str
) -> None:
    port = wrong_host_server.tls_port
    raises_quickly(
        lambda cls: cls(host=host, port=port, ssl=True, ssl_ca_certs=certificates.ca),
        "(IP address|hostname) mismatch",
    )
    # Unless the host is not checked: the CA still is.
    with Client(
        host=host, port=port, ssl=True, ssl_ca_certs=certificates.ca, ssl_check_hostname=False
    ) as client:
        assert client.ping() is True


@pytest.mark.parametrize("cert_reqs", ["none", ssl.CERT_NONE])
def test_cert_reqs_none_encrypts_without_verifying(
    expired_server: RedisServer, cert_reqs: Any
) -> None:
    # Expired, from a CA the client does not know: accepted, the traffic still encrypted.
    with Client(
        host="127.0.0.1", port=expired_server.tls_port, ssl=True, ssl_cert_reqs=cert_reqs
    ) as client:
        assert client.ping() is True
    url = f"rediss://127.0.0.1:{expired_server.tls_port}?ssl_cert_reqs=none"
    with Client.from_url(url) as client:
        assert client.ping() is True


def test_a_tls_client_on_a_plaintext_port_fails_within_its_timeout(
    tls_redis_server: RedisServer, certificates: Certificates
) -> None:
    # Redis waits for a newline a TLS ClientHello lacks: the handshake must time out, and no
    # command (AUTH and its password least of all) is ever sent in the clear.
    server = tls_redis_server
    # One admin connection, opened first: redis-py's own handshake on connecting (CLIENT
    # SETINFO, which servers from 7.2 on run and count) is done before the count is read.
    admin = server.redis_py()
    before = admin.info("stats")["total_commands_processed"]
    port = server.port
    started = time.monotonic()
    with pytest.raises((redis_leaderboard.TimeoutError, redis_leaderboard.ConnectionError)):
        with Client(
            host="127.0.0.1",
            port=port,
            password="never-in-the-clear",
            ssl=True,
            ssl_ca_certs=certificates.ca,
            socket_connect_timeout=0.5,
        ) as client:
            client.ping()
    assert time.monotonic() - started < 2
    after = admin.info("stats")["total_commands_processed"]
    admin.close()
    assert after - before <= 1  # the first INFO of this test, nothing else


def test_a_plaintext_client_on_a_tls_port_fails(tls_redis_server: RedisServer) -> None:
    with pytest.raises((redis_leaderboard.ConnectionError, redis_leaderboard.TimeoutError)):
        with Client(host="127.0.0.1", port=tls_redis_server.tls_port, socket_timeout=1) as c:
            c.ping()


# --- client certificates, versions, ciphers ------------------------------------------------------


@pytest.fixture(scope="module")
def mutual_tls_server(certificates: Certificates) -> Iterator[RedisServer]:
    server = RedisServer(
        tls=certificates.server_files(auth_clients=True),
        extra_args=["--tls-protocols", "TLSv1.2 TLSv1.3"],
    )
    yield server
    server.cleanup()


def test_client_certificates(mutual_tls_server: RedisServer, certificates: Certificates) -> None:
    server = mutual_tls_server
    with pytest.raises(redis_leaderboard.ConnectionError):
        with tls_client(server, certificates) as client:
            client.ping()  # TLS 1.3: the server refuses once the client has finished
    with tls_client(
        server, certificates, ssl_certfile=certificates.client_cert,
        ssl_keyfile=certificates.client_key,
    ) as client:  # fmt: skip
        assert client.ping() is True
    encrypted = {
        "ssl_certfile": certificates.client_cert,
        "ssl_keyfile": certificates.client_key_encrypted,
        "ssl_password": certificates.client_key_password,
    }
    with tls_client(server, certificates, **encrypted) as client:
        assert client.ping() is True

    async def main() -> None:
        async with rl_asyncio.Client(
            host="localhost", port=server.tls_port, ssl=True, ssl_ca_certs=certificates.ca,
            **encrypted,
        ) as client:  # fmt: skip
            assert await client.ping() is True

    asyncio.run(main())
    with pytest.raises(redis_leaderboard.ConnectionError, match="ssl_keyfile"):
        tls_client(server, certificates, **{**encrypted, "ssl_password": "wrong"})


@pytest.fixture(scope="module")
def tls12_server(certificates: Certificates) -> Iterator[RedisServer]:
    server = RedisServer(tls=certificates.server_files(), extra_args=["--tls-protocols", "TLSv1.2"])
    yield server
    server.cleanup()


def test_min_version_and_ciphers(tls12_server: RedisServer, certificates: Certificates) -> None:
    with tls_client(
        tls12_server, certificates, ssl_min_version="TLSv1.2",
        ssl_ciphers="ECDHE-ECDSA-AES128-GCM-SHA256",
    ) as client:  # fmt: skip
        assert client.ping() is True
    for version in ("TLSv1.3", ssl.TLSVersion.TLSv1_3):
        with pytest.raises(redis_leaderboard.ConnectionError, match=r"TLS: .*version"):
            with tls_client(tls12_server, certificates, ssl_min_version=version) as client:
                client.ping()


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"ssl_ca_certs": "/no/such/ca.pem"}, redis_leaderboard.ConnectionError, "ssl_ca_certs"),
        ({"ssl_certfile": "/no/such/c.pem"}, redis_leaderboard.ConnectionError, "ssl_certfile"),
        ({"ssl_keyfile": "/k.pem"}, ValueError, "ssl_keyfile needs ssl_certfile"),
        ({"ssl_ciphers": "NO-SUCH-CIPHER"}, ValueError, "ssl_ciphers"),
        ({"ssl_min_version": "TLSv1.1"}, ValueError, "ssl_min_version"),
        ({"ssl_cert_reqs": "sometimes"}, ValueError, "ssl_cert_reqs"),
        ({"ssl_cert_reqs": 1.5}, TypeError, "ssl_cert_reqs"),
        ({"unix_socket_path": "/tmp/r.sock"}, ValueError, "not unix_socket_path"),
    ],
)
def test_bad_tls_settings_raise_when_the_client_is_made(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    for cls in (Client, rl_asyncio.Client):
        with pytest.raises(error, match=message):
            cls(host="127.0.0.1", port=1, ssl=True, **options)


# --- redis-py clients ----------------------------------------------------------------------------


def test_a_redis_py_tls_client_is_served_with_its_settings(
    tls_redis_server: RedisServer, certificates: Certificates, key: str
) -> None:
    port = tls_redis_server.tls_port
    rp = redis.Redis(host="localhost", port=port, ssl=True, ssl_ca_certs=certificates.ca)
    board = RedisLeaderboard(rp, key=key)
    assert board.upsert_user("ada", 3)["rank"] == 1
    assert rp.zscore(key, "ada") == 3.0  # redis-py itself sees the same board
    # Its settings carry over: a CA it does not give is not trusted.
    with pytest.raises(redis_leaderboard.ConnectionError, match="unknown CA"):
        RedisLeaderboard(redis.Redis(host="localhost", port=port, ssl=True), key=key).get_size()
    insecure = redis.Redis.from_url(f"rediss://localhost:{port}/0?ssl_cert_reqs=none")
    assert RedisLeaderboard(insecure, key=key).get_size() == 1
    rp.close()
    insecure.close()

    async def main() -> None:
        arp = redis.asyncio.Redis(
            host="localhost", port=port, ssl=True, ssl_ca_certs=certificates.ca
        )
        async_board = rl_asyncio.RedisLeaderboard(arp, key=key)
        assert await async_board.get_rank("ada") == 1
        await async_board.redis.aclose()
        await arp.aclose()

    asyncio.run(main())
