"""``POST /v1/waitpoints/{id}/complete`` and ``/cancel`` (external completion of durable
waits)."""

from __future__ import annotations

from typing import Any

from starlette.routing import Route

__all__ = ["waitpoint_routes"]


def waitpoint_routes(sa: Any, guard: Any) -> list[Route]:
    """The waitpoint routes of replica ``sa`` (none yet)."""
    return []
