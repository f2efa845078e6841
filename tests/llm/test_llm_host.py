"""LlmHost routing, --llm-mock replay, --llm-mock-record, the call pool and lean imports."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fake_llm_server import CHAT_PATH, Reply, error_body, openai_text, openai_tool_call

from harnpy.llm import (
    LlmError,
    LlmHost,
    LlmPool,
    LlmRequest,
    LlmResponse,
    build_request,
    load_mock_jsonl,
    parse_mock_entry,
)
from harnpy.shapes import unstructure

REPO = Path(__file__).resolve().parents[2]


def test_env_provider_mock_routes_to_shared_mock():
    host = LlmHost(env={"HARN_LLM_PROVIDER": "mock"})
    host.mock.push({"text": "scripted"})
    assert host.complete(build_request("hi")).text == "scripted"
    assert host.mock.calls()[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_routing_fills_provider_and_model():
    host = LlmHost(env={"HARN_LLM_PROVIDER": "mock", "HARNPY_MODEL": "tiny"})
    provider, routed = host.route(build_request("x"))
    assert provider is host.mock
    assert (routed.provider, routed.model) == ("mock", "tiny")
    assert host.complete(build_request("x")).model == "tiny"


def test_fixture_serves_every_call_without_keys():
    host = LlmHost(env={}, fixture=[parse_mock_entry({"text": "replayed"})])
    request = build_request("hi", None, {"provider": "openai", "model": "gpt-4o"})
    assert host.complete(request).text == "replayed"
    with pytest.raises(LlmError) as info:
        host.complete(request)
    assert info.value.category == "mock_unmatched"


def test_disabled_blocks_real_providers_but_not_mock():
    host = LlmHost(env={"HARN_LLM_CALLS_DISABLED": "1", "OPENAI_API_KEY": "k"})
    with pytest.raises(LlmError) as info:
        host.complete(build_request("hi", None, {"model": "gpt-4o"}))
    assert info.value.category == "disabled"
    assert host.complete(build_request("hi", None, {"provider": "mock"})).provider == "mock"


def test_record_then_replay_round_trip(server, sleeps, tmp_path):
    server.queue(
        CHAT_PATH,
        Reply(body=openai_text("first answer", prompt_tokens=5)),
        Reply(body=openai_tool_call("lookup", '{"id": 3}', call_id="call_xyz")),
        Reply(status=400, body=error_body("context too long")),
    )
    path = tmp_path / "rec.jsonl"
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url}
    opts = {"model": "gpt-4o"}
    with LlmHost(env=env, sleep=sleeps, record_path=path) as host:
        live = [host.complete(build_request("one", None, opts))]
        live.append(host.complete(build_request("two", None, opts)))
        with pytest.raises(LlmError) as live_err:
            host.complete(build_request("three", None, opts))
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    assert json.loads(lines[0])["text"] == "first answer"

    replay = LlmHost(env={}, fixture=load_mock_jsonl(path))
    again = [replay.complete(build_request(p, None, opts)) for p in ("one", "two")]
    for before, after in zip(live, again, strict=True):
        assert unstructure(after) == unstructure(before)
    with pytest.raises(LlmError) as replay_err:
        replay.complete(build_request("three", None, opts))
    assert (replay_err.value.category, replay_err.value.message) == (
        live_err.value.category,
        live_err.value.message,
    )


def test_config_errors_are_not_recorded(tmp_path):
    path = tmp_path / "rec.jsonl"
    with LlmHost(env={}, record_path=path) as host, pytest.raises(LlmError):
        host.complete(build_request("hi", None, {"model": "gpt-4o"}))
    assert path.read_text() == ""


class BarrierProvider:
    """Answers only once ``parties`` calls are in flight at the same time."""

    name = "barrier"

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=5)

    def complete(self, request: LlmRequest) -> LlmResponse:
        self.barrier.wait()
        return LlmResponse(text=request.messages[0].text(), provider=self.name)


def test_pool_runs_calls_concurrently():
    provider = BarrierProvider(4)
    with LlmPool(max_workers=4) as pool:
        futures = [pool.submit(provider, build_request(f"q{i}")) for i in range(4)]
        assert [f.result(timeout=10).text for f in futures] == ["q0", "q1", "q2", "q3"]


def test_pool_turns_provider_bugs_into_llm_errors():
    class Broken:
        name = "broken"

        def complete(self, request):
            raise KeyError("oops")

    with LlmPool(1) as pool:
        err = pool.submit(Broken(), build_request("x")).exception(timeout=5)
    assert isinstance(err, LlmError) and err.category == "generic"
    assert "broken: internal error: KeyError" in err.message


def test_host_submit_runs_on_pool_and_reports_routing_errors():
    with LlmHost(env={"HARN_LLM_PROVIDER": "mock"}) as host:
        host.mock.push({"text": "pooled"})
        assert host.submit(build_request("x")).result(timeout=5).text == "pooled"
        bad = host.submit(build_request("x", None, {"provider": "nope"}))
        assert isinstance(bad.exception(timeout=5), LlmError)


def test_import_is_lean():
    code = (
        "import sys, harnpy.llm\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('openai', 'anthropic', 'httpx', 'httpx2', 'httpcore', 'httpcore2')]\n"
        "print(heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_llm_package_does_not_import_the_evaluator():
    code = (
        "import sys, harnpy.llm\n"
        "print([m for m in sys.modules if m.startswith(('harnpy.runtime', 'harnpy.stdlib',"
        " 'harnpy.syntax', 'harnpy.lifecycle'))])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
