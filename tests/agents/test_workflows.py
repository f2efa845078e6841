"""Workflows (harnpy/lifecycle/workflows, stdlib/std/workflow): artifacts and lineage,
graph validation against capability ceilings, the executor's stage kinds (condition
branches, fork/join ordering, map/reduce, verify, subagent provenance), deterministic
replay, run records (save/load, fixtures, eval suites, diffs), std/agents task runs and
sessions, and a run parked in the middle of a workflow resuming in a new process."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agents.conftest import RunHarn, lines
from tests.conftest import harnpy


def test_artifact_lineage_and_selection(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  let a = artifact({kind: "plan", text: "first", priority: 1})
  let b = artifact_derive(a, "summary", {text: "second"})
  println(b.lineage == [a.id])
  println(b.metadata.derived_from == a.id)
  let c = artifact({kind: "summary", text: "third", relevance: 0.9})
  let picked = artifact_select([a, b, c], {include_kinds: ["summary"]})
  println(picked.map({ x -> x.text }))
  println(len(artifact_select([a, b, c], {max_artifacts: 1})))
  println(contains(artifact_context([c], nil), "kind=\\"summary\\""))
  let bad = try { artifact({kind: 3}) } catch (e) { e }
  println(contains(bad, "kind must be"))
}
"""
    )
    assert lines(out) == ["true", "true", "[third, second]", "1", "true", "true"]


_GRAPH = """
  let flow = workflow_graph({
    name: "g",
    entry: "gate",
    nodes: {
      gate: {kind: "condition", context_policy: {include_kinds: ["plan"]}, metadata: {contains_text: GATE}},
      fan: {kind: "fork"},
      docs: {kind: "map", map_policy: {item_artifact_kind: "doc", output_kind: "summary"}},
      join: {kind: "join"},
      report: {kind: "reduce", context_policy: {include_kinds: ["summary"]}, output_contract: {output_kinds: ["report"]}},
    },
    edges: [
      {from: "gate", to: "fan", branch: "true"},
      {from: "gate", to: "report", branch: "false"},
      {from: "fan", to: "join"},
      {from: "fan", to: "docs"},
      {from: "docs", to: "join"},
      {from: "join", to: "report"},
    ],
  })
  let arts = [artifact({kind: "plan", text: "go now"}), artifact({kind: "doc", text: "alpha"}), artifact({kind: "doc", text: "beta"})]
  let r = workflow_execute("t", flow, arts, {max_steps: 10})
  println(r.status)
  println(r.run.stages.map({ s -> s.node_id }))
  println(r.run.stages[0].branch)
  let reports = r.artifacts.filter({ a -> a.kind == "report" })
  println(reports[0].text)
"""


def test_condition_fork_join_map_reduce(run_harn: RunHarn) -> None:
    out, _ = run_harn('pipeline main(task) {\n  let GATE = "go"\n' + _GRAPH + "}\n")
    # the join waits for the map even though the fork queued it first
    assert lines(out) == [
        "completed",
        "[gate, fan, docs, join, report]",
        "true",
        "alpha",
        "",
        "beta",
    ]
    out, _ = run_harn('pipeline main(task) {\n  let GATE = "stop"\n' + _GRAPH + "}\n")
    assert lines(out)[:3] == ["completed", "[gate, report]", "false"]


def test_validation_reports_ceiling_and_structure_errors(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  let bad = workflow_graph({entry: "nope", nodes: {a: {kind: "stage"}}, edges: [{from: "a", to: "ghost"}]})
  let report = workflow_validate(bad)
  println(report.valid)
  println(len(report.errors))
  let flow = workflow_graph({
    capability_policy: {side_effect_level: "workspace_write"},
    nodes: {a: {kind: "stage", capability_policy: {side_effect_level: "network"}}},
  })
  let r = workflow_validate(flow, {side_effect_level: "read_only"})
  println(len(r.errors.filter({ e -> contains(e, "workflow capability_policy") })) == 1)
  println(len(r.errors.filter({ e -> contains(e, "host ceiling") })) == 1)
  let thrown = try { workflow_execute("t", bad, [], nil) } catch (e) { e }
  println(contains(thrown, "invalid workflow"))
  let k = try { workflow_graph({nodes: {a: {kind: "teleport"}}}) } catch (e) { e }
  println(contains(k, "unknown kind"))
}
"""
    )
    assert lines(out) == ["false", "2", "true", "true", "true", "true"]


def test_llm_stages_verify_and_replay(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        """
pipeline main(task) {
  let flow = workflow_graph({
    entry: "act",
    nodes: {
      act: {kind: "stage", model_policy: {provider: "mock"}},
      check: {kind: "verify", verify: {assert_text: "fine"}},
    },
    edges: [{from: "act", to: "check"}],
  })
  llm_mock({text: "all fine"})
  let first = workflow_execute("Do it", flow, [], nil)
  println(first.status)
  println(first.run.stages[1].verification.ok)
  llm_mock({text: "broken"})
  let second = workflow_execute("Do it", flow, [], nil)
  println(second.status)
  let replayed = workflow_execute("Do it", flow, [], {replay_run: first.run})
  println(replayed.status)
  println(replayed.run.stages[0].visible_text)
  println(replayed.run.metadata.replayed_from == first.run.id)
  println(len(llm_mock_calls()))
}
"""
    )
    # the replay made no model call: only the two real runs did
    assert lines(out) == [
        "completed",
        "true",
        "needs_attention",
        "completed",
        "all fine",
        "true",
        "2",
    ]


def test_run_records_round_trip_and_evaluate(run_harn: RunHarn, tmp_path: Path) -> None:
    path = tmp_path / "sub" / "run.json"
    out, _ = run_harn(
        f"""
pipeline main(task) {{
  let good = run_record({{id: "a", status: "completed", stages: [{{node_id: "x"}}]}})
  let bad = run_record({{id: "b", status: "failed", stages: [{{node_id: "x", status: "failed", outcome: "error"}}]}})
  let saved = run_record_save(good, "{path}")
  let loaded = run_record_load(saved.path)
  println(loaded.id)
  let fx = run_record_fixture(good)
  println(run_record_eval(loaded, fx).pass)
  let suite = run_record_eval_suite([{{path: "{path}", fixture: fx}}, {{run: bad, fixture: fx}}])
  println([suite.passed, suite.failed])
  println(suite.cases[1].failures[0])
  let d = run_record_diff(good, bad)
  println(d.stage_diffs[0].fields.map({{ f -> f.field }}))
  let missing = try {{ run_record({{stages: [{{}}]}}) }} catch (e) {{ e }}
  println(contains(missing, "node_id"))
}}
"""
    )
    assert lines(out) == [
        "a",
        "true",
        "[1, 1]",
        "status: expected 'completed', got 'failed'",
        "[status, outcome]",
        "true",
    ]
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["_type"] == "run_record"


def test_a_broken_run_record_file_is_a_clear_error(run_harn: RunHarn, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"_type": "run_record", "id": "x", "stages": [{"kind": "stage"}]}')
    out, _ = run_harn(
        f'pipeline main(task) {{ println(try {{ run_record_load("{bad}") }} catch (e) {{ e }}) }}'
    )
    assert "node_id" in out and "Traceback" not in out


def test_std_agents_task_run_repairs_and_sessions(run_harn: RunHarn, tmp_path: Path) -> None:
    out, _ = run_harn(
        f"""
import "std/agents"
import "std/context"

pipeline main(task) {{
  let flow = workflow({{
    name: "t",
    act: {{mode: "llm", context: context([section("brief", "Be short.", nil)], nil)}},
    verify: {{assert_text: "OK"}},
    repair: {{mode: "llm"}},
  }})
  llm_mock({{text: "not yet"}})
  llm_mock({{text: "fixed OK"}})
  let r = task_run("Write", flow, {{provider: "mock"}})
  println(r.status)
  println(r.repair.visible_text)
  println(contains(llm_mock_calls()[0].messages[0].content, "[brief]"))
  let s = workflow_session(r)
  let p = workflow_session_persist(r, "{tmp_path}/s.json")
  let back = workflow_session_restore(p.run.persisted_path)
  println(back.message_count == s.message_count)
  println(workflow_session_reset(back, true).message_count)
}}
"""
    )
    assert lines(out) == ["needs_attention", "fixed OK", "true", "true", "0"]


def test_a_run_snapshotted_mid_workflow_resumes_in_a_new_process(tmp_path: Path) -> None:
    prog = tmp_path / "wf.harn"
    prog.write_text(
        """
pipeline main(task) {
  var tools = tool_registry()
  tools = tool_define(tools, "pause", "Pause the run", {
    parameters: {},
    handler: { args ->
      __snapshot_exit(env("SNAP"))
      return "resumed"
    },
  })
  llm_mock({text: "calling", tool_calls: [{id: "c1", name: "pause", arguments: {}}]})
  let flow = workflow_graph({
    entry: "work",
    nodes: {
      work: {kind: "stage", mode: "agent", tools: tools, model_policy: {provider: "mock"}},
      wrap: {kind: "stage", model_policy: {provider: "mock"}},
    },
    edges: [{from: "work", to: "wrap"}],
  })
  let r = workflow_execute("go", flow, [], {max_steps: 4})
  println(r.status)
  println(r.run.stages.map({ s -> s.node_id }))
  let tool_results = transcript_messages(r.run.stages[0].transcript).filter({ m -> m.role == "tool" })
  println(tool_results[0].content)
}
"""
    )
    snap = tmp_path / "snap.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap), "HARN_LLM_CALLS_DISABLED": "1"})
    assert first.returncode == 3, first.stderr
    assert "std/workflow/_engine" in snap.read_text()
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # the stage's agent loop, the tool call that parked it and the stage after it all
    # continue in the new process (the mock queue is host state: the resumed process
    # answers with the mock's default reply)
    assert resumed.stdout.splitlines() == ["completed", "[work, wrap]", "resumed"]


_PARK = """
pipeline main(task) {
  PREP
  let flow = workflow_graph({
    name: "review",
    entry: "work",
    nodes: {
      work: {kind: "stage", mode: "agent", model_policy: {provider: "mock"}},
      wrap: {kind: "stage", model_policy: {provider: "mock"}},
    },
    edges: [{from: "work", to: "wrap"}],
  })
  CALL
}
"""


def test_a_parked_stage_suspends_the_run_and_resumes_in_a_new_process(tmp_path: Path) -> None:
    env = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": "state"}
    first_src = _PARK.replace(
        "PREP",
        'llm_mock({text: "", tool_calls: [{id: "p1", name: "agent_await_resumption", '
        'arguments: {reason: "need review"}}]})',
    ).replace(
        "CALL",
        'let r = workflow_execute("go", flow, [], {persist_path: "run.json"})\n'
        "  println(r.status)\n  println(r.suspension.reason)\n"
        "  println(r.run.stages.map({ s -> s.status }))",
    )
    (tmp_path / "first.harn").write_text(first_src)
    first = harnpy("run", "first.harn", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["suspended", "need review", "[suspended]"]
    second_src = _PARK.replace(
        "PREP", 'llm_mock({text: "reviewed"})\n  llm_mock({text: "wrapped"})'
    ).replace(
        "CALL",
        'let r = workflow_resume("run.json", flow, {input: "approved"})\n'
        "  println(r.status)\n"
        '  println(r.run.stages.map({ s -> s.node_id + ":" + s.status }))\n'
        '  println(r.run.stages[1].visible_text + " / " + r.run.stages[2].visible_text)\n'
        '  println(try { workflow_resume(r.run, flow, nil) } catch (e) { contains(e, "not suspended") })',
    )
    (tmp_path / "second.harn").write_text(second_src)
    second = harnpy("run", "second.harn", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    # the parked loop continued in this process (its worker snapshot), then the next stage
    assert second.stdout.splitlines() == [
        "completed",
        "[work:suspended, work:completed, wrap:completed]",
        "reviewed / wrapped",
        "true",
    ]
