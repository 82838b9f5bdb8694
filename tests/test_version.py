"""One version: pyproject.toml's, read back from the installed package's metadata."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest

import redis_leaderboard
from redis_leaderboard import _core
from redis_leaderboard.__main__ import main

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def pyproject_version() -> str:
    match = re.search(r'^version = "([^"]+)"$', PYPROJECT.read_text(), re.MULTILINE)
    assert match, "pyproject.toml has no version line"
    return match[1]


def test_every_version_is_pyprojects() -> None:
    expected = pyproject_version()
    assert redis_leaderboard.__version__ == expected
    assert version("redis-leaderboard") == expected
    # CMake defines VERSION_INFO from the same version; the module shows it once bindings.cpp
    # exports it.
    assert getattr(_core, "__version__", expected) == expected


def test_the_command_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"redis-leaderboard {pyproject_version()}\n"
