"""The asyncio twins of :mod:`redis_leaderboard.seasons` (re-exported by
:mod:`redis_leaderboard.asyncio`): same constructors, results and errors; each method that
talks to Redis is a coroutine."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Mapping, Optional

from . import _core
from .asyncio import Client, RedisLeaderboard
from .leaderboard import (
    BulkEntry,
    Entry,
    ImportSummary,
    Order,
    Page,
    SubmitResult,
    Ties,
    WriteMode,
)
from .seasons import (
    Aggregate,
    Clock,
    GroupBase,
    GroupMode,
    PeriodicBase,
    PeriodState,
    RollingState,
)

__all__ = ["LeaderboardGroup", "PeriodBoard", "PeriodicLeaderboard", "RollingLeaderboard"]


class PeriodBoard(PeriodState, RedisLeaderboard):
    """The asyncio twin of :class:`redis_leaderboard.seasons.PeriodBoard`."""

    def __init__(
        self,
        redis_client: Any,
        key: str,
        max_entries: int,
        *,
        order: Order,
        ties: Ties,
        guards: Mapping[str, Any],
        periodic: PeriodicBase,
        start: datetime,
    ) -> None:
        super().__init__(redis_client, key, max_entries, order=order, ties=ties, **guards)
        expire_at = self._init_period(periodic, start)
        self._board = _core.Board(
            key, max_entries, order=order, ties=ties, expire_at=expire_at, **guards
        )

    async def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        self.check_writable()
        return await super().upsert_user(user_id, score, metadata)

    async def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        self.check_writable()
        return await super().increment_score(user_id, amount, metadata)

    async def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> SubmitResult:
        self.check_writable()
        return await super().submit(
            user_id, score, metadata, mode=mode, submission_id=submission_id, retries=retries
        )

    async def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = 1000,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> ImportSummary:
        self.check_writable()
        return await super().upsert_many(
            entries, chunk_size=chunk_size, progress=progress, retries=retries
        )

    def __repr__(self) -> str:
        return f"redis_leaderboard.asyncio.PeriodBoard(key={self.key!r})"


class PeriodicLeaderboard(PeriodicBase):
    """The asyncio twin of :class:`redis_leaderboard.seasons.PeriodicLeaderboard`:
    :meth:`current`, :meth:`at`, :meth:`previous` return asyncio boards."""

    board_class = PeriodBoard
    client_class = Client

    def current(self) -> PeriodBoard:
        return super().current()  # type: ignore[no-any-return]

    def at(self, when: datetime) -> PeriodBoard:
        return super().at(when)  # type: ignore[no-any-return]

    def previous(self, n: int = 1) -> PeriodBoard:
        return super().previous(n)  # type: ignore[no-any-return]

    async def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        return await self.current().upsert_user(user_id, score, metadata)

    async def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        return await self.current().increment_score(user_id, amount, metadata)

    async def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> SubmitResult:
        return await self.current().submit(
            user_id, score, metadata, mode=mode, submission_id=submission_id, retries=retries
        )

    async def get_top(self, count: int = 10) -> list[Entry]:
        return await self.current().get_top(count)

    async def get_around_rank(self, rank: int, count: int = 5) -> list[Entry]:
        return await self.current().get_around_rank(rank, count)

    async def get_rank(self, user_id: str) -> Optional[int]:
        return await self.current().get_rank(user_id)

    async def get_user_metadata(self, user_id: str) -> dict[str, str]:
        return await self.current().get_user_metadata(user_id)

    async def get_user_entry(self, user_id: str) -> Optional[Entry]:
        return await self.current().get_user_entry(user_id)

    async def list_all(self) -> list[Entry]:
        return await self.current().list_all()

    async def get_size(self) -> int:
        return await self.current().get_size()

    async def delete_user(self, user_id: str) -> bool:
        return await self.current().delete_user(user_id)

    async def get_around_user(self, user_id: str, count: int = 5) -> list[Entry]:
        return await self.current().get_around_user(user_id, count)

    async def get_page(self, page: int, page_size: int = 10) -> Page:
        return await self.current().get_page(page, page_size)


class RollingLeaderboard(RollingState, RedisLeaderboard):
    """The asyncio twin of :class:`redis_leaderboard.seasons.RollingLeaderboard`."""

    def __init__(
        self,
        redis_client: Any = None,
        key: str = "leaderboard:demo",
        window: timedelta = timedelta(days=7),
        bucket: timedelta = timedelta(hours=1),
        aggregate: Aggregate = "sum",
        max_entries: int = 100,
        *,
        order: Order = "desc",
        clock: Optional[Clock] = None,
        url: Optional[str] = None,
    ) -> None:
        super().__init__(redis_client, key, max_entries, url=url, order=order)
        self._init_window(key, window, bucket, aggregate, max_entries, order, clock)
        run = self.redis.run
        self._run = lambda read: run(self._refreshed(read))

    async def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: WriteMode = "set",
        submission_id: Optional[str] = None,
        retries: int = 2,
    ) -> SubmitResult:
        if submission_id is not None:
            raise ValueError(
                "submission ids are not supported on a rolling window: submit to a plain or "
                "periodic board, or a LeaderboardGroup of them, without one"
            )
        operation, results = self._write(user_id, score, metadata, mode)
        await self.redis.run(operation)
        result: SubmitResult = results()[0]
        return result

    async def upsert_user(
        self, user_id: str, score: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        return self._entry(await self.submit(user_id, score, metadata, mode="set"))

    async def increment_score(
        self, user_id: str, amount: float, metadata: Optional[Mapping[str, Any]] = None
    ) -> Entry:
        return self._entry(await self.submit(user_id, amount, metadata, mode="incr"))

    async def delete_user(self, user_id: str) -> bool:
        found: bool = await self.redis.run(self._window.delete_user(self.bucket_at(), user_id))
        return found

    async def clear(self) -> None:
        await self.redis.run(self._window.clear(self.bucket_at()))

    async def set_max_entries(self, max_entries: int) -> list[str]:
        raise self._refuse("set_max_entries")

    async def upsert_many(
        self,
        entries: Iterable[BulkEntry],
        *,
        chunk_size: int = 1000,
        progress: Optional[Callable[[int], None]] = None,
        retries: int = 2,
    ) -> ImportSummary:
        raise self._refuse("upsert_many")

    def __repr__(self) -> str:
        return f"redis_leaderboard.asyncio.RollingLeaderboard(key={self.key!r})"


class LeaderboardGroup(GroupBase):
    """The asyncio twin of :class:`redis_leaderboard.seasons.LeaderboardGroup`: its boards are
    asyncio ones."""

    client_class = Client
    plain_class = RedisLeaderboard
    periodic_class = PeriodicLeaderboard
    period_board_class = PeriodBoard
    rolling_class = RollingLeaderboard

    async def submit(
        self,
        user_id: str,
        score: float,
        metadata: Optional[Mapping[str, Any]] = None,
        *,
        mode: GroupMode = "set",
    ) -> dict[str, SubmitResult]:
        operation, results, periods = self._request(user_id, score, metadata, mode)
        await self.redis.run(operation)
        return self._results(results, periods)
