"""The sync classes: each is its board's algorithms (``redis_leaderboard.boards``) run by the
sync driver (``redis_leaderboard._drive``) on the sync clients. No method is written here."""

from __future__ import annotations

from ._core import ClusterClient as CoreClusterClient
from ._drive import SyncDriven
from ._types import Event, LeagueEvent
from .boards.events import EventStream
from .boards.league import LeagueBase
from .boards.plain import LeaderboardBase
from .boards.seasons import GroupBase, PeriodicBase, PeriodState, RollingState
from .boards.sharded import ShardedBase
from .boards.team import TeamBase
from .boards.tournament import TournamentBase
from .client import Client

__all__ = [
    "EventStream",
    "LeaderboardGroup",
    "League",
    "PeriodBoard",
    "PeriodicLeaderboard",
    "RedisLeaderboard",
    "RollingLeaderboard",
    "ShardedLeaderboard",
    "TeamLeaderboard",
    "Tournament",
]


class RedisLeaderboard(LeaderboardBase[EventStream[Event]], SyncDriven):
    """A leaderboard in a Redis sorted set, with per-user metadata hashes.

    The guide's class, method for method: scores live in the sorted set ``key``, metadata in the
    hash ``f"{key}:user:{user_id}"``. Every method is one round trip; writes, their trimming and
    the read-back of the entry run atomically in one server-side script.

    ``redis_client`` may be a [`Client`][redis_leaderboard.Client], a redis-py ``redis.Redis`` (its
    host, port, db,
    credentials and timeouts are reused) or None: then ``url``, else ``$REDIS_URL``, else
    ``redis://localhost:6379/0``.

    Ranking rules (keyword-only): ``order="desc"`` (higher is better, the guide) or ``"asc"``
    (lower is better); ``ties`` decides how equal scores rank: ``"lexicographic"`` (Redis's
    member order, the guide), ``"first"`` (whoever reached the score first), ``"competition"``
    (shared rank, then a gap: 1, 1, 3) or ``"dense"`` (shared rank, no gap: 1, 1, 2). A board
    with other options records them in Redis (``f"{key}:options"``), and a client opening it
    with different ones gets ``ValueError`` naming both.

    Guards (keyword-only): ``submission_ttl`` (seconds, default 24 h) keeps the
    result of a write made with a ``submission_id``; ``rate_limit=(max_writes, per_seconds)``
    refuses a user's writes beyond that many in any sliding window of that length
    ([`RateLimited`][redis_leaderboard.RateLimited]); ``events=True`` appends a change event to the
    stream
    ``f"{key}:events"`` (capped at about ``events_maxlen``) on every change of the board
    (writes, deletions, trims, clears), read with
    [`events`][redis_leaderboard.RedisLeaderboard.events]. ``rate_limit`` and ``events``
    are recorded in ``f"{key}:options"`` by the first write carrying them; a client writing
    with others gets ``ValueError``, and so does one without ``events`` deleting, trimming or
    clearing a board that records them.

    Fair play (keyword-only): ``score_range=(min, max)`` (either None: no bound) refuses a
    write leaving a score outside it, ``max_increment`` one improving a score (in the board's
    order) by more than that ([`ScoreRejected`][redis_leaderboard.ScoreRejected], nothing
    changed); recorded with the board as ``rate_limit`` is. See the Fair play guide.
    """

    _client_class = Client
    _cluster_client_class = CoreClusterClient
    _display_name = "RedisLeaderboard"
    _event_stream_class: type[EventStream[Event]] = EventStream


class PeriodBoard(PeriodState, RedisLeaderboard):
    """One period of a [`PeriodicLeaderboard`][redis_leaderboard.PeriodicLeaderboard]: a plain
    [`RedisLeaderboard`][redis_leaderboard.RedisLeaderboard] at
    ``f"{key}:{period}"`` whose writes set every key's deadline (``expires``) and are refused
    (``ValueError``) once the period ended more than ``grace`` ago."""


class PeriodicLeaderboard(PeriodicBase[PeriodBoard], SyncDriven):
    """A board per period (hour, day, ISO week, month, or a timedelta from ``anchor``) in the
    time zone ``tz``, each the guide's layout at ``f"{key}:{period_id}"``
    (``lb:weekly:2026-W48``, ``lb:daily:2026-11-23``).

    Writes, the guide's reads, every query of
    [`RedisLeaderboard`][redis_leaderboard.RedisLeaderboard] and
    [`events`][redis_leaderboard.PeriodicLeaderboard.events]
    go to the current period ([`current`][redis_leaderboard.PeriodicLeaderboard.current]);
    [`at`][redis_leaderboard.PeriodicLeaderboard.at],
    [`previous`][redis_leaderboard.PeriodicLeaderboard.previous] and
    [`periods`][redis_leaderboard.PeriodicLeaderboard.periods] reach older ones.
    ``max_entries=None``: every period's board is unlimited.
    The newest ``keep`` periods (the current one included) are kept; an older one expires by
    itself: every write sets the deadline of every key it writes (sorted set, option keys, the
    user's metadata hash), so all keys of a period expire together, when the ``keep``-th
    period after it begins (and never before its end plus ``grace``).

    ``clock`` (a callable returning an aware datetime; default the system clock) decides which
    period a write lands in: inject it for tests or to replay events with their own
    timestamps. ``grace``: a write whose clock time is within ``grace`` after a boundary may
    still go to the period that just ended, explicitly (``board.at(stamp).submit(...)``); a
    write to a period that ended longer ago raises ``ValueError`` before anything is sent.
    """

    _board_class = PeriodBoard
    _client_class = Client


class RollingLeaderboard(RollingState, RedisLeaderboard):
    """A board of the last ``window`` (a ``timedelta``), sliding by ``bucket``.

    Writes land in the bucket the clock is in ("<key>:bucket:<i>", i = unix ms // bucket; each
    expires ``window + bucket`` after it begins). The board of the window (``key`` itself, the
    guide's layout: metadata at ``f"{key}:user:{user_id}"``, expiring with the user's newest
    bucket) holds each user's ``aggregate`` (``"sum"``, ``"max"`` or ``"min"``) of the scores in
    the window's buckets, at most ``max_entries`` of them (the worst beyond it leave the board,
    not their buckets: they come back if they climb). A score leaves the window exactly when
    its bucket does.

    Every read of [`RedisLeaderboard`][redis_leaderboard.RedisLeaderboard] (the guide's and the
    queries) works, in one round
    trip: it first brings the window's board to the current bucket (kept up to date by writes;
    when the bucket changes, the buckets that leave are subtracted in steps of bounded size,
    a round trip each, which the first read or write of the bucket drives), so reads are
    exact, not stale.
    ``set_max_entries`` and ``upsert_many`` raise ``TypeError``. ``submission_ttl``: seconds
    the result of a write with a ``submission_id`` is kept (as
    [`RedisLeaderboard`][redis_leaderboard.RedisLeaderboard]). Guards as ``RedisLeaderboard``'s:
    ``rate_limit`` (per user, on the server's clock, whatever the bucket), ``score_range`` and
    ``max_increment`` (on the user's bucket score: see
    [`submit`][redis_leaderboard.RollingLeaderboard.submit]), ``events``/``events_maxlen``
    (events about the window's board: see
    [`events`][redis_leaderboard.RollingLeaderboard.events]).
    """


class LeaderboardGroup(GroupBase, SyncDriven):
    """Several boards fed by one write: ``group.submit(user_id, score, metadata, mode=...)``
    writes to every board in one round trip, atomically (one script: every board's write is
    checked before any is applied, so a refused one writes nothing anywhere).

    ``boards``: [`RedisLeaderboard`][redis_leaderboard.RedisLeaderboard] (each with its own
    ``order``, ``ties``,
    ``max_entries``), [`PeriodicLeaderboard`][redis_leaderboard.PeriodicLeaderboard] (its current
    period, by its clock; or a
    period's board from ``at()``, within its grace) and
    [`RollingLeaderboard`][redis_leaderboard.RollingLeaderboard] (the bucket
    of its clock) objects. ``mode``: one for every board, or a mapping of board keys to modes.
    """

    _client_class = Client


class ShardedLeaderboard(ShardedBase, SyncDriven):
    """A leaderboard spread over ``shards`` shard boards ``{key:0}`` ... on a
    [`ClusterClient`][redis_leaderboard.ClusterClient], for boards bigger than one node.

    ``max_entries`` is per shard (a shard trims its own lowest; None: no limit). Guards:
    ``submission_ttl``, ``rate_limit``, ``score_range`` and ``max_increment`` as
    [`RedisLeaderboard`][redis_leaderboard.RedisLeaderboard]'s, kept by each shard board (a
    user's writes all go to its shard); ``events`` are refused (``NotImplementedError``: the
    shards' streams are in different slots). ``tiebreak`` columns as a plain board's: every
    shard has them, and the merged reads order equal scores across shards by them.

    Round trips and server work per call (``S`` shards, ``k`` entries asked, ``N`` entries on
    a shard):

    - ``upsert_user``/``increment_score``/``submit``/``delete_user``/``get_user_metadata``: 1,
      on the user's shard (atomic there). Writes return the shard's result with
      ``"shard"`` and ``"shard_rank"`` instead of ``"rank"`` (a global rank needs every
      shard: [`get_rank`][redis_leaderboard.ShardedLeaderboard.get_rank]).
    - ``get_size``: 1 (S ZCARDs). ``get_top(k)``: 1 (S x top k, merged): O(S k log N).
    - ``get_rank``/``get_user_entry``: 2 (the user's entry, then one ZCOUNT pair per shard);
      ``lexicographic`` with tied scores: 3 (the tied entries are read); ``dense``: plus the
      distinct better scores, every better entry read (O(rank)).
    - ``get_around_rank``/``get_around_user``/``get_page``: a window ending within the top
      1,000: 2-3 (every shard's top, merged); deeper: about 64 round trips of S ZCOUNTs
      (bisection on the score) and one read of at most ``count`` entries per shard; ``dense``
      deep windows also read every better entry.
    """

    _cluster_client_class = CoreClusterClient
    _display_name = "ShardedLeaderboard"
    _board_class = RedisLeaderboard


class League(LeagueBase[EventStream[LeagueEvent]], SyncDriven):
    """A league: players compete in cohorts of ``cohort_size`` within ``tiers``.

    ``tiers`` are names, lowest first. Each period (``period``, ``tz``, as
    [`PeriodicLeaderboard`][redis_leaderboard.PeriodicLeaderboard]'s) ends with a settlement that
    moves the top ``promote`` of every cohort up a tier and the bottom ``demote`` down (counts,
    or fractions of the cohort), exactly once. A player's first write of a period places them,
    atomically with the score. The Leagues guide states every rule (ties at cutoffs, idle
    players, brackets, partitions).
    """

    _client_class = Client
    _cluster_client_class = CoreClusterClient
    _display_name = "League"
    _event_stream_class: type[EventStream[LeagueEvent]] = EventStream


class Tournament(TournamentBase[EventStream[Event]], SyncDriven):
    """A tournament: a board per period of ``schedule`` (``"hour"``, ``"day"``, ``"week"``,
    ``"month"``, a timedelta from ``anchor``, or a cron expression, in ``tz``).

    Each period is active for
    ``duration`` from each start; ``max_size`` players (first come, first served),
    ``join_required``, ``max_attempts`` submissions per player and period (more with
    ``add_attempts``), every check and the write in one atomic script. Every query of
    ``RedisLeaderboard`` reads the current period's board; ``at`` and
    ``standings`` the kept past ones. The Tournaments guide states every rule.
    """

    _client_class = Client
    _cluster_client_class = CoreClusterClient
    _board_class = RedisLeaderboard
    _event_stream_class: type[EventStream[Event]] = EventStream
    _display_name = "Tournament"


class TeamLeaderboard(TeamBase[EventStream[Event]], SyncDriven):
    """A team board: members' scores on ``members``, their teams (clans, guilds) ranked by the
    members' contributions (``aggregate="sum"`` or ``"best"``) on ``teams``, both written by
    one atomic script per call (``submit``, ``move``, ``remove``). Read either board with every
    query of ``RedisLeaderboard``. The Team boards guide states every rule.
    """

    _client_class = Client
    _cluster_client_class = CoreClusterClient
    _board_class = RedisLeaderboard
    _display_name = "TeamLeaderboard"
    _event_stream_class: type[EventStream[Event]] = EventStream
