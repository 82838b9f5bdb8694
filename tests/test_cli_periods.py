"""redis-leaderboard's reads with --period (issue 16): the board of the current period of a
PeriodicLeaderboard, or --ago N periods before, in --tz."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from redis_leaderboard import Client, PeriodicLeaderboard
from test_cli import cli


def test_reads_take_the_current_period(redis_server: Any, board_key: str) -> None:
    boards = {}
    with Client(host=redis_server.host, port=redis_server.port) as client:
        for period in ("day", "week", "month"):
            board = PeriodicLeaderboard(
                client, key=board_key, period=period, tz="Europe/Amsterdam", keep=2
            )
            board.submit(f"now-{period}", 10, {"name": period})
            # A write into the previous period, named explicitly (as a replay would: its grace
            # lets it write there after the period ended on the server's clock).
            earlier = board.previous().start + timedelta(seconds=1)
            PeriodicLeaderboard(
                client, key=board_key, period=period, tz="Europe/Amsterdam", keep=2,
                grace=timedelta(days=40),
            ).at(earlier).submit(f"then-{period}", 5)  # fmt: skip
            boards[period] = (board.current().key, board.next_reset())
    for period, (key, reset) in boards.items():
        top = cli(redis_server, board_key, "top", "--period", period, "--tz", "Europe/Amsterdam")
        assert top.returncode == 0, top.stderr
        assert top.stdout.split() == ["1", f"now-{period}", "10", f"name={period}"]
        assert top.stderr == f"{key} (resets {reset.isoformat()})\n"
        older = cli(
            redis_server, board_key, "rank", f"then-{period}", "--period", period,
            "--tz", "Europe/Amsterdam", "--ago", "1", "--json",
        )  # fmt: skip
        assert older.returncode == 0, older.stderr
        assert json.loads(older.stdout)["score"] == 5.0
        assert older.stderr == ""
    page = cli(redis_server, board_key, "page", "1", "--period", "week", "--tz", "Europe/Amsterdam")
    assert page.stdout.startswith("page 1 of 1 (1 entries)")
    plain = cli(redis_server, board_key, "top")
    assert plain.stdout == "(no entries)\n"  # no board at the key itself
    refused = cli(redis_server, board_key, "top", "--period", "day", "--tz", "Mars/Base")
    assert refused.returncode == 2
    assert "unknown time zone 'Mars/Base'" in refused.stderr
