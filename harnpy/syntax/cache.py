"""On-disk caches of the syntax stage: parsed modules (as JSON) and the Lark grammar tables.

Parsing is a large share of a short run's start-up (loading the LALR tables alone takes tens
of milliseconds), and a cold ``harnpy run --resume`` re-parses every module its snapshot
references. Like CPython's ``.pyc`` files, a parsed module is kept on disk and reused while
its source text is unchanged:

* One JSON file per source path (and one for the code of the latest ``harnpy run -e``)
  under ``<cache dir>/ast/``, named by a hash of the path and
  holding the module's node tree plus the key it was made under: a hash of the source text,
  the path and the *syntax fingerprint* (a hash of the grammar and of this package's Python
  sources, so a changed parser never reads an old tree). A key mismatch, an unreadable or
  malformed file is a miss; the caller parses and rewrites the entry.
* The format is plain (ASCII) JSON decoded into the known node classes only (never pickle): a node
  is ``[class index, span, *fields]`` with ``span`` either the six ints of :class:`ast.Span`
  or ``0`` for ``NO_SPAN``; a tuple is ``[null, *items]``; strings, numbers, booleans and
  null stand for themselves.
* Writes are atomic (temp file + ``os.replace``); when the directory grows past
  :data:`MAX_ENTRIES` entries it is pruned to the ``MAX_ENTRIES // 2`` most recently
  written ones.

Cache directory: ``$HARNPY_CACHE_DIR``, else ``$XDG_CACHE_HOME/harnpy``, else
``~/.cache/harnpy``, else a per-user directory in the temp directory. A directory is used only
when it is owned by the current user and not writable by others (so another account cannot
plant entries); ``HARNPY_NO_CACHE=1`` turns every cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from harnpy.syntax import ast

MAX_ENTRIES = 2000
"""Parsed-module entries kept; older ones (by modification time) are pruned on write."""

_FORMAT = 1
_fingerprint: str | None = None
_dirs: tuple[tuple[str, ...], list[Path]] | None = None
_CLASSES: list[type] = list(ast._NodeMeta.registry)
_INDEX: dict[type, int] = {cls: i for i, cls in enumerate(_CLASSES)}


def enabled() -> bool:
    """Whether on-disk caches may be used (``HARNPY_NO_CACHE`` unset or ``0``)."""
    return os.environ.get("HARNPY_NO_CACHE", "") in ("", "0")


def _safe_dir(directory: Path) -> bool:
    """``directory`` exists (created with mode 0700 when missing), is ours, and only we can
    write to it."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = directory.stat()
    except OSError:
        return False
    getuid = getattr(os, "getuid", None)
    if getuid is not None and st.st_uid != getuid():
        return False
    if os.name == "posix" and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    return os.access(directory, os.R_OK | os.W_OK | os.X_OK)


def cache_dirs() -> list[Path]:
    """The usable cache directory as a one-item list (empty when none is usable): the first
    candidate that passes the ownership rule, in the order of the module docstring."""
    global _dirs
    env = os.environ
    setting = tuple(
        env.get(k, "") for k in ("HARNPY_NO_CACHE", "HARNPY_CACHE_DIR", "XDG_CACHE_HOME", "HOME")
    )
    if _dirs is None or _dirs[0] != setting:
        _dirs = (setting, _first_safe_dir(env) if enabled() else [])
    return _dirs[1]


def _first_safe_dir(env: Any) -> list[Path]:
    """``[the first usable candidate]`` or ``[]``; the temp-directory fallback is looked at
    (and :mod:`tempfile` imported) only when the preferred directory is not usable."""
    explicit = env.get("HARNPY_CACHE_DIR")
    if explicit:
        return [Path(explicit)] if _safe_dir(Path(explicit)) else []
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    preferred = Path(base) / "harnpy"
    if _safe_dir(preferred):
        return [preferred]
    import tempfile

    uid = getattr(os, "getuid", lambda: "user")()
    fallback = Path(tempfile.gettempdir()) / f"harnpy-cache-{uid}"
    return [fallback] if _safe_dir(fallback) else []


def syntax_fingerprint() -> str:
    """Hash of the grammar text and of the syntax package's sources (hex, 16 chars): parsed
    trees cached under another fingerprint were made by a different parser."""
    global _fingerprint
    if _fingerprint is None:
        from harnpy.syntax.grammar_file import grammar_path

        h = hashlib.sha256(f"harnpy-ast-{_FORMAT}".encode())
        h.update(grammar_path().read_bytes())
        for name in sorted(os.listdir(Path(__file__).parent)):
            if name.endswith(".py"):
                h.update(name.encode())
                h.update((Path(__file__).parent / name).read_bytes())
        _fingerprint = h.hexdigest()[:16]
    return _fingerprint


def _key(source: str, path: str) -> str:
    h = hashlib.sha256(syntax_fingerprint().encode())
    h.update(path.encode("utf-8", "surrogatepass") + b"\0")
    h.update(source.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


# ------------------------------------------------------------------------ encoding


def encode(value: Any) -> Any:
    """A node tree as JSON-ready data (format in the module docstring).

    Raises:
        TypeError: a field holds a value the format has no encoding for.
    """
    t = type(value)
    if t is str or t is int or t is bool or t is float or value is None:
        return value
    if t is tuple:
        return [None, *[encode(x) for x in value]]
    idx = _INDEX.get(t)
    if idx is None or t is ast.Span:
        raise TypeError(f"cannot cache a {t.__name__} in a parsed module")
    span = value.span
    out: list[Any] = [
        idx,
        0
        if span is ast.NO_SPAN
        else [span.line, span.col, span.start, span.end, span.end_line, span.end_col],
    ]
    for f in t._fields:
        if f != "span":
            out.append(encode(getattr(value, f)))
    return out


def decode(data: Any) -> Any:
    """The node tree :func:`encode` produced ``data`` from.

    Raises:
        ValueError, TypeError, IndexError: ``data`` is not in the format (a corrupt entry).
    """
    if type(data) is not list:
        if type(data) is dict:
            raise ValueError("unexpected object in a parsed-module entry")
        return data
    head = data[0]
    if head is None:
        return tuple([decode(x) for x in data[1:]])
    if type(head) is not int or head < 0:
        raise ValueError("bad node tag in a parsed-module entry")
    cls = _CLASSES[head]
    if cls is ast.Span:
        raise ValueError("bad node tag in a parsed-module entry")
    sp = data[1]
    span = ast.NO_SPAN if sp == 0 else ast.Span(*sp)
    return cls(*[decode(x) for x in data[2:]], span=span)


# ------------------------------------------------------------------------ load / store


def load_module(source: str, path: str) -> ast.Module | None:
    """The cached parse of ``source`` (the text of file ``path``), or None on a miss.

    Never raises: an unreadable, stale or malformed entry is a miss.
    """
    entry = entry_path("ast", path)
    if entry is None:
        return None
    try:
        with open(entry, encoding="ascii") as fh:
            doc = json.load(fh)
        if type(doc) is not dict or doc.get("key") != _key(source, path):
            return None
        module = decode(doc["module"])
    except (OSError, ValueError, TypeError, IndexError, KeyError, RecursionError):
        return None
    return module if isinstance(module, ast.Module) else None


def store_module(source: str, path: str, module: ast.Module) -> None:
    """Cache ``module`` as the parse of ``source`` (file ``path``); best effort, never
    raises (a read-only or full disk just means no cache)."""
    entry = entry_path("ast", path)
    if entry is None:
        return
    try:
        text = json.dumps(
            {"key": _key(source, path), "module": encode(module)},
            separators=(",", ":"),
        )
    except (TypeError, ValueError, RecursionError):
        return
    write_entry(entry, text)


def entry_path(kind: str, name: str) -> Path | None:
    """Where a cache of another stage keeps its entry ``name`` (any text; hashed into the
    file name) in the subdirectory ``kind`` of the cache directory; None when no cache
    directory is usable (or caching is off)."""
    dirs = cache_dirs()
    if not dirs:
        return None
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return dirs[0] / kind / f"{digest}.json"


def write_entry(entry: Path, text: str) -> None:
    """Write ``text`` (ASCII) to the cache file ``entry`` atomically (temp file in the same
    directory, then ``os.replace``; the directory is created 0700) and prune the directory
    to :data:`MAX_ENTRIES`. Best effort: never raises."""
    try:
        entry.parent.mkdir(mode=0o700, exist_ok=True)
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(text)
            os.replace(tmp, entry)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        _prune(entry.parent)
    except (OSError, ValueError):
        return


def _prune(directory: Path) -> None:
    with os.scandir(directory) as it:
        entries = [e for e in it if e.name.endswith(".json")]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for e in entries[: len(entries) - MAX_ENTRIES // 2]:
        try:
            os.unlink(e.path)
        except OSError:
            pass
