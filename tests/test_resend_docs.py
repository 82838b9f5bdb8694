"""What the clients' docstrings promise about a lost reply matches what they do: a write with a
submission id is resent (tests/boards/test_submission_ids.py, tests/test_sharded_guards.py show
it), so no client says writes are "never retried" without that exception, nor that every call
ends in ``TimeoutError``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import redis_leaderboard.asyncio as aio
from redis_leaderboard import ClusterClient

STUB = Path(__file__).resolve().parent.parent / "python" / "redis_leaderboard" / "_core.pyi"


def stub_doc(name: str) -> str:
    tree = ast.parse(STUB.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return ast.get_docstring(node) or ""


@pytest.mark.parametrize(
    "doc",
    [aio.Client.__doc__ or "", ClusterClient.__doc__ or "", stub_doc("Client")],
    ids=["asyncio.Client", "ClusterClient", "_core.Client stub"],
)
def test_the_docs_say_id_carrying_writes_are_resent(doc: str) -> None:
    text = " ".join(doc.split())
    assert "never retried" not in text
    assert "unless it carries an idempotency key" in text
    assert "retries" in text and "ConnectionError" in text
    assert "A read may be retried once on a fresh connection within its timeout" in text
