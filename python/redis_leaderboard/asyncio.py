"""The asyncio twin of :class:`redis_leaderboard.RedisLeaderboard`.

Same constructor, methods, results and errors; each method is a coroutine. Many coroutines share
one connection: requests made while a write is in flight go out together in the next write
(automatic pipelining). The event loop drives the connection itself: it watches the socket,
and C++ code reads, writes, encodes and decodes on the loop's thread, with no thread hand-off.
"""

from __future__ import annotations

from ._async_client import Client
from ._async_leaderboard import RedisLeaderboard
from ._seasons_asyncio import LeaderboardGroup, PeriodicLeaderboard, RollingLeaderboard
from .cluster import AsyncClusterClient as ClusterClient
from .sharded import AsyncShardedLeaderboard as ShardedLeaderboard

__all__ = [
    "Client",
    "ClusterClient",
    "LeaderboardGroup",
    "PeriodicLeaderboard",
    "RedisLeaderboard",
    "RollingLeaderboard",
    "ShardedLeaderboard",
]
