"""The demo web server over HTTP: every route, every kind of bad input, Redis going away.

The server runs in-process on a free port, against the session's private redis-server (or a
fresh one for the tests that stop Redis), on a board key of its own.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Optional
from urllib.parse import quote, urlencode

import pytest

import redis_leaderboard
from redis_leaderboard.demo import SAMPLE_PLAYERS, DemoServer, make_server
from redis_leaderboard.demo.validation import LABELS

SEEDED_TOP = [
    (1, "player-4", 1435.0, "Priya"),
    (2, "player-2", 1310.0, "Mina"),
    (3, "player-6", 1240.0, "Rin"),
    (4, "player-3", 1175.0, "Noah"),
    (5, "player-5", 1080.0, "Jules"),
    (6, "player-1", 980.0, "Avery"),
]
# The guide's sample players' descriptions, word for word.
DESCRIPTIONS = {
    "player-1": "Steady climber who never wastes a turn.",
    "player-2": "Always finds a way into the top three.",
    "player-3": "Takes big swings and occasionally lands them.",
    "player-4": "Current pace-setter with a ruthless endgame.",
    "player-5": "Quietly consistent and hard to catch.",
    "player-6": "Moves fast after every weekly reset.",
}


def test_the_sample_players_are_the_guides() -> None:
    assert [(user_id, name, score) for user_id, name, score, _ in SAMPLE_PLAYERS] == [
        ("player-1", "Avery", 980),
        ("player-2", "Mina", 1310),
        ("player-3", "Noah", 1175),
        ("player-4", "Priya", 1435),
        ("player-5", "Jules", 1080),
        ("player-6", "Rin", 1240),
    ]
    assert {user_id: text for user_id, _, _, text in SAMPLE_PLAYERS} == DESCRIPTIONS


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def json(self) -> Any:
        assert self.headers["Content-Type"] == "application/json; charset=utf-8"
        return json.loads(self.body)


@dataclass
class Demo:
    server: DemoServer
    board: redis_leaderboard.RedisLeaderboard
    port: int

    def request(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        headers: Optional[dict[str, str]] = None,
    ) -> Response:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Response(resp.status, resp.headers, resp.read())
        finally:
            conn.close()

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def post_form(self, path: str, body: str | bytes) -> Response:
        data = body.encode() if isinstance(body, str) else body
        return self.request(
            "POST", path, data, {"Content-Type": "application/x-www-form-urlencoded"}
        )

    def post_json(self, path: str, body: str | bytes) -> Response:
        data = body.encode() if isinstance(body, str) else body
        return self.request("POST", path, data, {"Content-Type": "application/json"})

    def state(self, query: str = "") -> dict[str, Any]:
        resp = self.get("/api/state" + query)
        assert resp.status == 200, resp.body
        return resp.json


def start_demo(host: str, port: int, key: str) -> tuple[Demo, threading.Thread]:
    client = redis_leaderboard.Client(
        host=host, port=port, socket_timeout=3, socket_connect_timeout=3
    )
    board = redis_leaderboard.RedisLeaderboard(client, key=key, max_entries=100)
    server = make_server(board, "127.0.0.1", 0)
    assert server.app.seed_if_empty() is True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return Demo(server, board, server.server_address[1]), thread


def stop_demo(demo: Demo, thread: threading.Thread) -> None:
    demo.server.shutdown()
    demo.server.server_close()
    thread.join(timeout=10)
    demo.board.redis.close()


@pytest.fixture
def demo(redis_server: Any, board_key: str) -> Iterator[Demo]:
    running, thread = start_demo(redis_server.host, redis_server.port, board_key)
    yield running
    stop_demo(running, thread)


def top_rows(entries: list[dict[str, Any]]) -> list[tuple[int, str, float, str]]:
    return [(e["rank"], e["user_id"], e["score"], e["metadata"]["name"]) for e in entries]


# -- the page -------------------------------------------------------------------------------


def test_page_is_served_with_a_strict_content_security_policy(demo: Demo) -> None:
    page = demo.get("/")
    assert page.status == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    csp = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    html = page.body.decode()
    # The script is a separate file; no inline script or handler attributes.
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/app.js" defer>']
    assert not re.search(r"\son[a-z]+=", html)

    script = demo.get("/app.js")
    assert script.status == 200
    assert script.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert script.headers["X-Content-Type-Options"] == "nosniff"
    assert "innerHTML" not in script.body.decode()
    assert "insertAdjacentHTML" not in script.body.decode()

    style = demo.get("/app.css")
    assert (style.status, style.headers["Content-Type"]) == (200, "text/css; charset=utf-8")
    icon = demo.get("/favicon.svg")
    assert (icon.status, icon.headers["Content-Type"]) == (200, "image/svg+xml")


def test_static_files_answer_head_and_conditional_requests(demo: Demo) -> None:
    head = demo.request("HEAD", "/")
    assert head.status == 200
    assert head.body == b""
    assert int(head.headers["Content-Length"]) == len(demo.get("/").body)
    etag = demo.get("/app.js").headers["ETag"]
    cached = demo.request("GET", "/app.js", headers={"If-None-Match": etag})
    assert (cached.status, cached.body) == (304, b"")


# -- reading the board ----------------------------------------------------------------------


def test_a_new_board_starts_with_the_guides_six_sample_players(demo: Demo) -> None:
    state = demo.state("?top=10")
    assert state["leaderboard_key"] == demo.board.key
    assert state["size"] == 6
    assert state["max_entries"] == 100
    assert top_rows(state["top_entries"]) == SEEDED_TOP
    assert [e["metadata"] for e in state["top_entries"]] == [
        {"name": name, "description": DESCRIPTIONS[user_id]} for _, user_id, _, name in SEEDED_TOP
    ]
    assert re.fullmatch(r"[0-9a-f]{16}", state["version"])


def test_state_takes_top_rank_and_around_from_the_query(demo: Demo) -> None:
    state = demo.state("?top=2&rank=4&around=3")
    assert (state["top_count"], state["around_rank"], state["around_count"]) == (2, 4, 3)
    assert top_rows(state["top_entries"]) == SEEDED_TOP[:2]
    assert top_rows(state["around_entries"]) == SEEDED_TOP[2:5]
    # A window past the end is clamped to the board, as the guide's get_around_rank.
    assert top_rows(demo.state("?rank=6&around=4")["around_entries"]) == SEEDED_TOP[2:6]
    assert top_rows(demo.state("?rank=1000000&around=2")["around_entries"]) == SEEDED_TOP[4:6]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?top=&rank=&around=",
        "?top=abc&rank=nan&around=x",
        "?top=0&rank=0&around=0",
        "?top=-1&rank=-3&around=-5",
        "?top=2.5&rank=1e3&around=0x10",
        "?top=%FF&rank=%C3%28",
        "?top=" + "9" * 5000,  # past int()'s digit limit: not a number, as in the guide
    ],
)
def test_a_missing_or_unusable_count_falls_back_to_the_guides_default(
    demo: Demo, query: str
) -> None:
    state = demo.state(query)
    assert (state["top_count"], state["around_rank"], state["around_count"]) == (5, 3, 5)
    assert state["clamped"] == {}
    assert top_rows(state["top_entries"]) == SEEDED_TOP[:5]
    assert top_rows(state["around_entries"]) == SEEDED_TOP[:5]


def test_huge_counts_are_clamped_and_the_answer_says_so(demo: Demo) -> None:
    state = demo.state("?top=5000000&rank=99999999999999999999&around=1001")
    assert (state["top_count"], state["around_rank"], state["around_count"]) == (
        1000,
        1_000_000_000,
        1000,
    )
    assert state["clamped"] == {
        "top_count": 1000,
        "around_rank": 1_000_000_000,
        "around_count": 1000,
    }
    assert top_rows(state["top_entries"]) == SEEDED_TOP
    assert top_rows(state["around_entries"]) == SEEDED_TOP
    # At the limit nothing is clamped.
    at_limit = demo.state("?top=1000&around=1000&rank=1000000000")
    assert at_limit["clamped"] == {}
    assert demo.state("?top=1001")["clamped"] == {"top_count": 1000}


def test_the_version_changes_exactly_when_the_view_does(demo: Demo) -> None:
    first = demo.state("?top=10")["version"]
    assert demo.state("?top=10")["version"] == first
    demo.board.increment_score("player-1", 1)  # another client writes
    second = demo.state("?top=10")["version"]
    assert second != first
    assert demo.state("?top=10")["version"] == second
    demo.board.increment_score("player-1", -1)
    assert demo.state("?top=10")["version"] == first


def test_one_player_can_be_looked_up_by_id(demo: Demo) -> None:
    resp = demo.get("/api/players/player-2")
    assert resp.status == 200
    assert resp.json == {
        "entry": {
            "rank": 2,
            "user_id": "player-2",
            "score": 1310.0,
            "metadata": {"name": "Mina", "description": DESCRIPTIONS["player-2"]},
        }
    }
    missing = demo.get("/api/players/nobody")
    assert missing.status == 404
    assert missing.json == {"error": "no player with id 'nobody' on the board"}


def test_player_ids_in_urls_are_percent_decoded_text(demo: Demo) -> None:
    user_id = "team a/ü?#%"
    body = "user_id=" + quote(user_id, safe="") + "&score=5&name=" + quote("<b>x</b>")
    assert demo.post_form("/api/players", body).status == 200
    resp = demo.get("/api/players/" + quote(user_id, safe=""))
    assert resp.status == 200
    assert resp.json["entry"] == {
        "rank": 7,
        "user_id": user_id,
        "score": 5.0,
        "metadata": {"name": "<b>x</b>", "description": "No description provided."},
    }
    deleted = demo.request("DELETE", "/api/players/" + quote(user_id, safe=""))
    assert (deleted.status, deleted.json) == (200, {"deleted": True, "user_id": user_id})


# -- writing --------------------------------------------------------------------------------


def test_adding_a_player_answers_as_the_guide(demo: Demo) -> None:
    resp = demo.post_form(
        "/api/players", "user_id=player-7&score=1500&name=Zed&description=Fresh+face"
    )
    assert resp.status == 200
    assert resp.json == {
        "message": "Player saved.",
        "entry": {
            "rank": 1,
            "user_id": "player-7",
            "score": 1500.0,
            "metadata": {"name": "Zed", "description": "Fresh face"},
            "trimmed_user_ids": [],
        },
        "max_entries": 100,
    }
    assert demo.state()["size"] == 7


def test_saving_a_player_without_name_or_description_gives_the_guides_defaults(
    demo: Demo,
) -> None:
    resp = demo.post_json("/api/players", '{"user_id": "player-1", "score": 1300.5, "name": "Ave"}')
    assert resp.status == 200
    assert resp.json["entry"] == {
        "rank": 3,
        "user_id": "player-1",
        "score": 1300.5,
        "metadata": {"name": "Ave", "description": "No description provided."},
        "trimmed_user_ids": [],
    }
    # Blank (or blank after trimming) fields get the defaults too: a save sets the whole
    # profile, as the guide's does.
    resp = demo.post_form("/api/players", "user_id=+player-1+&score=990&name=+&description=")
    assert resp.json["entry"]["metadata"] == {
        "name": "player-1",
        "description": "No description provided.",
    }
    assert resp.json["entry"]["rank"] == 6


def test_a_field_sent_twice_counts_the_first_time_as_in_the_guide(demo: Demo) -> None:
    resp = demo.post_form("/api/players", "user_id=a&user_id=b&score=1&score=2&name=&name=N")
    assert resp.json["entry"]["user_id"] == "a"
    assert resp.json["entry"]["score"] == 1.0
    assert resp.json["entry"]["metadata"]["name"] == "N"  # blank values are dropped first


def test_incrementing_keeps_metadata_and_overwrites_only_the_fields_given(demo: Demo) -> None:
    resp = demo.post_form("/api/increment", "user_id=player-1&amount=500&name=&description=")
    assert resp.status == 200
    assert resp.json == {
        "message": "Score updated.",
        "entry": {
            "rank": 1,
            "user_id": "player-1",
            "score": 1480.0,
            "metadata": {"name": "Avery", "description": DESCRIPTIONS["player-1"]},
            "trimmed_user_ids": [],
        },
        "max_entries": 100,
    }
    renamed = demo.post_form("/api/increment", "user_id=player-1&amount=1&name=Ave")
    assert renamed.json["entry"]["metadata"] == {
        "name": "Ave",
        "description": DESCRIPTIONS["player-1"],
    }
    described = demo.post_json(
        "/api/increment", '{"user_id": "player-1", "amount": 1, "description": "New text"}'
    )
    assert described.json["entry"]["metadata"] == {"name": "Ave", "description": "New text"}


def test_incrementing_a_new_player_gives_the_guides_defaults(demo: Demo) -> None:
    resp = demo.post_json("/api/increment", '{"user_id": "player-8", "amount": -2.25}')
    assert resp.json["entry"] == {
        "rank": 7,
        "user_id": "player-8",
        "score": -2.25,
        "metadata": {"name": "player-8", "description": "Created during score increment."},
        "trimmed_user_ids": [],
    }
    named = demo.post_form("/api/increment", "user_id=player-9&amount=3&name=Neg")
    assert named.json["entry"]["metadata"] == {
        "name": "Neg",
        "description": "Created during score increment.",
    }


def test_concurrent_increments_from_many_clients_all_count(demo: Demo) -> None:
    def worker() -> None:
        for _ in range(10):
            resp = demo.post_form("/api/increment", "user_id=player-1&amount=2")
            assert resp.status == 200

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert demo.get("/api/players/player-1").json["entry"]["score"] == 980.0 + 16 * 10 * 2


def test_lowering_max_entries_trims_the_lowest_players(demo: Demo) -> None:
    resp = demo.post_form("/api/config", "max_entries=4")
    assert resp.status == 200
    assert resp.json == {
        "message": "Leaderboard limit updated.",
        "max_entries": 4,
        "trimmed_user_ids": ["player-1", "player-5"],
    }
    state = demo.state()
    assert (state["size"], state["max_entries"]) == (4, 4)
    assert demo.get("/api/players/player-1").status == 404
    assert demo.board.get_user_metadata("player-1") == {}

    # A write below every kept score is trimmed at once: the entry has no rank.
    low = demo.post_form("/api/players", "user_id=player-9&score=1&name=Low")
    assert low.json == {
        "message": "Player saved.",
        "entry": {
            "user_id": "player-9",
            "score": 1.0,
            "metadata": {"name": "Low", "description": "No description provided."},
            "trimmed_user_ids": ["player-9"],
        },
        "max_entries": 4,
    }
    # A write that makes it pushes out the lowest.
    high = demo.post_json("/api/increment", '{"user_id": "player-10", "amount": 2000}')
    assert high.json["entry"]["rank"] == 1
    assert high.json["entry"]["trimmed_user_ids"] == ["player-3"]
    assert demo.post_json("/api/config", '{"max_entries": 10}').json == {
        "message": "Leaderboard limit updated.",
        "max_entries": 10,
        "trimmed_user_ids": [],
    }


def test_reset_restores_the_sample_players_and_the_startup_limit(demo: Demo) -> None:
    demo.post_form("/api/players", "user_id=player-7&score=5000")
    demo.post_form("/api/config", "max_entries=3")
    resp = demo.request("POST", "/api/reset")
    assert resp.status == 200
    assert resp.json == {
        "message": "Demo leaderboard reset.",
        "max_entries": 100,
        "size": 6,
        "trimmed_user_ids": [],
    }
    state = demo.state("?top=10")
    assert top_rows(state["top_entries"]) == SEEDED_TOP
    assert state["max_entries"] == 100


def test_deleting_a_player(demo: Demo) -> None:
    resp = demo.request("DELETE", "/api/players/player-3")
    assert (resp.status, resp.json) == (200, {"deleted": True, "user_id": "player-3"})
    assert demo.board.get_user_metadata("player-3") == {}
    assert [e["user_id"] for e in demo.state()["top_entries"]] == [
        "player-4",
        "player-2",
        "player-6",
        "player-5",
        "player-1",
    ]
    again = demo.request("DELETE", "/api/players/player-3")
    assert (again.status, again.json) == (
        404,
        {"error": "no player with id 'player-3' on the board"},
    )


# -- a client written against the guide ------------------------------------------------------

GUIDE_STATE_FIELDS = {
    "leaderboard_key",
    "max_entries",
    "top_count",
    "around_rank",
    "around_count",
    "size",
    "top_entries",
    "around_entries",
}


def guide_entry(rank: int, user_id: str, score: float, name: str, description: str) -> Any:
    return {
        "rank": rank,
        "user_id": user_id,
        "score": score,
        "metadata": {"name": name, "description": description},
    }


GUIDE_SEEDED = [
    guide_entry(rank, user_id, score, name, DESCRIPTIONS[user_id])
    for rank, user_id, score, name in SEEDED_TOP
]


class GuideClient:
    """What the guide's page does over HTTP: its query (``top``, ``around``, ``rank``), its
    forms posted whole as ``URLSearchParams(new FormData(form))`` (blank fields included), and
    nothing but the guide's field names read from the answers."""

    def __init__(self, demo: Demo) -> None:
        self.demo = demo

    def state(self, top: str = "5", around: str = "5", rank: str = "3") -> dict[str, Any]:
        resp = self.demo.get(
            f"/api/state?top={quote(top)}&around={quote(around)}&rank={quote(rank)}"
        )
        assert resp.status == 200
        data = resp.json
        assert GUIDE_STATE_FIELDS <= set(data)
        return {name: data[name] for name in GUIDE_STATE_FIELDS}

    def post(self, path: str, **form: str) -> tuple[int, dict[str, Any]]:
        resp = self.demo.post_form(path, urlencode(form))
        return resp.status, resp.json

    def upsert(self, user_id: str, score: str, name: str = "", description: str = "") -> Any:
        return self.post(
            "/api/players", user_id=user_id, name=name, score=score, description=description
        )

    def increment(self, user_id: str, amount: str, name: str = "", description: str = "") -> Any:
        return self.post(
            "/api/increment", user_id=user_id, amount=amount, name=name, description=description
        )


def test_a_client_written_against_the_guide_works_unchanged(demo: Demo) -> None:
    guide = GuideClient(demo)

    # The page opens: the guide's defaults (top 5, around 5, rank 3).
    assert guide.state() == {
        "leaderboard_key": demo.board.key,
        "max_entries": 100,
        "top_count": 5,
        "around_rank": 3,
        "around_count": 5,
        "size": 6,
        "top_entries": GUIDE_SEEDED[:5],
        "around_entries": GUIDE_SEEDED[:5],
    }
    # Its inputs left blank, zero or nonsense: the defaults, never an error.
    assert guide.state(top="", around="0", rank="x") == guide.state()
    # Other views.
    view = guide.state(top="2", around="3", rank="5")
    assert (view["top_count"], view["around_count"], view["around_rank"]) == (2, 3, 5)
    assert view["top_entries"] == GUIDE_SEEDED[:2]
    assert view["around_entries"] == GUIDE_SEEDED[3:6]

    # "Save player" with the guide's pre-filled form.
    status, saved = guide.upsert(
        "player-7", "1125", "Kai", "New challenger climbing into contention."
    )
    assert status == 200
    assert saved == {
        "message": "Player saved.",
        "entry": {
            **guide_entry(5, "player-7", 1125.0, "Kai", "New challenger climbing into contention."),
            "trimmed_user_ids": [],
        },
        "max_entries": 100,
    }
    # ... and with name and description left blank: the guide's defaults.
    status, saved = guide.upsert("player-8", "12.5")
    assert saved["entry"] == {
        **guide_entry(8, "player-8", 12.5, "player-8", "No description provided."),
        "trimmed_user_ids": [],
    }

    # "Add points" with the guide's pre-filled form (name and description blank): the
    # player keeps its metadata.
    status, updated = guide.increment("player-2", "25")
    assert status == 200
    assert updated == {
        "message": "Score updated.",
        "entry": {
            **guide_entry(2, "player-2", 1335.0, "Mina", DESCRIPTIONS["player-2"]),
            "trimmed_user_ids": [],
        },
        "max_entries": 100,
    }
    # A new player made by an increment.
    status, created = guide.increment("player-9", "1", name="Nia")
    assert created["entry"] == {
        **guide_entry(9, "player-9", 1.0, "Nia", "Created during score increment."),
        "trimmed_user_ids": [],
    }

    # "Apply max size".
    status, limited = guide.post("/api/config", max_entries="4")
    assert (status, limited) == (
        200,
        {
            "message": "Leaderboard limit updated.",
            "max_entries": 4,
            "trimmed_user_ids": ["player-9", "player-8", "player-1", "player-5", "player-7"],
        },
    )
    state = guide.state()
    assert (state["size"], state["max_entries"]) == (4, 4)
    assert [e["user_id"] for e in state["top_entries"]] == [
        "player-4",
        "player-2",
        "player-6",
        "player-3",
    ]
    # A save trimmed away at once: the guide's entry without a rank.
    status, low = guide.upsert("player-10", "3")
    assert low["entry"] == {
        "user_id": "player-10",
        "score": 3.0,
        "metadata": {"name": "player-10", "description": "No description provided."},
        "trimmed_user_ids": ["player-10"],
    }

    # Errors: the guide's {"error": ...} with a 4xx, for the guide's page to show.
    for path, form in [
        ("/api/players", {"user_id": "", "score": "1", "name": "", "description": ""}),
        ("/api/players", {"user_id": "p", "score": "nan", "name": "", "description": ""}),
        ("/api/increment", {"user_id": "p", "amount": "", "name": "", "description": ""}),
        ("/api/config", {"max_entries": "0"}),
    ]:
        status, error = guide.post(path, **form)
        assert status == 400
        assert isinstance(error["error"], str) and error["error"]

    # "Reset sample data".
    reset = demo.request("POST", "/api/reset")
    assert reset.status == 200
    assert reset.json["message"] == "Demo leaderboard reset."
    assert reset.json["max_entries"] == 100
    assert guide.state()["top_entries"] == GUIDE_SEEDED[:5]


# -- hostile input --------------------------------------------------------------------------

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"

BAD_REQUESTS = [
    # (method, path, content type, body, status, error)
    ("POST", "/api/players", FORM, "score=10", 400, "Player id is required"),
    ("POST", "/api/players", FORM, "user_id=&score=10", 400, "Player id is required"),
    ("POST", "/api/players", FORM, "user_id=+++&score=10", 400, "Player id is required"),
    ("POST", "/api/players", FORM, "user_id=a%00b&score=10", 400,
     "Player id must not contain control characters"),
    ("POST", "/api/players", FORM, "user_id=" + "x" * 201 + "&score=1", 400,
     "Player id must be at most 200 characters"),
    ("POST", "/api/players", FORM, "user_id=p", 400, "Score is required"),
    ("POST", "/api/players", FORM, "user_id=p&score=", 400, "Score is required"),
    ("POST", "/api/players", FORM, "user_id=p&score=abc", 400,
     "Score must be a number, like 1200 or 12.5"),
    ("POST", "/api/players", FORM, "user_id=p&score=nan", 400,
     "Score must be a number, like 1200 or 12.5"),
    ("POST", "/api/players", FORM, "user_id=p&score=NaN", 400,
     "Score must be a number, like 1200 or 12.5"),
    ("POST", "/api/players", FORM, "user_id=p&score=inf", 400,
     "Score must be a number, like 1200 or 12.5"),
    ("POST", "/api/players", FORM, "user_id=p&score=-Infinity", 400,
     "Score must be a number, like 1200 or 12.5"),
    ("POST", "/api/players", FORM, "user_id=p&score=0x10", 400,
     "Score must be a number, like 1200 or 12.5"),
    ("POST", "/api/players", FORM, "user_id=p&score=1_000", 400,
     "Score must be a number, like 1200 or 12.5"),
    ("POST", "/api/players", FORM, "user_id=p&score=1e400", 400,
     "Score must be a finite number between -1e15 and 1e15"),
    ("POST", "/api/players", FORM, "user_id=p&score=-1e16", 400,
     "Score must be a finite number between -1e15 and 1e15"),
    ("POST", "/api/players", FORM, "user_id=p&score=" + "9" * 400, 400,
     "Score must be a number, like 1200 or 12.5"),
    ("POST", "/api/players", FORM, "user_id=p&score=1&name=" + "n" * 101, 400,
     "Name must be at most 100 characters"),
    ("POST", "/api/players", FORM, "user_id=p&score=1&name=a%0Ab", 400,
     "Name must not contain control characters"),
    ("POST", "/api/players", FORM, "user_id=p&score=1&description=" + "d" * 501, 400,
     "Description must be at most 500 characters"),
    ("POST", "/api/players", FORM, "user_id=p&score=1&name=%FF", 400,
     "the body is not valid UTF-8"),
    ("POST", "/api/players", JSON, '{"user_id": "p", "score": NaN}', 400,
     "the body is not valid JSON: NaN is not a number JSON allows"),
    ("POST", "/api/players", JSON, '{"user_id": "p", "score": -Infinity}', 400,
     "the body is not valid JSON: -Infinity is not a number JSON allows"),
    ("POST", "/api/players", JSON, '{"user_id": "p", "score": 1e400}', 400,
     "Score must be a finite number between -1e15 and 1e15"),
    ("POST", "/api/players", JSON, '{"user_id": "p", "score": ' + "9" * 400 + "}", 400,
     "Score must be a finite number between -1e15 and 1e15"),
    ("POST", "/api/players", JSON, '{"user_id": "p", "score": true}', 400,
     "Score must be a number"),
    ("POST", "/api/players", JSON, '{"user_id": "p", "score": [1]}', 400,
     "Score must be a number"),
    ("POST", "/api/players", JSON, '{"user_id": 7, "score": 1}', 400, "Player id must be text"),
    ("POST", "/api/players", JSON, '{"user_id": "\\ud800", "score": 1}', 400,
     "Player id must be valid Unicode text"),
    ("POST", "/api/players", JSON, '{"user_id": "p", "score": 1, "name": {"a": 1}}', 400,
     "Name must be text"),
    ("POST", "/api/players", JSON, '{"user_id": "p", "score": ', 400,
     "the body is not valid JSON: Expecting value: line 1 column 27 (char 26)"),
    ("POST", "/api/players", JSON, "[1, 2]", 400, "the JSON body must be an object"),
    ("POST", "/api/players", JSON, "[" * 60_000, 400, "the JSON body is nested too deeply"),
    ("POST", "/api/players", "text/plain", "user_id=p&score=1", 415,
     "unsupported Content-Type 'text/plain': send application/x-www-form-urlencoded or "
     "application/json"),
    ("POST", "/api/increment", FORM, "user_id=p", 400, "Amount is required"),
    ("POST", "/api/increment", FORM, "user_id=p&amount=nan", 400,
     "Amount must be a number, like 1200 or 12.5"),
    ("POST", "/api/increment", FORM, "user_id=p&amount=inf", 400,
     "Amount must be a number, like 1200 or 12.5"),
    ("POST", "/api/increment", FORM, "user_id=p&amount=1e400", 400,
     "Amount must be a finite number between -1e15 and 1e15"),
    ("POST", "/api/increment", JSON, '{"amount": 5}', 400, "Player id is required"),
    ("POST", "/api/config", FORM, "", 400, "Maximum entries is required"),
    ("POST", "/api/config", FORM, "max_entries=0", 400, "Maximum entries must be at least 1"),
    ("POST", "/api/config", FORM, "max_entries=-3", 400, "Maximum entries must be at least 1"),
    ("POST", "/api/config", FORM, "max_entries=2.5", 400, "Maximum entries must be a whole number"),
    ("POST", "/api/config", FORM, "max_entries=ten", 400, "Maximum entries must be a whole number"),
    ("POST", "/api/config", FORM, "max_entries=1000001", 400,
     "Maximum entries must be at most 1,000,000"),
    ("POST", "/api/config", FORM, "max_entries=" + "9" * 40, 400,
     "Maximum entries must be a whole number"),
    ("POST", "/api/config", JSON, '{"max_entries": 1e300}', 400,
     "Maximum entries must be at most 1,000,000"),
    ("POST", "/api/config", JSON, '{"max_entries": 2.5}', 400,
     "Maximum entries must be a whole number"),
    ("POST", "/api/config", JSON, '{"max_entries": false}', 400,
     "Maximum entries must be a whole number"),
    ("GET", "/api/players/", None, None, 400, "Player id must not be empty"),
    ("GET", "/api/players/%FF", None, None, 400, "Player id in the URL is not valid UTF-8"),
    ("DELETE", "/api/players/a%00b", None, None, 400,
     "Player id must not contain control characters"),
    ("GET", "/nope", None, None, 404, "no such page: /nope"),
    ("GET", "/api/nope", None, None, 404, "no such page: /api/nope"),
    ("GET", "/api/state/", None, None, 404, "no such page: /api/state/"),
    ("GET", "/../etc/passwd", None, None, 404, "no such page: /../etc/passwd"),
    ("POST", "/api/state", FORM, "top=1", 405, "POST is not allowed here; use GET, HEAD"),
    ("DELETE", "/", None, None, 405, "DELETE is not allowed here; use GET, HEAD"),
    ("GET", "/api/players", None, None, 405, "GET is not allowed here; use POST"),
    ("GET", "/api/reset", None, None, 405, "GET is not allowed here; use POST"),
    ("PUT", "/api/players/p", JSON, "{}", 405, "PUT is not allowed here; use DELETE, GET, HEAD"),
    ("PATCH", "/api/config", JSON, "{}", 405, "PATCH is not allowed here; use POST"),
    ("BREW", "/api/state", None, None, 405, "BREW is not allowed here; use GET, HEAD"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "content_type", "body", "status", "error"),
    BAD_REQUESTS,
    ids=[f"{m} {p[:40]} {(b or '')[:40]}" for m, p, _, b, _, _ in BAD_REQUESTS],
)
def test_bad_input_gets_a_4xx_json_error_and_changes_nothing(
    demo: Demo,
    method: str,
    path: str,
    content_type: Optional[str],
    body: Optional[str],
    status: int,
    error: str,
) -> None:
    before = demo.state()["version"]
    headers = {"Content-Type": content_type} if content_type else {}
    resp = demo.request(method, path, body.encode() if body is not None else None, headers)
    # A message about one field names it as the page labels it, and "field" gives its API name.
    fields = [name for name, label in LABELS.items() if error.startswith(label + " ")]
    expected = {"error": error, **({"field": fields[0]} if fields else {})}
    assert (resp.status, resp.json) == (status, expected)
    if status == 405:
        assert resp.headers["Allow"] == error.rpartition("use ")[2]
    assert demo.state()["version"] == before


def test_non_utf8_bytes_in_a_body_are_refused(demo: Demo) -> None:
    form = demo.post_form("/api/players", b"user_id=\xff\xfe&score=1")
    assert (form.status, form.json) == (400, {"error": "the body is not valid UTF-8"})
    as_json = demo.post_json("/api/players", b'{"user_id": "\xc3\x28", "score": 1}')
    assert (as_json.status, as_json.json) == (400, {"error": "the body is not valid UTF-8"})
    assert demo.state()["size"] == 6


def test_a_body_over_64_kib_gets_413(demo: Demo) -> None:
    body = "user_id=p&score=1&description=" + "x" * (64 * 1024)
    resp = demo.post_form("/api/players", body)
    assert resp.status == 413
    assert resp.json == {"error": f"the body is {len(body):,} bytes; the limit is 65,536"}
    # A body of a megabyte is read and dropped, so the client gets its answer rather than a
    # reset connection.
    big = demo.post_form("/api/players", b"x" * (1024 * 1024))
    assert (big.status, big.json) == (
        413,
        {"error": "the body is 1,048,576 bytes; the limit is 65,536"},
    )
    # Exactly the limit is read (and then refused only for its content).
    limit = "user_id=p&score=1&description=" + "x" * (64 * 1024 - 30)
    assert len(limit) == 64 * 1024
    assert demo.post_form("/api/players", limit).json == {
        "error": "Description must be at most 500 characters",
        "field": "description",
    }


def test_an_oversized_body_announced_with_expect_100_continue_is_refused_before_sending(
    demo: Demo,
) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", demo.port), timeout=10) as s:
        s.sendall(
            b"POST /api/players HTTP/1.1\r\nHost: x\r\nContent-Type: " + FORM.encode()
            + b"\r\nContent-Length: 8388608\r\nExpect: 100-continue\r\n\r\n"
        )  # fmt: skip
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ")
    assert json.loads(body) == {"error": "the body is 8,388,608 bytes; the limit is 65,536"}


def test_malformed_framing_gets_4xx_json(demo: Demo) -> None:
    resp = demo.request(
        "POST",
        "/api/players",
        b"user_id=p&score=1",
        {"Content-Length": "abc", "Content-Type": FORM},
    )
    # http.client sends our Content-Length header as given.
    assert (resp.status, resp.json) == (400, {"error": "Content-Length is not a valid length"})
    conn = http.client.HTTPConnection("127.0.0.1", demo.port, timeout=10)
    try:
        conn.putrequest("POST", "/api/players")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        conn.send(b"5\r\nhello\r\n0\r\n\r\n")
        chunked = conn.getresponse()
        assert chunked.status == 411
        assert json.loads(chunked.read()) == {
            "error": "chunked bodies are not supported; send Content-Length"
        }
    finally:
        conn.close()


def test_a_garbled_request_line_gets_a_json_400(demo: Demo) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", demo.port), timeout=10) as s:
        s.sendall(b"GET /api/state HTTP/1.1 extra words\r\n\r\n")
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 400 ") or head.startswith(b"HTTP/1.1 400 ")
    assert b"Content-Type: application/json; charset=utf-8" in head
    assert json.loads(body)["error"].startswith("Bad request")


def test_writes_from_another_site_are_refused(demo: Demo) -> None:
    resp = demo.request(
        "POST",
        "/api/reset",
        b"",
        {"Content-Type": FORM, "Origin": "http://evil.example"},
    )
    assert (resp.status, resp.json) == (403, {"error": "cross-origin requests are not allowed"})
    same = demo.request(
        "POST",
        "/api/players",
        b"user_id=p&score=1",
        {"Content-Type": FORM, "Origin": f"http://127.0.0.1:{demo.port}"},
    )
    assert same.status == 200


def test_keep_alive_survives_errors(demo: Demo) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", demo.port, timeout=10)
    try:
        for body, status in [(b"user_id=p&score=nan", 400), (b"user_id=p&score=3", 200)]:
            conn.request("POST", "/api/players", body, {"Content-Type": FORM})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == status
        conn.request("POST", "/api/state", b"top=1", {"Content-Type": FORM})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 405
        conn.request("GET", "/api/state?top=1", b"a body nobody asked for")
        resp = conn.getresponse()
        assert (resp.status, len(json.loads(resp.read())["top_entries"])) == (200, 1)
        conn.request("GET", "/api/players/p")
        resp = conn.getresponse()
        assert (resp.status, json.loads(resp.read())["entry"]["score"]) == (200, 3.0)
    finally:
        conn.close()


def test_scores_other_clients_set_to_infinity_are_still_valid_json(
    demo: Demo, redis_server: Any
) -> None:
    r = redis_server.redis_py()
    try:
        r.zadd(demo.board.key, {"cheater": float("inf")})
    finally:
        r.close()
    state = demo.state()
    assert state["top_entries"][0] == {
        "rank": 1,
        "user_id": "cheater",
        "score": "inf",
        "metadata": {},
    }
    assert demo.get("/api/players/cheater").json["entry"]["score"] == "inf"


def test_bytes_another_client_stored_as_non_utf8_give_a_json_error_not_a_traceback(
    demo: Demo, redis_server: Any
) -> None:
    r = redis_server.redis_py()
    try:
        r.hset(f"{demo.board.key}:user:player-1", "name", b"\xc3\x28")
    finally:
        r.close()
    resp = demo.get("/api/players/player-1")
    assert resp.status == 502
    assert resp.json["error"].startswith("the board holds data that is not UTF-8 text (")
    assert demo.get("/api/state?top=1").status == 200  # the rest of the board still shows


# -- Redis going away -----------------------------------------------------------------------


@pytest.mark.slow
def test_redis_going_away_gives_503_and_the_server_recovers(fresh_redis_server: Any) -> None:
    demo, thread = start_demo(fresh_redis_server.host, fresh_redis_server.port, "demo:outage")
    try:
        assert demo.state()["size"] == 6

        fresh_redis_server.stop()
        for method, path, body in [
            ("GET", "/api/state", None),
            ("POST", "/api/players", b"user_id=p&score=1"),
            ("GET", "/api/players/player-1", None),
        ]:
            resp = demo.request(method, path, body, {"Content-Type": FORM})
            assert resp.status == 503
            assert resp.headers["Retry-After"] == "2"
            assert resp.json["error"].startswith("Redis is unavailable (")
            assert resp.json["error"].endswith(").")
        # Validation still answers without Redis.
        assert demo.post_form("/api/players", "user_id=p&score=nan").status == 400

        fresh_redis_server.start()  # same port, empty (no persistence)
        state = demo.state()
        assert (state["size"], state["top_entries"]) == (0, [])
        assert demo.request("POST", "/api/reset").json["size"] == 6
        assert top_rows(demo.state("?top=6")["top_entries"]) == SEEDED_TOP
    finally:
        stop_demo(demo, thread)


@pytest.mark.slow
def test_a_redis_that_stops_answering_times_out_into_503(fresh_redis_server: Any) -> None:
    demo, thread = start_demo(fresh_redis_server.host, fresh_redis_server.port, "demo:paused")
    try:
        fresh_redis_server.pause()
        started = time.monotonic()
        resp = demo.get("/api/state")
        elapsed = time.monotonic() - started
        assert resp.status == 503
        assert resp.json["error"].startswith("Redis is unavailable (")
        assert 2.5 < elapsed < 10
        fresh_redis_server.resume()
        assert top_rows(demo.state("?top=6")["top_entries"]) == SEEDED_TOP
    finally:
        fresh_redis_server.resume()
        stop_demo(demo, thread)


def test_the_event_stream_carries_removals_as_feed_items(redis_server: Any, board_key: str) -> None:
    # Issue 17: deletions, trims and clears reach the live page as feed items, like writes.
    client = redis_leaderboard.Client(host=redis_server.host, port=redis_server.port)
    board = redis_leaderboard.RedisLeaderboard(client, key=board_key, max_entries=100, events=True)
    server = make_server(board, "127.0.0.1", 0)
    server.app.seed_if_empty()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    demo = Demo(server, board, server.server_address[1])
    try:
        demo.state("?top=10")  # the page's first read: the demo remembers the names it shows
        conn = http.client.HTTPConnection("127.0.0.1", demo.port, timeout=20)
        conn.request("GET", "/api/events")
        resp = conn.getresponse()
        assert resp.status == 200
        # The first keep-alive comment: the stream's position is taken ("$"), nothing is missed.
        while resp.readline() != b": alive\n":
            pass
        board.delete_user("player-4")
        board.set_max_entries(4)
        board.clear()
        items: list[dict[str, Any]] = []
        while len(items) < 3:
            line = resp.readline()
            if line.startswith(b"data: "):
                items.append(json.loads(line[len(b"data: ") :]))
        conn.close()
        assert [(item["kind"], item["text"]) for item in items] == [
            ("delete", "Priya was removed from the board (was rank 1)"),
            ("trim", "Trimmed by the size limit: Avery"),
            ("clear", "The board was cleared (4 removed)"),
        ]
        # A big board clears in pages, one event each: the feed says what is left.
        page = {**items[2], "removed": 5000, "size": 7000}
        assert server.app.feed_item(page)["text"] == "Clearing the board: 5000 removed, 7000 left"
    finally:
        stop_demo(demo, thread)
