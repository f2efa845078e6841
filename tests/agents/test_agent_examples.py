"""The agent examples: the offline one against its golden output, the OpenAI-compatible one
against the local scripted server (and its explanation when no server is configured).

Set ``HARNPY_UPDATE_GOLDENS=1`` to rewrite ``research_team.expected`` from the current
output (review the diff before committing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import REPO, harnpy

EXAMPLES = REPO / "examples" / "agents"
RESEARCH = EXAMPLES / "research_team.harn"
GOLDEN = EXAMPLES / "research_team.expected"
OPENAI_CHAT = EXAMPLES / "openai_chat.harn"


def _offline_env(**extra: str) -> dict[str, str]:
    env = {"HARN_LLM_CALLS_DISABLED": "1", "OPENAI_BASE_URL": "", "HARNPY_SNAPSHOT_EVERYWHERE": ""}
    env.update(extra)
    return env


def test_research_team_matches_its_golden_output() -> None:
    proc = harnpy("run", str(RESEARCH), cwd=REPO, env=_offline_env())
    assert proc.returncode == 0, proc.stderr
    if os.environ.get("HARNPY_UPDATE_GOLDENS") == "1":
        GOLDEN.write_text(proc.stdout, encoding="utf-8")
    assert proc.stdout == GOLDEN.read_text(encoding="utf-8")


def test_research_team_output_is_the_same_when_every_turn_round_trips_a_snapshot() -> None:
    proc = harnpy("run", str(RESEARCH), cwd=REPO, env=_offline_env(HARNPY_SNAPSHOT_EVERYWHERE="1"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == GOLDEN.read_text(encoding="utf-8")


def test_openai_chat_explains_itself_without_a_server() -> None:
    proc = harnpy("run", str(OPENAI_CHAT), cwd=REPO, env=_offline_env())
    assert proc.returncode == 0, proc.stderr
    assert "OPENAI_BASE_URL is not set" in proc.stdout


def _chat(content: str | None, calls: list[tuple[str, dict[str, object]]] | None = None) -> dict:
    message: dict[str, object] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, (n, a) in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-1",
        "model": "fake-model",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3},
    }


def test_openai_chat_talks_to_an_openai_compatible_server(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from fake_llm_server import CHAT_PATH, FakeLlmServer, Reply

    with FakeLlmServer() as server:
        server.queue(
            CHAT_PATH,
            Reply(body=_chat("It runs tasks until they yield.")),
            Reply(body=_chat(None, [("multiply", {"a": 12.5, "b": 8})])),
            Reply(body=_chat("12.5 x 8 = 100.")),
        )
        env = {"OPENAI_BASE_URL": server.base_url, "HARNPY_MODEL": "fake-model"}
        env_all = {**_offline_env(), **env}
        env_all.pop("HARN_LLM_CALLS_DISABLED")
        proc = harnpy(
            "run", str(OPENAI_CHAT), cwd=tmp_path, env={**env_all, "HARN_LLM_CALLS_DISABLED": ""}
        )
        bodies = [r.body for r in server.requests_to(CHAT_PATH)]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "llm_call (fake-model): It runs tasks until they yield.",
        "agent_loop status: done after 2 model calls",
        "  tool multiply -> ok: 100.0",
        "answer: 12.5 x 8 = 100.",
    ]
    # the tool result went back to the server as a tool message
    last = bodies[2]["messages"]
    assert last[-1]["role"] == "tool" and last[-1]["content"] == "100.0"
    assert bodies[1]["tools"][0]["function"]["name"] == "multiply"
