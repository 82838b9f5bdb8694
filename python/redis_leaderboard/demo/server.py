"""The demo's HTTP server: the standard library's ``ThreadingHTTPServer`` around a
[`redis_leaderboard.RedisLeaderboard`][redis_leaderboard.RedisLeaderboard].

The routes of the guide's ``demo_server.py``, answering with its fields (a client written
against the guide works unchanged), ours beside them. Bodies are form-encoded, as the guide's
page sends them, or JSON; a field given twice counts once, the first time, as in the guide.

=======  ======================  ==========================================================
GET      /                       the page (its script and stylesheet are separate files)
GET      /api/state              ``?top=5&rank=3&around=5``: ``leaderboard_key,
                                 max_entries, top_count, around_rank, around_count, size,
                                 top_entries, around_entries``; ours: ``clamped``, ``version``
POST     /api/players            ``user_id, score, name, description`` -> ``message, entry,
                                 max_entries``
POST     /api/increment          ``user_id, amount, name, description`` -> as above
POST     /api/config             ``max_entries`` -> ``message, max_entries,
                                 trimmed_user_ids``
POST     /api/reset              the six sample players -> ``message, max_entries``; ours:
                                 ``size, trimmed_user_ids`` (also restores the startup limit)
GET      /api/players/<id>       ours: one player's entry (rank, score, metadata)
DELETE   /api/players/<id>       ours: remove a player and its metadata
GET      /api/around-user        ours: ``?user_id=..&count=5``: ``user_id, count, entries``
                                 (the window around the player; 404 if not on the board)
GET      /api/page               ours: ``?page=1&page_size=10``: ``page, page_size,
                                 total_pages, size, entries``
GET      /api/histogram          ours: ``?bins=10``: ``bins`` (``[{min, max, count}]``,
                                 ascending scores)
GET      /api/events             ours (guards): Server-Sent Events from the board's
                                 change stream (``events=True``; else 404 and the page
                                 polls): ``id`` the stream id (``Last-Event-ID`` resumes),
                                 ``data`` a feed item (see ``DemoApp.feed_item``)
GET      /api/periods            ours: ``?top=5``: ``top, tabs``: "Today", "This week" (the
                                 current periods of two PeriodicLeaderboards) and "All time"
                                 (the board), each ``name, label, key, period, next_reset,
                                 seconds_to_reset, size, entries``
GET      /api/league             ours: ``?user_id=..``: the demo league (``League``: tiers
                                 bronze, silver, gold; weekly cohorts of 5; top 1 up, bottom
                                 1 down; each player's best score of the week): ``key,
                                 period, next_settlement, seconds_to_settlement, tiers,
                                 user_id, standings`` (the player's cohort, null if none)
POST     /api/league             ours: ``user_id, score`` -> a week's match: the player is
                                 placed with their first one; as GET, with ``submitted``
GET      /api/metrics            ours: the latency panel (see ``DemoMetrics``), since the
                                 demo started: ``methods`` (``[{method, calls, errors,
                                 p50_ms, p99_ms, boards}]``, most called first; ``boards``:
                                 the classes called) and ``counters`` (``round_trips,
                                 commands, reconnects, connection_lost, timeouts``); 404
                                 with the reason when metrics are off (no OpenTelemetry
                                 SDK: ``pip install "redis-leaderboard[otel]"``)
=======  ======================  ==========================================================

Every error is JSON ``{"error": "..."}`` (plus ``"field"``, the API name of the field at
fault, when there is one): 4xx for anything wrong with the request, 503 while Redis is
unreachable (the client reconnects by itself on a later request).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence
from urllib.parse import parse_qsl, unquote, urlsplit

from .. import ConnectionError as RedisConnectionError
from .. import (
    LeaderboardGroup,
    League,
    PeriodicLeaderboard,
    RedisError,
    RedisLeaderboard,
    observability,
)
from .. import TimeoutError as RedisTimeoutError
from ..seasons import Clock
from . import validation as check
from .validation import BadRequest

log = logging.getLogger("redis_leaderboard.demo")
access_log = logging.getLogger("redis_leaderboard.demo.access")

MAX_BODY_BYTES = 64 * 1024
#: The live feed names deleted and trimmed players by the names it remembers (at most this many).
MAX_REMEMBERED_NAMES = 10_000
DRAIN_LIMIT = 1024 * 1024  # bodies refused for their size are still read up to this much

#: The guide's defaults for ``/api/state``'s ``top``, ``rank`` and ``around``.
DEFAULT_TOP = 5
DEFAULT_RANK = 3
DEFAULT_AROUND = 5
#: Our query routes' defaults.
DEFAULT_AROUND_USER = 5
DEFAULT_PAGE_SIZE = 10
DEFAULT_BINS = 10
#: The guide's metadata for a player written without a name or description.
NO_DESCRIPTION = "No description provided."
CREATED_BY_INCREMENT = "Created during score increment."

#: The guide's six sample players: (user_id, name, score, description).
LEAGUE_TIERS = ("bronze", "silver", "gold")

SAMPLE_PLAYERS: tuple[tuple[str, str, int, str], ...] = (
    ("player-1", "Avery", 980, "Steady climber who never wastes a turn."),
    ("player-2", "Mina", 1310, "Always finds a way into the top three."),
    ("player-3", "Noah", 1175, "Takes big swings and occasionally lands them."),
    ("player-4", "Priya", 1435, "Current pace-setter with a ruthless endgame."),
    ("player-5", "Jules", 1080, "Quietly consistent and hard to catch."),
    ("player-6", "Rin", 1240, "Moves fast after every weekly reset."),
)

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

#: The latency panel's histogram buckets (seconds): 1, 2 and 5 per decade from 10 µs to 10 s.
#: The library's default (``observability.DURATION_BUCKETS``, 1 ms to 10 s, the semantic
#: conventions' advice) puts every call to a nearby Redis in its first bucket; these make the p50
#: of a 100 µs call mean something. The demo's choice, made with a View on its own provider.
METRICS_BUCKETS = (
    0.00001, 0.00002, 0.00005,
    0.0001, 0.0002, 0.0005,
    0.001, 0.002, 0.005,
    0.01, 0.02, 0.05,
    0.1, 0.2, 0.5,
    1.0, 2.0, 5.0,
    10.0,
)  # fmt: skip
#: The client counters the panel shows: its name -> the metric (``observability.COUNTERS``).
PANEL_COUNTERS = {
    "round_trips": "redis_leaderboard.client.round_trips",
    "commands": "redis_leaderboard.client.commands",
    "reconnects": "redis_leaderboard.client.reconnects",
    "connection_lost": "redis_leaderboard.client.connection_lost",
    "timeouts": "redis_leaderboard.client.timeouts",
}
DURATION_METRIC = "db.client.operation.duration"
METRICS_NO_SDK = (
    "latency metrics are off: the OpenTelemetry SDK is not installed "
    '(pip install "redis-leaderboard[otel]" in the demo\'s environment adds it to the '
    "installed package, or pip install opentelemetry-sdk; then restart the demo)"
)
METRICS_TAKEN = (
    "latency metrics are off: the process was already instrumented "
    "(redis_leaderboard.observability.instrument()), and the demo leaves that as it is"
)
METRICS_DISABLED = "latency metrics are off for this server (make_server(..., metrics=False))"

_STATIC_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
}


def _load_static() -> dict[str, tuple[bytes, str, str]]:
    folder = resources.files(__package__).joinpath("static")
    files = {}
    for route, (name, content_type) in _STATIC_FILES.items():
        body = folder.joinpath(name).read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        files[route] = (body, content_type, etag)
    return files


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats (a score another client set to inf) as strings, so
    the response is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def histogram_quantile(
    q: float, bounds: Sequence[float], counts: Sequence[int], low: float, high: float
) -> Optional[float]:
    """The ``q``-quantile (0 < q <= 1) of a histogram's observations, estimated as Prometheus'
    ``histogram_quantile`` does: by linear interpolation inside the bucket holding it (the
    observation of rank ``q * count``), as if the bucket's observations were spread evenly
    over it. Bucket ``i`` holds ``counts[i]`` observations in ``(bounds[i-1], bounds[i]]``;
    the last one, above ``bounds[-1]``, has no upper edge. Each bucket's edges are clamped to
    the smallest and largest observations (``low``, ``high``): the first bucket starts at the
    minimum, the open top bucket ends at the maximum, and no estimate leaves ``[low, high]``.
    None if there are no observations."""
    total = sum(counts)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for i, count in enumerate(counts):
        if count and seen + count >= rank:
            lower = max(bounds[i - 1] if i > 0 else low, low)
            upper = min(bounds[i] if i < len(bounds) else high, high)
            return lower + (upper - lower) * max(0.0, rank - seen) / count
        seen += count
    return high


class _MethodStats:
    """One method's calls, merged over its attribute sets (boards, servers, errors)."""

    __slots__ = ("boards", "bounds", "buckets", "calls", "errors", "high", "low")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.buckets = [0] * (len(bounds) + 1)
        self.calls = 0
        self.errors = 0
        self.low = math.inf
        self.high = -math.inf
        self.boards: set[str] = set()

    def add(self, point: Any) -> None:
        self.calls += point.count
        self.boards.add(str(point.attributes.get("redis_leaderboard.board", "?")))
        if "error.type" in point.attributes:
            self.errors += point.count
        if point.count and tuple(point.explicit_bounds) == self.bounds:
            for i, count in enumerate(point.bucket_counts):
                self.buckets[i] += count
            self.low = min(self.low, point.min)
            self.high = max(self.high, point.max)

    def row(self, method: str) -> dict[str, Any]:
        def ms(q: float) -> Optional[float]:
            value = histogram_quantile(q, self.bounds, self.buckets, self.low, self.high)
            return None if value is None else round(value * 1000, 3)

        return {
            "method": method,
            "calls": self.calls,
            "errors": self.errors,
            "p50_ms": ms(0.5),
            "p99_ms": ms(0.99),
            "boards": sorted(self.boards),
        }


class DemoMetrics:
    """The latency panel's source: an OpenTelemetry SDK ``MeterProvider`` of the demo's own
    (the global one is left alone) with an ``InMemoryMetricReader``, fed by
    ``observability.instrument(meter_provider=..., spans=False)``, and a View giving
    ``db.client.operation.duration`` the buckets ``METRICS_BUCKETS``.

    Instrumentation is process-wide, so one serves every demo server of the process (see
    ``DemoServer``), and it counts every board call the process makes, the demo's or not.
    Without the SDK, making one raises ImportError."""

    def __init__(self) -> None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

        self.reader = InMemoryMetricReader()
        self.provider = MeterProvider(
            metric_readers=[self.reader],
            views=[
                View(
                    instrument_name=DURATION_METRIC,
                    aggregation=ExplicitBucketHistogramAggregation(METRICS_BUCKETS),
                )
            ],
            shutdown_on_exit=False,
        )
        self._lock = threading.Lock()  # one collection at a time

    def summary(self) -> dict[str, Any]:
        """Calls, errors, p50 and p99 (ms) per method, and the client counters, since the
        demo started (the reader's cumulative data, collected now: a pass over a few dozen
        data points). Only method names and numbers: the attributes that would name a board's
        key (``record_keys``) or a server are not instrumented or not copied."""
        with self._lock:
            data = self.reader.get_metrics_data()
        methods: dict[str, _MethodStats] = {}
        counters = dict.fromkeys(PANEL_COUNTERS, 0)
        wanted = {metric: name for name, metric in PANEL_COUNTERS.items()}
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points: Any = metric.data.data_points
                    if metric.name == DURATION_METRIC:
                        for point in points:
                            method = str(point.attributes.get("db.operation.name", "?"))
                            stats = methods.get(method)
                            if stats is None:
                                stats = methods[method] = _MethodStats(point.explicit_bounds)
                            stats.add(point)
                    elif metric.name in wanted:
                        counters[wanted[metric.name]] += sum(int(p.value) for p in points)
        rows = [stats.row(method) for method, stats in methods.items()]
        rows.sort(key=lambda row: (-row["calls"], row["method"]))
        return {"methods": rows, "counters": counters}

    def close(self) -> None:
        self.provider.shutdown()


# The process's DemoMetrics: made and instrumented by the first demo server to start, ended
# (uninstrumented) by the last to close.
_metrics_lock = threading.Lock()
_metrics: Optional[DemoMetrics] = None
_metrics_users = 0


def _start_metrics() -> tuple[Optional[DemoMetrics], str]:
    """The process's ``DemoMetrics``, or None and why there is none: the SDK is missing, or
    the application instrumented the process itself (its providers are not replaced)."""
    global _metrics, _metrics_users
    with _metrics_lock:
        if _metrics is None:
            if observability.is_instrumented():
                return None, METRICS_TAKEN
            try:
                made = DemoMetrics()
            except ImportError:
                return None, METRICS_NO_SDK
            observability.instrument(meter_provider=made.provider, spans=False)
            _metrics = made
        _metrics_users += 1
        return _metrics, ""


def _stop_metrics() -> None:
    global _metrics, _metrics_users
    with _metrics_lock:
        _metrics_users -= 1
        if _metrics_users == 0 and _metrics is not None:
            observability.uninstrument()
            _metrics.close()
            _metrics = None


class DemoApp:
    """What the routes do, independent of HTTP. Each answer has the guide's demo server's
    fields, with ours beside them."""

    def __init__(
        self,
        board: RedisLeaderboard,
        *,
        initial_max_entries: Optional[int] = None,
        tz: str = "UTC",
        clock: Optional[Clock] = None,
    ):
        self.board = board
        self.initial_max_entries = initial_max_entries or board.max_entries
        self._config_lock = threading.Lock()
        # Names of players shown (see remember_names), oldest first.
        self._names: dict[str, str] = {}
        self._names_lock = threading.Lock()
        # The tabs (seasons): "Today" and "This week" beside the board ("All time"), each a
        # PeriodicLeaderboard under the board's key, all three fed by one group write.
        self.periodic = {
            "daily": PeriodicLeaderboard(
                board.redis, key=f"{board.key}:daily", period="day", tz=tz, keep=2, clock=clock
            ),
            "weekly": PeriodicLeaderboard(
                board.redis, key=f"{board.key}:weekly", period="week", tz=tz, keep=2, clock=clock
            ),
        }
        self.group = LeaderboardGroup(board.redis, [board, *self.periodic.values()])
        # The League card: small weekly cohorts, so that a handful of players shows the zones.
        self.league = League(
            board.redis,
            f"{board.key}:league",
            tiers=LEAGUE_TIERS,
            period="week",
            tz=tz,
            cohort_size=5,
            promote=1,
            demote=1,
            mode="best",
            clock=clock,
        )

    # -- live events (guards) --------------------------------------------------------------

    def remember_names(self, entries: Iterable[Optional[Mapping[str, Any]]]) -> None:
        """Keep the names (metadata ``name``) of players the demo has shown: a deleted or
        trimmed player's metadata goes with it, and its feed line still names it."""
        with self._names_lock:
            for entry in entries:
                if entry is not None and entry["metadata"].get("name"):
                    self._names.pop(entry["user_id"], None)  # the newest last
                    self._names[entry["user_id"]] = entry["metadata"]["name"]
            while len(self._names) > MAX_REMEMBERED_NAMES:
                del self._names[next(iter(self._names))]

    def remembered_name(self, user_id: str) -> str:
        with self._names_lock:
            return self._names.get(user_id, user_id)

    def feed_item(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """A change event for the page: the event, the players' names (their metadata's
        ``name``, else a name the demo remembers, else the id) and a sentence, plain text, that
        the page shows as text. Every kind of event has one: a write (``"score"``), a
        deletion, a trim, a page of a clear."""
        kind = event.get("kind", "score")
        if kind == "clear":
            if event["size"] == 0:
                text = f"The board was cleared ({event['removed']} removed)"
            else:
                text = f"Clearing the board: {event['removed']} removed, {event['size']} left"
            return {**event, "name": None, "overtaken_names": [], "text": text}
        if kind == "trim":
            trimmed = [self.remembered_name(u) for u in event["trimmed_user_ids"]]
            text = "Trimmed by the size limit: " + ", ".join(trimmed[:3])
            if len(trimmed) > 3:
                text += f" (and {len(trimmed) - 3} more)"
            return {**event, "name": None, "overtaken_names": [], "text": text}
        if kind == "delete":
            name = self.remembered_name(event["user_id"])
            text = f"{name} was removed from the board (was rank {event['previous_rank']})"
            return {**event, "name": name, "overtaken_names": [], "text": text}
        ids = [event["user_id"], *event["overtaken"]]
        names = {user_id: self.remembered_name(user_id) for user_id in ids}
        entries = self.board.get_entries(ids)
        self.remember_names(entries)
        for entry in entries:
            if entry is not None:
                names[entry["user_id"]] = entry["metadata"].get("name") or entry["user_id"]
        name, rank, previous = names[event["user_id"]], event["rank"], event["previous_rank"]
        if rank is None:
            text = f"{name} scored {event['score']:g}, not enough to stay on the board"
        elif event["overtaken"]:
            text = f"{name} overtook {names[event['overtaken'][0]]} for rank {rank}"
            if len(event["overtaken"]) > 1:
                text += f" (and {len(event['overtaken']) - 1} more)"
        elif previous is None:
            text = f"{name} joined at rank {rank}"
        else:
            text = f"{name} now has {event['score']:g} (rank {rank})"
        return {
            **event,
            "name": name,
            "overtaken_names": [names[u] for u in event["overtaken"]],
            "text": text,
        }

    # -- reads ---------------------------------------------------------------------------

    def state(self, query: dict[str, str]) -> dict[str, Any]:
        """The guide's state. ``top``, ``rank`` and ``around`` fall back to the guide's
        defaults when missing or not a whole number of at least 1; counts above
        ``MAX_COUNT`` (ranks above ``MAX_RANK``) are lowered to it, and ``clamped`` maps each
        field so lowered to the value used."""
        asked = {
            "top_count": check.positive_or_default(query.get("top"), DEFAULT_TOP),
            "around_rank": check.positive_or_default(query.get("rank"), DEFAULT_RANK),
            "around_count": check.positive_or_default(query.get("around"), DEFAULT_AROUND),
        }
        limits = {
            "top_count": check.MAX_COUNT,
            "around_rank": check.MAX_RANK,
            "around_count": check.MAX_COUNT,
        }
        used = {name: min(value, limits[name]) for name, value in asked.items()}
        size = self.board.get_size()  # the reads in the guide's order
        top = self.board.get_top(used["top_count"])
        around = self.board.get_around_rank(used["around_rank"], used["around_count"])
        self.remember_names(itertools.chain(top, around))
        state = {
            "leaderboard_key": self.board.key,
            "max_entries": self.board.max_entries,
            **used,
            "size": size,
            "top_entries": top,
            "around_entries": around,
            "clamped": {name: used[name] for name in used if used[name] != asked[name]},
        }
        state = dict(json_safe(state))
        digest = hashlib.sha256(
            json.dumps(state, sort_keys=True, ensure_ascii=True).encode("ascii")
        ).hexdigest()
        state["version"] = digest[:16]
        return state

    def player(self, user_id: str) -> dict[str, Any]:
        user_id = check.path_user_id(user_id)
        entry = self.board.get_user_entry(user_id)
        if entry is None:
            raise BadRequest(f"no player with id {user_id!r} on the board", HTTPStatus.NOT_FOUND)
        return {"entry": entry}

    def around_user(self, query: dict[str, str]) -> dict[str, Any]:
        """The window of ``count`` entries around a player (``get_around_user``)."""
        user_id = check.user_id(query)
        count = self._optional_integer(query, "count", DEFAULT_AROUND_USER, check.MAX_COUNT)
        entries = self.board.get_around_user(user_id, count)
        if not entries:
            raise BadRequest(f"no player with id {user_id!r} on the board", HTTPStatus.NOT_FOUND)
        return {"user_id": user_id, "count": count, "entries": entries}

    def page(self, query: dict[str, str]) -> dict[str, Any]:
        """One page of the board, best first (``get_page``)."""
        page = self._optional_integer(query, "page", 1, check.MAX_RANK)
        size = self._optional_integer(query, "page_size", DEFAULT_PAGE_SIZE, check.MAX_COUNT)
        result = self.board.get_page(page, size)
        self.remember_names(result["entries"])
        return dict(result)

    def histogram(self, query: dict[str, str]) -> dict[str, Any]:
        """The score distribution in ``bins`` equal-width bins (``get_histogram``)."""
        bins = self._optional_integer(query, "bins", DEFAULT_BINS, check.MAX_COUNT)
        return {"bins": self.board.get_histogram(bins)}

    def periods(self, query: dict[str, str]) -> dict[str, Any]:
        """The tabs: today's and this week's boards (with their next reset) and all time's."""
        top = self._optional_integer(query, "top", DEFAULT_TOP, check.MAX_COUNT)
        tabs: list[dict[str, Any]] = []
        for name, label in (("daily", "Today"), ("weekly", "This week")):
            periodic = self.periodic[name]
            current = periodic.current()
            reset = periodic.next_reset()
            tabs.append(
                {
                    "name": name,
                    "label": label,
                    "key": current.key,
                    "period": current.period,
                    "next_reset": reset.isoformat(),
                    "seconds_to_reset": max(0.0, (reset - periodic.now()).total_seconds()),
                    "size": current.get_size(),
                    "entries": current.get_top(top),
                }
            )
        tabs.append(
            {
                "name": "all",
                "label": "All time",
                "key": self.board.key,
                "period": None,
                "next_reset": None,
                "seconds_to_reset": None,
                "size": self.board.get_size(),
                "entries": self.board.get_top(top),
            }
        )
        return dict(json_safe({"top": top, "tabs": tabs}))

    def league_view(self, query: dict[str, str]) -> dict[str, Any]:
        """The demo league: its period, the time to its settlement, the players per tier, and
        the cohort of ``user_id`` (when given; null if they have not played this week)."""
        user_id = check.user_id(query) if query.get("user_id", "").strip() else None
        return self._league_answer(user_id)

    def league_play(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A league match: ``score`` counts if it is the player's best of the week (the
        first one places them in a cohort of their tier)."""
        user_id = check.user_id(fields)
        score = check.number(fields, "score")
        submitted = self.league.submit(user_id, score, {"name": self.remembered_name(user_id)})
        answer = self._league_answer(user_id)
        answer["submitted"] = json_safe(submitted)
        return answer

    def _league_answer(self, user_id: Optional[str]) -> dict[str, Any]:
        league = self.league
        settles = league.next_settlement()
        standings = league.standings(user_id) if user_id is not None else None
        if standings is not None:
            self.remember_names(standings["entries"])
        return {
            "key": league.key,
            "period": league.period_id(),
            "next_settlement": settles.isoformat(),
            "seconds_to_settlement": max(0.0, (settles - league.now()).total_seconds()),
            "tiers": league.tiers(),
            "user_id": user_id,
            "standings": json_safe(standings),
        }

    @staticmethod
    def _optional_integer(query: dict[str, str], name: str, default: int, maximum: int) -> int:
        if query.get(name, "").strip() == "":
            return default
        return check.integer(query, name, maximum=maximum)

    # -- writes --------------------------------------------------------------------------

    def _written(self, message: str, entry: dict[str, Any]) -> dict[str, Any]:
        """The guide's answer to a write: ``entry`` is the library's result (with
        ``trimmed_user_ids``; without ``rank`` when the write itself was trimmed away)."""
        return {"message": message, "entry": entry, "max_entries": self.board.max_entries}

    def _write_all(
        self, user_id: str, number: float, metadata: Optional[dict[str, str]], mode: str
    ) -> dict[str, Any]:
        """One group write to the board and the tabs' periods; the board's entry, in the
        guide's shape (without ``rank``, and with the metadata sent, if it was trimmed away)."""
        result = self.group.submit(user_id, number, metadata, mode=mode)[self.board.key]  # type: ignore[arg-type]
        entry: dict[str, Any] = {}
        if result["rank"] is not None:
            entry["rank"] = result["rank"]
        entry["user_id"] = user_id
        entry["score"] = result["score"]
        entry["metadata"] = result["metadata"] if result["rank"] is not None else metadata or {}
        entry["trimmed_user_ids"] = result["trimmed_user_ids"]
        return entry

    def upsert(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Set a score and the whole profile: a blank name becomes the user id, a blank
        description the guide's "No description provided."."""
        user_id = check.user_id(fields)
        score = check.number(fields, "score")
        name, description = check.name_and_description(fields)
        metadata = {"name": name or user_id, "description": description or NO_DESCRIPTION}
        return self._written("Player saved.", self._write_all(user_id, score, metadata, "set"))

    def increment(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Add to a score. A player with metadata keeps it, but for the fields given; one
        without gets the guide's defaults for those left blank.

        As in the guide, the metadata is read first, so a player another client creates in
        between gets these defaults over its own name and description."""
        user_id = check.user_id(fields)
        amount = check.number(fields, "amount")
        name, description = check.name_and_description(fields)
        if self.board.get_user_metadata(user_id):
            given = {"name": name, "description": description}
            metadata = {field: value for field, value in given.items() if value}
        else:
            metadata = {
                "name": name or user_id,
                "description": description or CREATED_BY_INCREMENT,
            }
        entry = self._write_all(user_id, amount, metadata or None, "incr")
        return self._written("Score updated.", entry)

    def configure(self, fields: dict[str, Any]) -> dict[str, Any]:
        max_entries = check.integer(fields, "max_entries", maximum=check.MAX_MAX_ENTRIES)
        with self._config_lock:
            trimmed = self.board.set_max_entries(max_entries)
        return {
            "message": "Leaderboard limit updated.",
            "max_entries": self.board.max_entries,
            "trimmed_user_ids": list(trimmed),
        }

    def delete(self, user_id: str) -> dict[str, Any]:
        user_id = check.path_user_id(user_id)
        if not self.board.delete_user(user_id):
            raise BadRequest(f"no player with id {user_id!r} on the board", HTTPStatus.NOT_FOUND)
        return {"deleted": True, "user_id": user_id}

    def reset(self, _fields: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        """The guide's reset (clear, then the six sample players), and unlike the guide's
        also the startup size limit, so that a reset always gives the same board."""
        with self._config_lock:
            self.board.clear()
            for periodic in self.periodic.values():
                periodic.current().clear()
            self.board.set_max_entries(self.initial_max_entries)
            trimmed = self.seed()
        return {
            "message": "Demo leaderboard reset.",
            "max_entries": self.board.max_entries,
            "size": self.board.get_size(),
            "trimmed_user_ids": trimmed,
        }

    def seed(self) -> list[str]:
        """Write the six sample players; returns the ids trimmed on the way."""
        trimmed: list[str] = []
        for user_id, name, score, description in SAMPLE_PLAYERS:
            result = self._write_all(
                user_id, score, {"name": name, "description": description}, "set"
            )
            trimmed.extend(result.get("trimmed_user_ids", []))
            # The league keeps each one's best of the week: seeding again changes nothing.
            self.league.submit(user_id, score, {"name": name})
        return trimmed

    def seed_if_empty(self) -> bool:
        if self.board.get_size() == 0:
            self.seed()
            return True
        return False


class DemoServer(ThreadingHTTPServer):
    """A threading HTTP server holding the ``DemoApp``."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # socketserver's 5 resets connections when many clients arrive

    def __init__(self, address: tuple[str, int], app: DemoApp, *, metrics: bool = True) -> None:
        """``metrics``: time every board call of the process for the latency panel (see
        ``DemoMetrics``; ``server_close()`` stops it), if the OpenTelemetry SDK is installed."""
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.app = app
        self.static = _load_static()
        self.stopping = threading.Event()  # ends the event streams (guards)
        # Before binding: a port that is taken closes the server (server_close) from within.
        self.metrics: Optional[DemoMetrics] = None
        self.metrics_off = METRICS_DISABLED  # why there are none
        super().__init__(address, DemoRequestHandler)
        if metrics:
            self.metrics, self.metrics_off = _start_metrics()

    def shutdown(self) -> None:
        self.stopping.set()
        super().shutdown()

    def server_close(self) -> None:
        """Closes the socket; the last demo server of the process to close also uninstruments
        it (``observability.uninstrument()``)."""
        super().server_close()
        if self.metrics is not None:
            self.metrics = None
            self.metrics_off = "the demo server is closed"
            _stop_metrics()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        assert isinstance(host, str)  # an AF_INET or AF_INET6 server
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}/"


class DemoRequestHandler(BaseHTTPRequestHandler):
    server: DemoServer
    protocol_version = "HTTP/1.1"
    server_version = "redis-leaderboard-demo"
    sys_version = ""
    timeout = 30  # seconds a client may take to send a request

    # -- plumbing ------------------------------------------------------------------------

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        access_log.info("%s %s", self.address_string(), format % args)

    def log_error(self, format: str, *args: Any) -> None:
        log.warning("%s %s", self.address_string(), format % args)

    def _headers(self, status: int, content_type: str, length: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")

    def send_json(
        self, status: int, payload: Any, extra_headers: Optional[dict[str, str]] = None
    ) -> None:
        body = json.dumps(json_safe(payload), ensure_ascii=True, allow_nan=False).encode()
        self._headers(status, "application/json; charset=utf-8", len(body))
        self.send_header("Cache-Control", "no-store")
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_error(self, code: int, message: Optional[str] = None, explain: Any = None) -> None:
        """http.server's own errors (malformed request line, oversized headers, ...) as JSON."""
        self.close_connection = True
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "Error"
        if not hasattr(self, "command") or self.command is None:
            self.command = ""
        if self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # always answer with headers
        self.send_json(code, {"error": message or phrase})

    def __getattr__(self, name: str) -> Any:
        # Any method the routes do not know (PUT, PATCH, FOO, ...) gets 405 or 404 rather
        # than http.server's 501.
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    # -- routing -------------------------------------------------------------------------

    def _routes(self, path: str) -> Optional[dict[str, Callable[[], Any]]]:
        app = self.server.app
        if path in self.server.static:
            return {"GET": lambda: self._static(path)}
        if path == "/api/state":
            return {"GET": lambda: app.state(self._query())}
        if path == "/api/players":
            return {"POST": lambda: app.upsert(self._body())}
        if path == "/api/increment":
            return {"POST": lambda: app.increment(self._body())}
        if path == "/api/config":
            return {"POST": lambda: app.configure(self._body())}
        if path == "/api/reset":
            return {"POST": lambda: app.reset(self._body())}
        if path == "/api/around-user":
            return {"GET": lambda: app.around_user(self._query())}
        if path == "/api/page":
            return {"GET": lambda: app.page(self._query())}
        if path == "/api/events":
            return {"GET": self._events}
        if path == "/api/periods":
            return {"GET": lambda: app.periods(self._query())}
        if path == "/api/histogram":
            return {"GET": lambda: app.histogram(self._query())}
        if path == "/api/metrics":
            return {"GET": self._metrics}
        if path == "/api/league":
            return {
                "GET": lambda: app.league_view(self._query()),
                "POST": lambda: app.league_play(self._body()),
            }
        if path.startswith("/api/players/"):
            user_id = self._path_user_id(path[len("/api/players/") :])
            return {
                "GET": lambda: app.player(user_id),
                "DELETE": lambda: app.delete(user_id),
            }
        return None

    def _dispatch(self) -> None:
        self._body_read = False  # one handler serves every request of a keep-alive connection
        try:
            try:
                self._split = urlsplit(self.path)
                routes = self._routes(self._split.path)
                if routes is None:
                    raise BadRequest(f"no such page: {self._split.path}", HTTPStatus.NOT_FOUND)
                method = "GET" if self.command == "HEAD" else self.command
                action = routes.get(method)
                if action is None:
                    allowed = sorted(set(routes) | ({"HEAD"} if "GET" in routes else set()))
                    self._discard_body()
                    self.send_json(
                        HTTPStatus.METHOD_NOT_ALLOWED,
                        {"error": f"{self.command} is not allowed here; use {', '.join(allowed)}"},
                        {"Allow": ", ".join(allowed)},
                    )
                    return
                if method not in ("GET",):
                    self._check_same_origin()
                result = action()
                if result is not None:
                    self.send_json(HTTPStatus.OK, result)
            except BadRequest as exc:
                self._discard_body()
                self.send_json(exc.status, exc.payload())
            except UnicodeDecodeError as exc:
                # Not the request's fault: another client stored bytes that are not UTF-8.
                log.error("non-UTF-8 data on the board: %s", exc)
                self.send_json(
                    HTTPStatus.BAD_GATEWAY,
                    {"error": f"the board holds data that is not UTF-8 text ({exc})"},
                )
            except (ValueError, TypeError) as exc:
                # The library validates too (and UnicodeEncodeError is a ValueError).
                self._discard_body()
                self.send_json(HTTPStatus.BAD_REQUEST, {"error": str(exc) or "invalid input"})
            except (RedisConnectionError, RedisTimeoutError) as exc:
                log.warning("Redis unavailable: %s", exc)
                self.send_json(
                    HTTPStatus.SERVICE_UNAVAILABLE,
                    {"error": f"Redis is unavailable ({exc})."},
                    {"Retry-After": "2"},
                )
            except RedisError as exc:
                log.error("Redis error: %s", exc)
                self.send_json(HTTPStatus.BAD_GATEWAY, {"error": f"Redis replied: {exc}"})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:
            log.exception("internal error on %s %s", self.command, self.path)
            self.close_connection = True
            try:
                self.send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error"})
            except OSError:
                pass
        finally:
            if not self.close_connection:
                try:
                    self._discard_body()  # e.g. a GET that came with a body
                except OSError:
                    self.close_connection = True

    def _events(self) -> None:
        """Server-Sent Events fed from the board's change stream, each change a feed item;
        a comment every second keeps the connection alive (and notices a page gone)."""
        app = self.server.app
        if not app.board.events_enabled:
            raise BadRequest(
                "live events are off for this board (the page polls instead)", HTTPStatus.NOT_FOUND
            )
        last_id = self.headers.get("Last-Event-ID") or "$"
        if last_id != "$" and not all(part.isdigit() for part in last_id.split("-", 1)):
            raise BadRequest("Last-Event-ID must be a stream id such as 1712345678901-0")
        self.close_connection = True  # the response ends when the connection does
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(b"retry: 1000\n\n")
        self.wfile.flush()
        with app.board.events(last_id) as stream:
            while not self.server.stopping.is_set():
                try:
                    events = stream.read(1.0)
                    chunks = [
                        f"id: {event['id']}\ndata: {json.dumps(app.feed_item(event))}\n\n"
                        for event in events
                    ]
                except RedisError as exc:  # the page reconnects (Last-Event-ID) after retry
                    log.warning("event stream: %s", exc)
                    self.wfile.write(f"event: failed\ndata: {json.dumps(str(exc))}\n\n".encode())
                    return
                self.wfile.write(("".join(chunks) or ": alive\n\n").encode())
                self.wfile.flush()

    def _metrics(self) -> dict[str, Any]:
        """The latency panel's numbers; 404, saying why, when the server has none."""
        metrics = self.server.metrics
        if metrics is None:
            raise BadRequest(self.server.metrics_off, HTTPStatus.NOT_FOUND)
        return metrics.summary()

    def _static(self, path: str) -> None:
        body, content_type, etag = self.server.static[path]
        if self.headers.get("If-None-Match") == etag:
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._headers(HTTPStatus.OK, content_type, len(body))
        self.send_header("Cache-Control", "no-cache")
        self.send_header("ETag", etag)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # -- request parsing -----------------------------------------------------------------

    def _path_user_id(self, raw: str) -> str:
        try:
            return unquote(raw, errors="strict")
        except UnicodeDecodeError:
            raise check.field_error("user_id", "in the URL is not valid UTF-8") from None

    def _query(self) -> dict[str, str]:
        # Bytes that are not UTF-8 become U+FFFD, as in the guide: a count that is not a
        # number falls back to its default.
        return self._form(self._split.query, "query string", errors="replace")

    @staticmethod
    def _form(text: str, what: str, errors: str = "strict") -> dict[str, str]:
        try:
            pairs = parse_qsl(text, errors=errors, max_num_fields=100)
        except UnicodeDecodeError:
            raise BadRequest(f"the {what} is not valid UTF-8") from None
        except ValueError:
            raise BadRequest(f"the {what} has too many fields") from None
        fields: dict[str, str] = {}
        for name, value in pairs:
            fields.setdefault(name, value)
        return fields

    def _check_same_origin(self) -> None:
        """Refuse writes sent by another site's page (the demo has no login to protect it)."""
        if self.headers.get("Sec-Fetch-Site", "") == "cross-site":
            raise BadRequest("cross-site requests are not allowed", HTTPStatus.FORBIDDEN)
        origin = self.headers.get("Origin")
        if origin is None:
            return
        host = self.headers.get("Host", "")
        if origin == "null" or urlsplit(origin).netloc.lower() != host.lower():
            raise BadRequest("cross-origin requests are not allowed", HTTPStatus.FORBIDDEN)

    def _content_length(self) -> int:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise BadRequest(
                "chunked bodies are not supported; send Content-Length",
                HTTPStatus.LENGTH_REQUIRED,
            )
        raw = self.headers.get("Content-Length")
        if raw is None:
            return 0
        if not raw.strip().isdigit() or len(raw.strip()) > 18:
            self.close_connection = True
            raise BadRequest("Content-Length is not a valid length")
        return int(raw)

    def _discard_body(self) -> None:
        """Read and drop an unread body so the connection can serve the next request."""
        if self._body_read:
            return
        self._body_read = True
        try:
            length = self._content_length()
        except BadRequest:
            self.close_connection = True
            return
        self._drain(length)

    def handle_expect_100(self) -> bool:
        """``Expect: 100-continue`` (curl sends it for large bodies): refuse an oversized body
        before the client sends it."""
        try:
            length = self._content_length()
        except BadRequest as exc:
            self.send_json(exc.status, exc.payload())
            return False
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self.send_json(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                {"error": f"the body is {length:,} bytes; the limit is {MAX_BODY_BYTES:,}"},
            )
            return False
        return super().handle_expect_100()

    def _drain(self, length: int) -> None:
        """Read ``length`` bytes and drop them; a client still sending would otherwise see the
        connection reset instead of the answer. Past 1 MiB the connection is closed instead."""
        if length > DRAIN_LIMIT:
            self.close_connection = True
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 65536))
            if not chunk:
                self.close_connection = True
                return
            length -= len(chunk)

    def _body(self) -> dict[str, Any]:
        self._body_read = True
        length = self._content_length()
        if length > MAX_BODY_BYTES:
            self._drain(length)
            raise BadRequest(
                f"the body is {length:,} bytes; the limit is {MAX_BODY_BYTES:,}",
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            )
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            self.close_connection = True
            raise BadRequest("the body is shorter than its Content-Length")
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest("the body is not valid UTF-8") from None
        if content_type == "application/json" or content_type.endswith("+json"):
            return self._json_body(text)
        if content_type in ("", "application/x-www-form-urlencoded"):
            return self._form(text, "body")
        raise BadRequest(
            f"unsupported Content-Type {content_type!r}: send "
            "application/x-www-form-urlencoded or application/json",
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
        )

    @staticmethod
    def _json_body(text: str) -> dict[str, Any]:
        if not text.strip():
            return {}

        def reject_constant(name: str) -> Any:
            raise ValueError(f"{name} is not a number JSON allows")

        try:
            data = json.loads(text, parse_constant=reject_constant)
        except RecursionError:
            raise BadRequest("the JSON body is nested too deeply") from None
        except ValueError as exc:  # JSONDecodeError, huge integer literals, NaN/Infinity
            raise BadRequest(f"the body is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequest("the JSON body must be an object")
        return data


def make_server(  # board=RedisLeaderboard(..., events=True): the page goes live (guards)
    board: RedisLeaderboard,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    initial_max_entries: Optional[int] = None,
    tz: str = "UTC",
    clock: Optional[Clock] = None,
    metrics: bool = True,
) -> DemoServer:
    """A bound (not yet serving) demo server; port 0 picks a free port. ``tz`` and ``clock``:
    the Today and This week tabs'. ``metrics``: the latency panel (see ``DemoServer``)."""
    app = DemoApp(board, initial_max_entries=initial_max_entries, tz=tz, clock=clock)
    return DemoServer((host, port), app, metrics=metrics)
