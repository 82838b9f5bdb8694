"""``redis-leaderboard import | top | rank | around | bench``: a board from the command line.

They use the Redis that ``--redis-url``, ``--redis-host``/``--redis-port`` or ``$REDIS_URL``
name, else localhost:6379, and the board ``--key`` (default ``leaderboard:demo``).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional, TextIO

from . import RedisError, RedisLeaderboard
from .demo.cli import DemoError, RedisTarget, add_redis_arguments, connect_configured
from .leaderboard import Entry

# Without --max-entries, import keeps every entry (a sorted set holds at most 2**32 - 1).
NO_LIMIT = 2**32


class CommandError(Exception):
    """A problem reported as one line and exit status 1."""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def open_board(args: argparse.Namespace, max_entries: int = NO_LIMIT) -> RedisLeaderboard:
    try:
        target: Optional[RedisTarget] = connect_configured(
            args, client_name="redis-leaderboard-cli"
        )
        if target is None:
            args.redis_host = "localhost"
            target = connect_configured(args, client_name="redis-leaderboard-cli")
    except DemoError as exc:
        raise CommandError(str(exc)) from None
    assert target is not None
    return RedisLeaderboard(target.client, key=args.key, max_entries=max_entries)


# ---- import ------------------------------------------------------------------------------------


def read_csv(stream: TextIO, path: str) -> Iterator[tuple[str, float, dict[str, str]]]:
    """(user_id, score, metadata) per row of a CSV with a header naming ``user_id`` and
    ``score``; every other non-empty column becomes a metadata field."""
    rows = csv.DictReader(stream)
    fields = rows.fieldnames or []
    if "user_id" not in fields or "score" not in fields:
        raise CommandError(f"{path}: the header must name the columns user_id and score")
    for row in rows:
        try:
            score = float(row["score"])
        except (TypeError, ValueError):
            raise CommandError(
                f"{path}, line {rows.line_num}: score is not a number: {row['score']!r}"
            ) from None
        metadata = {k: v for k, v in row.items() if k not in ("user_id", "score") and k and v}
        yield row["user_id"] or "", score, metadata


class ProgressBar:
    """``[#####.....]  42%  420,000/1,000,000 rows  185,000 rows/s`` on stderr."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        self.total, self.stream, self.started = max(total, 1), stream, time.monotonic()
        self.shown = 0.0

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self.shown < 0.2 and done < self.total:
            return  # a few redraws a second is enough
        self.shown = now
        fraction = min(done / self.total, 1.0)
        rate = done / max(now - self.started, 1e-9)
        bar = "#" * int(fraction * 30)
        self.stream.write(
            f"\r[{bar:<30}] {fraction:4.0%}  {done:,}/{self.total:,} rows  {rate:,.0f} rows/s"
        )
        self.stream.flush()

    def finish(self) -> None:
        self.stream.write("\n")


def count_rows(path: Path) -> int:
    with path.open("rb") as f:
        return max(sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b"")) - 1, 0)


def run_import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    board = open_board(args, args.max_entries or NO_LIMIT)
    progress = None if args.quiet else ProgressBar(count_rows(path))
    started = time.monotonic()
    try:
        with path.open(newline="", encoding="utf-8") as stream:
            summary = board.upsert_many(
                read_csv(stream, str(path)), chunk_size=args.chunk_size, progress=progress
            )
    except (ValueError, TypeError) as exc:  # a bad row: rows before its chunk are written
        raise CommandError(f"{path}: {exc} (counting data rows from 0)") from None
    finally:
        if progress is not None:
            progress.finish()
    elapsed = time.monotonic() - started
    print(
        f"imported {summary['written']:,} rows into {board.key} in {elapsed:.1f} s "
        f"({summary['written'] / max(elapsed, 1e-9):,.0f} rows/s); "
        f"trimmed {summary['trimmed']:,}; board size {board.get_size():,}"
    )
    return 0


# ---- top / rank / around -----------------------------------------------------------------------


def print_entries(entries: list[Entry], as_json: bool) -> None:
    if as_json:
        print(json.dumps(entries, ensure_ascii=False))
        return
    if not entries:
        print("(no entries)")
        return
    width = max(len(e["user_id"]) for e in entries)
    for e in entries:
        details = "  ".join(f"{k}={v}" for k, v in e["metadata"].items())
        print(f"{e['rank']:>6}  {e['user_id']:<{width}}  {e['score']:>14g}  {details}".rstrip())


def run_top(args: argparse.Namespace) -> int:
    print_entries(open_board(args).get_top(args.count), args.json)
    return 0


def run_around(args: argparse.Namespace) -> int:
    print_entries(open_board(args).get_around_rank(args.rank, args.count), args.json)
    return 0


def run_rank(args: argparse.Namespace) -> int:
    entry = open_board(args).get_user_entry(args.user_id)
    if args.json:
        print(json.dumps(entry, ensure_ascii=False))
    elif entry is None:
        print(f"{args.user_id} is not on the board")
    else:
        print_entries([entry], False)
    return 0 if entry is not None else 1


# ---- bench -------------------------------------------------------------------------------------


def find_benchmark() -> Optional[Path]:
    for root in (Path.cwd(), Path(__file__).resolve().parents[2]):
        script = root / "benchmarks" / "run.py"
        if script.is_file():
            return script
    return None


def run_bench(args: argparse.Namespace) -> int:
    script = find_benchmark()
    if script is None:
        raise CommandError(
            "the benchmark ships with the source, not the package: run this command from a "
            "clone of redis-leaderboard (it runs benchmarks/run.py)"
        )
    return subprocess.call([sys.executable, str(script), *args.bench_args])


# ---- registration ------------------------------------------------------------------------------


def _guarded(run: Any) -> Any:
    def guarded(args: argparse.Namespace) -> int:
        try:
            return int(run(args))
        except CommandError as exc:
            print(f"redis-leaderboard {args.command}: {exc}", file=sys.stderr)
            return 1
        except RedisError as exc:
            print(f"redis-leaderboard {args.command}: Redis error: {exc}", file=sys.stderr)
            return 1

    return guarded


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE.csv", help="CSV with a header: user_id,score,...")
    add_redis_arguments(parser)
    parser.add_argument(
        "--max-entries", type=_positive, help="trim the board to this size after the import"
    )
    parser.add_argument("--chunk-size", type=_positive, default=1000, help="rows per round trip")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=_guarded(run_import))


def add_top_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("count", nargs="?", type=_positive, default=10, help="default 10")
    add_redis_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_top))


def add_rank_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user_id", metavar="USER")
    add_redis_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_rank))


def add_around_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rank", metavar="RANK", type=_positive)
    parser.add_argument("--count", type=_positive, default=5, help="default 5")
    add_redis_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_around))


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "bench_args", nargs=argparse.REMAINDER, help="passed to benchmarks/run.py (see --help)"
    )
    parser.set_defaults(run=_guarded(run_bench))
