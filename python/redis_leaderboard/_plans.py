"""One method, two APIs: a method is written once, as a plan (a generator that yields the steps
of its round trips and receives their results), and run by the sync or the asyncio driver.

A step is a :class:`_core.Operation` (run on ``self.redis``) or a callable taking no argument
(called, and awaited under asyncio: a method of the sync or asyncio base class, whichever the
object has). ``@plan_method`` marks a plan; a class deriving from :class:`SyncDriven` or
:class:`AsyncDriven` gets, for each, a plain method (or a coroutine method) that runs it, made
once when the class is created, so a call costs one Python frame more than a hand-written one.
mypy sees the plan's parameters and its result (or an awaitable of it) on either class.
"""

from __future__ import annotations

import functools
import inspect
from typing import (
    Any,
    Callable,
    Concatenate,
    Coroutine,
    Generator,
    Generic,
    ParamSpec,
    TypeVar,
    Union,
    overload,
)

from . import _core

P = ParamSpec("P")
R = TypeVar("R")
Step = Union["_core.Operation[Any]", Callable[[], Any]]  # generic in the stub only
Plan = Generator[Step, Any, R]


class SyncDriven:
    """A class whose plan methods are plain methods (one round trip after another)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _install(cls, _sync_method)


class AsyncDriven:
    """A class whose plan methods are coroutine methods."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _install(cls, _async_method)


class plan_method(Generic[P, R]):
    """Marks a plan as a method of the sync and of the asyncio classes (see the module)."""

    def __init__(self, plan: Callable[Concatenate[Any, P], Plan[R]]) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> plan_method[P, R]: ...
    @overload
    def __get__(self, obj: AsyncDriven, owner: type) -> Callable[P, Coroutine[Any, Any, R]]: ...
    @overload
    def __get__(self, obj: SyncDriven, owner: type) -> Callable[P, R]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        raise TypeError(
            f"{owner.__name__}.{self.plan.__name__} is a plan: run it on a class deriving from "
            "SyncDriven or AsyncDriven"
        )


def _install(cls: type, make: Callable[[Callable[..., Plan[Any]]], Callable[..., Any]]) -> None:
    for name in dir(cls):
        attribute = inspect.getattr_static(cls, name)
        if isinstance(attribute, plan_method):
            setattr(cls, name, make(attribute.plan))


def _sync_method(plan: Callable[..., Plan[Any]]) -> Callable[..., Any]:
    @functools.wraps(plan)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        steps = plan(self, *args, **kwargs)
        try:
            step = next(steps)
            while True:
                if isinstance(step, _core.Operation):
                    step = steps.send(self.redis.run(step))
                else:
                    step = steps.send(step())
        except StopIteration as done:
            return done.value

    return method


def _async_method(plan: Callable[..., Plan[Any]]) -> Callable[..., Any]:
    @functools.wraps(plan)
    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        steps = plan(self, *args, **kwargs)
        try:
            step = next(steps)
            while True:
                if isinstance(step, _core.Operation):
                    step = steps.send(await self.redis.run(step))
                else:
                    step = steps.send(await step())
        except StopIteration as done:
            return done.value

    return method
