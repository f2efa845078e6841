"""Thread pools so model calls of many workers run at the same time, one pool per provider.

Provider calls block on network I/O (the SDK clients are synchronous and thread-safe, with
connection pools of their own), so threads overlap them well; the interpreter's scheduler
submits a call, parks the calling Harn task and resumes it when the future completes.

Each provider gets its own pool, bounded by its *concurrency limit*: at most that many of
its calls are in flight, the others wait in the pool's queue. The limit comes from
``HARNPY_LLM_CONCURRENCY_<PROVIDER>`` (upper-case provider name, e.g.
``HARNPY_LLM_CONCURRENCY_OPENAI``), else ``HARNPY_LLM_CONCURRENCY``, else
:data:`DEFAULT_CONCURRENCY` (see :func:`concurrency_limit`). Threads start on demand, so a
high limit costs nothing until calls overlap.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from harnpy.llm.errors import CONFIG, GENERIC, LlmError, one_line
from harnpy.llm.types import LlmRequest, LlmResponse

#: Concurrent calls per provider when no environment variable sets a limit.
DEFAULT_CONCURRENCY = 256
#: Kept for callers of the old single pool: the default size of an :class:`LlmPool`.
DEFAULT_MAX_WORKERS = DEFAULT_CONCURRENCY
#: Largest accepted limit (a thread per call in flight).
MAX_CONCURRENCY = 4096

_ENV = "HARNPY_LLM_CONCURRENCY"


class _Completes(Protocol):
    name: str

    def complete(self, request: LlmRequest) -> LlmResponse: ...


def concurrency_limit(
    env: Mapping[str, str], provider: str, default: int = DEFAULT_CONCURRENCY
) -> int:
    """The concurrency limit of ``provider`` under environment ``env``.

    ``HARNPY_LLM_CONCURRENCY_<PROVIDER>`` (the name upper-cased, ``-`` as ``_``) wins over
    ``HARNPY_LLM_CONCURRENCY``; unset or empty means ``default``.

    Raises:
        LlmError: ``config`` when the value is not an integer in 1..:data:`MAX_CONCURRENCY`.
    """
    key = f"{_ENV}_{provider.upper().replace('-', '_')}"
    for name in (key, _ENV):
        raw = (env.get(name) or "").strip()
        if raw:
            try:
                value = int(raw)
            except ValueError:
                value = 0
            if not 1 <= value <= MAX_CONCURRENCY:
                raise LlmError(
                    CONFIG, f"{name} must be an integer from 1 to {MAX_CONCURRENCY}, got {raw!r}"
                )
            return value
    return default


def _run(provider: _Completes, request: LlmRequest) -> LlmResponse:
    try:
        return provider.complete(request)
    except LlmError:
        raise
    except Exception as exc:  # a provider bug must still surface as an LlmError
        raise LlmError(
            GENERIC,
            f"{getattr(provider, 'name', 'llm')}: internal error: "
            f"{type(exc).__name__}: {one_line(exc)}",
        ) from exc


class LlmPool:
    """Per-provider thread pools: ``submit(provider, request) -> Future[LlmResponse]``.

    The future's exception is always an :class:`LlmError`. Use as a context manager or call
    :meth:`shutdown`.

    Args:
        max_workers: the concurrency limit of a provider that ``limits`` does not name
            (default :data:`DEFAULT_CONCURRENCY`).
        limits: concurrency limit per provider name.
    """

    def __init__(
        self, max_workers: int = DEFAULT_CONCURRENCY, limits: Mapping[str, int] | None = None
    ) -> None:
        self.max_workers = max_workers
        self.limits = dict(limits or {})
        self._executors: dict[str, ThreadPoolExecutor] = {}
        self._lock = threading.Lock()
        self._closed = False

    def limit_for(self, provider: str) -> int:
        """The concurrency limit used for ``provider``."""
        return self.limits.get(provider, self.max_workers)

    def submit(
        self, provider: _Completes, request: LlmRequest, limit: int | None = None
    ) -> Future[LlmResponse]:
        """Start ``provider.complete(request)`` on the provider's pool.

        ``limit`` sets the provider's concurrency limit when its pool is first made (later
        values are ignored; the pool keeps its size).

        Raises:
            RuntimeError: after :meth:`shutdown`.
        """
        name = getattr(provider, "name", "llm")
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit a model call after the pool shut down")
            executor = self._executors.get(name)
            if executor is None:
                size = limit if limit is not None else self.limit_for(name)
                executor = ThreadPoolExecutor(
                    max_workers=size, thread_name_prefix=f"harnpy-llm-{name}"
                )
                self._executors[name] = executor
        return executor.submit(_run, provider, request)

    def shutdown(self, wait: bool = True, cancel_pending: bool = False) -> None:
        """Stop accepting work; optionally wait for running calls and cancel queued ones."""
        with self._lock:
            self._closed = True
            executors = list(self._executors.values())
        for executor in executors:
            executor.shutdown(wait=wait, cancel_futures=cancel_pending)

    def __enter__(self) -> LlmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
