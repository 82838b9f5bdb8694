"""A source build without a system package stops with one message naming it per platform.

CMake's configure step runs on this checkout with one dependency hidden at a time (pkg-config
looking in an empty directory, CMake told not to find a package, a compiler that does not
exist); each run must fail with CMakeLists.txt's message, naming what is missing and nothing
else. (.ci/wheel-smoke checks the sdist the same way on a bare Debian, every package missing.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake on PATH"),
]

HIREDIS = ["libhiredis-dev", "hiredis-devel", "hiredis-dev"]
BOOST = ["libboost-dev", "boost-devel", "boost-dev"]
OPENSSL = ["libssl-dev", "openssl-devel", "openssl-dev", "openssl@3"]
PKG_CONFIG = ["pkg-config", "pkgconf-pkg-config", "apk add pkgconf"]
COMPILER = ["a C++17 compiler", "apt-get install g++", "dnf install gcc-c++", "apk add g++"]


def cmake(tmp_path: Path) -> list[str]:
    """CMake's configure step on the checkout, with what scikit-build-core would define."""
    project = ["-DSKBUILD_PROJECT_NAME=redis_leaderboard", "-DSKBUILD_PROJECT_VERSION=0.1.0"]
    return ["cmake", "-S", str(ROOT), "-B", str(tmp_path / "build"), *project]


def configure(tmp_path: Path, *defines: str, **env: str) -> str:
    """Configure with ``defines`` and ``env``; what CMake printed (it must fail)."""
    environ = {**os.environ, **env}
    if "PKG_CONFIG_LIBDIR" in env:
        environ.pop("PKG_CONFIG_PATH", None)
    result = subprocess.run(
        [*cmake(tmp_path), f"-DPython_EXECUTABLE={sys.executable}", *defines],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "redis-leaderboard: building from source needs system packages" in output, output
    # CMake wraps a message's lines: compare with single spaces.
    return " ".join(output.split())


def assert_names(output: str, wanted: list[str], unwanted: list[str]) -> None:
    for name in wanted:
        assert name in output, (name, output)
    for name in unwanted:
        assert name not in output, (name, output)


def test_without_hiredis_names_its_package_on_each_platform(tmp_path: Path) -> None:
    empty = tmp_path / "pkgconfig"
    empty.mkdir()
    output = configure(tmp_path, PKG_CONFIG_LIBDIR=str(empty))
    assert_names(output, HIREDIS, BOOST + OPENSSL + PKG_CONFIG[1:])
    assert (
        "Debian/Ubuntu: apt-get install libhiredis-dev Fedora/RHEL: dnf install hiredis-devel "
        "Alpine: apk add hiredis-dev macOS (Homebrew): brew install hiredis (" in output
    )


def test_without_boost_and_openssl_names_both_in_one_message(tmp_path: Path) -> None:
    output = configure(
        tmp_path, "-DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON", "-DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON"
    )
    assert_names(output, BOOST + OPENSSL, HIREDIS)
    assert (
        "Debian/Ubuntu: apt-get install libssl-dev libboost-dev "
        "Fedora/RHEL: dnf install openssl-devel boost-devel "
        "Alpine: apk add openssl-dev boost-dev "
        "macOS (Homebrew): brew install openssl@3 boost (" in output
    )


def test_without_pkg_config_names_it(tmp_path: Path) -> None:
    # pkg-config lives in /usr/bin (and /bin): CMake's find_program skips them, nothing else.
    make = f"-DCMAKE_MAKE_PROGRAM={shutil.which('make')}"  # found in /usr/bin, so given
    output = configure(tmp_path, "-DCMAKE_IGNORE_PATH=/usr/bin;/bin", make)
    assert_names(output, PKG_CONFIG, BOOST + OPENSSL)
    if Path("/usr/include/hiredis/hiredis.h").exists():
        assert "libhiredis-dev" not in output, output  # its headers are there


def test_without_a_compiler_names_one(tmp_path: Path) -> None:
    output = configure(tmp_path, CXX=str(tmp_path / "no-such-c++"))
    assert_names(output, COMPILER, HIREDIS + BOOST + OPENSSL)
    assert "brew install" not in output  # macOS: xcode-select, named beside the compiler


def test_off_linux_and_macos_says_the_core_is_posix(tmp_path: Path) -> None:
    # Configured as a cross build: the check runs before any package is looked for.
    result = subprocess.run(
        [*cmake(tmp_path), "-DCMAKE_SYSTEM_NAME=Windows"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode != 0, output
    assert "builds on Linux and macOS only" in output and "this is Windows" in output, output


def test_macos_is_said_untested(tmp_path: Path) -> None:
    result = subprocess.run(
        [*cmake(tmp_path), "-DCMAKE_SYSTEM_NAME=Darwin"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = " ".join((result.stdout + result.stderr).split())
    assert "macOS is not tested" in output, output
    assert "builds on Linux and macOS only" not in output, output
