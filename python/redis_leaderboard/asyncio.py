"""The asyncio twins of the sync classes: same constructors, methods, results and errors; each
method that talks to Redis is a coroutine. Many coroutines share one connection: requests made
while a write is in flight go out together in the next write (automatic pipelining). The event
loop drives the connection itself: it watches the socket, and C++ code reads, writes, encodes
and decodes on the loop's thread, with no thread hand-off.
"""

from ._async import (
    LeaderboardGroup,
    League,
    PeriodicLeaderboard,
    RedisLeaderboard,
    RollingLeaderboard,
    TeamLeaderboard,
    Tournament,
)
from ._async_client import Client
from .cluster import AsyncClusterClient as ClusterClient
from .sharded import AsyncShardedLeaderboard as ShardedLeaderboard

__all__ = [
    "Client",
    "ClusterClient",
    "LeaderboardGroup",
    "League",
    "PeriodicLeaderboard",
    "RedisLeaderboard",
    "RollingLeaderboard",
    "ShardedLeaderboard",
    "TeamLeaderboard",
    "Tournament",
]
