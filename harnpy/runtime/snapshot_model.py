"""The snapshot envelope as validated shapes (checked on load; see runtime/snapshot/).

Only the envelope is modelled: the ``heap``, ``globals`` and frame payloads are tagged JSON
decoded by :mod:`harnpy.runtime.snapshot` into an allow-list of value classes. Unknown keys
are ignored (later harnpy versions may add some).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from harnpy.shapes import at_least, field_problem, min_len, shape


def _sha256_hex(_inst: Any, attr: attrs.Attribute[Any], value: str) -> None:
    if len(value) != 64:
        raise field_problem(attr.name, "must be a sha256 hex digest (64 characters)")


@shape()
@attrs.define
class ModuleRecord:
    """A module the snapshot's code references: key, file path, sha256 of its source."""

    key: str
    path: str
    hash: str = attrs.field(validator=_sha256_hex)
    role: Literal["main", "library"] = "library"
    source: str | None = None


@shape()
@attrs.define
class ThreadRecord:
    """The snapshotted thread: its top frame (tagged value or heap reference) and depth."""

    name: str
    top: Any
    depth: int = attrs.field(validator=at_least(0))
    argv: list[str] = attrs.field(factory=list)


@shape()
@attrs.define
class SnapshotEnvelope:
    """The top level of a harnpy snapshot document (format version 1)."""

    type_: Literal["harnpy_snapshot"] = attrs.field(metadata={"key": "_type"})
    harnpy_snapshot_version: int
    codegen_version: int
    harnpy_version: str
    created_at: str
    modules: list[ModuleRecord]
    globals: dict[str, Any]
    heap: list[Any]
    thread: ThreadRecord
    impls: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    extra: dict[str, Any] = attrs.field(factory=dict)
    #: runtime-state sections by provider name (optional: older snapshots have none)
    runtime_state: dict[str, Any] = attrs.field(factory=dict)


@shape()
@attrs.define
class SessionEntryRecord:
    """One REPL entry of a saved session: its module key (``<repl#N>``), the path
    diagnostics show, and the folder its relative imports resolve against."""

    key: str = attrs.field(validator=min_len(1))
    path: str = attrs.field(validator=min_len(1))
    base_dir: str


@shape()
@attrs.define
class SessionRecord:
    """``extra["repl_session"]`` of a REPL ``:save`` file: the entries in the order they
    ran and the entry counter (see :mod:`harnpy.runtime.session`)."""

    format: int
    entries: list[SessionEntryRecord]
    counter: int = attrs.field(default=0, validator=at_least(0))
