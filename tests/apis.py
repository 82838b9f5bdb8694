"""The sync and the asyncio API behind one interface, so that one board test runs over both.

The ``api`` fixture (conftest.py) gives each board test an :class:`Api`: ``sync``
(``redis_leaderboard``), then ``asyncio`` and ``uvloop`` (``redis_leaderboard.asyncio`` on that
event loop). A test builds its boards with it (``api.leaderboard(key, 10)``, ``api.periodic``,
``api.rolling``, ``api.group``) and calls them the same way whichever API it is: a sync board is
itself; an asyncio board comes wrapped in :class:`Blocking`, whose calls run each coroutine to
its end on the test's event loop (one loop for the whole test, as an application has), and whose
event streams iterate like the sync ones. What is about concurrency (tasks sharing a connection,
threads sharing a pool) is not hidden here: those tests use the asyncio API directly.

``LB_TEST_LAYOUT=compact`` builds every board whose class has layouts in the compact layout
unless the test gives ``layout`` (helpers.py: ``TEST_LAYOUT``; the default is the guide's).
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Coroutine
from typing import Any, Callable, Optional, TypeVar

import pytest

import redis_leaderboard
import redis_leaderboard.asyncio as aio
from helpers import TEST_LAYOUT, takes_layout

if sys.version_info >= (3, 11):
    from asyncio import Runner
else:  # pytest-asyncio's own dependency there
    from backports.asyncio.runner import Runner

T = TypeVar("T")
LoopFactory = Callable[[], asyncio.AbstractEventLoop]

# What a call on an asyncio object may return that is wrapped in turn.
ASYNC_OBJECTS = (
    aio.Client,
    aio.RedisLeaderboard,
    aio.PeriodicLeaderboard,
    aio.RollingLeaderboard,
    aio.LeaderboardGroup,
    aio.ShardedLeaderboard,
    aio.League,
    aio.Tournament,
    aio.TeamLeaderboard,
)

# Restricts a board test to the sync API and asyncio on its own loop (not uvloop): for the few
# whose cost is their size or their sleeps, where a second loop adds time and no coverage.
sync_and_one_loop = pytest.mark.parametrize("api", ["sync", "asyncio"], indirect=True)
# The sync API only: for tests of threads sharing the sync client (the asyncio client's
# concurrency is tasks on one loop: those tests use it directly).
sync_only = pytest.mark.parametrize("api", ["sync"], indirect=True)
# The asyncio API only, on each loop: for tests of tasks sharing its connection, which take the
# asyncio objects behind the API's boards (``unwrap``) and run their coroutines with ``api.run``.
asyncio_only = pytest.mark.parametrize("api", ["asyncio", "uvloop"], indirect=True)


class Api:
    """One API under test, with a client on the session's server (``client``).

    ``name`` is ``sync``, ``asyncio`` or ``uvloop``; ``module`` is ``redis_leaderboard`` or
    ``redis_leaderboard.asyncio`` (for what the helpers do not build); ``asynchronous`` says
    which. Clients made by :meth:`connect` are closed (asyncio: ``aclose()`` on the loop) when
    the test ends.
    """

    def __init__(self, name: str, host: str, port: int, loop_factory: Optional[LoopFactory]):
        self.name = name
        self.asynchronous = loop_factory is not None
        self.module: Any = aio if self.asynchronous else redis_leaderboard
        self._runner = Runner(loop_factory=loop_factory) if loop_factory else None
        # Calls run with the loop's own run_until_complete: Runner.run would also install and
        # remove a SIGINT handler each time, which costs more than most calls.
        self._loop = self._runner.get_loop() if self._runner else None
        self._host, self._port = host, port
        self._clients: list[Any] = []
        self.client = self.connect()

    def __repr__(self) -> str:
        return f"Api({self.name!r})"

    # --- clients and boards ---

    def connect(self, **options: Any) -> Any:
        """A new client of this API (``host`` and ``port``: the session's server unless
        given), closed when the test ends."""
        options.setdefault("port", self._port)
        options.setdefault("host", self._host if options["port"] == self._port else "127.0.0.1")
        client = self.module.Client(**options)
        self._clients.append(client)
        return self.wrap(client)

    def leaderboard(self, *args: Any, client: Any = None, **options: Any) -> Any:
        """``RedisLeaderboard(client, *args, **options)`` of this API (``client``: this API's
        own unless given)."""
        return self.make("RedisLeaderboard", *args, client=client, **options)

    def periodic(self, *args: Any, client: Any = None, **options: Any) -> Any:
        return self.make("PeriodicLeaderboard", *args, client=client, **options)

    def rolling(self, *args: Any, client: Any = None, **options: Any) -> Any:
        return self.make("RollingLeaderboard", *args, client=client, **options)

    def league(self, key: str, clock: Any, **options: Any) -> Any:
        """``League(client, key, clock=clock, **options)`` of this API."""
        return self.make("League", key, clock=clock, **options)

    def tournament(self, key: str, clock: Any, **options: Any) -> Any:
        """``Tournament(client, key, clock=clock, **options)`` of this API."""
        return self.make("Tournament", key, clock=clock, **options)

    def group(self, boards: list[Any], client: Any = None) -> Any:
        """``LeaderboardGroup(client, boards)`` of this API, over boards made by it."""
        return self.make("LeaderboardGroup", [unwrap(b) for b in boards], client=client)

    def make(self, class_name: str, *args: Any, client: Any = None, **options: Any) -> Any:
        """``class_name`` of this API's module, on ``client`` (this API's own unless given).
        A board type that has layouts takes the run's (``$LB_TEST_LAYOUT``, helpers.py) unless
        the test gives ``layout``."""
        cls = getattr(self.module, class_name)
        if TEST_LAYOUT != "guide" and takes_layout(cls):
            options.setdefault("layout", TEST_LAYOUT)
        return self.wrap(cls(unwrap(self.client if client is None else client), *args, **options))

    @property
    def other_module(self) -> Any:
        """The other API's module: its boards are refused by this API's groups."""
        return redis_leaderboard if self.asynchronous else aio

    # --- running ---

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        """Runs ``main`` to its end on the test's loop (asyncio API only): for tests that run
        tasks of their own on the asyncio objects behind the boards (``unwrap``)."""
        assert self._loop is not None, "the sync API has no event loop"
        return self._loop.run_until_complete(main)

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``method(*args, **kwargs)`` made on the test's loop (asyncio objects bind to the
        loop they are first used on), awaited if it is a coroutine, its result wrapped. A
        :class:`Blocking` board's method (``api.call(board.submit, ...)``) blocks already."""
        if self._loop is None or getattr(method, "blocks", False):
            return method(*args, **kwargs)
        return self.wrap(self._loop.run_until_complete(_call_and_await(method, args, kwargs)))

    def wrap(self, value: Any) -> Any:
        """An asyncio board, group, client or event stream wrapped to be called like the sync
        API's; anything else (results, sync objects) as it is."""
        if self._runner is None:
            return value
        if isinstance(value, ASYNC_OBJECTS):
            return Blocking(value, self)
        if hasattr(value, "__anext__") and hasattr(value, "read"):
            return BlockingStream(value, self)
        return value

    def close(self) -> None:
        """Closes every client made by :meth:`connect`, then the test's loop."""
        try:
            for client in self._clients:
                if self._runner is None:
                    client.close()
                else:
                    assert client._core.pending == 0  # every call of the test answered
                    self.run(client.aclose())
                    assert client._core.pending == 0
        finally:
            if self._runner is not None:
                self._runner.close()


async def _call_and_await(
    method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    result = method(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def unwrap(value: Any) -> Any:
    """The asyncio object behind a :class:`Blocking` (anything else as it is)."""
    return value._target if isinstance(value, Blocking) else value


class Blocking:
    """An asyncio board, group or client whose methods block: each call runs on the test's
    event loop until its coroutine ends. Attributes that are not methods (``key``,
    ``max_entries``, ...) are the object's own (an asyncio board among them, such as a team
    board's ``teams``, wrapped in turn); ``repr`` too."""

    def __init__(self, target: Any, api: Api) -> None:
        self._target = target
        self._api = api

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not inspect.ismethod(value):
            return self._api.wrap(value)  # a team board's boards are boards too

        def blocking(*args: Any, **kwargs: Any) -> Any:
            return self._api.call(value, *args, **kwargs)

        blocking.blocks = True  # type: ignore[attr-defined]
        return blocking

    def __repr__(self) -> str:
        return repr(self._target)


class BlockingStream:
    """An asyncio event stream read like a sync one: iterated, ``read()``, ``close()``, and a
    context manager."""

    def __init__(self, stream: Any, api: Api) -> None:
        self._stream = stream
        self._api = api

    @property
    def last_id(self) -> str:
        return str(self._stream.last_id)

    def read(self, block: Optional[float] = None) -> list[dict[str, Any]]:
        return self._api.call(self._stream.read, block)  # type: ignore[no-any-return]

    def __iter__(self) -> BlockingStream:
        return self

    def __next__(self) -> dict[str, Any]:
        more, event = self._api.call(_next_event, self._stream)
        if not more:
            raise StopIteration
        return event  # type: ignore[no-any-return]

    def close(self) -> None:
        self._api.call(self._stream.aclose)

    def __enter__(self) -> BlockingStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _next_event(stream: Any) -> tuple[bool, Any]:
    try:
        return True, await stream.__anext__()
    except StopAsyncIteration:
        return False, None
