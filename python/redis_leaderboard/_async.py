"""The asyncio classes: each is its board's algorithms (``redis_leaderboard.boards``) run by
the asyncio driver (``redis_leaderboard._drive``) on the asyncio clients: same constructors,
results and errors as the sync classes, each method that talks to Redis a coroutine. No
method is written here."""

from __future__ import annotations

from ._async_client import Client
from ._drive import AsyncDriven
from ._types import Event, LeagueEvent
from .boards.events import AsyncEventStream
from .boards.league import LeagueBase
from .boards.plain import LeaderboardBase
from .boards.seasons import GroupBase, PeriodicBase, PeriodState, RollingState
from .boards.sharded import ShardedBase
from .boards.team import TeamBase
from .boards.tournament import TournamentBase
from .cluster import AsyncClusterClient

__all__ = [
    "AsyncEventStream",
    "LeaderboardGroup",
    "League",
    "PeriodBoard",
    "PeriodicLeaderboard",
    "RedisLeaderboard",
    "RollingLeaderboard",
    "ShardedLeaderboard",
    "TeamLeaderboard",
    "Tournament",
]


class RedisLeaderboard(LeaderboardBase[AsyncEventStream[Event]], AsyncDriven):
    """The asyncio twin of
    [`redis_leaderboard.RedisLeaderboard`][redis_leaderboard.RedisLeaderboard]: same constructor,
    methods, results and errors, each method a coroutine.

    ``redis_client`` may be a [`Client`][redis_leaderboard.asyncio.Client], a
    ``redis.asyncio.Redis`` or ``redis.Redis``
    (its options are reused) or None: then ``url``, else ``$REDIS_URL``, else
    ``redis://localhost:6379/0``.
    """

    _client_class = Client
    _cluster_client_class = AsyncClusterClient
    _display_name = "redis_leaderboard.asyncio.RedisLeaderboard"
    _event_stream_class: type[AsyncEventStream[Event]] = AsyncEventStream


class PeriodBoard(PeriodState, RedisLeaderboard):
    """The asyncio twin of
    [`redis_leaderboard.seasons.PeriodBoard`][redis_leaderboard.seasons.PeriodBoard]."""


class PeriodicLeaderboard(PeriodicBase[PeriodBoard], AsyncDriven):
    """The asyncio twin of
    [`redis_leaderboard.seasons.PeriodicLeaderboard`][redis_leaderboard.PeriodicLeaderboard]:
    [`current`][redis_leaderboard.asyncio.PeriodicLeaderboard.current],
    [`at`][redis_leaderboard.asyncio.PeriodicLeaderboard.at],
    [`previous`][redis_leaderboard.asyncio.PeriodicLeaderboard.previous] return asyncio boards."""

    _board_class = PeriodBoard
    _client_class = Client


class RollingLeaderboard(RollingState, RedisLeaderboard):
    """The asyncio twin of
    [`redis_leaderboard.seasons.RollingLeaderboard`][redis_leaderboard.RollingLeaderboard]."""


class LeaderboardGroup(GroupBase, AsyncDriven):
    """The asyncio twin of
    [`redis_leaderboard.seasons.LeaderboardGroup`][redis_leaderboard.LeaderboardGroup]: its boards
    are
    asyncio ones."""

    _client_class = Client


class ShardedLeaderboard(ShardedBase, AsyncDriven):
    """The asyncio twin of [`ShardedLeaderboard`][redis_leaderboard.ShardedLeaderboard] on a
    [`ClusterClient`][redis_leaderboard.asyncio.ClusterClient] of asyncio: same constructor,
    methods, results and errors, each method that talks to Redis a coroutine."""

    _cluster_client_class = AsyncClusterClient
    _display_name = "redis_leaderboard.asyncio.ShardedLeaderboard"
    _board_class = RedisLeaderboard


class League(LeagueBase[AsyncEventStream[LeagueEvent]], AsyncDriven):
    """The asyncio twin of [`League`][redis_leaderboard.League]."""

    _client_class = Client
    _cluster_client_class = AsyncClusterClient
    _display_name = "redis_leaderboard.asyncio.League"
    _event_stream_class: type[AsyncEventStream[LeagueEvent]] = AsyncEventStream


class Tournament(TournamentBase[AsyncEventStream[Event]], AsyncDriven):
    """The asyncio twin of ``redis_leaderboard.Tournament``: ``at`` and
    ``current`` return asyncio boards."""

    _client_class = Client
    _cluster_client_class = AsyncClusterClient
    _board_class = RedisLeaderboard
    _event_stream_class: type[AsyncEventStream[Event]] = AsyncEventStream
    _display_name = "redis_leaderboard.asyncio.Tournament"


class TeamLeaderboard(TeamBase[AsyncEventStream[Event]], AsyncDriven):
    """The asyncio twin of [`TeamLeaderboard`][redis_leaderboard.TeamLeaderboard]: ``teams``
    and ``members`` are asyncio boards."""

    _client_class = Client
    _cluster_client_class = AsyncClusterClient
    _board_class = RedisLeaderboard
    _display_name = "redis_leaderboard.asyncio.TeamLeaderboard"
    _event_stream_class: type[AsyncEventStream[Event]] = AsyncEventStream
