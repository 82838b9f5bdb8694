"""The leaderboard demo: a small web page over a
[`redis_leaderboard.RedisLeaderboard`][redis_leaderboard.RedisLeaderboard].

Run it with ``python -m redis_leaderboard.demo`` or ``redis-leaderboard demo`` and open
http://127.0.0.1:8080. With no Redis configured and none on localhost:6379 it starts a private
``redis-server`` for itself. In code::

    from redis_leaderboard import RedisLeaderboard
    from redis_leaderboard.demo import make_server

    server = make_server(RedisLeaderboard(url="redis://localhost:6379/0"), port=8080)
    server.serve_forever()
"""

from .cli import add_arguments, main, run
from .server import SAMPLE_PLAYERS, DemoApp, DemoServer, make_server

__all__ = ["SAMPLE_PLAYERS", "DemoApp", "DemoServer", "add_arguments", "main", "make_server", "run"]
