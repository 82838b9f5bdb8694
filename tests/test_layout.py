"""The package's shape: the command line does not depend on the demo, and one launcher starts
every private redis-server (demo, tests, benchmarks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import RedisServer
from redis_leaderboard import _redis_server

ROOT = Path(__file__).resolve().parent.parent


def test_the_command_line_does_not_import_the_demo() -> None:
    code = (
        "import sys, redis_leaderboard.cli; "
        "print(sorted(m for m in sys.modules if m.startswith('redis_leaderboard.demo')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_one_redis_server_launcher() -> None:
    assert issubclass(RedisServer, _redis_server.RedisServer)
    starters = [
        path.relative_to(ROOT).as_posix()
        for folder in ("python", "tests", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
        # A redis-server command line of its own (extra_args through the launcher are fine).
        if path != Path(__file__).resolve() and '"--daemonize"' in path.read_text()
    ]
    assert starters == ["python/redis_leaderboard/_redis_server.py"]


def test_extra_arguments_reach_the_server() -> None:
    server = RedisServer(extra_args=["--maxmemory", "7mb", "--maxmemory-policy", "noeviction"])
    try:
        r = server.redis_py()
        assert r.config_get("maxmemory") == {"maxmemory": str(7 * 1024 * 1024)}
        assert r.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
        assert r.ping()
        r.close()
        port, directory = server.port, server.dir
        server.stop()
        assert not server.running()
        server.start()  # a restart keeps the port and the directory
        assert (server.port, server.dir) == (port, directory)
        assert server.running()
    finally:
        server.cleanup()
    assert server.dir is None and not Path(directory or "").exists()
