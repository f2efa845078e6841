"""The scheduler's ready queue and future completion path (issue 15: many workers)."""

from __future__ import annotations

import concurrent.futures
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from harnpy.runtime.scheduler import ReadyQueue, Scheduler

REPO = Path(__file__).resolve().parents[2]


class _T:
    """A stand-in thread: hashable by identity."""

    blocked_on: Any = None


def test_ready_queue_is_fifo_and_append_once_skips_queued_threads() -> None:
    q = ReadyQueue()
    a, b = _T(), _T()
    q.append(a)
    q.append_once(b)
    q.append_once(a)  # already queued: not again
    assert len(q) == 2 and a in q and b in q
    assert q.popleft() is a
    assert a not in q and b in q
    q.append_once(a)
    assert list(q) == [b, a]


def test_ready_queue_append_counts_duplicates_and_remove_drops_all() -> None:
    q = ReadyQueue()
    a, b = _T(), _T()
    q.append(a)
    q.append(b)
    q.append(a)
    assert q.popleft() is a
    assert a in q  # its second entry is still queued
    q.remove(a)
    assert a not in q and list(q) == [b]
    with pytest.raises(ValueError):
        q.remove(a)
    q.clear()
    assert not q and b not in q


def test_make_ready_queues_a_thread_once() -> None:
    sched = Scheduler(runtime=None)
    th = _T()
    sched.blocked.add(th)
    th.blocked_on = "x"
    sched.make_ready(th)
    sched.make_ready(th)
    assert len(sched.ready) == 1 and th not in sched.blocked and th.blocked_on is None


class _Clock:
    def monotonic_ms(self) -> float:
        return 0.0


class _Rt:
    clock = _Clock()


def test_wait_for_event_runs_the_callback_of_a_completed_future_only() -> None:
    sched = Scheduler(runtime=_Rt())
    stale: concurrent.futures.Future[int] = concurrent.futures.Future()
    live: concurrent.futures.Future[int] = concurrent.futures.Future()
    seen: list[int] = []
    sched.on_future(stale, lambda f: seen.append(-1))
    sched.on_future(live, lambda f: seen.append(f.result()))
    del sched.futures[stale]  # dropped (e.g. the scheduler was cleared) before it completed
    stale.set_result(0)
    live.set_result(7)
    assert sched._wait_for_event() is True
    assert seen == [7] and not sched.futures


def test_bench_scale_rules_match_the_programs() -> None:
    """Every --scale rule rewrites its program and its mirror (a miss raises)."""
    spec = importlib.util.spec_from_file_location("bench_run", REPO / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = run
    spec.loader.exec_module(run)
    progs = REPO.parent / "shared" / "bench" / "programs"
    if not progs.is_dir():
        pytest.skip("benchmark programs not present")
    for name, rules in run.SCALES.items():
        for ext in (".harn", ".py"):
            text = (progs / (name + ext)).read_text()
            assert run.scale_source(text, rules, 2) != text
    fib = run.scale_source((progs / "fib.py").read_text(), run.SCALES["fib"], 3)
    assert "fib(27)" in fib
    inplace = run.scale_source(
        (progs / "agent_turns.py").read_text(), run.INPLACE["agent_turns"], 1
    )
    assert "transcript.append({" in inplace


def test_bench_children_cache_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The timed children of --scale run without PYTHONDONTWRITEBYTECODE (else every
    harnpy child recompiles its modules and start-up is counted twice over)."""
    spec = importlib.util.spec_from_file_location("bench_run", REPO / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = run
    spec.loader.exec_module(run)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("HARNPY_BENCH_PROBE", "kept")
    env = run.child_env()
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["HARNPY_BENCH_PROBE"] == "kept"
    _, out, rc = run.cpu_once([sys.executable, "-c", "import sys; print(sys.dont_write_bytecode)"])
    assert rc == 0 and out.strip() == "False"
