"""The ``redis-leaderboard`` command (also ``python -m redis_leaderboard``).

Each subcommand lives in a module with two functions, registered in :data:`COMMANDS`:
``add_arguments(parser)`` adds its options to its ``argparse`` subparser, and ``run(args)``
does the work and returns the exit status. Commands that use a board can share the Redis and
key options with :func:`redis_leaderboard.demo.cli.add_redis_arguments`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional

from . import __version__

#: name -> (module with add_arguments/run, one-line help). Planned: import, top, rank,
#: around, bench.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("redis_leaderboard.demo.cli", "run the demo web page (the guide's demo server)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="redis-leaderboard",
        description="The redis.io leaderboard guide's RedisLeaderboard, with a C++ core.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for name, (module_name, summary) in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(name, help=summary, description=summary)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
