"""The one exception type of the LLM layer, its categories and HTTP-status classification.

Every failure that leaves ``harnpy.llm`` is an :class:`LlmError`: SDK exceptions, JSON
decoding errors and malformed provider bodies are translated at the provider boundary, so the
interpreter only ever catches this class. Category names follow Harn's ``error_category()``
vocabulary where one exists (``rate_limit``, ``overloaded``, ``timeout``, ``auth``,
``server_error``, ``transient_network``, ``not_found``, ``generic``) and add the ones this
layer needs (``bad_request``, ``malformed_response``, ``disabled``, ``config``,
``mock_unmatched``). Mock entries may carry any category string; it is passed through.
"""

from __future__ import annotations

from typing import Any

from harnpy.shapes import kind_name

RATE_LIMIT = "rate_limit"
OVERLOADED = "overloaded"
TIMEOUT = "timeout"
TRANSIENT_NETWORK = "transient_network"
SERVER_ERROR = "server_error"
AUTH = "auth"
BAD_REQUEST = "bad_request"
NOT_FOUND = "not_found"
MALFORMED_RESPONSE = "malformed_response"
DISABLED = "disabled"
CONFIG = "config"
MOCK_UNMATCHED = "mock_unmatched"
GENERIC = "generic"

#: Categories our retry loop treats as transient (429, 5xx, timeouts, connection failures).
RETRYABLE_CATEGORIES = frozenset({RATE_LIMIT, OVERLOADED, TIMEOUT, TRANSIENT_NETWORK, SERVER_ERROR})


class LlmError(Exception):
    """A categorized LLM failure with a one-line, user-facing message.

    Attributes:
        category: one of the module constants (or a mock-supplied string).
        message: one line, prefixed with the provider name, e.g.
            ``openai: OPENAI_API_KEY is not set (needed for model gpt-4o)``.
        status: HTTP status code when the failure came from an HTTP answer, else None.
        retry_after_s: server-requested delay in seconds (``Retry-After``), else None.
    """

    def __init__(
        self,
        category: str,
        message: str,
        status: int | None = None,
        *,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.category = category
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:
        """True when our retry loop may try again (see ``RETRYABLE_CATEGORIES``)."""
        return self.category in RETRYABLE_CATEGORIES

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for a Harn thrown value: ``{category, message, status?, retry_after_ms?}``."""
        out: dict[str, Any] = {"category": self.category, "message": self.message}
        if self.status is not None:
            out["status"] = self.status
        if self.retry_after_s is not None:
            out["retry_after_ms"] = int(round(self.retry_after_s * 1000))
        return out

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"LlmError({self.category!r}, {self.message!r}, status={self.status!r})"


def category_for_status(status: int) -> str:
    """Map an HTTP error status to a category (Harn's table, plus ``bad_request``).

    401/403 -> auth; 404/410 -> not_found; 408/504/522/524 -> timeout; 429 -> rate_limit;
    503/529 -> overloaded; other 5xx -> server_error; other 4xx -> bad_request.
    """
    if status in (401, 403):
        return AUTH
    if status in (404, 410):
        return NOT_FOUND
    if status in (408, 504, 522, 524):
        return TIMEOUT
    if status == 429:
        return RATE_LIMIT
    if status in (503, 529):
        return OVERLOADED
    if status >= 500:
        return SERVER_ERROR
    return BAD_REQUEST


_STATUS_WORDS = {
    AUTH: "authentication failed",
    NOT_FOUND: "not found",
    TIMEOUT: "request timed out",
    RATE_LIMIT: "rate limited",
    OVERLOADED: "server overloaded",
    SERVER_ERROR: "server error",
    BAD_REQUEST: "request rejected",
}


def describe_status(category: str) -> str:
    """Short human phrase for a status-derived category (``rate limited``, ``server error``)."""
    return _STATUS_WORDS.get(category, category.replace("_", " "))


def type_name(value: Any) -> str:
    """Harn's name for the type of a JSON-like ``value`` (``string``, ``nil``, ``list``,
    ``dict``...) for error messages, as :func:`harnpy.runtime.values.type_name` names it
    (this package may not import the runtime: ``tests/test_layering.py``)."""
    return "nil" if value is None else kind_name(value)


def one_line(text: object, limit: int = 300) -> str:
    """Collapse whitespace to one line and cut at ``limit`` characters (with an ellipsis)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"
