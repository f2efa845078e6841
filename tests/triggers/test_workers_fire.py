"""``harnpy workers fire PROVIDER KIND [--payload JSON]``: a trigger event from the shell.
A worker parked (with a store) on ``conditions.trigger`` becomes due when a matching event
is fired from another process, and ``harnpy worker`` resumes it; a non-matching event wakes
nothing (exit 1); without a store the command says why nothing can wait."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import harnpy

PARK = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "review",
    conditions: {trigger: {kind: "review.approved", provider: "github"}}}}]})
  llm_mock({text: "shipped"})
  const r = agent_loop("go", nil, {provider: "mock", max_iterations: 5})
  println(r.status)
}
"""


def test_a_fired_event_makes_the_waiting_worker_due_and_harnpy_worker_resumes_it(
    tmp_path: Path,
) -> None:
    env = {"HARN_LLM_CALLS_DISABLED": "1", "HARNPY_STORE": f"sqlite:///{tmp_path}/s.db"}
    (tmp_path / "t.harn").write_text(PARK)
    p = harnpy("run", "t.harn", cwd=tmp_path, env=env)
    assert p.returncode == 0 and p.stdout.strip() == "suspended", p.stderr
    other = tmp_path / "elsewhere"
    other.mkdir()
    miss = harnpy("workers", "fire", "github", "review.closed", cwd=other, env=env)
    assert miss.returncode == 1 and "no parked worker waits on a github:review.closed" in (
        miss.stderr
    )
    bad = harnpy("workers", "fire", "github", "review.approved", "--payload", "{", env=env)
    assert bad.returncode == 2 and "--payload is not JSON" in bad.stderr
    hit = harnpy(
        "workers", "fire", "github", "review.approved", "--payload", '{"pr": 7}', cwd=other, env=env
    )
    assert hit.returncode == 0, hit.stderr
    assert "due (trigger github:review.approved)" in hit.stdout
    ls = harnpy("workers", "ls", "--json", cwd=other, env=env)
    (row,) = json.loads(ls.stdout)
    assert row["due"] == "trigger", row
    w = harnpy("worker", "--once", cwd=tmp_path, env=env)
    assert w.returncode == 0, w.stderr
    assert "trigger -> resumed" in w.stderr + w.stdout
    done = harnpy("workers", "ls", "--all", "--json", cwd=other, env=env)
    assert [r["status"] for r in json.loads(done.stdout)] == ["completed"]
    again = harnpy("workers", "fire", "github", "review.approved", cwd=other, env=env)
    assert again.returncode == 1  # nothing waits any more


def test_without_a_store_fire_says_nothing_can_wait(tmp_path: Path) -> None:
    p = harnpy("workers", "fire", "github", "x", cwd=tmp_path, env={"HARNPY_STORE": ""})
    assert p.returncode == 1 and "no wait store" in p.stderr
