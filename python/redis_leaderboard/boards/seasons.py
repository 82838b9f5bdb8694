"""Time (seasons): periodic boards with archives, rolling windows, and one write for many boards.

* [`PeriodicLeaderboard`][redis_leaderboard.PeriodicLeaderboard]: one plain board (the guide's
  layout) per period, at ``f"{key}:{period_id}"``; a period's keys (its sorted set, option keys and
  every metadata hash) expire together once ``keep`` newer periods have begun.
* [`RollingLeaderboard`][redis_leaderboard.RollingLeaderboard]: scores land in per-bucket sorted
  sets; reads see the union of the buckets inside the window, kept at ``key`` (metadata at
  ``f"{key}:user:{user_id}"``).
* [`LeaderboardGroup`][redis_leaderboard.LeaderboardGroup]: one atomic write (one script, one round
  trip) to several boards.

The clock rule: the *server's* clock (the ``TIME`` a script sees) decides which period or bucket
a write belongs to, and when anything closes or expires. A period's id is part of its keys'
names, so the client names it from its own clock (``clock``, injectable), corrected by what the
server told it (``ServerClock``); each write says when, on the server's clock, it belongs to the
period it names, and the server refuses it otherwise before anything is written: the client
then takes the server's time and sends it again, or raises ``ClockSkewError`` if its clock is
off by more than ``MAX_CLOCK_SKEW``. A rolling window's bucket is the server's alone. See
docs/pages/guides/seasons.md, "Whose clock".
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta, timezone, tzinfo
from typing import (
    Any,
    Callable,
    Generic,
    Iterable,
    Iterator,
    Literal,
    Mapping,
    Optional,
    ParamSpec,
    Sequence,
    TypeVar,
    Union,
    cast,
)
from zoneinfo import ZoneInfo

from .._core import Board, ClockSkewError, Operation, PeriodClosed, Window, group_write
from .._drive import AsyncDriven, Plan, Runner, Sent, one_trip, plan
from .._types import (
    BulkEntry,
    ImportSummary,
    Layout,
    Order,
    SubmitResult,
    Ties,
    WriteMode,
    WriteResult,
)
from ..options import make_client
from .events import EVENTS_BATCH
from .plain import DEFAULT_CHUNK_SIZE, LeaderboardBase, guards_repr

__all__ = [
    "MAX_CLOCK_SKEW",
    "Aggregate",
    "Clock",
    "CurrentPeriodQueries",
    "GroupBase",
    "Period",
    "PeriodClock",
    "PeriodState",
    "PeriodicBase",
    "Periods",
    "RollingState",
    "ServerClock",
]

PeriodName = Literal["hour", "day", "week", "month"]
Period = Union[PeriodName, timedelta]
Clock = Callable[[], datetime]
Aggregate = Literal["sum", "max", "min"]
UTC = timezone.utc
_EPSILON = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The offsets of every time zone are whole multiples of 15 minutes: the step with which an hour
# board's next boundary is looked for.
_QUARTER = timedelta(minutes=15)


def _system_clock() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} must be an aware datetime (with a tzinfo), not naive {value}")
    return value.astimezone(UTC)


def _zone(tz: Union[str, tzinfo]) -> tzinfo:
    if isinstance(tz, tzinfo):
        return tz
    if not isinstance(tz, str):
        raise TypeError(f"tz must be a time zone name or a tzinfo, not {type(tz).__name__}")
    try:
        return ZoneInfo(tz)
    except (ValueError, OSError) as exc:  # ZoneInfoNotFoundError is a KeyError... and OSError
        raise ValueError(f"unknown time zone {tz!r}") from exc
    except KeyError as exc:
        raise ValueError(f"unknown time zone {tz!r} (install tzdata?)") from exc


def _millis(moment: datetime) -> int:
    """Unix milliseconds of an aware datetime (exact: no float rounding)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


class Periods:
    """The periods of a board: ``"hour"``, ``"day"``, ``"week"`` (ISO week, Monday 00:00
    local), ``"month"`` in the time zone ``tz``, or a fixed ``timedelta`` counted from
    ``anchor``. Every instant lies in exactly one period; ``start_of`` and ``next_start`` give
    its bounds (aware datetimes in UTC), ``period_id`` its stable name.

    Calendar periods begin when the local clock shows their first instant (midnight, or HH:00
    for hours), the first time it does (a repeated midnight belongs to the day it begins); a
    local time skipped by a daylight-saving gap begins its period at the gap's end. Days are
    23, 24 or 25 hours long around the transitions. Hour ids carry their UTC offset
    (``2026-10-25T02+0200`` then ``2026-10-25T02+0100``): the hour repeated when clocks go back
    is two periods.
    """

    def __init__(
        self, period: Period, tz: Union[str, tzinfo] = "UTC", anchor: Optional[datetime] = None
    ) -> None:
        self.tz = _zone(tz)
        self.anchor: Optional[datetime] = None
        if isinstance(period, timedelta):
            if period <= timedelta(0):
                raise ValueError("a timedelta period must be positive")
            if period % timedelta(milliseconds=1):
                raise ValueError("a timedelta period must be a whole number of milliseconds")
            if anchor is None:
                raise ValueError("a timedelta period needs an anchor (an aware datetime)")
            # Whole milliseconds, as every period's start then is: the scripts and the keys
            # carry starts in unix ms, and a start read back from them is the period's own.
            anchor = _aware(anchor, "anchor")
            self.anchor = anchor.replace(microsecond=anchor.microsecond // 1000 * 1000)
        elif period not in ("hour", "day", "week", "month"):
            raise ValueError(
                f"period must be 'hour', 'day', 'week', 'month' or a timedelta, not {period!r}"
            )
        elif anchor is not None:
            raise ValueError("anchor is only for a timedelta period")
        self.period = period

    # -- local wall time <-> instants ---------------------------------------------------

    def _instant(self, wall: datetime, fold: int = 0) -> datetime:
        return wall.replace(tzinfo=self.tz, fold=fold).astimezone(UTC)

    def _shows(self, moment: datetime, wall: datetime) -> bool:
        return moment.astimezone(self.tz).replace(tzinfo=None) == wall

    def _label(self, local: datetime) -> datetime:
        """The naive local wall time at which the period holding ``local`` begins."""
        if self.period == "hour":
            return local.replace(minute=0, second=0, microsecond=0, tzinfo=None)
        day = datetime.combine(local.date(), datetime.min.time())
        if self.period == "week":
            return day - timedelta(days=local.weekday())
        if self.period == "month":
            return day.replace(day=1)
        return day

    def _calendar_start(self, wall: datetime) -> datetime:
        # The first instant showing `wall` (fold 0); in a gap, the gap's end (zoneinfo maps a
        # skipped time with fold=0 through the offset before the transition).
        start = self._instant(wall, 0)
        if self._shows(start, wall):
            return start
        return self._gap_end(wall)  # skipped by a daylight-saving gap

    def _gap_end(self, wall: datetime) -> datetime:
        # The first instant whose wall time is at or after `wall`, a time a gap skips: the
        # transition (at a whole second), found from the instant fold=1 maps it to (before
        # the gap, through the offset after it) by quarter hours, then by halving.
        low = self._instant(wall, 1)
        high = low
        while high.astimezone(self.tz).replace(tzinfo=None) < wall:
            low, high = high, high + _QUARTER
        while high - low > timedelta(seconds=1):
            middle = low + (high - low) // 2
            if middle.astimezone(self.tz).replace(tzinfo=None) < wall:
                low = middle
            else:
                high = middle
        return high.replace(microsecond=0)

    def start_of(self, moment: datetime) -> datetime:
        """The start of the period holding the aware datetime ``moment`` (UTC)."""
        moment = _aware(moment, "moment")
        if isinstance(self.period, timedelta):
            assert self.anchor is not None
            return self.anchor + ((moment - self.anchor) // self.period) * self.period
        local = moment.astimezone(self.tz)
        wall = self._label(local)
        if self.period != "hour":
            return self._calendar_start(wall)
        # An hour: the latest instant <= moment showing HH:00 (two when clocks go back).
        shown = [
            instant
            for instant in (self._instant(wall, 0), self._instant(wall, 1))
            if instant <= moment and self._shows(instant, wall)
        ]
        if shown:
            return max(shown)
        return self._gap_end(wall)

    def next_start(self, start: datetime) -> datetime:
        """The start of the period after the one starting at ``start``."""
        start = _aware(start, "start")
        if isinstance(self.period, timedelta):
            return start + self.period
        if self.period == "hour":
            probe = start
            while True:
                probe += _QUARTER
                following = self.start_of(probe)
                if following > start:
                    return following
        wall = self._label(start.astimezone(self.tz))
        if self.period == "day":
            wall += timedelta(days=1)
        elif self.period == "week":
            wall += timedelta(days=7)
        else:
            wall = (wall.replace(day=28) + timedelta(days=4)).replace(day=1)
        return self._calendar_start(wall)

    def previous_start(self, start: datetime) -> datetime:
        """The start of the period before the one starting at ``start``."""
        return self.start_of(_aware(start, "start") - _EPSILON)

    def period_id(self, start: datetime) -> str:
        """The period's name in keys: ``2026-11-23T14+0100`` (hour), ``2026-11-23`` (day),
        ``2026-W48`` (ISO week), ``2026-11`` (month), ``2026-11-23T143000+0100`` (the local
        start of a timedelta period)."""
        local = _aware(start, "start").astimezone(self.tz)
        if self.period == "hour":
            return local.strftime("%Y-%m-%dT%H%z")
        if self.period == "day":
            return local.strftime("%Y-%m-%d")
        if self.period == "week":
            year, week, _ = local.isocalendar()
            return f"{year}-W{week:02d}"
        if self.period == "month":
            return local.strftime("%Y-%m")
        return local.strftime("%Y-%m-%dT%H%M%S%z")


def _check_keep(keep: int) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int):
        raise TypeError(f"keep must be an int, not {type(keep).__name__}")
    if keep < 1:
        raise ValueError("keep must be at least 1 (the current period)")
    return keep


def _check_grace(grace: timedelta) -> timedelta:
    if not isinstance(grace, timedelta):
        raise TypeError(f"grace must be a timedelta, not {type(grace).__name__}")
    if grace < timedelta(0):
        raise ValueError("grace must not be negative")
    return grace


MAX_CLOCK_SKEW = timedelta(minutes=5)
"""How far a client's clock may be off the server's: within it, a write the server refuses
(its clock says another period) is sent again on the server's time, which the board keeps
following; beyond it, the write raises ``ClockSkewError`` (nothing was changed)."""


def _clock_skew_error(message: str, server_time: datetime) -> ClockSkewError:
    error = ClockSkewError(message)
    error.server_time = server_time
    return error


class ServerClock:
    """A board's time: its clock (``clock``: the system's, or one injected), corrected by the
    server's. The server decides (see the module); when it refuses a write because its clock
    says another period, the board learns the difference (``_follow_server``) and its ``now()``
    is the server's from then on."""

    clock: Clock
    """The client's clock: a callable returning an aware datetime."""
    _skew = timedelta(0)  # the server's clock minus the client's, as last seen

    def now(self) -> datetime:
        """The server's time as this client knows it: its clock, corrected by the difference the
        server last showed (an aware datetime, UTC)."""
        return _aware(self.clock(), "clock()") + self._skew

    def _follow_server(self, error: ClockSkewError) -> None:
        """After the server refused a write for the period it named: keep the difference between
        the clocks, or raise ``ClockSkewError`` if it is more than ``MAX_CLOCK_SKEW``."""
        own = _aware(self.clock(), "clock()")
        skew = error.server_time - own
        if abs(skew) > MAX_CLOCK_SKEW:
            raise _clock_skew_error(
                f"this client's clock ({own.isoformat()}) is {skew} off the server's "
                f"({error.server_time.isoformat()}): more than MAX_CLOCK_SKEW "
                f"({MAX_CLOCK_SKEW}); nothing was changed ({error})",
                error.server_time,
            ) from None
        self._skew = skew


class PeriodClock(ServerClock):
    """What a board of periods (a periodic board, a league) holds about time: its ``Periods``,
    its clock, and the questions answered from them."""

    periods_of: Periods

    def _start_clock(self, periods: Periods, clock: Any) -> None:
        """Keeps the periods and the clock (checked: the constructor's argument)."""
        self.periods_of = periods
        if clock is not None and not callable(clock):
            raise TypeError("clock must be a callable returning an aware datetime")
        self.clock = clock or _system_clock

    @property
    def period(self) -> Period:
        """The period: ``"hour"``, ``"day"``, ``"week"``, ``"month"`` or a ``timedelta``."""
        return self.periods_of.period

    @property
    def tz(self) -> tzinfo:
        """The time zone periods are named and begin in."""
        return self.periods_of.tz

    def period_id(self, when: Optional[datetime] = None) -> str:
        """The id of the period holding ``when`` (default: now)."""
        moment = self.now() if when is None else when
        return self.periods_of.period_id(self.periods_of.start_of(moment))

    def _next_start(self) -> datetime:
        """When the current period ends (the next one begins): an aware datetime in ``tz``."""
        start = self.periods_of.start_of(self.now())
        return self.periods_of.next_start(start).astimezone(self.tz)


# --- periodic boards ----------------------------------------------------------------------------
# Each class below is written once: its methods that talk to Redis are one-trip methods and
# plans (see _drive), run as plain methods by the sync classes (_sync) and as coroutines by the
# asyncio ones (_async).

B = TypeVar("B", bound="PeriodState")
T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


CLOCK_ROUNDS = 3


class _PeriodMoved(PeriodClosed):
    """The server refused a write to the period that was current: its clock is in another."""


"""How often a write through the current period is sent after the server refused the period
its clock named (each time on the server's time, so once is the rule: at a period boundary)."""


def on_current(method: one_trip[P, R]) -> one_trip[P, R]:
    """A periodic board's ``method``: the plain board's one-trip ``method`` run on its current
    period's board (same parameters, result and Redis cost; one more Python call)."""
    function = method.function

    def forwarded(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> Sent[R]:
        return function(self.current(), *args, **kwargs)

    functools.update_wrapper(forwarded, function)  # name, signature (for help() and docs)
    forwarded.__doc__ = f"The current period's ``RedisLeaderboard.{function.__name__}``."
    return one_trip(forwarded)


class CurrentPeriodQueries:
    """Every query of a plain board, run on the board of the current period (``current()``):
    what a periodic board and a tournament forward alike (written once here)."""

    get_top = on_current(LeaderboardBase.get_top)
    get_around_rank = on_current(LeaderboardBase.get_around_rank)
    get_rank = on_current(LeaderboardBase.get_rank)
    get_user_metadata = on_current(LeaderboardBase.get_user_metadata)
    get_user_entry = on_current(LeaderboardBase.get_user_entry)
    list_all = on_current(LeaderboardBase.list_all)
    get_size = on_current(LeaderboardBase.get_size)
    get_around_user = on_current(LeaderboardBase.get_around_user)
    get_page = on_current(LeaderboardBase.get_page)
    get_entries = on_current(LeaderboardBase.get_entries)
    get_by_score = on_current(LeaderboardBase.get_by_score)
    count_by_score = on_current(LeaderboardBase.count_by_score)
    rank_for_score = on_current(LeaderboardBase.rank_for_score)
    get_percentile = on_current(LeaderboardBase.get_percentile)
    score_at_percentile = on_current(LeaderboardBase.score_at_percentile)
    get_histogram = on_current(LeaderboardBase.get_histogram)


class PeriodicBase(PeriodClock, CurrentPeriodQueries, Generic[B]):
    """A periodic board ([`PeriodicLeaderboard`][redis_leaderboard.PeriodicLeaderboard], sync or
    asyncio): the periods, the clock, the boards, and the guide's methods on the current period's
    board."""

    _board_class: type[B]
    _client_class: Any  # the public class's

    def __init__(
        self,
        redis_client: Any = None,
        key: str = "leaderboard:demo",
        period: Period = "day",
        *,
        tz: Union[str, tzinfo] = "UTC",
        keep: int = 2,
        max_entries: Optional[int] = 100,
        order: Order = "desc",
        ties: Ties = "lexicographic",
        grace: timedelta = timedelta(0),
        anchor: Optional[datetime] = None,
        clock: Optional[Clock] = None,
        url: Optional[str] = None,
        submission_ttl: float = 86400,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        events_maxlen: int = 10000,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
        tiebreak: Optional[Sequence[tuple[str, Order]]] = None,
        layout: Layout = "guide",
    ) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty str")
        # Every period's board has the guards (idempotency, rate limit, events, score limits)
        # and the tie-break columns.
        self.guards: dict[str, Any] = {
            "tiebreak": tiebreak,
            "layout": layout,
            "submission_ttl": submission_ttl,
            "rate_limit": rate_limit,
            "events": events,
            "events_maxlen": events_maxlen,
            "score_range": score_range,
            "max_increment": max_increment,
        }
        Board(key, max_entries, order=order, ties=ties, **self.guards)  # validates them
        self._start_clock(Periods(period, tz, anchor), clock)
        self.keep = _check_keep(keep)
        """How many periods are kept, the current one included."""
        self.grace = _check_grace(grace)
        """How long after its end a period still takes writes sent to it explicitly."""
        self.redis = make_client(redis_client, url, self._client_class)
        self._run: Runner = self.redis.run
        self.key = key
        """The periodic board's key: each period's board is at ``f"{key}:{period_id}"``."""
        self.max_entries = max_entries
        """Each period's board's size limit (None: unlimited)."""
        self.order: Order = order
        """``"desc"`` or ``"asc"``, as
        [`RedisLeaderboard.order`][redis_leaderboard.RedisLeaderboard.order]."""
        self.ties: Ties = ties
        """The tie rule of every period's board."""
        self._boards: dict[tuple[datetime, bool], B] = {}
        # The current period's board: while the clock is within its bounds, current() needs
        # no period arithmetic (the time zone's rules).
        self._current: Optional[B] = None

    def expire_at(self, start: datetime) -> datetime:
        """When the period starting at ``start`` expires: once ``keep`` newer periods have begun
        (at the start of the ``keep``-th period after it), and never before its end plus
        ``grace``."""
        end = self.periods_of.next_start(start)
        deadline = end
        for _ in range(self.keep - 1):
            deadline = self.periods_of.next_start(deadline)
        return max(deadline, end + self.grace)

    def _board_at(self, start: datetime, explicit: bool = True) -> B:
        board = self._boards.get((start, explicit))
        if board is None:
            if len(self._boards) > 2 * self.keep + 8:
                self._boards.clear()
                self._current = None
            board = self._board_class(
                self.redis,
                key=f"{self.key}:{self.periods_of.period_id(start)}",
                max_entries=self.max_entries,
                order=self.order,
                ties=self.ties,
                guards=self.guards,
                periodic=self,
                start=start,
                explicit=explicit,
            )
            self._boards[(start, explicit)] = board
        return board

    def current(self) -> B:
        """The board of the period the clock is in now."""
        now = self.now()
        board = self._current
        if board is not None and board.start <= now < board.end:
            return board
        board = self._board_at(self.periods_of.start_of(now), False)
        self._current = board
        return board

    def at(self, when: datetime) -> B:
        """The board of the period holding the aware datetime ``when`` (any period: reading an
        expired one finds it empty). Its writes are that period's, whatever the clock says: the
        server refuses them (``PeriodClosed``) before the period begins and once it ended more
        than ``grace`` ago on the server's clock."""
        return self._board_at(self.periods_of.start_of(when))

    def previous(self, n: int = 1) -> B:
        """The board of the ``n``-th period before the current one."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"n must be an int, not {type(n).__name__}")
        if n < 0:
            raise ValueError("n must not be negative")
        start = self.periods_of.start_of(self.now())
        for _ in range(n):
            start = self.periods_of.previous_start(start)
        return self._board_at(start)

    def periods(self) -> list[str]:
        """The ids of the kept periods, newest (the current one) first."""
        start = self.periods_of.start_of(self.now())
        ids = [self.periods_of.period_id(start)]
        for _ in range(self.keep - 1):
            start = self.periods_of.previous_start(start)
            ids.append(self.periods_of.period_id(start))
        return ids

    def next_reset(self) -> datetime:
        """When the current period ends (the next one begins): an aware datetime in ``tz``."""
        return self._next_start()

    def __repr__(self) -> str:
        return (
            f"{self._display_name}(key={self.key!r}, period={self.period!r}, "
            f"tz={str(self.tz)!r}, keep={self.keep}, max_entries={self.max_entries})"
        )

    @property
    def _display_name(self) -> str:
        return _display_name(self)

    def _group_member(self, mode: str) -> tuple[Any, str, int]:
        """As one of a [`LeaderboardGroup`][redis_leaderboard.LeaderboardGroup]'s boards: the
        current period's board."""
        return (self.current()._board, mode, 0)

    # -- the guide's methods, on the current period's board --------------------------------

    @plan
    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[WriteResult]:
        """As [`RedisLeaderboard.upsert_user`][redis_leaderboard.RedisLeaderboard.upsert_user], on
        the current period's board.

        Redis cost:
            As ``RedisLeaderboard.upsert_user`` (one round trip, one script), plus a PEXPIREAT of
            every key it writes at the period's deadline.
        """
        result: WriteResult = yield from self._on_current(
            PeriodState.upsert_user, user_id, score, metadata
        )
        return result

    @plan
    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[WriteResult]:
        """As
        [`RedisLeaderboard.increment_score`][redis_leaderboard.RedisLeaderboard.increment_score], on
        the current period's board.

        Redis cost:
            As ``RedisLeaderboard.increment_score``, plus a PEXPIREAT of every key it writes.
        """
        result: WriteResult = yield from self._on_current(
            PeriodState.increment_score, user_id, amount, metadata
        )
        return result

    @plan
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> Plan[SubmitResult]:
        """As [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit], on the current
        period's board.

        The result says the ``"period"`` written. A ``submission_id`` is the periodic board's,
        whatever the period: a resend after the period changed writes nothing and returns the first
        result (``"duplicate": True``, ``"period"`` the first write's).

        Redis cost:
            As ``RedisLeaderboard.submit`` (one round trip, one script), plus a PEXPIREAT of every
            key it writes.
        """
        result: SubmitResult = yield from self._on_current(
            PeriodState.submit,
            user_id,
            score,
            metadata,
            mode=mode,
            submission_id=submission_id,
            retries=retries,
            tiebreak=tiebreak,
        )
        return result

    def _on_current(self, method: Any, *args: Any, **kwargs: Any) -> Plan[Any]:
        """The period board's write ``method`` (a ``plan``) on the current period's board; sent
        again to the server's period when the server's clock is in another one."""
        for _ in range(CLOCK_ROUNDS):
            try:
                return (yield from method.plan(self.current(), *args, **kwargs))
            except _PeriodMoved:  # the server's clock is in another period: now ours too
                pass
        raise _clock_skew_error(
            f"the server refused the period of {self.key!r} {CLOCK_ROUNDS} times: its clock "
            "moves unlike this client's; nothing was changed",
            self.now(),
        )

    # delete_user, as every query (CurrentPeriodQueries): the plain board's, on the current
    # period's board.
    delete_user = on_current(LeaderboardBase.delete_user)

    # -- fair play: hidden players, from the current period on ----------------------------

    @one_trip
    def hide(self, user_id: str) -> Sent[bool]:
        """Hide a player from the current period and every later one, as
        [`RedisLeaderboard.hide`][redis_leaderboard.RedisLeaderboard.hide] (the periodic
        board records them in ``f"{key}:hidden"``, which every period's write reads). An
        earlier period keeps its standings: ``previous(n).hide(user_id)`` hides them there.

        Redis cost:
            One round trip: hide.lua on the current period's board. O(log N).
        """
        board = self.current()
        return cast(Sent[bool], board._run(board._board.hide(user_id, scope=True)))

    @one_trip
    def unhide(self, user_id: str) -> Sent[bool]:
        """Show a hidden player again, from the current period on (their kept score of the
        current period back on its board). Earlier periods that hid them keep doing so.

        Redis cost:
            One round trip: hide.lua on the current period's board. O(log N).
        """
        board = self.current()
        return cast(Sent[bool], board._run(board._board.unhide(user_id, scope=True)))

    @one_trip
    def hidden(self) -> Sent[list[str]]:
        """The players hidden from the current period, in byte order.

        Redis cost:
            One round trip: hide.lua, HKEYS. O(H).
        """
        board = self.current()
        return cast(Sent[list[str]], board._run(board._board.hidden(scope=True)))

    @one_trip
    def is_hidden(self, user_id: str) -> Sent[bool]:
        """Whether a player is hidden from the current period (one of ``hidden()``).

        Redis cost:
            One round trip: hide.lua, two HEXISTS (the period's, the periodic board's). O(1).
        """
        board = self.current()
        return cast(Sent[bool], board._run(board._board.is_hidden(user_id, scope=True)))

    def events(
        self, last_id: str = "$", *, block: Optional[float] = None, count: int = EVENTS_BATCH
    ) -> Any:
        """The current period's
        [`RedisLeaderboard.events`][redis_leaderboard.RedisLeaderboard.events] (an ``EventStream``;
        under asyncio an ``AsyncEventStream``): the change events of the period current when it is
        called, from its stream ``f"{key}:{period_id}:events"`` (``events=True`` on the periodic
        board). A stream follows that one period: after a rollover the new period's writes go to the
        new period's stream, which this one never shows (it waits, or ends once ``block`` passes
        without an event); to follow the board across periods, open ``events("0")`` again after
        [`next_reset`][redis_leaderboard.PeriodicLeaderboard.next_reset] (``"0"``: from the new
        period's first event). A period's stream expires with the period's other keys."""
        stream: Any = self.current().events(  # type: ignore[attr-defined]  # the board class's
            last_id, block=block, count=count
        )
        return stream


def _display_name(obj: object) -> str:
    """The class's name in reprs: ``redis_leaderboard.asyncio.<name>`` for the asyncio twins."""
    name = type(obj).__name__
    return f"redis_leaderboard.asyncio.{name}" if isinstance(obj, AsyncDriven) else name


class PeriodState:
    """A period's board ([`PeriodBoard`][redis_leaderboard.seasons.PeriodBoard], sync or asyncio):
    its period's id, bounds and deadline, and the writes, refused once the period takes no more."""

    _board: Board
    _run: Runner  # the plain board's (a period's board is one)

    def __init__(
        self,
        redis_client: Any,
        key: str,
        max_entries: Optional[int],
        *,
        order: Order,
        ties: Ties,
        guards: Mapping[str, Any],
        periodic: PeriodicBase[Any],
        start: datetime,
        explicit: bool = True,
    ) -> None:
        self.periodic = periodic
        self.start = start
        self.end = periodic.periods_of.next_start(start)
        self.period = periodic.periods_of.period_id(start)
        self.expires = periodic.expire_at(start)
        # When, on the server's clock, a write belongs to this period: the period itself for the
        # current period's writes (at the boundary the server's clock decides, and the periodic
        # board sends the write again to the next period); up to ``grace`` after its end for a
        # period named explicitly (at(), previous()).
        self.explicit = explicit
        self.open_until = self.end + periodic.grace if explicit else self.end
        super().__init__(  # type: ignore[call-arg]  # the board class after this one
            redis_client,
            key,
            max_entries,
            order=order,
            ties=ties,
            _expire_at=_millis(self.expires),
            # A submission id belongs to the submission, not to the period it landed on: every
            # period records ids under the periodic board's key, so a resend after a boundary
            # finds the first write's record and returns its result (and period).
            _submission_scope=periodic.key,
            _open_span=(_millis(start), _millis(self.open_until)),
            **guards,
        )

    def _closed(self, error: ClockSkewError) -> PeriodClosed:
        """The server refused a write to this period named explicitly: ``PeriodClosed``, naming
        the period, when it takes writes, and the server's time."""
        tz = self.periodic.tz
        server = error.server_time.astimezone(tz).isoformat()
        if error.server_time < self.start:
            why = f"begins at {self.start.astimezone(tz).isoformat()}"
        else:
            why = (
                f"ended at {self.end.astimezone(tz).isoformat()} and takes no writes after "
                f"{self.open_until.astimezone(tz).isoformat()} (grace {self.periodic.grace})"
            )
        return PeriodClosed(
            f"period {self.period} of {self.periodic.key!r} {why}; the server's clock says "
            f"{server}; nothing was changed"
        )

    def _written(self, steps: Plan[T]) -> Plan[T]:
        """A write's plan, the server's refusal of its period raised as ``PeriodClosed``: on a
        period named explicitly, as it is; on the period that was current, after the periodic
        board took the server's time (its own writes then go to the server's period)."""
        try:
            return (yield from steps)
        except ClockSkewError as error:
            if not self.explicit:  # the periodic board's time: the server's from now on
                self.periodic._follow_server(error)
                raise _PeriodMoved(str(self._closed(error))) from None
            raise self._closed(error) from None

    def _group_member(self, mode: str) -> tuple[Any, str, int]:
        """As one of a [`LeaderboardGroup`][redis_leaderboard.LeaderboardGroup]'s boards (the
        server refuses the write if the period takes no writes then)."""
        return (self._board, mode, 0)

    @plan
    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[WriteResult]:
        """As [`RedisLeaderboard.upsert_user`][redis_leaderboard.RedisLeaderboard.upsert_user], if
        the period takes writes on the server's clock (else ``PeriodClosed``)."""
        return (
            yield from self._written(self._one(self._board.upsert_user(user_id, score, metadata)))
        )

    @plan
    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[WriteResult]:
        """As
        [`RedisLeaderboard.increment_score`][redis_leaderboard.RedisLeaderboard.increment_score], if
        the period takes writes on the server's clock (else ``PeriodClosed``)."""
        operation = self._board.increment_score(user_id, amount, metadata)
        return (yield from self._written(self._one(operation)))

    @plan
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> Plan[SubmitResult]:
        """As [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit], if the period
        takes writes on the server's clock (else ``PeriodClosed``)."""
        operation = self._board.submit(
            user_id,
            score,
            metadata,
            mode=mode,
            submission_id=submission_id,
            retries=retries,
            tiebreak=tiebreak,
        )
        return (yield from self._written(self._one(operation)))

    @staticmethod
    def _one(operation: Operation[T]) -> Plan[T]:
        result: T = yield operation
        return result

    @plan
    def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> Plan[ImportSummary]:
        """As [`RedisLeaderboard.upsert_many`][redis_leaderboard.RedisLeaderboard.upsert_many], if
        the period takes writes on the server's clock (else ``PeriodClosed``, raised by the chunk
        the server refused: the chunks before it were written)."""
        return (
            yield from self._written(
                LeaderboardBase.upsert_many.plan(
                    self, entries, chunk_size=chunk_size, progress=progress, retries=retries
                )
            )
        )

    def __repr__(self) -> str:
        return f"{_display_name(self)}(key={self._board.key!r}, expires={self.expires.isoformat()})"


# --- rolling windows ----------------------------------------------------------------------------


def _whole_millis(value: timedelta, what: str) -> int:
    if not isinstance(value, timedelta):
        raise TypeError(f"{what} must be a timedelta, not {type(value).__name__}")
    if value <= timedelta(0) or value % timedelta(milliseconds=1):
        raise ValueError(f"{what} must be a positive whole number of milliseconds")
    return value // timedelta(milliseconds=1)


class RollingState(ServerClock):
    """A rolling window ([`RollingLeaderboard`][redis_leaderboard.RollingLeaderboard], sync or
    asyncio): the window, its buckets, the clock, and the writes; the reads are the board class's,
    each run after the window's refresh."""

    _window: Window
    clock: Clock
    redis: Any
    _run: Callable[[Operation[Any]], Any]

    def __init__(
        self,
        redis_client: Any = None,
        key: str = "leaderboard:demo",
        window: timedelta = timedelta(days=7),
        bucket: timedelta = timedelta(hours=1),
        aggregate: Aggregate = "sum",
        max_entries: Optional[int] = 100,
        *,
        order: Order = "desc",
        clock: Optional[Clock] = None,
        url: Optional[str] = None,
        submission_ttl: float = 86400,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        events_maxlen: int = 10000,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
    ) -> None:
        bucket_ms = _whole_millis(bucket, "bucket")
        window_ms = _whole_millis(window, "window")
        if window_ms % bucket_ms:
            raise ValueError("window must be a whole number of buckets")
        window_ = Window(  # validates the guards before anything else is made
            key,
            bucket_ms,
            window_ms,
            aggregate=aggregate,
            max_entries=max_entries,
            order=order,
            submission_ttl=submission_ttl,
            rate_limit=rate_limit,
            events=events,
            events_maxlen=events_maxlen,
            score_range=score_range,
            max_increment=max_increment,
        )
        super().__init__(  # type: ignore[call-arg]  # the board class after this one
            redis_client, key, max_entries, url=url, order=order, submission_ttl=submission_ttl
        )
        self._window = window_
        if clock is not None and not callable(clock):
            raise TypeError("clock must be a callable returning an aware datetime")
        self.clock = clock or _system_clock
        """The client's clock (the bucket is the server's: see ``ServerClock``)."""
        run = self.redis.run
        self._run = lambda read: run(self._refreshed(read))

    @property
    def window(self) -> timedelta:
        """How far back the board looks."""
        return timedelta(milliseconds=self._window.window_ms)

    @property
    def bucket(self) -> timedelta:
        """The length of a bucket: the window slides by whole buckets."""
        return timedelta(milliseconds=self._window.bucket_ms)

    @property
    def aggregate(self) -> str:
        """How a user's bucket scores combine: ``"sum"``, ``"max"`` or ``"min"``."""
        return self._window.aggregate

    @property
    def rate_limit(self) -> Optional[tuple[int, float]]:
        """``(max_writes, per_seconds)`` per user, whatever the bucket, or None."""
        return self._window.rate_limit

    @property
    def score_range(self) -> Optional[tuple[Optional[float], Optional[float]]]:
        """``(min, max)``: the lowest and highest score a write may leave in the user's bucket
        (either None: no bound), or None (fair play; see
        [`submit`][redis_leaderboard.RollingLeaderboard.submit])."""
        return self._window.score_range

    @property
    def max_increment(self) -> Optional[float]:
        """The most one write may improve the user's bucket score by (in the window's order), or
        None (fair play)."""
        return self._window.max_increment

    @property
    def events_enabled(self) -> bool:
        """Whether writes append change events to ``f"{key}:events"`` (``events=True``);
        [`events`][redis_leaderboard.RollingLeaderboard.events] reads them."""
        return self._window.events

    def bucket_at(self, when: Optional[datetime] = None) -> int:
        """The bucket holding ``when`` (default: now): unix ms // bucket length."""
        moment = self.now() if when is None else _aware(when, "when")
        return _millis(moment) // self._window.bucket_ms

    def bucket_start(self, bucket: int) -> datetime:
        """When bucket ``bucket`` begins (UTC)."""
        return _EPOCH + timedelta(milliseconds=bucket * self._window.bucket_ms)

    def window_start(self) -> datetime:
        """The start of the oldest bucket in the window now: scores written before it are out."""
        return self.bucket_start(self.bucket_at() - self._window.buckets + 1)

    def _refreshed(self, read: Operation[T]) -> Operation[T]:
        return self._window.refreshed(read)

    def events(
        self, last_id: str = "$", *, block: Optional[float] = None, count: int = EVENTS_BATCH
    ) -> Any:
        """The window's change events after ``last_id``, oldest first, as they come (an
        ``EventStream``; under asyncio an ``AsyncEventStream``), from the stream
        ``f"{key}:events"`` that writes append to with ``events=True``: read as
        [`RedisLeaderboard.events`][redis_leaderboard.RedisLeaderboard.events]'s, the same fields.

        Each applied write (``submit``, ``upsert_user``, ``increment_score``, a group write) that
        changed the user's window aggregate or trimmed someone appends a ``"score"`` event about the
        window's board: ``"score"`` the user's aggregate over the window (as the write's result
        says it), ``"rank"`` its rank (None if the write was trimmed away), ``"previous_score"`` and
        ``"previous_rank"`` the ones before the write (the window already brought to the bucket),
        ``"overtaken"`` and ``"trimmed_user_ids"`` as a plain board's. A write that leaves the
        aggregate as it was (a ``"best"`` no better than the bucket's score) appends nothing.

        A bucket leaving the window appends nothing: the transition rewrites the aggregates of
        every user of the leaving bucket at once, in steps that readers and writers drive (or one
        RENAME of the window ahead), and an event each would cost more than the step (about
        12 µs an XADD: 4.8 ms for 400 entries against a step's ~2 ms) and fill the stream; a
        watcher knows when it happens (at each
        [`bucket_start`][redis_leaderboard.RollingLeaderboard.bucket_start]) and re-reads the
        board then. [`delete_user`][redis_leaderboard.RollingLeaderboard.delete_user] appends a
        ``"delete"`` event and [`clear`][redis_leaderboard.RollingLeaderboard.clear] a
        ``"clear"`` one, as a plain board's.

        Redis cost:
            Nothing until the first read; then one XREAD (BLOCK) per batch of at most ``count``
            events on the stream's own connection, waiting in slices of 2 s (no window refresh).
        """
        stream: Any = super().events(  # type: ignore[misc]  # the board class's
            last_id, block=block, count=count
        )
        return stream

    @staticmethod
    def _entry(result: SubmitResult) -> WriteResult:
        if result["rank"] is None:  # the write itself was trimmed away: no "rank"
            return {
                "user_id": result["user_id"],
                "score": result["score"],
                "metadata": result["metadata"],
                "trimmed_user_ids": result["trimmed_user_ids"],
            }
        return {
            "rank": result["rank"],
            "user_id": result["user_id"],
            "score": result["score"],
            "metadata": result["metadata"],
            "trimmed_user_ids": result["trimmed_user_ids"],
        }

    def _refuse(self, method: str) -> TypeError:
        return TypeError(
            f"{method}() does not apply to a rolling window ({self._window.key!r}): its scores "
            "land in the bucket of the moment, one write at a time (submit, upsert_user, "
            "increment_score), and its max_entries is fixed when it is opened"
        )

    def _group_member(self, mode: str) -> tuple[Any, str, int]:
        """As one of a [`LeaderboardGroup`][redis_leaderboard.LeaderboardGroup]'s boards: the bucket
        of the moment."""
        return (self._window, mode, self.bucket_at())

    @plan
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
        tiebreak: Optional[Mapping[str, float]] = None,
    ) -> Plan[SubmitResult]:
        """Write to the user's score in the current bucket and merge ``metadata``; the result is
        about the window's board (a window takes no tie-break columns: ``tiebreak`` raises
        ``TypeError``).

        ``mode`` as [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit], within
        the bucket. The result gives the user's aggregate over the window, its rank, the previous
        ones, and who the write pushed out of the window's ``max_entries``. ``submission_id`` and
        ``retries`` as ``RedisLeaderboard.submit``: the write applies once per id within
        ``submission_ttl`` (the id is the window's, whatever the bucket: a repeat in a later bucket
        writes nothing and returns the stored result with ``"duplicate": True``).

        Guards (the window's ``rate_limit``, ``score_range``, ``max_increment``, ``events``; as a
        plain board's, checked before anything is written, by the same code):

        - ``rate_limit``: the user's writes per ``per_seconds`` of the server's clock, whatever the
          bucket (a bucket boundary does not restart it); beyond it, ``RateLimited``
          (``retry_after``).
        - ``score_range`` and ``max_increment`` bound the user's **bucket** score, what this write
          leaves in the bucket it lands in, for every aggregate: a submission claims a score in
          its bucket. With ``"sum"`` the window's score is a total of many such claims (bounding it
          would cap how much a fair player plays, which ``rate_limit`` is for); with ``"max"`` or
          ``"min"`` it is one of the bucket scores, so it is bounded as well. ``max_increment``:
          the most this write may improve the bucket's score by, in the window's order (a first
          score in a bucket is a new entry's: ``"incr"`` counts from 0). Beyond either,
          ``ScoreRejected`` (a ``ValueError``); a write leaving the bucket's score as it was is
          never refused.
        - ``events``: a ``"score"`` event about the window's board (see
          [`events`][redis_leaderboard.RollingLeaderboard.events]).
        - A resend of an applied ``submission_id`` answers its first result, never refused by a
          limit. The guards are recorded in ``f"{key}:options"`` by the first write that carries
          them; a client with other guards (or none) raises ``OptionsMismatch`` (a
          ``ValueError``) and writes nothing.

        Raises:
            RateLimited: The window's ``rate_limit`` refused the write (nothing changed).
            ScoreRejected: The window's score limits refused it (nothing changed).
            OptionsMismatch: The window records other options or guards (nothing changed).

        Redis cost:
            One round trip, one script: the bucket's ZADD/ZINCRBY, the window's update (the
            user's aggregate read from ``f"{key}:window:all"``, or counted from the buckets, one
            ZSCORE each, when a max/min score is lowered or sums are not integers) and the window
            ahead's (``f"{key}:window:ahead"``, the same way), PEXPIREATs, and a slice (~32
            entries) of the window ahead's job while one is under way; once per bucket, the
            window moved on first: the window ahead renamed into place (the union refilled),
            or, when it is not ready, the buckets that leave subtracted, in steps of about 400
            entries, a round trip each (the write is sent again after each). The options hash's
            HGETALL (a window without guards: nothing more); with guards, a plain board's guard
            work in the same script: the rate window's ZCOUNT, ZREMRANGEBYSCORE, ZADD and
            PEXPIRE, the event's XADD (with the user's rank and a ZRANGE of at most 10 entries
            for ``"overtaken"``), the options' HSET on the first write.
        """
        if tiebreak is not None:
            raise TypeError(
                f"a rolling window ({self._window.key!r}) has no tie-break columns: its board is "
                "the union of its buckets"
            )
        results = yield group_write(  # positional: cheaper than keywords
            [(self._window, mode, self.bucket_at())],
            user_id,
            score,
            metadata,
            submission_id,
            retries,
        )
        result: SubmitResult = results[0]
        return result

    @plan
    def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[WriteResult]:
        """Set the user's score in the current bucket; returns the window's entry.

        Redis cost:
            As [`submit`][redis_leaderboard.RollingLeaderboard.submit].
        """
        return self._entry((yield from RollingState.submit.plan(self, user_id, score, metadata)))

    @plan
    def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Plan[WriteResult]:
        """Add ``amount`` to the user's score in the current bucket; returns the window's entry.

        Redis cost:
            As [`submit`][redis_leaderboard.RollingLeaderboard.submit].
        """
        written = yield from RollingState.submit.plan(self, user_id, amount, metadata, mode="incr")
        return self._entry(written)

    @plan
    def delete_user(self, user_id: str) -> Plan[bool]:
        """Remove the user from the window's board, from every bucket, and its metadata. With
        ``events``, appends a ``"delete"`` event (the user's window score and rank) if the user was
        on the window's board, as a plain board's ``delete_user``; a client without ``events`` on
        a window whose writes record them raises ``OptionsMismatch`` (its removal would leave
        watchers without the event).

        Redis cost:
            One round trip, one script: the options hash's HGETALL, a ZREM per bucket in the
            window, and the metadata's UNLINK; with ``events``, a ZSCORE, the rank and an XADD.
        """
        result: bool = yield self._window.delete_user(user_id)
        return result

    @plan
    def clear(self) -> Plan[None]:
        """Remove every bucket, the window's board and the metadata of everyone in them (and
        the recorded options). With ``events``, appends one ``"clear"`` event (``"removed"``: the
        users whose traces it removed; ``"size"`` 0); a client without ``events`` on a window whose
        writes record them raises ``OptionsMismatch``. The event stream and the rate windows stay,
        as a plain board's.

        Redis cost:
            One round trip, one script: O(entries in the window); with ``events``, an XADD.
        """
        yield self._window.clear()

    @plan
    def set_max_entries(self, max_entries: Optional[int]) -> Plan[list[str]]:
        """Refused (``TypeError``): a window's max_entries is fixed when it is opened.

        Redis cost:
            None: it raises before anything is sent.
        """
        raise self._refuse("set_max_entries")  # at the call: no step to run

    @plan
    def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> Plan[ImportSummary]:
        """Refused (``TypeError``): a window's scores land one write at a time.

        Redis cost:
            None: it raises before anything is sent.
        """
        raise self._refuse("upsert_many")

    def _refuse_hiding(self, method: str) -> TypeError:
        return TypeError(
            f"{method}() does not apply to a rolling window ({self._window.key!r}): its board is "
            "computed from its buckets; hide players on a plain or periodic board"
        )

    @one_trip
    def hide(self, user_id: str) -> Sent[bool]:
        """Refused (``TypeError``): a window's board is computed from its buckets.

        Redis cost:
            None: it raises before anything is sent.
        """
        raise self._refuse_hiding("hide")

    @one_trip
    def unhide(self, user_id: str) -> Sent[bool]:
        """Refused (``TypeError``), as ``hide``.

        Redis cost:
            None: it raises before anything is sent.
        """
        raise self._refuse_hiding("unhide")

    @one_trip
    def hidden(self) -> Sent[list[str]]:
        """Refused (``TypeError``), as ``hide``.

        Redis cost:
            None: it raises before anything is sent.
        """
        raise self._refuse_hiding("hidden")

    @one_trip
    def is_hidden(self, user_id: str) -> Sent[bool]:
        """Refused (``TypeError``), as ``hide``.

        Redis cost:
            None: it raises before anything is sent.
        """
        raise self._refuse_hiding("is_hidden")

    def __repr__(self) -> str:
        w = self._window
        options = f", order={w.order!r}" if w.order != "desc" else ""
        options += guards_repr(w)
        return (
            f"{_display_name(self)}(key={w.key!r}, window={self.window!r}, "
            f"bucket={self.bucket!r}, aggregate={self.aggregate!r}, "
            f"max_entries={w.max_entries}{options})"
        )


# --- one write, many boards ---------------------------------------------------------------------

GroupMode = Union[WriteMode, Mapping[Any, WriteMode]]
"""A group write's mode: one for every board, or one per board, keyed by the board objects
given to the group (or by their keys)."""


class GroupResult(Mapping[Any, SubmitResult]):
    """[`LeaderboardGroup.submit`][redis_leaderboard.LeaderboardGroup.submit]'s result: each
    board's own ``submit()`` result, keyed by the board objects given to the group, in the
    group's order (``result[weekly]``); a board's key finds its result too
    (``result["lb:weekly"]``). Iterating gives the boards; ``by_key()`` a plain dict keyed by
    their keys. Each result's ``"duplicate"`` (with a submission id) tells whether this call
    applied the write to that board (``False``, a resend of this same call included) or another
    call had (``True``)."""

    __slots__ = ("_boards", "_results")

    def __init__(self, boards: Sequence[Any], results: Sequence[SubmitResult]) -> None:
        self._boards = list(boards)
        self._results = list(results)

    def __getitem__(self, board: Any) -> SubmitResult:
        i = _board_index(self._boards, board)
        if i is None:
            raise KeyError(board)
        return self._results[i]

    def __contains__(self, board: object) -> bool:
        return _board_index(self._boards, board) is not None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._boards)

    def __len__(self) -> int:
        return len(self._boards)

    def by_key(self) -> dict[str, SubmitResult]:
        """``{board key: result}``, in the group's order."""
        return {board.key: result for board, result in zip(self._boards, self._results)}

    def __repr__(self) -> str:
        return f"GroupResult({self.by_key()!r})"


def _board_index(boards: Sequence[Any], board: Any) -> Optional[int]:
    """Where ``board`` (a board object, or a board's key) is among ``boards``; None if absent."""
    for i, member in enumerate(boards):
        if member is board or (isinstance(board, str) and member.key == board):
            return i
    return None


class GroupBase:
    """A group ([`LeaderboardGroup`][redis_leaderboard.LeaderboardGroup], sync or asyncio): the
    boards and the write."""

    _client_class: Any  # the public class's

    def __init__(self, redis_client: Any, boards: Sequence[Any], *, url: Optional[str] = None):
        boards = list(boards)
        if not boards:
            raise ValueError("a group needs at least one board")
        keys = []
        for board in boards:
            # A board joins a group by having _group_member(); sharded boards have none (their
            # shards are in other slots, one script cannot write them).
            same_api = isinstance(board, AsyncDriven) == isinstance(self, AsyncDriven)
            if not hasattr(board, "_group_member") or not same_api:
                raise TypeError(
                    "a group's boards are RedisLeaderboard, PeriodicLeaderboard or "
                    f"RollingLeaderboard objects of the same API (sync or asyncio), not "
                    f"{type(board).__name__}"
                )
            keys.append(board.key)
        if len(set(keys)) != len(keys):
            raise ValueError(f"a board is twice in the group: {keys}")
        self.boards = boards
        """The group's boards, in the order given."""
        self.keys = keys
        """The boards' keys, in the same order."""
        self.redis = make_client(redis_client, url, self._client_class)

    def _request(
        self,
        user_id: str,
        score: float,
        metadata: Any,
        mode: GroupMode,
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> Operation[list[SubmitResult]]:
        if isinstance(mode, str):
            modes: list[Any] = [mode] * len(self.boards)
        elif isinstance(mode, Mapping):
            modes = [None] * len(self.boards)
            unknown, twice = [], []
            for board, board_mode in mode.items():
                i = _board_index(self.boards, board)
                if i is None:
                    unknown.append(board if isinstance(board, str) else repr(board))
                    continue
                if modes[i] is not None:
                    twice.append(self.keys[i])
                modes[i] = board_mode
            missing = [key for key, m in zip(self.keys, modes) if m is None]
            if missing or unknown or twice:
                raise ValueError(
                    "mode must name every board of the group once (by the board or its key): "
                    f"missing {missing}, unknown {unknown}, named twice {twice}"
                )
        else:
            raise TypeError(
                f"mode must be a str or a mapping of boards (or their keys) to str, not {mode!r}"
            )
        members = [board._group_member(m) for board, m in zip(self.boards, modes)]
        return group_write(members, user_id, score, metadata, submission_id, retries)

    @plan
    def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: GroupMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> Plan[GroupResult]:
        """Returns each board's ``submit()`` result, keyed by the board objects given to the group
        (or by their keys: [`GroupResult`][redis_leaderboard.GroupResult]); a periodic board's
        with ``"period"``, the period written; a rolling window's about the window's board.
        ``mode``: one for every board, or one per board keyed by the boards (or their keys).

        ``submission_id``: every board applies the write once, as its own
        [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit] with that id would
        (its record ``f"{board key}:submission:{id}"``, kept for that board's ``submission_ttl``),
        all in the one atomic script: a repeat writes nothing and returns each board's stored result
        with ``"duplicate": True`` (``False`` the first time). A write whose reply was lost is
        resent on a new connection, at most ``retries`` times, then raises ``ConnectionError``. The
        id belongs to the submission, not to the period it landed on: a periodic board records it
        under its own key, so a repeat after the period changed returns the first result, its
        ``"period"`` the first write's. An id applied for another user or payload raises
        [`SubmissionIdReused`][redis_leaderboard.SubmissionIdReused] and writes nothing.

        Redis cost:
            One round trip, one script (every board planned, then written); per board, a plain
            write's commands (O(log N) each), plus a GET and a SET of its id's record with a
            ``submission_id``."""
        for _ in range(CLOCK_ROUNDS):
            try:
                results = yield self._request(
                    user_id, score, metadata, mode, submission_id, retries
                )
            except ClockSkewError as error:  # nothing was written
                self._follow_server(error)
                continue
            return GroupResult(self.boards, results)
        raise _clock_skew_error(
            f"the server refused the periods of {self.keys!r} {CLOCK_ROUNDS} times: its clock "
            "moves unlike this client's; nothing was changed",
            datetime.now(UTC),
        )

    def _follow_server(self, error: ClockSkewError) -> None:
        """The server refused a member's period: a periodic board's current one takes the
        server's time (the write is sent again); a period named explicitly raises
        ``PeriodClosed``."""
        text = str(error)
        refused = text.partition(" board ")[2].rpartition(" takes writes from ")[0]
        for board in self.boards:
            if isinstance(board, PeriodicBase) and refused.startswith(board.key + ":"):
                board._follow_server(error)
                return
            if isinstance(board, PeriodState) and refused == board._board.key:
                raise board._closed(error) from None
        raise error

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.keys!r})"
