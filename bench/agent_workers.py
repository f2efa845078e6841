"""Benchmark: N agent workers whose model calls each take 1 s of server latency.

Starts the scripted test server (tests/llm/fake_llm_server.py) on 127.0.0.1 answering every
chat-completions request after a fixed delay (default 1 s), then runs a Harn program in one
harnpy runtime: a warm-up ``llm_call``, one background ``sub_agent_run`` worker alone, then
N workers spawned together and joined with ``wait_agent``. Each worker's loop makes
``--turns`` model calls (a tool call per turn, then the final answer). The workers'
model calls run concurrently on the runtime's LLM pool while the evaluator keeps
scheduling, so N workers take about as long as one (expect ~1.0-1.3 s for 4 workers of
1 s each, against 4 s if the calls were serial).

Usage: .venv/bin/python bench/agent_workers.py [--workers 4] [--latency 1.0] [--turns 1]

Not a test: it only prints timings. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnpy.runtime.runtime import Runtime  # noqa: E402

PROGRAM = """
tool tick(n: int) -> int {
  description "Return n + 1"
  return n + 1
}

fn options(url) {
  return {provider: "openai", model: "bench-model", base_url: url, llm_retries: 0}
}

fn run_workers(url, count) {
  const started = monotonic_ms()
  var handles = []
  for i in range(count) {
    handles = handles + [
      sub_agent_run(
        "worker " + to_string(i),
        options(url) + {background: true, name: "w" + to_string(i), tools: [tick]},
      ),
    ]
  }
  const done = wait_agent(handles)
  const elapsed = monotonic_ms() - started
  for w in done {
    require w.status == "completed", w.name + " ended " + w.status + ": " + to_string(w.error)
  }
  return {elapsed_ms: elapsed, calls: done.map({ w -> w.result.iterations })}
}

pipeline main() {
  const url = argv()[0]
  const count = to_int(argv()[1])
  const warm = llm_call("warm-up", nil, options(url))
  require warm.text == "pong", "unexpected warm-up answer"
  const one = run_workers(url, 1)
  const many = run_workers(url, count)
  println("ONE " + to_string(one.elapsed_ms) + " " + to_string(one.calls))
  println("MANY " + to_string(many.elapsed_ms) + " " + to_string(many.calls))
}
"""


def _load_server_module():  # type: ignore[no-untyped-def]
    path = REPO / "tests" / "llm" / "fake_llm_server.py"
    spec = importlib.util.spec_from_file_location("fake_llm_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class _Replies:
    """Answers: a tool call for the first ``turns - 1`` requests of each worker, else text.

    The fake server cannot look at request bodies, so the script is a queue: every worker
    makes exactly ``turns`` calls and the calls of one round are interchangeable.
    """

    def __init__(self, fake, latency: float, turns: int) -> None:  # type: ignore[no-untyped-def]
        self.fake = fake
        self.latency = latency
        self.turns = turns

    def tool_call(self):  # type: ignore[no-untyped-def]
        """A delayed reply that calls the ``tick`` tool."""
        body = self.fake.openai_text("")
        body["choices"][0]["message"] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "tick", "arguments": '{"n": 1}'},
                }
            ],
        }
        body["choices"][0]["finish_reason"] = "tool_calls"
        return self.fake.Reply(body=body, delay_s=self.latency)

    def queue(self, server, workers: int) -> None:  # type: ignore[no-untyped-def]
        """Queue the replies of one round of ``workers`` workers."""
        path = self.fake.CHAT_PATH
        for _ in range(self.turns - 1):
            for _ in range(workers):
                server.queue(path, self.tool_call())
        for _ in range(workers):
            server.queue(
                path, self.fake.Reply(body=self.fake.openai_text("pong"), delay_s=self.latency)
            )


def main() -> int:
    """Run the benchmark and print wall times; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.0, help="server delay per request (s)")
    parser.add_argument("--turns", type=int, default=1, help="model calls per worker")
    args = parser.parse_args()
    os.environ.pop("HARN_LLM_CALLS_DISABLED", None)
    os.environ.pop("HARN_LLM_PROVIDER", None)

    fake = _load_server_module()
    out: list[str] = []
    with fake.FakeLlmServer() as server:
        replies = _Replies(fake, args.latency, max(1, args.turns))
        server.queue(fake.CHAT_PATH, fake.Reply(body=fake.openai_text("pong")))  # warm-up
        replies.queue(server, 1)
        replies.queue(server, args.workers)
        rt = Runtime(argv=[server.base_url, str(args.workers)], stdout=out.append)
        mod = rt.load_main("<bench>", PROGRAM)
        started = time.perf_counter()
        rt.run_module(mod)
        total = time.perf_counter() - started
    lines = dict(line.split(" ", 1) for line in "".join(out).splitlines())
    one_ms = float(lines["ONE"].split(" ")[0])
    many_ms = float(lines["MANY"].split(" ")[0])
    serial = args.latency * args.turns * args.workers
    print(f"server latency/request:     {args.latency:.2f} s")
    print(f"model calls per worker:     {args.turns}")
    print(f"1 worker:                   {one_ms / 1000:.3f} s")
    print(f"{args.workers} workers together:        {many_ms / 1000:.3f} s")
    print(f"serial would take:          {serial:.3f} s")
    print(f"whole program (incl. warm): {total:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
