"""Benchmark: cost of one agent-loop turn as the transcript grows (mock model, no snapshot).

Runs an ``agent_loop`` whose mock model calls a tool on every turn for N turns (each turn adds
two messages), for several N, and prints the mean milliseconds per turn. With requests that
validate only new messages and a mock log that stores each message once, the cost per turn
stays about flat as N grows (it used to grow linearly: ~55 ms per turn at 4,000 messages).

Usage: .venv/bin/python bench/long_transcript.py [--turns 250,500,1000,2000]

Not a test: it only prints timings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnpy.runtime.runtime import Runtime  # noqa: E402

PROGRAM = """
fn echo_tools() {
  return tool_define(tool_registry(), "echo", "Echo", {
    parameters: {text: "string"},
    handler: { args -> args.text },
  })
}
pipeline main() {
  const n = to_int(argv()[0])
  for i in range(n) {
    llm_mock({tool_calls: [{name: "echo", arguments: {text: "turn " + to_string(i)}}]})
  }
  llm_mock({text: "final answer"})
  let r = agent_loop("task", "system", {provider: "mock", tools: echo_tools(), max_iterations: n + 5})
  println(len(r.transcript.messages))
}
"""


def main() -> int:
    """Run the benchmark and print per-turn times; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="250,500,1000,2000")
    args = parser.parse_args()
    print(f"{'turns':>7}{'messages':>10}{'s total':>10}{'ms/turn':>10}")
    for n in (int(x) for x in args.turns.split(",")):
        out: list[str] = []
        rt = Runtime(argv=[str(n)], stdout=out.append)
        mod = rt.load_main("<bench>", PROGRAM)
        started = time.process_time()
        rt.run_module(mod)
        took = time.process_time() - started
        print(f"{n:>7}{''.join(out).strip():>10}{took:>10.2f}{took / n * 1000:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
