"""Leagues: players compete in small cohorts within tiers; at the end of each period the top of
every cohort moves up a tier and the bottom down, exactly once. Written once for both APIs.

Design
------
Tiers and periods. A league has ``tiers`` (names, lowest first) and periods (``Periods`` of the
seasons: ``"week"`` by default, in ``tz``; the clock is the client's, injectable). A player
unknown to the league starts in the lowest tier; their tier persists across periods.

Placement. A player's first write of a period (``submit``; or ``join``, a placement without a
score) places them in the open cohort of their tier and ``bracket`` (e.g. a region: cohorts never
mix brackets); a cohort fills to ``cohort_size`` placed players, then the next one opens (first
come, first served). Placement and the score are one script (``league.lua``), so a player is in
exactly one cohort per period. A late joiner simply lands in the open cohort of the moment; a
player who does not play in a period is in no cohort and keeps their tier.

A cohort is a board. Cohort ``n`` of period ``P`` is the guide's layout at
``f"{base}:{P}:c:{n}"`` (metadata at ``...:user:<id>``) with the league's ``order``, ``ties``
and ``tiebreak`` columns: the league's write is the plain board's write
(``plan_write``/``apply_write`` of ``lib/board_write.lua``), so a cohort's ranks are exactly a
board's. The league's other keys are
``{base}:options`` (its recorded options: two clients cannot disagree silently, as boards),
``:tier`` (user -> tier), ``:tiers`` (tier -> players), ``:open`` (the newest period with
players), ``:events`` (a stream: one ``"settled"`` event per cohort) and, per period,
``:{P}:state`` (cohorts, their tier and bracket, settled flags), ``:{P}:where`` (user ->
cohort), ``:{P}:result`` (user -> the settlement's outcome). A period's keys expire together
once ``keep`` newer periods have begun; the tiers stay.

Rate limits. ``rate_limit=(n, seconds)`` is a plain board's (the ``rate`` guard word of
``lib/guards.lua``, checked by the cohort board's write): a player's writes beyond ``n`` in any
``seconds`` of the server's clock raise ``RateLimited`` and change nothing (no placement, no
score); the window ``{base}:rate:<user_id>`` is the partition's, across periods; a resend of an
applied id is answered before it is looked at. It is part of the write rule, so of the recorded
options: a client with another limit, or none, is refused (``OptionsMismatch``).

Zones. In a cohort of ``size`` placed players, ``m`` of whom scored, ``promote`` and ``demote``
are counts, or fractions of ``size`` (rounded down). A player whose cutoff rank is at most
``promote`` is in the ``"promote"`` zone, one whose cutoff rank is above ``m - demote`` in the
``"demote"`` zone, else ``"stay"``; promotion wins an overlap, and nobody leaves the ends (no
promote zone in the top tier, no demote zone in the lowest). The cutoff rank is the position
under ``ties="lexicographic"`` or ``"first"``, or with ``tiebreak`` columns (the cohort's rank
order: score, then the columns, then the user id; exactly ``promote`` players move) and
``1 + the players strictly ahead`` under ``"competition"`` or ``"dense"``: a tie at a cutoff
moves everyone tied up (promotion) or keeps everyone tied (demotion). Placed players who never
scored rank after everyone, without a rank; with ``demote_idle`` they are in the demote zone
(except in the lowest tier), else they stay. Every submit result and standings entry carries
the zone it would have if the period ended now.

Settlement, exactly once. ``settle(period)`` first closes the period (``close``: no placement
and no write into it after that, ``PeriodClosed``), then settles each cohort with one script
(``settle``): it reads the cohort, moves its players' tiers from the cohort's tier (never from
their current one), records each player's outcome and a ``"settled"`` event, and marks the
cohort settled, keeping its answer and the call token of the call that settled it; a settled
cohort writes nothing and answers ``already`` to another call, and to the same call's own resend
(after a lost reply) the answer it stored. So two processes
settling at once, or a settle run again after a crash part-way, promote nobody twice and miss
nobody; a cohort whose script fails (a key of another type) changes nothing and stays to
settle, while the others settle (the first error is raised at the end). The last cohort marks
the period done. A cohort's script reads at most ``cohort_size`` (<= 1,000) players, so no
script blocks Redis for long, whatever the league's size.

Resends. A submit with a ``submission_id`` stores its whole answer (the cohort board's result,
the period, tier, cohort, bracket, zone and size) with the id's record, and the call token of
the call that applied it; a later submit with the id answers that record before anything about
the period is judged, so a resend gets the first answer whatever the clock says, ``duplicate``
False only for the same call's own resend.

Lazy settlement. Nobody is placed in a period while an earlier period with players is not
settled: the placement's script answers ``UNSETTLED <period>``, and the plan settles that
period, then places the player. Reads of the current period (``standings``, ``tier_of``,
``tiers``) do the same. So a league works without a scheduler; a large one should still run
``settle()`` from a job right after each boundary, so that no player's write waits for it.

Partitions. On a cluster a league is ``partitions`` whole leagues, each under its own hash tag
``{<key>:<i>}`` (a player belongs to partition ``crc32(user_id) % partitions``), so every script
touches one slot; with one partition the key is the base (a cluster needs a hash tag in it).
"""

from __future__ import annotations

import zlib
from datetime import datetime, timedelta, tzinfo
from typing import Any, Generic, Iterator, Mapping, Optional, Sequence, TypeVar, Union, cast

from .._core import Board as CoreBoard
from .._core import (
    ClockSkewError,
    Guards,
    Operation,
    ResponseError,
    Scripts,
    call_token,
    read_events,
)
from .._drive import Pipelined, Plan, plan
from .._types import (
    Layout,
    LeagueEntry,
    LeagueEvent,
    LeagueResult,
    LeagueSettlement,
    LeagueStandings,
    LeagueSubmitResult,
    Order,
    TierCount,
    Ties,
    WriteMode,
)
from ..options import board_client
from .events import EVENTS_BATCH, StreamState
from .plain import WRITE_MODES, count_arg, one_of, player_text, user_id_text
from .seasons import Clock, Period, PeriodClock, Periods, _millis

__all__ = ["LeagueBase"]

# Cohort settlements in flight on one connection while a period is settled.
SETTLE_IN_FLIGHT = 64
# How many times a write or read settles an earlier period and tries again before giving up.
MAX_SETTLE_ROUNDS = 8

PeriodArg = Union[None, str, datetime]


def _check_tiers(tiers: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tiers, str) or not isinstance(tiers, Sequence):
        raise TypeError("tiers must be a sequence of tier names, lowest first")
    names = tuple(tiers)
    if not names:
        raise ValueError("a league needs at least one tier")
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tier name must be a non-empty str, not {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"tier names must differ: {list(names)}")
    return names


def _check_int(value: Any, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{what} must be at least {low}")
    return value


def _bracket(bracket: Optional[str]) -> str:
    if bracket is None:
        return ""
    if not isinstance(bracket, str):
        raise TypeError(f"bracket must be a str or None, not {type(bracket).__name__}")
    if not bracket:
        raise ValueError("bracket must not be empty (None: no bracket)")
    return bracket


def _league_entry(entry: Mapping[str, Any]) -> LeagueEntry:
    """A standings entry from the core's record (``"tiebreak"`` on a league with columns)."""
    out: LeagueEntry = {
        "rank": entry["rank"],
        "user_id": entry["user_id"],
        "score": entry["score"],
        "zone": entry["zone"],
        "metadata": entry["metadata"],
    }
    if "tiebreak" in entry:
        out["tiebreak"] = entry["tiebreak"]
    return out


# A league's bounds (the scripts' tables are sized by them).
MAX_TIERS = 100
MAX_COHORT_SIZE = 1000

# A period as the scripts take it: (id, start, deadline, end), unix ms (see LeagueBase._period).
LeaguePeriod = tuple[str, int, int, int]


def _cutoff_word(value: Any, what: str, cohort_size: int) -> str:
    """A promotion or demotion cutoff as the scripts read it: an int, a count of the cohort's
    placed players (0 to ``cohort_size``), ``"<count>"``; a float, a fraction of them (0.0 to
    1.0, rounded down), ``"f<fraction>"`` (17 significant digits, as C++ sends a score)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{what} must be an int (a count) or a float (a fraction), not {type(value).__name__}"
        )
    if isinstance(value, float):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{what} as a fraction must be from 0.0 to 1.0")
        return f"f{value:.17g}"
    if not 0 <= value <= cohort_size:
        raise ValueError(f"{what} as a count must be from 0 to cohort_size ({cohort_size})")
    return str(value)


class _Partition:
    """One partition of a league: every key under ``base`` (one hash tag on a cluster), and
    its calls of league.lua and league_read.lua (see their declarations), each prepared once
    with what every call sends (the league's keys and options). A reply is the script's, read
    as declared; ``None`` (the player has no cohort, no result) or ``{"unsettled",
    "unsettled_start"}`` (an earlier period must be settled first) for any call."""

    def __init__(
        self,
        base: str,
        *,
        tiers: int,
        cohort_size: int,
        promote: Any,
        demote: Any,
        demote_idle: bool,
        mode: str,
        order: Order,
        ties: Ties,
        events_maxlen: int,
        guards: Guards,
        tiebreak: Optional[Sequence[tuple[str, str]]],
        layout: Layout,
    ) -> None:
        self.base = base
        self._period_cache: Optional[tuple[LeaguePeriod, dict[str, str], dict[str, str]]] = None
        # The cohorts' boards have this shape (tie-break columns validated as a board's):
        # their tie rule, and a write's tie-break word.
        self._shape = CoreBoard(
            base, None, order=order, ties=ties, tiebreak=tiebreak, layout=layout
        )
        self._guards = guards
        self._columns = self._shape.tiebreak is not None
        self._rate_keyed = guards.rate_limit is not None  # its word names the player's window
        rule = mode + guards.rule_words()
        options = {
            "tier_count": str(tiers),
            "cohort_size": str(cohort_size),
            "promote": _cutoff_word(promote, "promote", cohort_size),
            "demote": _cutoff_word(demote, "demote", cohort_size),
            "demote_idle": "1" if demote_idle else "0",
            "order": order,
            "ties": self._shape.ties_word,
            "write_rule": rule,
        }
        scripts = Scripts(
            "league",
            base,
            f"tiers={tiers} size={cohort_size} promote={options['promote']} "
            f"demote={options['demote']} idle={options['demote_idle']} order={order} "
            f"ties={options['ties']} mode={rule}",
            tiebreak=tiebreak,
            order=order,
            unsettled=True,
        )
        read = {
            **options,
            "league_options": f"{base}:options",
            "league_tier": f"{base}:tier",
            "league_tiers": f"{base}:tiers",
            "league_open": f"{base}:open",
        }
        write = {**read, "league_events": f"{base}:events", "events_maxlen": str(events_maxlen)}
        # Joining is never resent (it may place the player a second time after a settlement);
        # a submission only with a submission id (it cannot apply twice); closing, settling (a
        # resend answers this call's settlement: its call token), hiding and showing twice
        # change nothing more, reads nothing: each may be resent.
        self._calls = {
            "submit": scripts.prepare("league.submit", "League.submit", write),
            "join": scripts.prepare("league.join", "League.join", write),
            "close": scripts.prepare("league.close", "close", write, resends=2),
            "settle": scripts.prepare("league.settle", "League.settle", write, resends=2),
            "hide": scripts.prepare("league.hide", "League.hide", write, resends=2),
            "unhide": scripts.prepare("league.unhide", "League.unhide", write, resends=2),
            **{
                call: scripts.prepare(f"league_read.{call}", what, read, resends=resends)
                for call, what, resends in (
                    ("standings", "League.standings", 1),
                    ("tier_of", "League.tier_of", 1),
                    ("tiers", "tiers", 1),
                    ("results", "League.results", 1),
                    ("hidden", "League.hidden", 2),
                    ("is_hidden", "League.is_hidden", 2),
                )
            },
        }

    def _period_values(self, period: LeaguePeriod) -> tuple[dict[str, str], dict[str, str]]:
        """What a read and a write of ``period`` send (its keys, id and times), made once per
        period: most calls are of the current one."""
        if self._period_cache is None or self._period_cache[0] != period:
            prefix = f"{self.base}:{period[0]}"
            read = {
                "period_state": f"{prefix}:state",
                "period_where": f"{prefix}:where",
                "period_result": f"{prefix}:result",
                "period": period[0],
                "period_start": str(period[1]),
            }
            write = {**read, "period_times": f"{period[2]} {period[3]}"}
            self._period_cache = (period, read, write)
        return self._period_cache[1], self._period_cache[2]

    def _read(self, period: LeaguePeriod, check: bool) -> dict[str, Any]:
        return {**self._period_values(period)[0], "read_check": "check" if check else ""}

    def _write(self, period: LeaguePeriod) -> dict[str, Any]:
        return self._period_values(period)[1]

    def cohort_key(self, period: str, cohort: int) -> str:
        """The board of cohort ``cohort`` in ``period``."""
        return f"{self.base}:{period}:c:{cohort}"

    def submit(
        self,
        period: LeaguePeriod,
        user_id: str,
        score: Any,
        metadata: Any,
        bracket: str,
        submission_id: Optional[str],
        retries: int,
        tiebreak: Optional[Mapping[str, float]],
    ) -> Operation[Any]:
        """The player's write: placed in a cohort on their first of the period (in
        ``bracket``), then the score with the league's mode; with a submission id, a resend
        answers the first record whatever the period now. The guards as a board's: the
        submission id's word with this call's token, a rate limit's with the player's window,
        the league's whatever the period (the rule carries the limit too, keyless); no events
        word (a league's events are its settlements); then the tie-break columns' word."""
        user = player_text(user_id)
        if tiebreak is not None and not self._columns:
            raise ValueError("tiebreak values for a league without tie-break columns")
        if count_arg(retries, "retries") < 0:
            raise ValueError("retries must be at least 0")
        words, keys = "", cast(list[str], [])
        if submission_id is not None or self._rate_keyed:
            words, keys = self._guards.write_words(self.base, "", user, submission_id)
        if tiebreak is not None:
            words = " ".join(filter(None, (words, self._shape.tiebreak_word(tiebreak))))
        values = {
            **self._write(period),
            "submission_keys": keys,
            "user_id": user,
            "score": score,
            "bracket": bracket,
            "submission_words": words,
            "metadata": metadata,
        }
        return self._calls["submit"](values, retries if submission_id is not None else 0)

    def join(self, period: LeaguePeriod, user_id: str, bracket: str) -> Operation[Any]:
        """A placement without a score."""
        values = {**self._write(period), "user_id": player_text(user_id), "bracket": bracket}
        return self._calls["join"](values)

    def close(self, period: LeaguePeriod) -> Operation[Any]:
        """Closes the period to writes."""
        return self._calls["close"](self._write(period))

    def settle(self, period: LeaguePeriod, cohort: int) -> Operation[Any]:
        """Settles one cohort, once: another call's settlement answers "already", this
        call's own resend after a lost reply its settlement (its call token)."""
        if cohort < 1:
            raise ValueError("a cohort number is at least 1")
        values = {**self._write(period), "cohort": str(cohort), "call_token": call_token()}
        return self._calls["settle"](values)

    def hiding(
        self, op: str, period: LeaguePeriod, user_id: str = "", bracket: str = ""
    ) -> Operation[Any]:
        """``op``: "hide", "unhide" (a score kept while hidden places the player in
        ``bracket``), "hidden" (every hidden id) or "is_hidden"."""
        if op == "hidden":
            return self._calls["hidden"](self._read(period, False))
        user = player_text(user_id)
        if op == "is_hidden":
            return self._calls["is_hidden"]({**self._read(period, False), "user_id": user})
        values = {**self._write(period), "user_id": user}
        if op == "unhide":
            values["bracket"] = bracket
        return self._calls[op](values)

    def standings(self, period: LeaguePeriod, user_id: str, check: bool) -> Operation[Any]:
        """The standings of the player's cohort."""
        values = {**self._read(period, check), "user_id": player_text(user_id)}
        return self._calls["standings"](values)

    def tier_of(self, period: LeaguePeriod, user_id: str, check: bool) -> Operation[Any]:
        """The player's tier index (None: never placed)."""
        values = {**self._read(period, check), "user_id": player_text(user_id)}
        return self._calls["tier_of"](values)

    def tiers(self, period: LeaguePeriod, check: bool) -> Operation[Any]:
        """The players of each tier."""
        return self._calls["tiers"](self._read(period, check))

    def results(self, period: LeaguePeriod, user_id: str) -> Operation[Any]:
        """The player's settled result in ``period`` (None: none)."""
        values = {**self._read(period, False), "user_id": player_text(user_id)}
        return self._calls["results"](values)

    def read_events(
        self, last_id: str = "$", count: int = 100, block: Optional[float] = None
    ) -> Operation[Any]:
        """The settlements after ``last_id`` on this partition's stream."""
        return read_events(f"{self.base}:events", last_id, count, block)


def _unsettled(reply: Any) -> bool:
    """Whether a reply says an earlier period must be settled first."""
    return isinstance(reply, dict) and "unsettled_start" in reply


S = TypeVar("S", bound="StreamState[LeagueEvent]")


class LeagueBase(PeriodClock, Generic[S]):
    """A league (:class:`League`, sync or asyncio): its options, periods, partitions and
    methods, each written once (see the module for the design)."""

    _client_class: Any  # the public class's
    _event_stream_class: type[S]  # the public class's
    _cluster_client_class: Any
    _display_name: str = "League"
    redis: Any

    def __init__(
        self,
        redis_client: Any = None,
        key: str = "league:demo",
        *,
        tiers: Sequence[str] = ("bronze", "silver", "gold"),
        period: Period = "week",
        tz: Union[str, tzinfo] = "UTC",
        anchor: Optional[datetime] = None,
        cohort_size: int = 30,
        promote: Union[int, float] = 5,
        demote: Union[int, float] = 5,
        demote_idle: bool = True,
        mode: WriteMode = "incr",
        order: Order = "desc",
        ties: Ties = "lexicographic",
        keep: int = 4,
        partitions: int = 1,
        clock: Optional[Clock] = None,
        url: Optional[str] = None,
        submission_ttl: float = 86400,
        events_maxlen: int = 100000,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
        tiebreak: Optional[Sequence[tuple[str, Order]]] = None,
        rate_limit: Optional[tuple[int, float]] = None,
        layout: Layout = "guide",
    ) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty str")
        self.tier_names = _check_tiers(tiers)
        """The tier names, lowest first."""
        self.keep = _check_int(keep, "keep", 2)  # the previous period is settled in the next
        """Periods whose keys are kept (the current one included); at least 2."""
        self.partitions = _check_int(partitions, "partitions", 1)
        """Whole leagues the players are hashed to, each under its own hash tag."""
        if not isinstance(demote_idle, bool):
            raise TypeError(f"demote_idle must be a bool, not {type(demote_idle).__name__}")
        if partitions > 1:
            if "{" in key or "}" in key:
                raise ValueError(
                    "a league of several partitions puts each under its own hash tag "
                    f"{{<key>:<i>}}: its key must have no braces, not {key!r}"
                )
            bases = [f"{{{key}:{i}}}" for i in range(partitions)]
        else:
            bases = [key]
        cohort_size = _check_int(cohort_size, "cohort_size", 0)
        if not 2 <= cohort_size <= MAX_COHORT_SIZE:
            raise ValueError(f"cohort_size must be from 2 to {MAX_COHORT_SIZE}, not {cohort_size}")
        if len(self.tier_names) > MAX_TIERS:
            raise ValueError(f"a league has 1 to {MAX_TIERS} tiers, not {len(self.tier_names)}")
        _check_int(events_maxlen, "events_maxlen", 1)
        one_of(mode, "mode", WRITE_MODES)
        guards = Guards(
            submission_ttl=submission_ttl,
            rate_limit=rate_limit,
            score_range=score_range,
            max_increment=max_increment,
        )
        self._leagues = [
            _Partition(
                base,
                tiers=len(self.tier_names),
                cohort_size=cohort_size,
                promote=promote,
                demote=demote,
                demote_idle=demote_idle,
                mode=mode,
                order=order,
                ties=ties,
                events_maxlen=events_maxlen,
                guards=guards,
                tiebreak=tiebreak,
                layout=layout,
            )
            for base in bases
        ]
        self.layout: Layout = layout
        """Where a cohort's metadata lives: a hash per player (``"guide"``) or one hash for the
        cohort's board, ``f"{base}:{P}:c:{n}:meta"`` (``"compact"``: the board guide's "The
        compact layout")."""
        self.rate_limit: Optional[tuple[int, float]] = (
            None if rate_limit is None else (int(rate_limit[0]), float(rate_limit[1]))
        )
        """``(max_writes, per_seconds)``: the submissions a player may make in any
        ``per_seconds`` of the server's clock, across periods (``RateLimited`` beyond), or
        None."""
        self.tiebreak: Optional[tuple[tuple[str, str], ...]] = (
            tuple((name, direction) for name, direction in tiebreak) if tiebreak else None
        )
        """The tie-break columns of every cohort's board, ``(name, "desc" | "asc")`` each
        (see [`submit`][redis_leaderboard.League.submit]), or None."""
        self.score_range = score_range
        """``(min, max)`` a write may leave a score within (fair play), or None."""
        self.max_increment = max_increment
        """The most one write may improve a player's score by (fair play), or None."""
        self._made: dict[datetime, LeaguePeriod] = {}
        self._start_clock(Periods(period, tz, anchor), clock)
        self.redis = board_client(
            self._display_name,
            redis_client,
            url,
            key,
            self._client_class,
            self._cluster_client_class,
            needs_hash_tag=partitions == 1,  # each partition has its own
        )
        self.key = key
        """The league's key (its keys start with it, or with ``{key:i}`` per partition)."""
        self.cohort_size = cohort_size
        """Placed players a cohort holds before the next one opens."""
        self.promote = promote
        """How many of each cohort move up at a settlement: a count, or a fraction of the cohort."""
        self.demote = demote
        """How many of each cohort move down: a count, or a fraction of the cohort."""
        self.demote_idle = demote_idle
        """Whether placed players who never scored are demoted."""
        self.mode: WriteMode = mode
        """How ``submit`` writes a score: ``"incr"``, ``"best"`` or ``"set"``."""
        self.order: Order = order
        """``"desc"`` (higher is better) or ``"asc"``."""
        self.ties: Ties = ties
        """How equal scores rank in a cohort (as a board's ``ties``)."""

    # -- periods -------------------------------------------------------------------------

    def next_settlement(self) -> datetime:
        """When the current period ends (and may be settled): an aware datetime in ``tz``."""
        return self._next_start()

    def _period(self, start: datetime) -> tuple[str, int, int, int]:
        """(id, start ms, deadline ms, end ms) of the period starting at ``start``: its keys
        expire when the ``keep``-th period after it begins; it ends when the next begins (on the
        server's clock: the script checks its writes and its close against it)."""
        made = self._made.get(start)
        if made is not None:  # a period's times are worked out once
            return made
        end = self.periods_of.next_start(start)
        deadline = end
        for _ in range(self.keep - 1):
            deadline = self.periods_of.next_start(deadline)
        made = (self.periods_of.period_id(start), _millis(start), _millis(deadline), _millis(end))
        if len(self._made) > 2 * self.keep + 8:
            self._made.clear()
        self._made[start] = made
        return made

    def _start_of(self, period: PeriodArg) -> datetime:
        """The start of the period ``period`` names: None (the current one), an aware datetime
        in it, or its id among the kept periods (``ValueError`` otherwise)."""
        current = self.periods_of.start_of(self.now())
        if period is None:
            return current
        if isinstance(period, datetime):
            return self.periods_of.start_of(period)
        if not isinstance(period, str):
            raise TypeError(f"period must be a period id, a datetime or None, not {period!r}")
        start = current
        for _ in range(self.keep + 1):
            if self.periods_of.period_id(start) == period:
                return start
            start = self.periods_of.previous_start(start)
        raise ValueError(
            f"period {period!r} is not one of the league's kept periods ({self.keep}, the "
            f"current one {self.periods_of.period_id(current)!r} included)"
        )

    def _start_at_ms(self, start_ms: int) -> datetime:
        from .seasons import _EPOCH

        return self.periods_of.start_of(_EPOCH + timedelta(milliseconds=start_ms))

    def _partition(self, user_id: str) -> _Partition:
        if self.partitions == 1:
            return self._leagues[0]
        return self._leagues[zlib.crc32(user_id.encode("utf-8")) % self.partitions]

    def _tier_name(self, index: int) -> str:
        return self.tier_names[min(max(index, 0), len(self.tier_names) - 1)]

    # -- settlement ----------------------------------------------------------------------

    def _settle_partition(
        self, league: _Partition, start: datetime, tally: dict[str, Any]
    ) -> Plan[bool]:
        """Closes one partition's period, then settles each of its cohorts (one script each,
        pipelined); a cohort whose script fails is noted in ``tally`` and the others go on.
        Returns False, having done nothing, if the period has not ended on the server's clock
        (the league then follows the server's clock)."""
        period = self._period(start)
        try:
            closed = yield league.close(period)
        except ClockSkewError as error:  # not ended there: nothing was closed
            self._follow_server(error)
            return False
        cohorts = closed["cohorts"] if closed else 0
        tally["cohorts"] += cohorts
        first = 1
        while first <= cohorts:
            replies = 0

            def operations(begin: int = first) -> Iterator[Operation[Any]]:
                for cohort in range(begin, cohorts + 1):
                    yield league.settle(period, cohort)

            def on_reply(record: Any) -> None:
                nonlocal replies
                replies += 1
                if record["already"]:
                    tally["already_settled"] += 1
                else:
                    tally["settled"] += 1
                    tally["promoted"] += len(record["promoted"])
                    tally["demoted"] += len(record["demoted"])

            try:
                yield Pipelined(operations(), on_reply, SETTLE_IN_FLIGHT)
                break
            except ResponseError as error:  # that cohort's script refused: it changed nothing
                tally["errors"].append((period[0], first + replies, error))
                first += replies + 1
        return True

    def _settle_pending(self, league: _Partition, reply: Any, tally: dict[str, Any]) -> Plan[None]:
        start = self._start_at_ms(reply["unsettled_start"])
        tally["periods"].append(reply["unsettled"])
        yield from self._settle_partition(league, start, tally)
        self._raise_errors(tally)

    @staticmethod
    def _new_tally() -> dict[str, Any]:
        return {
            "periods": [],
            "cohorts": 0,
            "settled": 0,
            "already_settled": 0,
            "promoted": 0,
            "demoted": 0,
            "errors": [],
        }

    @staticmethod
    def _raise_errors(tally: dict[str, Any]) -> None:
        errors = tally["errors"]
        if not errors:
            return
        period, cohort, error = errors[0]
        if hasattr(error, "add_note"):
            error.add_note(
                f"settling period {period}: cohort {cohort} failed and changed nothing; "
                f"{len(errors)} cohort(s) failed in all, the others were settled; settle() "
                "again settles what is left"
            )
        raise error

    @plan
    def settle(self, period: PeriodArg = None) -> Plan[LeagueSettlement]:
        """Settle a finished period: in every cohort the promote zone moves up one tier, the
        demote zone down one (see the module), exactly once per cohort, whoever else settles
        at the same time and however often it is run. ``period``: a period id or a datetime
        in it (it must have ended: ``ValueError`` otherwise); None: every period that ended
        and is not settled yet. Returns ``{"periods", "cohorts", "settled" (cohorts settled by
        this call, a cohort it sent again after a lost reply included), "already_settled" (by
        another call), "promoted", "demoted"}``. A cohort whose script fails
        changes nothing and stays to settle; the others are settled, then its error is raised
        (with a note saying how many failed).

        Redis cost:
            One round trip to close each partition's period, then one script per cohort
            (pipelined, 64 in flight), each reading at most ``cohort_size`` players:
            O(cohort_size log cohort_size) per cohort.
        """
        tally = self._new_tally()
        if period is None:
            for league in self._leagues:
                for _ in range(MAX_SETTLE_ROUNDS):
                    reply = yield league.tiers(self._period(self._start_of(None)), True)
                    if not _unsettled(reply):
                        break
                    start = self._start_at_ms(reply["unsettled_start"])
                    if not (yield from self._settle_partition(league, start, tally)):
                        continue  # it has not ended on the server's clock: asked again
                    tally["periods"].append(reply["unsettled"])
                    if tally["errors"]:
                        break
        else:
            start = self._start_of(period)
            if start >= self.periods_of.start_of(self.now()):
                raise ValueError(
                    f"period {self.periods_of.period_id(start)} of league {self.key!r} has not "
                    f"ended: it ends at {self.periods_of.next_start(start).isoformat()}"
                )
            tally["periods"].append(self.periods_of.period_id(start))
            for league in self._leagues:
                if not (yield from self._settle_partition(league, start, tally)):
                    raise ValueError(
                        f"period {self.periods_of.period_id(start)} of league {self.key!r} has "
                        f"not ended on the server's clock: it ends at "
                        f"{self.periods_of.next_start(start).isoformat()}"
                    )
        self._raise_errors(tally)
        result: LeagueSettlement = {
            "periods": sorted(set(tally["periods"])),
            "cohorts": tally["cohorts"],
            "settled": tally["settled"],
            "already_settled": tally["already_settled"],
            "promoted": tally["promoted"],
            "demoted": tally["demoted"],
        }
        return result

    # -- writes --------------------------------------------------------------------------

    @plan
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        bracket: Optional[str] = None,
        submission_id: Optional[str] = None,
        retries: int = 2,
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> Plan[LeagueSubmitResult]:
        """Write the player's score in the current period with the league's ``mode``
        (``"incr"``: add it; ``"best"``; ``"set"``) and merge ``metadata``, in one atomic script;
        the player's first write of the period places them in the open cohort of their tier and
        ``bracket``. Returns submit()'s result on the cohort's board (``"rank"`` is the rank in
        the cohort) plus ``"period"``, ``"tier"`` (its name), ``"cohort"``, ``"bracket"``,
        ``"zone"`` (``"promote"``, ``"stay"``, ``"demote"`` if the period ended now) and
        ``"size"`` (placed players in the cohort). ``submission_id``/``retries`` as
        [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit] (the id is the
        league partition's, whatever the period): an id applied before writes nothing and
        returns the first call's result field for field (its ``"period"``, ``"zone"``,
        ``"size"``... as they were then, whatever the clock says now), with ``"duplicate"``
        True if another call applied it and False if this call did (the library's own resend
        after a lost reply: each call sends a call token, stored with the id). Refused with
        ``PeriodClosed`` when the period is being settled, or a newer one has players (a
        client whose clock lags).

        ``tiebreak``: on a league with tie-break columns (``tiebreak=(("wins", "desc"),)``), a
        value for each (``{"wins": 4}``): equal scores in a cohort rank by them, in order, then
        by user id, exactly as on a plain board's
        [`submit`][redis_leaderboard.RedisLeaderboard.submit] (``mode="best"`` keeps the better
        (score, columns) tuple, never a mix; without it a write keeps the stored values, the
        worst of each for a new entry). The values are part of the submission's payload. The
        zones, and the settlement's cut, follow the same order: every player has a rank of
        their own, so exactly ``promote`` (``demote``) players move. A bad value (a column
        missing or unknown, not finite) raises ``ValueError`` before anything is sent.

        ``rate_limit``: a write beyond the limit raises ``RateLimited`` (``retry_after``:
        seconds until the server's clock frees a place) and changes nothing (no placement, no
        score); the player's window is the partition's (``{key}:rate:<user_id>``), across
        periods; a resend of an applied ``submission_id`` answers its first result, never
        limited.

        Redis cost:
            One round trip, one script: the placement (the first write of a period) and the
            plain board's write on the cohort (O(log cohort_size)); more only if an earlier
            period must be settled first (lazy settlement). With tie-break columns, the plain
            board's write with columns (its ranked set ``:tb`` and index ``:tb:keys``: one
            ZADD and one HSET more). With ``rate_limit``, the player's window: a ZCOUNT
            before, a ZREMRANGEBYSCORE, ZADD and PEXPIRE after (O(log W)).
        """
        league = self._partition(user_id_text(user_id))
        room = _bracket(bracket)
        for _ in range(MAX_SETTLE_ROUNDS):
            start = self._start_of(None)
            period = self._period(start)
            try:
                reply = yield league.submit(
                    period, user_id, score, metadata, room, submission_id, retries, tiebreak
                )
            except ClockSkewError as error:  # the server's clock is in another period
                self._follow_server(error)
                continue
            if _unsettled(reply):
                yield from self._settle_pending(league, reply, self._new_tally())
                continue
            # submit()'s result on the cohort (a dict from the core), with the league's keys.
            result = cast(
                LeagueSubmitResult,
                {
                    **reply["submit"],
                    "period": reply["period"],  # the first write's, for a resend
                    "tier": self._tier_name(reply["tier"]),
                    "cohort": reply["cohort"],
                    "bracket": reply["bracket"] or None,
                    "zone": reply["zone"],
                    "size": reply["size"],
                },
            )
            return result
        raise RuntimeError(f"league {self.key!r}: earlier periods kept needing settlement")

    @plan
    def join(self, user_id: str, *, bracket: Optional[str] = None) -> Plan[dict[str, Any]]:
        """Place the player in the current period without a score (as a first write would);
        nothing if already placed. Returns ``{"period", "tier", "cohort", "bracket", "size",
        "placed" (True if placed now)}``. A placed player who never scores is idle: see
        ``demote_idle``.

        Redis cost:
            One round trip, one script (as submit's placement), unless an earlier period must be
            settled first.
        """
        league = self._partition(user_id_text(user_id))
        room = _bracket(bracket)
        for _ in range(MAX_SETTLE_ROUNDS):
            period = self._period(self._start_of(None))
            try:
                reply = yield league.join(period, user_id, room)
            except ClockSkewError as error:  # the server's clock is in another period
                self._follow_server(error)
                continue
            if _unsettled(reply):
                yield from self._settle_pending(league, reply, self._new_tally())
                continue
            return {
                "period": period[0],
                "tier": self._tier_name(reply["tier"]),
                "cohort": reply["cohort"],
                "bracket": reply["bracket"] or None,
                "size": reply["size"],
                "placed": reply["placed"],
            }
        raise RuntimeError(f"league {self.key!r}: earlier periods kept needing settlement")

    # -- fair play: hidden players --------------------------------------------------------

    def _hiding(self, op: str, user_id: str, bracket: Optional[str] = None) -> Plan[bool]:
        league = self._partition(user_id_text(user_id))
        room = _bracket(bracket)
        for _ in range(MAX_SETTLE_ROUNDS):
            reply = yield league.hiding(op, self._period(self._start_of(None)), user_id, room)
            if _unsettled(reply):
                yield from self._settle_pending(league, reply, self._new_tally())
                continue
            return bool(reply)
        raise RuntimeError(f"league {self.key!r}: earlier periods kept needing settlement")

    @plan
    def hide(self, user_id: str) -> Plan[bool]:
        """Hide a player from the league: they leave their cohort in the current period (their
        score kept aside) and take no seat in any later one, so they are in no standings, no
        cohort's size and no settlement (their tier stays as it is). Their writes go on being
        judged (mode, score limits, submission ids) and kept aside: ``submit`` answers
        ``"cohort": 0`` and ``"rank"`` None. A period being settled keeps them where they
        are. Returns True if they were not hidden before.

        Redis cost:
            One round trip, one script: HSETs, and off their seat the cohort board's ZREM and
            SREM. O(log cohort_size).
        """
        return (yield from self._hiding("hide", user_id))

    @plan
    def unhide(self, user_id: str, *, bracket: Optional[str] = None) -> Plan[bool]:
        """Show a hidden player again: a score they wrote in the current period while hidden
        comes back as their write of it (seating them in the open cohort of their tier and
        ``bracket``, as a first write does); otherwise their next write seats them. Returns
        True if they were hidden.

        Redis cost:
            One round trip, one script (the placement and the cohort board's write). O(log
            cohort_size).
        """
        return (yield from self._hiding("unhide", user_id, bracket))

    @plan
    def hidden(self) -> Plan[list[str]]:
        """The hidden players, in byte order.

        Redis cost:
            One round trip per partition: a ``no-writes`` script, HKEYS. O(H).
        """
        period = self._period(self._start_of(None))
        ids: list[str] = []
        for league in self._leagues:
            reply = yield league.hiding("hidden", period)
            ids.extend(reply)
        return sorted(ids, key=lambda i: i.encode("utf-8", "surrogatepass"))

    @plan
    def is_hidden(self, user_id: str) -> Plan[bool]:
        """Whether a player is hidden (one of ``hidden()``).

        Redis cost:
            One round trip, to the player's partition: a ``no-writes`` script, HEXISTS. O(1).
        """
        league = self._partition(user_id_text(user_id))
        reply = yield league.hiding("is_hidden", self._period(self._start_of(None)), user_id)
        return bool(reply)

    # -- reads ---------------------------------------------------------------------------

    def _read(self, league: _Partition, build: Any, period: PeriodArg) -> Plan[Any]:
        """Runs ``build(period, check)``; a read of the current period settles a pending earlier
        one first."""
        current = period is None
        start = self._start_of(period)
        for _ in range(MAX_SETTLE_ROUNDS):
            reply = yield build(self._period(start), current)
            if _unsettled(reply):
                yield from self._settle_pending(league, reply, self._new_tally())
                continue
            return reply
        raise RuntimeError(f"league {self.key!r}: earlier periods kept needing settlement")

    @plan
    def standings(self, user_id: str, period: PeriodArg = None) -> Plan[Optional[LeagueStandings]]:
        """The player's cohort in ``period`` (None: the current one; a period id or a datetime
        in a kept one): ``{"period", "tier", "cohort", "bracket", "size", "settled",
        "entries"}``, each entry ``{"rank", "user_id", "score", "zone", "metadata"}`` best
        first (ranks under the league's tie rule; players who never scored last, with
        ``"rank"`` and ``"score"`` None), and ``"tiebreak"`` ``{name: value}`` on a league with
        tie-break columns (values None for a player who never gave one). A settled cohort's
        zones are the settlement's. None if the player has no cohort in that period.

        Redis cost:
            One round trip: one script reading the cohort (O(cohort_size)).
        """
        league = self._partition(user_id_text(user_id))
        start = self._start_of(period)
        reply = yield from self._read(
            league, lambda p, check: league.standings(p, user_id, check), period
        )
        if reply is None:
            return None
        result: LeagueStandings = {
            "period": self.periods_of.period_id(start),
            "tier": self._tier_name(reply["tier"]),
            "cohort": reply["cohort"],
            "bracket": reply["bracket"] or None,
            "size": reply["size"],
            "settled": reply["settled"],
            "entries": [_league_entry(entry) for entry in reply["entries"]],
        }
        return result

    @plan
    def tier_of(self, user_id: str) -> Plan[Optional[str]]:
        """The player's tier now (after any pending settlement); None for a player never placed.

        Redis cost:
            One round trip (an HGET), unless an earlier period must be settled first.
        """
        league = self._partition(user_id_text(user_id))
        reply = yield from self._read(
            league, lambda p, check: league.tier_of(p, user_id, check), None
        )
        return None if reply is None else self._tier_name(reply)

    @plan
    def tiers(self) -> Plan[list[TierCount]]:
        """Every tier, lowest first, with the number of players in it: ``[{"tier",
        "players"}, ...]`` (every player ever placed has a tier; hidden players are in no count,
        though they keep their tier).

        Redis cost:
            One round trip per partition (an HGETALL of the tier counts; with hidden players,
            an HGET of each one's tier: O(hidden)).
        """
        counts = [0] * len(self.tier_names)
        for league in self._leagues:
            reply = yield from self._read(
                league, lambda p, check, lg=league: lg.tiers(p, check), None
            )
            for item in reply:
                if 0 <= item["tier"] < len(counts):
                    counts[item["tier"]] += item["players"]
        return [{"tier": name, "players": count} for name, count in zip(self.tier_names, counts)]

    @plan
    def results(self, user_id: str, period: PeriodArg) -> Plan[Optional[LeagueResult]]:
        """The player's outcome of a settled period (an id or a datetime in a kept one):
        ``{"period", "cohort", "tier" (then), "new_tier", "zone", "rank", "score"}``, and
        ``"tiebreak"`` (the columns' values their score was ranked by) on a league with tie-break
        columns; None if the player had no cohort then or it is not settled yet.

        Redis cost:
            One round trip: one script of a few HGETs (one more with tie-break columns).
        """
        league = self._partition(user_id_text(user_id))
        if period is None:
            raise TypeError("results() needs the period: an id or a datetime in it")
        start = self._start_of(period)
        reply = yield league.results(self._period(start), user_id)
        if reply is None:
            return None
        result: LeagueResult = {
            "period": self.periods_of.period_id(start),
            "cohort": reply["cohort"],
            "tier": self._tier_name(reply["tier"]),
            "new_tier": self._tier_name(reply["new_tier"]),
            "zone": reply["zone"],
            "rank": reply["rank"],
            "score": reply["score"],
        }
        if "tiebreak" in reply:
            result["tiebreak"] = reply["tiebreak"]
        return result

    def events_key(self, user_id: Optional[str] = None) -> str:
        """The stream of ``"settled"`` events (one per cohort: ``period``, ``cohort``,
        ``tier``, ``bracket``, repeated ``promoted`` and ``demoted`` ids) of the partition of
        ``user_id`` (the only one without partitions)."""
        league = self._leagues[0] if user_id is None else self._partition(user_id_text(user_id))
        return f"{league.base}:events"

    def partition_of(self, user_id: str) -> int:
        """The partition a player belongs to: ``crc32(user_id) % partitions``; sends nothing."""
        return self._leagues.index(self._partition(user_id_text(user_id)))

    def events(
        self,
        last_id: str = "$",
        *,
        block: Optional[float] = None,
        count: int = EVENTS_BATCH,
        partition: int = 0,
    ) -> S:
        """The league's settlements after ``last_id``, oldest first, as they come: one
        ``"settled"`` event per cohort, appended by the script that settled it (so a cohort's
        event is there exactly when its settlement is).

        Each event is ``{"id", "kind": "settled", "period", "cohort", "tier", "bracket",
        "promoted", "demoted"}``: the cohort's tier during the period, its bracket (None if
        none) and the ids moved up and down. Read it as a board's
        [`events`][redis_leaderboard.RedisLeaderboard.events] (the same stream object,
        iterated or ``read()``, ``last_id`` to resume from, a connection of its own).

        Args:
            last_id: Read after this stream id; ``"$"``: only settlements to come, ``"0"``:
                every one kept (``events_maxlen`` of them at least).
            block: Seconds the iteration waits for the next event before it ends (``0``: what
                is there now); None waits for ever.
            count: How many events one read asks for at most.
            partition: Which partition's stream (0 to ``partitions - 1``; each partition
                settles its own cohorts): [`partition_of`][redis_leaderboard.League.partition_of]
                names a player's.

        Returns:
            An iterator of events (an ``EventStream``; under asyncio an ``AsyncEventStream``),
            also a context manager.

        Raises:
            ValueError: A ``partition`` out of range, a bad ``last_id``, ``block`` or ``count``.

        Redis cost:
            Nothing until the first read; then one XREAD (BLOCK) per batch of at most
            ``count`` events on the stream's own connection, waiting in slices of 2 s.
        """
        if isinstance(partition, bool) or not isinstance(partition, int):
            raise TypeError(f"partition must be an int, not {type(partition).__name__}")
        if not 0 <= partition < self.partitions:
            raise ValueError(f"partition must be from 0 to {self.partitions - 1}")
        league = self._leagues[partition]

        def settled(event: Mapping[str, Any]) -> LeagueEvent:
            out: LeagueEvent = {
                "id": event["id"],
                "kind": "settled",
                "period": event["period"],
                "cohort": event["cohort"],
                "tier": self._tier_name(event["tier"]),
                "bracket": event["bracket"] or None,
                "promoted": event["promoted"],
                "demoted": event["demoted"],
            }
            return out

        return self._event_stream_class(
            self, last_id, block, count, read=league.read_events, convert=settled
        )

    def __repr__(self) -> str:
        return (
            f"{self._display_name}(key={self.key!r}, tiers={list(self.tier_names)!r}, "
            f"period={self.period!r}, cohort_size={self.cohort_size}, promote={self.promote!r}, "
            f"demote={self.demote!r}, mode={self.mode!r}, order={self.order!r}, "
            f"ties={self.ties!r}, partitions={self.partitions}"
            + (f", tiebreak={self.tiebreak!r}" if self.tiebreak else "")
            + (f", layout={self.layout!r}" if self.layout != "guide" else "")
            + (f", rate_limit={self.rate_limit!r}" if self.rate_limit is not None else "")
            + ")"
        )
