"""Client options: Redis URLs (valid ones and every way to get one wrong), redis-py clients of
several shapes, and what a leaderboard connects to. None of these tests needs a server: the
clients connect on their first call, not when they are made."""

from __future__ import annotations

import dataclasses
import ssl
from typing import Any

import pytest
import redis
import redis.asyncio

import redis_leaderboard
from redis_leaderboard import _core
from redis_leaderboard import asyncio as rl_asyncio
from redis_leaderboard.options import (
    DEFAULT_URL,
    URL_QUERY_ARGUMENT_PARSERS,
    ClientOptions,
    client_options_from_redis_py,
    make_client,
    parse_url,
    resolve_client_options,
    url_options,
)

O = ClientOptions  # noqa: E741 -- keeps the table below one line a case

VALID_URLS: list[tuple[str, ClientOptions]] = [
    ("redis://", O()),
    ("redis://localhost", O()),
    ("redis://example.com:6380", O(host="example.com", port=6380)),
    ("redis://example.com:6380/", O(host="example.com", port=6380)),
    ("redis://example.com/5", O(host="example.com", db=5)),
    ("redis://example.com/000000007", O(host="example.com", db=7)),
    ("REDIS://Example.COM:6380/1", O(host="Example.COM", port=6380, db=1)),
    ("redis://10.0.0.1:1", O(host="10.0.0.1", port=1)),
    ("redis://h:65535", O(host="h", port=65535)),
    ("redis://h:", O(host="h")),
    ("redis://:6380", O(port=6380)),
    ("redis://[::1]", O(host="::1")),
    ("redis://[::1]:6380/3", O(host="::1", port=6380, db=3)),
    ("redis://[fe80::1%25eth0]:7000", O(host="fe80::1%eth0", port=7000)),
    # Credentials: percent-decoded; the last "@" ends them.
    ("redis://:secret@h", O(host="h", password="secret")),
    ("redis://user:secret@h/2", O(host="h", db=2, username="user", password="secret")),
    ("redis://user@h", O(host="h", username="user")),
    ("redis://:@h", O(host="h", password="")),
    ("redis://us%40er:p%3Ass%2F%40%25@h", O(host="h", username="us@er", password="p:ss/@%")),
    ("redis://:pa/ss@h:1/2", O(host="h", port=1, db=2, password="pa/ss")),
    ("redis://:p@ss@h", O(host="h", password="p@ss")),
    ("redis://:p%C3%BC@h", O(host="h", password="pü")),
    # Query keys.
    ("redis://h/1?db=2", O(host="h", db=2)),
    ("redis://h?db=3", O(host="h", db=3)),
    (
        "redis://h?socket_timeout=2.5&socket_connect_timeout=.5&client_name=app",
        O(host="h", socket_timeout=2.5, socket_connect_timeout=0.5, client_name="app"),
    ),
    ("redis://h?socket_timeout=1e1", O(host="h", socket_timeout=10.0)),
    ("redis://h?socket_timeout=3", O(host="h", socket_timeout=3.0)),
    ("redis://:old@h?password=new", O(host="h", password="new")),
    ("redis://h?password=a%26b%3Dc", O(host="h", password="a&b=c")),
    ("redis://h?password=a+b", O(host="h", password="a+b")),
    ("redis://h?password=", O(host="h", password="")),
    ("redis://h?username=u&password=p", O(host="h", username="u", password="p")),
    ("redis://h?client_name=x&", O(host="h", client_name="x")),
    ("redis://h?&db=1&&", O(host="h", db=1)),
    # Unix sockets.
    ("unix:///tmp/redis.sock", O(unix_socket_path="/tmp/redis.sock")),
    ("UNIX:///tmp/redis.sock?db=1", O(unix_socket_path="/tmp/redis.sock", db=1)),
    ("unix://:pw@/tmp/redis.sock", O(unix_socket_path="/tmp/redis.sock", password="pw")),
    (
        "unix://user:pw@/var/run/re%20dis.sock?db=4&socket_timeout=1",
        O(
            unix_socket_path="/var/run/re dis.sock",
            db=4,
            username="user",
            password="pw",
            socket_timeout=1.0,
        ),
    ),
    # TLS: rediss:// or ?ssl=true, with redis-py's ssl_* query keys.
    ("rediss://h:6380/1", ClientOptions(host="h", port=6380, db=1, ssl=True)),
    (
        "redis://h?ssl=true&ssl_ca_certs=%2Fca.pem&ssl_cert_reqs=optional"
        "&ssl_check_hostname=false&ssl_min_version=TLSv1.3&ssl_ciphers=HIGH"
        "&ssl_certfile=%2Fc.pem&ssl_keyfile=%2Fk.pem&ssl_password=pw&ssl_ca_path=%2Fcas",
        ClientOptions(
            host="h",
            ssl=True,
            ssl_ca_certs="/ca.pem",
            ssl_ca_path="/cas",
            ssl_certfile="/c.pem",
            ssl_keyfile="/k.pem",
            ssl_password="pw",
            ssl_cert_reqs="optional",
            ssl_check_hostname=False,
            ssl_min_version="TLSv1.3",
            ssl_ciphers="HIGH",
        ),
    ),
    ("REDISS://h?ssl_cert_reqs=none", ClientOptions(host="h", ssl=True, ssl_cert_reqs="none")),
    # Sentinel: the sentinels (26379 unless given), the service, the data nodes' db.
    (
        "redis+sentinel://u:p@s1,s2:26380,[::1]:5/mymaster/2?sentinel_password=sp",
        ClientOptions(
            username="u",
            password="p",
            db=2,
            sentinels=(("s1", 26379), ("s2", 26380), ("::1", 5)),
            service_name="mymaster",
            sentinel_password="sp",
        ),
    ),
    (
        "rediss+sentinel://s1/my%20service?sentinel_ssl=true&ssl_cert_reqs=none",
        ClientOptions(
            ssl=True,
            ssl_cert_reqs="none",
            sentinels=(("s1", 26379),),
            service_name="my service",
            sentinel_ssl=True,
        ),
    ),
]


@pytest.mark.parametrize(("url", "expected"), VALID_URLS, ids=[url for url, _ in VALID_URLS])
def test_valid_urls(url: str, expected: ClientOptions) -> None:
    assert parse_url(url) == expected


# (url, a regular expression the ValueError's message must match: it names what is wrong)
BAD_URLS: list[tuple[str, str]] = [
    ("", "must start with redis:// or unix://"),
    ("localhost:6379", "must start with redis:// or unix://"),
    ("redis:/h", "must start with redis:// or unix://"),
    ("http://localhost:6379", r"not http://"),
    ("rediss://h?ssl=false", "rediss:// is TLS"),
    ("unix:///tmp/r.sock?ssl=true", "TLS"),
    ("redis+sentinel://h:1", "names its service"),
    ("redis+sentinel://h:1/", "names its service"),
    ("redis+sentinel://h:1,/mymaster", "empty sentinel address"),
    ("redis+sentinel://h:0/mymaster", "port must be between 1 and 65535"),
    ("redis+sentinel://h/mymaster/x", "db"),
    ("unix://", "socket path"),
    ("unix://h/redis.sock", "socket path"),
    ("unix://relative.sock", "socket path"),
    ("redis://h:notaport", "port"),
    ("redis://h:0", "port must be between 1 and 65535"),
    ("redis://h:65536", "port must be between 1 and 65535"),
    ("redis://h:-1", "port"),
    ("redis://h:1234567890", "port"),
    ("redis://h:6379:6379", "host"),
    ("redis://::1", r"IPv6 address is written \[address\]:port"),
    ("redis://[::1", "IPv6"),
    ("redis://[::1]x", "IPv6"),
    ("redis://h/x", "db"),
    ("redis://h/1/2", "db"),
    ("redis://h/-1", "db"),
    ("redis://h/1234567890", "db"),
    ("redis://:%ff@h", "password"),
    ("redis://%ff@h", "username"),
    # The query: unknown keys, a key twice, malformed values.
    ("redis://h/0?ssl=maybe", "'ssl': must be true or false"),
    ("redis://h?ssl_cert_reqs=sometimes", "'ssl_cert_reqs': must be one of"),
    ("redis://h?ssl_check_hostname=", "'ssl_check_hostname'"),
    ("redis://h?ssl_min_version=TLSv1.1", "'ssl_min_version'"),
    ("redis://h?ssl_ca_data=x", "unknown query key 'ssl_ca_data'"),
    ("redis://h?sentinel_password=x", "unknown query key 'sentinel_password'"),
    ("redis://h?foo=1", "unknown query key 'foo'"),
    ("redis://h?health_check_interval=30", "unknown query key 'health_check_interval'"),
    ("redis://h?max_connections=10", "unknown query key 'max_connections'"),
    ("redis://h?DB=1", "unknown query key 'DB'"),
    ("redis://h?=1", "unknown query key ''"),
    ("redis://h?db", "'db'"),
    ("redis://h?db=1&db=1", "'db' is given twice"),
    ("redis://h?password=%ff", "'password'"),
    # A NUL, raw or percent-encoded, in any part: C would read "h\0x" as host "h".
    ("redis://h\x00x:6379", "NUL"),
    ("redis://h%00x:6379", "the host must not contain a NUL"),
    ("redis://u%00:p@h", "the username must not contain a NUL"),
    ("redis://:p%00w@h", "the password must not contain a NUL"),
    ("unix:///tmp/s%00ock", "the socket path must not contain a NUL"),
    ("redis+sentinel://h%00x/s", "the host must not contain a NUL"),
    ("redis+sentinel://h/s%00", "the service name must not contain a NUL"),
    ("redis://h?ssl_certfile=/c%00rt", "query key 'ssl_certfile' must not contain a NUL"),
    ("redis://h?client_name=n%00", "query key 'client_name' must not contain a NUL"),
]
for key, bad_values in {
    "db": ["", "x", "-1", "1.5", "+1", " 1", "1234567890", "\u0661"],
    "socket_timeout": ["", "abc", "0", "-1", "inf", "nan", "1e400", "0x10", " 1", "1_0", "1s"],
    "socket_connect_timeout": ["", "0", "-0.5", "infinity", "1,5"],
}.items():
    BAD_URLS += [(f"redis://h?{key}={value}", f"query key '{key}'") for value in bad_values]


@pytest.mark.parametrize(("url", "message"), BAD_URLS, ids=[url for url, _ in BAD_URLS])
def test_malformed_urls_raise_naming_the_fault(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_url(url)
    with pytest.raises(ValueError, match=message):
        redis_leaderboard.Client.from_url(url)
    with pytest.raises(ValueError, match=message):
        rl_asyncio.Client.from_url(url)
    with pytest.raises(ValueError, match=message):
        redis_leaderboard.RedisLeaderboard(url=url)


def test_every_known_query_key_is_an_option() -> None:
    names = {field for field in ClientOptions.__dataclass_fields__}
    assert set(URL_QUERY_ARGUMENT_PARSERS) <= names


@pytest.mark.parametrize("url", [6379, None, b"redis://h", ["redis://h"]])
def test_a_url_must_be_a_str(url: Any) -> None:
    with pytest.raises(TypeError, match="url must be a str"):
        parse_url(url)
    with pytest.raises(TypeError, match="url must be a str"):
        redis_leaderboard.Client.from_url(url)


def test_messages_do_not_echo_the_password() -> None:
    for url in ("redis://:hunter2@h:x", "redis://:hunter2@h?foo=1", "redis://:hunter2@h/x"):
        with pytest.raises(ValueError) as info:
            parse_url(url)
        assert "hunter2" not in str(info.value)


def test_keyword_arguments_win_over_the_url() -> None:
    url = "redis://h?socket_timeout=1&client_name=from-url"
    assert url_options(url, socket_timeout=2, client_name=None) == {
        **ClientOptions(host="h", client_name="from-url").kwargs(),
        "socket_timeout": 2,
    }


def test_from_url_makes_the_class_it_is_called_on() -> None:
    class Mine(redis_leaderboard.Client):
        pass

    for cls in (redis_leaderboard.Client, Mine):
        client = cls.from_url("redis://h:1/2", socket_timeout=1, max_reply_bytes=4096)
        assert type(client) is cls
        assert isinstance(client, _core.Client)
        assert repr(client) == "Client(h:1, db=2)"
        client.close()
    aclient = rl_asyncio.Client.from_url("unix:///tmp/x.sock?db=1", max_in_flight=8)
    assert type(aclient) is rl_asyncio.Client
    assert repr(aclient) == "redis_leaderboard.asyncio.Client(/tmp/x.sock)"
    aclient.close()


def test_options_are_frozen() -> None:
    options = parse_url("redis://h")
    with pytest.raises(AttributeError):
        options.host = "other"  # type: ignore[misc]


# --- redis-py clients ----------------------------------------------------------------------------


def test_redis_py_client_with_every_option() -> None:
    rp = redis.Redis(
        host="cache.example",
        port=6380,
        db=2,
        username="app",
        password="pw",
        socket_timeout=1.5,
        socket_connect_timeout=0.5,
        client_name="app-1",
        decode_responses=True,
    )
    assert client_options_from_redis_py(rp) == ClientOptions(
        host="cache.example",
        port=6380,
        db=2,
        username="app",
        password="pw",
        socket_timeout=1.5,
        socket_connect_timeout=0.5,
        client_name="app-1",
    )


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: redis.Redis(), ClientOptions()),
        (
            lambda: redis.Redis.from_url("redis://u:p@h:1234/3"),
            ClientOptions(host="h", port=1234, db=3, username="u", password="p"),
        ),
        (
            lambda: redis.Redis(unix_socket_path="/tmp/r.sock", db=1),
            ClientOptions(unix_socket_path="/tmp/r.sock", db=1),
        ),
        (
            lambda: redis.Redis.from_url("unix:///tmp/r.sock?db=2"),
            ClientOptions(unix_socket_path="/tmp/r.sock", db=2),
        ),
        (
            lambda: redis.Redis(connection_pool=redis.ConnectionPool(host="h", port=1, db=4)),
            ClientOptions(host="h", port=1, db=4),
        ),
        (
            lambda: redis.asyncio.Redis(host="h", port=7, password="pw", socket_timeout=3),
            ClientOptions(host="h", port=7, password="pw", socket_timeout=3),
        ),
        (
            lambda: redis.asyncio.Redis.from_url("unix:///tmp/a.sock?db=5"),
            ClientOptions(unix_socket_path="/tmp/a.sock", db=5),
        ),
    ],
    ids=["defaults", "from_url", "unix", "unix_url", "pool", "asyncio", "asyncio_unix_url"],
)
def test_redis_py_clients_of_several_shapes(make: Any, expected: ClientOptions) -> None:
    client = make()
    # Timeouts not given are redis-py's defaults (5 s since redis-py 6), reused as they are.
    kwargs = client.connection_pool.connection_kwargs
    expected = dataclasses.replace(
        expected,
        socket_timeout=kwargs.get("socket_timeout"),
        socket_connect_timeout=kwargs.get("socket_connect_timeout"),
    )
    assert client_options_from_redis_py(client) == expected


def test_redis_py_tls_clients_carry_their_settings_over() -> None:
    # redis-py's SSLConnection defaults (required, check_hostname) where a URL gives none.
    options = client_options_from_redis_py(redis.Redis.from_url("rediss://h:6380/0"))
    assert options == ClientOptions(host="h", port=6380, ssl=True)
    made = redis.Redis(
        host="h",
        port=1,
        ssl=True,
        ssl_ca_certs="/ca.pem",
        ssl_certfile="/c.pem",
        ssl_keyfile="/k.pem",
        ssl_password="pw",
        ssl_cert_reqs="none",
        ssl_check_hostname=False,
        ssl_min_version=ssl.TLSVersion.TLSv1_3,
        ssl_ciphers="HIGH",
    )
    assert client_options_from_redis_py(made) == ClientOptions(
        host="h",
        port=1,
        socket_timeout=made.connection_pool.connection_kwargs.get("socket_timeout"),
        socket_connect_timeout=made.connection_pool.connection_kwargs.get("socket_connect_timeout"),
        ssl=True,
        ssl_ca_certs="/ca.pem",
        ssl_certfile="/c.pem",
        ssl_keyfile="/k.pem",
        ssl_password="pw",
        ssl_cert_reqs="none",
        ssl_check_hostname=False,
        ssl_min_version=int(ssl.TLSVersion.TLSv1_3),
        ssl_ciphers="HIGH",
    )
    assert client_options_from_redis_py(redis.asyncio.Redis(ssl=True)).ssl is True


def test_redis_py_sentinel_clients_carry_their_sentinels_over() -> None:
    sentinel = redis.Sentinel(
        [("s1", 26379), ("s2", 26380)], sentinel_kwargs={"password": "sp"}, password="dp"
    )
    options = client_options_from_redis_py(sentinel.master_for("mymaster", db=2))
    assert options.sentinels == (("s1", 26379), ("s2", 26380))
    assert (options.service_name, options.sentinel_password) == ("mymaster", "sp")
    assert (options.password, options.db) == ("dp", 2)
    with pytest.raises(ValueError, match="master_for"):
        client_options_from_redis_py(sentinel.slave_for("mymaster"))


@pytest.mark.parametrize("thing", ["redis://localhost:6379", 6379, object()])
def test_other_things_are_not_redis_py_clients(thing: Any) -> None:
    with pytest.raises(TypeError, match="redis_client must be"):
        client_options_from_redis_py(thing)


# --- what a leaderboard connects to -------------------------------------------------------------


def test_resolve_client_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert resolve_client_options(None, None) == parse_url(DEFAULT_URL) == ClientOptions()
    monkeypatch.setenv("REDIS_URL", "redis://env:1/1")
    assert resolve_client_options(None, None) == ClientOptions(host="env", port=1, db=1)
    assert resolve_client_options(None, "redis://url/2") == ClientOptions(host="url", db=2)
    rp = redis.Redis(host="rp", db=3, socket_timeout=1, socket_connect_timeout=2)
    assert resolve_client_options(rp, None) == ClientOptions(
        host="rp", db=3, socket_timeout=1, socket_connect_timeout=2
    )
    with pytest.raises(TypeError, match="not both"):
        resolve_client_options(rp, "redis://url")
    monkeypatch.setenv("REDIS_URL", "redis://env?ssl=never")
    with pytest.raises(ValueError, match="'ssl'"):
        resolve_client_options(None, None)


def test_make_client() -> None:
    client = redis_leaderboard.Client(host="h")
    assert make_client(client, None, redis_leaderboard.Client) is client
    # A client made by the compiled class is used as it is too.
    core = _core.Client(host="h")
    assert make_client(core, None, redis_leaderboard.Client) is core
    with pytest.raises(TypeError, match="not both"):
        make_client(client, "redis://h", redis_leaderboard.Client)
    made = make_client(None, "redis://h:2/3", redis_leaderboard.Client)
    assert type(made) is redis_leaderboard.Client
    assert repr(made) == "Client(h:2, db=3)"
    amade = make_client(redis.Redis(host="h"), None, rl_asyncio.Client)
    assert type(amade) is rl_asyncio.Client
    with pytest.raises(TypeError):
        make_client(client, None, rl_asyncio.Client)
    for c in (client, core, made, amade):
        c.close()
