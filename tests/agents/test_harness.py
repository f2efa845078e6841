"""The ``Harness`` value and the harness-first call forms (lifecycle.md 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnpy.lifecycle.harness import MEMBERS, build
from harnpy.runtime.values import Builtin, StructValue
from tests.agents.conftest import RunHarn, lines


def test_pipeline_parameter_and_global(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(harness: Harness, task) {
  println(type_of(harness))
  println(task == nil)
  harness.stdio.println("stdio works")
  harness.stdio.print("no newline")
  println("")
  helper()
}
fn helper() {
  harness.stdio.println("global harness works")
}
"""
    )
    assert lines(out) == ["struct", "true", "stdio works", "no newline", "global harness works"]


def test_script_mode_sees_the_global_harness(run_harn: RunHarn) -> None:
    out, _ = run_harn('harness.stdio.println("script")\nlet harness = 3\nprintln(harness)\n')
    assert lines(out) == ["script", "3"]


def test_members_used_by_the_lifecycle_fixtures(
    run_harn: RunHarn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNPY_TEST_VALUE", "v1")
    out, _ = run_harn(
        f"""
pipeline main(harness: Harness) {{
  harness.llm.mock_enqueue({{text: "queued"}})
  println(llm_call("x", nil, {{provider: "mock"}}).text)
  println(len(harness.llm.mock_calls()))
  println(harness.env.get("HARNPY_TEST_VALUE") + " " + harness.env.get_or("HARNPY_NOPE_X", "dflt"))
  println(len(harness.random.uuid()) == 36 && len(harness.random.uuid_v7()) == 36)
  let r = harness.random.range(5, 5)
  println(r)
  const dir = path_join("{tmp_path}", "sub")
  harness.fs.mkdir(dir)
  harness.fs.write_text(path_join(dir, "f.txt"), "hello")
  println(to_string(harness.fs.exists(path_join(dir, "f.txt"))) + " " + harness.fs.read_text(path_join(dir, "f.txt")))
  println(len(harness.fs.workspace_temp_dir()) > 0)
  println(harness.process.exec("echo", "hi").stdout.trim())
  println(harness.process.exec_at(dir, "ls").stdout.trim())
  const _ = harness.testing.clock_set(1700000000000)
  println(harness.clock.now_ms())
  harness.testing.clock_advance(60000)
  println(harness.clock.now_ms())
  harness.testing.clock_reset()
  println(harness.clock.now_ms() > 1700000060000)
  harness.runtime.yield_now()
  harness.obs.enable_tracing(true)
  println(type_of(harness.obs.trace_spans()))
  let e = harness.emit_audit("my_kind", {{a: 1}})
  println(to_string(e.seq) + " " + e.kind)
  println(pipeline_lifecycle_audit_log_take()[0].payload.a)
  println(len(pipeline_lifecycle_audit_log_snapshot()))
}}
"""
    )
    assert lines(out) == [
        "queued",
        "1",
        "v1 dflt",
        "true",
        "5",
        "true hello",
        "true",
        "hi",
        "f.txt",
        "1700000000000",
        "1700000060000",
        "true",
        "list",
        "1 my_kind",
        "1",
        "0",
    ]


def test_harness_first_forms_of_the_agent_builtins(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { llm_text, with_llm_script } from "std/testing"
import "std/agent/workers"
pipeline main(harness: Harness) {
  with_llm_script(harness.llm, [llm_text("a"), llm_text("b"), llm_text("c")], { ->
    let r = agent_loop(harness, "x", nil, {provider: "mock"})
    println(r.text)
    let h = sub_agent_run(harness, "y", {provider: "mock", background: true})
    println(wait_agent(harness.agent, h).result.summary)
    println(len(list_agents(harness.agent)))
    println(llm_call(harness.llm, "z", nil, {provider: "mock"}).text)
    println(harness.agent.wait_agent(h).status)
    println(close_agent(harness, h).status)
    println(len(harness.llm.mock_calls()))
  })
}
"""
    )
    assert lines(out) == ["a", "b", "1", "c", "completed", "cancelled", "3"]


def test_missing_members_fail_clearly(run_harn: RunHarn) -> None:
    from harnpy.stdlib import load_all

    load_all()  # every builtin module registered, whatever ran before in this process
    value = build()
    # every declared member exists (bound to a builtin or to the clear fallback)
    for group, methods in MEMBERS.items():
        member = value.fields[group]
        assert type(member) is StructValue
        for name in methods:
            assert type(member.fields[name]) is Builtin
    fallback = [
        (g, m)
        for g, methods in MEMBERS.items()
        for m in methods
        if value.fields[g].fields[m].name == "__harness_unavailable"
    ]
    if not fallback:
        pytest.skip("every harness member is implemented in this build")
    group, name = fallback[0]
    out, _ = run_harn(
        f"""
pipeline main(harness: Harness) {{
  println(unwrap_err(try {{ harness.{group}.{name}() }}))
}}
"""
    )
    assert lines(out) == [f"Runtime error: harness.{group}.{name} is not available in harnpy"]


def test_harness_survives_a_snapshot_round_trip(
    run_harn: RunHarn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNPY_SNAPSHOT_EVERYWHERE", "1")
    out, _ = run_harn(
        """
pipeline main(harness: Harness) {
  const h = harness
  llm_mock({text: "one"})
  agent_loop("t", nil, {provider: "mock"})
  h.stdio.println("after the round trip: " + type_of(h))
}
"""
    )
    assert lines(out) == ["after the round trip: struct"]
