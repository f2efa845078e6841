"""Small helpers shared by the store modules (private)."""

from __future__ import annotations

import json
import uuid
from typing import Any

#: Cap of a checkpoint document and of a run's completion snapshot (4 MiB).
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024


def dump_json(value: Any) -> str:
    """Compact JSON text of a JSON-able value (non-JSON leaves as their ``str``)."""
    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


def new_token() -> str:
    """A fresh random claim token (hex)."""
    return uuid.uuid4().hex


def this_host() -> str:
    """This machine's name (recorded with claims)."""
    import socket

    return socket.gethostname()


def owner_record() -> dict[str, Any]:
    """``{pid, host}`` of this process (the owner recorded in a claim)."""
    import os

    return {"pid": os.getpid(), "host": this_host()}


def owner_gone(owner: Any) -> bool:
    """Whether the process described by ``owner`` (``{pid, host}``) is known to be gone: it
    ran on this host and no process has its pid. An owner on another host (or without a
    pid) is not known to be gone: its lease decides."""
    import os

    if not isinstance(owner, dict) or owner.get("host") != this_host():
        return False
    pid = owner.get("pid")
    if type(pid) is not int or pid <= 0:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False
    return False


def parse_json_object(body: bytes) -> Any:
    """Parse ``body`` as JSON (orjson when installed). Raises ValueError when it is not."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.loads(body)
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise ValueError(str(e)) from None
