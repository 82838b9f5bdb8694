"""``redis-leaderboard league standings USER | tiers | settle``: a league read and settled from
the command line, with the options of the program that writes it (others refused, nothing
changed)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from helpers import FakeClock
from redis_leaderboard import Client, League
from test_cli import cli

UTC = timezone.utc
TIERS = ("bronze", "silver", "gold")
OPTIONS = ["--tiers", "bronze,silver,gold", "--cohort-size", "3", "--promote", "1", "--demote",
           "1", "--period", "day"]  # fmt: skip


def test_standings_tiers_and_settle(redis_server: Any, board_key: str) -> None:
    # Last period (yesterday, by an injected clock): 4 players, so two cohorts (3 and 1).
    yesterday = FakeClock(datetime.now(UTC) - timedelta(days=1))
    with Client(host=redis_server.host, port=redis_server.port) as client:
        league = League(client, board_key, clock=yesterday, tiers=TIERS, period="day",
                        cohort_size=3, promote=1, demote=1)  # fmt: skip
        for user, score in [("ann", 30), ("bob", 20), ("cy", 10), ("dee", 5)]:
            league.submit(user, score, {"team": "red"})
        last = league.period_id()
    yesterday.release()  # the server (and the CLI) on today's clock: yesterday has ended

    standings = cli(redis_server, board_key, "league", "standings", "bob", *OPTIONS,
                    "--period-id", last)  # fmt: skip
    assert standings.returncode == 0, standings.stderr
    lines = standings.stdout.splitlines()
    assert (
        lines[0]
        == f"{board_key} {last}: tier bronze, cohort 1, 3 players; " + lines[0].split("; ")[1]
    )
    assert [line.split() for line in lines[1:]] == [
        ["1", "ann", "30", "promote"],
        ["2", "bob", "20", "stay", "<"],
        ["3", "cy", "10", "stay"],
    ]  # the lowest tier demotes nobody

    settled = cli(redis_server, board_key, "league", "settle", *OPTIONS, "--json")
    assert settled.returncode == 0, settled.stderr
    done = json.loads(settled.stdout)
    assert (done["periods"], done["cohorts"], done["settled"], done["promoted"]) == (
        [last], 2, 2, 2)  # fmt: skip
    again = cli(redis_server, board_key, "league", "settle", *OPTIONS)
    assert again.stdout == "nothing to settle: every finished period with players is settled\n"

    tiers = cli(redis_server, board_key, "league", "tiers", *OPTIONS)
    assert [line.split() for line in tiers.stdout.splitlines()] == [
        ["gold", "0"], ["silver", "2"], ["bronze", "2"]]  # fmt: skip
    past = cli(redis_server, board_key, "league", "standings", "ann", *OPTIONS,
               "--period-id", last, "--json")  # fmt: skip
    assert json.loads(past.stdout)["settled"] is True
    # This period: nobody has played yet.
    absent = cli(redis_server, board_key, "league", "standings", "ann", *OPTIONS)
    assert absent.returncode == 1
    assert absent.stdout == f"ann has no cohort in the current period of league {board_key}\n"


def test_other_options_are_refused_naming_the_recorded_ones(
    redis_server: Any, board_key: str
) -> None:
    with Client(host=redis_server.host, port=redis_server.port) as client:
        League(client, board_key, tiers=TIERS, period="day", cohort_size=3, promote=1,
               demote=1).submit("ann", 1)  # fmt: skip
    refused = cli(redis_server, board_key, "league", "standings", "ann", "--period", "day",
                  "--cohort-size", "30", "--promote", "1", "--demote", "1")  # fmt: skip
    assert refused.returncode == 2
    assert "size=3" in refused.stderr and "nothing was changed" in refused.stderr
    bad = cli(redis_server, board_key, "league", "tiers", "--tiers", "a,,b")
    assert bad.returncode == 2 and "tier names" in bad.stderr


def test_a_league_with_score_limits(redis_server: Any, board_key: str) -> None:
    with Client(host=redis_server.host, port=redis_server.port) as client:
        League(client, board_key, tiers=TIERS, period="day", cohort_size=3, promote=1, demote=1,
               score_range=(0, 100), max_increment=50).submit("ann", 10)  # fmt: skip
    options = ["--period", "day", "--cohort-size", "3", "--promote", "1", "--demote", "1"]
    without = cli(redis_server, board_key, "league", "tiers", *options)
    assert without.returncode == 2 and "range:0:100 maxinc:50" in without.stderr
    limited = cli(redis_server, board_key, "league", "tiers", *options, "--score-range", "0:100",
                  "--max-increment", "50")  # fmt: skip
    assert limited.returncode == 0, limited.stderr
    assert limited.stdout.split()[-2:] == ["bronze", "1"]
    bad = cli(redis_server, board_key, "league", "tiers", "--score-range", "100")
    assert bad.returncode == 2 and "MIN:MAX" in bad.stderr
