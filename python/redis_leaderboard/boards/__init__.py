"""The boards' algorithms, each written once for both APIs (see ``redis_leaderboard._drive``):
``plain`` (the guide's board and its queries), ``events`` (change-event streams), ``seasons``
(periods, rolling windows, groups) and ``sharded`` (one board over many cluster slots). The
public classes (``redis_leaderboard._sync``, ``redis_leaderboard._async``) add a driver and a
client type to them, and nothing else."""
