"""On-disk cache of clean static-check verdicts, so a warm ``harnpy run`` skips the checker.

``harnpy run`` type-checks the main file before it runs (spec language.md 3.19). When a file
checked clean, the verdict is kept beside the parsed-module cache (``<cache dir>/check/``,
one JSON entry per source path, see :mod:`harnpy.syntax.cache` for the directory rules) under
a key that covers everything the verdict depends on:

* the checker's own sources (this package's ``.py`` files) and the syntax fingerprint,
* the file's path and text,
* the names the runtime provides (builtins and global constants).

Only complete verdicts with no diagnostic that read no imported file are kept (the checker
reads imported modules only to resolve an otherwise unknown call target, and then its verdict
depends on those files too). A miss, a stale key or an unreadable entry just runs the checker;
``HARNPY_NO_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection
from pathlib import Path

_KIND = "check"
_fingerprint: str | None = None


def _checker_fingerprint() -> str:
    """Hash of the check package's sources and the syntax fingerprint (hex)."""
    global _fingerprint
    if _fingerprint is None:
        from harnpy.syntax.cache import syntax_fingerprint

        h = hashlib.sha256(b"harnpy-check-1\0" + syntax_fingerprint().encode())
        here = Path(__file__).parent
        for name in sorted(os.listdir(here)):
            if name.endswith(".py"):
                h.update(name.encode() + b"\0")
                h.update((here / name).read_bytes())
        _fingerprint = h.hexdigest()
    return _fingerprint


def verdict_key(path: str, source: str, names: Collection[str] | None) -> str:
    """The cache key of the verdict on ``source`` (file ``path``) given the runtime's names
    (None: the undefined-name checks are off). A hex sha256."""
    h = hashlib.sha256(_checker_fingerprint().encode())
    h.update(path.encode("utf-8", "surrogatepass") + b"\0")
    h.update(source.encode("utf-8", "surrogatepass") + b"\0")
    h.update(b"\1" if names is None else "\0".join(sorted(names)).encode())
    return h.hexdigest()


def is_clean(path: str, key: str) -> bool:
    """Whether the cache holds a clean verdict for ``path`` under ``key``. Never raises."""
    from harnpy.syntax.cache import entry_path

    entry = entry_path(_KIND, path)
    if entry is None:
        return False
    try:
        with open(entry, encoding="ascii") as fh:
            doc = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return False
    return type(doc) is dict and doc.get("key") == key and doc.get("clean") is True


def record_clean(path: str, key: str) -> None:
    """Remember that ``path`` checked clean under ``key``; best effort, never raises."""
    from harnpy.syntax.cache import entry_path, write_entry

    entry = entry_path(_KIND, path)
    if entry is not None:
        write_entry(entry, json.dumps({"key": key, "clean": True}))
