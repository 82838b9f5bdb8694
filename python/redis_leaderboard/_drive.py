"""One method, two APIs: every board method is written once and run by the sync or the
asyncio driver.

A method is written in one of two shapes:

- ``@one_trip``: a method of one round trip, ``return self._run(operation)``. ``self._run``
  is the driver's: the sync client's ``run`` (the result) or the asyncio client's (an
  awaitable of it). The sync class gets the function itself, so it costs what a hand-written
  method costs; the asyncio class gets a coroutine method awaiting it.
- ``@plan``: a method of several steps, a generator that yields each step and receives its
  result. A step is a :class:`_core.Operation` (run by ``self.redis.run``), a list of operations
  (one batch: ``self.redis.run_many``, every node at once on a cluster) or a
  :class:`Pipelined` stream of operations (``self.redis.run_pipelined``) or :class:`Concurrent`
  plans (each run to its end on the same client, all at once: a thread each under the sync
  driver, a task each under the asyncio one). A plan does no I/O itself, so it is one algorithm
  whichever driver runs it; it validates its arguments before its first step, so bad input
  raises before anything is sent.

A class deriving from :class:`SyncDriven` or :class:`AsyncDriven` gets, for each method so
marked (its own or inherited), a plain method or a coroutine method, made once when the class is
created. mypy sees the method's parameters and its result (or an awaitable of it) on either
class; reading one on a class that is neither raises ``TypeError``.
"""

from __future__ import annotations
import __future__

import ast
import asyncio
import functools
import inspect
import textwrap
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import (
    Any,
    Callable,
    Concatenate,
    Coroutine,
    Generator,
    Generic,
    Iterator,
    NamedTuple,
    Optional,
    ParamSpec,
    Protocol,
    TypeVar,
    Union,
    overload,
)

from ._core import Operation

__all__ = [
    "INSTALLED",
    "AsyncDriven",
    "Concurrent",
    "Installed",
    "Pipelined",
    "Plan",
    "Runner",
    "Sent",
    "Step",
    "SyncDriven",
    "one_trip",
    "plan",
    "set_timing",
]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
M = TypeVar("M", bound="_Marked[Any, Any]")


class Sent(Generic[T_co]):
    """What ``self._run(operation)`` gives a method written once: the operation's result under
    the sync driver, an awaitable of it under the asyncio driver. Only a type: a ``@one_trip``
    method returns it as it is."""


class Runner(Protocol):
    """``self._run``: runs one operation on the board's client (see :class:`Sent`)."""

    def __call__(self, operation: Operation[T], /) -> Sent[T]: ...


class Pipelined:
    """A plan step: ``operations`` (an iterator, consumed lazily) written up to ``in_flight``
    ahead of their replies on one connection; ``on_reply(result)`` is called with each reply in
    order. Its result is None; the first error stops the stream and is raised."""

    __slots__ = ("in_flight", "on_reply", "operations")

    def __init__(
        self,
        operations: Iterator[Operation[Any]],
        on_reply: Callable[[Any], None],
        in_flight: int,
    ) -> None:
        self.operations = operations
        self.on_reply = on_reply
        self.in_flight = in_flight


class Concurrent:
    """A plan step: ``plans``, each run to its end on the board's client, all at once (the sync
    driver gives each a thread, at most :data:`CONCURRENT_THREADS` at a time; the asyncio
    driver a task). Its result is their results, in order. Once every plan has ended, the first
    error (in order) is raised, so nothing is still being sent when it is."""

    __slots__ = ("plans",)

    def __init__(self, plans: list[Plan[Any]]) -> None:
        self.plans = plans


CONCURRENT_THREADS = 16

Step = Union["Operation[Any]", "list[Operation[Any]]", Pipelined, Concurrent]
Plan = Generator[Step, Any, R]


class SyncDriven:
    """A class whose ``@one_trip`` and ``@plan`` methods are plain methods."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _install(cls, sync=True)


class AsyncDriven:
    """A class whose ``@one_trip`` and ``@plan`` methods are coroutine methods."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _install(cls, sync=False)


class _Marked(Generic[P, R]):
    """A method written once, waiting for a driven class to turn it into a method."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        functools.update_wrapper(self, function)  # type: ignore[arg-type]

    @overload
    def __get__(self: M, obj: None, owner: type) -> M: ...
    @overload
    def __get__(self, obj: AsyncDriven, owner: type) -> Callable[P, Coroutine[Any, Any, R]]: ...
    @overload
    def __get__(self, obj: SyncDriven, owner: type) -> Callable[P, R]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        raise TypeError(
            f"{owner.__name__}.{self.function.__name__} is written once for both APIs: call it "
            "on a class deriving from SyncDriven or AsyncDriven"
        )


class one_trip(_Marked[P, R]):
    """A method of one round trip: ``return self._run(operation)`` (see the module)."""

    function: Callable[Concatenate[Any, P], Sent[R]]

    def __init__(self, function: Callable[Concatenate[Any, P], Sent[R]]) -> None:
        super().__init__(function)


class plan(_Marked[P, R]):
    """A method of several steps: a generator of steps (see the module). ``.plan`` is the
    generator function, for another plan to ``yield from``."""

    function: Callable[Concatenate[Any, P], Plan[R]]

    def __init__(self, function: Callable[Concatenate[Any, P], Plan[R]]) -> None:
        super().__init__(function)

    @property
    def plan(self) -> Callable[Concatenate[Any, P], Plan[R]]:
        return self.function


class Installed(NamedTuple):
    """A method :func:`_install` made: ``method`` is on ``cls`` as ``name`` (unless the timing
    of ``redis_leaderboard.observability`` wraps it)."""

    cls: weakref.ref[type]
    name: str
    method: Callable[..., Any]
    sync: bool


# Every method made so far, and, while redis_leaderboard.observability is on, the wrapper it
# puts in each one's place (classes made later get theirs when made). Off, nothing is wrapped:
# a method costs what it costs without observability.
INSTALLED: list[Installed] = []
Wrap = Callable[[Installed], Callable[..., Any]]
timing: Optional[Wrap] = None


def _install(cls: type, sync: bool) -> None:
    for name in dir(cls):
        attribute = inspect.getattr_static(cls, name)
        if isinstance(attribute, one_trip):
            _show_result(attribute.function)
            method = attribute.function if sync else _async_one_trip(attribute.function)
        elif isinstance(attribute, plan):
            _show_result(attribute.function)
            method = (_sync_plan if sync else _async_plan)(attribute.function)
        else:
            continue
        installed = Installed(weakref.ref(cls), name, method, sync)
        INSTALLED.append(installed)
        setattr(cls, name, method if timing is None else timing(installed))


def set_timing(wrap: Optional[Wrap]) -> None:
    """Puts ``wrap(installed)`` in the place of every method made (None: the methods again)."""
    global timing
    timing = wrap
    live = []
    for installed in INSTALLED:
        cls = installed.cls()
        if cls is None:
            continue
        live.append(installed)
        setattr(cls, installed.name, installed.method if wrap is None else wrap(installed))
    INSTALLED[:] = live


def _show_result(function: Callable[..., Any]) -> None:
    """The return annotation a reader (``help()``, ``inspect.signature``, the API reference)
    should see: ``Sent[X]`` and ``Plan[X]`` are how a method is written, X what it gives (the
    awaited result of the asyncio method)."""
    annotations = function.__annotations__
    result = annotations.get("return")
    for wrapper in ("Sent[", "Plan["):
        if isinstance(result, str) and result.startswith(wrapper) and result.endswith("]"):
            annotations["return"] = result[len(wrapper) : -1]


def _async_one_trip(function: Callable[..., Any]) -> Callable[..., Any]:
    coroutine = _awaiting_copy(function)
    if coroutine is not None:
        return coroutine

    @functools.wraps(function)
    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await function(self, *args, **kwargs)

    return method


def _awaiting_copy(function: Callable[..., Any]) -> Optional[Callable[..., Any]]:
    """``function`` as a coroutine function that awaits what it returns, compiled from its own
    source: the asyncio method then runs the very code of a hand-written
    ``return await self._run(...)``, with no wrapper's call in between (a wrapper costs about
    5% of an asyncio call's client CPU). None when that cannot be done faithfully (no source,
    or a closure: the copy would not see the same names); the caller then wraps."""
    code = function.__code__
    if code.co_freevars:
        return None
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    node = ast.parse(source).body[0]
    if not isinstance(node, ast.FunctionDef):
        return None
    inner = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    if any(isinstance(child, inner) for child in ast.walk(node) if child is not node):
        return None
    for child in ast.walk(node):
        if isinstance(child, ast.Return) and child.value is not None:
            child.value = ast.copy_location(ast.Await(value=child.value), child.value)
    copy = ast.AsyncFunctionDef(**{**vars(node), "decorator_list": []})
    module = ast.Module(body=[copy], type_ignores=[])
    # Its lines are the source's, so a traceback shows the method's own lines: the source
    # begins at the first decorator, the code's first line.
    ast.increment_lineno(module, code.co_firstlineno - 1)
    compiled = compile(
        ast.fix_missing_locations(module),
        code.co_filename,
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    namespace: dict[str, Any] = {}
    exec(compiled, function.__globals__, namespace)
    coroutine: Callable[..., Any] = namespace[node.name]
    return functools.update_wrapper(coroutine, function)


def _sync_plan(function: Callable[..., Plan[Any]]) -> Callable[..., Any]:
    @functools.wraps(function)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        steps = function(self, *args, **kwargs)
        try:
            step = next(steps)
            while True:
                try:
                    if isinstance(step, Operation):
                        result = self.redis.run(step)
                    elif isinstance(step, list):
                        result = self.redis.run_many(step)
                    elif isinstance(step, Pipelined):
                        result = self.redis.run_pipelined(
                            step.operations, step.on_reply, step.in_flight
                        )
                    else:
                        result = _concurrent_sync(self, step.plans)
                except BaseException as error:  # the plan sees it (and may clean up)
                    step = steps.throw(error)
                else:
                    step = steps.send(result)
        except StopIteration as done:
            return done.value

    return method


def _given(owner: Any, steps: Plan[Any]) -> Plan[Any]:
    return steps


# ``_drive_sync(owner, steps)``: runs a plan already made on ``owner.redis`` (a Concurrent
# step's), by the very loop of a method.
_drive_sync = _sync_plan(_given)


def _concurrent_sync(owner: Any, plans: list[Plan[Any]]) -> list[Any]:
    if not plans:
        return []
    with ThreadPoolExecutor(max_workers=min(len(plans), CONCURRENT_THREADS)) as pool:
        futures = [pool.submit(_drive_sync, owner, steps) for steps in plans]
    return [future.result() for future in futures]  # every one done: the first error, if any


def _async_plan(function: Callable[..., Plan[Any]]) -> Callable[..., Any]:
    @functools.wraps(function)
    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        steps = function(self, *args, **kwargs)
        try:
            step = next(steps)
            while True:
                try:
                    if isinstance(step, Operation):
                        result = await self.redis.run(step)
                    elif isinstance(step, list):
                        result = list(await asyncio.gather(*self.redis.run_many(step)))
                    elif isinstance(step, Pipelined):
                        result = await self.redis.run_pipelined(
                            step.operations, step.on_reply, step.in_flight
                        )
                    else:
                        result = await _concurrent_async(self, step.plans)
                except BaseException as error:  # the plan sees it (and may clean up)
                    step = steps.throw(error)
                else:
                    step = steps.send(result)
        except StopIteration as done:
            return done.value

    return method


_drive_async = _async_plan(_given)  # as _drive_sync, a coroutine


async def _concurrent_async(owner: Any, plans: list[Plan[Any]]) -> list[Any]:
    results = await asyncio.gather(
        *(_drive_async(owner, steps) for steps in plans), return_exceptions=True
    )
    for result in results:  # every one done: the first error, if any
        if isinstance(result, BaseException):
            raise result
    return list(results)
