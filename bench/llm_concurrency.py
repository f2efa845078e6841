"""Benchmark: N concurrent model calls through LlmPool against a local server with latency.

Starts the scripted test server (tests/llm/fake_llm_server.py) on 127.0.0.1, in a child
process, with a fixed latency per request (default 1 s), warms the provider up (SDK import, first connection), then
times one call alone and N calls submitted together through ``LlmPool`` with its default
per-provider concurrency limit (``HARNPY_LLM_CONCURRENCY[_<PROVIDER>]`` when set). With real
overlap the N calls take about as long as one; the goal is 256 calls within 1.5x one call.

Usage: .venv/bin/python bench/llm_concurrency.py [--calls 256] [--latency 1.0]
       [--provider openai|anthropic]

Not a test: it only prints timings. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnpy.llm import LlmPool, LlmRequest, Message  # noqa: E402
from harnpy.llm.anthropic_provider import AnthropicProvider  # noqa: E402
from harnpy.llm.openai_provider import OpenAIProvider  # noqa: E402
from harnpy.llm.pool import concurrency_limit  # noqa: E402


def _load_server_module():
    path = REPO / "tests" / "llm" / "fake_llm_server.py"
    spec = importlib.util.spec_from_file_location("fake_llm_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _serve(provider: str, latency: float) -> int:
    """Child process: serve delayed replies until stdin closes (prints the root URL)."""
    fake = _load_server_module()
    with fake.FakeLlmServer() as server:
        body = fake.openai_text("pong") if provider == "openai" else fake.anthropic_text("pong")
        server.default_reply = fake.Reply(body=body, delay_s=latency)
        print(server.root_url, flush=True)
        sys.stdin.read()
    return 0


def main() -> int:
    """Run the benchmark and print wall times; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=256)
    parser.add_argument("--latency", type=float, default=1.0, help="server delay per request (s)")
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return _serve(args.provider, args.latency)

    # The server runs in a child process: its request handling must not compete with the
    # client for this process's GIL (a real model server is elsewhere).
    child = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            "--provider",
            args.provider,
            "--latency",
            str(args.latency),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        root = child.stdout.readline().strip()
        if args.provider == "openai":
            provider = OpenAIProvider(
                env={"OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": root + "/v1"}
            )
        else:
            provider = AnthropicProvider(
                env={"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": root}
            )
        request = LlmRequest(messages=[Message(role="user", content="ping")], retries=0)
        provider.complete(request)  # warm-up: SDK import, client, first connection

        started = time.perf_counter()
        provider.complete(request)
        single = time.perf_counter() - started

        limit = concurrency_limit(os.environ, provider.name)
        with LlmPool(limits={provider.name: limit}) as pool:
            started = time.perf_counter()
            futures = [pool.submit(provider, request) for _ in range(args.calls)]
            texts = [f.result().text for f in futures]
            many = time.perf_counter() - started
        provider.close()
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=30)

    assert texts == ["pong"] * args.calls
    print(f"provider:                {args.provider}")
    print(f"server latency/request:  {args.latency:.2f} s")
    print(f"concurrency limit:       {limit}")
    print(f"1 call:                  {single:.3f} s")
    print(f"{args.calls} concurrent calls:      {many:.3f} s")
    print(f"ratio {args.calls} calls / 1 call:  {many / single:.2f} (goal for 256: <= 1.5)")
    print(f"serial would take:       {single * args.calls:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
