"""An agent loop snapshotted inside a tool handler continues in a new process.

``__snapshot_exit`` inside a tool handler writes the whole program (main frames, the loop
frame of ``std/agent/_loop`` with its state dict, the handler's frame) and ends the
process; ``harnpy run --resume`` restores it in a fresh process, where the handler returns
and the loop goes on with its transcript, counters and tool records intact.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import harnpy

PROGRAM = """
fn tools() {
  return tool_define(tool_registry(), "checkpoint", "save progress", {
    parameters: {note: "string"},
    handler: { args ->
      if (env("SNAP") ?? "") != "" {
        __snapshot_exit(env("SNAP"))
      }
      return "saved " + args.note
    },
  })
}

pipeline main() {
  llm_mock({text: "thinking first", tool_calls: [{name: "checkpoint", arguments: {note: "n1"}}]})
  println("before the loop")
  let r = agent_loop("work, then checkpoint", nil, {provider: "mock", tools: tools(), max_iterations: 2})
  println("after the loop: " + r.status + " " + to_string(r.llm.iterations))
  println(r.tool_calls.map({ c -> c.name + "=" + to_string(c.result) }))
  println(transcript_messages(r.transcript).map({ m -> m.role }))
}
"""


def test_loop_state_crosses_processes(tmp_path: Path) -> None:
    prog = tmp_path / "prog.harn"
    prog.write_text(PROGRAM, encoding="utf-8")
    snap = tmp_path / "state.json"
    first = harnpy("run", str(prog), cwd=tmp_path, env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    assert first.stdout.splitlines() == ["before the loop"]
    doc = json.loads(snap.read_text(encoding="utf-8"))
    assert any(m["key"] == "std/agent/_loop" for m in doc["modules"])

    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path, env={"SNAP": ""})
    assert resumed.returncode == 0, resumed.stderr
    # Turn 1 (before the snapshot) and turn 2 (a default mock answer after the resume,
    # which calls the first offered tool with placeholder arguments).
    assert resumed.stdout.splitlines() == [
        "after the loop: budget_exhausted 2",
        "[checkpoint=saved n1, checkpoint=saved ]",
        "[user, assistant, tool, assistant, tool]",
    ]
