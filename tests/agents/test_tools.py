"""Tool declarations, registries, argument validation, errors as results, policy denials."""

from __future__ import annotations

import json

import pytest

from tests.agents.conftest import RunHarn, lines

TOOLS = """
tool add(a: int, b: int = 10) -> int {
  description "Add two integers"
  return a + b
}

fn registry() {
  var reg = tool_registry()
  reg = tool_define(reg, "shout", "Uppercase text", {
    parameters: {text: "string"},
    handler: { args -> uppercase(args.text) },
    tags: ["demo"],
  })
  reg = tool_define(reg, "boom", "Always fails", {
    parameters: {},
    handler: { args -> throw {message: "kaboom", category: "tool_error"} },
  })
  reg = tool_define(reg, add)
  return reg
}
"""


def test_registry_builtins(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + """
pipeline main() {
  let reg = registry()
  println(reg._type + " " + to_string(tool_count(reg)))
  println(tool_find(reg, "shout").tags)
  println(tool_find(reg, "missing") == nil)
  println(tool_list(reg).map({ t -> t.name }))
  println(tool_list(reg)[0]?.handler == nil)
  println(tool_count(tool_remove(reg, "boom")))
  println(tool_count(tool_select(reg, ["add"])))
  println(tool_find(reg, "add").parameters)
  println(tool_count(tool_define(reg, "shout", "again", {handler: { a -> 1 }})))
  println(tool_describe(tool_select(reg, ["add", "shout"])))
  println(tool_schema(reg).tools[0].inputSchema.required)
}
"""
    )
    got = lines(out)
    assert got[0] == "tool_registry 3"
    assert got[1] == "[demo]"
    assert got[2] == "true"
    assert got[3] == "[shout, boom, add]"
    assert got[4] == "true"
    assert got[5] == "2"
    assert got[6] == "1"
    # the declaration's types became a JSON schema; `b` has a default so it is optional
    assert got[7] == (
        "{properties: {a: {type: integer}, b: {default: 10, type: integer}}, required: [a], "
        "type: object}"
    )
    assert got[8] == "3"  # same name replaces
    assert got[9:12] == [
        "Available tools:",
        "- add(a: integer, b: integer): Add two integers",
        "- shout(text: string): Uppercase text",
    ]
    assert got[12] == "[text]"


def test_tool_define_errors(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  println(unwrap_err(try { tool_define(tool_registry(), "x", "d", {parameters: {}}) }))
  println(unwrap_err(try { tool_define(tool_registry(), "x", "d", {params: {}, handler: { a -> 1 }}) }))
  println(unwrap_err(try { tool_define({}, "x", "d", {handler: { a -> 1 }}) }))
}
"""
    )
    got = lines(out)
    assert got[0].startswith('tool_define: tool "x" has no `handler` and no `executor`. ')
    assert got[1:] == [
        "tool_define: use 'parameters', not 'params'",
        "tool_define: first argument must be a tool registry",
    ]


def test_loop_dispatches_validates_and_feeds_errors_back(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        TOOLS
        + """
pipeline main() {
  llm_mock({tool_calls: [{name: "shout", arguments: {text: "hi"}}, {name: "add", arguments: {a: 2}}]})
  llm_mock({tool_calls: [
    {name: "boom", arguments: {}},
    {name: "add", arguments: {a: "x"}},
    {name: "nope", arguments: {}},
  ]})
  llm_mock({text: "finished"})
  let r = agent_loop("go", nil, {provider: "mock", tools: registry()})
  println(r.status + " " + to_string(r.llm.iterations))
  for rec in r.tool_calls {
    println(rec.name + " " + rec.status + " " + to_string(rec?.result ?? rec?.error))
  }
  println(r.tools.successful)
  println(r.tools.rejected)
  let second = llm_mock_calls()[2].messages
  for m in second.filter({ m -> m.role == "tool" }) { println(m.tool_call_id + ": " + m.content) }
}
"""
    )
    got = lines(out)
    assert got[0] == "done 3"
    assert got[1:6] == [
        "shout ok HI",
        "add ok 12",
        "boom error kaboom",
        "add rejected Error: invalid arguments for tool 'add': at a: expected type 'int', "
        "got 'string'",
        "nope rejected Error: unknown tool 'nope'. Available tools: shout, boom, add",
    ]
    assert got[6] == "[shout, add]"
    assert got[7] == "[boom, add, nope]"
    # the model saw every result, failures included, as tool messages
    assert got[8:] == [
        "mock_call_1: HI",
        "mock_call_2: 12",
        "mock_call_1: Error: kaboom",
        "mock_call_2: Error: invalid arguments for tool 'add': at a: expected type 'int', "
        "got 'string'",
        "mock_call_3: Error: unknown tool 'nope'. Available tools: shout, boom, add",
    ]


def test_policy_denials_are_recorded_and_reported(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + """
pipeline main() {
  llm_mock({tool_calls: [{name: "shout", arguments: {text: "x"}}, {name: "add", arguments: {a: 1, b: 1}}]})
  llm_mock({text: "ok"})
  let r = agent_loop("go", nil, {provider: "mock", tools: registry(), policy: {tools: ["add"]}})
  for rec in r.tool_calls { println(rec.name + " " + rec.status) }
  println(r.tools.rejected)
  let audits = transcript_events_by_kind(r.transcript, "tool_call_audit")
  println(len(audits))
  println(audits[0].tool_name + " " + audits[0].audit.decision + " " + audits[0].audit.reason)
  println(transcript_messages(r.transcript)[2].content)
}
"""
    )
    got = lines(out)
    assert got[0:2] == ["shout denied", "add ok"]
    assert got[2] == "[shout]"
    assert got[3] == "1"
    assert got[4] == "shout deny policy"
    assert json.loads(got[5]) == {  # Harn's structured denial
        "error": "permission_denied",
        "tool": "shout",
        "reason": "tool 'shout' is not permitted by the agent policy (allowed: add)",
    }


def test_denied_tools_option(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + """
pipeline main() {
  llm_mock({tool_calls: [{name: "boom", arguments: {}}]})
  llm_mock({text: "ok"})
  let r = agent_loop("go", nil, {provider: "mock", tools: registry(), denied_tools: ["boom"]})
  println(r.tool_calls[0].status + " " + r.tool_calls[0].error)
}
"""
    )
    assert lines(out) == ["denied Error: tool 'boom' is denied by the agent policy"]


def test_declared_tools_can_be_passed_as_a_list(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + """
pipeline main() {
  llm_mock({tool_calls: [{name: "add", arguments: {a: 4, b: 5}}]})
  llm_mock({text: "9"})
  let r = agent_loop("add", nil, {provider: "mock", tools: [add]})
  println(r.tool_calls[0].result)
  println(llm_mock_calls()[0].tools[0].description)
  // the declaration binds a one-tool registry whose handler takes positional arguments
  println(type_of(add) + " " + add._type + " " + to_string(len(add.tools)))
  println(add.tools[0].handler(1))
}
"""
    )
    assert lines(out) == ["9", "Add two integers", "dict tool_registry 1", "11"]


def test_default_mock_calls_the_first_offered_tool(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        TOOLS
        + """
pipeline main() {
  let r = agent_loop("go", nil, {provider: "mock", tools: tool_select(registry(), ["shout"]), max_iterations: 2})
  println(r.status)
  println(r.tool_calls.map({ c -> c.name + ":" + c.status }))
}
"""
    )
    # the default mock answer calls the first tool with placeholder args every turn
    assert lines(out) == ["budget_exhausted", "[shout:ok, shout:ok]"]


NATIVE_FALLBACK = """
tool read(path: string) -> string {
  description "Read a file."
  return "read:" + path
}
pipeline main() {
  llm_mock({text: "<tool_call>\\nread({ path: \\"a.rs\\" })\\n</tool_call>"})
  llm_mock({text: "<tool_call>{\\"name\\": \\"read\\", \\"arguments\\": {\\"path\\": \\"b.rs\\"}}</tool_call>"})
  llm_mock({text: "finished"})
  let r = agent_loop("go", nil, {provider: "mock", tools: [read], tool_format: "native",
    native_tool_fallback: POLICY, max_iterations: 3})
  println([r.trace.native_text_tool_fallbacks, r.trace.native_text_tool_fallback_rejections])
  println(transcript_events_by_kind(r.transcript, "native_tool_fallback").map({ e -> e.metadata.accepted }))
  println(r.tool_calls.map({ c -> c.result }))
}
"""


@pytest.mark.parametrize(
    ("policy", "counts", "accepted", "results"),
    [
        ('"allow"', "[2, 0]", "[true, true]", "[read:a.rs, read:b.rs]"),
        ('"allow_once"', "[2, 1]", "[true, false]", "[read:a.rs]"),
        ('"reject"', "[1, 1]", "[false]", "[]"),  # a rejected turn has no calls: done
    ],
)
def test_native_tool_fallback_policies(
    run_harn: RunHarn, policy: str, counts: str, accepted: str, results: str
) -> None:
    out, _ = run_harn(NATIVE_FALLBACK.replace("POLICY", policy))
    assert lines(out) == [counts, accepted, results]


def test_native_tool_fallback_rejects_an_unknown_policy(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        'println(unwrap_err(try { agent_loop("go", nil, {provider: "mock", '
        'native_tool_fallback: "sometimes"}) }))'
    )
    assert lines(out) == [
        'agent_loop: native_tool_fallback must be "allow", "allow_once" or "reject", got sometimes'
    ]
