"""redis_leaderboard: the redis.io leaderboard guide's ``RedisLeaderboard``, with a C++ core.

Same methods, arguments, return shapes and key layout as the guide's redis-py class; every
operation takes one round trip and every write is atomic (a server-side script).
"""

from typing import TYPE_CHECKING

# The package's loggers get their NullHandler on import (logging's advice for libraries), and
# the log pump's module is loaded before any call needs it (its first start runs inside a call).
from . import _logs  # noqa: F401
from ._core import (
    AttemptsExhausted,
    AuthenticationError,
    BusyLoadingError,
    ClockSkewError,
    ConnectionError,
    ExecAbortError,
    NoPermissionError,
    NoScriptError,
    NotJoined,
    NotReplicatedError,
    OptionsMismatch,
    OutOfMemoryError,
    PeriodClosed,
    RateLimited,
    ReadOnlyError,
    RedisError,
    ResponseError,
    ScoreRejected,
    StalePeriod,
    SubmissionIdReused,
    TimeoutError,
    TournamentFull,
)
from ._sync import (
    LeaderboardGroup,
    League,
    PeriodicLeaderboard,
    RedisLeaderboard,
    RollingLeaderboard,
    TeamLeaderboard,
    Tournament,
)
from .asyncio import RedisLeaderboard as AsyncRedisLeaderboard
from .boards.seasons import MAX_CLOCK_SKEW, GroupResult
from .client import Client
from .cluster import ClusterClient
from .sharded import ShardedLeaderboard

if TYPE_CHECKING:
    __version__: str
    """The installed package's version (``"0.1.0"``), read from its metadata when first asked
    for."""
else:

    def __getattr__(name: str) -> str:
        # __version__ is pyproject.toml's, the one source (CMake gets it from scikit-build-core
        # too), read from the installed metadata when first asked for: importlib.metadata costs
        # ~30 ms to import.
        if name == "__version__":
            from importlib.metadata import version

            return version("redis-leaderboard")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MAX_CLOCK_SKEW",
    "AsyncRedisLeaderboard",
    "AttemptsExhausted",
    "AuthenticationError",
    "BusyLoadingError",
    "Client",
    "ClockSkewError",
    "ClusterClient",
    "ConnectionError",
    "ExecAbortError",
    "GroupResult",
    "LeaderboardGroup",
    "League",
    "NoPermissionError",
    "NoScriptError",
    "NotJoined",
    "NotReplicatedError",
    "OptionsMismatch",
    "OutOfMemoryError",
    "PeriodClosed",
    "PeriodicLeaderboard",
    "RateLimited",
    "ReadOnlyError",
    "RedisError",
    "RedisLeaderboard",
    "ResponseError",
    "RollingLeaderboard",
    "ScoreRejected",
    "ShardedLeaderboard",
    "StalePeriod",
    "SubmissionIdReused",
    "TeamLeaderboard",
    "TimeoutError",
    "Tournament",
    "TournamentFull",
    "__version__",
]
