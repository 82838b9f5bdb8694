"""The public classes show their API only: the plumbing between the package's classes (the
client class a board makes, its cluster client class, its name in reprs, its event stream and
board classes) is private (issue 39, item 13), so ``dir()``, completion and the API reference
(docs/griffe_driven.py, which names every public attribute) show none of it. No server."""

from __future__ import annotations

import inspect

import pytest

import redis_leaderboard
import redis_leaderboard.asyncio as aio

PLUMBING = {
    "client_class",
    "cluster_client_class",
    "display_name",
    "event_stream_class",
    "board_class",
}

PUBLIC_CLASSES = sorted(
    {
        (module.__name__, name)
        for module in (redis_leaderboard, aio)
        for name in module.__all__
        if inspect.isclass(getattr(module, name))
    }
)


@pytest.mark.parametrize(("module", "name"), PUBLIC_CLASSES, ids=lambda x: str(x))
def test_public_classes_keep_their_plumbing_private(module: str, name: str) -> None:
    cls = getattr(redis_leaderboard if module == "redis_leaderboard" else aio, name)
    assert PLUMBING.isdisjoint(dir(cls)), sorted(PLUMBING & set(dir(cls)))


def test_the_boards_still_have_it_privately() -> None:
    assert redis_leaderboard.RedisLeaderboard._client_class is redis_leaderboard.Client
    assert aio.RedisLeaderboard._client_class is aio.Client
    assert redis_leaderboard.League._display_name == "League"
