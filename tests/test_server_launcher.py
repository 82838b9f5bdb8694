"""The launcher finds the server it is told to run, or whichever one a machine has.

``$REDIS_LEADERBOARD_SERVER`` names the server binary (the test suite then runs against it);
without it, ``redis-server`` or, on Valkey-only machines, ``valkey-server`` from PATH. Sentinels
are that binary run with ``--sentinel`` unless a sentinel binary is named or on PATH; the cluster
tool is the ``redis-cli``/``valkey-cli`` beside the server, else on PATH. The server's real
version comes from INFO (Valkey's ``redis_version`` says 7.2.4).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from launchers import CLI_ENV, SENTINEL_ENV, RedisSentinel, find_cli, find_sentinel
from redis_leaderboard import _core, _redis_server
from redis_leaderboard._redis_server import (
    SERVER_ENV,
    RedisServer,
    RedisServerError,
    ServerVersion,
    find_server,
    parse_server_version,
)

VALKEY_INFO = (
    "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n"
    "valkey_release_stage:ga\r\nredis_git_sha1:00000000\r\n"
)
REDIS_INFO = (
    "# Server\r\nredis_version:7.4.1\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n"
)


def test_parse_server_version() -> None:
    assert parse_server_version(VALKEY_INFO) == ServerVersion("valkey", (9, 1, 2))
    assert parse_server_version(VALKEY_INFO.encode()) == ServerVersion("valkey", (9, 1, 2))
    assert parse_server_version(REDIS_INFO) == ServerVersion("redis", (7, 4, 1))
    # redis-py's parsed INFO (numbers where they look like numbers)
    assert parse_server_version({"redis_version": "7.0.15", "redis_mode": "standalone"}) == (
        ServerVersion("redis", (7, 0, 15))
    )
    valkey = parse_server_version({"redis_version": "7.2.4", "valkey_version": "8.0.1"})
    assert str(valkey) == "valkey 8.0.1"
    assert valkey.at_least("valkey", 8) and valkey.at_least("valkey", 8, 0, 1)
    assert not valkey.at_least("valkey", 8, 1) and not valkey.at_least("redis", 7)


def test_the_server_under_test_reports_its_real_version(
    redis_server: RedisServer, server_version: ServerVersion
) -> None:
    # `--version` prints "Redis server v=7.0.15 ..." or "Valkey server v=9.1.2 ...": the real
    # version either way; INFO says the same once Valkey's valkey_version is read.
    assert server_version.version == tuple(int(p) for p in redis_server.version().split("."))
    with _core.Client(redis_server.host, redis_server.port) as client:
        info = client.execute_command("INFO", "server").decode()
    assert ("valkey_version:" in info) == (server_version.name == "valkey")
    assert server_version.version >= (7, 0)


@dataclass(frozen=True)
class BarePath:
    """``bin``: an empty directory that is the whole PATH; ``real``: the server under test."""

    bin: Path
    real: str


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BarePath]:
    """An empty directory as the whole PATH, and none of the launcher's variables set (the
    server binary under test is found before, with the run's environment)."""
    real = find_server()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for variable in (SERVER_ENV, SENTINEL_ENV, CLI_ENV):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    yield BarePath(bin_dir, real)


def link(bin_dir: Path, name: str, target: str) -> str:
    path = bin_dir / name
    path.symlink_to(target)
    return str(path)


def test_no_server_is_a_clear_error(bare: BarePath) -> None:
    with pytest.raises(RedisServerError, match="neither redis-server nor valkey-server"):
        find_server()
    with pytest.raises(RedisServerError, match="neither redis-server nor valkey-server"):
        RedisServer()


def test_a_named_server_that_is_not_there_is_a_clear_error(
    bare: BarePath, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SERVER_ENV, str(bare.bin / "nowhere-server"))
    with pytest.raises(RedisServerError, match=SERVER_ENV):
        find_server()


def sentinel_answers(sentinel: RedisSentinel) -> bool:
    with _core.Client(sentinel.host, sentinel.port, socket_timeout=5) as client:
        masters = client.execute_command("SENTINEL", "MASTERS")
    return len(masters) == 1


def test_a_valkey_only_machine(bare: BarePath) -> None:
    # Only valkey-* names on PATH (Debian's Valkey packages): the server, the sentinel (the
    # server run with --sentinel) and the cluster tool are found under them.
    server_path = link(bare.bin, "valkey-server", bare.real)
    cli = shutil.which("redis-cli", path=os.defpath) or shutil.which("valkey-cli", path=os.defpath)
    assert find_server() == server_path
    assert find_sentinel() == [server_path, "--sentinel"]
    with pytest.raises(RedisServerError, match="neither redis-cli nor valkey-cli"):
        find_cli()
    if cli is not None:
        cli_path = link(bare.bin, "valkey-cli", cli)
        assert find_cli() == cli_path
    with RedisServer() as server:
        assert server.binary == server_path
        sentinel = RedisSentinel(server.port, quorum=1)
        try:
            sentinel.start()
            assert sentinel.binary == server_path and sentinel_answers(sentinel)
        finally:
            sentinel.cleanup()


def test_the_environment_names_the_server(bare: BarePath, monkeypatch: pytest.MonkeyPatch) -> None:
    # A server anywhere, under any name; a redis-sentinel on PATH is then not used (it may be
    # another version): the named server runs the sentinels. A cli beside it is its tool.
    elsewhere = bare.bin.parent / "elsewhere"
    elsewhere.mkdir()
    server_path = link(elsewhere, "my-server", bare.real)
    link(bare.bin, "redis-sentinel", bare.real)
    link(bare.bin, "redis-cli", "/bin/true")
    monkeypatch.setenv(SERVER_ENV, server_path)
    assert find_server() == server_path
    assert find_sentinel() == [server_path, "--sentinel"]
    assert find_cli() == str(bare.bin / "redis-cli")  # none beside the server: PATH's
    beside = link(elsewhere, "valkey-cli", "/bin/true")
    assert find_cli() == beside
    monkeypatch.setenv(CLI_ENV, str(bare.bin / "redis-cli"))
    assert find_cli() == str(bare.bin / "redis-cli")
    monkeypatch.setenv(SENTINEL_ENV, str(bare.bin / "redis-sentinel"))
    assert find_sentinel() == [str(bare.bin / "redis-sentinel")]
    with RedisServer() as server:
        assert server.binary == server_path
        assert server.server_version().version == tuple(int(p) for p in server.version().split("."))


def test_without_the_environment_path_decides_as_before(bare: BarePath) -> None:
    # Debian's redis-server, redis-sentinel and redis-cli on PATH: exactly those, as before the
    # launcher knew other names (valkey-* ones beside them are not taken).
    for name in ("valkey-server", "valkey-sentinel", "valkey-cli"):
        link(bare.bin, name, "/bin/true")
    assert find_server() == str(bare.bin / "valkey-server")
    server_path = link(bare.bin, "redis-server", bare.real)
    sentinel_path = link(bare.bin, "redis-sentinel", bare.real)
    cli_path = link(bare.bin, "redis-cli", "/bin/true")
    assert (find_server(), find_sentinel(), find_cli()) == (server_path, [sentinel_path], cli_path)


def test_tls_on_a_server_built_without_it_says_so(tmp_path: Path) -> None:
    # The launcher tells "no TLS in this build" (the suite skips TLS tests then) from other
    # failures to start: a fake server that logs what a build without TLS logs.
    fake = tmp_path / "fake-server"
    fake.write_text(
        "#!/bin/sh\n"
        'while [ $# -gt 0 ]; do [ "$1" = --logfile ] && log=$2; shift; done\n'
        'echo "# Failed finding TLS support." >"$log"; exit 1\n'
    )
    fake.chmod(0o755)
    files = _redis_server.TlsFiles("cert", "key", "ca")
    with pytest.raises(_redis_server.TlsUnsupported, match="built without TLS"):
        RedisServer(binary=str(fake), tls=files).start(timeout=5)
    fake.write_text("#!/bin/sh\nexit 3\n")
    with pytest.raises(RedisServerError) as info:
        RedisServer(binary=str(fake)).start(timeout=5)
    assert not isinstance(info.value, _redis_server.TlsUnsupported)


def test_a_first_start_never_picks_a_port_to_avoid(monkeypatch: pytest.MonkeyPatch) -> None:
    # The demo's --embedded-redis avoids the port the demo is about to listen on: CI once saw
    # both pick the same free port ("cannot listen on ...: Address already in use").
    picks = iter([4242, 4242, 4343])
    monkeypatch.setattr(_redis_server, "free_port", lambda host: next(picks))
    server = _redis_server.RedisServer(avoid_ports=(4242,))
    assert server._free_port() == 4343
