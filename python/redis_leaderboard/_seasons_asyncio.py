"""The asyncio twins of :mod:`redis_leaderboard.seasons` (re-exported by
:mod:`redis_leaderboard.asyncio`): same constructors, results and errors; each method that
talks to Redis is a coroutine. The classes of :mod:`~redis_leaderboard.seasons` hold every
method once (plans, see ``_plans``); these only choose the asyncio driver and base classes."""

from __future__ import annotations

from ._async_client import Client
from ._async_leaderboard import RedisLeaderboard
from ._plans import AsyncDriven
from .seasons import GroupBase, PeriodicBase, PeriodState, RollingState

__all__ = ["LeaderboardGroup", "PeriodBoard", "PeriodicLeaderboard", "RollingLeaderboard"]


class PeriodBoard(PeriodState, AsyncDriven, RedisLeaderboard):
    """The asyncio twin of :class:`redis_leaderboard.seasons.PeriodBoard`."""


class PeriodicLeaderboard(PeriodicBase[PeriodBoard], AsyncDriven):
    """The asyncio twin of :class:`redis_leaderboard.seasons.PeriodicLeaderboard`:
    :meth:`current`, :meth:`at`, :meth:`previous` return asyncio boards."""

    board_class = PeriodBoard
    client_class = Client


class RollingLeaderboard(RollingState, AsyncDriven, RedisLeaderboard):
    """The asyncio twin of :class:`redis_leaderboard.seasons.RollingLeaderboard`."""


class LeaderboardGroup(GroupBase, AsyncDriven):
    """The asyncio twin of :class:`redis_leaderboard.seasons.LeaderboardGroup`: its boards are
    asyncio ones."""

    client_class = Client
    plain_class = RedisLeaderboard
    periodic_class = PeriodicLeaderboard
    rolling_class = RollingLeaderboard
