"""The query commands of redis-leaderboard: around-user, page, histogram (text and --json)."""

from __future__ import annotations

import json
from typing import Any

from redis_leaderboard import Client, RedisLeaderboard
from redis_leaderboard.cli import histogram_lines
from test_cli import cli


def fill(server: Any, key: str, **options: str) -> None:
    with Client(host=server.host, port=server.port) as client:
        board = RedisLeaderboard(client, key=key, **options)  # type: ignore[arg-type]
        board.upsert_many([(f"p{i}", i * 10, {"name": f"P{i}"}) for i in range(1, 26)])


def test_around_user(redis_server: Any, board_key: str) -> None:
    fill(redis_server, board_key)
    done = cli(redis_server, board_key, "around-user", "p1", "--count", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0].split() == ["23", "p3", "30", "name=P3"]
    assert [line.split()[1] for line in done.stdout.splitlines()] == ["p3", "p2", "p1"]
    as_json = json.loads(cli(redis_server, board_key, "around-user", "p10", "--json").stdout)
    assert [e["user_id"] for e in as_json] == ["p12", "p11", "p10", "p9", "p8"]
    absent = cli(redis_server, board_key, "around-user", "nobody")
    assert (absent.returncode, absent.stdout) == (1, "nobody is not on the board\n")


def test_page(redis_server: Any, board_key: str) -> None:
    fill(redis_server, board_key)
    done = cli(redis_server, board_key, "page", "3", "--page-size", "10")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "page 3 of 3 (25 entries)"
    assert [line.split()[:2] for line in lines[1:]] == [
        [str(r), f"p{26 - r}"] for r in range(21, 26)
    ]
    past = json.loads(cli(redis_server, board_key, "page", "9", "--json").stdout)
    assert past == {"page": 9, "page_size": 10, "total_pages": 3, "size": 25, "entries": []}
    refused = cli(redis_server, board_key, "page", "1", "--page-size", "1001")
    assert refused.returncode == 2
    assert "page_size must be between 1 and 1000" in refused.stderr


def test_histogram(redis_server: Any, board_key: str) -> None:
    fill(redis_server, board_key, order="asc", ties="dense")
    done = cli(
        redis_server, board_key, "histogram", "--bins", "4", "--width", "10",
        "--order", "asc", "--ties", "dense",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[ 10,  70)  6  █████████",
        "[ 70, 130)  6  █████████",
        "[130, 190)  6  █████████",
        "[190, 250]  7  ██████████",
    ]
    as_json = json.loads(
        cli(redis_server, board_key, "histogram", "--bins", "2", "--min", "0", "--max", "100",
            "--json", "--order", "asc", "--ties", "dense").stdout
    )  # fmt: skip
    assert as_json == [
        {"min": 0.0, "max": 50.0, "count": 4},
        {"min": 50.0, "max": 100.0, "count": 6},
    ]
    # A board recorded with other options is refused, naming both.
    mismatch = cli(redis_server, board_key, "histogram")
    assert mismatch.returncode == 2
    assert "order='asc'" in mismatch.stderr


def test_histogram_lines() -> None:
    bins = [
        {"min": 0.0, "max": 2.5, "count": 3},
        {"min": 2.5, "max": 5.0, "count": 0},
        {"min": 5.0, "max": 7.5, "count": 1},
        {"min": 7.5, "max": 10.0, "count": 6},
    ]
    assert histogram_lines(bins, 6, "#") == [
        "[  0, 2.5)  3  ###",
        "[2.5,   5)  0",
        "[  5, 7.5)  1  #",
        "[7.5,  10]  6  ######",
    ]
    assert histogram_lines([], 6) == ["(no entries)"]


def test_hide_unhide_hidden(redis_server: Any, board_key: str) -> None:
    # Fair play from the command line: the exit status says whether it changed anything.
    fill(redis_server, board_key)
    done = cli(redis_server, board_key, "hide", "p25")
    assert (done.returncode, done.stdout) == (0, "p25 is hidden now\n"), done.stderr
    assert cli(redis_server, board_key, "hide", "p25").returncode == 1
    assert cli(redis_server, board_key, "hidden").stdout == "p25\n"
    assert json.loads(cli(redis_server, board_key, "hidden", "--json").stdout) == ["p25"]
    top = cli(redis_server, board_key, "top", "1").stdout
    assert top.split()[:2] == ["1", "p24"]
    done = cli(redis_server, board_key, "unhide", "p25")
    assert (done.returncode, done.stdout) == (0, "p25 is shown now\n")
    assert cli(redis_server, board_key, "unhide", "p25").stdout == "p25 was shown already\n"
