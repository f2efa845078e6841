"""The in-process dispatcher: registry, matching by provider + event kind, resume waits
(trigger / timeout / on_event) against an injected clock, durable claims, and the Harn
builtins end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnpy.lifecycle.triggers.bindings import ResumeRequest, TriggerRegistryError
from harnpy.lifecycle.triggers.dispatcher import TriggerDispatcher, run_sync
from harnpy.lifecycle.triggers.spec import parse_trigger_spec
from harnpy.lifecycle.triggers.store import open_store
from harnpy.runtime.clock import Clock
from tests.conftest import harnpy

T0 = 1_780_000_000_000  # 2026-05-28T...Z, a fixed epoch for the mock clock
GH = {"kind": "review.approved", "provider": "github"}


def make() -> tuple[TriggerDispatcher, Clock, list[ResumeRequest], list[str]]:
    clock = Clock()
    clock.set(T0)
    warnings: list[str] = []
    d = TriggerDispatcher(clock=clock, warn=warnings.append)
    got: list[ResumeRequest] = []
    d.resume_handler = got.append
    return d, clock, got, warnings


def binding(d: TriggerDispatcher, **cfg: Any) -> Any:
    return d.register(parse_trigger_spec({"handler": "worker://q", **cfg}))


# ---------------------------------------------------------------- registry and matching


def test_register_assigns_ids_and_versions() -> None:
    d, *_ = make()
    b = binding(d, kind="issue.opened", provider="webhook")
    assert b.id.startswith("dynamic_trigger_") and b.version == 1
    snap = b.snapshot()
    assert snap["source"] == "dynamic" and snap["handler_kind"] == "worker"
    assert snap["state"] == "active" and snap["metrics"]["received"] == 0
    named = binding(d, id="t1", kind="k", provider="p")
    with pytest.raises(TriggerRegistryError, match="duplicate trigger id 't1'"):
        binding(d, id="t1", kind="k", provider="p")
    assert d.unregister("t1")
    again = binding(d, id="t1", kind="k", provider="p")
    assert (named.version, again.version) == (1, 2)
    with pytest.raises(TriggerRegistryError, match="unknown trigger binding version 1"):
        d.resolve("t1", 1)
    with pytest.raises(TriggerRegistryError, match="unknown trigger id 'nope'"):
        d.resolve("nope")


def test_route_matches_provider_and_event_kind() -> None:
    d, *_ = make()
    binding(d, kind="review.approved", provider="github")
    binding(d, kind="review", provider="github", match={"events": ["review.dismissed"]})
    binding(d, kind="review.approved", provider="gitlab")
    handles = run_sync(d.route_event({"provider": "github", "kind": "review.approved"}))
    assert len(handles) == 1 and handles[0]["status"] == "dispatched"
    handles = run_sync(d.route_event({"provider": "github", "kind": "review.dismissed"}))
    assert len(handles) == 1
    assert run_sync(d.route_event({"provider": "github", "kind": "push"})) == []
    assert len(d.worker_queues["q"]) == 2
    ev = d.worker_queues["q"][0]
    for key in ("id", "received_at", "dedupe_key", "trace_id", "headers", "provider_payload"):
        assert key in ev
    assert ev["provider_payload"]["raw"] == {"provider": "github", "kind": "review.approved"}


def test_fire_errors() -> None:
    d, *_ = make()
    b = binding(d, kind="k", provider="p")
    with pytest.raises(ValueError, match="missing string field `provider`"):
        run_sync(d.fire(b.id, {"kind": "k"}))
    with pytest.raises(ValueError, match="trigger event must be a dict-like value"):
        run_sync(d.fire(b.id, "ping"))
    with pytest.raises(ValueError, match="missing string field `id`"):
        run_sync(d.fire({"version": 1}, {"provider": "p", "kind": "k"}))
    with pytest.raises(TriggerRegistryError):
        run_sync(d.fire({"id": b.id, "version": 9}, {"provider": "p", "kind": "k"}))


def test_handler_variant_without_executor_goes_to_dlq() -> None:
    d, *_ = make()
    spec = parse_trigger_spec(
        {"kind": "k", "provider": "p", "handler": {"kind": "interrupt_and_suspend"}}
    )
    b = d.register(spec)
    h = run_sync(d.fire(b.id, {"provider": "p", "kind": "k"}))
    assert h["status"] == "dlq" and "not available" in h["error"]
    d.variant_executors["interrupt_and_suspend"] = lambda disp, bnd, ev: {"status": "broadcast"}
    h = run_sync(d.fire(b.id, {"provider": "p", "kind": "k"}))
    assert h["status"] == "dispatched" and h["result"] == {"status": "broadcast"}


# ---------------------------------------------------------------- resume waits


def test_trigger_fire_resumes_the_worker_once() -> None:
    d, _clock, got, _ = make()
    h = d.register_resume_wait("worker_1", {"trigger": GH}, "/tmp/w1.json")
    assert h is not None and h["id"].startswith("auto_resume_worker_1_") and h["version"] == 1
    assert [b.snapshot()["handler_kind"] for b in d.list_bindings()] == ["auto_resume"]
    ev = {"provider": "github", "kind": "review.approved", "payload": {"decision": "approved"}}
    res = run_sync(d.fire(h, ev))
    assert res["status"] == "dispatched"
    assert len(got) == 1
    req = got[0]
    assert (req.worker_id, req.initiator, req.continue_transcript) == (
        "worker_1",
        "triggered",
        True,
    )
    assert req.input == ev  # provider_payload.raw = the event as given
    assert req.trigger_info()["kind"] == "review.approved"
    with pytest.raises(TriggerRegistryError):  # one-shot: the binding is gone
        run_sync(d.fire(h, ev))
    assert d.pending_waits() == []


@pytest.mark.parametrize(
    ("action", "expect"),
    [
        ("resume_with_summary", ("resume", "timeout", False, None)),
        ("fail", ("fail", "timeout", True, None)),
        ("resume_with_input", ("resume", "triggered", True, "raw")),
    ],
)
def test_timeout_actions(action: str, expect: tuple[str, str, bool, Any]) -> None:
    d, clock, got, _ = make()
    h = d.register_resume_wait(
        "w", {"trigger": GH, "timeout": {"duration_minutes": 5, "on_timeout": action}}
    )
    assert h is not None and h["deadline_ms"] == T0 + 5 * 60_000
    clock.advance(4 * 60_000 + 59_000)
    assert d.poll() == [] and got == []
    clock.advance(1_000)
    fired = d.poll()
    assert [f["cause"] for f in fired] == ["timeout"]
    (req,) = got
    assert (req.action, req.initiator, req.continue_transcript) == expect[:3]
    assert req.timeout_action == action
    if expect[3] == "raw":
        assert req.input == {
            "type": "auto_resume.timeout",
            "worker_id": "w",
            "trigger_id": h["id"],
            "on_timeout": action,
        }
    else:
        assert req.input is None
    clock.advance(60 * 60_000)
    assert d.poll() == [] and len(got) == 1


def test_timeout_measured_against_the_absolute_deadline() -> None:
    d, clock, got, _ = make()
    deadline = T0 + 10 * 60_000
    clock.advance(8 * 60_000)  # a cold load 8 minutes after the park
    h = d.register_resume_wait(
        "w", {"trigger": GH, "timeout": {"duration_minutes": 10}}, deadline_ms=deadline
    )
    assert h is not None and h["deadline_ms"] == deadline
    clock.advance(2 * 60_000)  # exactly the original deadline, not 10 min after reload
    assert len(d.poll()) == 1 and len(got) == 1


def test_resume_cancels_the_late_timer() -> None:
    d, clock, got, _ = make()
    h = d.register_resume_wait("w", {"trigger": GH, "timeout": {"duration_minutes": 1}})
    assert d.cancel_resume_wait(h)  # the worker was resumed by its parent
    assert not d.cancel_resume_wait(h)
    clock.advance(5 * 60_000)
    assert d.poll() == [] and got == []


def test_emit_event_wakes_waiting_workers() -> None:
    d, _clock, got, warnings = make()
    d.register_resume_wait("a", {"on_event": "deploy.done"})
    d.register_resume_wait("b", {"on_event": "deploy.done", "trigger": GH})
    d.register_resume_wait("c", {"on_event": "other"})
    assert any("on_event without a trigger is wired by harnpy" in w for w in warnings)
    out = d.emit_event("deploy.done", {"sha": "abc"})
    assert out["woken"] == ["a", "b"] and out["topic"] == "deploy.done"
    assert [(r.worker_id, r.input, r.cause) for r in got] == [
        ("a", {"sha": "abc"}, "event"),
        ("b", {"sha": "abc"}, "event"),
    ]
    assert d.emit_event("deploy.done", 1)["woken"] == []  # one-shot
    assert d.event_log["deploy.done"][1]["payload"] == 1
    with pytest.raises(ValueError, match="unsupported characters"):
        d.emit_event("deploy done", {})


def test_timeout_without_trigger_is_not_armed() -> None:
    d, clock, got, warnings = make()
    assert d.register_resume_wait("w", {"timeout": {"duration_minutes": 1}}) is None
    assert any("not armed" in w for w in warnings)
    clock.advance(10 * 60_000)
    assert d.poll() == [] and got == []


def test_open_park_registers_nothing() -> None:
    d, *_ = make()
    assert d.register_resume_wait("w", None) is None
    assert d.register_resume_wait("w", {}) is None
    assert d.list_bindings() == []


# ---------------------------------------------------------------- durable waits


def test_durable_wait_is_recorded_and_claimed(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "waits.sqlite3"))
    clock = Clock()
    clock.set(T0)
    d = TriggerDispatcher(clock=clock, store=store)
    got: list[ResumeRequest] = []
    d.resume_handler = got.append
    snap = tmp_path / "worker_w.json"
    snap.write_text('{"status": "suspended"}')
    h = d.register_resume_wait(
        "w", {"trigger": GH, "timeout": {"duration_minutes": 5}}, str(snap), durable=True
    )
    assert h is not None and h["durable"]
    rec = store.get(h["id"])
    assert rec is not None and rec.status == "pending" and rec.deadline_ms == T0 + 300_000
    assert rec.snapshot_sha256 and rec.match_events == ["review.approved"]
    run_sync(d.fire(h, {"provider": "github", "kind": "review.approved"}))
    assert len(got) == 1
    rec = store.get(h["id"])
    assert rec is not None and rec.status == "completed" and store.receipt(h["id"]) is not None


def test_durable_wait_claimed_elsewhere_is_skipped(tmp_path: Path) -> None:
    path = str(tmp_path / "waits.sqlite3")
    store = open_store(path)
    clock = Clock()
    clock.set(T0)
    d = TriggerDispatcher(clock=clock, store=store)
    got: list[ResumeRequest] = []
    d.resume_handler = got.append
    h = d.register_resume_wait("w", {"on_event": "go"}, durable=True)
    assert h is not None
    other = open_store(path)  # a `harnpy worker` process got there first
    assert other.post_event("go", {}, T0) == [h["id"]]
    claim = other.claim(h["id"], "worker:other", T0, 60_000)
    assert claim is not None
    d.emit_event("go", {})
    assert got == []  # not resumed twice
    assert d.pending_waits() == []


# ---------------------------------------------------------------- builtins end to end

SCRIPT = r"""
pipeline main(task) {
  println(parse_resume_conditions(nil))
  println(parse_resume_conditions({timeout: {duration_minutes: 5}, on_event: " ci.green "}))
  println(try { parse_resume_conditions({timeout: {duration_minutes: 0}}) })
  const h = trigger_register({kind: "issue.opened", provider: "webhook",
    handler: { ev -> return "got " + ev.kind }})
  println(h.version)
  println(h.handler_kind + " " + h.state)
  const d = trigger_fire(h, {provider: "webhook", kind: "issue.opened"})
  println(d.status + " " + d.result)
  const bad = trigger_register({id: "boom", kind: "x", provider: "y",
    handler: { ev -> throw "boom" }})
  const d2 = trigger_fire("boom", {provider: "y", kind: "x"})
  println(d2.status + " " + d2.error)
  println(len(trigger_list()))
  println(trigger_unregister(bad))
  println(trigger_unregister("boom"))
  println(try { trigger_fire("boom", {provider: "y", kind: "x"}) })
  println(try { trigger_register({kind: "x"}) })
  const c = trigger_register({kind: "channel.emit", provider: "channel",
    match: {events: ["channel:deploys"]}, handler: { ev -> return ev.provider_payload.payload }})
  const r = emit_channel("deploys", {v: 1})
  println(r.name_resolved + " " + to_string(r.dispatched))
  println(emit_event("ci.green", {ok: true}).topic)
  println(try { emit_event("ci green", {}) })
}
"""

EXPECTED = """nil
{on_event: ci.green, timeout: {duration_minutes: 5, on_timeout: resume_with_summary}}
Result.Err(HARN-SUS-002: invalid ResumeConditions.timeout.duration_minutes: must be a positive int)
1
local active
dispatched got issue.opened
dlq boom
2
true
false
Result.Err(Runtime error: trigger stdlib: unknown trigger id 'boom')
Result.Err(Runtime error: trigger_register: missing string field `provider`)
tenant:default:deploys 1
ci.green
Result.Err(Runtime error: emit_event: topic 'ci green' contains unsupported characters)
"""


def test_builtins_end_to_end(tmp_path: Path) -> None:
    f = tmp_path / "t.harn"
    f.write_text(SCRIPT)
    p = harnpy("run", str(f), cwd=tmp_path, env={"HARNPY_STORE": ""})
    assert p.returncode == 0, p.stderr
    assert p.stdout == EXPECTED


CRON_SCRIPT = r"""
pipeline main(task) {
  mock_time(1780000000000)
  const h = trigger_register({kind: "cron.tick", provider: "cron", schedule: "*/5 * * * *",
    handler: { ev -> println("tick " + ev.provider_payload.raw.tick_at + " x"
      + to_string(ev.provider_payload.raw.coalesced)) }})
  println(h.cron.next_fire_at)
  advance_time(16 * 60 * 1000)
  println(len(trigger_poll()))
  yield_now()
  sleep(5 * 60 * 1000)
  println("done")
}
"""


def test_cron_binding_fires_from_the_clock(tmp_path: Path) -> None:
    f = tmp_path / "c.harn"
    f.write_text(CRON_SCRIPT)
    p = harnpy("run", str(f), cwd=tmp_path, env={"HARNPY_STORE": ""})
    assert p.returncode == 0, p.stderr
    # 1780000000000 ms = 2026-05-28T20:26:40Z; ticks every 5 minutes
    assert p.stdout.splitlines() == [
        "2026-05-28T20:30:00Z",
        "1",
        "tick 2026-05-28T20:40:00Z x3",  # 16 minutes of ticks coalesced into one fire
        "tick 2026-05-28T20:45:00Z x1",  # fired by the scheduler timer during sleep()
        "done",
    ]


def test_runtime_timer_fires_timeouts_while_the_program_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harnpy.lifecycle.triggers import get_dispatcher
    from harnpy.runtime.runtime import Runtime

    monkeypatch.delenv("HARNPY_STORE", raising=False)
    out: list[str] = []
    rt = Runtime(stdout=out.append)
    rt.clock.set(T0)
    d = get_dispatcher(rt)
    assert get_dispatcher(rt) is d and d.store is None
    seen: list[tuple[int, ResumeRequest]] = []
    d.resume_handler = lambda req: seen.append((rt.clock.now_ms(), req))
    d.register_resume_wait("w", {"on_event": "never", "timeout": {"duration_minutes": 1}})
    mod = rt.load_main("<t>", 'pipeline main(t) { sleep(120000)\n println("woke") }')
    rt.run_module(mod)
    assert "".join(out) == "woke\n"
    assert [(at - T0, r.cause, r.initiator) for at, r in seen] == [(60_000, "timeout", "timeout")]
