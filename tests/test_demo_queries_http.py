"""The demo's query routes (issue 13), beside the guide's: /api/around-user, /api/page,
/api/histogram. The guide's routes and fields are unchanged (tests/test_demo_http.py)."""

from __future__ import annotations

from typing import Any, Iterator
from urllib.parse import urlencode

import pytest

from test_demo_http import Demo, start_demo, stop_demo


@pytest.fixture
def demo(redis_server: Any, board_key: str) -> Iterator[Demo]:
    running, thread = start_demo(redis_server.host, redis_server.port, board_key)
    yield running
    stop_demo(running, thread)


def ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["user_id"] for e in entries]


def test_around_user(demo: Demo) -> None:
    # The six sample players, best first: player-4, -2, -6, -3, -5, -1.
    resp = demo.get("/api/around-user?" + urlencode({"user_id": "player-1", "count": 3}))
    assert resp.status == 200
    body = resp.json
    assert (body["user_id"], body["count"]) == ("player-1", 3)
    assert [(e["rank"], e["user_id"]) for e in body["entries"]] == [
        (4, "player-3"),
        (5, "player-5"),
        (6, "player-1"),
    ]
    assert body["entries"] == demo.board.get_around_user("player-1", 3)
    default = demo.get("/api/around-user?user_id=player-2").json
    assert ids(default["entries"]) == ["player-4", "player-2", "player-6", "player-3", "player-5"]
    missing = demo.get("/api/around-user?user_id=nobody")
    assert (missing.status, missing.json) == (
        404,
        {"error": "no player with id 'nobody' on the board"},
    )


def test_page(demo: Demo) -> None:
    page = demo.get("/api/page?page=2&page_size=4").json
    assert {k: v for k, v in page.items() if k != "entries"} == {
        "page": 2,
        "page_size": 4,
        "total_pages": 2,
        "size": 6,
    }
    assert [(e["rank"], e["user_id"]) for e in page["entries"]] == [
        (5, "player-5"),
        (6, "player-1"),
    ]
    first = demo.get("/api/page").json
    assert (first["page"], first["page_size"], len(first["entries"])) == (1, 10, 6)
    past = demo.get("/api/page?page=3&page_size=4").json
    assert past["entries"] == []


def test_histogram(demo: Demo) -> None:
    body = demo.get("/api/histogram?bins=3").json
    assert body == {"bins": demo.board.get_histogram(3)}
    assert [b["count"] for b in body["bins"]] == [2, 2, 2]
    assert (body["bins"][0]["min"], body["bins"][-1]["max"]) == (980.0, 1435.0)
    assert len(demo.get("/api/histogram").json["bins"]) == 10


@pytest.mark.parametrize(
    ("path", "field", "message"),
    [
        ("/api/around-user", "user_id", "Player id is required"),
        ("/api/around-user?user_id=player-1&count=0", "count", "Count must be at least 1"),
        ("/api/around-user?user_id=player-1&count=x", "count", "Count must be a whole number"),
        ("/api/around-user?user_id=player-1&count=1001", "count", "Count must be at most 1,000"),
        ("/api/page?page=0", "page", "Page must be at least 1"),
        ("/api/page?page_size=1001", "page_size", "Page size must be at most 1,000"),
        ("/api/histogram?bins=0", "bins", "Bins must be at least 1"),
        ("/api/histogram?bins=2.5", "bins", "Bins must be a whole number"),
    ],
)
def test_bad_queries_get_a_400_naming_the_field(
    demo: Demo, path: str, field: str, message: str
) -> None:
    resp = demo.get(path)
    assert resp.status == 400
    assert resp.json == {"error": message, "field": field}


def test_the_query_routes_are_reads(demo: Demo) -> None:
    for path in ("/api/around-user?user_id=player-1", "/api/page", "/api/histogram"):
        resp = demo.request("POST", path, b"", {"Content-Type": "application/json"})
        assert resp.status == 405
        assert resp.headers["Allow"] == "GET, HEAD"
