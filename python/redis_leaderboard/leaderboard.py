"""``redis_leaderboard.leaderboard``: the import path of the sync ``RedisLeaderboard`` and its
event stream before the boards moved to ``redis_leaderboard.boards`` (re-exports only)."""

from ._sync import EventStream, RedisLeaderboard
from .boards.plain import DEFAULT_CHUNK_SIZE, MAX_REPORTED_TRIMMED
from .options import CHUNKS_IN_FLIGHT

__all__ = [
    "CHUNKS_IN_FLIGHT",
    "DEFAULT_CHUNK_SIZE",
    "MAX_REPORTED_TRIMMED",
    "EventStream",
    "RedisLeaderboard",
]
