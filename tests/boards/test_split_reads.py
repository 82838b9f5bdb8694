"""Reads of many entries in the guide's two steps (SplitRead in cpp/leaderboard/operations.cpp):
from 50 entries on (get_top and get_around_rank on a default board) or 200 (both on a board with
options, get_around_user, get_page, get_entries; list_all past its first 200), the ranked read
without metadata, then one HGETALL per entry pipelined, on the sync, asyncio and cluster
clients (a cluster client's second step redirected starts over as the one script,
tests/test_cluster.py; the asyncio client's second step runs behind calls made meanwhile,
test_async_transport.py). They answer what the
same entries read in small reads (one script each) answer, on every ranking rule; cost two
round trips and one command per entry more; an error reply to one HGETALL raises for that call
only, the connection kept. A compact board (``LB_TEST_LAYOUT=compact``) reads from the same
sizes in two steps too, its second an HGET of its recorded layout and one HMGET of its hash
(test_compact.py: a conversion under way)."""

from __future__ import annotations

from typing import Any

import pytest

from apis import Api
from helpers import pipelined_read_write_read
from redis_leaderboard import Client, NoPermissionError, RedisLeaderboard, ResponseError

BOARDS: dict[str, dict[str, Any]] = {
    "default": {},
    "asc": {"order": "asc"},
    "first": {"ties": "first"},
    "competition": {"ties": "competition"},
    "dense": {"ties": "dense"},
    "tiebreak": {"tiebreak": [("time", "asc")]},
}


def fill(board: Any, options: dict[str, Any], n: int = 520) -> list[str]:
    """``n`` players, scores with ties (every score 3 times), metadata for all but every 7th."""
    users = [f"p{i:03d}" for i in range(n)]
    for i, user in enumerate(users):
        metadata = {} if i % 7 == 0 else {"name": f"Player {i}", "i": str(i)}
        if "tiebreak" in options:
            board.submit(user, float(i // 3), metadata, tiebreak={"time": float(i % 5)})
        else:
            board.upsert_user(user, float(i // 3), metadata)
    return users


def trips(api: Api, call: Any) -> tuple[Any, int, int]:
    before = api.client.stats()
    result = call()
    after = api.client.stats()
    return (
        result,
        after["round_trips"] - before["round_trips"],
        after["commands"] - before["commands"],
    )


@pytest.mark.parametrize("kind", list(BOARDS))
def test_a_big_read_answers_what_small_reads_of_the_same_entries_answer(
    api: Api, board_key: str, kind: str
) -> None:
    options = BOARDS[kind]
    board = api.leaderboard(board_key, None, **options)
    users = fill(board, options)
    board.get_size()  # the board's options checked: get_top's lean form is then one ZRANGE
    small = [e for page in range(1, 53) for e in board.get_page(page, 10)["entries"]]
    assert len(small) == len(users)
    # The second step: an HGETALL per entry in the guide's layout; on a compact board the HGET
    # of its recorded layout and one HMGET of its hash.
    guide = board.layout == "guide"
    top, round_trips, commands = trips(api, lambda: board.get_top(250))
    assert top == small[:250]
    assert (round_trips, commands) == ((2, 251) if guide else (2, 3))
    assert sum(1 for e in top if e["metadata"] == {}) > 0  # players without metadata: {}

    page = board.get_page(2, 200)
    assert page["entries"] == small[200:400]
    assert page["total_pages"] == 3 and page["size"] == len(users)
    assert board.get_around_rank(300, 200) == small[199:399]
    assert board.get_around_rank(519, 200) == small[-200:]  # clamped to the board
    position = [e["user_id"] for e in small].index("p260")
    start = min(max(0, position - 100), len(users) - 200)
    assert board.get_around_user("p260", 200) == small[start : start + 200]

    everything, round_trips, commands = trips(api, board.list_all)
    assert everything == small
    # A board of the guide's ranking rules: the guide's ZRANGE (and a ZCARD), then every entry's
    # metadata: 520 HGETALLs (compact: the HGET and one HMGET). Another: the first 200 with their
    # metadata, the other 320 ranks, then theirs.
    if kind == "default":
        assert (round_trips, commands) == ((2, 2 + len(users)) if guide else (2, 4))
    else:
        assert (round_trips, commands) == ((3, 2 + len(users) - 200) if guide else (3, 4))

    asked = [*users[::3], *users[1:50:2], "nobody", users[1]]  # 174 + 25 + 2 ids
    board.get_entries(asked[:3])  # entries.lua loaded: no NOSCRIPT round trip below
    entries, round_trips, _ = trips(api, lambda: board.get_entries(asked))
    assert round_trips == 2
    assert entries == [
        e for i in range(0, len(asked), 10) for e in board.get_entries(asked[i : i + 10])
    ]
    assert entries[-2] is None and entries[-1] is not None


def test_below_the_threshold_a_read_is_one_round_trip(api: Api, board_key: str) -> None:
    board = api.leaderboard(board_key, None)
    fill(board, {}, 220)
    board.get_size()
    for call in (
        lambda: board.get_top(49),
        lambda: board.get_around_rank(60, 49),
        lambda: board.get_page(1, 199),
        lambda: board.get_around_user("p050", 199),
        lambda: board.get_entries([f"p{i:03d}" for i in range(199)]),
    ):
        assert trips(api, call)[1:] == (1, 1)
    ranked = api.leaderboard(board_key + ":asc", None, order="asc")
    fill(ranked, {"order": "asc"}, 200)
    assert trips(api, ranked.list_all)[1:] == (1, 1)  # a board with options: its first 200
    fill(ranked, {"order": "asc"}, 220)
    assert trips(api, lambda: ranked.get_top(199))[1:] == (1, 1)  # a script's lean form: 200
    assert trips(api, lambda: ranked.get_around_rank(60, 199))[1:] == (1, 1)
    guide = ranked.layout == "guide"
    assert trips(api, lambda: ranked.get_top(200))[1:] == ((2, 201) if guide else (2, 3))
    # list_all on a board of the guide's rules known to hold fewer than 50 entries (or of a
    # size not known yet): one script, one snapshot; from 50 the guide's ZRANGE (with a ZCARD),
    # then the metadata. The size it goes by is the last a reply said (get_size, list_all).
    small = api.leaderboard(board_key + ":small", None)
    fill(small, {}, 49)
    assert trips(api, small.list_all)[1:] == (1, 1)
    fill(small, {}, 50)
    assert trips(api, small.list_all)[1:] == (1, 1)  # it knew 49
    assert trips(api, small.list_all)[1:] == ((2, 52) if guide else (2, 4))
    small.delete_user("p049")
    assert small.get_size() == 49
    assert trips(api, small.list_all)[1:] == (1, 1)


def test_around_a_rank_on_a_default_board_starts_with_the_guides_zrange(
    api: Api, board_key: str
) -> None:
    # get_around_rank on a board of the guide's rules (either layout) splits from 50 entries,
    # as get_top: its first step is the guide's ZRANGE of the window (the clamp to the board's
    # end moves only a window that runs past it), then the metadata. A window that did run past
    # the end (its ZRANGE short) takes the window script's lean form, which clamps it: three
    # round trips.
    board = api.leaderboard(board_key, None)
    users = fill(board, {}, 300)
    board.get_size()
    small = [e for page in range(1, 31) for e in board.get_page(page, 10)["entries"]]
    guide = board.layout == "guide"
    for rank, count, start, steps in (
        (1, 50, 0, 2),
        (100, 50, 74, 2),
        (150, 100, 99, 2),
        (251, 100, 200, 2),  # the window ends at the board's last entry: full
        (252, 100, 200, 3),  # one past it: clamped
        (300, 100, 200, 3),
        (5000, 60, 240, 3),  # a rank past the board's end: its last 60
        (10, 300, 0, 2),  # the whole board, exactly
        (10, 400, 0, 3),  # a window larger than the board: the whole board
    ):
        around, round_trips, commands = trips(
            api, lambda r=rank, c=count: board.get_around_rank(r, c)
        )
        want = small[start : start + count]
        assert around == want, (rank, count)
        # The guide's layout: an HGETALL per entry; a compact board's HGET and HMGET.
        assert (round_trips, commands) == (steps, steps - 1 + (len(want) if guide else 2))
    assert len(users) == 300


@pytest.mark.guide_layout("an error on one player's hash in the second step: the guide's layout")
def test_an_error_on_one_hash_raises_for_that_call_only(api: Api, board_key: str, r: Any) -> None:
    board = api.leaderboard(board_key, None)
    fill(board, {}, 120)
    r.delete(f"{board_key}:user:p050")  # rank 70
    r.set(f"{board_key}:user:p050", "not a hash")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        board.get_top(100)
    assert len(board.get_top(20)) == 20  # the connection kept, in step
    r.delete(f"{board_key}:user:p050")
    assert board.get_top(100)[69] == {"rank": 70, "user_id": "p050", "score": 16.0, "metadata": {}}


@pytest.mark.guide_layout("an ACL rule over some players' hashes: the guide's layout")
def test_a_hash_the_caller_may_not_read_raises_no_permission(
    api: Api, board_key: str, r: Any
) -> None:
    board = api.leaderboard(board_key, None)
    fill(board, {}, 120)
    user = f"split-{board_key}"
    r.acl_setuser(
        user,
        enabled=True,
        passwords=["+pw"],
        keys=[board_key, f"{board_key}:options", f"{board_key}:user:p1*"],
        commands=["+@all"],
    )
    try:
        limited = api.connect(username=user, password="pw")
        reader = api.leaderboard(board_key, None, client=limited)
        assert len(reader.get_top(20)) == 20  # p119..p100: the p1* hashes
        with pytest.raises(NoPermissionError):
            reader.get_top(120)  # p019..p000 too
    finally:
        r.acl_deluser(user)


def test_a_split_read_runs_whole_before_what_is_pipelined_behind_it(
    redis_server: Any, board_key: str
) -> None:
    # A sync client's run_pipelined writes operations ahead of their replies: a read in two
    # steps holds what comes after it until it is done, so a write made after the read is not
    # seen by its second step (metadata newer than its ranks).
    client = Client(host=redis_server.host, port=redis_server.port)
    try:
        board = RedisLeaderboard(client, key=board_key, max_entries=None)
        fill(board, {}, 120)
        board.get_size()
        before_write, after_write = pipelined_read_write_read(
            client, board, 100, "p118", 39.0, {"name": "renamed"}
        )
        assert before_write[1]["metadata"] == {"name": "Player 118", "i": "118"}
        assert after_write[1]["metadata"] == {"name": "renamed", "i": "118"}
    finally:
        client.close()
