"""Retriggerable workers (lifecycle.md 1.1 ``awaiting``, T8, T12, T13; 2.6-2.8; 6.1; 12):
a worker spawned with ``carry: {retriggerable: true}`` ends each cycle ``awaiting``
(``WorkerWaitingForInput``), ``worker_trigger`` starts the next cycle, ``send_input`` and
``close_agent`` accept it, ``wait_agent`` returns there, and its snapshot says so."""

from __future__ import annotations

from pathlib import Path

from tests.lifecycle.conftest import RunHarn, lines, load, snapshots

#: One retriggerable background sub-agent; ``first`` is its first cycle's answer.
SPAWN = """
  llm_mock({text: "first"})
  const h = sub_agent_run("cycle one", {provider: "mock", background: true,
    carry: {retriggerable: true}})
"""


def _events_of(h: str = "h") -> str:
    return f"""
  for e in worker_events() {{
    if e.worker_id == {h}.id {{ println("event " + e.event + ":" + e.status) }}
  }}
"""


def test_a_cycle_ends_awaiting_and_keeps_its_result(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        f"""
pipeline main() {{
{SPAWN}
  const w = wait_agent(h)
  println(w.status)
  println(w.result.summary)
  println(w.finished_at == nil)
  println(type_of(w.awaiting_started_at))
  println(list_agents()[0].status)
  println(wait_agent([h])[0].status)
{_events_of()}
}}
"""
    )
    assert lines(out) == [
        "awaiting",
        "first",
        "true",
        "string",
        "awaiting",
        "awaiting",
        "event WorkerSpawned:running",
        "event WorkerWaitingForInput:awaiting_input",
    ]


def test_worker_trigger_runs_the_next_cycle(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        f"""
pipeline main() {{
{SPAWN}
  llm_mock({{text: "second"}})
  wait_agent(h)
  const t = worker_trigger(h, {{step: 2, items: ["a"]}})
  println(t.status)
  println(t.task)
  println(t.result.summary)
  println(t.awaiting_started_at == nil)
  const w = wait_agent(h)
  println(w.status)
  println(w.result.summary)
  println(w.history)
  println(len(w.transcript.messages))
{_events_of()}
}}
"""
    )
    assert lines(out) == [
        "running",
        '{"items":["a"],"step":2}',
        "first",  # the previous cycle's result stays until this cycle ends
        "true",
        "awaiting",
        "second",
        '[cycle one, {"items":["a"],"step":2}]',
        "4",  # the transcript carried over (inherit): two cycles of user + assistant
        "event WorkerSpawned:running",
        "event WorkerWaitingForInput:awaiting_input",
        "event WorkerProgressed:progressed",
        "event WorkerSpawned:running",
        "event WorkerWaitingForInput:awaiting_input",
    ]


def test_worker_trigger_call_forms(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        f"""
pipeline main(harness: Harness) {{
{SPAWN}
  llm_mock({{text: "second"}})
  llm_mock({{text: "third"}})
  wait_agent(h)
  println(worker_trigger(harness, h.id, "plain text").task)
  println(wait_agent(harness, h).result.summary)
  println(harness.agent.worker_trigger(h, 42).task)
  println(harness.agent.wait_agent(h).result.summary)
}}
"""
    )
    assert lines(out) == ["plain text", "second", "42", "third"]


def test_worker_trigger_errors(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        f"""
fn err(f, id) {{ return replace(unwrap_err(try {{ f() }}), id, "<id>") }}
pipeline main() {{
{SPAWN}
  println(err({{ -> worker_trigger(h, "too early") }}, h.id))
  wait_agent(h)
  println(err({{ -> worker_trigger(h, "") }}, h.id))
  println(err({{ -> worker_trigger(h, "   ") }}, h.id))
  println(err({{ -> worker_trigger(h, nil) }}, h.id))
  println(err({{ -> worker_trigger(h) }}, h.id))
  println(err({{ -> worker_trigger("worker_nope", "x") }}, h.id))
  println(wait_agent(h).status)
  close_agent(h)
  println(err({{ -> worker_trigger(h, "x") }}, h.id))
  llm_mock({{text: "plain"}})
  const p = sub_agent_run("once", {{provider: "mock", background: true}})
  wait_agent(p)
  println(err({{ -> worker_trigger(p, "x") }}, p.id))
}}
"""
    )
    assert lines(out) == [
        "worker_trigger: worker <id> is still running",
        "worker_trigger: payload must not be empty",
        "worker_trigger: payload must not be empty",
        "worker_trigger: payload must not be empty",
        "worker_trigger: requires worker handle and payload",
        "unknown worker: worker_nope",
        "awaiting",  # a refused trigger changes nothing
        "worker_trigger: worker <id> is not awaiting (status=cancelled)",
        "worker_trigger: worker <id> is not retriggerable",
    ]


def test_worker_trigger_on_a_failed_cycle(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({error: {category: "provider", message: "boom"}})
  const h = sub_agent_run("t", {provider: "mock", background: true,
    carry: {retriggerable: true}})
  println(wait_agent(h).status)
  println(contains(unwrap_err(try { worker_trigger(h, "x") }), "is not awaiting (status=failed)"))
}
"""
    )
    assert lines(out) == ["failed", "true"]


def test_send_input_on_an_awaiting_worker(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        f"""
pipeline main() {{
{SPAWN}
  llm_mock({{text: "second"}})
  wait_agent(h)
  const s = send_input(h, "cycle two")
  println(s.status)
  println(s.result)
  println(s.awaiting_started_at == nil)
  const w = wait_agent(h)
  println(w.status + " " + w.result.summary)
  println(w.history)
{_events_of()}
}}
"""
    )
    assert lines(out) == [
        "running",
        "nil",  # send_input clears the result (2.7); worker_trigger keeps it
        "true",
        "awaiting second",
        "[cycle one, cycle two]",
        "event WorkerSpawned:running",
        "event WorkerWaitingForInput:awaiting_input",
        "event WorkerSpawned:running",
        "event WorkerWaitingForInput:awaiting_input",
    ]


def test_close_agent_on_an_awaiting_worker(run_harn: RunHarn, state_dir: Path) -> None:
    out, _ = run_harn(
        f"""
pipeline main(harness: Harness) {{
{SPAWN}
  wait_agent(h)
  println(len(harness.unsettled_state().suspended_subagents))
  const c = close_agent(h)
  println(c.status + " " + c.error)
  println(c.awaiting_started_at == nil)
  println(c.result.summary)
  println(wait_agent(h).status)
  println(close_agent(h).status)
  println(len(harness.unsettled_state().suspended_subagents))
{_events_of()}
}}
"""
    )
    assert lines(out) == [
        "1",
        "cancelled worker cancelled",
        "true",
        "first",
        "cancelled",
        "cancelled",
        "0",
        "event WorkerSpawned:running",
        "event WorkerWaitingForInput:awaiting_input",
        "event WorkerCancelled:cancelled",
    ]
    [snap] = snapshots(state_dir)
    assert load(snap)["status"] == "cancelled"


def test_unsettled_state_item_of_an_awaiting_worker(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        f"""
pipeline main(harness: Harness) {{
{SPAWN}
  wait_agent(h)
  const it = harness.unsettled_state().suspended_subagents[0]
  println(it.handle == h.id)
  println(it.reason + " " + it.status + " " + it.initiator + " " + it.mode)
  println(it.conditions.status + " " + to_string(it.conditions.retriggerable))
  println(it.conditions.awaiting_started_at == wait_agent(h).awaiting_started_at)
  println(it.age_ms >= 0)
  println(it.suspended_at == nil && it.auto_resume_trigger == nil)
  println(it.snapshot_ref == h.snapshot_path)
}}
"""
    )
    assert lines(out) == [
        "true",
        "awaiting_input awaiting pipeline sub_agent",
        "awaiting true",
        "true",
        "true",
        "true",
        "true",
    ]


def test_suspend_and_resume_refuse_an_awaiting_worker(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        f"""
pipeline main() {{
{SPAWN}
  wait_agent(h)
  println(split(unwrap_err(try {{ suspend_agent(h, "r") }}), ": ")[0])
  println(contains(unwrap_err(try {{ suspend_agent(h, "r") }}), "(status=awaiting)"))
  println(split(unwrap_err(try {{ resume_agent(h, "go") }}), ": ")[0])
  println(contains(unwrap_err(try {{ resume_agent(h, "go") }}), "(status=awaiting)"))
  println(wait_agent(h).status)
}}
"""
    )
    assert lines(out) == ["HARN-SUS-001", "true", "HARN-SUS-003", "true", "awaiting"]


def test_snapshot_says_awaiting_and_loads_back(run_harn: RunHarn, state_dir: Path) -> None:
    out, _ = run_harn(
        f"""
pipeline main() {{
{SPAWN}
  println(wait_agent(h).status)
}}
"""
    )
    assert lines(out) == ["awaiting"]
    [snap] = snapshots(state_dir)
    doc = load(snap)
    assert doc["status"] == "awaiting"
    assert doc["finished_at"] is None
    assert isinstance(doc["awaiting_started_at"], str)
    assert doc["carry_policy"]["retriggerable"] is True
    assert doc["latest_payload"]["summary"] == "first"
    # a new runtime loads it as it is (awaiting is not `running`: never `interrupted`) and
    # can trigger its next cycle
    out, _ = run_harn(
        f"""
pipeline main() {{
  llm_mock({{text: "second"}})
  const s = resume_agent("{snap}")
  println(s.status + " " + s.result.summary)
  println(worker_trigger(s, "go on").status)
  const w = wait_agent(s)
  println(w.status + " " + w.result.summary)
}}
"""
    )
    assert lines(out) == ["awaiting first", "running", "awaiting second"]
    assert load(snap)["status"] == "awaiting"
    assert load(snap)["history"] == ["cycle one", "go on"]


def test_persist_state_false_writes_no_snapshot(run_harn: RunHarn, state_dir: Path) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "first"})
  llm_mock({text: "second"})
  const h = sub_agent_run("t", {provider: "mock", background: true,
    carry: {retriggerable: true, persist_state: false}})
  wait_agent(h)
  worker_trigger(h, "again")
  println(wait_agent(h).status)
}
"""
    )
    assert lines(out) == ["awaiting"]
    assert snapshots(state_dir) == []


def test_spawn_agent_stage_worker_is_retriggerable(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(harness: Harness) {
  llm_mock({text: "first"})
  llm_mock({text: "second"})
  const h = spawn_agent({task: "t", node: {provider: "mock"}, carry: {retriggerable: true}})
  println(wait_agent(h).status)
  // only sub_agent workers are listed as unsettled (6.1)
  println(len(harness.unsettled_state().suspended_subagents))
  worker_trigger(h, "again")
  println(wait_agent(h).result.summary)
}
"""
    )
    assert lines(out) == ["awaiting", "0", "second"]


def test_run_resume_of_a_retriggerable_worker_ends_awaiting_with_exit_0(tmp_path: Path) -> None:
    from tests.conftest import harnpy

    (tmp_path / "main.harn").write_text(
        "pipeline main() {\n"
        '  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption",'
        ' arguments: {reason: "need approval"}}]})\n'
        '  llm_mock({text: "cycle done"})\n'
        '  const h = sub_agent_run("work", {provider: "mock", background: true,'
        " carry: {retriggerable: true}})\n"
        "  println(wait_agent(h).snapshot_path)\n"
        "}\n",
        encoding="utf-8",
    )
    env = {"HARN_WORKER_STATE_DIR": str(tmp_path / "state")}
    first = harnpy("run", "main.harn", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    snap = first.stdout.strip()
    p = harnpy("run", "--resume", snap, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "cycle done\n"
    assert "awaits input" in p.stderr
    assert load(Path(snap))["status"] == "awaiting"
    # an awaiting worker is not suspended: a second resume is refused and changes nothing
    before = Path(snap).read_bytes()
    again = harnpy("run", "--resume", snap, "--json", cwd=tmp_path, env=env)
    assert again.returncode == 1 and "HARN-SUS-003" in again.stdout
    assert Path(snap).read_bytes() == before
