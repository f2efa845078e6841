"""Pydantic models of the snapshot envelope (validated on load; see snapshot.py).

Only the envelope is modelled: the ``heap``, ``globals`` and frame payloads are tagged JSON
decoded by :mod:`harnpy.runtime.snapshot` into an allow-list of value classes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ModuleRecord(BaseModel):
    """A module the snapshot's code references: key, file path, sha256 of its source."""

    model_config = ConfigDict(extra="allow")

    key: str
    path: str
    hash: str = Field(min_length=64, max_length=64)
    role: Literal["main", "library"] = "library"
    source: str | None = None


class ThreadRecord(BaseModel):
    """The snapshotted thread: its top frame (tagged value or heap reference) and depth."""

    model_config = ConfigDict(extra="allow")

    name: str
    top: Any
    depth: int = Field(ge=0)
    argv: list[str] = []


class SnapshotEnvelope(BaseModel):
    """The top level of a harnpy snapshot document (format version 1)."""

    model_config = ConfigDict(extra="allow")

    type_: Literal["harnpy_snapshot"] = Field(alias="_type")
    harnpy_snapshot_version: int
    codegen_version: int
    harnpy_version: str
    created_at: str
    modules: list[ModuleRecord]
    globals: dict[str, Any]
    impls: dict[str, dict[str, Any]] = {}
    heap: list[Any]
    thread: ThreadRecord
    extra: dict[str, Any] = {}
