"""Benchmark: N concurrent model calls through LlmPool against a local server with latency.

Starts the scripted test server (tests/llm/fake_llm_server.py) on 127.0.0.1 with a fixed
latency per request (default 1 s), warms the provider up (SDK import, first connection), then
times one call alone and N calls submitted together through ``LlmPool``. With real overlap
the N calls take about as long as one (expect ~1.0-1.2 s for 4 calls of 1 s each).

Usage: .venv/bin/python bench/llm_concurrency.py [--calls 4] [--latency 1.0]
       [--provider openai|anthropic]

Not a test: it only prints timings. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnpy.llm import LlmPool, LlmRequest, Message  # noqa: E402
from harnpy.llm.anthropic_provider import AnthropicProvider  # noqa: E402
from harnpy.llm.openai_provider import OpenAIProvider  # noqa: E402


def _load_server_module():
    path = REPO / "tests" / "llm" / "fake_llm_server.py"
    spec = importlib.util.spec_from_file_location("fake_llm_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    """Run the benchmark and print wall times; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.0, help="server delay per request (s)")
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    args = parser.parse_args()

    fake = _load_server_module()
    with fake.FakeLlmServer() as server:
        if args.provider == "openai":
            body = fake.openai_text("pong")
            provider = OpenAIProvider(
                env={"OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": server.base_url}
            )
        else:
            body = fake.anthropic_text("pong")
            provider = AnthropicProvider(
                env={"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": server.root_url}
            )
        request = LlmRequest(messages=[Message(role="user", content="ping")], retries=0)

        server.default_reply = fake.Reply(body=body)
        provider.complete(request)  # warm-up: SDK import, client, first connection

        server.default_reply = fake.Reply(body=body, delay_s=args.latency)
        started = time.perf_counter()
        provider.complete(request)
        single = time.perf_counter() - started

        with LlmPool(max_workers=args.calls) as pool:
            started = time.perf_counter()
            futures = [pool.submit(provider, request) for _ in range(args.calls)]
            texts = [f.result().text for f in futures]
            many = time.perf_counter() - started
        provider.close()

    assert texts == ["pong"] * args.calls
    print(f"provider:                {args.provider}")
    print(f"server latency/request:  {args.latency:.2f} s")
    print(f"1 call:                  {single:.3f} s")
    print(f"{args.calls} concurrent calls:      {many:.3f} s")
    print(f"ratio {args.calls} calls / 1 call:  {many / single:.2f}")
    print(f"serial would take:       {single * args.calls:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
