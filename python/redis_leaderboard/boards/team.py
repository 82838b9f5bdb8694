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
first result, the team's part with ``keep_rest``; the team as sent is part of the payload) and
hidden members (``lib/hiding.lua``: the members' board hides them as a plain board does, in
``f"{K}:members:hidden"``). A hidden member has no contribution: a team's score is its visible
members' (sum or best); a team whose members are all hidden leaves the teams' board until one
is shown again. A hidden member's writes are judged as anyone's (mode, submission id) and kept
aside with their score, their team's score unchanged (a write naming a team moves them there,
without a contribution); ``unhide`` puts the kept score back on the members' board and into the
team they are in then.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Optional, cast

from .._core import TeamBoard
from .._drive import Plan, plan
from .._types import Order, TeamContribution, TeamMove, TeamSubmitResult, WriteMode
from ..options import board_client
from .plain import user_id_text

__all__ = ["TeamBase"]

Aggregate = Literal["sum", "best"]


class TeamBase:
    """A team board ([`TeamLeaderboard`][redis_leaderboard.TeamLeaderboard], sync or asyncio),
    written once (see the module for the design)."""

    _client_class: Any  # the public class's
    _cluster_client_class: Any
    _board_class: Any  # the plain board class of the same API
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
    ) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty str")
        self._team = TeamBoard(key, aggregate=aggregate, order=order, submission_ttl=submission_ttl)
        self.redis = board_client(
            self._display_name, redis_client, url, key, self._client_class,
            self._cluster_client_class,
        )  # fmt: skip
        self.key = key
        """The team board's key: the teams' board; the members' is ``f"{key}:members"``."""
        self.aggregate: Aggregate = aggregate
        """How a team's score follows from its members': ``"sum"`` or ``"best"``."""
        self.order: Order = order
        """``"desc"`` (higher is better) or ``"asc"``, for members and teams alike."""
        self.submission_ttl = submission_ttl
        """Seconds the result of a write with a ``submission_id`` is kept."""
        self.teams = self._board_class(self.redis, key=key, max_entries=None, order=order)
        """The teams' board, for reads (``get_top``, ``get_rank(team)``, ...): a
        ``RedisLeaderboard`` of the same API."""
        self.members = self._board_class(
            self.redis, key=f"{key}:members", max_entries=None, order=order
        )
        """The members' board, for reads: a ``RedisLeaderboard`` of the same API."""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(key={self.key!r}, aggregate={self.aggregate!r}, "
            f"order={self.order!r})"
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

        Redis cost:
            One round trip, one script: the members' board's write, a ZADD on the team's
            contributions and the team's ZINCRBY (``"sum"``) or a ZRANGE and ZADD
            (``"best"``); a move adds the same on the team left. O(log N). With a submission
            id, a GET and a SET of its record, then a GET and a SET (KEEPTTL) adding the
            team's part; a resend: two GETs, nothing written.
        """
        reply = yield self._team.submit(
            user_id_text(member), score, metadata,
            None if team is None else user_id_text(team), mode, submission_id, retries,
        )  # fmt: skip
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
        the team has no member with a score).

        Redis cost:
            One round trip, one script: ZREM and ZADD on the two teams' contributions and
            their scores. O(log N).
        """
        reply = yield self._team.move(user_id_text(member), user_id_text(team))
        return cast(TeamMove, reply)

    @plan
    def remove(self, member: str) -> Plan[bool]:
        """Remove a member: their score, metadata and contribution (their team's score
        follows), and their team; a hidden member's kept score too. Returns True if they had a
        score.

        Redis cost:
            One round trip, one script. O(log N).
        """
        reply = yield self._team.remove(user_id_text(member))
        return bool(reply["removed"])

    @plan
    def team_members(self, team: str) -> Plan[list[TeamContribution]]:
        """A team's members with a score, best first: ``[{"user_id", "contribution"}, ...]``.

        Redis cost:
            One round trip: one script, ZRANGE. O(log N + M) for M members.
        """
        reply = yield self._team.members(user_id_text(team))
        return cast(list[TeamContribution], reply["members"])

    # -- fair play: hidden members ---------------------------------------------------------

    @plan
    def hide(self, member: str) -> Plan[bool]:
        """Hide a member: they leave the members' board (every read, as
        [`RedisLeaderboard.hide`][redis_leaderboard.RedisLeaderboard.hide] says) and their
        contribution leaves their team's score (a team's score is its visible members'); they
        keep their team and metadata, and their writes go on being judged and kept aside.
        Returns True if they were not hidden before.

        Redis cost:
            One round trip, one script: HGETALL of the options, ZSCORE, ZREM, two HSETs, and
            the team's ZREM and ZINCRBY (``"sum"``) or ZRANGE and ZADD (``"best"``). O(log N).
        """
        reply = yield self._team.hiding("hide", user_id_text(member))
        return bool(reply["changed"])

    @plan
    def unhide(self, member: str) -> Plan[bool]:
        """Show a hidden member again: their kept score goes back on the members' board and
        into the team they are in now, as a write of it. Returns True if they were hidden.

        Redis cost:
            One round trip, one script: HGET, HDEL, HLEN, the members' board's ZADD and the
            team's contribution (as ``submit``). O(log N).
        """
        reply = yield self._team.hiding("unhide", user_id_text(member))
        return bool(reply["changed"])

    @plan
    def hidden(self) -> Plan[list[str]]:
        """The hidden members, in byte order.

        Redis cost:
            One round trip, one script: HGET, EXISTS and HKEYS, sorted in the script.
            O(H log H) for H hidden members.
        """
        reply = yield self._team.hiding("hidden")
        return list(reply["user_ids"])

    @plan
    def is_hidden(self, member: str) -> Plan[bool]:
        """Whether a member is hidden.

        Redis cost:
            One round trip, one script: HGET, EXISTS and HGET. O(1).
        """
        reply = yield self._team.hiding("is_hidden", user_id_text(member))
        return bool(reply["hidden"])

    @plan
    def team_of(self, member: str) -> Plan[Optional[str]]:
        """A member's team, or None.

        Redis cost:
            One round trip: HGET.
        """
        reply = yield self._team.team_of(user_id_text(member))
        return cast(Optional[str], reply["team"])
