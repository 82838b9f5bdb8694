"""redis_leaderboard: the redis.io leaderboard guide's ``RedisLeaderboard``, with a C++ core.

Same methods, arguments, return shapes and key layout as the guide's redis-py class; every
operation takes one round trip and every write is atomic (a server-side script).
"""

from importlib.metadata import version as _version

from ._core import (
    AuthenticationError,
    BusyLoadingError,
    ConnectionError,
    ExecAbortError,
    NoPermissionError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisError,
    ResponseError,
    TimeoutError,
)
from .asyncio import RedisLeaderboard as AsyncRedisLeaderboard
from .client import Client
from .leaderboard import RedisLeaderboard

# pyproject.toml's version, the one source (CMake gets it from scikit-build-core too).
__version__ = _version("redis-leaderboard")

__all__ = [
    "AsyncRedisLeaderboard",
    "AuthenticationError",
    "BusyLoadingError",
    "Client",
    "ConnectionError",
    "ExecAbortError",
    "NoPermissionError",
    "NoScriptError",
    "OutOfMemoryError",
    "ReadOnlyError",
    "RedisError",
    "RedisLeaderboard",
    "ResponseError",
    "TimeoutError",
    "__version__",
]
