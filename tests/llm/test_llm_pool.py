"""Per-provider concurrency limits of the model-call pool (harnpy.llm.pool)."""

from __future__ import annotations

import threading
import time

import pytest

from harnpy.llm import LlmError, LlmRequest, LlmResponse, Message
from harnpy.llm.pool import DEFAULT_CONCURRENCY, LlmPool, concurrency_limit
from harnpy.llm.providers import LlmHost


class _Counting:
    """Records the largest number of its calls in flight at once."""

    def __init__(self, name: str, hold_s: float = 0.05) -> None:
        self.name = name
        self.hold_s = hold_s
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()

    def complete(self, request: LlmRequest) -> LlmResponse:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.hold_s)
        with self.lock:
            self.active -= 1
        return LlmResponse(text="ok", provider=self.name)


def _request() -> LlmRequest:
    return LlmRequest(messages=[Message(role="user", content="x")])


def test_each_provider_runs_at_most_its_limit_at_once() -> None:
    slow, fast = _Counting("slow"), _Counting("fast")
    with LlmPool(limits={"slow": 2, "fast": 6}) as pool:
        futures = [pool.submit(slow, _request()) for _ in range(8)]
        futures += [pool.submit(fast, _request()) for _ in range(12)]
        assert all(f.result(timeout=10).text == "ok" for f in futures)
    assert slow.peak == 2
    assert 2 < fast.peak <= 6  # the other provider's queue does not hold it back


def test_the_default_limit_lets_many_calls_overlap() -> None:
    provider = _Counting("many", hold_s=0.2)
    with LlmPool() as pool:
        futures = [pool.submit(provider, _request()) for _ in range(40)]
        assert all(f.result(timeout=10).text == "ok" for f in futures)
    assert provider.peak == 40 <= DEFAULT_CONCURRENCY


def test_concurrency_limit_reads_the_provider_variable_first() -> None:
    env = {"HARNPY_LLM_CONCURRENCY": "32", "HARNPY_LLM_CONCURRENCY_OPENAI": "4"}
    assert concurrency_limit(env, "openai") == 4
    assert concurrency_limit(env, "anthropic") == 32
    assert concurrency_limit({}, "anthropic") == DEFAULT_CONCURRENCY
    assert concurrency_limit({}, "anthropic", default=3) == 3
    with pytest.raises(LlmError, match="HARNPY_LLM_CONCURRENCY_OPENAI must be an integer"):
        concurrency_limit({"HARNPY_LLM_CONCURRENCY_OPENAI": "lots"}, "openai")
    with pytest.raises(LlmError, match="HARNPY_LLM_CONCURRENCY must be an integer"):
        concurrency_limit({"HARNPY_LLM_CONCURRENCY": "0"}, "openai")


def test_host_reports_a_bad_limit_in_the_future() -> None:
    env = {"HARN_LLM_PROVIDER": "mock", "HARNPY_LLM_CONCURRENCY_MOCK": "-1"}
    with LlmHost(env=env) as host:
        err = host.submit(_request()).exception(timeout=5)
    assert isinstance(err, LlmError) and err.category == "config"


def test_submit_after_shutdown_is_refused() -> None:
    pool = LlmPool()
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(_Counting("late"), _request())
