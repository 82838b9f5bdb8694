"""The redis.io guide's leaderboard algorithm on redis-py, kept for parity tests and benchmarks.

This is the ``RedisLeaderboard`` of the guide "Redis leaderboard with redis-py"
(https://redis.io/docs/latest/develop/use-cases/leaderboard/redis-py/, source ``leaderboard.py``),
re-implemented here command for command: the same Redis commands, in the same order, grouped
into the same round trips. ``redis_leaderboard.RedisLeaderboard`` is measured against it
(``bench_sync.py``) and compared with it on random operation sequences (the test suite).

Round trips per call, as in the guide (a redis-py ``pipeline()`` is a MULTI/EXEC transaction
sent in one write, so it is one round trip):

- ``upsert_user`` / ``increment_score``: pipeline ZADD (or ZINCRBY) + HSET; then the trim;
  then ``get_user_entry``. 3 round trips, 6 when the write pushes the board over its limit.
- ``_trim_to_max_entries``: ZCARD; if over the limit: ZRANGE 0..overflow-1, pipeline
  ZREMRANGEBYRANK 0..overflow-1, then one DEL of the trimmed users' metadata hashes.
- ``get_user_entry``: pipeline ZSCORE + ZREVRANK + HGETALL.
- ``get_top`` / ``list_all``: ZRANGE ... REV WITHSCORES, then ``_hydrate_entries`` (a pipeline of
  one HGETALL per entry, skipped when there are no entries).
- ``get_around_rank``: ZCARD, then (unless the board is empty) as ``get_top`` on the window.
- ``get_rank``: ZREVRANK. ``get_user_metadata``: HGETALL. ``get_size``: ZCARD.
- ``delete_user``: pipeline ZREM + DEL.
- ``clear``: ZRANGE 0 -1, then pipeline DEL of the board + DEL of the members' hashes.

Deliberate differences from the guide, none of which changes what is sent to Redis for a valid
call: arguments are validated as ``redis_leaderboard`` documents them (before any I/O, with the
same exception types and messages), ``get_top``/``get_around_rank`` have the package's default
``count``, and an int ``user_id`` is converted with ``str()``. The client must be created with
``decode_responses=True``, as in the guide.

:class:`GuideLeaderboard` runs on ``redis.Redis``; :class:`AsyncGuideLeaderboard` is the same
algorithm on ``redis.asyncio.Redis``. Both share :class:`_GuideLogic`, which holds everything
that does no I/O (validation, keys, the rank window, the shaping of results), so the two
classes differ only in how they talk to Redis.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from typing import Any

import redis
import redis.asyncio

Entry = dict[str, Any]


class _GuideLogic:
    """The I/O-free part of the guide's leaderboard, shared by the sync and async classes."""

    def __init__(self, key: str, max_entries: int) -> None:
        if not isinstance(key, str):
            raise TypeError(f"key must be a str, not {type(key).__name__}")
        if not key:
            raise ValueError("key must not be empty")
        self.key = key
        self.max_entries = self._positive_int(max_entries, "max_entries")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self.key!r}, max_entries={self.max_entries})"

    # Validation (the package's contract; the guide itself only checks the integers).

    @staticmethod
    def _positive_int(value: int, field: str) -> int:
        normalized = operator.index(value)
        if normalized < 1:
            raise ValueError(f"{field} must be at least 1")
        return normalized

    @staticmethod
    def _user_id(user_id: Any) -> str:
        if isinstance(user_id, str):
            normalized = user_id
        elif isinstance(user_id, int) and not isinstance(user_id, bool):
            normalized = str(user_id)
        else:
            raise TypeError(f"user_id must be a str, not {type(user_id).__name__}")
        if not normalized:
            raise ValueError("user_id must not be empty")
        return normalized

    @staticmethod
    def _finite(value: Any, field: str) -> float:
        if isinstance(value, (str, bytes)):
            raise TypeError(f"{field} must be a number, not {type(value).__name__}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"{field} must be a finite number")
        return number

    @staticmethod
    def _coerce_metadata(metadata: Mapping[str, Any] | None) -> dict[str, str]:
        """The payload written with HSET: every value as ``str(value)`` (the guide's coercion)."""
        if metadata is None:
            return {}
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping, not {type(metadata).__name__}")
        payload: dict[str, str] = {}
        for field, value in metadata.items():
            if not isinstance(field, str):
                raise TypeError(f"metadata keys must be str, not {type(field).__name__}")
            payload[field] = str(value)
        return payload

    # Keys, windows and result shapes.

    def _metadata_key(self, user_id: str) -> str:
        return f"{self.key}:user:{user_id}"

    def _overflow(self, size: int) -> int:
        """How many of the lowest entries the trim removes from a board of ``size``."""
        return int(size) - self.max_entries

    @staticmethod
    def _around_window(size: int, rank: int, count: int) -> tuple[int, int] | None:
        """The 0-based ZRANGE REV window for ``get_around_rank``: None on an empty board, the
        whole board if it holds at most ``count``, else ``count`` entries centred on ``rank``."""
        size = int(size)
        if size == 0:
            return None
        if size <= count:
            return 0, -1
        start = min(max(0, rank - 1 - count // 2), size - count)
        return start, start + count - 1

    @staticmethod
    def _shape_entries(
        entries: list[tuple[str, float]], metadata_results: list[Any], start_rank: int
    ) -> list[Entry]:
        return [
            {"rank": rank, "user_id": user_id, "score": float(score), "metadata": metadata or {}}
            for rank, ((user_id, score), metadata) in enumerate(
                zip(entries, metadata_results), start=start_rank
            )
        ]

    @staticmethod
    def _shape_entry(user_id: str, replies: list[Any]) -> Entry | None:
        """The entry from the replies of ZSCORE, ZREVRANK and HGETALL (None if not on the board)."""
        score, rank, metadata = replies
        if score is None or rank is None:
            return None
        return {
            "rank": int(rank) + 1,
            "user_id": user_id,
            "score": float(score),
            "metadata": metadata or {},
        }

    @staticmethod
    def _shape_write(
        entry: Entry | None,
        user_id: str,
        score: float,
        payload: dict[str, str],
        trimmed_user_ids: list[str],
    ) -> Entry:
        """What a write returns: the entry plus ``trimmed_user_ids``, or, when the write itself
        was trimmed away, the score written and the payload sent."""
        if entry is None:
            return {
                "user_id": user_id,
                "score": float(score),
                "metadata": payload,
                "trimmed_user_ids": trimmed_user_ids,
            }
        entry["trimmed_user_ids"] = trimmed_user_ids
        return entry

    @staticmethod
    def _user_ids(replies: list[Any]) -> list[str]:
        return [str(user_id) for user_id in replies]


class GuideLeaderboard(_GuideLogic):
    """The guide's ``RedisLeaderboard`` on a blocking ``redis.Redis(decode_responses=True)``."""

    def __init__(
        self,
        redis_client: redis.Redis | None = None,
        key: str = "leaderboard:demo",
        max_entries: int = 100,
    ) -> None:
        super().__init__(key, max_entries)
        self.redis = (
            redis_client
            if redis_client is not None
            else redis.Redis(host="localhost", port=6379, decode_responses=True)
        )

    def _hydrate_entries(self, entries: list[tuple[str, float]], start_rank: int) -> list[Entry]:
        if not entries:
            return []
        with self.redis.pipeline() as pipe:
            for user_id, _ in entries:
                pipe.hgetall(self._metadata_key(user_id))
            metadata_results = pipe.execute()
        return self._shape_entries(entries, metadata_results, start_rank)

    def _trim_to_max_entries(self) -> list[str]:
        overflow = self._overflow(self.redis.zcard(self.key))
        if overflow <= 0:
            return []
        trimmed = self.redis.zrange(self.key, 0, overflow - 1)
        if not trimmed:
            return []
        with self.redis.pipeline() as pipe:
            pipe.zremrangebyrank(self.key, 0, overflow - 1)
            pipe.execute()
        self.redis.delete(*[self._metadata_key(user_id) for user_id in trimmed])
        return self._user_ids(trimmed)

    def upsert_user(
        self, user_id: str, score: float, metadata: Mapping[str, Any] | None = None
    ) -> Entry:
        user_id = self._user_id(user_id)
        score = self._finite(score, "score")
        payload = self._coerce_metadata(metadata)
        with self.redis.pipeline() as pipe:
            pipe.zadd(self.key, {user_id: score})
            if payload:
                pipe.hset(self._metadata_key(user_id), mapping=payload)
            pipe.execute()
        trimmed_user_ids = self._trim_to_max_entries()
        entry = self.get_user_entry(user_id)
        return self._shape_write(entry, user_id, score, payload, trimmed_user_ids)

    def increment_score(
        self, user_id: str, amount: float, metadata: Mapping[str, Any] | None = None
    ) -> Entry:
        user_id = self._user_id(user_id)
        amount = self._finite(amount, "amount")
        payload = self._coerce_metadata(metadata)
        with self.redis.pipeline() as pipe:
            pipe.zincrby(self.key, amount, user_id)
            if payload:
                pipe.hset(self._metadata_key(user_id), mapping=payload)
            new_score = float(pipe.execute()[0])
        trimmed_user_ids = self._trim_to_max_entries()
        entry = self.get_user_entry(user_id)
        return self._shape_write(entry, user_id, new_score, payload, trimmed_user_ids)

    def set_max_entries(self, max_entries: int) -> list[str]:
        self.max_entries = self._positive_int(max_entries, "max_entries")
        return self._trim_to_max_entries()

    def get_top(self, count: int = 10) -> list[Entry]:
        count = self._positive_int(count, "count")
        entries = self.redis.zrange(self.key, 0, count - 1, desc=True, withscores=True)
        return self._hydrate_entries(entries, start_rank=1)

    def get_around_rank(self, rank: int, count: int = 5) -> list[Entry]:
        rank = self._positive_int(rank, "rank")
        count = self._positive_int(count, "count")
        window = self._around_window(self.redis.zcard(self.key), rank, count)
        if window is None:
            return []
        start, end = window
        entries = self.redis.zrange(self.key, start, end, desc=True, withscores=True)
        return self._hydrate_entries(entries, start_rank=start + 1)

    def get_rank(self, user_id: str) -> int | None:
        rank = self.redis.zrevrank(self.key, self._user_id(user_id))
        return None if rank is None else int(rank) + 1

    def get_user_metadata(self, user_id: str) -> dict[str, str]:
        return self.redis.hgetall(self._metadata_key(self._user_id(user_id)))

    def get_user_entry(self, user_id: str) -> Entry | None:
        user_id = self._user_id(user_id)
        with self.redis.pipeline() as pipe:
            pipe.zscore(self.key, user_id)
            pipe.zrevrank(self.key, user_id)
            pipe.hgetall(self._metadata_key(user_id))
            replies = pipe.execute()
        return self._shape_entry(user_id, replies)

    def list_all(self) -> list[Entry]:
        entries = self.redis.zrange(self.key, 0, -1, desc=True, withscores=True)
        return self._hydrate_entries(entries, start_rank=1)

    def get_size(self) -> int:
        return int(self.redis.zcard(self.key))

    def delete_user(self, user_id: str) -> bool:
        user_id = self._user_id(user_id)
        with self.redis.pipeline() as pipe:
            pipe.zrem(self.key, user_id)
            pipe.delete(self._metadata_key(user_id))
            removed, _ = pipe.execute()
        return bool(removed)

    def clear(self) -> None:
        user_ids = self.redis.zrange(self.key, 0, -1)
        with self.redis.pipeline() as pipe:
            pipe.delete(self.key)
            if user_ids:
                pipe.delete(*[self._metadata_key(user_id) for user_id in user_ids])
            pipe.execute()


class AsyncGuideLeaderboard(_GuideLogic):
    """The guide's algorithm on ``redis.asyncio.Redis(decode_responses=True)``: the same
    commands and round trips as :class:`GuideLeaderboard`; every public method is a coroutine."""

    def __init__(
        self,
        redis_client: redis.asyncio.Redis | None = None,
        key: str = "leaderboard:demo",
        max_entries: int = 100,
    ) -> None:
        super().__init__(key, max_entries)
        self.redis = (
            redis_client
            if redis_client is not None
            else redis.asyncio.Redis(host="localhost", port=6379, decode_responses=True)
        )

    async def _hydrate_entries(
        self, entries: list[tuple[str, float]], start_rank: int
    ) -> list[Entry]:
        if not entries:
            return []
        async with self.redis.pipeline() as pipe:
            for user_id, _ in entries:
                pipe.hgetall(self._metadata_key(user_id))
            metadata_results = await pipe.execute()
        return self._shape_entries(entries, metadata_results, start_rank)

    async def _trim_to_max_entries(self) -> list[str]:
        overflow = self._overflow(await self.redis.zcard(self.key))
        if overflow <= 0:
            return []
        trimmed = await self.redis.zrange(self.key, 0, overflow - 1)
        if not trimmed:
            return []
        async with self.redis.pipeline() as pipe:
            pipe.zremrangebyrank(self.key, 0, overflow - 1)
            await pipe.execute()
        await self.redis.delete(*[self._metadata_key(user_id) for user_id in trimmed])
        return self._user_ids(trimmed)

    async def upsert_user(
        self, user_id: str, score: float, metadata: Mapping[str, Any] | None = None
    ) -> Entry:
        user_id = self._user_id(user_id)
        score = self._finite(score, "score")
        payload = self._coerce_metadata(metadata)
        async with self.redis.pipeline() as pipe:
            pipe.zadd(self.key, {user_id: score})
            if payload:
                pipe.hset(self._metadata_key(user_id), mapping=payload)
            await pipe.execute()
        trimmed_user_ids = await self._trim_to_max_entries()
        entry = await self.get_user_entry(user_id)
        return self._shape_write(entry, user_id, score, payload, trimmed_user_ids)

    async def increment_score(
        self, user_id: str, amount: float, metadata: Mapping[str, Any] | None = None
    ) -> Entry:
        user_id = self._user_id(user_id)
        amount = self._finite(amount, "amount")
        payload = self._coerce_metadata(metadata)
        async with self.redis.pipeline() as pipe:
            pipe.zincrby(self.key, amount, user_id)
            if payload:
                pipe.hset(self._metadata_key(user_id), mapping=payload)
            new_score = float((await pipe.execute())[0])
        trimmed_user_ids = await self._trim_to_max_entries()
        entry = await self.get_user_entry(user_id)
        return self._shape_write(entry, user_id, new_score, payload, trimmed_user_ids)

    async def set_max_entries(self, max_entries: int) -> list[str]:
        self.max_entries = self._positive_int(max_entries, "max_entries")
        return await self._trim_to_max_entries()

    async def get_top(self, count: int = 10) -> list[Entry]:
        count = self._positive_int(count, "count")
        entries = await self.redis.zrange(self.key, 0, count - 1, desc=True, withscores=True)
        return await self._hydrate_entries(entries, start_rank=1)

    async def get_around_rank(self, rank: int, count: int = 5) -> list[Entry]:
        rank = self._positive_int(rank, "rank")
        count = self._positive_int(count, "count")
        window = self._around_window(await self.redis.zcard(self.key), rank, count)
        if window is None:
            return []
        start, end = window
        entries = await self.redis.zrange(self.key, start, end, desc=True, withscores=True)
        return await self._hydrate_entries(entries, start_rank=start + 1)

    async def get_rank(self, user_id: str) -> int | None:
        rank = await self.redis.zrevrank(self.key, self._user_id(user_id))
        return None if rank is None else int(rank) + 1

    async def get_user_metadata(self, user_id: str) -> dict[str, str]:
        return await self.redis.hgetall(self._metadata_key(self._user_id(user_id)))

    async def get_user_entry(self, user_id: str) -> Entry | None:
        user_id = self._user_id(user_id)
        async with self.redis.pipeline() as pipe:
            pipe.zscore(self.key, user_id)
            pipe.zrevrank(self.key, user_id)
            pipe.hgetall(self._metadata_key(user_id))
            replies = await pipe.execute()
        return self._shape_entry(user_id, replies)

    async def list_all(self) -> list[Entry]:
        entries = await self.redis.zrange(self.key, 0, -1, desc=True, withscores=True)
        return await self._hydrate_entries(entries, start_rank=1)

    async def get_size(self) -> int:
        return int(await self.redis.zcard(self.key))

    async def delete_user(self, user_id: str) -> bool:
        user_id = self._user_id(user_id)
        async with self.redis.pipeline() as pipe:
            pipe.zrem(self.key, user_id)
            pipe.delete(self._metadata_key(user_id))
            removed, _ = await pipe.execute()
        return bool(removed)

    async def clear(self) -> None:
        user_ids = await self.redis.zrange(self.key, 0, -1)
        async with self.redis.pipeline() as pipe:
            pipe.delete(self.key)
            if user_ids:
                pipe.delete(*[self._metadata_key(user_id) for user_id in user_ids])
            await pipe.execute()
