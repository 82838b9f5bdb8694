"""``python -m redis_leaderboard.demo``: run the demo web server."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
