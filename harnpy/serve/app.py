"""The ASGI application of ``harnpy serve`` (Starlette).

Endpoints (JSON; the schema is served at ``GET /openapi.json``):

* ``POST /v1/responses`` ``{input, entry?, sessionId?, background?, idempotencyKey?,
  metadata?}`` starts a run of an entry point. ``200`` with the completed (or failed)
  response when it finishes within ``--wait-ms``; ``202`` with ``status: "in_progress"``
  when it parks, runs longer, or ``background`` is set. The same ``idempotencyKey`` from the
  same user answers the same response and never starts a second run.
* ``GET /v1/responses/{id}?sessionId=...``: ``in_progress`` / ``completed`` / ``failed`` /
  ``cancelled``, with the completion snapshot once completed.
* ``GET /v1/responses/{id}/events?sessionId=...``: Server-Sent Events, ``id`` = the event's
  ``seq``; ``Last-Event-ID`` resumes after it.
* ``POST /v1/responses/{id}/cancel?sessionId=...``.
* ``GET /healthz``, ``GET /metrics`` (Prometheus), ``GET /openapi.json`` (no key needed).

Every other endpoint needs ``Authorization: Bearer KEY`` (:mod:`harnpy.serve.auth`). A
response belongs to its user and session: another user's id, another session's id and an
unknown id get the same ``404`` body from the same code path (one store query matching id,
user and session). Bad input is a ``4xx`` with ``{"error": {"type", "message"}}``; an
unexpected failure is a ``500`` with a fixed message (details only in the server log).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import operator
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harnpy.serve.auth import KeyRing, Principal
from harnpy.serve.config import ServeConfig
from harnpy.serve.executor import Executor
from harnpy.serve.metrics import CONTENT_TYPE, Metrics
from harnpy.serve.program import AppProgram
from harnpy.store import CheckpointTooLarge, RunRecord, StoreError

__all__ = ["ServeApp", "create_app"]

log = logging.getLogger("harnpy.serve")

#: The one body every "no such response" answer has (unknown id, another user's, another
#: session's): byte for byte the same.
NOT_FOUND_BODY = b'{"error":{"type":"not_found","message":"no such response"}}'
FINAL = ("completed", "failed", "cancelled")


class CreateResponse(BaseModel):
    """The body of ``POST /v1/responses``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    input: Any = None
    entry: str | None = Field(default=None, min_length=1, max_length=200)
    sessionId: str | None = Field(default=None, min_length=1, max_length=200)
    background: bool = False
    idempotencyKey: str | None = Field(default=None, min_length=1, max_length=200)
    metadata: dict[str, Any] | None = None


class ApiError(Exception):
    """A ``4xx`` answer: ``status``, error ``type`` and ``message``."""

    def __init__(
        self, status: int, type_: str, message: str, headers: dict[str, str] | None = None
    ):
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.headers = headers


#: Deepest nesting of lists and dicts a request body may have. Far beyond any real input,
#: well within what a run's value (and its snapshot) can hold: a deeper body is a ``400``
#: at the door instead of a decoder ``RecursionError`` (a ``500``) or a run that fails on
#: an internal recursion limit.
MAX_BODY_DEPTH = 1000


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
#: brackets to +1 (b"\x02" - 1) / -1 (b"\x00" - 1); every other byte is deleted
_BRACKETS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{]}")


def body_depth(raw: bytes) -> int:
    """How deep the lists and dicts of JSON text ``raw`` nest (0 for a scalar), counted
    without parsing (strings are skipped), so that it holds whatever Python's recursion
    limit is and costs no recursion."""
    brackets = _JSON_STRING.sub(b"", raw).translate(_BRACKETS, _NOT_BRACKETS)
    # depth after the i-th bracket = (sum of the first i+1 codes) - (i+1); all in C
    sums = itertools.accumulate(brackets)
    return max(map(operator.sub, sums, itertools.count(1)), default=0)


def parse_body(raw: bytes) -> Any:
    """``raw`` (a request body) as JSON, nested at most :data:`MAX_BODY_DEPTH` deep.

    Raises:
        ApiError: ``400 invalid_json`` for bytes that are not JSON (or not UTF-8) and for
            a document nested deeper than the limit (checked before it is decoded).
    """
    too_deep = ApiError(
        400, "invalid_json", f"the request body is nested more than {MAX_BODY_DEPTH} levels deep"
    )
    if body_depth(raw) > MAX_BODY_DEPTH:
        raise too_deep
    try:
        return json.loads(raw)
    except RecursionError:  # a lower recursion limit than the server's: still a 400
        raise too_deep from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ApiError(400, "invalid_json", f"the request body is not JSON: {e}") from None


def error_response(status: int, type_: str, message: str, headers: Any = None) -> JSONResponse:
    """``{"error": {"type", "message"}}`` with ``status``."""
    return JSONResponse({"error": {"type": type_, "message": message}}, status, headers=headers)


def not_found() -> Response:
    """The uniform 404 (:data:`NOT_FOUND_BODY`)."""
    return Response(NOT_FOUND_BODY, 404, media_type="application/json")


def public_view(run: RunRecord) -> dict[str, Any]:
    """The JSON a caller sees for a run: ``{object, id, status, entry, sessionId,
    createdAt, updatedAt, completedAt, metadata, output?, snapshot?, error?}`` (times in
    epoch ms; ``queued`` shows as ``in_progress``)."""
    status = "in_progress" if run.status == "queued" else run.status
    out: dict[str, Any] = {
        "object": "response",
        "id": run.id,
        "status": status,
        "entry": run.entry,
        "sessionId": run.session_id,
        "createdAt": run.created_at_ms,
        "updatedAt": run.updated_at_ms,
        "completedAt": run.completed_at_ms,
        "metadata": (run.metadata or {}).get("caller") or {},
    }
    if run.status == "completed" and isinstance(run.output, dict):
        out["output"] = run.output.get("output")
        out["snapshot"] = run.output
    if run.status in ("failed", "cancelled") and run.error is not None:
        out["error"] = run.error
    return out


def _http_status(run: RunRecord) -> int:
    return 200 if run.status in FINAL else 202


class ServeApp:
    """One replica: the program, the store, the keys, the executor and the claim loop.

    Args:
        config: the server's settings.
        app: the loaded program.
        store: the opened store (:func:`harnpy.store.open_store`).
        keys: the API keys.
    """

    def __init__(self, config: ServeConfig, app: AppProgram, store: Any, keys: KeyRing) -> None:
        self.config = config
        self.program = app
        self.store = store
        self.keys = keys
        self.metrics = Metrics(store.run_counts)
        self.executor = Executor(
            app,
            store,
            config.replica_id,
            concurrency=config.concurrency,
            lease_ms=config.lease_ms,
            metrics=self.metrics,
            secrets=keys.secrets(),
            keep_raw=config.keep_raw_model_metadata,
        )
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None
        self.stopping = False

    # ------------------------------------------------------------------ lifecycle

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        """Start the executor and the claim loop; on shutdown (SIGTERM) stop claiming,
        let running runs finish within the grace period, re-queue the rest."""
        self._wake = asyncio.Event()
        self.executor.start()
        self._loop_task = asyncio.create_task(self._claim_loop())
        try:
            yield
        finally:
            self.stopping = True
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._loop_task
            await run_in_threadpool(self.executor.stop, self.config.grace_ms / 1000)

    async def requeue_ready(self) -> int:
        """Make the parked runs whose wait is over runnable again (``queued``) and wake the
        claim loop; returns how many. Every replica does this about once a second, so a
        completion made anywhere (another replica, ``harnpy waitpoint complete``, a program)
        and a waitpoint timeout are noticed."""
        n = await run_in_threadpool(self._requeue_ready_sync)
        if n:
            self._wake.set()
        return n

    def _requeue_ready_sync(self) -> int:
        try:
            from harnpy.lifecycle.waitpoints.durable import checkpoint_ready, time_out_due
        except ImportError:  # pragma: no cover - no durable waitpoints: nothing parks
            return 0
        store = self.store
        time_out_due(store)
        n = 0
        for run in store.parked_runs():
            assert run.worker_id is not None
            info = store.checkpoint_info(run.worker_id)
            if info is None:
                continue
            ready = info.status in ("completed", "failed") or checkpoint_ready(store, info)
            if ready and store.requeue_parked_run(run.id):
                log.info("run %s: its wait is over (checkpoint %s): queued", run.id, info.status)
                n += 1
        return n

    async def _claim_loop(self) -> None:
        poll = self.config.poll_ms / 1000
        loop = asyncio.get_running_loop()
        next_scan = 0.0
        while not self.stopping:
            if loop.time() >= next_scan:
                next_scan = loop.time() + 1.0
                try:
                    await self.requeue_ready()
                except StoreError as e:
                    log.warning("scan of parked runs failed: %s", e)
            got = None
            if self.executor.has_capacity():
                try:
                    got = await run_in_threadpool(
                        self.store.claim_run, self.config.replica_id, self.config.lease_ms
                    )
                except StoreError as e:
                    log.warning("claim failed: %s", e)
            if got is not None:
                self.executor.submit(got)
                continue
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), poll)

    # ------------------------------------------------------------------ helpers

    def principal(self, request: Request) -> Principal:
        """The caller, or ApiError 401."""
        who = self.keys.authenticate(request.headers.get("authorization"))
        if who is None:
            raise ApiError(
                401,
                "unauthorized",
                "missing or unknown API key (send Authorization: Bearer KEY)",
                {"WWW-Authenticate": "Bearer"},
            )
        return who

    async def body_json(self, request: Request, allow_empty: bool = False) -> Any:
        """The request body as JSON, at most ``max_body_bytes`` (None for an empty body
        when ``allow_empty``); ApiError 413 / 400."""
        cap = self.config.max_body_bytes
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > cap:
            raise ApiError(413, "body_too_large", f"the request body is over {cap} bytes")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise ApiError(413, "body_too_large", f"the request body is over {cap} bytes")
            chunks.append(chunk)
        raw = b"".join(chunks)
        if allow_empty and not raw.strip():
            return None
        return parse_body(raw)

    async def lookup(self, request: Request, who: Principal) -> RunRecord | None:
        """The run the path names if it is the caller's, in the caller's session (the
        ``sessionId`` query parameter); None otherwise — one query for every case."""
        rid = request.path_params["id"]
        sid = request.query_params.get("sessionId") or None
        return await run_in_threadpool(self.store.get_run, rid, who.user, sid)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ endpoints

    async def create(self, request: Request) -> Response:
        """``POST /v1/responses``."""
        who = self.principal(request)
        if self.stopping:
            raise ApiError(503, "shutting_down", "this replica is shutting down; retry another")
        data = await self.body_json(request)
        try:
            req = CreateResponse.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ())) or "body"
            raise ApiError(400, "invalid_request", f"{where}: {first.get('msg')}") from None
        entry = self.program.resolve(req.entry)
        if entry is None:
            names = ", ".join(sorted(self.program.entries))
            what = (
                f"no entry point {req.entry!r}" if req.entry else "the app has several entry points"
            )
            raise ApiError(400, "unknown_entry", f"{what}; name one of: {names}")
        if req.sessionId is not None:
            sess = await run_in_threadpool(self.store.ensure_session, req.sessionId, who.user)
            if sess is None:  # another user's session: as if it did not exist
                return not_found()
        try:
            run, created = await run_in_threadpool(
                lambda: self.store.create_run(
                    who.user,
                    session_id=req.sessionId,
                    entry=entry.name,
                    input=req.input,
                    idempotency_key=req.idempotencyKey,
                    metadata={"caller": req.metadata or {}, "background": req.background},
                )
            )
        except StoreError as e:
            if isinstance(e, CheckpointTooLarge):
                raise ApiError(413, "body_too_large", str(e)) from None
            raise
        if created and not req.background:
            claimed = await run_in_threadpool(
                self.store.claim_run, self.config.replica_id, self.config.lease_ms, run.id
            )
            if claimed is not None:
                self.executor.submit(claimed)
            run = await self.wait_final(run, self.config.wait_ms / 1000)
        elif created:
            self._wake.set()
        elif run.status not in FINAL:
            fresh = await run_in_threadpool(self.store.run_by_id, run.id)
            run = fresh or run
        return JSONResponse(public_view(run), _http_status(run))

    async def wait_final(self, run: RunRecord, timeout: float) -> RunRecord:
        """The run once final, or as it is after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        act = self.executor.active.get(run.id)
        if act is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.wrap_future(act.future), timeout)
        while True:
            fresh = await run_in_threadpool(self.store.run_by_id, run.id)
            if fresh is not None:
                run = fresh
            parked = run.status == "in_progress" and run.lease_holder is None
            if run.status in FINAL or parked or loop.time() >= deadline:
                return run
            await asyncio.sleep(0.05)

    async def get(self, request: Request) -> Response:
        """``GET /v1/responses/{id}``."""
        who = self.principal(request)
        run = await self.lookup(request, who)
        if run is None:
            return not_found()
        view = public_view(run)
        if run.status == "in_progress" and run.worker_id is not None:
            wps = await run_in_threadpool(self.store.waitpoints_of, run.worker_id)
            view["waitingOn"] = [
                w.id
                for w in wps
                if w.status == "open" and (w.metadata or {}).get("kind") != "timeout"
            ]
        return JSONResponse(view, 200)

    async def cancel(self, request: Request) -> Response:
        """``POST /v1/responses/{id}/cancel``: a run that is not final becomes
        ``cancelled`` (a replica running it is interrupted and commits nothing more)."""
        from harnpy.store import Fenced

        who = self.principal(request)
        found = await self.lookup(request, who)
        if found is None:
            return not_found()
        run: RunRecord = found
        if run.status not in FINAL:
            rid = run.id
            try:
                run = await run_in_threadpool(
                    lambda: self.store.update_run(
                        rid,
                        status="cancelled",
                        error={"category": "cancelled", "message": "cancelled by the caller"},
                        expect_statuses=("queued", "in_progress"),
                    )
                )
            except Fenced:  # it became final meanwhile
                fresh = await run_in_threadpool(self.store.run_by_id, rid)
                run = fresh or run
            self.executor.cancel_local(rid)
        return JSONResponse(public_view(run), 200)

    async def events(self, request: Request) -> Response:
        """``GET /v1/responses/{id}/events``: Server-Sent Events (module docstring)."""
        who = self.principal(request)
        run = await self.lookup(request, who)
        if run is None:
            return not_found()
        last = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not last.strip().isdigit():
            raise ApiError(400, "invalid_request", "Last-Event-ID must be an event seq (an int)")
        return StreamingResponse(
            self._sse(run.id, int(last)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _sse(self, run_id: str, after: int) -> AsyncIterator[bytes]:
        quiet = 0.0
        while True:
            batch = await run_in_threadpool(self.store.run_events, run_id, after, 500)
            for ev in batch:
                data = dict(ev.data) if isinstance(ev.data, dict) else {"value": ev.data}
                data.pop("event_type", None)
                envelope = {
                    "schemaVersion": 1,
                    "command": "run",
                    "data": {"seq": ev.seq, "event_type": ev.event_type, **data},
                }
                text = json.dumps(envelope, ensure_ascii=False)
                yield f"id: {ev.seq}\nevent: {ev.event_type}\ndata: {text}\n\n".encode()
                after = ev.seq
            if batch:
                quiet = 0.0
                continue
            run = await run_in_threadpool(self.store.run_by_id, run_id)
            if run is None or run.status in FINAL and run.event_seq <= after:
                return
            if self.stopping:
                return
            await asyncio.sleep(0.1)
            quiet += 0.1
            if quiet >= 15:
                quiet = 0.0
                yield b": keep-alive\n\n"

    async def healthz(self, request: Request) -> Response:
        """``GET /healthz``: 200 when the store answers, else 503."""
        try:
            await run_in_threadpool(self.store.run_counts)
        except StoreError as e:
            return JSONResponse(
                {"status": "unavailable", "replica": self.config.replica_id, "error": str(e)},
                503,
            )
        return JSONResponse(
            {
                "status": "stopping" if self.stopping else "ok",
                "replica": self.config.replica_id,
                "running": self.executor.busy(),
                "entries": [e.to_json() for e in self.program.entries.values()],
            },
            503 if self.stopping else 200,
        )

    async def metrics_endpoint(self, request: Request) -> Response:
        """``GET /metrics``: Prometheus text."""
        body = await run_in_threadpool(self.metrics.render)
        return Response(body, 200, media_type=CONTENT_TYPE)

    async def openapi(self, request: Request) -> Response:
        """``GET /openapi.json``."""
        from harnpy.serve.openapi import openapi_schema

        return JSONResponse(openapi_schema(self.program))


def _guard(
    sa: ServeApp, route: str, fn: Callable[[Request], Awaitable[Response]]
) -> Callable[[Request], Awaitable[Response]]:
    """Turn ApiError into its JSON answer, count the request."""

    async def endpoint(request: Request) -> Response:
        try:
            resp = await fn(request)
        except ApiError as e:
            resp = error_response(e.status, e.type, e.message, e.headers)
        except StoreError as e:
            log.warning("%s %s: store error: %s", request.method, route, e)
            resp = error_response(503, "store_unavailable", "the store cannot be used right now")
        sa.metrics.http.labels(request.method, route, str(resp.status_code)).inc()
        return resp

    return endpoint


def create_app(sa: ServeApp) -> Starlette:
    """The Starlette application of replica ``sa``."""
    routes = [
        Route("/v1/responses", _guard(sa, "/v1/responses", sa.create), methods=["POST"]),
        Route("/v1/responses/{id}", _guard(sa, "/v1/responses/{id}", sa.get), methods=["GET"]),
        Route(
            "/v1/responses/{id}/events",
            _guard(sa, "/v1/responses/{id}/events", sa.events),
            methods=["GET"],
        ),
        Route(
            "/v1/responses/{id}/cancel",
            _guard(sa, "/v1/responses/{id}/cancel", sa.cancel),
            methods=["POST"],
        ),
        Route("/healthz", _guard(sa, "/healthz", sa.healthz), methods=["GET"]),
        Route("/metrics", _guard(sa, "/metrics", sa.metrics_endpoint), methods=["GET"]),
        Route("/openapi.json", _guard(sa, "/openapi.json", sa.openapi), methods=["GET"]),
    ]
    from harnpy.serve.waitpoint_routes import waitpoint_routes

    routes.extend(waitpoint_routes(sa, _guard))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
        return error_response(exc.status_code, kind, str(exc.detail))

    async def internal_error(request: Request, exc: Exception) -> Response:
        log.error("%s %s: internal error", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal", "internal error (the server log has the details)")

    return Starlette(
        routes=routes,
        lifespan=sa.lifespan,
        exception_handlers={HTTPException: http_error, Exception: internal_error},
    )
