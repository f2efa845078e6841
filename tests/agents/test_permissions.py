"""Per-call tool permissions of agent loops (harnpy/lifecycle/permissions.py):
``approval_policy`` globs, ``permissions`` allow/deny rules with predicates, escalation with
once/session grants, the structured ``permission_denied`` tool result, the transcript
events, and a sub-agent refused a call."""

from __future__ import annotations

import json

from tests.agents.conftest import RunHarn, lines

TOOLS = """
tool read_note(path: string) -> string {
  description "Read a note."
  return "read " + path
}
tool write_note(path: string) -> string {
  description "Write a note."
  return "wrote " + path
}
tool shell_exec(cmd: string) -> string {
  description "Run a command."
  return "ran " + cmd
}
"""


def _calls(*calls: tuple[str, str, dict[str, str]]) -> str:
    body = ", ".join(
        f'{{id: "{cid}", name: "{name}", arguments: {json.dumps(args)}}}'
        for cid, name, args in calls
    )
    return f'llm_mock({{tool_calls: [{body}]}})\nllm_mock({{text: "done"}})\n'


def test_approval_policy_globs(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + _calls(("c1", "read_note", {"path": "a"}), ("c2", "shell_exec", {"cmd": "ls"}))
        + """
let r = agent_loop("go", nil, {provider: "mock", tools: [read_note, shell_exec],
  approval_policy: {auto_approve: ["read*"], auto_deny: ["shell*"]}})
println(r.tools.successful)
println(r.tools.rejected)
let msgs = transcript_messages(r.transcript).filter({ m -> m.role == "tool" })
println(msgs[0].content)
println(json_parse(msgs[1].content))
let deny = transcript_events_by_kind(r.transcript, "PermissionDeny")
println([len(deny), deny[0].tool, deny[0].source])
"""
    )
    got = lines(out)
    assert got[0] == "[read_note]"
    assert got[1] == "[shell_exec]"
    assert got[2] == "read a"
    assert got[3] == (
        "{error: permission_denied, reason: auto_denied: tool 'shell_exec' matches deny pattern "
        "'shell*', tool: shell_exec}"
    )
    assert got[4] == "[1, shell_exec, approval_policy]"


def test_write_path_allowlist(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
let tools = tool_define(tool_registry(), "write_file", "Write", {
  handler: { args -> "ok " + args.path },
  parameters: {path: {type: "string"}},
  metadata: {path_params: ["path"]},
})
"""
        + _calls(("c1", "write_file", {"path": "/tmp/x"}), ("c2", "write_file", {"path": "/etc/x"}))
        + """
let r = agent_loop("go", nil, {provider: "mock", tools: tools,
  approval_policy: {write_path_allowlist: ["/tmp/*"]}})
println(r.tool_calls.map({ c -> c.status }))
println(json_parse(transcript_messages(r.transcript)[3].content).reason)
"""
    )
    got = lines(out)
    assert got[0] == "[ok, denied]"
    assert got[1].startswith("write_path_denied: argument 'path' (/etc/x) is outside")


def test_permissions_predicates_grant_and_deny(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + _calls(
            ("c1", "read_note", {"path": "/workspace/a"}),
            ("c2", "read_note", {"path": "/etc/passwd"}),
            ("c3", "write_note", {"path": "/workspace/a"}),
        )
        + """
let r = agent_loop("go", nil, {provider: "mock", tools: [read_note, write_note],
  permissions: {
    allow: {read_note: { args -> args.path.starts_with("/workspace/") }},
    deny: {write_note: { args -> true }},
  }})
println(r.tool_calls.map({ c -> c.status }))
println(transcript_events_by_kind(r.transcript, "PermissionGrant").map({ e -> e.args.path }))
println(transcript_events_by_kind(r.transcript, "PermissionDeny").map({ e -> e.tool }))
"""
    )
    got = lines(out)
    assert got[0] == "[ok, denied, denied]"
    assert got[1] == "[/workspace/a]"
    assert got[2] == "[read_note, write_note]"


def test_escalation_session_grant_and_refusal(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + _calls(
            ("c1", "write_note", {"path": "/workspace/a"}),
            ("c2", "write_note", {"path": "/workspace/b"}),
            ("c3", "shell_exec", {"cmd": "rm"}),
        )
        + """
var asked = []
let r = agent_loop("go", nil, {provider: "mock", tools: [write_note, shell_exec],
  permissions: {
    deny: ["write_note", "shell_*"],
    on_escalation: { req ->
      if req.tool == "write_note" {
        return {grant: "session", approver: "lead", reason: "workspace ok"}
      }
      return false
    },
  }})
println(r.tool_calls.map({ c -> c.status }))
let esc = transcript_events_by_kind(r.transcript, "PermissionEscalation")
println(esc.map({ e -> e.tool + ":" + e.outcome }))
println(len(transcript_events_by_kind(r.transcript, "PermissionGrant")))
println(transcript_render_full(r.transcript).contains("workspace ok"))
"""
    )
    got = lines(out)
    assert got[0] == "[ok, ok, denied]"
    assert got[1] == "[write_note:granted, shell_exec:refused]"  # the second write: no ask
    assert got[2] == "2"
    assert got[3] == "true"


def test_a_throwing_predicate_refuses_the_call(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + _calls(("c1", "read_note", {"path": "a"}))
        + """
let r = agent_loop("go", nil, {provider: "mock", tools: [read_note],
  permissions: {allow: {read_note: { args -> throw "broken" }}}})
println(r.tool_calls[0].status)
println(transcript_events_by_kind(r.transcript, "PermissionDeny")[0].reason)
"""
    )
    got = lines(out)
    assert got[0] == "denied"
    assert "failed: broken" in got[1]


def test_bad_permission_options_are_errors(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
println(unwrap_err(try { agent_loop("go", nil, {provider: "mock", permissions: {allow: "x"}}) }))
println(unwrap_err(try { agent_loop("go", nil, {provider: "mock", permissions: {alow: []}}) }))
println(unwrap_err(try { agent_loop("go", nil, {provider: "mock", approval_policy: {auto_deny: "x"}}) }))
"""
    )
    got = lines(out)
    assert "`permissions.allow` must be a list of tool globs" in got[0]
    assert "unknown key `permissions.alow`" in got[1]
    assert "`approval_policy.auto_deny` must be a list of globs" in got[2]


def test_ceiling_denial_is_structured_and_fails_a_sub_agent(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + _calls(("c1", "write_note", {"path": "a"}))
        + """
let env = sub_agent_run("go", {provider: "mock", tools: [read_note, write_note],
  policy: {tools: ["read_note"]}})
println(env.ok)
println(env.error.category + " " + env.error.tool)
let msg = transcript_messages(env.transcript).filter({ m -> m.role == "tool" })[0]
println(json_parse(msg.content).error)
"""
    )
    assert lines(out) == ["false", "permission_denied write_note", "permission_denied"]


def test_policy_tool_arg_constraints(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + _calls(("c1", "read_note", {"path": "src/a.rs"}), ("c2", "read_note", {"path": "/etc/x"}))
        + """
let r = agent_loop("go", nil, {provider: "mock", tools: [read_note],
  policy: {tool_arg_constraints: [{tool: "read_*", arg_key: "path", arg_patterns: ["src/*"]}]}})
println(r.tool_calls.map({ c -> c.status }))
println(transcript_messages(r.transcript)[3].content)
"""
    )
    got = lines(out)
    assert got[0] == "[ok, denied]"
    assert "does not match allowed patterns" in got[1]


def test_spawn_agent_stage_node_with_permissions(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + _calls(("c1", "write_note", {"path": "a"}))
        + """
let w = spawn_agent({name: "p", task: "Try to write.", wait: true,
  permissions: {deny: ["write_note"]},
  node: {kind: "stage", mode: "agent", tools: [write_note],
         model_policy: {provider: "mock", tool_format: "native", max_iterations: 2}}})
println(w.status)
println(w.result.result.tools.rejected)
println(len(transcript_events_by_kind(w.result.transcript, "PermissionDeny")))
"""
    )
    assert lines(out) == ["completed", "[write_note]", "1"]
