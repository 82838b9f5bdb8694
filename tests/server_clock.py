"""The test servers' clock: moved by the tests, as the boards' clocks are.

The library takes time from the server (the ``TIME`` a script sees decides which period, bucket
or window a write belongs to, and when anything closes or expires). Tests that move a board's
clock (``helpers.FakeClock``) move the server's with it: every redis-server the fixtures start
runs with ``server_clock.cpp`` preloaded (``ENV``), which makes its wall clock follow a file this
module writes. Between tests the clock is the real one again (an autouse fixture in
conftest.py calls ``reset``).

A server this cannot reach (a statically linked one, as the server matrix's are; or one started
without ``ENV``) keeps the real clock: ``movable()`` says so, and a test that moves the clock is
skipped there (``FakeClock`` does it).
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

_SOURCE = Path(__file__).with_name("server_clock.cpp")
_FORMAT = "qqq"  # mode, real ns, fake ns (see server_clock.cpp)
_REAL, _RUNNING, _FROZEN = 0, 1, 2


def _build() -> Path:
    """The shim, compiled once per source (cached in the temporary directory)."""
    digest = hashlib.sha256(_SOURCE.read_bytes()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"rlb-server-clock-{digest}.so"
    if not out.exists():
        partial = out.with_suffix(f".{os.getpid()}.so")
        subprocess.run(
            [
                "g++",
                "-std=c++17",
                "-O2",
                "-shared",
                "-fPIC",
                "-o",
                str(partial),
                str(_SOURCE),
                "-ldl",
            ],
            check=True,
        )
        partial.replace(out)
    return out


_FILE = Path(tempfile.mkdtemp(prefix="rlb-server-clock-")) / "clock"
_FILE.write_bytes(struct.pack(_FORMAT, _REAL, 0, 0))
_fd = os.open(_FILE, os.O_RDWR)
_map = mmap.mmap(_fd, struct.calcsize(_FORMAT))

ENV = {"LD_PRELOAD": str(_build()), "RLB_TEST_CLOCK_FILE": str(_FILE)}
"""The environment a redis-server needs to follow this clock."""


def _write(mode: int, real: int, fake: int) -> None:
    # The server reads the three words without a lock: mode last when entering a mode, first
    # when leaving one, so that it never sees a mode with the instants of another.
    _map[0:8] = struct.pack("q", _REAL)
    _map[8:24] = struct.pack("qq", real, fake)
    _map[0:8] = struct.pack("q", mode)


def _ns(moment: datetime) -> int:
    delta = moment.astimezone(timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def freeze(moment: datetime) -> None:
    """The servers' clocks stand at ``moment`` until moved again."""
    _write(_FROZEN, 0, _ns(moment))


def run_from(moment: datetime) -> None:
    """The servers' clocks show ``moment`` now and run on from it."""
    _write(_RUNNING, time.time_ns(), _ns(moment))


def reset() -> None:
    """The servers' clocks are the real one again."""
    _write(_REAL, 0, 0)


def moved() -> bool:
    """Whether the servers' clocks are not the real one."""
    return struct.unpack("q", _map[0:8])[0] != _REAL


_movable: dict[int, bool] = {}


def movable(r: Any, port: Optional[int] = None) -> bool:
    """Whether the server of redis-py client ``r`` follows this clock (asked once per port)."""
    key = port if port is not None else id(r)
    if key not in _movable:
        saved = _map[:]
        freeze(datetime(2001, 1, 1, tzinfo=timezone.utc))
        try:
            _movable[key] = int(r.time()[0]) == 978307200
        finally:
            _map[:] = saved
    return _movable[key]
