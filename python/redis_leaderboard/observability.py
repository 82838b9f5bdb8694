"""OpenTelemetry metrics and spans for every board's calls, sync and asyncio, on any client.

``instrument(meter_provider=..., tracer_provider=...)`` switches them on for the process
(``pip install "redis-leaderboard[otel]"``: the OpenTelemetry API; the application brings the
SDK and an exporter). ``uninstrument()`` switches them off. Off, nothing is wrapped: a call
costs exactly what it costs without this module.

Metrics (the semantic conventions for database clients, then ours):

- ``db.client.operation.duration`` (histogram, seconds): one per call of a board's method,
  with ``db.system.name`` (``"redis"``), ``db.operation.name`` (the method: ``"get_rank"``),
  ``redis_leaderboard.board`` (the class: ``"RedisLeaderboard"``), ``server.address`` and
  ``server.port`` (a single-server client's) and, when the call raised, ``error.type`` (the
  exception's class, ``"redis_leaderboard.TimeoutError"``). A call
  is timed from the moment the method is called to the moment it returns or raises: a method
  of several round trips records once, and a method that calls another records once.
- Counters of the process's clients (every client, open or closed, read at each collection):
  ``redis_leaderboard.client.round_trips``, ``.commands`` (their ratio is the commands per round
  trip; over ``db.client.operation.duration``'s count, per call), ``.connections`` (opened),
  ``.reconnects``, ``.connection_lost``, ``.timeouts``, ``.failovers``, ``.topology_changes``,
  ``.redirects`` (``redis_leaderboard.redirect.kind``: ``moved`` or ``ask``),
  ``.script_reloads`` (NOSCRIPT on a connection that had loaded the script), ``.resends``
  (writes carrying a submission id sent again after a lost reply), ``.read_retries``; and
  ``redis_leaderboard.client.connection.count`` (an up-down counter: connections open now).
- Counted as calls end: ``redis_leaderboard.client.duplicates`` (writes answered from their
  submission id's record) and ``redis_leaderboard.client.rate_limited`` (writes refused by a
  rate limit), with the call's attributes.

No attribute holds a user id, a score or metadata; a board's key only with
``record_keys=True`` (``db.collection.name``). Spans (``spans=True``, with a tracer provider or
the global one): one CLIENT span per call, named after the method, with the same attributes;
a call that raised has the status ERROR and ``error.type`` (not the exception's message, which
may name a user).

Log records go through :mod:`logging` whether or not this is on (see the Observability guide).
"""

from __future__ import annotations

import functools
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from . import _drive
from ._core import ClusterClient as CoreClusterClient
from ._core import RateLimited, observed

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
    from opentelemetry.trace import Span, TracerProvider

__all__ = ["COUNTERS", "DURATION_BUCKETS", "instrument", "is_instrumented", "uninstrument"]

# The semantic conventions' advice for db.client.operation.duration (seconds).
DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)

# Observable counters: metric name -> (_core.observed() key, unit, description, attributes).
COUNTERS: dict[str, tuple[str, str, str, dict[str, str]]] = {
    "redis_leaderboard.client.round_trips": (
        "round_trips",
        "{round_trip}",
        "Writes of requests to a socket answered by a read (pipelined requests share one).",
        {},
    ),
    "redis_leaderboard.client.commands": ("commands", "{command}", "Commands sent.", {}),
    "redis_leaderboard.client.connections": (
        "connections",
        "{connection}",
        "Connections opened.",
        {},
    ),
    "redis_leaderboard.client.reconnects": (
        "reconnects",
        "{connection}",
        "Connections opened to replace a lost or retired one.",
        {},
    ),
    "redis_leaderboard.client.connection_lost": (
        "connection_lost",
        "{connection}",
        "Connections in use that failed or that the server closed.",
        {},
    ),
    "redis_leaderboard.client.timeouts": (
        "timeout",
        "{timeout}",
        "Connections given up for an overdue reply, requests that expired unsent, and requests "
        "overdue behind a WAIT or a block (failed alone).",
        {},
    ),
    "redis_leaderboard.client.failovers": (
        "failover",
        "{failover}",
        "New primaries followed (a Sentinel announcement, or a READONLY reply).",
        {},
    ),
    "redis_leaderboard.client.topology_changes": (
        "topology_change",
        "{change}",
        "Cluster slot maps read that differ from the previous one.",
        {},
    ),
    "redis_leaderboard.client.redirects": (
        "moved",
        "{redirect}",
        "Cluster redirects followed.",
        {"redis_leaderboard.redirect.kind": "moved"},
    ),
    "redis_leaderboard.client.redirects:ask": (
        "ask",
        "{redirect}",
        "Cluster redirects followed.",
        {"redis_leaderboard.redirect.kind": "ask"},
    ),
    "redis_leaderboard.client.script_reloads": (
        "script_reload",
        "{script}",
        "Scripts loaded again (NOSCRIPT) on a connection that had loaded them.",
        {},
    ),
    "redis_leaderboard.client.resends": (
        "resend",
        "{request}",
        "Writes carrying a submission id sent again after their reply was lost.",
        {},
    ),
    "redis_leaderboard.client.read_retries": (
        "read_retry",
        "{request}",
        "Reads sent again after their reply was lost.",
        {},
    ),
}

_in_call: ContextVar[bool] = ContextVar("redis_leaderboard_in_call", default=False)
_state: Optional[_Instruments] = None


def instrument(
    meter_provider: Optional[MeterProvider] = None,
    tracer_provider: Optional[TracerProvider] = None,
    *,
    spans: bool = True,
    record_keys: bool = False,
) -> None:
    """Records metrics (and, with ``spans``, spans) for every board's calls from now on, in
    this process, sync and asyncio, on any client (see the module). The providers default to
    OpenTelemetry's global ones. Calling it again replaces the providers and options."""
    try:
        from opentelemetry import metrics, trace
    except ImportError as error:  # pragma: no cover - the extra is installed in the tests
        raise ImportError(
            "redis_leaderboard.observability needs OpenTelemetry: "
            'pip install "redis-leaderboard[otel]"'
        ) from error
    global _state
    state = _Instruments(metrics, trace, meter_provider, tracer_provider, spans, record_keys)
    _state = state
    _drive.set_timing(state.wrap)


def uninstrument() -> None:
    """Stops recording: every method is again the one made without instrumentation."""
    global _state
    _state = None
    _drive.set_timing(None)


def is_instrumented() -> bool:
    """Whether instrument() is in effect."""
    return _state is not None


def _error_type(cls: type) -> str:
    """``error.type``: the exception's class, as the user would name it."""
    if cls.__module__ == "builtins":
        return cls.__qualname__
    if cls.__module__.startswith("redis_leaderboard"):
        return f"redis_leaderboard.{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _server_attributes(client: Any) -> dict[str, Any]:
    """``server.address``/``server.port`` of a single-server client (none for a cluster's,
    whose calls go to several nodes, or Sentinel's, whose primary moves)."""
    from .cluster import AsyncClusterClient

    address = getattr(client, "address", None)
    if not callable(address) or isinstance(client, (CoreClusterClient, AsyncClusterClient)):
        return {}
    where = address()
    if not isinstance(where, str) or where.endswith("via Sentinel"):
        return {}
    out: dict[str, Any] = {}
    if where.startswith("/"):
        out["server.address"] = where
    else:
        host, _, port = where.rpartition(":")
        out["server.address"] = host.strip("[]")
        if port.isdigit():
            out["server.port"] = int(port)
    return out


class _Instruments:
    def __init__(
        self,
        metrics: Any,
        trace: Any,
        meter_provider: Optional[MeterProvider],
        tracer_provider: Optional[TracerProvider],
        spans: bool,
        record_keys: bool,
    ) -> None:
        from . import __version__

        # The provider itself (the global one if none is given): instruments are per provider.
        self.meter_provider = meter_provider or metrics.get_meter_provider()
        meter = metrics.get_meter(
            "redis_leaderboard", __version__, meter_provider=self.meter_provider
        )
        self.duration = meter.create_histogram(
            "db.client.operation.duration",
            unit="s",
            description="Duration of a board's call, from the call to its result or error.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.duplicates = meter.create_counter(
            "redis_leaderboard.client.duplicates",
            unit="{write}",
            description="Writes answered from their submission id's record (not applied again).",
        )
        self.rate_limited = meter.create_counter(
            "redis_leaderboard.client.rate_limited",
            unit="{write}",
            description="Writes refused by a board's rate limit.",
        )
        seen: dict[str, Any] = {}
        for name, (key, unit, description, attributes) in COUNTERS.items():
            metric = name.partition(":")[0]
            if metric in seen:  # one instrument, one callback per attribute set
                seen[metric].append((key, attributes))
                continue
            seen[metric] = [(key, attributes)]
            meter.create_observable_counter(
                metric,
                callbacks=[self._observer(seen[metric])],
                unit=unit,
                description=description,
            )
        meter.create_observable_up_down_counter(
            "redis_leaderboard.client.connection.count",
            callbacks=[self._observer([("open_connections", {})])],
            unit="{connection}",
            description="Connections open now.",
        )
        self.tracer = (
            trace.get_tracer("redis_leaderboard", __version__, tracer_provider=tracer_provider)
            if spans
            else None
        )
        self.trace = trace
        self.record_keys = record_keys

    def _observer(
        self, series: list[tuple[str, dict[str, str]]]
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        from opentelemetry.metrics import Observation

        provider = self.meter_provider

        # An instrument cannot be removed, and a provider gives the one it made already to a
        # second instrument() (this callback is then the one it keeps): it reports while
        # instrumentation is on with its provider, whichever instrument() call made it.
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            if _state is None or _state.meter_provider is not provider:
                return []
            counters = observed()
            return [Observation(counters[key], attributes) for key, attributes in series]

        return observe

    def attributes(self, board: Any, method: str, board_type: str) -> dict[str, Any]:
        """The call's attributes, made once per board and method (and instrument() call)."""
        fields: dict[str, Any] = getattr(board, "__dict__", {})
        cached: Optional[tuple[_Instruments, dict[str, dict[str, Any]]]]
        cached = fields.get("_otel_attributes")
        if cached is None or cached[0] is not self:
            made: dict[str, dict[str, Any]] = {}
            cached = fields["_otel_attributes"] = (self, made)
        attributes: Optional[dict[str, Any]] = cached[1].get(method)
        if attributes is None:
            attributes = {
                "db.system.name": "redis",
                "db.operation.name": method,
                "redis_leaderboard.board": board_type,
                **_server_attributes(getattr(board, "redis", None)),
            }
            if self.record_keys and isinstance(getattr(board, "key", None), str):
                attributes["db.collection.name"] = board.key
            cached[1][method] = attributes
        return attributes

    def begin(self, board: Any, method: str, board_type: str) -> _Call:
        attributes = self.attributes(board, method, board_type)
        span = None
        token = None
        if self.tracer is not None:
            span = self.tracer.start_span(
                method, kind=self.trace.SpanKind.CLIENT, attributes=attributes
            )
            from opentelemetry import context

            token = context.attach(self.trace.set_span_in_context(span))
        return _Call(self, attributes, span, token)

    def wrap(self, installed: _drive.Installed) -> Callable[..., Any]:
        method, name = installed.method, installed.name
        cls = installed.cls()
        board_type = cls.__name__ if cls is not None else "?"
        state = self
        if installed.sync:

            @functools.wraps(method)
            def timed(board: Any, *args: Any, **kwargs: Any) -> Any:
                if _in_call.get():
                    return method(board, *args, **kwargs)
                token = _in_call.set(True)
                call = state.begin(board, name, board_type)
                try:
                    result = method(board, *args, **kwargs)
                except BaseException as error:
                    call.end(None, error)
                    raise
                finally:
                    _in_call.reset(token)
                call.end(result, None)
                return result

            return timed

        @functools.wraps(method)
        async def timed_async(board: Any, *args: Any, **kwargs: Any) -> Any:
            if _in_call.get():
                return await method(board, *args, **kwargs)
            token = _in_call.set(True)
            call = state.begin(board, name, board_type)
            try:
                result = await method(board, *args, **kwargs)
            except BaseException as error:
                call.end(None, error)
                raise
            finally:
                _in_call.reset(token)
            call.end(result, None)
            return result

        return timed_async


class _Call:
    """One call under way: its start, attributes and span."""

    __slots__ = ("attributes", "instruments", "span", "started", "token")

    def __init__(
        self,
        instruments: _Instruments,
        attributes: dict[str, Any],
        span: Optional[Span],
        token: Any,
    ) -> None:
        self.instruments = instruments
        self.attributes = attributes
        self.span = span
        self.token = token
        self.started = time.perf_counter()

    def end(self, result: Any, error: Optional[BaseException]) -> None:
        elapsed = time.perf_counter() - self.started
        instruments = self.instruments
        attributes = self.attributes
        if error is not None:
            attributes = {**attributes, "error.type": _error_type(type(error))}
            if isinstance(error, RateLimited):
                instruments.rate_limited.add(1, self.attributes)
        elif type(result) is dict and result.get("duplicate") is True:
            instruments.duplicates.add(1, attributes)
        instruments.duration.record(elapsed, attributes)
        span = self.span
        if span is not None:
            from opentelemetry import context
            from opentelemetry.trace import Status, StatusCode

            if error is not None:
                span.set_attribute("error.type", attributes["error.type"])
                span.set_status(Status(StatusCode.ERROR, attributes["error.type"]))
            span.end()
            context.detach(self.token)
