"""The event loops the asyncio benchmarks run on: ``asyncio`` (the standard library's) or
``uvloop`` (optional: ``pip install '.[uvloop]'``; only imported when asked for)."""

from __future__ import annotations

import asyncio
import platform

LOOPS = ("asyncio", "uvloop")


def check(names: list[str]) -> None:
    """Refuses, before a run, a name that is not a loop or a loop that is not installed."""
    for name in names:
        if name not in LOOPS:
            raise SystemExit(f"unknown event loop {name!r}: one of {', '.join(LOOPS)}")
        if name == "uvloop":
            try:
                import uvloop  # noqa: F401
            except ImportError:
                raise SystemExit("uvloop is not installed: pip install '.[uvloop]'") from None


def new_event_loop(name: str) -> asyncio.AbstractEventLoop:
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    if name != "asyncio":
        raise ValueError(f"unknown event loop {name!r}")
    return asyncio.new_event_loop()


def describe(name: str) -> str:
    """The loop and its version, for a report."""
    if name == "uvloop":
        import uvloop

        return f"uvloop {uvloop.__version__}"
    return f"asyncio's own loop (Python {platform.python_version()})"
