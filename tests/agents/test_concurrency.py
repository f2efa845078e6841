"""Model calls of different workers run concurrently (structural check, no timing).

Each fake model answer waits on a :class:`threading.Barrier` for all four workers' calls:
the barrier only opens when four requests are in flight at the same time, so the test
passes only if the scheduler submitted every worker's call before any of them finished
(serial calls would break the barrier after its timeout). Wall time is measured by
``bench/agent_workers.py``, not here.
"""

from __future__ import annotations

import threading
from typing import Any

from harnpy.lifecycle.services import services
from harnpy.llm import LlmResponse
from tests.agents.conftest import RunHarn, lines


class _BarrierProvider:
    name = "openai"

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=10)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def complete(self, request: Any) -> LlmResponse:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            self.barrier.wait()
        finally:
            with self.lock:
                self.in_flight -= 1
        prompt = request.messages[0].text()
        return LlmResponse(text="answer to " + prompt, model="fake", provider="openai")


def test_four_workers_have_their_model_calls_in_flight_together(run_harn: RunHarn) -> None:
    provider = _BarrierProvider(4)

    def setup(rt: Any) -> None:
        services(rt).llm._providers["openai"] = provider

    out, _ = run_harn(
        """
pipeline main() {
  var hs = []
  for i in range(4) {
    hs = hs + [sub_agent_run("task " + to_string(i), {provider: "openai", model: "fake", background: true})]
  }
  println(wait_agent(hs).map({ s -> s.status + ":" + s.result.summary }))
}
""",
        setup=setup,
    )
    assert lines(out) == [
        "[completed:answer to task 0, completed:answer to task 1, "
        "completed:answer to task 2, completed:answer to task 3]"
    ]
    assert provider.peak == 4
    assert not provider.barrier.broken
