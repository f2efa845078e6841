"""LLM provider layer: one normalized request/response shape and the providers behind it.

Stage job: turn a provider-neutral :class:`LlmRequest` into an :class:`LlmResponse` through
``mock`` (scripted, lifecycle.md 2.15), ``openai`` (any OpenAI-compatible chat-completions
server; presets ``ollama`` and ``local``) or ``anthropic`` (Messages API).

Invariants:

* Self-contained: this package never imports the evaluator; the interpreter wraps it into
  builtins (``llm_call``, ``llm_mock``, ``llm_mock_calls``, ``llm_mock_clear``).
* Lean start-up: importing ``harnpy.llm`` imports neither ``openai`` nor ``anthropic`` nor
  ``httpx``; each SDK loads inside its provider on the first real call.
* Every failure leaving the package is an :class:`LlmError` with a category and a one-line
  message; SDK and JSON exceptions never escape.
* ``HARN_LLM_CALLS_DISABLED=1`` makes real providers fail with category ``disabled`` before
  any network use. Retries (429, 5xx, timeouts, connection errors) are ours, with the SDKs'
  own retries off.
* No module-level mutable state: mock queues, clients and pools live in instances
  (:class:`LlmHost` per run).
"""

from harnpy.llm.errors import LlmError
from harnpy.llm.mock import (
    MockEntry,
    MockProvider,
    MockRecorder,
    RecordingProvider,
    entry_from_response,
    load_mock_jsonl,
    parse_mock_entry,
)
from harnpy.llm.options import build_request
from harnpy.llm.pool import LlmPool
from harnpy.llm.providers import LlmHost, Provider, make_provider
from harnpy.llm.routing import Route, resolve_route, select_provider
from harnpy.llm.types import (
    LlmRequest,
    LlmResponse,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "LlmError",
    "LlmHost",
    "LlmPool",
    "LlmRequest",
    "LlmResponse",
    "Message",
    "MockEntry",
    "MockProvider",
    "MockRecorder",
    "Provider",
    "RecordingProvider",
    "Route",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "build_request",
    "entry_from_response",
    "load_mock_jsonl",
    "make_provider",
    "parse_mock_entry",
    "resolve_route",
    "select_provider",
]
