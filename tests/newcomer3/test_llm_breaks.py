"""Model/tool layer bugs found by a newcomer probing ``llm_call``, the providers, tool
declarations and ``agent_loop`` (were xfail until fixed; all pass now).

Each test asserts the behaviour the spec (``../shared/spec/lifecycle.md`` 2.13-2.15), the
README or a demanding user expects (a new one is marked ``xfail(strict=True)`` while harnpy
still gets it wrong). Provider tests talk to the scripted loopback server of ``tests/llm``.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnpy.runtime.runtime import Runtime

REPO = Path(__file__).resolve().parent.parent.parent
LLM_TESTS = REPO / "tests" / "llm"
if str(LLM_TESTS) not in sys.path:
    sys.path.insert(0, str(LLM_TESTS))

from fake_llm_server import (  # noqa: E402
    CHAT_PATH,
    MESSAGES_PATH,
    FakeLlmServer,
    Reply,
    openai_text,
    openai_tool_call,
)


def run(source: str) -> str:
    """Run ``source`` in-process; return what it printed (stdout and stderr)."""
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)  # type: ignore[arg-type]
    rt.run_module(rt.load_main("<test>", source))
    return out.getvalue()


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        full_env.pop(key, None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harnpy", *args],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=cwd or REPO,
        env=full_env,
    )


@pytest.fixture
def server() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as srv:
        yield srv


def server_env(srv: FakeLlmServer) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": srv.base_url,
        "OPENAI_API_KEY": "sk-test",
        "ANTHROPIC_BASE_URL": srv.root_url,
        "ANTHROPIC_API_KEY": "ak-test",
    }


def write(tmp_path: Path, source: str, name: str = "prog.harn") -> Path:
    path = tmp_path / name
    path.write_text(source)
    return path


ADD_TOOL = """
tool add(a: int, b: int) -> int {
  description "Add two ints"
  return a + b
}
"""


# ------------------------------------------------------------------ M1 policy fails open


def _run_rm_under_policy(policy: str) -> str:
    """Run an agent_loop whose model calls the ``rm`` tool, with ``policy: POLICY``."""
    return run(
        ADD_TOOL
        + """
tool rm(path: string) -> string {
  description "Remove a path"
  println("RM CALLED " + path)
  return "removed"
}
llm_mock({tool_calls: [{id: "c1", name: "rm", arguments: {path: "/"}}]})
llm_mock({text: "ok"})
let r = try {
  agent_loop("go", nil, {provider: "mock", tools: tool_registry([add, rm]),
    policy: POLICY})
}
println("end")
""".replace("POLICY", policy)
    )


def test_m1_malformed_policy_tools_does_not_let_a_denied_tool_run() -> None:
    # `policy: {tools: "add"}` (a string, not a list) is silently ignored: `rm` runs.
    out = _run_rm_under_policy('{tools: "add"}')
    assert "RM CALLED" not in out


def test_m1_malformed_policy_deny_does_not_let_a_denied_tool_run() -> None:
    out = _run_rm_under_policy('{deny: "rm"}')
    assert "RM CALLED" not in out


# ------------------------------------------------------------------ M2 optional args dropped


def test_m2_later_optional_argument_is_not_dropped_when_an_earlier_one_is_omitted() -> None:
    src = """
tool f(a: int, b: int = 1, c: int = 2) -> string {
  description "f"
  return "a=${a} b=${b} c=${c}"
}
llm_mock({tool_calls: [{id: "c1", name: "f", arguments: {a: 1, c: 5}}]})
llm_mock({text: "ok"})
let r = agent_loop("go", nil, {provider: "mock", tools: tool_registry([f])})
println(r.tool_calls[0].result)
"""
    assert run(src) == "a=1 b=1 c=5\n"


# ------------------------------------------------------------------ M3 bad JSON tool args


def test_m3_invalid_json_tool_arguments_are_fed_back_not_fatal(
    server: FakeLlmServer, tmp_path: Path
) -> None:
    server.queue(
        CHAT_PATH,
        Reply(body=openai_tool_call("add", '{"a": 1, "b":')),
        Reply(body=openai_text("recovered")),
    )
    prog = write(
        tmp_path,
        ADD_TOOL
        + """
let r = agent_loop("go", nil, {provider: "openai", model: "gpt-4o",
  tools: tool_registry([add]), llm_retries: 0})
println(r.status)
println(r.text)
""",
    )
    proc = cli("run", str(prog), env=server_env(server))
    assert proc.stdout == "done\nrecovered\n", proc.stdout
    second = server.requests_to(CHAT_PATH)[1].body["messages"]
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert tool_msgs and tool_msgs[0]["tool_call_id"] == "call_1"


# ------------------------------------------------------------------ M4 deep JSON answer


def test_m4_deeply_nested_json_answer_is_a_catchable_error(tmp_path: Path) -> None:
    (tmp_path / "deep.txt").write_text("[" * 200_000 + "]" * 200_000)
    prog = write(
        tmp_path,
        """
llm_mock({text: read_file("deep.txt")})
let r = try { llm_call("q", nil, {provider: "mock", response_format: "json", schema_retries: 0}) }
println(type_of(r))
println("survived")
""",
    )
    proc = cli("run", str(prog), cwd=tmp_path)
    assert "internal error" not in proc.stderr
    assert proc.stdout.endswith("survived\n")
    assert proc.returncode == 0


# ------------------------------------------------------------------ M5 anthropic thinking


def test_m5_anthropic_thinking_blocks_are_sent_back_with_tool_use(
    server: FakeLlmServer, tmp_path: Path
) -> None:
    thinking_block = {"type": "thinking", "thinking": "let me add", "signature": "sig123"}
    first: dict[str, Any] = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4",
        "content": [
            thinking_block,
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 5},
    }
    second = {**first, "content": [{"type": "text", "text": "3"}], "stop_reason": "end_turn"}
    server.queue(MESSAGES_PATH, Reply(body=first), Reply(body=second))
    prog = write(
        tmp_path,
        ADD_TOOL
        + """
let r = agent_loop("go", nil, {provider: "anthropic", model: "claude-sonnet-4",
  tools: tool_registry([add]), thinking: true})
println(r.status)
""",
    )
    proc = cli("run", str(prog), env=server_env(server))
    assert proc.stdout == "done\n", proc.stderr
    # With extended thinking, the Messages API requires the assistant turn that holds the
    # tool_use to start with the (signed) thinking block; otherwise it answers HTTP 400.
    assistant = server.requests_to(MESSAGES_PATH)[1].body["messages"][1]
    assert assistant["role"] == "assistant"
    block = assistant["content"][0]
    assert block["type"] == "thinking" and block.get("signature") == "sig123"


# ------------------------------------------------------------------ M6 non-UTF-8 fixture


def test_m6_non_utf8_llm_mock_file_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_bytes(b"\xff\xfe\n")
    prog = write(tmp_path, 'println("hi")\n')
    proc = cli("run", "--llm-mock", str(tmp_path / "bad.jsonl"), str(prog))
    assert "Traceback" not in proc.stderr
    assert "bad.jsonl" in proc.stderr
    assert proc.returncode == 2


# ------------------------------------------------------------------ M7 timeout option


def test_m7_negative_timeout_is_a_config_error() -> None:
    out = run(
        'println(try { llm_call("hi", nil, {provider: "openai", model: "gpt-4o", '
        'api_key: "k", base_url: "http://127.0.0.1:9/v1", timeout: -1}) })\n'
    )
    assert "category: config" in out, out
    assert "ValueError" not in out


def test_m7_zero_timeout_is_a_config_error_not_a_network_error(server: FakeLlmServer) -> None:
    server.default_reply = Reply(body=openai_text("never"))
    out = run(
        'println(try { llm_call("hi", nil, {provider: "openai", model: "gpt-4o", '
        f'api_key: "k", base_url: "{server.base_url}", timeout: 0, llm_retries: 0}}) }})\n'
    )
    assert "category: config" in out, out
    assert "Errno" not in out


# ------------------------------------------------------------------ M8 quadratic visible_text


def test_m8_visible_text_is_not_quadratic_on_unclosed_think_tags() -> None:
    code = (
        "from harnpy.lifecycle.llm_builtins import visible_text\n"
        "print(len(visible_text('<think>' * 40000)))\n"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=2.0
        )
    except subprocess.TimeoutExpired:
        pytest.fail("visible_text took more than 2 s on a 280 KB answer")
    assert proc.stdout == "280000\n"


# ------------------------------------------------------------------ M9 provider error status


def test_m9_agent_loop_provider_failure_reports_provider_error() -> None:
    # Judgement call: lifecycle.md 2.13 lists done, stuck, budget_exhausted, idle, watchdog,
    # failed, suspended, but Harn's reference (burin-labs/harn docs/src/llm/agent_loop.md,
    # result `status`) also has "provider_error" ("provider/tool-protocol request failed
    # and was captured in `error`"), with `error: {category, message, ...}`. harnpy follows
    # the reference; this test pins that behaviour.
    out = run(
        'llm_mock({error: {category: "rate_limit", message: "slow down"}})\n'
        # llm_retries: 0, else agent_loop's default 2 retries would retry the mock's error
        'let r = agent_loop("go", nil, {provider: "mock", llm_retries: 0})\n'
        "println(r.status)\nprintln(r.error.category)\nprintln(r.error.message)\n"
    )
    # stderr shares the sink: the root loop's failure is said once there (issue 14 §2)
    note, *rest = out.splitlines()
    assert note.startswith("harnpy: agent_loop (<test>:2) ended with provider_error: slow down")
    assert rest == ["provider_error", "rate_limit", "slow down"], out


# ------------------------------------------------------------------ M10 duplicate tools


def test_m10_tool_registry_does_not_offer_duplicate_tool_names() -> None:
    out = run(
        ADD_TOOL + 'llm_call("x", nil, {provider: "mock", tools: tool_registry([add, add])})\n'
        "println(len(llm_mock_calls()[0].tools))\n"
    )
    assert out == "1\n"


# ------------------------------------------------------------------ M11 float for int


def test_m11_float_for_int_parameter_is_an_invalid_arguments_error() -> None:
    out = run(
        ADD_TOOL + 'llm_mock({tool_calls: [{id: "c1", name: "add", arguments: {a: 1.5, b: 2}}]})\n'
        'llm_mock({text: "ok"})\n'
        'let r = agent_loop("go", nil, {provider: "mock", tools: tool_registry([add])})\n'
        'for m in r.transcript.messages { if m.role == "tool" { println(m.content) } }\n'
    )
    assert out.startswith("Error: invalid arguments for tool 'add': at a:"), out
    assert "Runtime error" not in out and "TypeError" not in out


# ------------------------------------------------------------------ M12 Python type names


def test_m12_llm_mock_errors_use_harn_type_names() -> None:
    out = run('println(try { llm_mock("plain") })\nprintln(try { llm_mock(nil) })\n')
    # `\b`: the right message says "got string", which contains "got str"
    assert not re.search(r"got str\b", out) and "NoneType" not in out, out
    assert "got string" in out and "got nil" in out, out


def test_m12_llm_mock_file_errors_use_harn_type_names(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text('"just a string"\n')
    prog = write(tmp_path, 'println("hi")\n')
    proc = cli("run", "--llm-mock", str(tmp_path / "r.jsonl"), str(prog))
    assert proc.returncode == 2
    assert not re.search(r"got str\b", proc.stderr), proc.stderr  # Harn calls it `string`
    assert "got string" in proc.stderr, proc.stderr


# ------------------------------------------------------------------ M13 non-JSON accepted


def test_m13_json_response_format_rejects_nan() -> None:
    out = run(
        'llm_mock({text: "NaN"})\n'
        'let r = try { llm_call("q", nil, {provider: "mock", response_format: "json", '
        "schema_retries: 0}) }\n"
        "println(is_err(r))\n"
    )
    assert out == "true\n"


# ------------------------------------------------------------------ M14 struct param schema


def test_m14_struct_typed_tool_parameter_has_an_object_schema() -> None:
    out = run(
        "struct Point { x: int, y: int }\n"
        'tool dist(p: Point) -> int {\n  description "d"\n  return p.x + p.y\n}\n'
        "println(json_stringify(tool_registry([dist]).tools[0].parameters.properties.p))\n"
    )
    schema = json.loads(out)
    assert schema.get("type") == "object"
    assert set(schema.get("properties", {})) == {"x", "y"}


# ------------------------------------------------------------------ M15 record/replay status


def test_m15_recorded_http_error_keeps_its_status_on_replay(
    server: FakeLlmServer, tmp_path: Path
) -> None:
    server.queue(CHAT_PATH, Reply(status=400, body={"error": {"message": "bad req"}}))
    prog = write(
        tmp_path,
        'let r = try { llm_call("hi", nil, {provider: "openai", model: "gpt-4o"}) }\nprintln(r)\n',
    )
    rec = tmp_path / "rec.jsonl"
    live = cli("run", "--llm-mock-record", str(rec), str(prog), env=server_env(server))
    assert "status: 400" in live.stdout
    replay = cli("run", "--llm-mock", str(rec), str(prog), env={"HARN_LLM_CALLS_DISABLED": "1"})
    assert replay.stdout == live.stdout


# ------------------------------------------------------------------ M16 denied tools offered


# M16 removed: denied tools stay offered to the model so that its calls to them are refused
# and recorded as denials (status "denied", audit decision "deny"), as the spec requires.


# ------------------------------------------------------------------ M17 schema_retries


def test_m17_negative_schema_retries_is_a_config_error() -> None:
    # `llm_retries: -1` is a config error; `schema_retries: -1` silently means "1 retry".
    out = run(
        'llm_mock({text: "not json"})\n'
        'llm_mock({text: "{}"})\n'
        'println(try { llm_call("q", nil, {provider: "mock", response_format: "json", '
        "schema_retries: -1}) })\n"
    )
    assert "category: config" in out, out
    assert "schema_retries" in out
