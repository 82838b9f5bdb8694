"""``redis_leaderboard.sharded``: one board over many cluster slots, the sync class and its
asyncio twin (re-exports; the algorithms are in ``redis_leaderboard.boards.sharded``). See the
docs' deployment page, "Sharded boards"."""

from ._async import ShardedLeaderboard as AsyncShardedLeaderboard
from ._sync import ShardedLeaderboard
from .boards.sharded import shard_of

__all__ = ["AsyncShardedLeaderboard", "ShardedLeaderboard", "shard_of"]
