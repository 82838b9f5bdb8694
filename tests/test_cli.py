"""The redis-leaderboard command: import, top, rank, around, bench."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest

from redis_leaderboard import Client, RedisLeaderboard

ROOT = Path(__file__).resolve().parent.parent


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


def test_a_compact_board_from_the_command_line(
    redis_server: Any, board_key: str, players_csv: Path
) -> None:
    done = cli(redis_server, board_key, "import", str(players_csv), "--layout", "compact")
    assert done.returncode == 0, done.stderr
    board = RedisLeaderboard(Client(port=redis_server.port), key=board_key, layout="compact")
    assert board.get_user_metadata("player-2499") == {"name": "Player 2499", "country": "NZ"}
    top = cli(redis_server, board_key, "top", "1", "--json", "--layout", "compact")
    assert json.loads(top.stdout)[0]["metadata"] == {"name": "Player 2500"}
    # Without --layout the command opens the guide's layout: refused, one clear line.
    refused = cli(redis_server, board_key, "top", "1")
    assert refused.returncode != 0 and "layout='compact'" in refused.stderr


def test_convert_layout_from_the_command_line(
    redis_server: Any, board_key: str, players_csv: Path
) -> None:
    assert cli(redis_server, board_key, "import", str(players_csv)).returncode == 0
    done = cli(redis_server, board_key, "convert-layout", "--page", "300")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{board_key}: compact; 2,500 players' metadata moved"
    again = cli(redis_server, board_key, "convert-layout", "--json")
    assert json.loads(again.stdout) == {"moved": 0}
    top = cli(redis_server, board_key, "top", "1", "--json", "--layout", "compact")
    assert json.loads(top.stdout)[0]["metadata"] == {"name": "Player 2500"}
    bad = cli(redis_server, board_key, "convert-layout", "--page", "20000")
    assert bad.returncode != 0 and "page must be between 1 and 10000" in bad.stderr


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
    path.write_text("user_id,score\na,1\n,2\nc,nan\nd,4,extra\ne,5,\n")
    done = cli(redis_server, board_key, "import", str(path), "--quiet")
    assert done.returncode == 1
    assert "line 3: user_id must not be empty" in done.stderr
    assert "line 4: score must be a finite number, not 'nan'" in done.stderr
    assert "line 5: 3 fields, but the header names 2" in done.stderr
    assert "line 6" not in done.stderr  # a trailing empty field loses nothing


def test_a_bad_row_in_the_middle_writes_nothing(
    redis_server: Any, board_key: str, players_csv: Path
) -> None:
    lines = players_csv.read_text().splitlines()
    lines[1500 - 1] = "player-1499,oops,Player 1499,NZ"  # line 1,500 of the file
    players_csv.write_text("\n".join(lines) + "\n")
    done = cli(redis_server, board_key, "import", str(players_csv), "--chunk-size", "100")
    assert done.returncode == 1
    assert "nothing was written: bad rows: 1 of 2,500" in done.stderr
    assert "line 1500: score is not a number: 'oops'" in done.stderr
    assert "--skip-bad" in done.stderr
    assert done.stdout == ""
    assert RedisLeaderboard(Client(port=redis_server.port), key=board_key).get_size() == 0


def test_a_refused_import_lists_the_first_bad_rows(
    redis_server: Any, board_key: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("user_id,score\n" + "".join(f"u{i},x{i}\n" for i in range(25)) + "a,1\n")
    done = cli(redis_server, board_key, "import", str(path))
    assert done.returncode == 1
    assert "bad rows: 25 of 26" in done.stderr
    assert "line 11: score is not a number: 'x9'" in done.stderr
    assert "line 12:" not in done.stderr
    assert "... and 15 more" in done.stderr


def test_skip_bad_imports_the_good_rows_and_names_the_bad_ones(
    redis_server: Any, board_key: str, players_csv: Path
) -> None:
    lines = players_csv.read_text().splitlines()
    lines[10 - 1] = ",90,nobody"
    lines[2000 - 1] = "player-1999,inf"
    players_csv.write_text("\n".join(lines) + "\n")
    done = cli(
        redis_server, board_key, "import", str(players_csv), "--skip-bad", "--max-entries", "3000"
    )
    assert done.returncode == 0, done.stderr
    assert "imported 2,498 rows" in done.stdout
    assert "bad rows skipped: 2;" in done.stdout
    assert "line 10: user_id must not be empty (skipped)" in done.stderr
    assert "line 2000: score must be a finite number, not 'inf' (skipped)" in done.stderr
    board = RedisLeaderboard(Client(port=redis_server.port), key=board_key)
    assert board.get_size() == 2498
    assert board.get_rank("player-1999") is None


def test_a_redis_error_while_writing_says_how_many_rows_were_written(
    fresh_redis_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "big.csv"
    rows = [f"player-{i},{i},{'x' * 100}" for i in range(20_000)]
    path.write_text("user_id,score,bio\n" + "\n".join(rows) + "\n")
    redis = fresh_redis_server.redis_py()
    used = int(redis.info("memory")["used_memory"])
    redis.config_set("maxmemory-policy", "noeviction")
    redis.config_set("maxmemory", used + 500_000)  # room for a few thousand rows
    done = cli(fresh_redis_server, "board", "import", str(path), "--chunk-size", "100")
    assert done.returncode == 1
    found = re.search(
        r": ([\d,]+)(?: to ([\d,]+))? of 20,000 rows were written \(the board was not trimmed\) "
        r"when the import stopped: Redis error: OOM",
        done.stderr,
    )
    assert found, done.stderr
    low = int(found[1].replace(",", ""))
    high = int((found[2] or found[1]).replace(",", ""))
    assert 0 < low <= redis.zcard("board") <= high < 20_000


def test_a_csv_with_a_byte_order_mark_imports(
    redis_server: Any, board_key: str, tmp_path: Path
) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("user_id,score,name\r\nzoë,12,Zoë\r\n".encode("utf-8-sig"))
    done = cli(redis_server, board_key, "import", str(path))
    assert done.returncode == 0, done.stderr
    board = RedisLeaderboard(Client(port=redis_server.port), key=board_key)
    assert board.get_user_entry("zoë") == {
        "rank": 1,
        "user_id": "zoë",
        "score": 12.0,
        "metadata": {"name": "Zoë"},
    }


def test_a_file_that_is_not_utf8_is_one_clear_line(
    redis_server: Any, board_key: str, tmp_path: Path
) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("user_id,score\nzoë,12\n".encode("latin-1"))
    done = cli(redis_server, board_key, "import", str(path))
    assert done.returncode == 1
    assert "not UTF-8 text" in done.stderr
    assert "Traceback" not in done.stderr


def test_no_progress_bar_unless_stderr_is_a_terminal(
    redis_server: Any, board_key: str, players_csv: Path
) -> None:
    done = cli(redis_server, board_key, "import", str(players_csv), "--max-entries", "100")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_the_progress_bar_on_a_terminal(
    redis_server: Any, board_key: str, players_csv: Path
) -> None:
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # 80 columns
    with os.fdopen(main, "rb", buffering=0) as screen:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "redis_leaderboard", "import", str(players_csv),
                 "--redis-port", str(redis_server.port), "--key", board_key,
                 "--max-entries", "100"],
                stdout=subprocess.PIPE,
                stderr=terminal,
                timeout=60,
            )  # fmt: skip
        finally:
            os.close(terminal)
        shown = b""
        try:
            while chunk := screen.read(1 << 16):
                shown += chunk
        except OSError:  # EIO: the terminal's other side is closed, all is read
            pass
    assert done.returncode == 0, shown
    assert b"100%" in shown and b"2500/2500" in shown


def test_text_output_shows_exact_scores(redis_server: Any, board_key: str) -> None:
    board = RedisLeaderboard(Client(port=redis_server.port), key=board_key, max_entries=10)
    for user_id, score in [("big", 9999982), ("fraction", 1234567.25), ("tenth", 0.1),
                           ("huge", 1e300), ("negative", -3)]:  # fmt: skip
        board.upsert_user(user_id, score)

    top = cli(redis_server, board_key, "top").stdout.splitlines()
    assert [line.split()[1:3] for line in top] == [
        ["huge", "1e+300"],
        ["big", "9999982"],
        ["fraction", "1234567.25"],
        ["tenth", "0.1"],
        ["negative", "-3"],
    ]
    assert len({len(line) for line in top}) == 1  # the scores are right-aligned
    assert cli(redis_server, board_key, "rank", "big").stdout.split() == ["2", "big", "9999982"]
    around = cli(redis_server, board_key, "around", "3", "--count", "1").stdout.split()
    assert around == ["3", "fraction", "1234567.25"]


def test_import_warns_when_the_board_outgrows_the_library_default(
    redis_server: Any, board_key: str, players_csv: Path
) -> None:
    done = cli(redis_server, board_key, "import", str(players_csv))
    assert done.returncode == 0, done.stderr
    assert "board size 2,500" in done.stdout
    assert f"{board_key} holds 2,500 entries" in done.stderr
    assert "opened without max_entries keeps 100" in done.stderr
    assert (
        "open it with max_entries=2500 or more (None: unlimited); for the demo: --max-entries 2500"
        in (done.stderr)
    )
    assert RedisLeaderboard(Client(port=redis_server.port), key=board_key).get_size() == 2500


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

    monkeypatch.chdir(ROOT)
    assert commands.find_benchmark() == ROOT / "benchmarks" / "run.py"
    monkeypatch.chdir(ROOT / "tests")
    if commands.find_benchmark() is None:  # an installed package, away from the clone
        done = subprocess.run(
            [sys.executable, "-m", "redis_leaderboard", "bench"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1
        assert "run this command from a clone" in done.stderr


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redis_leaderboard", "bench", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_bench_passes_every_argument_to_the_benchmark() -> None:
    # --sizes below the smallest board: benchmarks/run.py itself refuses, before starting.
    done = bench("--quick", "--sizes", "5")
    assert done.returncode == 2
    assert "run.py: error: --sizes must be at least" in done.stderr
    help_text = bench("--help")
    assert help_text.returncode == 0
    assert "--quick" in help_text.stdout and "usage: run.py" in help_text.stdout


def test_other_commands_still_refuse_unknown_options(redis_server: Any, board_key: str) -> None:
    done = cli(redis_server, board_key, "top", "--quick")
    assert done.returncode == 2
    assert "unrecognized arguments: --quick" in done.stderr
