"""``POST /v1/waitpoints/{id}/complete`` ``{value}`` and ``POST /v1/waitpoints/{id}/cancel``
``{reason?}``: external completion of durable waits.

A key may complete a waitpoint when the waitpoint belongs to one of its user's runs (the
run that created it), or when it is a ``complete_waitpoints = true`` key (a job system's).
Any other waitpoint, and an unknown id, get the same ``404`` body. The first completion
wins (``200 {id, status, completed: true}``); a later one answers ``409`` with the status
the waitpoint has. A completed waitpoint makes the runs parked on it runnable again: the
replica that took the completion re-queues them at once, and every replica's claim loop
picks them up (the periodic scan in :meth:`harnpy.serve.app.ServeApp.requeue_ready` also
catches completions made elsewhere: ``harnpy waitpoint complete``, another program).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["NOT_FOUND_BODY", "waitpoint_routes"]

#: The one body of every "no such waitpoint" answer (unknown, or not the caller's).
NOT_FOUND_BODY = b'{"error":{"type":"not_found","message":"no such waitpoint"}}'


class CompleteBody(BaseModel):
    """The body of ``/complete``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    value: Any = None


class CancelBody(BaseModel):
    """The body of ``/cancel`` (may be empty)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    reason: str | None = Field(default=None, max_length=1000)


def _not_found() -> Response:
    return Response(NOT_FOUND_BODY, 404, media_type="application/json")


def waitpoint_routes(sa: Any, guard: Any) -> list[Route]:
    """The waitpoint routes of replica ``sa`` (``guard`` wraps each endpoint)."""
    from harnpy.serve.app import ApiError

    async def allowed(request: Request) -> tuple[Any, Any] | None:
        who = sa.principal(request)
        wid = request.path_params["id"]
        rec = await run_in_threadpool(sa.store.get_waitpoint, wid)
        if rec is None:
            return None
        if who.complete_waitpoints:
            return who, rec
        owner = rec.owner_user
        if owner is None and rec.run_id is not None:
            run = await run_in_threadpool(sa.store.run_by_id, rec.run_id)
            owner = run.owner_user if run is not None else None
        return (who, rec) if owner == who.user else None

    async def parse(request: Request, model: type[BaseModel]) -> Any:
        raw = await sa.body_json(request, allow_empty=True)
        try:
            return model.model_validate(raw if raw is not None else {})
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ())) or "body"
            raise ApiError(400, "invalid_request", f"{where}: {first.get('msg')}") from None

    async def finish(request: Request, cancel: bool) -> Response:
        got = await allowed(request)
        if got is None:
            return _not_found()
        who, rec = got
        if (rec.metadata or {}).get("kind") == "timeout":
            # a wait's own timer fires by itself (the store refuses it too)
            raise ApiError(
                409,
                "waitpoint_is_timer",
                "the waitpoint is the timer of a wait with a timeout; complete or cancel "
                "the waitpoint it times",
            )
        if cancel:
            body = await parse(request, CancelBody)
            won = await run_in_threadpool(
                lambda: sa.store.cancel_waitpoint(
                    rec.id, error={"reason": body.reason}, by=who.user
                )
            )
        else:
            body = await parse(request, CompleteBody)
            won = await run_in_threadpool(
                lambda: sa.store.complete_waitpoint(rec.id, body.value, by=who.user)
            )
        now = await run_in_threadpool(sa.store.get_waitpoint, rec.id)
        status = now.status if now is not None else rec.status
        if not won:
            return JSONResponse(
                {
                    "error": {
                        "type": "waitpoint_not_open",
                        "message": f"the waitpoint is {status} already",
                    },
                    "id": rec.id,
                    "status": status,
                },
                409,
            )
        await sa.requeue_ready()
        key = "cancelled" if cancel else "completed"
        return JSONResponse({"id": rec.id, "status": status, key: True}, 200)

    async def complete(request: Request) -> Response:
        return await finish(request, cancel=False)

    async def cancel(request: Request) -> Response:
        return await finish(request, cancel=True)

    return [
        Route(
            "/v1/waitpoints/{id}/complete",
            guard(sa, "/v1/waitpoints/{id}/complete", complete),
            methods=["POST"],
        ),
        Route(
            "/v1/waitpoints/{id}/cancel",
            guard(sa, "/v1/waitpoints/{id}/cancel", cancel),
            methods=["POST"],
        ),
    ]
