"""The demo as a process: ``python -m redis_leaderboard.demo`` with its private redis-server,
how it stops, and how it reports a Redis it cannot use.

No test here touches the machine's own Redis on localhost:6379: each run names its Redis, or
asks for a private one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from redis_leaderboard import _redis_server
from redis_leaderboard.demo.cli import build_parser, connect

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="checks processes through /proc (Linux)"
)

STARTED = re.compile(
    r"started a private redis-server \(pid (\d+)\) on 127\.0\.0\.1:(\d+) with its data in (\S+);"
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_alive(pid: int) -> bool:
    """True if ``pid`` runs (a zombie waiting for a reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.05)
    return False


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(extra)
    return env


class DemoProcess:
    """``python -m <module> ...`` with its output in a log file."""

    def __init__(
        self,
        args: list[str],
        log_path: Path,
        *,
        module: str = "redis_leaderboard.demo",
        env: Optional[dict[str, str]] = None,
    ) -> None:
        self.log_path = log_path
        self.port: Optional[int] = None
        if "--port" in args:
            self.port = int(args[args.index("--port") + 1])
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module, *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env if env is not None else clean_env(),
            )

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def post(self, path: str, body: str) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=body.encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read())

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the demo exited with {self.proc.returncode}:\n{self.log}")
            try:
                status, _ = self.get("/api/state")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        pytest.fail(f"the demo did not answer within {timeout} s:\n{self.log}")

    def wait(self, timeout: float = 20.0) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the demo did not exit within {timeout} s:\n{self.log}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[list[DemoProcess]]:
    """Started demos, killed after the test if still running (their redis-servers follow)."""
    started: list[DemoProcess] = []
    yield started
    for demo in started:
        demo.stop()


def start(
    processes: list[DemoProcess], tmp_path: Path, args: list[str], **kwargs: Any
) -> DemoProcess:
    demo = DemoProcess(args, tmp_path / f"demo-{len(processes)}.log", **kwargs)
    processes.append(demo)
    return demo


def one_error_line(demo: DemoProcess) -> str:
    assert demo.wait() == 1
    lines = demo.log.strip().splitlines()
    assert len(lines) == 1, demo.log
    return lines[0]


# -- the private redis-server ---------------------------------------------------------------


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_embedded_redis_serves_the_demo_and_stops_with_it(
    processes: list[DemoProcess], tmp_path: Path, stop_signal: signal.Signals
) -> None:
    demo = start(processes, tmp_path, ["--embedded-redis", "--port", str(free_port())])
    demo.wait_ready()

    match = STARTED.search(demo.log)
    assert match, demo.log
    redis_pid, redis_port, data_dir = int(match[1]), int(match[2]), match[3]
    assert "--embedded-redis was given: started a private redis-server" in demo.log
    assert "Board 'leaderboard:demo' was empty: added the guide's six sample players." in demo.log
    assert f"Demo running at http://127.0.0.1:{demo.port}/ (Ctrl+C to stop)" in demo.log
    assert process_alive(redis_pid)
    # The server's process title: its binary's name (redis-server or valkey-server) and address.
    title = Path(f"/proc/{redis_pid}/cmdline").read_bytes()
    assert re.search(rb"(redis|valkey)-server", title) and f":{redis_port}".encode() in title
    assert Path(data_dir).is_dir()

    status, state = demo.get("/api/state?top=3")
    assert status == 200
    assert [(e["user_id"], e["score"]) for e in state["top_entries"]] == [
        ("player-4", 1435.0),
        ("player-2", 1310.0),
        ("player-6", 1240.0),
    ]
    assert (
        demo.post("/api/players", "user_id=player-7&score=2000&name=Zed")[1]["entry"]["rank"] == 1
    )
    assert demo.get("/api/state")[1]["size"] == 7

    demo.proc.send_signal(stop_signal)
    assert demo.wait() == 0, demo.log
    assert f"Received {stop_signal.name}; stopping." in demo.log
    assert f"Stopped the private redis-server (pid {redis_pid}, port {redis_port})." in demo.log
    assert demo.log.rstrip().endswith("Demo stopped.") or "Demo stopped." in demo.log
    assert not process_alive(redis_pid)
    assert not Path(data_dir).exists()


def test_a_killed_demo_leaves_no_orphaned_redis_server(
    processes: list[DemoProcess], tmp_path: Path
) -> None:
    demo = start(processes, tmp_path, ["--embedded-redis", "--port", str(free_port())])
    demo.wait_ready()
    match = STARTED.search(demo.log)
    assert match, demo.log
    redis_pid, data_dir = int(match[1]), Path(match[3])

    demo.proc.kill()  # no chance to clean up: the kernel tells the child (PR_SET_PDEATHSIG)
    demo.proc.wait()
    assert wait_gone(redis_pid), f"redis-server {redis_pid} outlived the demo"
    # Only the (empty, no persistence) temporary directory is left behind; tidy it here.
    assert sorted(p.name for p in data_dir.iterdir()) == ["redis.log"]
    shutil.rmtree(data_dir)


def test_without_redis_server_the_demo_says_how_to_install_it(
    processes: list[DemoProcess], tmp_path: Path
) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    demo = start(
        processes,
        tmp_path,
        ["--embedded-redis", "--port", str(free_port())],
        env={
            k: v
            for k, v in clean_env(PATH=str(empty_bin)).items()
            if k != _redis_server.SERVER_ENV  # the server under test, if named
        },
    )
    assert one_error_line(demo) == (
        "redis-leaderboard demo: error: --embedded-redis was given, and neither redis-server "
        "nor valkey-server was found on PATH (or set REDIS_LEADERBOARD_SERVER): install Redis "
        "(Debian/Ubuntu: sudo apt-get install redis-server; Fedora: sudo dnf install redis; "
        "macOS: brew install redis) or point the demo at a running Redis with --redis-url"
    )


def test_a_taken_port_is_an_error_and_stops_the_private_redis(
    processes: list[DemoProcess], tmp_path: Path
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        demo = start(processes, tmp_path, ["--embedded-redis", "--port", str(port)])
        assert demo.wait() == 1
    log = demo.log
    assert (
        f"redis-leaderboard demo: error: cannot listen on 127.0.0.1:{port}: Address already in "
        "use; choose another --port"
    ) in log
    match = STARTED.search(log)
    assert match, log
    assert f"Stopped the private redis-server (pid {match[1]}, port {match[2]})." in log
    assert not process_alive(int(match[1]))


def test_with_nothing_configured_and_nothing_answering_a_private_redis_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The default probe is localhost:6379; a port where nothing listens stands in for it, so
    # that the machine's own Redis is never used.
    monkeypatch.delenv("REDIS_URL", raising=False)
    args = build_parser().parse_args([])
    target = connect(args, default_host="127.0.0.1", default_port=free_port())
    try:
        assert target.embedded is not None
        assert target.description == f"private redis-server at {target.embedded.url}"
        assert target.client.ping() is True
        pid = target.embedded.pid
        assert pid is not None and process_alive(pid)
    finally:
        target.close()
    assert not process_alive(pid)


def test_with_nothing_configured_a_redis_answering_on_the_default_port_is_used(
    monkeypatch: pytest.MonkeyPatch, redis_server: Any
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    args = build_parser().parse_args([])
    target = connect(args, default_host="127.0.0.1", default_port=redis_server.port)
    try:
        assert target.embedded is None
        assert target.description == f"redis://127.0.0.1:{redis_server.port}/0"
        assert target.client.ping() is True
    finally:
        target.close()


# -- an explicit Redis ----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["--redis-url", "--redis-host/--redis-port", "REDIS_URL"])
def test_an_explicit_redis_that_does_not_answer_is_an_error_not_a_fallback(
    processes: list[DemoProcess], tmp_path: Path, how: str
) -> None:
    dead = free_port()
    args = ["--port", str(free_port())]
    env = clean_env()
    if how == "--redis-url":
        args += ["--redis-url", f"redis://127.0.0.1:{dead}/0"]
        where = f"redis://127.0.0.1:{dead}/0"
    elif how == "REDIS_URL":
        env["REDIS_URL"] = f"redis://:hunter2@127.0.0.1:{dead}/0"
        where = f"redis://:***@127.0.0.1:{dead}/0"  # the password is not printed
    else:
        args += ["--redis-host", "127.0.0.1", "--redis-port", str(dead)]
        where = f"127.0.0.1:{dead}"
    demo = start(processes, tmp_path, args, env=env)
    line = one_error_line(demo)
    assert line.startswith(f"redis-leaderboard demo: error: cannot reach Redis at {where}: ")
    assert "private redis-server" not in line


def test_conflicting_redis_options_are_refused(
    processes: list[DemoProcess], tmp_path: Path
) -> None:
    demo = start(
        processes,
        tmp_path,
        ["--embedded-redis", "--redis-url", "redis://127.0.0.1:1/0", "--port", "0"],
    )
    assert one_error_line(demo) == (
        "redis-leaderboard demo: error: --embedded-redis cannot be combined with --redis-url, "
        "--redis-host or --redis-port"
    )
    demo = start(
        processes,
        tmp_path,
        ["--redis-url", "redis://127.0.0.1:1/0?ssl=maybe", "--port", "0"],
    )
    assert one_error_line(demo).startswith(
        "redis-leaderboard demo: error: invalid Redis URL redis://127.0.0.1:1/0?ssl=maybe: "
    )


def test_the_console_command_runs_the_demo_on_a_given_redis_and_key(
    processes: list[DemoProcess], tmp_path: Path, redis_server: Any, board_key: str
) -> None:
    port = free_port()
    demo = start(
        processes,
        tmp_path,
        [
            "demo",
            "--redis-url", redis_server.url,
            "--key", board_key,
            "--max-entries", "5",
            "--port", str(port),
            "--quiet",
        ],
        module="redis_leaderboard",
    )  # fmt: skip
    demo.wait_ready()
    status, state = demo.get("/api/state")
    assert status == 200
    assert (state["leaderboard_key"], state["size"], state["max_entries"]) == (board_key, 5, 5)
    assert [e["user_id"] for e in state["top_entries"]] == [
        "player-4",
        "player-2",
        "player-6",
        "player-3",
        "player-5",
    ]
    assert f"Redis: {redis_server.url}" in demo.log
    assert "GET /api/state" not in demo.log  # --quiet: no access log
    demo.proc.send_signal(signal.SIGTERM)
    assert demo.wait() == 0, demo.log


def test_the_command_line_help_lists_the_demo_and_its_options() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "redis_leaderboard", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "demo" in out
    out = subprocess.run(
        [sys.executable, "-m", "redis_leaderboard.demo", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for option in [
        "--host",
        "--port",
        "--redis-url",
        "--redis-host",
        "--redis-port",
        "--key",
        "--max-entries",
        "--embedded-redis",
    ]:
        assert option in out
    bad = subprocess.run(
        [sys.executable, "-m", "redis_leaderboard.demo", "--max-entries", "0"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert "argument --max-entries: must be between 1 and 1,000,000" in bad.stderr
