"""The oldest Python the package claims (``requires-python``) is one it runs on: the metadata
agrees with itself (classifiers, ruff's target), and on the floor interpreter itself (pyenv's
or ``python3.X`` on PATH) every module of the package compiles and every name it imports from
the standard library exists (``typing.ParamSpec`` is 3.10+: a floor of 3.9 fails here).
The whole check (a venv on the floor interpreter, the package built and installed there, its
import and a smoke subset of the tests) is ``.ci/python-floor``: minutes, as it builds the C++
core, so it is not part of this suite."""

from __future__ import annotations

import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "redis_leaderboard"
NEWEST = (3, 15)


def pyproject() -> str:
    return (ROOT / "pyproject.toml").read_text()


def floor() -> tuple[int, int]:
    match = re.search(r'^requires-python = ">=3\.(\d+)"$', pyproject(), re.M)
    assert match, "requires-python must be a plain floor: '>=3.N'"
    return 3, int(match.group(1))


def floor_interpreter() -> Optional[str]:
    major, minor = floor()
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = glob.glob(f"{root}/versions/{major}.{minor}.*/bin/python{major}.{minor}")
    if candidates:
        return max(
            candidates, key=lambda p: int(p.split("/versions/")[1].split(".")[2].split("/")[0])
        )
    found = shutil.which(f"python{major}.{minor}")
    return found if found and "/shims/" not in found else None  # a shim may name no install


def test_the_metadata_names_the_floor_everywhere() -> None:
    major, minor = floor()
    assert (major, minor) >= (3, 10), "3.9 is past its end of life, and the package needs 3.10"
    text = pyproject()
    assert f'target-version = "py{major}{minor}"' in text
    listed = re.findall(r'"Programming Language :: Python :: 3\.(\d+)"', text)
    assert [int(m) for m in listed] == list(range(minor, NEWEST[1] + 1))
    readme = (ROOT / "README.md").read_text()
    assert f"Python {major}.{minor} or newer" in readme
    assert "supports 3.9" not in readme


def imported_names() -> dict[str, set[str]]:
    """``{module: names}`` of every ``from <stdlib module> import names`` in the package."""
    names: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                top = node.module.split(".")[0]
                if top in sys.stdlib_module_names and top != "__future__":
                    names.setdefault(node.module, set()).update(a.name for a in node.names)
    return names


def test_the_package_compiles_and_its_stdlib_imports_exist_on_the_floor() -> None:
    python = floor_interpreter()
    if python is None:
        version = ".".join(map(str, floor()))
        pytest.skip(f"no Python {version} here (pyenv install {version})")
    check = """
import importlib, json, sys
names = json.loads(sys.argv[1])
missing = []
for module, wanted in sorted(names.items()):
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        missing.append(module)
        continue
    for name in sorted(wanted):
        if hasattr(loaded, name):
            continue
        try:  # a submodule: from importlib import resources
            importlib.import_module(f"{module}.{name}")
        except ImportError:
            missing.append(f"{module}.{name}")
for path in sys.argv[2:]:
    compile(open(path, encoding="utf-8").read(), path, "exec")
print(json.dumps(missing))
"""
    sources = [str(p) for p in sorted(PACKAGE.rglob("*.py"))]
    names = {module: sorted(wanted) for module, wanted in imported_names().items()}
    done = subprocess.run(
        [python, "-c", check, json.dumps(names), *sources],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], f"missing on {python}"
    assert "typing" in names and "ParamSpec" in names["typing"]  # the check sees them
