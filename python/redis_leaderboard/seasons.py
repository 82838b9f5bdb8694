"""``redis_leaderboard.seasons``: periodic boards, rolling windows and groups, the sync classes
(re-exports; the algorithms are in ``redis_leaderboard.boards.seasons``, the asyncio classes in
``redis_leaderboard.asyncio``). See README, "Seasons and windows"."""

from ._sync import LeaderboardGroup, PeriodBoard, PeriodicLeaderboard, RollingLeaderboard
from .boards.seasons import Aggregate, Clock, GroupResult, Period, Periods

__all__ = [
    "Aggregate",
    "Clock",
    "GroupResult",
    "LeaderboardGroup",
    "Period",
    "PeriodBoard",
    "PeriodicLeaderboard",
    "Periods",
    "RollingLeaderboard",
]
