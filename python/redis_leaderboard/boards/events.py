"""A board's change events (``events=True``): a stream read with XREAD on a connection of its
own. Reading is I/O by nature, so the sync and the asyncio streams both exist; everything but
the loop that waits is ``StreamState``'s, written once."""

from __future__ import annotations

import time
from typing import Any, Callable, Generator, Generic, Mapping, Optional, TypeVar

from .._core import Operation

E = TypeVar("E", bound=Mapping[str, Any])

__all__ = [
    "EVENTS_BATCH",
    "EVENTS_BLOCK_SLICE",
    "AsyncEventStream",
    "EventStream",
    "StreamState",
    "check_block",
]

# Guards: events() waits in XREAD BLOCK slices of at most this many seconds, so a server
# that stops answering is noticed within a slice plus socket_timeout, never a hang.
EVENTS_BLOCK_SLICE = 2.0
# What events() asks for per round trip.
EVENTS_BATCH = 100


def check_block(block: Optional[float]) -> Optional[float]:
    """``block`` of ``events()`` and ``read()``: None or seconds from 0 to 1e6."""
    if block is not None and (isinstance(block, bool) or not isinstance(block, (int, float))):
        raise TypeError(f"block must be None or a number of seconds, not {type(block).__name__}")
    if block is not None and not 0 <= block <= 1e6:
        raise ValueError("block must be None or a number of seconds from 0 to 1e6")
    return block


def events_slices(block: Optional[float]) -> Generator[Optional[float], Optional[bool], None]:
    """The XREAD BLOCK of each round trip of ``events(block=...)``: slices of at most
    EVENTS_BLOCK_SLICE seconds; ``block=None`` waits for ever (slice after slice), a number
    gives up once that long has passed without an event (0: no wait). ``send(True)`` (an
    event came) starts the wait again; it yields None (the value of that send) first.
    ``block`` is checked by ``check_block`` before this generator starts."""
    until = None if block is None else time.monotonic() + block
    first = True
    while True:
        if until is None:
            wait: Optional[float] = EVENTS_BLOCK_SLICE
        else:
            left = until - time.monotonic()
            if left <= 0 and not first:
                return
            wait = max(0.0, min(left, EVENTS_BLOCK_SLICE)) or None
        first = False
        if (yield wait) and block is not None:  # an event came: wait afresh
            until = time.monotonic() + block
            first = True
            yield None


# One XREAD of a stream after an id: (last_id, count, block) -> its operation (a board's
# ``read_events``, a league partition's).
Reader = Callable[[str, int, Optional[float]], "Operation[Any]"]


class StreamState(Generic[E]):
    """What both streams hold and do: the arguments (every one checked when ``events()`` is
    called, before any connection or state exists), the position ``last_id``, the events read
    and not handed out yet, the wait's slices, and the reading connection. ``owner`` is the
    board (or league) whose client opens the reading connection; ``read`` makes each XREAD
    (the board's ``read_events`` unless given), and ``convert`` turns each event read into
    what the stream hands out."""

    _reader: Any = None  # what close() and __del__ see if __init__ raised

    def __init__(
        self,
        owner: Any,
        last_id: str,
        block: Optional[float],
        count: int,
        read: Optional[Reader] = None,
        convert: Optional[Callable[[Any], E]] = None,
    ) -> None:
        check_block(block)
        self._read: Reader = read if read is not None else owner._board.read_events
        self._read(last_id, count, None)  # validates last_id and count, sends nothing
        self._convert = convert
        self._slices = events_slices(block)
        self._redis = owner.redis
        self._count = count
        self._buffer: list[E] = []
        self._reader = None
        self.last_id = last_id

    def _operation(self, block: Optional[float]) -> Operation[Any]:
        """One XREAD after ``last_id``: ``block`` 0 (or None) sends no BLOCK at all, so it
        answers at once (``BLOCK 1`` would wait for the server's timer, about 100 ms on an
        idle stream). Opens the reading connection (the client's options) the first time."""
        operation = self._read(self.last_id, self._count, check_block(block) or None)
        if self._reader is None:
            self._reader = self._redis.dedicated()
        return operation

    def _received(self, batch: Mapping[str, Any]) -> list[E]:
        self.last_id = batch["last_id"]
        if self._convert is not None:
            return [self._convert(event) for event in batch["events"]]
        events: list[E] = batch["events"]
        return events

    def _next_wait(self) -> Optional[float]:
        """The next read's wait; StopIteration once ``block`` passed without an event."""
        return next(self._slices)

    def _refilled(self, events: list[E]) -> None:
        self._buffer = events
        if events:
            self._slices.send(True)  # an event came: the wait starts again

    def close(self) -> None:
        """Close the reading connection (a later read opens a new one)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class EventStream(StreamState[E]):
    """A board's change events, from
    [`RedisLeaderboard.events`][redis_leaderboard.RedisLeaderboard.events].

    Iterate it (each ``next`` waits as ``events(block=...)`` said), or call ``read()`` for one
    round trip. ``last_id`` is where the next read resumes. A context manager: ``with`` closes its
    connection.
    """

    def read(self, block: Optional[float] = None) -> list[E]:
        """One round trip: the events after ``last_id`` (at most ``count``).

        Args:
            block: Seconds to wait for an event. None or 0: no wait at all (an XREAD without BLOCK),
                unlike ``events(block=None)``, whose iteration waits for ever.

        Returns:
            The events, oldest first; ``[]`` if none came. ``last_id`` moves past them.

        Redis cost:
            One round trip on the stream's own connection: XREAD (BLOCK when ``block`` > 0).
            O(count).
        """
        operation = self._operation(block)
        return self._received(self._reader.run(operation))

    def __iter__(self) -> EventStream[E]:
        return self

    def __next__(self) -> E:
        while not self._buffer:
            try:
                wait = self._next_wait()
            except StopIteration:
                self.close()
                raise
            self._refilled(self.read(wait))
        return self._buffer.pop(0)

    def __enter__(self) -> EventStream[E]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


class AsyncEventStream(StreamState[E]):
    """A board's change events, from
    [`redis_leaderboard.asyncio.RedisLeaderboard.events`][redis_leaderboard.asyncio.RedisLeaderboard.events].

    ``async for`` it, or ``await read()``; ``async with`` closes its connection.
    """

    async def read(self, block: Optional[float] = None) -> list[E]:
        """As [`EventStream.read`][redis_leaderboard.leaderboard.EventStream.read], awaited.

        Args:
            block: Seconds to wait for an event; None or 0: no wait.

        Returns:
            The events, oldest first; ``[]`` if none came.

        Redis cost:
            One round trip: XREAD (BLOCK when ``block`` > 0).
        """
        operation = self._operation(block)
        return self._received(await self._reader.run(operation))

    def __aiter__(self) -> AsyncEventStream[E]:
        return self

    async def __anext__(self) -> E:
        try:
            while not self._buffer:
                try:
                    wait = self._next_wait()
                except StopIteration:
                    raise StopAsyncIteration from None
                self._refilled(await self.read(wait))
        except BaseException:
            if not self._buffer:
                self.close()  # the end, an error or cancellation: the connection goes
            raise
        return self._buffer.pop(0)

    async def aclose(self) -> None:
        """Close the reading connection (as ``close()``)."""
        self.close()

    async def __aenter__(self) -> AsyncEventStream[E]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
