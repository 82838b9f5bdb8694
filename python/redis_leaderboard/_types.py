"""The result types and literals of the public API, in one place.

Every result is a plain ``dict`` at run time (the C++ bindings build them, see
``cpp/bindings/conversions.cpp``); these TypedDicts only tell a type checker which keys each one
has, so a typo such as ``entry["rnak"]`` fails ``mypy --strict`` in a caller's code at no cost
when the code runs. Nothing here imports the rest of the package (``_core`` only for type checkers).
"""

from __future__ import annotations

from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    TypedDict,
    TypeVar,
    Union,
)

if TYPE_CHECKING:
    from ._core import Operation

T = TypeVar("T")

Order = Literal["desc", "asc"]
Ties = Literal["lexicographic", "first", "competition", "dense"]
Layout = Literal["guide", "compact"]
WriteMode = Literal["set", "best", "incr"]
# What made an event: a write or unhide ("score"), delete_user ("delete"), a trim by
# set_max_entries or upsert_many ("trim"), one page of clear ("clear"), hide ("hide").
EventKind = Literal["score", "delete", "trim", "clear", "hide", "team"]
# (user_id, score) or (user_id, score, metadata), as upsert_many takes them
BulkEntry = Union[tuple[str, float], tuple[str, float, Mapping[str, Any]], Sequence[Any]]


class _EntryRequired(TypedDict):
    rank: int  # 1-based
    user_id: str
    score: float
    metadata: dict[str, str]


class Entry(_EntryRequired, total=False):
    """One player on a board, as every read returns it (the guide's shape); on a board with
    tie-break columns also ``"tiebreak"``: each column's value in the board's order (None: no
    write of this player gave one)."""

    tiebreak: dict[str, Optional[float]]


# Keys a result may lack are declared in a total=False subclass (NotRequired needs 3.11).
class _WriteRequired(TypedDict):
    user_id: str
    score: float
    metadata: dict[str, str]
    trimmed_user_ids: list[str]


class WriteResult(_WriteRequired, total=False):
    """``upsert_user`` and ``increment_score``: the entry written, and the ids its write trimmed
    away; without ``"rank"`` if the write itself was trimmed away."""

    rank: int


class _SubmitRequired(TypedDict):
    user_id: str
    score: float
    rank: Optional[int]
    previous_score: Optional[float]
    previous_rank: Optional[int]
    changed: bool
    metadata: dict[str, str]
    trimmed_user_ids: list[str]


class SubmitResult(_SubmitRequired, total=False):
    """``submit``: what the write changed. ``"duplicate"`` comes with a submission id (guards),
    ``"period"`` from a periodic board (seasons)."""

    duplicate: bool
    period: str


class _ShardedWriteRequired(TypedDict):
    user_id: str
    score: float
    metadata: dict[str, str]
    trimmed_user_ids: list[str]
    shard: int


class ShardedWriteResult(_ShardedWriteRequired, total=False):
    """A sharded board's ``upsert_user`` and ``increment_score``: the entry written, with its
    ``"shard"`` and its rank there (``"shard_rank"``) in place of ``"rank"``; without
    ``"shard_rank"`` if the write's own trim removed it."""

    shard_rank: int


class _ShardedSubmitRequired(TypedDict):
    user_id: str
    score: float
    previous_score: Optional[float]
    changed: bool
    metadata: dict[str, str]
    trimmed_user_ids: list[str]
    shard: int
    shard_rank: Optional[int]
    previous_shard_rank: Optional[int]


class ShardedSubmitResult(_ShardedSubmitRequired, total=False):
    """A sharded board's ``submit``: as [`SubmitResult`][redis_leaderboard._types.SubmitResult],
    with ``"shard"``, and the ranks
    on that shard (``"shard_rank"``, ``"previous_shard_rank"``) in place of the ranks."""

    duplicate: bool


class Page(TypedDict):
    """``get_page``."""

    page: int
    page_size: int
    total_pages: int
    size: int
    entries: list[Entry]


class HistogramBin(TypedDict):
    """One bin of ``get_histogram``, ascending scores."""

    min: float
    max: float
    count: int


class TrimSummary(TypedDict):
    """A trim to ``max_entries``: how many entries it removed, and at most a bounded number of
    their ids (the lowest)."""

    trimmed: int
    trimmed_user_ids: list[str]


class _ImportRequired(TypedDict):
    written: int
    trimmed: int
    trimmed_user_ids: list[str]


class ImportSummary(_ImportRequired, total=False):
    """``upsert_many``: entries written, the trim after them, and the entries whose submission
    id was applied before (guards; only when there were some)."""

    duplicates: int


class _EventRequired(TypedDict):
    id: str
    kind: EventKind
    user_id: Optional[str]
    score: Optional[float]
    rank: Optional[int]
    previous_score: Optional[float]
    previous_rank: Optional[int]
    trimmed_user_ids: list[str]
    overtaken: list[str]


class Event(_EventRequired, total=False):
    """A change event (guards): ``"user_id"`` and ``"score"`` are None for trims and clears;
    a ``"clear"`` event also has ``"removed"`` and ``"size"``; a team board's ``"team"`` event
    (``"user_id"`` the team) has ``"member"``, the member whose change moved it; a tournament's
    events have ``"period"``, the id of the period they changed."""

    removed: int
    size: int
    member: str
    period: str


class EventBatch(TypedDict):
    """One XREAD of a board's events: the id to read on from, and the events."""

    last_id: str
    events: list[Event]


class AsyncRun(Protocol):
    """An asyncio client's ``run``: an awaitable of an operation's result."""

    def __call__(self, operation: Operation[T], /) -> Awaitable[T]: ...


# --- leagues ---------------------------------------------------------------------------------

LeagueZone = Literal["promote", "stay", "demote"]


class _LeagueSubmitRequired(_SubmitRequired):
    period: str
    tier: str
    cohort: int
    bracket: Optional[str]
    zone: LeagueZone
    size: int


class LeagueSubmitResult(_LeagueSubmitRequired, total=False):
    """``League.submit``: submit()'s result on the player's cohort (``"rank"`` is the rank in
    the cohort), the period, tier, cohort, bracket, zone and the cohort's placed players;
    ``"duplicate"`` with a submission id."""

    duplicate: bool


class _LeagueEntryRequired(TypedDict):
    rank: Optional[int]
    user_id: str
    score: Optional[float]
    zone: LeagueZone
    metadata: dict[str, str]


class LeagueEntry(_LeagueEntryRequired, total=False):
    """One player of a cohort's standings; ``rank`` and ``score`` None for a player placed who
    never scored. On a league with tie-break columns also ``"tiebreak"``, as a board's
    ``Entry`` (each value None for a player who never gave one)."""

    tiebreak: dict[str, Optional[float]]


class LeagueStandings(TypedDict):
    """``League.standings``: the player's cohort in a period."""

    period: str
    tier: str
    cohort: int
    bracket: Optional[str]
    size: int
    settled: bool
    entries: list[LeagueEntry]


class TierCount(TypedDict):
    """``League.tiers``: a tier and how many players are in it."""

    tier: str
    players: int


class _LeagueResultRequired(TypedDict):
    period: str
    cohort: int
    tier: str
    new_tier: str
    zone: LeagueZone
    rank: Optional[int]
    score: Optional[float]


class LeagueResult(_LeagueResultRequired, total=False):
    """``League.results``: a player's outcome of a settled period. On a league with tie-break
    columns also ``"tiebreak"``: the values their score was ranked by, as a standings entry's
    (each None for a player who never gave one)."""

    tiebreak: dict[str, Optional[float]]


class LeagueEvent(TypedDict):
    """``League.events``: the settlement of one cohort, appended by the script that settled
    it."""

    id: str
    kind: Literal["settled"]
    period: str
    cohort: int
    tier: str
    bracket: Optional[str]
    promoted: list[str]
    demoted: list[str]


class LeagueSettlement(TypedDict):
    """``League.settle``: the periods settled and what this call did."""

    periods: list[str]
    cohorts: int
    settled: int
    already_settled: int
    promoted: int
    demoted: int


# --- tournaments -----------------------------------------------------------------------------


class _TournamentSubmitRequired(_SubmitRequired):
    period: str
    attempts_used: int
    attempts_left: Optional[int]
    size: int


class TournamentSubmitResult(_TournamentSubmitRequired, total=False):
    """``Tournament.submit``: submit()'s result on the period's board, the period written (a
    duplicate's: the first write's), the attempts used and left in the current period (left
    None: unlimited) and its players; ``"duplicate"`` with a submission id."""

    duplicate: bool


class TournamentJoin(TypedDict):
    """``Tournament.join``: the period joined, whether this call joined, its players, the
    attempts left (None: unlimited)."""

    period: str
    joined_now: bool
    size: int
    attempts_left: Optional[int]


class TournamentStatus(TypedDict):
    """``Tournament.status``: a player's state in the current period."""

    active: bool
    period: str
    starts_at: datetime
    ends_at: datetime
    joined: bool
    attempts_left: Optional[int]
    size: int


# --- team boards ---------------------------------------------------------------------------------


class _TeamSubmitRequired(SubmitResult):
    team: str
    team_score: Optional[float]
    team_rank: Optional[int]
    previous_team: Optional[str]


class TeamSubmitResult(_TeamSubmitRequired):
    """``TeamLeaderboard.submit``: submit()'s result on the members' board, the member's team,
    its score and 1-based rank on the teams' board, and the team the member was in before (None:
    none)."""


class TeamMove(TypedDict):
    """``TeamLeaderboard.move``: the team left (None: none), the team joined, its score and rank
    (None while no member of it has a score)."""

    previous_team: Optional[str]
    team: str
    team_score: Optional[float]
    team_rank: Optional[int]


class TeamContribution(TypedDict):
    """One member of ``TeamLeaderboard.team_members``: the member and their contribution."""

    user_id: str
    contribution: float
