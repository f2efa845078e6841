"""Shared machinery of the SDK-backed providers: guards, client cache, error translation.

A concrete provider supplies the SDK module name, how to resolve model/base URL/key, how to
build a client, how to send one request (returning the raw response body text) and how to
parse that body. This base class adds the ``HARN_LLM_CALLS_DISABLED`` guard, our retry loop,
and the translation of every SDK exception into :class:`LlmError`. The SDK is imported only
inside :meth:`RemoteProvider._sdk`, i.e. on the first real call.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from harnpy.llm._retry import call_with_retries, parse_rate_limit_reset, parse_retry_after
from harnpy.llm.errors import (
    AUTH,
    CONFIG,
    DISABLED,
    GENERIC,
    MALFORMED_RESPONSE,
    TIMEOUT,
    TRANSIENT_NETWORK,
    LlmError,
    describe_status,
    one_line,
    refine_http_error,
)
from harnpy.llm.streaming import OnDelta
from harnpy.llm.types import LlmRequest, LlmResponse
from harnpy.shapes import kind_name

DISABLED_ENV = "HARN_LLM_CALLS_DISABLED"


def calls_disabled(env: Mapping[str, str]) -> bool:
    """True when ``HARN_LLM_CALLS_DISABLED`` is set to anything but ``""``/0/false/no/off."""
    value = env.get(DISABLED_ENV, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def ensure_calls_enabled(provider: str, env: Mapping[str, str]) -> None:
    """Raise ``LlmError(disabled)`` when real calls are switched off (before any network use)."""
    if calls_disabled(env):
        raise LlmError(
            DISABLED,
            f"{provider}: real LLM calls are disabled ({DISABLED_ENV}=1); "
            'use provider "mock" or unset the variable',
        )


@dataclass(frozen=True)
class Settings:
    """Resolved connection settings for one request (``api_key`` never printed)."""

    model: str
    base_url: str
    api_key: str
    key_env: str

    def __repr__(self) -> str:
        return f"Settings(model={self.model!r}, base_url={self.base_url!r})"


class RemoteProvider:
    """Base for providers that talk HTTP through an official SDK (see module docstring).

    Args:
        name: provider name used in results and error prefixes.
        env: environment mapping to read (None: ``os.environ`` at call time).
        sleep: called with the backoff delay in seconds between retries.
    """

    sdk_module: str = ""
    sdk_extra_hint: str = "pip install 'harnpy[llm]'"

    def __init__(
        self,
        name: str,
        *,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.name = name
        self._env = env
        self._sleep = sleep
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    @property
    def env(self) -> Mapping[str, str]:
        """The environment this provider reads."""
        return os.environ if self._env is None else self._env

    # -- hooks for subclasses ---------------------------------------------------------------
    def settings(self, request: LlmRequest) -> Settings:
        """Resolve model, base URL and key; raise ``LlmError(config)`` when one is missing."""
        raise NotImplementedError

    def _new_client(self, sdk: ModuleType, settings: Settings) -> Any:
        raise NotImplementedError

    def _send(self, client: Any, request: LlmRequest, settings: Settings) -> str:
        """Perform one HTTP exchange through the SDK and return the raw 2xx body text."""
        raise NotImplementedError

    def _parse(self, data: Any, settings: Settings) -> LlmResponse:
        """Turn a decoded JSON body into an LlmResponse or raise ``LlmError``."""
        raise NotImplementedError

    def _stream(
        self, client: Any, request: LlmRequest, settings: Settings, on_delta: OnDelta
    ) -> dict[str, Any]:
        """Perform one streaming exchange, calling ``on_delta`` with each text delta as it
        arrives; return the complete response body the events add up to."""
        raise NotImplementedError

    # -- the call --------------------------------------------------------------------------
    def _prepare(self, request: LlmRequest) -> tuple[Settings, Any]:
        """``(settings, client)`` for ``request``, after the checks every call makes before
        any network use (calls enabled; no native tool-search payload)."""
        ensure_calls_enabled(self.name, self.env)
        if request.tool_payload is not None:
            raise LlmError(
                CONFIG,
                f"{self.name}: native tool search payloads are not sent by harnpy's client yet; "
                'use tool_search mode: "client"',
            )
        settings = self.settings(request)
        return settings, self._client(settings)

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Send ``request`` with retries; return the normalized response.

        Raises:
            LlmError: ``disabled`` / ``config`` before any network use; ``rate_limit``,
                ``overloaded``, ``server_error``, ``timeout``, ``transient_network`` after the
                retries are spent; ``auth``, ``bad_request``, ``not_found``,
                ``malformed_response`` at once.
        """
        settings, client = self._prepare(request)

        def attempt() -> LlmResponse:
            try:
                body = self._send(client, request, settings)
            except LlmError:
                raise
            except Exception as exc:  # every SDK/transport failure becomes an LlmError
                raise self._translate(exc, request, settings) from None
            return self._decode(body, settings)

        try:
            return call_with_retries(
                attempt,
                retries=request.effective_retries,
                backoff_ms=request.effective_backoff_ms,
                sleep=self._sleep,
            )
        except LlmError as err:
            raise err.tag(self.name, settings.model) from None

    def stream(self, request: LlmRequest, on_delta: OnDelta) -> LlmResponse:
        """Send ``request`` with streaming on: ``on_delta(text)`` gets each visible text
        delta as the provider sends it (on this thread); returns the normalized response
        once the stream ends, as :meth:`complete` would. One attempt: the caller retries
        (a retry after some deltas would repeat them).

        Raises:
            LlmError: as :meth:`complete`; ``transient_network`` when the stream ends
                before the provider said it finished.
        """
        settings, client = self._prepare(request)
        try:
            try:
                body = self._stream(client, request, settings, on_delta)
            except LlmError:
                raise
            except Exception as exc:  # every SDK/transport failure becomes an LlmError
                raise self._translate(exc, request, settings) from None
            try:
                return self._parse(body, settings)
            except LlmError:
                raise
            except Exception as exc:  # a shape we did not anticipate: never a traceback
                raise LlmError(
                    MALFORMED_RESPONSE,
                    f"{self.name}: unexpected stream shape ({type(exc).__name__}: {one_line(exc)})",
                ) from None
        except LlmError as err:
            raise err.tag(self.name, settings.model) from None

    def close(self) -> None:
        """Close cached SDK clients (their HTTP connection pools)."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                client.close()
            except Exception:  # closing is best effort
                pass

    # -- helpers ---------------------------------------------------------------------------
    def _sdk(self) -> ModuleType:
        try:
            return importlib.import_module(self.sdk_module)
        except ImportError:
            raise LlmError(
                CONFIG,
                f"{self.name}: the `{self.sdk_module}` package is not installed "
                f"({self.sdk_extra_hint})",
            ) from None

    def _client(self, settings: Settings) -> Any:
        key = (settings.base_url, settings.api_key)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                sdk = self._sdk()
                try:
                    client = self._new_client(sdk, settings)
                except LlmError:
                    raise
                except Exception as exc:
                    raise LlmError(
                        CONFIG, f"{self.name}: cannot create client: {one_line(exc)}"
                    ) from None
                self._clients[key] = client
            return client

    def _decode(self, body: str, settings: Settings) -> LlmResponse:
        try:
            data = json.loads(body)
        except ValueError:
            snippet = one_line(body, 80) or "<empty body>"
            raise LlmError(
                MALFORMED_RESPONSE,
                f"{self.name}: response body is not valid JSON: {snippet!r}",
            ) from None
        if not isinstance(data, dict):
            raise LlmError(
                MALFORMED_RESPONSE,
                f"{self.name}: response body is a JSON {kind_name(data)}, expected an object",
            )
        try:
            return self._parse(data, settings)
        except LlmError:
            raise
        except Exception as exc:  # a shape we did not anticipate: never a traceback
            raise LlmError(
                MALFORMED_RESPONSE,
                f"{self.name}: unexpected response shape ({type(exc).__name__}: {one_line(exc)})",
            ) from None

    def _translate(self, exc: Exception, request: LlmRequest, settings: Settings) -> LlmError:
        """Map an SDK exception to an LlmError (status, Retry-After, one-line message)."""
        sdk = self._sdk()
        timeout_cls = getattr(sdk, "APITimeoutError", ())
        conn_cls = getattr(sdk, "APIConnectionError", ())
        status_cls = getattr(sdk, "APIStatusError", ())
        if isinstance(exc, timeout_cls):
            return LlmError(
                TIMEOUT,
                f"{self.name}: request timed out after {request.effective_timeout_s:g}s "
                f"(model {settings.model})",
            )
        if isinstance(exc, conn_cls):
            cause = exc.__cause__ or exc
            return LlmError(
                TRANSIENT_NETWORK,
                f"{self.name}: cannot reach {settings.base_url}: {one_line(cause, 160)}",
            )
        if isinstance(exc, status_cls):
            status = int(getattr(exc, "status_code", 0) or 0)
            body = getattr(exc, "body", None)
            category, kind, reason = refine_http_error(status, body)
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None) or {}
            retry_after = parse_retry_after(headers)
            if retry_after is None and status == 429 and reason != "quota_exceeded":
                retry_after = parse_rate_limit_reset(headers)
            detail = _error_detail(body) or one_line(getattr(exc, "message", exc), 200)
            message = f"{self.name}: {describe_status(category)} (HTTP {status}): {detail}"
            if category == AUTH:
                message += f" (check {settings.key_env})"
            return LlmError(
                category,
                message,
                status,
                retry_after_s=retry_after,
                kind=kind,
                reason=reason,
                provider=self.name,
                model=settings.model,
            )
        return LlmError(
            GENERIC, f"{self.name}: unexpected client error: {type(exc).__name__}: {one_line(exc)}"
        )


def _error_detail(body: Any) -> str:
    """The human message inside an error body (OpenAI/Anthropic envelopes or a string)."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("type")
            if msg:
                return one_line(msg, 200)
        elif isinstance(err, str):
            return one_line(err, 200)
        if isinstance(body.get("message"), str):
            return one_line(body["message"], 200)
        return ""
    if isinstance(body, str):
        return one_line(body, 200)
    return ""


def stream_ended_early(provider: str) -> LlmError:
    """The error of a stream that stopped before the provider's end-of-answer event (the
    connection closed mid-answer): transient, so a call may be tried again."""
    return LlmError(
        TRANSIENT_NETWORK, f"{provider}: the stream ended before the answer was complete"
    )


def require_str(value: Any, what: str, provider: str) -> str:
    """Return ``value`` if it is a non-empty str, else raise ``malformed_response``."""
    if isinstance(value, str) and value:
        return value
    raise LlmError(MALFORMED_RESPONSE, f"{provider}: {what} is missing or not a string")


def as_int(value: Any) -> int:
    """Token counts: ints (or int-valued floats) pass, anything else (None, str) is 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0
