"""The one exception type of the LLM layer, its categories and HTTP-status classification.

Every failure that leaves ``harnpy.llm`` is an :class:`LlmError`: SDK exceptions, JSON
decoding errors and malformed provider bodies are translated at the provider boundary, so the
interpreter only ever catches this class. Category names follow Harn's ``error_category()``
vocabulary where one exists (``rate_limit``, ``overloaded``, ``timeout``, ``auth``,
``server_error``, ``transient_network``, ``not_found``, ``generic``) and add the ones this
layer needs (``bad_request``, ``malformed_response``, ``disabled``, ``config``,
``mock_unmatched``). Mock entries may carry any category string; it is passed through.

**The error envelope.** What a Harn script catches from ``llm_call`` (and finds in the
``error`` of ``llm_call_safe`` and of every structured/safe variant) is the dict built by
:func:`llm_error_envelope` — Harn's shape ``{kind, reason, category, message,
retry_after_ms?, provider, model}`` (plus ``status`` when an HTTP status is known, and any
extra fields the caller adds, e.g. a budget's ``projected_cost_usd``). ``kind`` is
``"transient"`` (trying again may succeed: the retry loop retries exactly these) or
``"terminal"``; ``reason`` is the coarse cause (:func:`classify`). Build every such dict with
that one function (or :meth:`LlmError.envelope`), never by hand.
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

BUDGET_EXCEEDED = "budget_exceeded"
SCHEMA_VALIDATION = "schema_validation"

#: Categories our retry loop treats as transient (429, 5xx, timeouts, connection failures).
RETRYABLE_CATEGORIES = frozenset({RATE_LIMIT, OVERLOADED, TIMEOUT, TRANSIENT_NETWORK, SERVER_ERROR})

#: ``kind`` of an envelope: trying again may succeed / will fail the same way.
TRANSIENT = "transient"
TERMINAL = "terminal"

#: ``reason`` of the categories whose reason is not the category's own name.
_REASONS = {
    OVERLOADED: "server_error",
    TRANSIENT_NETWORK: "network",
    BAD_REQUEST: "invalid_request",
    GENERIC: "unknown",
}
#: Categories that are their own reason (any other category string: reason ``unknown``).
_SELF_REASONS = frozenset(
    {
        RATE_LIMIT,
        SERVER_ERROR,
        TIMEOUT,
        AUTH,
        NOT_FOUND,
        MALFORMED_RESPONSE,
        DISABLED,
        CONFIG,
        MOCK_UNMATCHED,
        BUDGET_EXCEEDED,
        SCHEMA_VALIDATION,
        "cancelled",
        "circuit_open",
    }
)

#: The phrase of an empty completion (a provider that reported output tokens but sent no
#: text, reasoning or tool calls): a transient ``server_error`` with reason
#: ``empty_completion``, which agent loops count in ``trace.empty_completion_retries``.
EMPTY_COMPLETION_PHRASE = "delivered no content"
EMPTY_COMPLETION = "empty_completion"
_CONTEXT_OVERFLOW_PHRASES = (
    "context length",
    "context_length_exceeded",
    "prompt is too long",
    "maximum context",
    "context window",
)


def empty_completion(provider: str, model: str, output_tokens: int) -> LlmError:
    """The transient ``server_error`` for a 2xx answer that reported ``output_tokens`` but
    carried no text, reasoning or tool calls (Harn's wording; reason
    ``empty_completion``): retried under ``llm_retries`` like any transient failure."""
    return LlmError(
        SERVER_ERROR,
        f"{provider}: model {model} reported completion_tokens={output_tokens} but "
        f"{EMPTY_COMPLETION_PHRASE}, reasoning, or tool calls",
        reason=EMPTY_COMPLETION,
        provider=provider,
        model=model,
    )


def classify(category: str, message: str = "") -> tuple[str, str]:
    """``(kind, reason)`` of a failure of ``category`` with ``message``.

    ``kind`` is ``"transient"`` for :data:`RETRYABLE_CATEGORIES`, else ``"terminal"``.
    ``reason``: ``rate_limit``; ``server_error`` (``server_error`` and ``overloaded``; an
    empty completion, see :data:`EMPTY_COMPLETION_PHRASE`, is ``empty_completion``);
    ``timeout``; ``network`` (``transient_network``); ``auth``; ``not_found``;
    ``invalid_request`` (``bad_request``; a prompt over the context window is
    ``context_overflow``); ``budget_exceeded``, ``schema_validation``, ``config``,
    ``disabled``, ``malformed_response``, ``mock_unmatched``, ``cancelled`` as themselves;
    ``unknown`` for anything else (``generic``, unknown mock categories).
    """
    kind = TRANSIENT if category in RETRYABLE_CATEGORIES else TERMINAL
    lowered = message.lower()
    if category in (SERVER_ERROR, OVERLOADED) and EMPTY_COMPLETION_PHRASE in lowered:
        return kind, EMPTY_COMPLETION
    if category == BAD_REQUEST and any(p in lowered for p in _CONTEXT_OVERFLOW_PHRASES):
        return kind, "context_overflow"
    if category in _REASONS:
        return kind, _REASONS[category]
    return kind, category if category in _SELF_REASONS else "unknown"


def llm_error_envelope(
    category: str,
    message: str,
    *,
    provider: str | None = None,
    model: str | None = None,
    retry_after_ms: int | None = None,
    status: int | None = None,
    kind: str | None = None,
    reason: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The Harn value of a failed LLM call: ``{kind, reason, category, message,
    retry_after_ms?, status?, provider, model, **extra}``.

    This is the one builder of the dict ``llm_call`` throws, ``llm_call_safe`` returns in
    ``error``, and every structured/safe variant reuses (Harn ``llm/llm_call.md``).
    ``kind`` and ``reason`` default to :func:`classify` of ``category`` and ``message``;
    ``retry_after_ms`` and ``status`` are left out when None (a script tests
    ``e.retry_after_ms == nil``); ``provider`` and ``model`` are always present (nil when
    the call failed before a provider was chosen). ``extra`` fields (e.g. a budget's
    ``limit``, ``projected_cost_usd``; a schema failure's ``errors``) come last and never
    replace the standard ones.
    """
    k, r = classify(category, message)
    out: dict[str, Any] = {
        "kind": kind or k,
        "reason": reason or r,
        "category": category,
        "message": message,
    }
    if retry_after_ms is not None:
        out["retry_after_ms"] = retry_after_ms
    if status is not None:
        out["status"] = status
    out["provider"] = provider
    out["model"] = model
    for key, value in extra.items():
        out.setdefault(key, value)
    return out


def envelope_from_value(
    value: Any, *, provider: str | None = None, model: str | None = None
) -> dict[str, Any]:
    """The error envelope for any caught error value (a Harn thrown value).

    A dict with a ``category`` (e.g. an envelope already, or an older ``{category,
    message}`` dict) keeps its fields and gets the missing ``kind`` / ``reason`` /
    ``provider`` / ``model``; any other value becomes category ``generic`` with its text as
    the message (``str(value)``; pass Harn's display text for non-strings).
    """
    if isinstance(value, dict) and isinstance(value.get("category"), str):
        fields = {k: v for k, v in value.items() if isinstance(k, str)}
        category = fields.pop("category")
        message = fields.pop("message", "")
        message = message if isinstance(message, str) else str(message)
        kind = fields.pop("kind", None)
        reason = fields.pop("reason", None)
        retry = fields.pop("retry_after_ms", None)
        status = fields.pop("status", None)
        prov = fields.pop("provider", None) or provider
        mod = fields.pop("model", None) or model
        return llm_error_envelope(
            category,
            message,
            provider=prov,
            model=mod,
            retry_after_ms=retry,
            status=status,
            kind=kind if isinstance(kind, str) else None,
            reason=reason if isinstance(reason, str) else None,
            **fields,
        )
    return llm_error_envelope(GENERIC, str(value), provider=provider, model=model)


class LlmError(Exception):
    """A categorized LLM failure with a one-line, user-facing message.

    Attributes:
        category: one of the module constants (or a mock-supplied string).
        message: one line, prefixed with the provider name, e.g.
            ``openai: OPENAI_API_KEY is not set (needed for model gpt-4o)``.
        status: HTTP status code when the failure came from an HTTP answer, else None.
        retry_after_s: server-requested delay in seconds (``Retry-After``), else None.
        kind, reason: explicit envelope ``kind`` / ``reason`` (a mock entry may script
            them); None: :func:`classify` decides.
        provider, model: the provider and model the failed request went to (the host fills
            them in when the provider did not), else None.
    """

    def __init__(
        self,
        category: str,
        message: str,
        status: int | None = None,
        *,
        retry_after_s: float | None = None,
        kind: str | None = None,
        reason: str | None = None,
        provider: str | None = None,
        model: str | None = None,
    ) -> None:
        super().__init__(message)
        self.category = category
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s
        self.kind = kind
        self.reason = reason
        self.provider = provider
        self.model = model

    @property
    def retryable(self) -> bool:
        """True when a retry may succeed: the envelope's ``kind`` is ``"transient"`` (by
        default the categories of ``RETRYABLE_CATEGORIES``)."""
        if self.kind is not None:
            return self.kind == TRANSIENT
        return self.category in RETRYABLE_CATEGORIES

    def tag(self, provider: str | None, model: str | None) -> LlmError:
        """Fill ``provider`` / ``model`` where still unset; returns self."""
        if self.provider is None:
            self.provider = provider
        if self.model is None:
            self.model = model
        return self

    def classified(self) -> tuple[str, str]:
        """``(kind, reason)`` of the envelope: the explicit ones, else :func:`classify`."""
        kind, reason = classify(self.category, self.message)
        return self.kind or kind, self.reason or reason

    @property
    def retry_after_ms(self) -> int | None:
        """``retry_after_s`` in whole milliseconds, or None."""
        return None if self.retry_after_s is None else int(round(self.retry_after_s * 1000))

    def envelope(self, **extra: Any) -> dict[str, Any]:
        """This failure as the Harn error envelope (:func:`llm_error_envelope`)."""
        return llm_error_envelope(
            self.category,
            self.message,
            provider=self.provider,
            model=self.model,
            retry_after_ms=self.retry_after_ms,
            status=self.status,
            kind=self.kind,
            reason=self.reason,
            **extra,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for a Harn thrown value: the envelope (see :meth:`envelope`)."""
        return self.envelope()

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


#: Anthropic error ``type`` (HTTP error bodies and 2xx error envelopes) -> category.
ANTHROPIC_ERROR_TYPES = {
    "overloaded_error": OVERLOADED,
    "rate_limit_error": RATE_LIMIT,
    "api_error": SERVER_ERROR,
    "timeout_error": TIMEOUT,
    "authentication_error": AUTH,
    "permission_error": AUTH,
    "not_found_error": NOT_FOUND,
    "request_too_large": BAD_REQUEST,
    "invalid_request_error": BAD_REQUEST,
    "billing_error": AUTH,
}


def provider_error_code(body: Any) -> tuple[str | None, str | None]:
    """``(type, code)`` of a provider error body (OpenAI ``{error: {type, code}}``, or the
    inner error object itself as the OpenAI SDK hands it over; Anthropic ``{type:
    "error", error: {type}}``), each None when absent."""
    if not isinstance(body, dict):
        return None, None
    err = body.get("error")
    if not isinstance(err, dict):
        err = body if "code" in body or "message" in body else None
    if not isinstance(err, dict):
        return None, None
    kind, code = err.get("type"), err.get("code")
    return (
        kind if isinstance(kind, str) else None,
        code if isinstance(code, str) else None,
    )


def refine_http_error(status: int, body: Any) -> tuple[str, str | None, str | None]:
    """``(category, kind, reason)`` of an HTTP error answer from its status and error body.

    The category is :func:`category_for_status`, except that an Anthropic error ``type``
    (:data:`ANTHROPIC_ERROR_TYPES`) wins for an unusual status (a 400-class body saying
    ``overloaded_error``). ``kind`` / ``reason`` are None (:func:`classify` decides) except:
    OpenAI's ``insufficient_quota`` 429 is terminal ``quota_exceeded`` (retrying cannot
    help, unlike a rate limit); ``context_length_exceeded`` is ``context_overflow``; a 413
    or Anthropic ``request_too_large`` is ``request_too_large``.
    """
    category = category_for_status(status)
    etype, code = provider_error_code(body)
    mapped = ANTHROPIC_ERROR_TYPES.get(etype or "")
    if mapped is not None and category in (BAD_REQUEST, SERVER_ERROR):
        category = mapped
    if code == "insufficient_quota" or etype == "insufficient_quota":
        return RATE_LIMIT, TERMINAL, "quota_exceeded"
    if code == "context_length_exceeded":
        return category, None, "context_overflow"
    if status == 413 or etype == "request_too_large":
        return BAD_REQUEST, None, "request_too_large"
    return category, None, None


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


def raise_error_envelope(provider: str, body: dict[str, Any], where: str) -> None:
    """Raise the :class:`LlmError` of an OpenAI-style ``{error: {message, code}}`` envelope
    that came in a 2xx answer (``where``: ``"response body"`` / ``"stream"``): a server
    error, unless its ``code`` refines it (:func:`refine_http_error`)."""
    err = body["error"]
    detail = err.get("message") if isinstance(err, dict) else err
    code = err.get("code") if isinstance(err, dict) else None
    category, kind, reason = refine_http_error(
        code if type(code) is int and code >= 400 else 500, body
    )
    raise LlmError(
        category,
        f"{provider}: error in {where}: {one_line(detail, 200)}",
        kind=kind,
        reason=reason,
    )


def one_line(text: object, limit: int = 300) -> str:
    """Collapse whitespace to one line and cut at ``limit`` characters (with an ellipsis)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"
