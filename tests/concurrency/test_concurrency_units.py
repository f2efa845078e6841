"""Unit tests of the concurrency helpers that need no scheduler: restart policies and
backoff of supervisors, shared-state scopes and snapshots, sync permits granted or refused
without waiting, circuit breaker states (spec language.md 3.16, 4.15)."""

from __future__ import annotations

from typing import Any

import pytest

from harnpy.runtime.errors import HarnError
from harnpy.runtime.runtime import Runtime
from harnpy.runtime.values import Duration
from harnpy.stdlib import shared, supervisors, sync, task_context


def _finish(gen: Any) -> Any:
    """Run a callback builtin that must not block; return its value."""
    try:
        req = next(gen)
    except StopIteration as stop:
        return stop.value
    raise AssertionError(f"builtin blocked with {req!r}")


@pytest.fixture
def thread() -> Any:
    return Runtime().new_thread()


def test_restart_delay_exponential_capped_with_deterministic_jitter() -> None:
    p = supervisors._parse_policy(
        {"backoff_ms": 10, "max_backoff_ms": 40, "factor": 2, "jitter_ms": 3}
    )
    # base 10, 20, 40, min(80, 40); jitter ((i+1)*1103 + n*9176) % 4 is 3 for these
    assert [supervisors.restart_delay_ms(p, n, 0) for n in range(4)] == [13, 23, 43, 43]
    assert supervisors.restart_delay_ms(supervisors._parse_policy(None), 5, 0) == 0


def test_restart_policy_aliases_and_defaults() -> None:
    p = supervisors._parse_policy(
        {
            "mode": "On-Failure",
            "max": 2,
            "window": Duration(500),
            "backoff": "10ms",
            "factor": 0.5,
            "circuit_open": "1s",
        }
    )
    assert (p.mode, p.max_restarts, p.window_ms, p.backoff_ms) == ("on_failure", 2, 500, 10)
    assert p.factor == 1.0  # factors below 1 are raised to 1
    assert p.circuit_open_ms == 1000
    d = supervisors._parse_policy("always")
    assert (d.mode, d.max_restarts, d.window_ms) == ("always", None, 60_000)
    with pytest.raises(HarnError, match="unknown restart mode 'sometimes'"):
        supervisors._parse_policy("sometimes")
    with pytest.raises(HarnError, match="must be a string or dict, got int"):
        supervisors._parse_policy(3)


def test_duration_strings() -> None:
    assert [supervisors._duration_ms(v) for v in ("5", "5ms", "2s", "1m", "1h")] == [
        5,
        5,
        2000,
        60_000,
        3_600_000,
    ]
    assert supervisors._duration_ms("5 days") is None
    assert supervisors._duration_ms(-3) == 0


def test_scopes_follow_the_task_context(thread: Any) -> None:
    assert shared.resolve_scope(thread, None, None, "t") == "task_group:task_root"
    assert shared.resolve_scope(thread, "task", None, "t") == "task:task_root"
    assert shared.resolve_scope(thread, "global", None, "t") == "global:process"
    assert shared.resolve_scope(thread, "team-7", None, "t") == "team-7:team-7"
    assert shared.resolve_scope(thread, "tenant", {"tenant_id": "acme"}, "t") == "tenant:acme"
    with pytest.raises(HarnError, match="tenant scope requires tenant_id"):
        shared.resolve_scope(thread, "tenant", None, "t")
    child = Runtime().new_thread()
    task_context.install(
        child, task_context.child_context(thread, "task_root:parallel:1:0", "parallel", "g1")
    )
    assert shared.resolve_scope(child, None, None, "t") == "task_group:g1"
    assert shared.resolve_scope(child, "root_task", None, "t") == "root_task:task_root"


def test_cell_cas_checks_value_and_version(thread: Any) -> None:
    h = shared.shared_cell(thread, {"key": "c", "initial": 1})
    snap = shared.shared_snapshot(thread, h)
    assert snap == {"_type": "shared_snapshot", "value": 1, "version": 0}
    assert shared.shared_set(thread, h, 1) == 1  # same value, new version
    assert shared.shared_cas(thread, h, snap, 2) is False  # stale
    assert shared.shared_cas(thread, h, 1, 2) is True  # plain value: version not checked
    m = shared.shared_metrics(thread, h)
    assert (m["cas_success_count"], m["cas_failure_count"], m["stale_read_count"]) == (1, 1, 1)
    assert m["version"] == 2
    # opening again keeps the existing value
    shared.shared_cell(thread, {"key": "c", "initial": 99})
    assert shared.shared_get(thread, "c") == 2


def test_sync_permits_without_waiting(thread: Any) -> None:
    p = _finish(sync.sync_semaphore_acquire(thread, "s", 2, 2))
    assert p["permits"] == 2 and p["kind"] == "semaphore"
    assert _finish(sync.sync_semaphore_acquire(thread, "s", 2, 1, 0)) is None
    assert sync.sync_release(thread, p) is True
    assert sync.sync_release(thread, p) is False
    r = _finish(sync.sync_rwlock_acquire(thread, "l", "read", 0))
    assert _finish(sync.sync_rwlock_acquire(thread, "l", "read", 0)) is not None
    assert _finish(sync.sync_rwlock_acquire(thread, "l", "write", 0)) is None
    assert sync.held_permits_of(thread)[0]["permit_id"] == r["id"]
    with pytest.raises(HarnError, match="capacity must be > 0"):
        _finish(sync.sync_semaphore_acquire(thread, "z", 0))
    with pytest.raises(HarnError, match="4 permit\\(s\\) requested, capacity is 2"):
        _finish(sync.sync_semaphore_acquire(thread, "s", 2, 4))


def test_circuit_breaker_states(thread: Any) -> None:
    clock = thread.runtime.clock
    clock.set(0)
    assert shared.circuit_breaker(thread, "c", 2, 50) == "c"
    assert shared.circuit_record_failure(thread, "c") is False
    assert shared.circuit_check(thread, "c") == "closed"
    assert shared.circuit_record_failure(thread, "c") is True
    assert shared.circuit_check(thread, "c") == "open"
    clock.advance(50)
    assert shared.circuit_check(thread, "c") == "half_open"
    shared.circuit_record_success(thread, "c")
    assert shared.circuit_check(thread, "c") == "closed"
    with pytest.raises(HarnError, match="threshold must be >= 1"):
        shared.circuit_breaker(thread, "d", 0)


def test_mutex_block_lowering_targets(thread: Any) -> None:
    permit = _finish(sync.mutex_enter(thread))
    assert permit["key"] == "__default__"
    assert _finish(sync.sync_mutex_acquire(thread, "__default__", 0)) is None
    sync.mutex_exit(thread, permit)
    again = _finish(sync.sync_mutex_acquire(thread, "__default__", 0))
    assert again is not None and again["id"] != permit["id"]
    sync.mutex_exit(thread, None)
