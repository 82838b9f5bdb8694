"""The ``redis-leaderboard`` command (also ``python -m redis_leaderboard``).

Each subcommand is registered in :data:`COMMANDS` by the function that adds its options to its
``argparse`` subparser; that function sets ``run`` (a function of the parsed arguments returning
the exit status) as a default, or the module's ``run`` is used. Commands that use a board share
the Redis and key options of :func:`redis_leaderboard._redis_target.add_redis_arguments`. The
commands of :data:`PASS_THROUGH` run another program and get all their arguments as
``args.passed``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional

from . import __version__

_CLI = "redis_leaderboard.cli"
#: name -> (module, its function adding the options, one-line help).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": (
        "redis_leaderboard.demo.cli",
        "add_arguments",
        "run the demo web page (the guide's demo server)",
    ),
    "import": (_CLI, "add_import_arguments", "bulk-load a CSV (user_id,score,...) into a board"),
    "top": (_CLI, "add_top_arguments", "print the top entries"),
    "rank": (_CLI, "add_rank_arguments", "print one user's entry (exit 1 if absent)"),
    "around": (_CLI, "add_around_arguments", "print the entries around a rank"),
    "around-user": (_CLI, "add_around_user_arguments", "print the entries around a user"),
    "page": (_CLI, "add_page_arguments", "print one page of the board (page 3 of 12)"),
    "histogram": (_CLI, "add_histogram_arguments", "print the score distribution as a bar chart"),
    "hide": (_CLI, "add_hide_arguments", "hide a player from every read (fair play)"),
    "unhide": (_CLI, "add_unhide_arguments", "show a hidden player again"),
    "hidden": (_CLI, "add_hidden_arguments", "list the hidden players"),
    "convert-layout": (
        _CLI,
        "add_convert_layout_arguments",
        "convert a board to the compact layout in place (every player's metadata in one hash)",
    ),
    "league": (
        _CLI,
        "add_league_arguments",
        "a league: a player's standings, the tiers' sizes, settle finished periods",
    ),
    "bench": (
        _CLI,
        "add_bench_arguments",
        "run the benchmark: benchmarks/run.py of a clone, with the arguments given "
        "(--quick for a smoke run, --help for its options)",
    ),
}
#: Commands without options of their own (not even --help): every argument goes to the program
#: they run.
PASS_THROUGH = frozenset({"bench"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="redis-leaderboard",
        description="The redis.io leaderboard guide's RedisLeaderboard, with a C++ core.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for name, (module_name, adder, summary) in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(
            name, help=summary, description=summary, add_help=name not in PASS_THROUGH
        )
        getattr(module, adder)(sub)
        if sub.get_default("run") is None:
            sub.set_defaults(run=module.run)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    # parse_known_args, as argparse.REMAINDER does not take arguments starting with "-".
    args, passed = parser.parse_known_args(argv)
    if args.command in PASS_THROUGH:
        args.passed = passed
    elif passed:
        parser.error(f"unrecognized arguments: {' '.join(passed)}")
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
