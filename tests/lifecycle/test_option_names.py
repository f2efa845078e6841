"""A misspelt agent_loop option is named once with the key it resembles (it used to do
nothing, silently); unknown keys unlike any known one (provider sub-dicts, a host's own
keys) pass without a word."""

from __future__ import annotations

from pathlib import Path

from harnpy.lifecycle.option_names import AGENT_LOOP_OPTIONS, misspelt_options
from tests.conftest import harnpy

PROGRAM = """
pipeline main() {
  for i in 0 to 2 {
    llm_mock({text: "hi"})
    const r = agent_loop("go", nil, {provider: "mock", tols: [], max_iteration: 3,
      ollama: {num_ctx: 1}, my_host_setting: 1, _internal: true})
    println(r.status)
  }
}
"""


def test_misspelt_agent_loop_options_are_named_once(tmp_path: Path) -> None:
    (tmp_path / "o.harn").write_text(PROGRAM)
    p = harnpy("run", "o.harn", cwd=tmp_path, env={"HARN_LLM_CALLS_DISABLED": "1"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["done"] * 3
    warnings = [ln for ln in p.stderr.splitlines() if "warning" in ln]
    assert warnings == [
        "harnpy: warning: agent_loop: unknown option `tols` (did you mean `tools`?); it is ignored",
        "harnpy: warning: agent_loop: unknown option `max_iteration` (did you mean "
        "`max_iterations`?); it is ignored",
    ], p.stderr


def test_sub_agent_run_options_are_checked_too(tmp_path: Path) -> None:
    (tmp_path / "s.harn").write_text(
        'pipeline main() {\n  llm_mock({text: "hi"})\n'
        '  let r = sub_agent_run("q", {provider: "mock", tols: [], judge: {}})\n'
        "  println(r.status)\n}\n"
    )
    p = harnpy("run", "s.harn", cwd=tmp_path, env={"HARN_LLM_CALLS_DISABLED": "1"})
    assert p.returncode == 0, p.stderr
    warnings = [ln for ln in p.stderr.splitlines() if "warning" in ln]
    assert warnings == [
        "harnpy: warning: sub_agent_run: unknown option `tols` (did you mean `tools`?); it "
        "is ignored"
    ], p.stderr


def test_known_and_unlike_keys_are_not_flagged() -> None:
    known = {k: 1 for k in AGENT_LOOP_OPTIONS}
    assert misspelt_options(known, AGENT_LOOP_OPTIONS) == []
    others = {"ollama": {}, "anthropic": {}, "my_host_setting": 1, "_x": 1, 3: "int key"}
    assert misspelt_options(others, AGENT_LOOP_OPTIONS) == []
    assert misspelt_options({"loop_untill_done": True}, AGENT_LOOP_OPTIONS) == [
        ("loop_untill_done", "loop_until_done")
    ]
