"""Team boards: players' scores on one board, their teams (clans, guilds) ranked by the members'
contributions on another, kept together by one script per write (``team.lua``).

Layout (a team board ``K``): the members' board ``f"{K}:members"`` and the teams' board ``K``,
each the guide's (a sorted set, metadata at ``f"{board}:user:{id}"``), so every read of
``RedisLeaderboard`` works on either (``board.members``, ``board.teams``); each team's
contributions ``f"{K}:team:{team}"`` (member -> their score); ``f"{K}:team_of"`` (member ->
team); the options in ``f"{K}:options"``. A member's write sets their score with the write's
``mode`` (as ``RedisLeaderboard.submit``), their contribution (their score) and their team's
score: the sum of its members' contributions (``aggregate="sum"``, kept by increments: exact
for whole scores while every team's total stays below 2**53; a total that would not be finite
is refused), or the best one (``"best"``). Moving a member moves their contribution in the
same script; a team with no member left leaves the teams' board. Write
through the team board only: a write straight to ``members`` or ``teams`` would not update the
other. Every method is written once for both APIs (see ``redis_leaderboard._drive``).

Shared concerns, through the mechanisms every board type uses (``lib/`` of the scripts):
submission ids (``lib/submissions.lua``: the record ``f"{K}:submission:{id}"`` keeps the whole
first result, the team's part with ``keep_rest``; the team as sent is part of the payload),
hidden members (``lib/hiding.lua``: the members' board hides them as a plain board does, in
``f"{K}:members:hidden"``), and the guards (``lib/guards.lua``, the plain board's words and
checks, on the members' board): ``rate_limit`` (each member's window ``f"{K}:rate:{member}"``),
``score_range``/``max_increment`` (a member's own score) and ``events`` (one stream,
``f"{K}:events"``: the member's change as a plain board's event, then a ``"team"`` event per team
whose score changed). The guards are recorded in ``f"{K}:members:options"`` as a plain board
records them, and a client with others is refused (``OptionsMismatch``).

A hidden member has no contribution: a team's score is its visible members' (sum or best); a team
whose members are all hidden leaves the teams' board until one is shown again. A hidden member's
writes are judged as anyone's (mode, submission id) and kept aside with their score, their team's
score unchanged (a write naming a team moves them there, without a contribution); ``unhide`` puts
the kept score back on the members' board and into the team they are in then.
"""

from __future__ import annotations

import functools
from typing import Any, Generic, Literal, Mapping, Optional, TypeVar, cast

from .._core import Board as CoreBoard
from .._core import Guards, Operation, Scripts, read_events
from .._drive import Plan, plan
from .._types import (
    Event,
    Layout,
    Order,
    TeamContribution,
    TeamMove,
    TeamSubmitResult,
    WriteMode,
)
from ..options import board_client
from .events import EVENTS_BATCH, StreamState
from .plain import ORDERS, WRITE_MODES, count_arg, guards_repr, one_of, player_text, user_id_text

__all__ = ["TeamBase"]

Aggregate = Literal["sum", "best"]
AGGREGATES = ("sum", "best")
S = TypeVar("S", bound="StreamState[Event]")


class TeamBase(Generic[S]):
    """A team board ([`TeamLeaderboard`][redis_leaderboard.TeamLeaderboard], sync or asyncio),
    written once (see the module for the design)."""

    _client_class: Any  # the public class's
    _cluster_client_class: Any
    _board_class: Any  # the plain board class of the same API
    _event_stream_class: type[S]  # the public class's
    _display_name: str = "TeamLeaderboard"
    redis: Any

    def __init__(
        self,
        redis_client: Any = None,
        key: str = "teams:demo",
        *,
        aggregate: Aggregate = "sum",
        order: Order = "desc",
        url: Optional[str] = None,
        submission_ttl: float = 86400,
        rate_limit: Optional[tuple[int, float]] = None,
        events: bool = False,
        events_maxlen: int = 10000,
        score_range: Optional[tuple[Optional[float], Optional[float]]] = None,
        max_increment: Optional[float] = None,
        layout: Layout = "guide",
    ) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty str")
        # Validated first, as a plain board's constructor: nothing is connected for bad options.
        self.aggregate: Aggregate = cast(Aggregate, one_of(aggregate, "aggregate", AGGREGATES))
        """How a team's score follows from its members': ``"sum"`` or ``"best"``."""
        self.order: Order = cast(Order, one_of(order, "order", ORDERS))
        """``"desc"`` (higher is better) or ``"asc"``, for members and teams alike."""
        members = CoreBoard(f"{key}:members", None, order=order, layout=layout)
        self.layout: Layout = layout
        """Where the members' metadata lives: a hash per member (``"guide"``) or one hash,
        ``f"{key}:members:meta"`` (``"compact"``: the board guide's "The compact layout"). The
        teams' board keeps the guide's layout (its entries have no metadata)."""
        self._guards = Guards(
            submission_ttl=submission_ttl,
            rate_limit=rate_limit,
            events=events,
            events_maxlen=events_maxlen,
            score_range=score_range,
            max_increment=max_increment,
        )
        # Each call of team.lua and team_read.lua (see their declarations), prepared once with
        # what every call of the board sends: its keys and options (the guards as an 'OPTIONS
        # ...' refusal compares them).
        layout_word = " layout=compact" if layout == "compact" else ""
        scripts = Scripts(
            "team board",
            key,
            f"aggregate={aggregate} order={order} {self._guards.status_text()}{layout_word}",
        )
        common: dict[str, Any] = {
            "team_options": f"{key}:options",
            "memberships": f"{key}:team_of",
            "team_board": key,
            "member_board": f"{key}:members",
            "aggregate": aggregate,
            "order": order,
        }
        events_key = f"{key}:events"
        self._option_keys = members.option_keys  # the members' board's
        self._member_prefix = (
            f"{key}:members:meta" if layout == "compact" else f"{key}:members:user:"
        )
        self._limit_words = self._guards.limit_words()  # a member's score writes'
        self._keyed_guards = rate_limit is not None or events  # words that name a key
        # The calls that are not a member's score write (move, remove, hide, unhide): the
        # members' board's option keys, then with events the stream; and their guard words.
        # Doing any of them twice changes nothing more, reads change nothing: each may be
        # resent. A score write only with a submission id (it cannot apply twice).
        written = {**common, "ties": members.ties_word}  # team.lua's calls
        change = {
            **written,
            "option_keys": [*self._option_keys, *([events_key] if events else [])],
            "guard_words": self._guards.event_words(),
        }
        self._submit = scripts.prepare("team.submit", "TeamLeaderboard.submit", written)
        self._submit_own = scripts.prepare("team.submit_own", "TeamLeaderboard.submit", written)
        self._changes = {
            call: scripts.prepare(f"team.{call}", f"TeamLeaderboard.{call}", change, resends=2)
            for call in ("move", "remove", "hide", "unhide")
        }
        hiding = {**common, "option_keys": self._option_keys}
        self._reads = {
            "members": scripts.prepare(
                "team_read.members", "TeamLeaderboard.team_members", common, resends=2
            ),
            "team_of": scripts.prepare(
                "team_read.team_of", "TeamLeaderboard.team_of", common, resends=2
            ),
            "hidden": scripts.prepare(
                "team_read.hidden", "TeamLeaderboard.hidden", hiding, resends=2
            ),
            "is_hidden": scripts.prepare(
                "team_read.is_hidden", "TeamLeaderboard.is_hidden", hiding, resends=2
            ),
        }
        self.redis = board_client(
            self._display_name, redis_client, url, key, self._client_class,
            self._cluster_client_class,
        )  # fmt: skip
        self.key = key
        """The team board's key: the teams' board; the members' is ``f"{key}:members"``."""
        self.submission_ttl = submission_ttl
        """Seconds the result of a write with a ``submission_id`` is kept."""
        self.events_key = events_key
        """The stream of the board's change events (``events=True``; see ``events``)."""
        self.teams = self._board_class(self.redis, key=key, max_entries=None, order=order)
        """The teams' board, for reads (``get_top``, ``get_rank(team)``, ...): a
        ``RedisLeaderboard`` of the same API."""
        self.members = self._board_class(
            self.redis, key=f"{key}:members", max_entries=None, order=order, layout=layout
        )
        """The members' board, for reads: a ``RedisLeaderboard`` of the same API."""

    # -- guards, as a plain board's -----------------------------------------------------------

    @property
    def rate_limit(self) -> Optional[tuple[int, float]]:
        """``(max_writes, per_seconds)`` per member, or None: at most that many score writes
        (``submit``) per member in any window of ``per_seconds`` on the server's clock."""
        return self._guards.rate_limit

    @property
    def score_range(self) -> Optional[tuple[Optional[float], Optional[float]]]:
        """``(min, max)``: the lowest and highest score a member's write may leave (either None:
        no bound), or None (fair play). A write outside raises ``ScoreRejected``."""
        return self._guards.score_range

    @property
    def max_increment(self) -> Optional[float]:
        """The most one write may improve a member's score by (in the board's order), or None
        (fair play). A write improving it more raises ``ScoreRejected``."""
        return self._guards.max_increment

    @property
    def events_enabled(self) -> bool:
        """Whether changes append events to ``events_key`` (``events=True``);
        [`events`][redis_leaderboard.TeamLeaderboard.events] reads them."""
        return self._guards.events

    def __repr__(self) -> str:
        options = guards_repr(self._guards)
        return (
            f"{type(self).__name__}(key={self.key!r}, aggregate={self.aggregate!r}, "
            f"order={self.order!r}{options}"
            + (f", layout={self.layout!r}" if self.layout != "guide" else "")
            + ")"
        )

    @plan
    def submit(
        self,
        member: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        team: Optional[str] = None,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> Plan[TeamSubmitResult]:
        """Write a member's score with ``mode`` (``"set"``, ``"best"``, ``"incr"``, as
        [`RedisLeaderboard.submit`][redis_leaderboard.RedisLeaderboard.submit]) and merge
        ``metadata``; their contribution and their team's score follow in the same script.
        ``team``: the member's team (a member's first write names it; naming another moves
        them there, with their contribution); None: theirs. Returns submit()'s result on the
        members' board plus ``"team"``, ``"team_score"``, ``"team_rank"`` and
        ``"previous_team"``. A first write naming no team raises ValueError.

        ``submission_id``/``retries`` as ``RedisLeaderboard.submit``: with an id the write
        applies once within ``submission_ttl``; a resend (the same member, score, mode,
        metadata and ``team`` as sent) writes nothing and returns the first result field for
        field (its team, team score and rank as they were then), with ``"duplicate"`` True
        when another call had applied it, False for this call's own resend after a lost reply
        (resent at most ``retries`` times). The id reused for another member or payload raises
        ``SubmissionIdReused``. A hidden member's write is kept aside (see ``hide``): ``"rank"``
        None, the team's score unchanged.

        The guards judge the member's own score, as a plain board's ``submit`` does: the score
        the write leaves must be within ``score_range`` and improve the member's score (their
        kept one while hidden; an ``"incr"`` of a new member counts from 0) by at most
        ``max_increment`` in the board's order, and each member may write ``rate_limit``
        times per period of the server's clock. A refused write raises and changes nothing:
        not the member's score, not any team's, no event, no count against the rate limit. A
        resend of an applied ``submission_id`` is never refused by a limit: it answers the
        first result. With ``events``, an applied write appends the member's ``"score"``
        event (if their score changed), then a ``"team"`` event per team whose score changed
        (the team left first, on a move): see ``events``.

        Raises:
            ValueError: A first write naming no team; bad arguments (before anything is sent).
            ScoreRejected: Outside ``score_range``, or improving by more than
                ``max_increment`` (a ``ValueError``).
            RateLimited: More than ``rate_limit`` writes of the member (``retry_after``: the
                seconds until one more is allowed).
            OptionsMismatch: The board records other options (``aggregate``, ``order``, or
                guards this client does not carry: a ``ValueError``).
            SubmissionIdReused: The id was applied for another member or payload.

        Redis cost:
            One round trip, one script: the members' board's write, a ZADD on the team's
            contributions and the team's ZINCRBY (``"sum"``) or a ZRANGE and ZADD
            (``"best"``); a move adds the same on the team left. O(log N). With a submission
            id, a GET and a SET of its record, then a GET and a SET (KEEPTTL) adding the
            team's part; a resend: two GETs, nothing written. With ``rate_limit``: a ZCOUNT of
            the member's window, then ZREMRANGEBYSCORE, ZADD and PEXPIRE on it. Score limits:
            no command. With ``events``: an XADD for the member (with the ranks and overtakes
            as a plain board's event: ZREVRANK, ZRANGE of at most 10) and per team whose score
            changed a ZSCORE, its rank before and after and an XADD. The options are recorded
            in the members' board's options hash (an HSET, the first time).
        """
        if member.__class__ is not str or not member:  # the checks only off the common path
            member = player_text(member)
        if mode not in WRITE_MODES:
            one_of(mode, "mode", WRITE_MODES)
        if (retries if retries.__class__ is int else count_arg(retries, "retries")) < 0:
            raise ValueError("retries must be at least 0")
        words, keys = self._limit_words, self._option_keys
        if submission_id is not None or self._keyed_guards:  # words naming keys, in order
            words, named = self._guards.write_words(
                self.key, self.events_key, member, submission_id
            )
            words = f"{words} {self._limit_words}" if self._limit_words else words
            keys = [*keys, *named]
        values = {
            "member_key": self._member_key(member),
            "write_keys": keys,
            "member": member,
            "mode": mode,
            "score": score,
            "guard_words": words,
            "metadata": metadata,
        }
        call = self._submit_own
        if team is not None:
            if team.__class__ is not str or not team or "\0" in team:
                team = team_text(team)
            values["team"] = team
            values["team_key"] = f"{self.key}:team:{team}"
            call = self._submit
        reply = yield call(values, retries if submission_id is not None else 0)
        return cast(
            TeamSubmitResult,
            {
                **reply["submit"],
                "team": reply["team"],
                "team_score": reply["team_score"],
                "team_rank": reply["team_rank"],
                "previous_team": reply["previous_team"],
            },
        )

    @plan
    def move(self, member: str, team: str) -> Plan[TeamMove]:
        """Move a member to ``team`` with their contribution (a member with no score yet is
        only assigned, so that their first write needs no ``team``). Returns
        ``{"previous_team", "team", "team_score", "team_rank"}`` (score and rank None while
        the team has no member with a score). Not a score write: no limit applies. With
        ``events``, a ``"team"`` event per team whose score changed (the team left first).

        Redis cost:
            One round trip, one script: HGETALL of the members' board's options, ZREM and ZADD
            on the two teams' contributions and their scores (with events, an XADD per team).
            O(log N).
        """
        team = team_text(team)
        values = {
            "team_key": f"{self.key}:team:{team}",
            "member": player_text(member),
            "team": team,
        }
        reply = yield self._changes["move"](values)
        return cast(TeamMove, reply)

    @plan
    def remove(self, member: str) -> Plan[bool]:
        """Remove a member: their score, metadata and contribution (their team's score
        follows), and their team; a hidden member's kept score too. Returns True if they had a
        score. With ``events``, a ``"delete"`` event (as a plain board's ``delete_user``: the
        score they had, their rank before) if they were ranked, then their team's ``"team"``
        event if its score changed.

        Redis cost:
            One round trip, one script: HGETALL of the members' board's options, ZSCORE, ZREM,
            UNLINK, HDEL and the team's contribution (as ``submit``). O(log N).
        """
        changed: bool = yield self._member_change("remove", member)
        return changed

    @plan
    def team_members(self, team: str) -> Plan[list[TeamContribution]]:
        """A team's members with a score, best first: ``[{"user_id", "contribution"}, ...]``.

        Redis cost:
            One round trip: a ``no-writes`` script (it runs out of memory and on read-only
            replicas), ZRANGE. O(log N + M) for M members.
        """
        team = team_text(team)
        reply = yield self._reads["members"]({"team_key": f"{self.key}:team:{team}", "team": team})
        return cast(list[TeamContribution], reply)

    # -- fair play: hidden members ---------------------------------------------------------

    @plan
    def hide(self, member: str) -> Plan[bool]:
        """Hide a member: they leave the members' board (every read, as
        [`RedisLeaderboard.hide`][redis_leaderboard.RedisLeaderboard.hide] says) and their
        contribution leaves their team's score (a team's score is its visible members'); they
        keep their team and metadata, and their writes go on being judged and kept aside.
        Returns True if they were not hidden before. With ``events``, a ``"hide"`` event (as a
        plain board's) if they were ranked, then their team's ``"team"`` event.

        Redis cost:
            One round trip, one script: HGETALL of the options, ZSCORE, ZREM, two HSETs, and
            the team's ZREM and ZINCRBY (``"sum"``) or ZRANGE and ZADD (``"best"``). O(log N).
        """
        changed: bool = yield self._member_change("hide", member)
        return changed

    @plan
    def unhide(self, member: str) -> Plan[bool]:
        """Show a hidden member again: their kept score goes back on the members' board and
        into the team they are in now, as a write of it (no limit judges it again). Returns
        True if they were hidden. With ``events``, the member's ``"score"`` event, then their
        team's ``"team"`` event.

        Redis cost:
            One round trip, one script: HGET, HDEL, HLEN, the members' board's ZADD and the
            team's contribution (as ``submit``). O(log N).
        """
        changed: bool = yield self._member_change("unhide", member)
        return changed

    @plan
    def hidden(self) -> Plan[list[str]]:
        """The hidden members, in byte order.

        Redis cost:
            One round trip, a ``no-writes`` script: HGET, EXISTS and HKEYS, sorted in the
            script.
            O(H log H) for H hidden members.
        """
        reply = yield self._reads["hidden"]({})
        return cast(list[str], reply)

    @plan
    def is_hidden(self, member: str) -> Plan[bool]:
        """Whether a member is hidden.

        Redis cost:
            One round trip, a ``no-writes`` script: HGET, EXISTS and HEXISTS. O(1).
        """
        reply = yield self._reads["is_hidden"]({"member": player_text(member)})
        return cast(bool, reply)

    # -- change events -------------------------------------------------------------------------

    def events(
        self,
        last_id: str = "$",
        *,
        block: Optional[float] = None,
        count: int = EVENTS_BATCH,
    ) -> S:
        """The board's change events after ``last_id``, oldest first, as they come: members'
        and teams' changes in one stream, ``events_key`` (``f"{key}:events"``), each appended
        by the script that made the change, atomically with it.

        Each event is a plain board's (see
        [`RedisLeaderboard.events`][redis_leaderboard.RedisLeaderboard.events]): ``{"id",
        "kind", "user_id", "score", "rank", "previous_score", "previous_rank",
        "trimmed_user_ids", "overtaken"}``, ranks 1-based; ``"kind"`` says what changed:

        - ``"score"``: a member's score changed (``submit``, ``unhide``): the member, their
          score and rank on the members' board, before, and the members they overtook (up to
          10, nearest first);
        - ``"delete"`` (``remove``) and ``"hide"`` (``hide``): a ranked member left the
          members' board: ``"score"`` and ``"previous_score"`` the score they had,
          ``"previous_rank"`` their rank, ``"rank"`` None;
        - ``"team"``: a team's score changed: ``"user_id"`` is the team, ``"score"`` and
          ``"rank"`` its score and rank on the teams' board now (both None if it left it: no
          member with a score), ``"previous_score"`` and ``"previous_rank"`` before (None if it
          was not on it), ``"overtaken"`` the teams it passed, and ``"member"`` the member whose
          change moved it.

        A change appends the member's event first, then its teams' (on a move the team left,
        then the team joined): a watcher of the team standings reads the ``"team"`` events, a
        watcher of the members the others. A change that moves no score appends nothing (a
        ``"best"`` that is not better; a member whose contribution is not their team's best
        under ``aggregate="best"`` moves no team). Reading is as a plain board's stream:
        iterated or ``read()``, ``last_id`` to resume from, a connection of its own.

        Args:
            last_id: ``"$"``: the events after now; ``"0"``: every event the stream still holds
                (about ``events_maxlen``); an event's ``"id"``: those after it.
            block: Seconds the iteration waits for the next event before it ends (``0``: what
                is there now); None waits for ever.
            count: How many events one read asks for at most.

        Returns:
            An iterator of events (an ``EventStream``; under asyncio an ``AsyncEventStream``),
            also a context manager.

        Redis cost:
            Nothing until the first read; then one XREAD (BLOCK) per batch of at most
            ``count`` events on the stream's own connection, waiting in slices of 2 s.
        """
        return self._event_stream_class(
            self, last_id, block, count, read=functools.partial(read_events, self.events_key)
        )

    @plan
    def team_of(self, member: str) -> Plan[Optional[str]]:
        """A member's team, or None.

        Redis cost:
            One round trip: a ``no-writes`` script, HGET. O(1).
        """
        reply = yield self._reads["team_of"]({"member": player_text(member)})
        return cast(Optional[str], reply)

    def _member_change(self, call: str, member: str) -> Operation[bool]:
        """A member's removal, hiding or showing: their key, the change's keys and words."""
        member = player_text(member)
        values = {"member_key": self._member_key(member), "member": member}
        return self._changes[call](values)

    def _member_key(self, member: str) -> str:
        """Where a member's metadata lives: their hash, or the compact members' board's."""
        if self.layout == "compact":
            return self._member_prefix
        return self._member_prefix + member


def team_text(team: Any) -> str:
    """A team's name: as a user id (``user_id_text``), neither empty nor holding NUL."""
    text = user_id_text(team)
    if not text:
        raise ValueError("team must not be empty")
    if "\0" in text:
        raise ValueError("team must not contain NUL")
    return text
