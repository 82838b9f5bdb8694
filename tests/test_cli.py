"""The redis-leaderboard command: import, top, rank, around, bench."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from redis_leaderboard import Client, RedisLeaderboard


def cli(server: Any, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redis_leaderboard", *args, "--redis-port", str(server.port),
         "--redis-host", server.host, "--key", key],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


@pytest.fixture
def players_csv(tmp_path: Path) -> Path:
    path = tmp_path / "players.csv"
    rows = ["user_id,score,name,country"]
    rows += [f"player-{i},{i * 10},Player {i},{'NZ' if i % 2 else ''}" for i in range(1, 2501)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_import_then_top_rank_and_around(redis_server: Any, board_key: str, players_csv: Path):
    done = cli(redis_server, board_key, "import", str(players_csv), "--max-entries", "2000")
    assert done.returncode == 0, done.stderr
    assert "imported 2,500 rows" in done.stdout
    assert "trimmed 500; board size 2,000" in done.stdout
    assert "100%" in done.stderr  # the progress bar

    board = RedisLeaderboard(Client(port=redis_server.port), key=board_key)
    assert board.get_size() == 2000
    assert board.get_user_entry("player-2500") == {
        "rank": 1,
        "user_id": "player-2500",
        "score": 25000.0,
        "metadata": {"name": "Player 2500"},  # empty columns are not stored
    }
    assert board.get_user_metadata("player-2499") == {"name": "Player 2499", "country": "NZ"}
    assert board.get_rank("player-500") is None  # trimmed

    top = cli(redis_server, board_key, "top", "2", "--json")
    assert [e["user_id"] for e in json.loads(top.stdout)] == ["player-2500", "player-2499"]
    text = cli(redis_server, board_key, "top", "1").stdout.split()
    assert text[:3] == ["1", "player-2500", "25000"]

    rank = cli(redis_server, board_key, "rank", "player-2499", "--json")
    assert json.loads(rank.stdout)["rank"] == 2
    missing = cli(redis_server, board_key, "rank", "nobody")
    assert missing.returncode == 1
    assert "nobody is not on the board" in missing.stdout

    around = cli(redis_server, board_key, "around", "10", "--count", "3", "--json")
    assert [e["rank"] for e in json.loads(around.stdout)] == [9, 10, 11]


def test_import_rejects_a_file_without_the_columns(redis_server: Any, board_key: str, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,points\na,1\n")
    done = cli(redis_server, board_key, "import", str(path))
    assert done.returncode == 1
    assert "the header must name the columns user_id and score" in done.stderr


def test_import_names_the_bad_line(redis_server: Any, board_key: str, tmp_path: Path):
    path = tmp_path / "bad.csv"
    path.write_text("user_id,score\na,1\nb,lots\n")
    done = cli(redis_server, board_key, "import", str(path), "--quiet")
    assert done.returncode == 1
    assert "line 3: score is not a number: 'lots'" in done.stderr


def test_import_names_a_bad_entry(redis_server: Any, board_key: str, tmp_path: Path):
    path = tmp_path / "bad.csv"
    path.write_text("user_id,score\na,1\n,2\n")
    done = cli(redis_server, board_key, "import", str(path), "--quiet")
    assert done.returncode == 1
    assert "entry 1: user_id must not be empty" in done.stderr


def test_unreachable_redis_is_one_clear_line(board_key: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "redis_leaderboard", "top", "--redis-port", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("redis-leaderboard top: cannot reach Redis at localhost:1")
    assert "Traceback" not in done.stderr


def test_bench_runs_the_benchmark_of_the_clone(monkeypatch: pytest.MonkeyPatch) -> None:
    from redis_leaderboard import cli as commands

    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    assert commands.find_benchmark() == root / "benchmarks" / "run.py"
    monkeypatch.chdir(root / "tests")
    if commands.find_benchmark() is None:  # an installed package, away from the clone
        done = subprocess.run(
            [sys.executable, "-m", "redis_leaderboard", "bench"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1
        assert "run this command from a clone" in done.stderr
