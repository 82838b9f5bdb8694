"""redis_leaderboard: the redis.io leaderboard guide's ``RedisLeaderboard``, with a C++ core.

Same methods, arguments, return shapes and key layout as the guide's redis-py class; every
operation takes one round trip and every write is atomic (a server-side script).
"""

from ._core import (
    AuthenticationError,
    BusyLoadingError,
    Client,
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
from .leaderboard import RedisLeaderboard

__version__ = "0.1.0"

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
