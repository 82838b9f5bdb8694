"""The soak (benchmarks/soak.py): a short run of it with one fault of each kind, and its checker
catching the wrong answers it exists to catch (so a soak that reports none means something)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import soak  # noqa: E402


def entry(user_id: str, score: float, meta: dict[str, str], rank: int = 1) -> dict[str, object]:
    return {"rank": rank, "user_id": user_id, "score": score, "metadata": meta}


def test_the_checker_refuses_what_the_model_says_cannot_be() -> None:
    worker = soak.Worker("w", 1)
    u = worker.ids[0]
    worker.users[u] = soak.User(10.0, {"n": "w:1"})
    worker._check_entry(u, entry(u, 10.0, {"n": "w:1"}))  # as the model says: fine
    for wrong in (
        entry(u, 11.0, {"n": "w:1"}),  # another score
        entry(u, 10.0, {"n": "w:2"}),  # another write's metadata
        entry("someone-else", 10.0, {"n": "w:1"}),  # another user's entry
        None,  # gone
    ):
        with pytest.raises(soak.Wrong):
            worker._check_entry(u, wrong)
    with pytest.raises(soak.Wrong):  # a window out of order
        worker._check_window_any([entry("x", 1.0, {}, 1), entry("y", 2.0, {}, 2)])
    with pytest.raises(soak.Wrong):  # a user twice
        worker._check_window_any([entry("x", 2.0, {}, 1), entry("x", 1.0, {}, 2)])


def test_an_unanswered_write_is_accepted_applied_once_or_not_at_all() -> None:
    worker = soak.Worker("w", 1)
    u = worker.ids[0]
    before = soak.User(10.0, {"n": "w:1"})
    after = soak.User(15.0, {"n": "w:2"})
    worker.users[u] = before
    for seen, state in ((15.0, after), (10.0, before)):
        worker.unresolved.append((u, before, after))
        call = worker.next_call()
        assert call.method == "_resolve"
        entries = [entry(u, seen, state.meta) if i == u else None for i in worker.ids]
        call.check((entries, state.meta, []))
        assert worker.users[u] is state and not worker.unresolved
    worker.unresolved.append((u, before, after))
    call = worker.next_call()
    entries = [entry(u, 20.0, after.meta) if i == u else None for i in worker.ids]
    with pytest.raises(soak.Wrong):  # applied twice (15 + 5): neither state
        call.check((entries, after.meta, []))


@pytest.mark.slow
def test_a_short_soak_with_a_kill_a_pause_and_a_partition(tmp_path: Path) -> None:
    args = ["--seconds", "16", "--fault-every", "3", "--pause", "2", "--threads", "2"]
    args += ["--tasks", "8", "--sample", "1", "--out", str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "soak.py"), *args],
        capture_output=True,
        text=True,
        timeout=180,
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary["wrong"] == 0 and summary["late"] == 0 and not summary["crashed"]
    assert [f["fault"] for f in summary["faults"]][:3] == ["kill", "pause", "partition"]
    assert all(f["recovered_after_s"] is not None for f in summary["faults"])
    # The faults were felt: calls failed, and writes whose reply was lost were read back.
    assert summary["errors"].get("ConnectionError", 0) + summary["errors"].get("TimeoutError", 0)
    assert sum(summary["unanswered_writes"].values()) > 0
    assert summary["calls"] > 1000
