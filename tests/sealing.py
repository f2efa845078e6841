"""Test helpers for sealed snapshot files (harnpy/security): read a sealed JSON document,
and write an edited one back sealed with the session's key, so tests that simulate states
by hand-editing a snapshot keep passing the real seal check (never weakened for tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnpy.security import SEAL_FIELD, seal, unseal


def read_doc(path: str | Path) -> Any:
    """The JSON document in ``path`` after checking its seal (the seal member removed)."""
    return json.loads(unseal(Path(path).read_bytes(), str(path)))


def sealed(doc: Any, *, indent: int | None = None) -> bytes:
    """``doc`` (a dict; a ``_seal`` member is dropped) as sealed JSON bytes."""
    body = {k: v for k, v in doc.items() if k != SEAL_FIELD}
    return seal(json.dumps(body, indent=indent).encode("utf-8"))


def write_doc(path: str | Path, doc: Any) -> None:
    """Write ``doc`` to ``path`` sealed with the session's key (as harnpy would)."""
    Path(path).write_bytes(sealed(doc))


def edit_doc(path: str | Path, edit: Any) -> Any:
    """Read ``path``'s document, call ``edit(doc)`` (which changes it in place or returns a
    replacement) and write it back sealed; returns the document written."""
    doc = read_doc(path)
    out = edit(doc)
    doc = doc if out is None else out
    write_doc(path, doc)
    return doc
