"""The ``Provider`` protocol, the provider factory and ``LlmHost``, the per-run entry point.

``LlmHost`` is what the interpreter's thread object holds as its LLM hook: it owns the mock
(for ``llm_mock*`` builtins), creates real providers lazily (SDKs load on first use), routes
each request (``harnpy.llm.routing``), applies ``--llm-mock`` / ``--llm-mock-record`` and
runs calls on an :class:`LlmPool` for concurrent workers.

While ``llm_mock`` entries are queued, the mock answers a call routed to *any* provider
(Harn's mock intercepts ``openai``/``anthropic``... too): a queued FIFO entry, or a pattern
entry that matches, answers it; with nothing that answers, the real provider does
(:meth:`MockProvider.intercept`). Every :class:`LlmError` leaving the host names the
provider and model the request was routed to (``err.provider`` / ``err.model``), so the
error envelope can carry them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs

from harnpy.llm.errors import LlmError
from harnpy.llm.mock import MockEntry, MockProvider, MockRecorder, RecordingProvider
from harnpy.llm.options import MessageCache
from harnpy.llm.pool import DEFAULT_CONCURRENCY, LlmPool, concurrency_limit
from harnpy.llm.routing import canonical_provider, resolve_route
from harnpy.llm.types import LlmRequest, LlmResponse


@runtime_checkable
class Provider(Protocol):
    """Anything that answers a normalized request.

    ``complete`` blocks until the answer arrives and raises only :class:`LlmError`.
    """

    name: str

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Send ``request``; return the normalized response."""
        ...


def make_provider(
    name: str,
    *,
    env: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Provider:
    """A fresh provider for ``name`` (mock, openai, anthropic, ollama, local).

    No SDK is imported here; real providers import theirs on the first ``complete``.

    Raises:
        LlmError: ``config`` for an unknown name.
    """
    key = canonical_provider(name)
    if key == "mock":
        return MockProvider()
    if key == "anthropic":
        from harnpy.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(env=env, sleep=sleep)
    from harnpy.llm.openai_provider import OpenAIProvider

    return OpenAIProvider(key, env=env, sleep=sleep)


class _HostCall:
    """One routed call as the pool runs it: the mock's interception first (for a real
    provider), then the provider; failures are tagged with the provider and model."""

    def __init__(self, host: LlmHost, provider: Provider, intercept: bool) -> None:
        self.host = host
        self.provider = provider
        self.intercept = intercept
        self.name = provider.name

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer ``request`` (see :meth:`LlmHost.complete`)."""
        try:
            if self.intercept:
                answer = self.host.mock.intercept(request)
                if answer is not None:
                    return answer
            return self.provider.complete(request)
        except LlmError as err:
            tag_error(err, request)
            raise

    def stream(self, request: LlmRequest, on_delta: Callable[[str], None]) -> LlmResponse:
        """Answer ``request`` with its text handed to ``on_delta`` as it arrives: a mock
        answer (queued entry or the mock provider) in chunks, a real provider through its
        streaming API (its complete answer in chunks when it has none)."""
        from harnpy.llm.mock import emit_chunks

        try:
            if self.intercept:
                answer = self.host.mock.intercept(request)
                if answer is not None:
                    emit_chunks(answer.text, on_delta)
                    return answer
            streamer = getattr(self.provider, "stream", None)
            if callable(streamer):
                response: LlmResponse = streamer(request, on_delta)
                return response
            response = self.provider.complete(request)
            emit_chunks(response.text, on_delta)
            return response
        except LlmError as err:
            tag_error(err, request)
            raise


class _StreamCall:
    """Adapts one streaming call to the pool's ``complete(request)`` interface."""

    def __init__(self, call: _HostCall, on_delta: Callable[[str], None]) -> None:
        self.call = call
        self.on_delta = on_delta
        self.name = call.name

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Run the call streaming (:meth:`_HostCall.stream`)."""
        return self.call.stream(request, self.on_delta)


def tag_error(err: LlmError, request: LlmRequest) -> LlmError:
    """Fill ``err.provider`` / ``err.model`` from the routed ``request`` where the provider
    left them unset (the mock's model defaults to ``"mock"``, as its answers' do)."""
    return err.tag(
        request.provider, request.model or ("mock" if request.provider == "mock" else None)
    )


class LlmHost:
    """Per-run LLM services: routing, the shared mock, recording and the call pool.

    Args:
        env: environment mapping (None: ``os.environ``, read at call time).
        sleep: backoff sleep for real providers (tests inject a recorder).
        fixture: ``--llm-mock`` entries; when given, the mock serves every call.
        record_path: ``--llm-mock-record`` file; real answers are written there.
        max_workers: concurrency limit of a provider no environment variable sets one for
            (``HARNPY_LLM_CONCURRENCY[_<PROVIDER>]``, see :mod:`harnpy.llm.pool`).
    """

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        fixture: Iterable[MockEntry] | None = None,
        record_path: str | Path | None = None,
        max_workers: int = DEFAULT_CONCURRENCY,
    ) -> None:
        self._env = env
        self._sleep = sleep
        self.mock = MockProvider()
        if fixture is not None:
            self.mock.load_fixture(fixture)
        self.fixture_active = fixture is not None
        self.recorder = MockRecorder(record_path) if record_path is not None else None
        self._providers: dict[str, Provider] = {}
        self._lock = threading.Lock()
        self._max_workers = max_workers
        self._pool: LlmPool | None = None
        #: Validated transcript messages, reused across the calls of this run.
        self.message_cache = MessageCache()

    @property
    def env(self) -> Mapping[str, str]:
        """The environment used for routing and provider settings."""
        return os.environ if self._env is None else self._env

    def provider(self, name: str) -> Provider:
        """The (cached) provider instance for ``name``; ``mock`` is the shared mock.

        Raises:
            LlmError: ``config`` for an unknown name.
        """
        key = canonical_provider(name)
        if key == "mock":
            return self.mock
        with self._lock:
            provider = self._providers.get(key)
            if provider is None:
                provider = make_provider(key, env=self._env, sleep=self._sleep)
                if self.recorder is not None:
                    provider = RecordingProvider(provider, self.recorder)
                self._providers[key] = provider
            return provider

    def route(self, request: LlmRequest) -> tuple[Provider, LlmRequest]:
        """Pick the provider and return it with the request (provider/model filled in).

        With a ``--llm-mock`` fixture every call goes to the mock.

        Raises:
            LlmError: ``config`` from routing.
        """
        if self.fixture_active:
            return self.mock, attrs.evolve(request, provider="mock")
        route = resolve_route({"provider": request.provider, "model": request.model}, self.env)
        routed = attrs.evolve(request, provider=route.provider, model=route.model)
        return self.provider(route.provider), routed

    def _call(self, provider: Provider) -> _HostCall:
        return _HostCall(self, provider, intercept=provider is not self.mock)

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Route and answer ``request`` on the calling thread (a queued ``llm_mock`` entry
        answers a call for any provider, see the module docstring).

        Raises:
            LlmError: any failure (routing, provider, mock error entries), tagged with the
                routed provider and model.
        """
        try:
            provider, routed = self.route(request)
        except LlmError as err:
            raise tag_error(err, request) from None
        return self._call(provider).complete(routed)

    def submit(
        self,
        request: LlmRequest,
        *,
        one_attempt: bool = False,
        on_delta: Callable[[str], None] | None = None,
    ) -> Future[LlmResponse]:
        """Route ``request`` and run it on the pool; routing errors land in the future.

        ``one_attempt``: the provider makes exactly one attempt (``retries=0``) because the
        caller runs the retry loop itself (the interpreter retries on scheduler timers, so
        a backoff never holds a pool thread and a mock answer is retried like a real one).
        ``on_delta``: stream the answer (:meth:`_HostCall.stream`), handing each text delta
        to ``on_delta`` on the pool thread.
        """
        try:
            provider, routed = self.route(request)
        except LlmError as err:
            failed: Future[LlmResponse] = Future()
            failed.set_exception(tag_error(err, request))
            return failed
        try:
            name = routed.provider or provider.name
            limit = concurrency_limit(self.env, name, self._max_workers)
        except LlmError as err:
            bad: Future[LlmResponse] = Future()
            bad.set_exception(tag_error(err, routed))
            return bad
        if one_attempt and routed.retries != 0:
            routed = attrs.evolve(routed, retries=0)
        with self._lock:
            if self._pool is None:
                self._pool = LlmPool(self._max_workers)
            pool = self._pool
        host_call = self._call(provider)
        call: _HostCall | _StreamCall = host_call
        if on_delta is not None:
            call = _StreamCall(host_call, on_delta)
        return pool.submit(call, routed, limit=limit)

    def submit_stream(
        self, request: LlmRequest, on_delta: Callable[[str], None]
    ) -> Future[LlmResponse]:
        """:meth:`submit` with streaming on and one attempt (the caller retries):
        ``on_delta(text)`` is called on a pool thread with each text delta as the provider
        sends it; the future holds the complete response (or the :class:`LlmError`)."""
        return self.submit(request, one_attempt=True, on_delta=on_delta)

    def close(self) -> None:
        """Wait for running calls, close SDK clients and the recording file."""
        with self._lock:
            pool, self._pool = self._pool, None
            providers = list(self._providers.values())
        if pool is not None:
            pool.shutdown(wait=True)
        for provider in providers:
            inner = getattr(provider, "inner", provider)
            close = getattr(inner, "close", None)
            if callable(close):
                close()
        if self.recorder is not None:
            self.recorder.close()

    def __enter__(self) -> LlmHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
