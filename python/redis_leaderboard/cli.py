"""``redis-leaderboard import | top | rank | around | around-user | page | histogram | league |
bench``: a board (or a league) from the command line.

They use the Redis that ``--redis-url``, ``--redis-host``/``--redis-port`` or ``$REDIS_URL``
name, else localhost:6379, and the board ``--key`` (default ``leaderboard:demo``); the reads take
``--period hour|day|week|month`` (with ``--tz`` and ``--ago N``) to read a PeriodicLeaderboard's
board of the current (or an earlier) period.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, TextIO, Union

from tqdm import tqdm

from . import League, RedisError, RedisLeaderboard
from ._redis_target import (
    MAX_MAX_ENTRIES,
    RedisTarget,
    StartupError,
    add_redis_arguments,
    connect_configured,
)
from ._types import Entry, HistogramBin
from .seasons import Periods

# Without --max-entries, import keeps every entry (a sorted set holds at most 2**32 - 1), and
# top/rank/around, which only read, never trim.
NO_LIMIT = 2**32
# What a RedisLeaderboard opened without max_entries keeps (and trims to on its next write).
LIBRARY_MAX_ENTRIES: int = inspect.signature(RedisLeaderboard).parameters["max_entries"].default
# A refused import lists this many bad rows (and counts the rest).
MAX_LISTED_BAD_ROWS = 10


class CommandError(Exception):
    """A problem reported on stderr, ending the command with ``status`` (1 unless given)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def connect(args: argparse.Namespace) -> RedisTarget:
    """The Redis of ``--redis-url``/``--redis-host``/``--redis-port``/``$REDIS_URL``, else
    localhost:6379, answering PING."""
    try:
        target: Optional[RedisTarget] = connect_configured(
            args, client_name="redis-leaderboard-cli"
        )
        if target is None:
            args.redis_host = "localhost"
            target = connect_configured(args, client_name="redis-leaderboard-cli")
    except StartupError as exc:
        raise CommandError(str(exc)) from None
    assert target is not None
    return target


def open_board(args: argparse.Namespace, max_entries: int = NO_LIMIT) -> RedisLeaderboard:
    """The board of ``--key``, with ``--order``/``--ties`` where the command takes them."""
    return RedisLeaderboard(
        connect(args).client,
        key=period_key(args),
        max_entries=max_entries,
        order=getattr(args, "order", "desc"),
        ties=getattr(args, "ties", "lexicographic"),
        layout=getattr(args, "layout", "guide"),
    )


def period_key(args: argparse.Namespace) -> str:
    """``--key``, or with ``--period`` the key of the period's board (a PeriodicLeaderboard's
    ``f"{key}:{period_id}"``): the current period in ``--tz``, or ``--ago N`` periods before.
    Without ``--json`` the board and its next reset are named on stderr."""
    period = getattr(args, "period", None)
    if period is None:
        return str(args.key)
    try:
        periods = Periods(period, args.tz)
    except ValueError as exc:
        raise CommandError(str(exc), status=2) from None
    start = periods.start_of(datetime.now(timezone.utc))
    end = periods.next_start(start)
    for _ in range(args.ago):
        end = start
        start = periods.previous_start(start)
    key = f"{args.key}:{periods.period_id(start)}"
    if not getattr(args, "json", False):
        verb = "resets" if args.ago == 0 else "ended"
        print(f"{key} ({verb} {end.astimezone(periods.tz).isoformat()})", file=sys.stderr)
    return key


# ---- import ------------------------------------------------------------------------------------

Row = tuple[str, float, dict[str, str]]  # (user_id, score, metadata), as upsert_many takes


@dataclass(frozen=True)
class BadRow:
    line: int  # in the file, the header being line 1
    reason: str


def read_csv(stream: TextIO, path: str) -> Iterator[Union[Row, BadRow]]:
    """A ``Row`` per good row of a CSV whose header names ``user_id`` and ``score`` (every
    other non-empty column becomes a metadata field), a ``BadRow`` per row that
    [`RedisLeaderboard.upsert_many`][redis_leaderboard.RedisLeaderboard.upsert_many] would refuse or
    that has more fields than the header."""
    reader = csv.reader(stream)
    try:
        header = next(reader, [])
        if "user_id" not in header or "score" not in header:
            raise CommandError(f"{path}: the header must name the columns user_id and score")
        user_column, score_column = header.index("user_id"), header.index("score")
        metadata_columns = [
            (i, name)
            for i, name in enumerate(header)
            if name and i not in (user_column, score_column)
        ]
        for record in reader:
            if not record:
                continue  # a blank line
            if any(record[len(header) :]):  # data beyond the header's columns
                yield BadRow(
                    reader.line_num, f"{len(record)} fields, but the header names {len(header)}"
                )
                continue
            record += [""] * (len(header) - len(record))  # trailing empty fields may be left out
            user_id, score_text = record[user_column], record[score_column]
            try:
                score = float(score_text)
            except ValueError:
                yield BadRow(reader.line_num, f"score is not a number: {score_text!r}")
                continue
            if not math.isfinite(score):
                yield BadRow(reader.line_num, f"score must be a finite number, not {score_text!r}")
            elif not user_id:
                yield BadRow(reader.line_num, "user_id must not be empty")
            else:
                yield user_id, score, {name: record[i] for i, name in metadata_columns if record[i]}
    except csv.Error as exc:
        raise CommandError(f"{path}, line {reader.line_num}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text ({exc.reason}); save it as CSV UTF-8") from None


def open_csv(path: Path) -> TextIO:
    # utf-8-sig: a byte order mark (Excel's "CSV UTF-8") is skipped, not read as part of the header.
    return path.open(newline="", encoding="utf-8-sig")


def check_csv(path: Path, skip_bad: bool) -> tuple[int, list[BadRow]]:
    """The first pass: how many rows are good, and the bad ones. Without ``skip_bad``, a bad row
    is an error naming the first few, before anything is written."""
    good, bad = 0, []
    with open_csv(path) as stream:
        for row in read_csv(stream, str(path)):
            if isinstance(row, BadRow):
                bad.append(row)
            else:
                good += 1
    if bad and not skip_bad:
        lines = "\n".join(f"  line {b.line}: {b.reason}" for b in bad[:MAX_LISTED_BAD_ROWS])
        more = (
            f"\n  ... and {len(bad) - MAX_LISTED_BAD_ROWS:,} more"
            if len(bad) > MAX_LISTED_BAD_ROWS
            else ""
        )
        raise CommandError(
            f"{path}: nothing was written: bad rows: {len(bad):,} of {good + len(bad):,} (fix "
            f"them, or pass --skip-bad to import the others):\n{lines}{more}"
        )
    return good, bad


def run_import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    started = time.monotonic()
    total, bad = check_csv(path, args.skip_bad)
    for b in bad:
        print(f"{path}, line {b.line}: {b.reason} (skipped)", file=sys.stderr)
    board = open_board(args, args.max_entries or NO_LIMIT)
    handed = 0  # rows given to upsert_many (those confirmed written: `written`, below)

    def good_rows() -> Iterator[Row]:
        nonlocal handed
        with open_csv(path) as stream:
            for row in read_csv(stream, str(path)):
                if isinstance(row, BadRow):
                    if args.skip_bad:
                        continue
                    raise CommandError(f"the file changed: line {row.line}: {row.reason}")
                handed += 1
                yield row

    bar = tqdm(total=total, unit=" rows", file=sys.stderr, disable=True if args.quiet else None)
    written = 0

    def progress(done: int) -> None:
        nonlocal written
        bar.update(done - written)
        written = done

    def stopped(reason: str) -> str:
        # Rows handed over but not confirmed were in flight: any of them may have been written.
        maybe = f" to {handed:,}" if handed > written else ""
        return (
            f"{path}: {written:,}{maybe} of {total:,} rows were written (the board was not "
            f"trimmed) when the import stopped: {reason}"
        )

    try:
        with bar:
            summary = board.upsert_many(good_rows(), chunk_size=args.chunk_size, progress=progress)
    except KeyboardInterrupt:
        raise CommandError(stopped("interrupted"), status=130) from None
    except RedisError as exc:
        raise CommandError(stopped(f"Redis error: {exc}")) from None
    except CommandError as exc:
        raise CommandError(stopped(str(exc))) from None
    elapsed = time.monotonic() - started
    size = board.get_size()
    skipped = f"bad rows skipped: {len(bad):,}; " if bad else ""
    print(
        f"imported {summary['written']:,} rows into {board.key} in {elapsed:.1f} s "
        f"({summary['written'] / max(elapsed, 1e-9):,.0f} rows/s); {skipped}"
        f"trimmed {summary['trimmed']:,}; board size {size:,}"
    )
    if size > LIBRARY_MAX_ENTRIES:
        demo = f"; for the demo: --max-entries {size}" if size <= MAX_MAX_ENTRIES else ""
        print(
            f"redis-leaderboard import: note: {board.key} holds {size:,} entries, but a "
            f"RedisLeaderboard opened without max_entries keeps {LIBRARY_MAX_ENTRIES} and trims "
            f"the rest on its next write: open it with max_entries={size} or more (None: "
            f"unlimited){demo}",
            file=sys.stderr,
        )
    return 0


# ---- top / rank / around -----------------------------------------------------------------------


def exact(score: float) -> str:
    """A score as it is stored: ``9999982``, ``2.5``, ``0.1``, ``1e+300`` (repr round-trips)."""
    text = repr(score)
    return text[:-2] if text.endswith(".0") else text


def print_entries(entries: list[Entry], as_json: bool) -> None:
    if as_json:
        print(json.dumps(entries, ensure_ascii=False))
        return
    if not entries:
        print("(no entries)")
        return
    scores = [exact(e["score"]) for e in entries]
    width = max(len(e["user_id"]) for e in entries)
    score_width = max(len(score) for score in scores)
    for e, score in zip(entries, scores):
        details = "  ".join(f"{k}={v}" for k, v in e["metadata"].items())
        print(
            f"{e['rank']:>6}  {e['user_id']:<{width}}  {score:>{score_width}}  {details}".rstrip()
        )


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


# ---- fair play: hide / unhide / hidden ----------------------------------------------------------


def run_hide(args: argparse.Namespace) -> int:
    """hide USER / unhide USER: exit 0 if it changed something, 1 if it was so already."""
    board = open_board(args)
    changed = board.hide(args.user_id) if args.hide else board.unhide(args.user_id)
    what = "hidden" if args.hide else "shown"
    print(f"{args.user_id} is {what} now" if changed else f"{args.user_id} was {what} already")
    return 0 if changed else 1


def run_convert_layout(args: argparse.Namespace) -> int:
    args.layout = "compact"
    moved = open_board(args).convert_layout(page=args.page)
    if args.json:
        print(json.dumps({"moved": moved}))
    else:
        print(f"{args.key}: compact; {moved:,} players' metadata moved")
    return 0


def run_hidden(args: argparse.Namespace) -> int:
    ids = open_board(args).hidden()
    print(json.dumps(ids, ensure_ascii=False) if args.json else "\n".join(ids))
    return 0


# ---- around-user / page / histogram ------------------------------------------------------------


def run_around_user(args: argparse.Namespace) -> int:
    entries = open_board(args).get_around_user(args.user_id, args.count)
    if not entries and not args.json:
        print(f"{args.user_id} is not on the board")
    else:
        print_entries(entries, args.json)
    return 0 if entries else 1


def run_page(args: argparse.Namespace) -> int:
    page = open_board(args).get_page(args.page, args.page_size)
    if args.json:
        print(json.dumps(page, ensure_ascii=False))
        return 0
    print(f"page {page['page']:,} of {page['total_pages']:,} ({page['size']:,} entries)")
    if page["entries"]:
        print_entries(page["entries"], False)
    return 0


def histogram_lines(bins: Sequence[HistogramBin], width: int, bar: str = "\u2588") -> list[str]:
    """A text bar chart: one line per bin, ``[min, max)`` (the last ``[min, max]``), a bar
    scaled to the largest count (at least one character for a non-empty bin), the count."""
    if not bins:
        return ["(no entries)"]
    lows = [exact(b["min"]) for b in bins]
    highs = [exact(b["max"]) for b in bins]
    low_width, high_width = max(map(len, lows)), max(map(len, highs))
    largest = max(b["count"] for b in bins)
    count_width = len(f"{largest:,}")
    lines = []
    for i, (b, low, high) in enumerate(zip(bins, lows, highs)):
        close = "]" if i == len(bins) - 1 else ")"
        length = math.ceil(b["count"] * width / largest) if largest else 0
        lines.append(
            f"[{low:>{low_width}}, {high:>{high_width}}{close}  {b['count']:>{count_width},}  "
            f"{bar * length}".rstrip()
        )
    return lines


def run_histogram(args: argparse.Namespace) -> int:
    bins = open_board(args).get_histogram(
        args.bins, min_score=args.min_score, max_score=args.max_score
    )
    if args.json:
        print(json.dumps(bins, ensure_ascii=False))
        return 0
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "\u2588".encode(encoding)
        bar = "\u2588"
    except (UnicodeEncodeError, LookupError):
        bar = "#"
    print("\n".join(histogram_lines(bins, args.width, bar)))
    return 0


# ---- league ------------------------------------------------------------------------------------

LEAGUE_EPILOG = """\
The league's options must be those of the program that writes it: the tiers, cohort size,
promote/demote cutoffs, tie rule, order, mode and score limits are recorded in Redis with its
first write, and a command given others is refused with the recorded ones named (nothing is
changed). --period and --tz name which period is the current one: give the program's own."""


def open_league(args: argparse.Namespace) -> League:
    """The league of ``--key`` with the options given (see LEAGUE_EPILOG)."""
    return League(
        connect(args).client,
        args.key,
        tiers=args.tiers,
        period=args.period,
        tz=args.tz,
        cohort_size=args.cohort_size,
        promote=args.promote,
        demote=args.demote,
        demote_idle=not args.keep_idle,
        mode=args.mode,
        order=args.order,
        ties=args.ties,
        partitions=args.partitions,
        score_range=args.score_range,
        max_increment=args.max_increment,
    )


def _score_text(score: Optional[float]) -> str:
    return "-" if score is None else exact(score)


def run_league_standings(args: argparse.Namespace) -> int:
    league = open_league(args)
    standings = league.standings(args.user_id, args.period_id)
    if args.json:
        print(json.dumps(standings, ensure_ascii=False))
        return 0 if standings is not None else 1
    if standings is None:
        where = f"period {args.period_id}" if args.period_id else "the current period"
        print(f"{args.user_id} has no cohort in {where} of league {league.key}")
        return 1
    bracket = f" ({standings['bracket']})" if standings["bracket"] else ""
    if standings["settled"]:
        when = "settled"
    else:
        when = f"settles {league.next_settlement().isoformat()}"
    print(
        f"{league.key} {standings['period']}: tier {standings['tier']}, cohort "
        f"{standings['cohort']}{bracket}, {standings['size']} players; {when}"
    )
    entries = standings["entries"]
    ranks = [str(e["rank"]) if e["rank"] is not None else "-" for e in entries]
    scores = [_score_text(e["score"]) for e in entries]
    width = max(len(e["user_id"]) for e in entries)
    score_width = max(len(score) for score in scores)
    for e, rank, score in zip(entries, ranks, scores):
        mark = "  <" if e["user_id"] == args.user_id else ""
        print(f"{rank:>6}  {e['user_id']:<{width}}  {score:>{score_width}}  {e['zone']}{mark}")
    return 0


def run_league_tiers(args: argparse.Namespace) -> int:
    counts = open_league(args).tiers()
    if args.json:
        print(json.dumps(counts, ensure_ascii=False))
        return 0
    width = max(len(t["tier"]) for t in counts)
    for t in reversed(counts):  # the highest first
        print(f"{t['tier']:<{width}}  {t['players']:>12,}")
    return 0


def run_league_settle(args: argparse.Namespace) -> int:
    done = open_league(args).settle(args.period_id)
    if args.json:
        print(json.dumps(done, ensure_ascii=False))
    elif not done["periods"]:
        print("nothing to settle: every finished period with players is settled")
    else:
        print(
            f"settled {', '.join(done['periods'])}: {done['cohorts']:,} cohorts "
            f"({done['settled']:,} by this command, {done['already_settled']:,} already), "
            f"promoted {done['promoted']:,}, demoted {done['demoted']:,}"
        )
    return 0


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
    return subprocess.call([sys.executable, str(script), *args.passed])


# ---- registration ------------------------------------------------------------------------------


def _guarded(run: Any) -> Any:
    def guarded(args: argparse.Namespace) -> int:
        try:
            return int(run(args))
        except CommandError as exc:
            print(f"redis-leaderboard {args.command}: {exc}", file=sys.stderr)
            return exc.status
        except RedisError as exc:
            print(f"redis-leaderboard {args.command}: Redis error: {exc}", file=sys.stderr)
            return 1
        except ValueError as exc:  # an argument the library refuses, other recorded options
            print(f"redis-leaderboard {args.command}: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"redis-leaderboard {args.command}: interrupted", file=sys.stderr)
            return 130

    return guarded


IMPORT_EPILOG = f"""\
The file is read twice: first every row is checked, then the good ones are written. A bad row (a
score that is not a finite number, an empty user_id, more fields than the header) is an error
naming its line, and nothing is written; with --skip-bad, bad rows are listed with their line
numbers and skipped. If Redis fails or the import is interrupted while writing, the error says
how many rows were written. Rows upsert: existing entries are updated, not removed first.

Without --max-entries every row is kept. A board's limit is not stored in Redis but given by
each program that writes it, and RedisLeaderboard's default is max_entries={LIBRARY_MAX_ENTRIES}:
open the board with max_entries of at least its size (or None: unlimited), or its next write
trims it to the best {LIBRARY_MAX_ENTRIES} (the import warns when the board holds more)."""


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = IMPORT_EPILOG
    parser.add_argument(
        "file",
        metavar="FILE.csv",
        help="UTF-8 CSV (a byte order mark is fine) with a header naming user_id and score; "
        "every other column is metadata (empty cells are not stored)",
    )
    add_redis_arguments(parser)
    add_layout_argument(parser)
    parser.add_argument(
        "--max-entries",
        metavar="N",
        type=_positive,
        help="trim the board to its N best entries after the import (default: keep every row)",
    )
    parser.add_argument(
        "--skip-bad", action="store_true", help="skip bad rows (listed on stderr), import the rest"
    )
    parser.add_argument(
        "--chunk-size", metavar="ROWS", type=_positive, default=1000, help="rows per round trip"
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (there is none unless stderr is a terminal)",
    )
    parser.set_defaults(run=_guarded(run_import))


def _not_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def add_period_arguments(parser: argparse.ArgumentParser) -> None:
    """--period/--tz/--ago: read a PeriodicLeaderboard's board (seasons)."""
    parser.add_argument(
        "--period",
        choices=["hour", "day", "week", "month"],
        help="read the board of the current period of a PeriodicLeaderboard on --key "
        "(KEY:2026-11-23, KEY:2026-W48, ...)",
    )
    parser.add_argument(
        "--tz", default="UTC", help="the periodic board's time zone, e.g. Europe/Amsterdam (UTC)"
    )
    parser.add_argument(
        "--ago", type=_not_negative, default=0, help="with --period: N periods before the current"
    )


def add_top_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("count", nargs="?", type=_positive, default=10, help="default 10")
    add_redis_arguments(parser)
    add_layout_argument(parser)
    add_period_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_top))


def add_rank_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user_id", metavar="USER")
    add_redis_arguments(parser)
    add_layout_argument(parser)
    add_period_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_rank))


def _add_hiding_arguments(parser: argparse.ArgumentParser, hide: bool) -> None:
    parser.add_argument("user_id", metavar="USER")
    add_redis_arguments(parser)
    add_period_arguments(parser)
    add_ranking_arguments(parser)
    parser.set_defaults(run=_guarded(run_hide), hide=hide)


def add_hide_arguments(parser: argparse.ArgumentParser) -> None:
    _add_hiding_arguments(parser, True)


def add_unhide_arguments(parser: argparse.ArgumentParser) -> None:
    _add_hiding_arguments(parser, False)


def add_convert_layout_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Convert the board from the guide's layout (a hash per player) to the compact one (one "
        "hash for the board), in place, a page of players per round trip; safe to stop and run "
        "again. Stop or restart the clients of the guide's layout first: their writes are "
        "refused from the first page on."
    )
    add_redis_arguments(parser)
    add_period_arguments(parser)
    add_ranking_arguments(parser, layout=False)  # the layout is the compact one
    parser.add_argument(
        "--page", type=_positive, default=1000, help="players a round trip, 1 to 10000 (1000)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_convert_layout))


def add_hidden_arguments(parser: argparse.ArgumentParser) -> None:
    add_redis_arguments(parser)
    add_period_arguments(parser)
    add_ranking_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_hidden))


def add_around_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rank", metavar="RANK", type=_positive)
    parser.add_argument("--count", type=_positive, default=5, help="default 5")
    add_redis_arguments(parser)
    add_layout_argument(parser)
    add_period_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_around))


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError("must be a finite number")
    return value


def add_ranking_arguments(parser: argparse.ArgumentParser, layout: bool = True) -> None:
    parser.add_argument(
        "--order", choices=["desc", "asc"], default="desc", help="the board's order (default desc)"
    )
    parser.add_argument(
        "--ties",
        choices=["lexicographic", "first", "competition", "dense"],
        default="lexicographic",
        help="the board's tie rule (default lexicographic)",
    )
    if layout:  # a plain board's (a league keeps the guide's)
        add_layout_argument(parser)


def add_layout_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--layout",
        choices=["guide", "compact"],
        default="guide",
        help="where the board keeps its players' metadata (default guide)",
    )


def add_around_user_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user_id", metavar="ID")
    parser.add_argument("--count", type=_positive, default=5, help="default 5")
    add_redis_arguments(parser)
    add_period_arguments(parser)
    add_ranking_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_around_user))


def add_page_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("page", metavar="N", type=_positive, help="1-based")
    parser.add_argument(
        "--page-size", type=_positive, default=10, help="entries a page, 1 to 1000 (default 10)"
    )
    add_redis_arguments(parser)
    add_period_arguments(parser)
    add_ranking_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_page))


def add_histogram_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bins", type=_positive, default=10, help="1 to 1000 (default 10)")
    parser.add_argument(
        "--min", dest="min_score", type=_finite, help="lowest edge (default: the lowest score)"
    )
    parser.add_argument(
        "--max", dest="max_score", type=_finite, help="highest edge (default: the highest score)"
    )
    parser.add_argument(
        "--width", type=_positive, default=40, help="characters of the longest bar (default 40)"
    )
    add_redis_arguments(parser)
    add_period_arguments(parser)
    add_ranking_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_guarded(run_histogram))


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    # No options of its own: __main__ passes every argument (--help too) to benchmarks/run.py.
    parser.set_defaults(run=_guarded(run_bench))


def _tier_names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError("tier names, lowest first, separated by commas")
    return names


def _cutoff(text: str) -> Union[int, float]:
    """A count (``5``) or a fraction of the cohort (``0.2``)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a count or a fraction: {text!r}") from None


def _score_range(text: str) -> tuple[Optional[float], Optional[float]]:
    """``MIN:MAX``, either side empty (no bound)."""
    low, colon, high = text.partition(":")
    if not colon:
        raise argparse.ArgumentTypeError(f"MIN:MAX (either side may be empty), not {text!r}")
    return (_finite(low) if low else None, _finite(high) if high else None)


def add_league_arguments(parser: argparse.ArgumentParser) -> None:
    """``league standings USER | tiers | settle``, each with the league's options."""
    actions = parser.add_subparsers(dest="league_command", metavar="ACTION")
    actions.required = True
    for name, run, summary in (
        ("standings", run_league_standings, "print a player's cohort (exit 1 if none)"),
        ("tiers", run_league_tiers, "print how many players each tier has"),
        ("settle", run_league_settle, "settle every finished period not settled yet"),
    ):
        sub = actions.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=LEAGUE_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == "standings":
            sub.add_argument("user_id", metavar="USER")
        if name in ("standings", "settle"):
            sub.add_argument(
                "--period-id",
                metavar="ID",
                help="a past period (2026-W47): its final standings, or only it settled",
            )
        _, board = add_redis_arguments(
            sub, key="league:demo", key_help="the league's key (its keys start with it)"
        )
        board.add_argument(
            "--tiers",
            type=_tier_names,
            default=("bronze", "silver", "gold"),
            help="tier names, lowest first (default bronze,silver,gold)",
        )
        board.add_argument(
            "--period",
            choices=["hour", "day", "week", "month"],
            default="week",
            help="the league's period (default week)",
        )
        board.add_argument("--tz", default="UTC", help="its time zone (default UTC)")
        board.add_argument("--cohort-size", type=_positive, default=30, help="default 30")
        board.add_argument("--promote", type=_cutoff, default=5, help="count or fraction (5)")
        board.add_argument("--demote", type=_cutoff, default=5, help="count or fraction (5)")
        board.add_argument(
            "--keep-idle",
            action="store_true",
            help="the league does not demote placed players who never scored",
        )
        board.add_argument("--mode", choices=["incr", "best", "set"], default="incr")
        board.add_argument("--partitions", type=_positive, default=1, help="default 1")
        board.add_argument(
            "--score-range",
            metavar="MIN:MAX",
            type=_score_range,
            help="the league's score_range (fair play; either side may be empty)",
        )
        board.add_argument(
            "--max-increment",
            metavar="N",
            type=_finite,
            help="the league's max_increment (fair play)",
        )
        add_ranking_arguments(sub, layout=False)
        sub.add_argument("--json", action="store_true", help="print JSON")
        sub.set_defaults(league_run=run)
    parser.set_defaults(run=_guarded(lambda args: args.league_run(args)))
