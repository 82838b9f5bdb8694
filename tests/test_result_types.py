"""Typed results: a caller's ``mypy --strict`` sees each result's keys (the TypedDicts of
``redis_leaderboard._types`` through the generic ``Operation`` of ``_core.pyi``), so a typo in a
key fails type checking; at run time the results stay plain dicts. No server: mypy only reads
the installed package's annotations."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from redis_leaderboard import _types

pytest.importorskip("mypy")

SNIPPET = """
from redis_leaderboard import RedisLeaderboard
from redis_leaderboard.asyncio import RedisLeaderboard as AsyncRedisLeaderboard


def sync_use(board: RedisLeaderboard) -> int:
    top = board.get_top(3)
    written = board.submit("ann", 10, submission_id="s-1")
    page = board.get_page(1)
    entry = board.get_user_entry("ann")
    return top[0]["{rank}"] + len(written["trimmed_user_ids"]) + page["total_pages"] + (
        0 if entry is None else entry["rank"]
    )


async def async_use(board: AsyncRedisLeaderboard) -> float:
    entries = await board.get_around_user("ann")
    bins = await board.get_histogram(4)
    return entries[0]["score"] + bins[0]["count"]
"""


def run_mypy(tmp_path: Path, rank_key: str) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "snippet.py"
    source.write_text(textwrap.dedent(SNIPPET.replace("{rank}", rank_key)))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,  # the installed package, not the source tree
    )


def test_a_typo_in_a_result_key_fails_mypy_strict(tmp_path: Path) -> None:
    result = run_mypy(tmp_path, "rnak")
    assert result.returncode == 1, result.stdout + result.stderr
    # mypy 1.x: '"Entry" has no key "rnak"'; 2.x: '"rnak" is not a valid TypedDict key;
    # expected one of ("rank", ...)'.
    wordings = ('"Entry" has no key "rnak"', '"rnak" is not a valid TypedDict key')
    assert any(wording in result.stdout for wording in wordings), result.stdout


def test_the_correct_keys_pass_mypy_strict(tmp_path: Path) -> None:
    result = run_mypy(tmp_path, "rank")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_result_types_are_plain_dicts_at_run_time() -> None:
    # A TypedDict costs nothing when the code runs: what it describes is a dict.
    entry: _types.Entry = {"rank": 1, "user_id": "ann", "score": 1.0, "metadata": {}}
    assert type(entry) is dict
    assert _types.SubmitResult.__optional_keys__ == {"duplicate", "period"}
    assert _types.WriteResult.__optional_keys__ == {"rank"}
    assert _types.Event.__optional_keys__ == {"removed", "size", "member", "period"}
    assert _types.ImportSummary.__optional_keys__ == {"duplicates"}
