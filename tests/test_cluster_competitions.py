"""Leagues and tournaments on a Redis Cluster, sync and asyncio: a league of several partitions
(each a whole league under its own hash tag, so on its own slot) places, settles and reads
across them; a tournament (one hash tag) joins, submits and answers every board query; and
both keep working while the slot of one partition migrates to another primary."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from helpers import FakeClock
from launchers import RedisCluster
from redis_leaderboard import ClusterClient, League, Tournament, TournamentFull, _core
from redis_leaderboard import asyncio as rl_asyncio

UTC = timezone.utc
TIERS = ("bronze", "silver", "gold")
USERS = [f"p{i:02d}" for i in range(24)]


@contextmanager
def migrating(cluster: RedisCluster, key: str, pause: float) -> Iterator[None]:
    """The slot of `key` moving to another primary, one key every `pause` seconds, while the
    block runs (100 filler keys of its hash tag go first, so that the block meets it); then
    the slot is the other primary's."""
    slot = _core.key_slot(key)
    source = cluster.owner(slot)
    tag = key[: key.index("}") + 1]
    for i in range(100):
        cluster.node_command(source, "SET", f"{tag}:filler{i}", i)
    target = next(n for n in cluster.primaries_running() if n is not source)
    moving = threading.Thread(
        target=cluster.migrate_slot,
        args=(slot, target),
        kwargs={"keys_per_migrate": 1, "pause": pause},
    )
    before = int(cluster.node_command(source, "CLUSTER", "COUNTKEYSINSLOT", slot))
    moving.start()
    try:
        # The block starts once the fillers have gone: the next keys to move are the board's,
        # so its calls meet the migration however long a loaded machine took to start it.
        deadline = time.monotonic() + 30
        while int(cluster.node_command(source, "CLUSTER", "COUNTKEYSINSLOT", slot)) > before - 100:
            assert time.monotonic() < deadline, "the fillers did not move"
            time.sleep(0.005)
        yield
    finally:
        moving.join()
    assert cluster.owner(slot) is target


def short_period() -> dict[str, Any]:
    """A league's period options: periods of PERIOD seconds, the current one ending PERIOD
    seconds from now. The server's clock decides when a period ends (the cluster's nodes run on
    the real clock: FakeClock moves only the standalone test servers'), so the test waits."""
    now = datetime.now(UTC).replace(microsecond=0)
    return {"period": timedelta(seconds=PERIOD), "anchor": now}


PERIOD = 12


def play_league(league: Any, call: Any) -> dict[str, Any]:
    """Two periods of a league through `call` (the sync call, or one run on a loop): what a
    player sees, for the two APIs to be compared with each other and with the rules."""
    for i, user in enumerate(USERS):
        placed = call(league.submit, user, i)
        assert placed["tier"] == "bronze" and placed["size"] <= league.cohort_size
    standings = {user: call(league.standings, user) for user in USERS}
    for user, seen in standings.items():
        assert user in [e["user_id"] for e in seen["entries"]]
        assert len(seen["entries"]) == seen["size"] <= league.cohort_size
    counts = call(league.tiers)
    assert counts[0] == {"tier": "bronze", "players": len(USERS)}
    time.sleep(max(0.0, (league.next_settlement() - datetime.now(UTC)).total_seconds()) + 0.05)
    settled = call(league.settle)
    again = call(league.settle)  # exactly once: nothing more the second time
    assert again["settled"] == 0 and again["promoted"] == again["demoted"] == 0
    tiers = {user: call(league.tier_of, user) for user in USERS}
    results = {user: call(league.results, user, standings[user]["period"]) for user in USERS}
    for user in USERS:
        assert results[user] is not None and results[user]["new_tier"] == tiers[user]
    assert len(settled["periods"]) == 1  # its own period's id: not compared across the APIs
    settled = {k: v for k, v in settled.items() if k != "periods"}
    return {"settled": settled, "tiers": tiers, "cohorts": settled["cohorts"]}


def test_a_partitioned_league_sync_and_asyncio(redis_cluster: RedisCluster) -> None:
    tag = uuid.uuid4().hex[:8]
    options: dict[str, Any] = dict(tiers=TIERS, cohort_size=5, promote=1, demote=1, partitions=3)
    with ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as client:
        league = League(client, f"lg{tag}s", **options, **short_period())
        slots = {_core.key_slot(league.events_key(user)) for user in USERS}
        assert len(slots) == 3  # one slot per partition
        # One partition's slot moves to another primary while the sync league plays: its
        # scripts are redirected (ASK, TRYAGAIN) and retried, the outcome the same.
        with migrating(redis_cluster, league.events_key(USERS[0]), 0.01):
            sync = play_league(league, lambda f, *a: f(*a))
        stats = client.stats()
        assert stats["redirects"] + stats["retries"] > 0  # the play did meet the migration

    async def run() -> dict[str, Any]:
        async with rl_asyncio.ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as c:
            league = rl_asyncio.League(c, f"lg{tag}a", **options, **short_period())
            loop = asyncio.get_running_loop()

            def call(f: Any, *args: Any) -> Any:  # the coroutine, run on this loop's thread
                return asyncio.run_coroutine_threadsafe(f(*args), loop).result(30)

            return await loop.run_in_executor(None, play_league, league, call)

    asynchronous = asyncio.run(run())
    # The same players, the same rules: the same outcome whichever API.
    assert asynchronous == sync
    promoted = sum(1 for tier in sync["tiers"].values() if tier == "silver")
    assert promoted == sync["settled"]["promoted"] == sync["cohorts"]  # the top of each cohort


def test_a_tournament_on_a_cluster_while_its_slot_migrates(redis_cluster: RedisCluster) -> None:
    key = f"{{tn{uuid.uuid4().hex[:8]}}}"
    day0 = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    clock = FakeClock(day0 + timedelta(hours=1))
    with ClusterClient(redis_cluster.startup_nodes, socket_timeout=5) as client:
        tournament = Tournament(client, key, clock=clock, schedule="day", max_size=30)
        for i in range(10):
            assert tournament.submit(f"p{i}", i)["size"] == i + 1
        with migrating(redis_cluster, key, 0.005):
            for i in range(10, 30):  # while the slot's keys move: redirected, retried
                tournament.submit(f"p{i}", i)
        stats = client.stats()
        assert stats["redirects"] + stats["retries"] > 0  # the play did meet the migration
        assert tournament.status("p0")["size"] == 30
        assert [e["user_id"] for e in tournament.get_top(3)] == ["p29", "p28", "p27"]
        assert tournament.get_rank("p0") == 30
        assert tournament.get_size() == 30
        with pytest.raises(TournamentFull, match="max_size"):
            tournament.join("late")
