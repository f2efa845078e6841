"""What a finished run leaves behind for pollers: the completion snapshot and the sanitized
failure.

* :class:`CompletionSnapshot` (``version`` 1) is stored as the run's ``output`` before the
  run becomes ``completed``: the final ``output`` (the entry point's return value as JSON),
  the structured ``result`` (its Harn type and the text it printed), the caller's
  ``metadata``, the normalized metadata of every model call (``model_calls``) and the
  aggregate token ``usage``. It is validated by its pydantic model and at most 4 MiB of
  JSON (:data:`MAX_SNAPSHOT_BYTES`). Raw provider metadata (the text and tool calls of each
  model answer) is kept only when the server is started with ``--keep-raw-model-metadata``.
* :func:`sanitize_failure` turns whatever ended a run into ``{category, message, code?}``:
  one line, no Python or Harn stack trace, at most 1,000 characters, with secrets (values of
  environment variables whose names say KEY / TOKEN / SECRET / PASSWORD, the API keys the
  server accepts, passwords in URLs) replaced by ``[redacted]``.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "CompletionSnapshot",
    "ModelCall",
    "SnapshotTooLarge",
    "TokenUsage",
    "encode_snapshot",
    "model_call_of",
    "sanitize_failure",
]

#: The largest completion snapshot stored (bytes of JSON), as the store's documents.
MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024
#: The longest failure message kept (characters).
MAX_MESSAGE_CHARS = 1000
#: The longest printed text kept in ``result.stdout`` (characters; the events keep it all).
MAX_STDOUT_CHARS = 64 * 1024


class ModelCall(BaseModel):
    """Normalized metadata of one model call."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    model: str
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    stop_reason: str | None = None
    tool_calls: int = Field(default=0, ge=0)
    raw: dict[str, Any] | None = None


class TokenUsage(BaseModel):
    """Token usage summed over a run's model calls."""

    model_config = ConfigDict(extra="forbid")

    model_calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)


class CompletionSnapshot(BaseModel):
    """The versioned public completion snapshot of a run (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    output: Any = None
    result: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    model_calls: list[ModelCall] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)

    @classmethod
    def build(
        cls,
        output: Any,
        *,
        type_name: str,
        stdout: str,
        metadata: dict[str, Any],
        calls: list[ModelCall],
    ) -> CompletionSnapshot:
        """The snapshot of a completed run; ``usage`` is summed from ``calls``."""
        usage = TokenUsage(
            model_calls=len(calls),
            input_tokens=sum(c.input_tokens for c in calls),
            output_tokens=sum(c.output_tokens for c in calls),
            cache_read_tokens=sum(c.cache_read_tokens for c in calls),
            cache_write_tokens=sum(c.cache_write_tokens for c in calls),
        )
        usage.total_tokens = usage.input_tokens + usage.output_tokens
        text = stdout if len(stdout) <= MAX_STDOUT_CHARS else stdout[-MAX_STDOUT_CHARS:]
        return cls(
            output=output,
            result={"type": type_name, "stdout": text, "stdout_truncated": text != stdout},
            metadata=metadata,
            model_calls=calls,
            usage=usage,
        )


class SnapshotTooLarge(Exception):
    """A completion snapshot over :data:`MAX_SNAPSHOT_BYTES`; ``size`` its bytes."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def encode_snapshot(snap: CompletionSnapshot) -> dict[str, Any]:
    """The snapshot as JSON data, validated again from its own JSON (what pollers get back
    is exactly what the model accepts).

    Raises:
        SnapshotTooLarge: more than 4 MiB of JSON.
        pydantic.ValidationError: the snapshot does not validate.
    """
    data = snap.model_dump(mode="json")
    text = orjson.dumps(data)
    if len(text) > MAX_SNAPSHOT_BYTES:
        raise SnapshotTooLarge(len(text))
    CompletionSnapshot.model_validate_json(text)
    return data  # type: ignore[no-any-return]


def model_call_of(response: Any, keep_raw: bool = False) -> ModelCall:
    """The normalized metadata of one :class:`~harnpy.llm.types.LlmResponse`."""
    usage = response.usage
    raw = None
    if keep_raw:
        raw = {"text": response.text, "tool_calls": [tc.to_dict() for tc in response.tool_calls]}
    return ModelCall(
        provider=str(response.provider or ""),
        model=str(response.model or ""),
        input_tokens=max(0, int(usage.input_tokens or 0)),
        output_tokens=max(0, int(usage.output_tokens or 0)),
        cache_read_tokens=max(0, int(usage.cache_read_tokens or 0)),
        cache_write_tokens=max(0, int(usage.cache_write_tokens or 0)),
        stop_reason=response.stop_reason,
        tool_calls=len(response.tool_calls),
        raw=raw,
    )


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<pre>[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^@\s/]+(?=@)", re.I)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.I)


def secret_values(extra: tuple[str, ...] = ()) -> list[str]:
    """Strings that must never appear in a stored failure: environment values whose names
    look secret (8 characters or more) and ``extra``."""
    out = [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8]
    out.extend(x for x in extra if len(x) >= 4)
    return sorted(set(out), key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret, URL password and bearer token replaced by
    ``[redacted]``."""
    for value in secrets:
        if value in text:
            text = text.replace(value, "[redacted]")
    text = _URL_PASSWORD.sub(r"\g<pre>[redacted]", text)
    return _BEARER.sub(r"\1[redacted]", text)


def sanitize_failure(
    category: str, message: str, code: str | None = None, secrets: list[str] | None = None
) -> dict[str, Any]:
    """``{category, message, code?}`` for a stored failure: the first line of ``message``
    only (never a trace), secrets redacted, at most 1,000 characters."""
    first = message.strip().splitlines()[0] if message.strip() else category
    first = redact(first, secret_values() if secrets is None else secrets)
    if len(first) > MAX_MESSAGE_CHARS:
        first = first[: MAX_MESSAGE_CHARS - 3] + "..."
    out: dict[str, Any] = {"category": category, "message": first}
    if code:
        out["code"] = code
    return out
