"""Loud failures of root agent loops end to end (issue 14 point 2): a root ``agent_loop``
that ends in a provider error, a budget or a refused tool says so on stderr in one line,
and ``harnpy run`` exits 1 when such a loop failed unless the program read the result's
``status``, ``error``, ``tools`` or ``transcript`` (the rule of
:mod:`harnpy.runtime.outcomes`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import harnpy

PROVIDER_ERROR = """
pipeline main() {
  llm_mock({error: {category: "rate_limit", message: "slow down"}})
  let r = agent_loop("hi", nil, {provider: "mock", llm_retries: 0})
  CHECK
  println("after the loop")
}
"""


def _run(
    tmp_path: Path, source: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    prog = tmp_path / "main.harn"
    prog.write_text(source)
    return harnpy("run", str(prog), *args, cwd=tmp_path, env=env)


def _loop_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("harnpy: agent_loop")]


def test_an_unchecked_provider_error_is_reported_and_exits_1(tmp_path: Path) -> None:
    r = _run(tmp_path, PROVIDER_ERROR.replace("CHECK", ""))
    assert r.stdout == "after the loop\n"  # the program ran to its end
    (line,) = _loop_lines(r.stderr)
    assert line.startswith("harnpy: agent_loop (main.harn:4) ended with provider_error:")
    assert "slow down" in line and "try again later" in line
    assert r.returncode == 1
    assert "harnpy run: error: the agent_loop at main.harn:4 ended with provider_error" in (
        r.stderr
    )


@pytest.mark.parametrize(
    "check",
    [
        'if r.status != "done" { eprintln("own handling") }',
        'let s = r["status"]',
        "let e = r?.error",
        'fn failed(res) { return res.status == "provider_error" }\n  println(failed(r))',
        "let rejected = r?.tools?.rejected",
        "let t = r.transcript",
    ],
)
def test_reading_status_or_error_takes_charge_of_the_failure(tmp_path: Path, check: str) -> None:
    r = _run(tmp_path, PROVIDER_ERROR.replace("CHECK", check))
    assert r.returncode == 0, r.stderr
    assert len(_loop_lines(r.stderr)) == 1  # still said once
    assert "harnpy run: error" not in r.stderr


def test_reading_only_the_answer_does_not_take_charge(tmp_path: Path) -> None:
    r = _run(tmp_path, PROVIDER_ERROR.replace("CHECK", "let t = r.text + r.visible_text"))
    assert r.returncode == 1
    assert "harnpy run: error: the agent_loop at main.harn:4 ended with provider_error" in (
        r.stderr
    )


def test_reading_a_sub_agent_envelope_takes_charge(tmp_path: Path) -> None:
    source = """
llm_mock({error: {category: "rate_limit", message: "slow down"}})
let env = sub_agent_run("hi", {provider: "mock", llm_retries: 0})
CHECK
"""
    unchecked = _run(tmp_path, source.replace("CHECK", 'println("no look")'))
    assert unchecked.returncode == 1, unchecked.stderr
    checked = _run(tmp_path, source.replace("CHECK", "println(env.ok)"))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == "false\n"


def test_a_loop_that_completes_prints_nothing_extra(tmp_path: Path) -> None:
    r = _run(
        tmp_path,
        'llm_mock({text: "fine"})\nlet r = agent_loop("hi", nil, {provider: "mock"})\n'
        "println(r.text)\n",
    )
    assert r.returncode == 0 and r.stdout == "fine\n" and r.stderr == ""


def test_budget_exhausted_names_max_iterations(tmp_path: Path) -> None:
    source = """
tool ping() -> string {
  description "Ping."
  return "pong"
}
llm_mock({tool_calls: [{id: "c1", name: "ping", arguments: {}}]})
let r = agent_loop("go", nil, {provider: "mock", tools: [ping], max_iterations: 1})
"""
    r = _run(tmp_path, source)
    (line,) = _loop_lines(r.stderr)
    assert "ended with budget_exhausted: 1 model calls (max_iterations: 1)" in line
    assert "raise max_iterations" in line
    assert r.returncode == 1


def test_a_call_over_its_cost_budget_says_to_raise_the_budget(tmp_path: Path) -> None:
    # the model call is refused by the loop's own budget: the advice is about the budget,
    # not about provider settings (before: "check the provider settings ... API key")
    source = """
llm_mock({text: "a long answer", input_tokens: 100000, output_tokens: 100000})
llm_mock({text: "more"})
let r = agent_loop("go", nil, {provider: "openai", model: "gpt-4o",
  budget: {max_cost_usd: 0.0001}, max_iterations: 3})
"""
    r = _run(tmp_path, source, env={"HARN_LLM_CALLS_DISABLED": "1"})
    (line,) = _loop_lines(r.stderr)
    assert "ended with provider_error: budget exceeded" in line
    assert "raise the budget (max_cost_usd" in line and "API key" not in line
    assert r.returncode == 1


def test_a_refused_tool_call_is_reported(tmp_path: Path) -> None:
    source = """
tool add(a: int, b: int) -> int {
  description "Add."
  return a + b
}
tool rm(path: string) -> string {
  description "Remove a path."
  return "removed"
}
llm_mock({tool_calls: [{id: "c1", name: "rm", arguments: {path: "/"}}]})
llm_mock({text: "ok"})
let r = agent_loop("go", nil, {provider: "mock", tools: [add, rm], policy: {tools: ["add"]}})
println(r.status)
"""
    r = _run(tmp_path, source)
    assert r.stdout == "done\n"
    (line,) = _loop_lines(r.stderr)
    assert "the loop's policy refused tool calls: rm" in line
    assert r.returncode == 0  # the loop finished: a refusal alone does not fail the run


def test_a_workers_failure_is_its_status_not_the_runs(tmp_path: Path) -> None:
    source = """
llm_mock({error: {category: "rate_limit", message: "slow down"}})
let h = sub_agent_run("x", {provider: "mock", background: true, llm_retries: 0})
let s = wait_agent(h)
println("worker ended")
"""
    r = _run(tmp_path, source)
    assert r.stdout == "worker ended\n"
    assert _loop_lines(r.stderr) == []
    assert r.returncode == 0


def test_openai_without_the_sdk_says_install_the_llm_extra(tmp_path: Path) -> None:
    """`pip install harnpy` without the `llm` extra: the import of the SDK fails."""
    fake = tmp_path / "no_sdk" / "openai"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("No module named openai")\n')
    import os

    pythonpath = os.pathsep.join(
        p for p in [str(tmp_path / "no_sdk"), os.environ.get("PYTHONPATH", "")] if p
    )
    env = {"PYTHONPATH": pythonpath, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": ""}
    r = _run(
        tmp_path,
        'let r = agent_loop("hi", nil, {provider: "openai", model: "gpt-4o-mini"})\n',
        env=env,
    )
    (line,) = _loop_lines(r.stderr)
    assert "ended with provider_error" in line
    assert "pip install 'harnpy[llm]'" in line
    assert r.returncode == 1
