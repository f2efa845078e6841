"""tool_define's executor rules, the text-mode tool builtins, the bound registry
(tool_bind / tool_ref / tool_def) and tool hooks enforced in agent_loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.conftest import RunHarn, lines
from tests.conftest import harnpy


def _err(run_harn: RunHarn, config: str) -> str:
    out, _ = run_harn(
        f"""
pipeline main() {{
  println(unwrap_err(try {{ tool_define(tool_registry(), "t", "d", {config}) }}))
}}
"""
    )
    return lines(out)[0]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ('"nope"', "tool_define: config must be a dict with parameters and handler"),
        (
            '{executor: "rocketship"}',
            'tool_define: unknown executor "rocketship" for tool "t". Expected one of: '
            '"harn", "host_bridge", "mcp_server", "provider_native"',
        ),
        ("{executor: 3}", "tool_define: `executor` must be a string"),
        ('{executor: "harn"}', 'tool_define: tool "t" declares executor: "harn" but has no'),
        (
            '{executor: "harn", handler: { a -> 1 }, host_capability: "x.y"}',
            'declares executor: "harn" but also sets `host_capability`',
        ),
        (
            '{handler: { a -> 1 }, mcp_server: "docs"}',
            'declares executor: "harn" but also sets `mcp_server`',
        ),
        (
            '{executor: "host_bridge"}',
            'tool_define: tool "t" declares executor: "host_bridge" but is missing '
            "`host_capability`.",
        ),
        (
            '{executor: "host_bridge", host_capability: "a.b", handler: { a -> 1 }}',
            'declares executor: "host_bridge" but also has a `handler`. Drop the handler',
        ),
        (
            '{executor: "mcp_server"}',
            'declares executor: "mcp_server" but is missing `mcp_server`',
        ),
        (
            '{executor: "provider_native", handler: { a -> 1 }}',
            'declares executor: "provider_native" but also has a `handler`',
        ),
        (
            '{handler: { a -> 1 }, defer_loading: "yes"}',
            "tool_define: `defer_loading` must be a bool",
        ),
        ('{handler: { a -> 1 }, namespace: ""}', "tool_define: `namespace` must be a non-empty"),
        ("{handler: { a -> 1 }, namespace: 42}", "tool_define: `namespace` must be a non-empty"),
    ],
)
def test_tool_define_rejects_with_harns_messages(
    run_harn: RunHarn, config: str, expected: str
) -> None:
    got = _err(run_harn, config)
    assert got.startswith("tool_define: ") and expected in got


def test_tool_define_executors_and_entry_keys(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  var r = tool_registry()
  r = tool_define(r, "a", "A", {handler: { x -> 1 }, executor: "harn_builtin", returns: {type: "integer"},
    annotations: {kind: "read"}, defer_loading: false, namespace: "ns", tags: ["t"]})
  r = tool_define(r, "b", "B", {executor: "host_bridge", host_capability: "interaction.ask"})
  r = tool_define(r, "c", "C", {executor: "mcp_server", mcp_server: "docs"})
  r = tool_define(r, "d", "D", {executor: "provider_native"})
  println(r.tools.map({ t -> t.executor }))
  let a = tool_find(r, "a")
  println([a.outputSchema.type, a.annotations.kind, a.defer_loading, a.namespace, a.tags[0]])
  println(a.returns == nil)
  println(tool_find(r, "b").host_capability + " " + tool_find(r, "c").mcp_server)
}
"""
    )
    assert lines(out) == [
        "[harn, host_bridge, mcp_server, provider_native]",
        "[integer, read, false, ns, t]",
        "true",
        "interaction.ask docs",
    ]


def test_text_mode_builtins(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        r"""
pipeline main() {
  var r = tool_registry()
  r = tool_define(r, "zeta", "Last one", {handler: { a -> 1 }, parameters: {}})
  r = tool_define(r, "alpha", "Search things", {
    handler: { a -> a.q },
    parameters: {q: {type: "string", description: "The query"}, n: {type: "integer", required: false}},
    returns: {type: "array", items: {type: "string"}},
  })
  let text = "a <tool_call>{\"name\": \"alpha\", \"arguments\": {\"q\": \"x\"}}</tool_call> b " +
    "<tool_call>not json</tool_call> <tool_call>{\"name\": \"zeta\", \"arguments\": {}}</tool_call>" +
    " <tool_call>{\"name\": \"cut\""
  let calls = tool_parse_call(text)
  println(calls.map({ c -> c.name }))
  println(calls[0].arguments.q)
  println(len(tool_parse_call("plain text")))
  println(tool_format_result("alpha", "say \"hi\"\nbye"))
  println(tool_format_result("alpha", {k: 1}))
  println(unwrap_err(try { tool_format_result("only") }))
  println(tool_prompt(r))
  println(tool_prompt(tool_registry()))
  println(unwrap_err(try { tool_prompt("x") }))
}
"""
    )
    got = lines(out)
    assert got[0] == "[alpha, zeta]"
    assert got[1] == "x"
    assert got[2] == "0"
    assert got[3] == '<tool_result>{"name": "alpha", "result": "say \\"hi\\"\\nbye"}</tool_result>'
    assert json.loads(got[4][len("<tool_result>") : -len("</tool_result>")]) == {
        "name": "alpha",
        "result": "{k: 1}",
    }
    assert got[5] == "tool_format_result: requires name and result"
    prompt = got[6 : got.index("No tools are available.")]
    assert prompt[0] == "# Available Tools"
    assert '<tool_call>{"name": "tool_name", "arguments": {"param": "value"}}</tool_call>' in prompt
    # sorted by name, each with its description, parameters and output schema
    assert prompt.index("### alpha") < prompt.index("### zeta")
    at = prompt.index("### alpha")
    assert prompt[at + 1 : at + 6] == [
        "Search things",
        "Parameters:",
        "- q (string, required): The query",
        "- n (integer, optional)",
        "Returns: array<string>",
    ]
    assert got[-1] == "tool_prompt: requires a tool registry"


def test_tool_bind_ref_def(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  println(unwrap_err(try { tool_ref("x") }))
  var r = tool_registry()
  r = tool_define(r, "edit", "Edit", {parameters: {path: "string"}, handler: { a -> 1 }})
  r = tool_define(r, "read", "Read", {parameters: {path: "string"}, handler: { a -> 2 }})
  println(len(tool_bind(r).tools))
  println(tool_ref("read"))
  let d = tool_def("edit")
  println([d.name, d.description, d.executor, d.handler == nil, d?.parameters?.path])
  println(unwrap_err(try { tool_ref("nope") }))
  println(unwrap_err(try { tool_def(42) }))
  println(unwrap_err(try { tool_bind("x") }))
  println(tool_bind(tool_registry()) != nil)
  println(unwrap_err(try { tool_ref("read") }))
  println(tool_bind(nil))
  println(unwrap_err(try { tool_def("read") }))
}
"""
    )
    assert lines(out) == [
        "tool_ref: no tool registry bound; call tool_bind(registry) first",
        "2",
        "read",
        "[edit, Edit, harn, true, string]",
        'tool_ref: unknown tool "nope". Registered tools: edit, read',
        "tool_def: name must be a string literal",
        "tool_bind: argument must be a tool registry or nil",
        "true",
        'tool_ref: unknown tool "read". Registered tools: (none registered)',
        "nil",
        "tool_def: no tool registry bound; call tool_bind(registry) first",
    ]


HOOKED = """
fn registry() {
  var r = tool_registry()
  r = tool_define(r, "exec_rm", "Remove", {parameters: {path: "string"}, handler: { a -> "removed " + a.path }})
  r = tool_define(r, "read", "Read", {parameters: {path: "string"}, handler: { a -> "x" * 500 }})
  r = tool_define(r, "echo", "Echo", {parameters: {text: "string"}, handler: { a -> a.text }})
  return r
}
fn calls() {
  llm_mock({tool_calls: [
    {name: "exec_rm", arguments: {path: "/"}},
    {name: "read", arguments: {path: "a"}},
    {name: "echo", arguments: {text: "hi"}},
  ]})
  llm_mock({text: "finished"})
}
"""


def test_deny_and_max_output_hooks_in_agent_loop(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        HOOKED
        + """
pipeline main() {
  register_tool_hook({pattern: "exec_*", deny: "exec is gated"})
  register_tool_hook({pattern: "re?d", max_output: 100})
  calls()
  let r = agent_loop("go", nil, {provider: "mock", tools: registry()})
  for rec in r.tool_calls { println(rec.name + " " + rec.status + " " + to_string(rec?.error)) }
  println(r.tools.rejected)
  let msgs = llm_mock_calls()[1].messages.filter({ m -> m.role == "tool" })
  println(json_parse(msgs[0].content))
  println(len(msgs[1].content) < 200)
  println(msgs[1].content.contains("chars snipped"))
  println(msgs[2].content)
  clear_tool_hooks()
  calls()
  let again = agent_loop("go", nil, {provider: "mock", tools: registry()})
  println(again.tool_calls.map({ c -> c.status }))
}
"""
    )
    assert lines(out) == [
        "exec_rm denied Error: exec is gated",
        "read ok nil",
        "echo ok nil",
        "[exec_rm]",
        "{error: permission_denied, reason: exec is gated, tool: exec_rm}",
        "true",
        "true",
        "hi",
        "[ok, ok, ok]",
    ]


def test_pre_and_post_hook_closures(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        HOOKED
        + """
pipeline main() {
  register_tool_hook({pattern: "echo", pre: { e -> {args: {text: e.args.text + "!"}} }})
  register_tool_hook({pattern: "echo", post: { e -> e.result + " (" + e.tool_name + ")" }})
  register_tool_hook({pattern: "exec_*", pre: { e ->
    if e.args.path == "/" { return {deny: "not the root"} }
    return nil
  }})
  register_tool_hook({pattern: "read", pre: { e -> throw "hook broke" }})
  calls()
  let r = agent_loop("go", nil, {provider: "mock", tools: registry()})
  for rec in r.tool_calls { println(rec.name + " " + rec.status + " " + to_string(rec?.result ?? rec?.error)) }
  println(unwrap_err(try { register_tool_hook({pre: "x"}) }))
  println(unwrap_err(try { register_tool_hook({max_output: -1}) }))
  println(unwrap_err(try { register_tool_hook("x") }))
}
"""
    )
    got = lines(out)
    assert got[:3] == [
        "exec_rm denied Error: not the root",
        "read denied Error: tool hook failed: hook broke",
        "echo ok hi! (echo)",
    ]
    assert got[3].endswith("register_tool_hook: pre must be a closure, got string")
    assert got[4] == "register_tool_hook: max_output must be a non-negative int"
    assert got[5] == "register_tool_hook: config must be a dict, got string"


def test_post_hook_result_is_what_the_model_sees(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        HOOKED
        + """
pipeline main() {
  register_tool_hook({pattern: "echo", post: { e -> {result: {wrapped: e.result}} }})
  calls()
  agent_loop("go", nil, {provider: "mock", tools: registry()})
  let msgs = llm_mock_calls()[1].messages.filter({ m -> m.role == "tool" })
  println(msgs[2].content)
}
"""
    )
    assert json.loads(lines(out)[0]) == {"wrapped": "hi"}


def test_hooks_and_binding_survive_a_snapshot(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text(
        HOOKED
        + """
pipeline main(task) {
  register_tool_hook({pattern: "exec_*", deny: "gated"})
  register_tool_hook({pattern: "echo", post: { e -> "post:" + e.result }})
  tool_bind(registry())
  __snapshot_exit(env("SNAP"))
  println(tool_ref("echo"))
  calls()
  let r = agent_loop("go", nil, {provider: "mock", tools: registry()})
  println(r.tool_calls.map({ c -> c.status }))
  println(llm_mock_calls()[1].messages.filter({ m -> m.role == "tool" })[2].content)
}
"""
    )
    snap = tmp_path / "s.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["echo", "[denied, ok, ok]", "post:hi"]


DECLS = """
type Opts = {depth: int, tags: list<string>}
enum Mode { Fast, Slow }
tool search(query: string, opts: Opts, mode: Mode, filters: list<{field: string, value?: string}>,
            limit: int = 5, exact: bool = false, note = "x", flags: list<string> = ["a"]) -> {hits: list<string>} {
  description "Search the corpus"
  return {hits: [query + ":" + to_string(limit) + ":" + to_string(mode)]}
}
tool ping() {
  return "pong"
}
"""


def test_tool_declaration_binds_a_one_tool_registry(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        DECLS
        + """
pipeline main() {
  println([type_of(search), search._type, len(search.tools), tool_count(ping)])
  let e = search.tools[0]
  println([e.name, e.description, e.executor, e.positional])
  println(json_stringify(e.parameters))
  println(json_stringify(e.outputSchema))
  println(json_stringify(ping.tools[0].parameters) + " " + to_string(ping.tools[0]?.outputSchema))
  println(e.handler("q", {depth: 1, tags: []}, Mode.Fast, []))
  println(tool_schema(search).tools[0].inputSchema.required)
}
"""
    )
    got = lines(out)
    assert got[0] == "[dict, tool_registry, 1, 1]"
    assert (
        got[1]
        == "[search, Search the corpus, harn, [query, opts, mode, filters, limit, exact, note, flags]]"
    )
    params = json.loads(got[2])
    assert params["type"] == "object"
    assert params["required"] == ["query", "opts", "mode", "filters"]
    props = params["properties"]
    assert props["query"] == {"type": "string"}
    assert props["opts"] == {
        "type": "object",
        "properties": {
            "depth": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["depth", "tags"],
    }
    assert props["mode"] == {"type": "string", "enum": ["Fast", "Slow"]}
    assert props["filters"] == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"field": {"type": "string"}, "value": {"type": "string"}},
            "required": ["field"],
        },
    }
    assert props["limit"] == {"type": "integer", "default": 5}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["note"] == {"default": "x"}  # untyped: any value
    assert props["flags"] == {"type": "array", "items": {"type": "string"}, "default": ["a"]}
    assert json.loads(got[3]) == {
        "type": "object",
        "properties": {"hits": {"type": "array", "items": {"type": "string"}}},
        "required": ["hits"],
    }
    schema, output = got[4].split(" ")
    assert json.loads(schema) == {"type": "object", "properties": {}} and output == "nil"
    assert got[5] == "{hits: [q:5:Mode.Fast]}"
    assert got[6] == "[query, opts, mode, filters]"


def test_declarations_in_registries_and_loops(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        DECLS
        + """
pipeline main() {
  println(tool_list(tool_registry([search, ping])).map({ t -> t.name }))
  let renamed = tool_define(tool_registry(), "find", "Find things", search)
  println([tool_find(renamed, "find").description, tool_find(renamed, "search") == nil])
  println(tool_list(tool_define(tool_define(tool_registry(), ping), search)).map({ t -> t.name }))
  llm_mock({tool_calls: [
    {name: "search", arguments: {query: "q", opts: {depth: 2, tags: ["t"]}, mode: "Slow", filters: [], limit: 2}},
    {name: "search", arguments: {query: "q", opts: {depth: 2}, mode: "Medium", filters: []}},
    {name: "ping", arguments: {}},
  ]})
  llm_mock({text: "done"})
  let r = agent_loop("go", nil, {provider: "mock", tools: [search, ping]})
  for rec in r.tool_calls { println(rec.name + " " + rec.status) }
  println(r.tool_calls[0].result.hits[0])
  println(llm_mock_calls()[0].tools.map({ t -> t.name }))
  println(unwrap_err(try { agent_loop("go", nil, {provider: "mock", tools: [42]}) }))
}
"""
    )
    got = lines(out)
    assert got[0] == "[search, ping]"
    assert got[1] == "[Find things, true]"
    assert got[2] == "[ping, search]"
    assert got[3:6] == ["search ok", "search rejected", "ping ok"]
    # the model's string for the enum parameter reaches the handler as given
    assert got[6] == "q:2:Slow"
    assert got[7] == "[search, ping]"
    assert got[8] == "agent_loop: cannot use 42 as a tool"
