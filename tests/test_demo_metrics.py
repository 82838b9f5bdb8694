"""Issue 29: the demo's latency panel, fed by the library's OpenTelemetry metrics.

The demo server instruments the process (``observability.instrument``) with a MeterProvider
of its own and an in-memory reader; ``GET /api/metrics`` gives calls, errors, p50 and p99 per
board method, and a few client counters; the page shows them. Instrumentation is
process-wide: every test here ends uninstrumented (the ``uninstrumented`` fixture), and the
demo itself uninstruments when its last server closes.
"""

from __future__ import annotations

import json
import os
import re
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import redis_leaderboard
from redis_leaderboard import observability
from redis_leaderboard.demo import make_server
from redis_leaderboard.demo.server import METRICS_BUCKETS, histogram_quantile
from test_demo_http import Demo, start_demo, stop_demo

FORM = "application/x-www-form-urlencoded"
COUNTERS = {"round_trips", "commands", "reconnects", "connection_lost", "timeouts"}


@pytest.fixture
def uninstrumented() -> Iterator[None]:
    """The process uninstrumented after the test, whatever it left behind."""
    yield
    observability.uninstrument()


@pytest.fixture
def demo(redis_server: Any, board_key: str, uninstrumented: None) -> Iterator[Demo]:
    assert not observability.is_instrumented()
    running, thread = start_demo(redis_server.host, redis_server.port, board_key)
    yield running
    stop_demo(running, thread)


def metrics(demo: Demo) -> tuple[dict[str, Any], str]:
    """The answer of /api/metrics, and its text."""
    resp = demo.get("/api/metrics")
    assert resp.status == 200, resp.body
    assert resp.headers["Cache-Control"] == "no-store"
    return resp.json, resp.body.decode()


def by_method(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["method"]: row for row in answer["methods"]}


def without_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Imports of the OpenTelemetry SDK fail from now on (as if it were not installed)."""
    for name in list(sys.modules):
        if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)


# -- the estimate -----------------------------------------------------------------------------


def test_quantiles_interpolate_inside_the_bucket_holding_them() -> None:
    bounds = (1.0, 2.0, 4.0)
    # Four observations in (1, 2], seen between 1.2 and 1.8: spread evenly over [1.2, 1.8].
    assert histogram_quantile(0.5, bounds, [0, 4, 0, 0], 1.2, 1.8) == pytest.approx(1.5)
    assert histogram_quantile(0.25, bounds, [0, 4, 0, 0], 1.2, 1.8) == pytest.approx(1.35)
    # The first bucket starts at the smallest observation, the open top one ends at the largest.
    assert histogram_quantile(0.5, bounds, [2, 0, 0, 0], 0.5, 0.9) == pytest.approx(0.7)
    assert histogram_quantile(0.99, bounds, [1, 0, 0, 1], 0.5, 7.0) == pytest.approx(4 + 3 * 0.98)
    assert histogram_quantile(1.0, bounds, [1, 0, 0, 1], 0.5, 7.0) == pytest.approx(7.0)
    # The bucket boundary, exactly: the last observation of (1, 2] is estimated at 2.
    assert histogram_quantile(0.5, bounds, [0, 1, 1, 0], 1.5, 3.0) == pytest.approx(2.0)
    assert histogram_quantile(0.5, bounds, [0, 0, 0, 0], 0.0, 0.0) is None


def test_estimates_never_decrease_with_the_quantile_nor_leave_the_observed_range() -> None:
    bounds = METRICS_BUCKETS
    counts = [0, 3, 9, 40, 7, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert len(counts) == len(bounds) + 1
    low, high = 0.000011, 12.5
    estimates = [histogram_quantile(q / 100, bounds, counts, low, high) for q in range(1, 101)]
    assert all(e is not None and low <= e <= high for e in estimates)
    assert estimates == sorted(estimates)  # type: ignore[type-var]
    assert estimates[-1] == pytest.approx(high)


def test_the_demos_buckets_are_finer_than_the_librarys_default() -> None:
    assert list(METRICS_BUCKETS) == sorted(set(METRICS_BUCKETS))
    assert METRICS_BUCKETS[0] <= 0.0001 < observability.DURATION_BUCKETS[0]
    assert METRICS_BUCKETS[-1] == observability.DURATION_BUCKETS[-1]
    # A 100 µs call does not share the bottom bucket with everything up to 1 ms.
    assert sum(bound <= 0.001 for bound in METRICS_BUCKETS) >= 5


# -- over HTTP ----------------------------------------------------------------------------------


def test_metrics_count_the_calls_made_and_name_no_player_nor_key(
    demo: Demo, board_key: str
) -> None:
    assert observability.is_instrumented()
    user_ids = [f"metrics-user-{uuid.uuid4().hex}" for _ in range(3)]
    for i, user_id in enumerate(user_ids):
        resp = demo.post_form("/api/players", f"user_id={user_id}&score={1000 + i}&name=N{i}")
        assert resp.status == 200, resp.body
    for _ in range(4):
        demo.state("?top=3")
    assert demo.get(f"/api/players/{user_ids[0]}").status == 200
    for _ in range(2):  # refused by the library itself: counted as calls with an error
        with pytest.raises(ValueError):
            demo.board.get_top(0)

    answer, text = metrics(demo)
    assert set(answer) == {"methods", "counters"}
    methods = by_method(answer)
    # The seed (six group writes and six league matches) and ours, one row for "submit".
    assert methods["submit"]["calls"] >= 6 + 6 + 3
    assert methods["submit"]["boards"] == ["LeaderboardGroup", "League"]
    assert methods["get_top"]["calls"] >= 4 + 2
    assert methods["get_top"]["errors"] >= 2
    assert methods["get_around_rank"]["calls"] >= 4
    assert methods["get_user_entry"]["calls"] >= 1
    assert methods["get_size"]["errors"] == 0
    for row in answer["methods"]:
        assert set(row) == {"method", "calls", "errors", "p50_ms", "p99_ms", "boards"}
        assert 0 <= row["errors"] <= row["calls"]
        assert 0 < row["p50_ms"] <= row["p99_ms"] < 10_000
    assert [row["calls"] for row in answer["methods"]] == sorted(
        (row["calls"] for row in answer["methods"]), reverse=True
    )
    counters = answer["counters"]
    assert set(counters) == COUNTERS
    assert all(isinstance(value, int) and value >= 0 for value in counters.values())
    assert counters["commands"] >= counters["round_trips"] > 0
    # Method and class names and numbers only: no player, no key, no server address.
    for secret in [*user_ids, board_key, "player-1", "127.0.0.1", "metrics-user"]:
        assert secret not in text
    assert json.loads(text) == answer


def test_more_calls_show_at_the_next_read(demo: Demo) -> None:
    assert "get_top" not in by_method(metrics(demo)[0])  # the seed writes; reads none
    demo.state()
    before = by_method(metrics(demo)[0])["get_top"]["calls"]
    for _ in range(5):
        demo.state()
    assert by_method(metrics(demo)[0])["get_top"]["calls"] == before + 5


def test_the_route_follows_the_demos_conventions(demo: Demo) -> None:
    head = demo.request("HEAD", "/api/metrics")
    assert (head.status, head.body) == (200, b"")
    post = demo.request("POST", "/api/metrics", b"", {"Content-Type": FORM})
    assert post.status == 405
    assert post.headers["Allow"] == "GET, HEAD"
    assert post.json == {"error": "POST is not allowed here; use GET, HEAD"}


def test_demo_servers_share_the_instrumentation_and_the_last_to_close_ends_it(
    demo: Demo, redis_server: Any, board_key: str
) -> None:
    other, thread = start_demo(redis_server.host, redis_server.port, board_key + ":other")
    try:
        assert other.server.metrics is demo.server.metrics
        demo.state()
        # One reader, every board of the process: the other server sees these calls too.
        assert by_method(metrics(other)[0]) == by_method(metrics(demo)[0])
    finally:
        stop_demo(other, thread)
    assert observability.is_instrumented()  # the first server still runs
    assert metrics(demo)[0]["methods"]
    demo.server.shutdown()
    demo.server.server_close()
    assert not observability.is_instrumented()
    assert demo.server.metrics is None


def test_a_server_without_metrics_says_so_and_instruments_nothing(
    redis_server: Any, board_key: str, uninstrumented: None
) -> None:
    client = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    board = redis_leaderboard.RedisLeaderboard(client, key=board_key)
    server = make_server(board, "127.0.0.1", 0, metrics=False)
    try:
        assert not observability.is_instrumented()
        assert server.metrics is None
    finally:
        server.server_close()
        client.close()
    assert not observability.is_instrumented()


def test_without_the_sdk_the_demo_works_and_the_route_says_how_to_get_it(
    redis_server: Any, board_key: str, uninstrumented: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_sdk(monkeypatch)
    running, thread = start_demo(redis_server.host, redis_server.port, board_key)
    try:
        assert not observability.is_instrumented()
        assert running.state()["size"] == 6
        resp = running.get("/api/metrics")
        assert resp.status == 404
        assert 'pip install "redis-leaderboard[otel]"' in resp.json["error"]
        assert set(resp.json) == {"error"}
    finally:
        stop_demo(running, thread)


def test_an_application_that_instrumented_the_process_keeps_its_providers(
    redis_server: Any, board_key: str, uninstrumented: None
) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    observability.instrument(meter_provider=provider, spans=False)
    running, thread = start_demo(redis_server.host, redis_server.port, board_key)
    try:
        resp = running.get("/api/metrics")
        assert resp.status == 404
        assert "already instrumented" in resp.json["error"]
    finally:
        stop_demo(running, thread)
    assert observability.is_instrumented()  # the application's, untouched by the demo
    data = reader.get_metrics_data()
    assert data is not None
    names = {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert "db.client.operation.duration" in names  # the seeding went to its reader
    provider.shutdown()


# -- the page -----------------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    from test_demo_browser import CHROMIUM_ARGS

    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.mark.browser
def test_the_panel_shows_a_row_per_method_called(browser: Any, demo: Demo) -> None:
    from playwright.sync_api import expect

    from test_demo_browser import PageErrors

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = PageErrors(page)
    page.goto(f"http://127.0.0.1:{demo.port}/")
    try:
        # The page's own reads are board calls: they show at once, then every 2 s.
        row = page.locator('#latency-table tbody tr[data-method="get_top"]')
        expect(row.locator(".col-p50")).to_have_text(re.compile(r"^[\d.,]+$"), timeout=10_000)
        with pytest.raises(ValueError):
            demo.board.get_page(0)  # a method the page never calls, failing once
        failed = page.locator('#latency-table tbody tr[data-method="get_page"]')
        expect(failed.locator(".col-calls")).to_have_text("1", timeout=10_000)
        expect(failed.locator(".col-errors")).to_have_text("1")
        expect(failed.locator(".col-errors")).to_have_class(re.compile(r"\bhas-errors\b"))
        expect(failed.locator(".col-method")).to_have_attribute(
            "title", "Called on RedisLeaderboard"
        )

        calls = int(row.locator(".col-calls").inner_text().replace(",", ""))
        assert 1 <= calls <= by_method(metrics(demo)[0])["get_top"]["calls"]
        p50 = float(row.locator(".col-p50").inner_text().replace(",", ""))
        p99 = float(row.locator(".col-p99").inner_text().replace(",", ""))
        assert 0 < p50 <= p99
        expect(page.locator("#latency-counters")).to_have_text(
            re.compile(
                r"^Clients: [\d,]+ round trips, [\d,]+ commands, [\d,]+ reconnects, "
                r"[\d,]+ connections lost, [\d,]+ timeouts\.$"
            )
        )
        assert errors.messages == []
    finally:
        context.close()


@pytest.mark.browser
def test_without_the_sdk_the_panel_says_how_to_get_it(
    browser: Any,
    redis_server: Any,
    board_key: str,
    uninstrumented: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from playwright.sync_api import expect

    without_sdk(monkeypatch)
    running, thread = start_demo(redis_server.host, redis_server.port, board_key)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{running.port}/")
        expect(page.locator("#latency-table tbody")).to_have_text(
            re.compile(r'^Latency metrics are off: .*pip install "redis-leaderboard\[otel\]"')
        )
        expect(page.locator("#top-table tbody tr")).to_have_count(5)  # the rest works
    finally:
        context.close()
        stop_demo(running, thread)
