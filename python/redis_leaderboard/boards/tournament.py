"""Tournaments: a board per period with a capacity, join-required, a cap on attempts per period
and an active window inside each period. Written once for both APIs.

Design
------
Schedule. A tournament's periods are a calendar period (``"hour"``, ``"day"``, ``"week"``,
``"month"`` in ``tz``, or a ``timedelta`` counted from ``anchor``: the seasons' ``Periods``) or
a cron expression (the standard 5 fields, in ``tz``: a period begins at each time it names and
lasts until the next). ``duration`` (a timedelta) is the active window from each start: writes
outside it raise ``PeriodClosed``; None: the whole period. A window longer than its period
ends with the period. The clock is the client's (injectable), as on periodic boards.

A period is a board. Period ``P``'s board is the guide's layout at ``f"{key}:{P}"`` (metadata at
``...:user:<id>``) with the tournament's ``order``, ``ties`` and ``tiebreak`` columns; the
tournament's write is the plain board's (``plan_write``/``apply_write`` of ``lib/board_write.lua``),
so every query of a plain board reads it (the tournament forwards them to the current period's
board, and ``at`` reaches a kept past one: its final standings). Beside it,
``f"{key}:{P}:entrants"`` (player -> attempts used: a field per player in the period) and
``f"{key}:{P}:bonus"`` (player -> attempts granted); and for the whole tournament
``f"{key}:options"`` (its recorded options: two clients cannot disagree silently) and
``f"{key}:current"`` (the newest period written). A period's keys expire together once ``keep``
newer periods have begun (each key gets that deadline from the call that creates it). A tournament's
boards are never trimmed (``max_size`` bounds them).

One script a write. ``submit`` runs every check in one script before its first write: the submission
id (a resend of an applied id returns the first result whole, kept in its record, and uses no
attempt, whatever the period or the window now; ``duplicate`` is False when the resend is the same
call's, told by the call token each submit sends), the active window, the period (a newer one has
begun: by the clock, or written by another client; or it has expired on the server's clock), the
join (``join_required``: ``NotJoined``), the capacity (a player's first submission joins them when
joining is not required: ``TournamentFull`` past ``max_size``), the attempts (``AttemptsExhausted``
once ``max_attempts`` plus those granted are used); then it counts the attempt and writes the score
with the tournament's ``mode``. A refused write changes nothing: no attempt used, no join recorded.
``join`` is first come, first served under the same script: two players racing for the last place
get one place. Every non-duplicate submission uses an attempt, improving or not.

Whose clock. With the system clock, the script checks the window against the server's clock (the
authority: a client whose clock is off cannot write outside the window); with an injected clock
(tests, replays), against the client's. Either way the client checks first, so a write the
clock already refuses raises before anything is sent (a submission carrying a submission id is
sent anyway: its resend must return the first result). Whichever clock names the period, a
write into a period whose keys have expired on the server's clock (its ``TIME``) is refused by the
script with ``PeriodClosed``, naming the period and the server's time, before anything is written:
never acknowledged and then deleted.

Stale clients. ``submit(..., period=P)`` names the period the write is meant for (the id the
client read from ``status``): if the current period is another, ``StalePeriod`` (before
anything is sent when the client's clock says so, else from the script).

Guards, as a plain board's (one mechanism: the guard words of ``lib/guards.lua``).
``rate_limit=(n, seconds)``: a player's submissions beyond ``n`` in any ``seconds`` of the server's
clock raise ``RateLimited`` (with ``retry_after``) before anything is written (no attempt used);
the window is the tournament's (``f"{key}:rate:{user_id}"``), across periods; a resend of an
applied ``submission_id`` is answered before the limit is looked at. ``events=True``: each
submit that changes a score, each hide of a player with an entry and each unhide that puts one
back appends a plain board's event, with its ``"period"``, to the tournament's one stream
``f"{key}:events"`` (``MAXLEN ~ events_maxlen``), which expires with the newest period written.
Both are part of the tournament's recorded options (``f"{key}:options"``), as its mode and score
limits are: a client with others is refused (``ValueError``), so none can bypass the limit or
leave watchers without events; a tournament without them records the same text as before.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta, tzinfo
from typing import Any, Generic, Mapping, Optional, Sequence, TypeVar, Union, cast

from .._core import Board as CoreBoard
from .._core import (
    ClockSkewError,
    Guards,
    Operation,
    PeriodClosed,
    Scripts,
    StalePeriod,
    read_events,
)
from .._drive import Plan, Sent, one_trip, plan
from .._types import (
    Entry,
    Event,
    Layout,
    Order,
    Ties,
    TournamentJoin,
    TournamentStatus,
    TournamentSubmitResult,
    WriteMode,
)
from ..options import board_client
from .events import EVENTS_BATCH, StreamState
from .plain import WRITE_MODES, count_arg, one_of, player_text
from .seasons import (
    CLOCK_ROUNDS,
    UTC,
    Clock,
    CurrentPeriodQueries,
    Period,
    PeriodClock,
    Periods,
    _aware,
    _millis,
    _zone,
)

__all__ = ["CronPeriods", "TournamentBase"]

PeriodArg = Union[None, str, datetime]
Schedule = Union[Period, str]
S = TypeVar("S", bound="StreamState[Event]")


class CronPeriods:
    """The periods of a cron schedule (the standard 5 fields: minute, hour, day of month, month,
    day of week; in the time zone ``tz``): a period begins at each time the expression names
    and lasts until the next. The same interface as ``Periods``. Evaluated by ``cronsim``
    (which also decides the daylight-saving rules: a time skipped by a gap fires at the gap's
    end, a repeated one once)."""

    def __init__(self, expression: str, tz: Union[str, tzinfo] = "UTC") -> None:
        from cronsim import CronSim, CronSimError

        self.tz = _zone(tz)
        self.period = expression
        self._cron = CronSim
        if not expression.startswith("@") and len(expression.split()) != 5:
            raise ValueError(
                f"schedule {expression!r}: a cron expression has 5 fields (minute, hour, day of "
                "month, month, day of week), or is one of @hourly, @daily, @weekly, ..."
            )
        try:
            CronSim(expression, datetime(2000, 1, 1, tzinfo=self.tz))
        except CronSimError as exc:
            raise ValueError(
                f"schedule {expression!r} is not a valid cron expression: {exc}"
            ) from None

    def _fire(self, moment: datetime, reverse: bool) -> datetime:
        # cronsim steps from a local time, strictly: forward, the first fire after it; in
        # reverse, the last fire before it.
        local = moment.astimezone(self.tz)
        try:
            fire = next(self._cron(self.period, local, reverse=reverse))
        except StopIteration:  # pragma: no cover - an expression that never fires is refused
            raise ValueError(f"schedule {self.period!r} never fires") from None
        return fire.astimezone(UTC)

    def start_of(self, moment: datetime) -> datetime:
        """The start of the period holding ``moment``: the latest time the schedule names at or
        before it (UTC)."""
        moment = _aware(moment, "moment").replace(microsecond=0)
        return self._fire(moment + timedelta(seconds=1), reverse=True)

    def next_start(self, start: datetime) -> datetime:
        """The start of the period after the one starting at ``start``."""
        return self._fire(_aware(start, "start"), reverse=False)

    def previous_start(self, start: datetime) -> datetime:
        """The start of the period before the one starting at ``start``."""
        return self._fire(_aware(start, "start"), reverse=True)

    def period_id(self, start: datetime) -> str:
        """The period's name in keys: its local start, ``2026-11-23T1200+0100``."""
        return _aware(start, "start").astimezone(self.tz).strftime("%Y-%m-%dT%H%M%z")


def _periods(schedule: Schedule, tz: Union[str, tzinfo], anchor: Optional[datetime]) -> Any:
    if isinstance(schedule, timedelta) or schedule in ("hour", "day", "week", "month"):
        return Periods(cast(Period, schedule), tz, anchor)
    if not isinstance(schedule, str):
        raise TypeError(
            "schedule must be 'hour', 'day', 'week', 'month', a timedelta or a cron expression, "
            f"not {type(schedule).__name__}"
        )
    if anchor is not None:
        raise ValueError("anchor is only for a timedelta schedule")
    return CronPeriods(schedule, tz)


def _optional_count(value: Any, what: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int or None, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{what} must be at least 1 (or None)")
    return value


class TournamentBase(PeriodClock, CurrentPeriodQueries, Generic[S]):
    """A tournament (``Tournament``, sync or asyncio): its options, schedule and methods,
    each written once (see the module for the design)."""

    _client_class: Any  # the public class's
    _event_stream_class: type[S]  # the public class's
    _cluster_client_class: Any
    _board_class: Any  # the plain board class of the same API
    _display_name: str = "Tournament"
    redis: Any

    def __init__(
        self,
        redis_client: Any = None,
        key: str = "tournament:demo",
        *,
        schedule: Schedule,
        duration: Optional[timedelta] = None,
        tz: Union[str, tzinfo] = "UTC",
        anchor: Optional[datetime] = None,
        max_size: Optional[int] = None,
        join_required: bool = False,
        max_attempts: Optional[int] = None,
        mode: WriteMode = "best",
        order: Order = "desc",
        ties: Ties = "lexicographic",
        keep: int = 4,
        clock: Optional[Clock] = None,
        url: Optional[str] = None,
        submission_ttl: float = 86400,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
        tiebreak: Optional[Sequence[tuple[str, Order]]] = None,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        events_maxlen: int = 10000,
        layout: Layout = "guide",
    ) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty str")
        self.max_size = _optional_count(max_size, "max_size")
        """Players a period takes (first come, first served); None: no limit."""
        self.max_attempts = _optional_count(max_attempts, "max_attempts")
        """Submissions a player may make per period (plus ``add_attempts``); None: no limit."""
        if not isinstance(join_required, bool):
            raise TypeError(f"join_required must be a bool, not {type(join_required).__name__}")
        if isinstance(keep, bool) or not isinstance(keep, int):
            raise TypeError(f"keep must be an int, not {type(keep).__name__}")
        if keep < 1:
            raise ValueError("keep must be at least 1 (the current period)")
        self.keep = keep
        """Periods whose boards are kept (the current one included)."""
        if duration is not None:
            if not isinstance(duration, timedelta):
                raise TypeError(f"duration must be a timedelta or None, not {duration!r}")
            if duration <= timedelta(0) or duration % timedelta(milliseconds=1):
                raise ValueError("duration must be a positive whole number of milliseconds")
        self.duration = duration
        """The active window from each period's start; None: the whole period."""
        one_of(mode, "mode", WRITE_MODES)
        self._guards = Guards(
            submission_ttl=submission_ttl,
            rate_limit=rate_limit,
            events=events,
            events_maxlen=events_maxlen,
            score_range=score_range,
            max_increment=max_increment,
        )
        # Every period's board has this shape (order, ties and tie-break columns validated as a
        # board's): its tie rule and option keys are what the scripts take.
        self._shape = (order, ties, tiebreak, layout)
        shaped = self._shaped(key)  # validates the layout too
        self.layout: Layout = layout
        """Where a period's metadata lives: a hash per player (``"guide"``) or one hash for the
        period's board, ``f"{key}:{period}:meta"`` (``"compact"``: the board guide's "The compact
        layout")."""
        ties_word = shaped.ties_word
        # What every call of tournament.lua and tournament_read.lua sends (see their
        # declarations): the tournament's options, its write rule carrying the guards.
        rule = mode + self._guards.rule_words()
        options = {
            "max_size": "" if self.max_size is None else str(self.max_size),
            "join_required": "1" if join_required else "0",
            "max_attempts": "" if self.max_attempts is None else str(self.max_attempts),
            "write_rule": rule,
            "order": order,
            "ties": ties_word,
        }
        scripts = Scripts(
            "tournament",
            key,
            f"max_size={options['max_size']} join_required="
            f"{options['join_required']} max_attempts={options['max_attempts']} "
            f"mode={rule} order={order} ties={ties_word}",
        )
        # Each call of tournament.lua and tournament_read.lua, prepared once with what every
        # call sends: the options and the period-less keys. Joining, hiding or showing twice
        # changes nothing more, reads change nothing: each may be resent; a submission only
        # with a submission id (it cannot apply, nor use an attempt, twice); add_attempts (an
        # increment) never.
        fixed = {**options, "tournament_options": f"{key}:options"}
        write = {**fixed, "tournament_current": f"{key}:current"}
        self._calls = {
            "submit": scripts.prepare("tournament.submit", "Tournament.submit", write),
            "join": scripts.prepare("tournament.join", "Tournament.join", write, resends=2),
            "add_attempts": scripts.prepare(
                "tournament.add_attempts", "Tournament.add_attempts", write
            ),
            "hide": scripts.prepare("tournament.hide", "Tournament.hide", write, resends=2),
            "unhide": scripts.prepare("tournament.unhide", "Tournament.unhide", write, resends=2),
            "status": scripts.prepare(
                "tournament_read.status", "Tournament.status", fixed, resends=1
            ),
            "hidden": scripts.prepare(
                "tournament_read.hidden", "Tournament.hidden", fixed, resends=2
            ),
            "is_hidden": scripts.prepare(
                "tournament_read.is_hidden", "Tournament.is_hidden", fixed, resends=2
            ),
        }
        self._period_boards: dict[str, tuple[CoreBoard, list[str]]] = {}
        self._period_keys: dict[str, dict[str, str]] = {}
        self._made: dict[tuple[datetime, int], dict[str, str]] = {}
        self._keyed_guards = rate_limit is not None or events  # words that name a key
        self.rate_limit: Optional[tuple[int, float]] = (
            None if rate_limit is None else (int(rate_limit[0]), float(rate_limit[1]))
        )
        """``(max_writes, per_seconds)``: the submissions a player may make in any
        ``per_seconds`` of the server's clock, across periods (``RateLimited`` beyond), or
        None."""
        self.events_enabled = events
        """Whether each change appends an event to the tournament's stream
        ([`events`][redis_leaderboard.Tournament.events])."""
        self.events_maxlen = events_maxlen
        """The stream is capped at about this many events (``MAXLEN ~``)."""
        self.tiebreak: Optional[tuple[tuple[str, str], ...]] = (
            tuple((name, direction) for name, direction in tiebreak) if tiebreak else None
        )
        """The tie-break columns of every period's board, ``(name, "desc" | "asc")`` each
        (see [`submit`][redis_leaderboard.Tournament.submit]), or None."""
        self.score_range = score_range
        """``(min, max)`` a write may leave a score within (fair play), or None."""
        self.max_increment = max_increment
        """The most one write may improve a player's score by (fair play), or None."""
        self._start_clock(_periods(schedule, tz, anchor), clock)
        self.redis = board_client(
            self._display_name,
            redis_client,
            url,
            key,
            self._client_class,
            self._cluster_client_class,
        )
        self.key = key
        """The tournament's key: a period's board is ``f"{key}:{period_id}"``."""
        self.join_required = join_required
        """Whether a player must ``join`` before submitting."""
        self.mode: WriteMode = mode
        """How ``submit`` writes a score: ``"best"``, ``"set"`` or ``"incr"``."""
        self.order: Order = order
        """``"desc"`` (higher is better) or ``"asc"``."""
        self.ties: Ties = ties
        """How equal scores rank (as a board's ``ties``)."""
        self._boards: dict[str, Any] = {}

    # -- periods -------------------------------------------------------------------------

    @property
    def schedule(self) -> Schedule:
        """The schedule: a period name, a timedelta or a cron expression."""
        return cast(Schedule, self.periods_of.period)

    def window(self, when: Optional[datetime] = None) -> tuple[datetime, datetime]:
        """The active window (start, end) of the period holding ``when`` (default: now), aware
        datetimes in ``tz``: writes are taken from start (included) to end (excluded)."""
        moment = self.now() if when is None else _aware(when, "when")
        start = self.periods_of.start_of(moment)
        _, end, _ = self._bounds(start)
        return start.astimezone(self.tz), end.astimezone(self.tz)

    def periods(self) -> list[str]:
        """The ids of the kept periods, newest (the current one) first."""
        start = self.periods_of.start_of(self.now())
        ids = [self.periods_of.period_id(start)]
        for _ in range(self.keep - 1):
            start = self.periods_of.previous_start(start)
            ids.append(self.periods_of.period_id(start))
        return ids

    def _bounds(self, start: datetime) -> tuple[datetime, datetime, datetime]:
        """(start, window end, next start) of the period starting at ``start``."""
        following = self.periods_of.next_start(start)
        end = following if self.duration is None else min(start + self.duration, following)
        return start, end, following

    def _period(self, start: datetime, named: int = 0) -> dict[str, str]:
        """The arguments of the period starting at ``start`` every script call sends (see
        tournament.lua's declaration; unix ms): its id, start, window end, next start and
        deadline (its keys expire when the ``keep``-th period after it begins), and ``named``
        (0: no period named, 1: this one, 2: another, refused unless the call resends an
        applied submission id). Which period a write belongs to, and whether it is open, the
        server's clock decides."""
        made = self._made.get((start, named))
        if made is not None:  # a period's arguments are worked out once
            return made
        _, end, following = self._bounds(start)
        deadline = following
        for _ in range(self.keep - 1):
            deadline = self.periods_of.next_start(deadline)
        period = self.periods_of.period_id(start)
        if not period:
            raise ValueError("a period id must not be empty")
        made = {
            "period": period,
            "period_start": str(_millis(start)),
            "window_end": str(_millis(end)),
            "next_start": str(_millis(following)),
            "expire": str(_millis(deadline)),
            "period_named": str(named),
        }
        if len(self._made) > 4 * self.keep + 8:
            self._made.clear()
        self._made[(start, named)] = made
        return made

    def _current(self) -> dict[str, str]:
        """The current period's arguments (see ``_period``), by this client's clock."""
        return self._period(self.periods_of.start_of(self.now()))

    def _keys(self, period: str) -> dict[str, str]:
        """The keys of a period every tournament.lua call takes (its board
        ``f"{key}:{period}"``)."""
        keys = self._period_keys.get(period)
        if keys is None:
            board = f"{self.key}:{period}"
            keys = {"entrants": f"{board}:entrants", "bonus_key": f"{board}:bonus", "board": board}
            if len(self._period_keys) > 2 * self.keep + 8:
                self._period_keys.clear()
            self._period_keys[period] = keys
        return keys

    def _user_key(self, period: str, user: str) -> str:
        """Where a period's player's metadata lives: their hash, or the compact board's."""
        if self.layout == "compact":
            return f"{self.key}:{period}:meta"
        return f"{self.key}:{period}:user:{user}"

    def _read_keys(self, period: str) -> dict[str, str]:
        """The keys of a period tournament_read.lua's calls take."""
        keys = self._keys(period)
        return {"entrants": keys["entrants"], "bonus_key": keys["bonus_key"]}

    def _shaped(self, key: str) -> CoreBoard:
        """A board of every period's shape (its order, ties, tie-break columns) at ``key``."""
        order, ties, tiebreak, layout = self._shape
        return CoreBoard(key, None, order=order, ties=ties, tiebreak=tiebreak, layout=layout)

    def _period_board(self, period: str) -> tuple[CoreBoard, list[str]]:
        """The shape of a period's board (a write's tie-break word) and its option keys (a
        list not to change: copy it)."""
        found = self._period_boards.get(period)
        if found is None:
            if len(self._period_boards) > 2 * self.keep + 8:
                self._period_boards.clear()
            board = self._shaped(f"{self.key}:{period}")
            found = self._period_boards[period] = (board, board.option_keys)
        return found

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
        for _ in range(self.keep):
            if self.periods_of.period_id(start) == period:
                return start
            start = self.periods_of.previous_start(start)
        raise ValueError(
            f"period {period!r} is not one of the tournament's kept periods ({self.keep}, the "
            f"current one {self.periods_of.period_id(current)!r} included)"
        )

    def _writable(self, named: Optional[str], resend: bool) -> dict[str, str]:
        """The current period for a write; raises before anything is sent when the clock says
        the write is refused: ``StalePeriod`` if ``named`` is not the current period,
        ``PeriodClosed`` outside the active window. A ``resend`` (a submission id) is sent
        anyway, for the script to decide: an applied id returns the first result."""
        now = self.now()
        start = self.periods_of.start_of(now)
        current = self.periods_of.period_id(start)
        flag = 0
        if named is not None:
            if not isinstance(named, str):
                raise TypeError(f"period must be a period id (str) or None, not {named!r}")
            flag = 1
            if named != current:
                if resend:
                    flag = 2
                else:
                    raise StalePeriod(
                        f"period {named} of tournament {self.key}: the submission was meant "
                        f"for this period, and the current one is {current}; nothing was sent"
                    )
        _, end, _ = self._bounds(start)
        if not resend and now >= end:
            raise PeriodClosed(
                f"period {current} of tournament {self.key}: its active window closed at "
                f"{end.astimezone(self.tz).isoformat()}; the clock says "
                f"{now.astimezone(self.tz).isoformat()}; nothing was sent"
            )
        return self._period(start, flag)

    def _sent(self, operation: Operation[Any]) -> Plan[Optional[dict[str, Any]]]:
        """Sends a write: its record, or None if the server's clock was in another period than
        the one it named (nothing was written; the tournament now follows the server's clock)."""
        try:
            reply: dict[str, Any] = yield operation
        except ClockSkewError as error:
            self._follow_server(error)
            return None
        return reply

    def _unsettled_clock(self) -> ClockSkewError:
        error = ClockSkewError(
            f"the server refused the period of tournament {self.key!r} {CLOCK_ROUNDS} times: its "
            "clock moves unlike this client's; nothing was changed"
        )
        error.server_time = self.now()
        return error

    def _attempts_left(self, used: int, bonus: int) -> Optional[int]:
        if self.max_attempts is None:
            return None
        return max(self.max_attempts + bonus - used, 0)

    # -- the boards ----------------------------------------------------------------------

    def at(self, period: PeriodArg = None) -> Any:
        """The plain board (a ``RedisLeaderboard`` of the same API, read it only) of a
        period: None (the current one), a kept period's id, or a datetime in it: every query
        of a board on that period's final (or current) standings."""
        start = self._start_of(period)
        board_key = f"{self.key}:{self.periods_of.period_id(start)}"
        board = self._boards.get(board_key)
        if board is None:
            if len(self._boards) > 2 * self.keep + 8:
                self._boards.clear()
            board = self._board_class(
                self.redis,
                board_key,
                None,
                order=self.order,
                ties=self.ties,
                tiebreak=self.tiebreak,
                layout=self.layout,
            )
            self._boards[board_key] = board
        return board

    def current(self) -> Any:
        """The current period's board (see ``at``)."""
        return self.at(None)

    # -- writes --------------------------------------------------------------------------

    @plan
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        submission_id: Optional[str] = None,
        period: Optional[str] = None,
        retries: int = 2,
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> Plan[TournamentSubmitResult]:
        """Write the player's score in the current period with the tournament's ``mode``
        (``"best"``: keep the better; ``"set"``; ``"incr"``) and merge ``metadata``, using one
        attempt, in one atomic script after every check (see the module): the active window
        (``PeriodClosed``), ``period`` if given (``StalePeriod`` unless it is the
        current period's id), the join (``NotJoined`` with ``join_required``; otherwise a
        first submission joins, ``TournamentFull`` past ``max_size``), the attempts
        (``AttemptsExhausted``). Returns submit()'s result on the period's board plus
        ``"period"``, ``"attempts_used"``, ``"attempts_left"`` (None: unlimited) and ``"size"``
        (players in the period). ``submission_id``/``retries`` as
        ``RedisLeaderboard.submit``: a resend of an applied id returns the first result, field
        for field (its ``"period"``, ``"attempts_used"``, ``"size"``: the first write's, whatever
        the clock says now) and uses no attempt; ``"duplicate"`` is True when another call had
        applied it, False for this call's own resend after a lost reply. ``PeriodClosed`` also
        when the period has expired on the server's clock.

        ``rate_limit``: a submission beyond the limit raises ``RateLimited`` (``retry_after``:
        seconds until the server's clock frees a place) and changes nothing (no attempt used);
        a resend of an applied ``submission_id`` answers its first result, never limited.
        ``events``: a submission that changes the player's score appends a ``"score"`` event,
        with its ``"period"``, to the tournament's stream (see
        [`events`][redis_leaderboard.Tournament.events]); a refused one appends nothing.

        ``tiebreak``: on a tournament with tie-break columns (``tiebreak=(("score_time",
        "asc"),)``), a value for each (``{"score_time": 41.5}``): equal scores rank by them, in
        order, then by user id, exactly as on a plain board's
        [`submit`][redis_leaderboard.RedisLeaderboard.submit] (``mode="best"`` keeps the better
        (score, columns) tuple, never a mix; without it a write keeps the stored values, the
        worst of each for a new entry). The values are part of the submission's payload.
        Every read's entries carry ``"tiebreak": {name: value}``. A bad value (a column
        missing or unknown, not finite) raises ``ValueError`` before anything is sent.

        Redis cost:
            One round trip, one script: the checks (a few HGET/HLEN) and the plain board's
            write (O(log N)); with tie-break columns, the plain board's write with columns
            (its ranked set ``:tb`` and index ``:tb:keys``: one ZADD and one HSET more). With
            ``rate_limit``, the player's window: a ZCOUNT before, a ZREMRANGEBYSCORE, ZADD and
            PEXPIRE after (O(log W)); with ``events``, an XADD (``MAXLEN ~``), the ranks before
            and after and a PEXPIREAT of the stream.
        """
        user = player_text(user_id)
        if tiebreak is not None and self.tiebreak is None:
            raise ValueError("tiebreak values for a tournament without tie-break columns")
        if count_arg(retries, "retries") < 0:
            raise ValueError("retries must be at least 0")
        events = f"{self.key}:events"
        for _ in range(CLOCK_ROUNDS):
            args = self._writable(period, resend=submission_id is not None)
            board, option_keys = self._period_board(args["period"])
            # The guards, as a board's: the submission id's word with this call's token, a rate
            # limit's with the player's window (the tournament's, whatever the period), the
            # events' with the tournament's one stream (the rule carries both too, keyless);
            # then the tie-break columns' word (the ranked member's key).
            words, keys = "", option_keys
            if submission_id is not None or self._keyed_guards:
                words, named = self._guards.write_words(self.key, events, user, submission_id)
                keys = [*keys, *named]
            if tiebreak is not None:
                words = " ".join(filter(None, (words, board.tiebreak_word(tiebreak))))
            values = {
                **self._keys(args["period"]),
                **args,
                "user_key": self._user_key(args["period"], user),
                "write_keys": keys,
                "user_id": user,
                "score": score,
                "guard_words": words,
                "metadata": metadata,
            }
            resends = retries if submission_id is not None else 0
            operation = self._calls["submit"](values, resends)
            reply = yield from self._sent(operation)
            if reply is not None:
                break
        else:
            raise self._unsettled_clock()
        result = cast(
            TournamentSubmitResult,
            {
                **reply["submit"],
                "period": reply["period"],
                "attempts_used": reply["used"],
                "attempts_left": self._attempts_left(reply["used"], reply["bonus"]),
                "size": reply["size"],
            },
        )
        return result

    @plan
    def join(self, user_id: str) -> Plan[TournamentJoin]:
        """Join the current period (first come, first served: ``TournamentFull`` past
        ``max_size``; ``PeriodClosed`` outside the active window); nothing if already
        in. Returns ``{"period", "joined_now" (True if joined by this call), "size",
        "attempts_left"}``.

        Redis cost:
            One round trip, one script (an HSET and a few HGET/HLEN).
        """
        user = player_text(user_id)
        for _ in range(CLOCK_ROUNDS):
            args = self._writable(None, resend=False)
            values = {**self._keys(args["period"]), **args, "user_id": user}
            operation = self._calls["join"](values)
            reply = yield from self._sent(operation)
            if reply is not None:
                break
        else:
            raise self._unsettled_clock()
        result: TournamentJoin = {
            "period": args["period"],
            "joined_now": reply["joined_now"],
            "size": reply["size"],
            "attempts_left": self._attempts_left(reply["used"], reply["bonus"]),
        }
        return result

    @plan
    def add_attempts(self, user_id: str, n: int = 1) -> Plan[Optional[int]]:
        """Grant the player ``n`` more attempts in the current period (the tournament must have
        ``max_attempts``); returns their attempts left. Allowed outside the active window (it
        takes effect for the rest of the period, and is kept until the period's keys expire); it
        joins no one. ``PeriodClosed`` if the period has expired on the server's clock (a client
        clock far behind): nothing is granted.

        Redis cost:
            One round trip, one script (an HINCRBY and a few reads).
        """
        user = player_text(user_id)
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"n must be an int, not {type(n).__name__}")
        if self.max_attempts is None:
            raise ValueError(
                f"tournament '{self.key}' has no max_attempts: its attempts are unlimited"
            )
        if n < 1:
            raise ValueError("n must be at least 1")
        for _ in range(CLOCK_ROUNDS):
            args = self._current()
            values = {**self._keys(args["period"]), **args, "user_id": user, "attempts": str(n)}
            operation = self._calls["add_attempts"](values)
            reply = yield from self._sent(operation)
            if reply is not None:
                break
        else:
            raise self._unsettled_clock()
        return self._attempts_left(reply["used"], reply["bonus"])

    # -- fair play: hidden players --------------------------------------------------------

    def _hiding(self, op: str, user_id: str) -> Operation[bool]:
        """A player hidden or shown again (``op``), from the current period on. Hiding or
        showing twice changes nothing more: it may be resent."""
        user = player_text(user_id)
        args = self._current()
        keys = self._period_board(args["period"])[1]
        if self._guards.events:
            keys = [*keys, f"{self.key}:events"]  # the stream: the last key
        values = {
            **self._keys(args["period"]),
            **args,
            "user_key": self._user_key(args["period"], user),
            "option_keys": keys,
            "user_id": user,
        }
        return self._calls[op](values)

    @plan
    def hide(self, user_id: str) -> Plan[bool]:
        """Hide a player from the tournament, in this period and every later one: their entry
        in the current period is kept aside (they leave every read, as
        [`RedisLeaderboard.hide`][redis_leaderboard.RedisLeaderboard.hide] says), and their
        submissions go on being judged (window, attempts, score limits) and kept aside. Returns
        True if they were not hidden before. With ``events``, a ``"hide"`` event (with its
        ``"period"``) if they had an entry in the current period.

        Redis cost:
            One round trip, one script: HSETs, and the period board's ZREM. O(log N).
        """
        changed: bool = yield self._hiding("hide", user_id)
        return changed

    @plan
    def unhide(self, user_id: str) -> Plan[bool]:
        """Show a hidden player again: their kept score of the current period goes back on its
        board as a write of it. Returns True if they were hidden. With ``events``, the write's
        ``"score"`` event (with its ``"period"``).

        Redis cost:
            One round trip, one script (HDELs and the board's write). O(log N).
        """
        changed: bool = yield self._hiding("unhide", user_id)
        return changed

    @plan
    def hidden(self) -> Plan[list[str]]:
        """The hidden players, in byte order.

        Redis cost:
            One round trip: a ``no-writes`` script, HKEYS. O(H).
        """
        hidden: list[str] = yield self._calls["hidden"](self._read_keys(self._current()["period"]))
        return hidden

    @plan
    def is_hidden(self, user_id: str) -> Plan[bool]:
        """Whether a player is hidden (one of ``hidden()``).

        Redis cost:
            One round trip: a ``no-writes`` script, HEXISTS. O(1).
        """
        values = {**self._read_keys(self._current()["period"]), "user_id": player_text(user_id)}
        hidden: bool = yield self._calls["is_hidden"](values)
        return hidden

    # -- change events -------------------------------------------------------------------

    def events_key(self) -> str:
        """The tournament's stream of change events, ``f"{key}:events"``; sends nothing."""
        return f"{self.key}:events"

    def events(
        self,
        last_id: str = "$",
        *,
        block: Optional[float] = None,
        count: int = EVENTS_BATCH,
    ) -> S:
        """The tournament's change events after ``last_id``, oldest first, as they come: one
        stream for every period (``events=True``).

        Each event is a plain board's (see
        [`RedisLeaderboard.events`][redis_leaderboard.RedisLeaderboard.events]: ``{"id",
        "kind", "user_id", "score", "rank", "previous_score", "previous_rank",
        "trimmed_user_ids", "overtaken"}``, ranks 1-based in the period's board) plus
        ``"period"``, the id of the period it changed. ``"kind"``: ``"score"`` (a
        [`submit`][redis_leaderboard.Tournament.submit] that changed the player's score, or an
        [`unhide`][redis_leaderboard.Tournament.unhide] that put it back), ``"hide"`` (a
        [`hide`][redis_leaderboard.Tournament.hide] that took an entry off). Each is appended by
        the script that made the change, atomically with it; a refused submit (no attempts
        left, the period closed, the rate limit) appends nothing, nor does a submit that leaves
        the score as it was (``mode="best"``, not better; it still uses an attempt). The stream
        expires with the newest period written (its keys' deadline), and keeps about
        ``events_maxlen`` events. Read it as a board's (iterated or ``read()``, ``last_id`` to
        resume from, a connection of its own).

        Args:
            last_id: Read after this stream id; ``"$"``: only events to come, ``"0"``: every
                one kept.
            block: Seconds the iteration waits for the next event before it ends (``0``: what
                is there now); None waits for ever.
            count: How many events one read asks for at most.

        Returns:
            An iterator of events (an ``EventStream``; under asyncio an ``AsyncEventStream``),
            also a context manager.

        Raises:
            ValueError: The tournament has no ``events``; a bad ``last_id``, ``block`` or
                ``count``.

        Redis cost:
            Nothing until the first read; then one XREAD (BLOCK) per batch of at most
            ``count`` events on the stream's own connection, waiting in slices of 2 s.
        """
        if not self._guards.events:
            raise ValueError(f"tournament '{self.key}' has no events (events=True)")
        return self._event_stream_class(
            self, last_id, block, count, read=functools.partial(read_events, self.events_key())
        )

    # -- reads ---------------------------------------------------------------------------

    @plan
    def status(self, user_id: str) -> Plan[TournamentStatus]:
        """The player's state in the current period: ``{"active" (the window is open now),
        "period", "starts_at", "ends_at" (the active window, aware datetimes in ``tz``),
        "joined" (joined or submitted), "attempts_left" (None: unlimited), "size" (players
        in the period)}``.

        Redis cost:
            One round trip, one read-only script (a few HGET and an HLEN).
        """
        user = player_text(user_id)
        now = self.now()
        start = self.periods_of.start_of(now)
        _, end, _ = self._bounds(start)
        period = self.periods_of.period_id(start)
        reply = yield self._calls["status"]({**self._read_keys(period), "user_id": user})
        result: TournamentStatus = {
            "active": start <= now < end,
            "period": period,
            "starts_at": start.astimezone(self.tz),
            "ends_at": end.astimezone(self.tz),
            "joined": reply["joined"],
            "attempts_left": self._attempts_left(reply["used"], reply["bonus"]),
            "size": reply["size"],
        }
        return result

    @one_trip
    def standings(self, period: PeriodArg = None, count: int = 10) -> Sent[list[Entry]]:
        """The ``count`` best entries of a period (None: the current one; a kept period's id or
        a datetime in it): a past period's final standings. Every other query of a past period:
        ``at``.

        Redis cost:
            One round trip: the plain board's ``get_top`` (O(log N + count)).
        """
        board = self.at(period)
        return cast(Sent[list[Entry]], board._run(board._board.get_top(count)))

    def __repr__(self) -> str:
        return (
            f"{self._display_name}(key={self.key!r}, schedule={self.schedule!r}, "
            f"duration={self.duration!r}, max_size={self.max_size}, "
            f"join_required={self.join_required}, max_attempts={self.max_attempts}, "
            f"mode={self.mode!r}, order={self.order!r}, ties={self.ties!r}"
            + (f", tiebreak={self.tiebreak!r}" if self.tiebreak else "")
            + (f", rate_limit={self.rate_limit!r}" if self.rate_limit is not None else "")
            + (", events=True" if self.events_enabled else "")
            + (f", layout={self.layout!r}" if self.layout != "guide" else "")
            + ")"
        )
