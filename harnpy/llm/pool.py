"""A small thread pool so model calls of several workers run at the same time.

Provider calls block on network I/O (the SDK clients are synchronous and thread-safe), so
threads overlap them well; the interpreter's scheduler submits a call, parks the calling
Harn task and resumes it when the future completes.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from harnpy.llm.errors import GENERIC, LlmError, one_line
from harnpy.llm.types import LlmRequest, LlmResponse

DEFAULT_MAX_WORKERS = 8


class _Completes(Protocol):
    name: str

    def complete(self, request: LlmRequest) -> LlmResponse: ...


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
    """``ThreadPoolExecutor`` wrapper: ``submit(provider, request) -> Future[LlmResponse]``.

    The future's exception is always an :class:`LlmError`. Use as a context manager or call
    :meth:`shutdown`.

    Args:
        max_workers: concurrent calls (default 8).
    """

    def __init__(self, max_workers: int = DEFAULT_MAX_WORKERS) -> None:
        self.max_workers = max_workers
        self._executor = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="harnpy-llm"
        )

    def submit(self, provider: _Completes, request: LlmRequest) -> Future[LlmResponse]:
        """Start ``provider.complete(request)`` on a pool thread."""
        return self._executor.submit(_run, provider, request)

    def shutdown(self, wait: bool = True, cancel_pending: bool = False) -> None:
        """Stop accepting work; optionally wait for running calls and cancel queued ones."""
        self._executor.shutdown(wait=wait, cancel_futures=cancel_pending)

    def __enter__(self) -> LlmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
