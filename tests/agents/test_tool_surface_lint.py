"""Tool-surface lint codes, synthesized tools (argument checks, deterministic cache ids,
the cache in program snapshots), agent() values, and std/context rendering."""

from __future__ import annotations

from pathlib import Path

from tests.agents.conftest import RunHarn, lines
from tests.conftest import harnpy


def test_surface_codes_and_validity(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  var t = tool_registry()
  t = tool_define(t, "write", "w", {parameters: {path: "string"}, handler: { a -> a },
    annotations: {kind: "edit", side_effect_level: "workspace_write"}})
  let r = tool_surface_validate({
    tools: t,
    policy: {side_effect_level: "read_only", tools: ["write", "ghost"],
      tool_arg_constraints: [{tool: "write", arg_key: "path"}]},
    approval_policy: {auto_approve: ["wr*"], require_approval: ["zz*"]},
    system: "call write({path: 1}) or nuke({})",
  })
  println(r.valid)
  println(r.diagnostics.map({ d -> d.code }))
  let ok = tool_surface_validate({tools: t})
  println([ok.valid, len(ok.diagnostics)])
  println(try { tool_surface_validate(3) } catch (e) { contains(e, "expects a dict") })
}
"""
    )
    assert lines(out) == [
        "false",
        "[TOOL_SURFACE_SIDE_EFFECT_EXCEEDS_POLICY, TOOL_SURFACE_UNKNOWN_POLICY_TOOL, "
        "TOOL_SURFACE_UNKNOWN_PROMPT_TOOL, TOOL_SURFACE_APPROVAL_PATTERN_NO_MATCH]",
        "[true, 0]",
        "true",
    ]


def test_synthesized_tools_check_arguments_and_share_ids(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  let f = tool_synthesize({description: "Write a file", parameters: {path: {type: "string"},
    mode: {type: "string", required: false}}, capabilities: ["fs.write"]})
  let r = f({path: "a"})
  println([r.status, r.name, r.side_effect_level])
  let g = tool_synthesize({description: "Write a file", parameters: {path: {type: "string"},
    mode: {type: "string", required: false}}, capabilities: ["fs.write"]})
  println(g({path: "b"}).tool_id == r.tool_id)
  println(len(tool_synthesis_cache()))
  println(try { f({}) } catch (e) { e })
  println(try { tool_synthesize({description: "x", executor: "rocket"}) } catch (e) { contains(e, "unknown executor") })
  let h = tool_synthesize({description: "Ask", executor: "host_bridge", host_tool: "Ask"})
  println(try { h({}) } catch (e) { contains(e, "needs a host") })
}
"""
    )
    assert lines(out) == [
        "[dry_run, write_a_file, workspace_write]",
        "true",
        "1",
        "write_a_file: missing required argument `path`",
        "true",
        "true",
    ]


def test_synthesized_tool_and_cache_survive_a_snapshot(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text(
        """
pipeline main(task) {
  let f = tool_synthesize({name: "fetch", description: "Fetch", parameters: {url: {type: "string"}},
    capabilities: ["http"]})
  __snapshot_exit(env("SNAP"))
  println(f({url: "u"}).side_effect_level)
  println(tool_synthesis_cache()[0].name)
}
"""
    )
    snap = tmp_path / "s.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["network", "fetch"]


def test_agent_values(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  let a = agent("helper", {system: "Be kind", provider: "mock", max_iterations: 2})
  let cfg = agent_config(a, "hi", {model: "m"})
  println([cfg.system, cfg.prompt, cfg.options.provider, cfg.options.model])
  llm_mock({text: "hello there"})
  let r = agent_run(a, "hi")
  println(r.visible_text ?? r.text)
  println(try { agent("", {}) } catch (e) { contains(e, "non-empty string") })
  println(try { agent_run({}, "x") } catch (e) { contains(e, "created with agent()") })
}
"""
    )
    assert lines(out) == ["[Be kind, hi, mock, m]", "hello there", "true", "true"]


def test_std_context_sections_and_prompt(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import "std/context"

pipeline main(task) {
  let ctx = context([section("a", "one", nil), nil, context_attach("file", "x.txt", "abcdef", {max_chars: 13})], nil)
  println(context_render(ctx))
  let p = prompt_compose("Do", ctx, nil)
  println(contains(p.prompt, "<label>Task</label>") && p.system == nil)
}
"""
    )
    assert lines(out) == ["[a]", "one", "", "[file]", "Path: x.txt", "a", "true"]
