"""Resuming a program from a snapshot file: locate and check its sources, compile them
without running them, restore the thread (used by ``harnpy run --resume`` and by the
lifecycle layer's cold resume of worker snapshots).

A failure at any step raises :class:`~harnpy.runtime.snapshot.SnapshotError` and leaves the
snapshot file untouched.
"""

from __future__ import annotations

import os
from typing import Any

from harnpy.runtime.modules import read_source, source_hash
from harnpy.runtime.snapshot import SnapshotError


def source_candidates(path: str, snapshot_path: str) -> list[str]:
    """Where a module recorded at ``path`` may be now: the recorded path, then the path
    re-rooted under every ancestor of the snapshot file and of the working directory (a
    moved project: ``/old/proj/agents/main.harn`` may be ``/new/proj/agents/main.harn``,
    found from ``/new/proj/.harn/workers/x.json``)."""
    parts = os.path.normpath(path).split(os.sep)[1:] if os.path.isabs(path) else path.split("/")
    suffixes = [os.path.join(*parts[i:]) for i in range(len(parts) - 1, -1, -1)] if parts else []
    roots: list[str] = []
    for start in (os.path.dirname(os.path.abspath(snapshot_path)), os.getcwd()):
        d = start
        while True:
            if d not in roots:
                roots.append(d)
            up = os.path.dirname(d)
            if up == d:
                break
            d = up
    out = [path]
    for suffix in suffixes:
        for root in roots:
            c = os.path.join(root, suffix)
            if c not in out:
                out.append(c)
    return out


def is_pseudo_path(path: str) -> bool:
    """Whether a module path is a pseudo-path (``<-e>``, ``<repl#3>``): a module with no
    file, whose source a snapshot carries inline."""
    return path.startswith("<") and path.endswith(">")


def locate_source(
    rec: dict[str, Any], snapshot_path: str, expected_hash: str | None = None
) -> tuple[str, str]:
    """Find a module's source file (see :func:`source_candidates`); with ``expected_hash``
    (default: the record's ``hash``) the first candidate with that content wins, else the
    first existing one (the caller then reports the changed source). Files are read with a
    cap (:func:`read_source`). A ``source`` inline in the record is used only for a module
    without a file (a pseudo-path, :func:`is_pseudo_path`): for any other module the file
    decides, whatever the record carries.

    Raises SnapshotError (E406) when no candidate exists, E404 when a pseudo-path module's
    inline source is missing."""
    path = rec["path"]
    if is_pseudo_path(rec["key"]) and is_pseudo_path(path):
        # a `-e` program or a REPL entry has no file: its source is inline (only ever taken
        # from a sealed document, and only for these modules)
        if type(rec.get("source")) is not str:
            raise SnapshotError(f"the snapshot lacks the source of {path}", "E404")
        return path, rec["source"]
    if rec["key"].startswith("std/"):
        from harnpy.runtime.modules import resolve_import

        _, p = resolve_import(rec["key"], None)  # type: ignore[arg-type]
        return str(p), read_source(str(p))

    want = expected_hash or rec.get("hash")
    first: tuple[str, str] | None = None
    for c in source_candidates(path, snapshot_path)[:400]:
        if not os.path.isfile(c):
            continue
        try:
            text = read_source(c)
        except (OSError, UnicodeDecodeError):
            continue
        found = (path if c == path else os.path.abspath(c)), text
        if want is None or source_hash(text) == want:
            return found
        if first is None:
            first = found
    if first is not None:
        return first
    raise SnapshotError(f"cannot find the source of {path} needed by the snapshot", "E406")


def changed_source_error(path: str) -> SnapshotError:
    """The E406 refusal for a module whose source no longer has the snapshot's hash."""
    return SnapshotError(
        f"the source of {path} changed since the snapshot was taken; refusing to resume "
        "(the snapshot file is left as it was)",
        "E406",
    )


def checked_source(rec: dict[str, Any], snapshot_path: str) -> tuple[str, str]:
    """:func:`locate_source` for module record ``rec``, refusing a source whose hash is not
    the recorded one.

    Raises SnapshotError (E406): no source found, or it changed since the snapshot."""
    path, source = locate_source(rec, snapshot_path)
    if source_hash(source) != rec["hash"]:
        raise changed_source_error(path)
    return path, source


def load_for_resume(snapshot_path: str, runtime: Any) -> Any:
    """Load ``snapshot_path`` into ``runtime`` and return the restored thread."""
    from harnpy.runtime.snapshot import load_document

    return load_document_for_resume(load_document(snapshot_path), snapshot_path, runtime)


def load_document_for_resume(doc: dict[str, Any], snapshot_path: str, runtime: Any) -> Any:
    """Load the program snapshot ``doc`` (unsealed and validated already: a file's, or a
    store checkpoint's) into ``runtime`` and return the restored thread. Sources are
    looked for relative to ``snapshot_path`` and the working directory
    (:func:`source_candidates`).

    Raises SnapshotError (E404 / E406), DiagnosticError (a module does not compile)."""
    from harnpy.runtime.snapshot import restore

    mains = [m for m in doc["modules"] if m.get("role") == "main"]
    if len(mains) != 1:
        raise SnapshotError("snapshot does not name exactly one main module", "E404")
    main = mains[0]
    path, source = checked_source(main, snapshot_path)
    runtime.restoring = True
    runtime.argv = list(doc["thread"].get("argv", []))
    mod = runtime.load_main(path, source)
    if mod.path != main["key"]:
        runtime.modules[main["key"]] = mod
        _alias_relocated_modules(doc, runtime, main["path"], path)
    load_std_modules(doc, runtime)
    th = restore(doc, runtime)
    runtime.restoring = False
    runtime.relink_imports()
    runtime.main_thread = th
    return th


def _alias_relocated_modules(
    doc: dict[str, Any], runtime: Any, old_main: str, new_main: str
) -> None:
    """The project moved (another directory or machine): map each library the snapshot
    names by its old absolute path to the module loaded from the same relative place."""
    old_dir = os.path.dirname(os.path.abspath(old_main))
    new_dir = os.path.dirname(os.path.abspath(new_main))
    for rec in doc["modules"]:
        key = rec["key"]
        if key in runtime.modules or key.startswith(("std/", "<")):
            continue
        rel = os.path.relpath(key, old_dir)
        moved = os.path.normpath(os.path.join(new_dir, rel))
        if moved in runtime.modules:
            runtime.modules[key] = runtime.modules[moved]


def load_std_modules(doc: dict[str, Any], runtime: Any) -> None:
    """Compile the bundled ``std/`` modules the snapshot refers to that the main module
    does not import itself (e.g. ``std/agent/_loop``, loaded on first use by agent_loop),
    and the bundled helper modules builtins load (``harnpy/task_streams``)."""
    from harnpy.runtime.modules import resolve_import

    for rec in doc["modules"]:
        key = rec["key"]
        if key.startswith("std/") and key not in runtime.modules:
            k, p = resolve_import(key, None)  # type: ignore[arg-type]
            runtime.import_module(k, p)
        elif key.startswith("harnpy/") and key not in runtime.modules:
            # a bundled helper module loaded by a builtin (``harnpy/task_streams``)
            name = key.removeprefix("harnpy/")
            from pathlib import Path

            helper = Path(__file__).resolve().parent.parent / "stdlib" / "harn" / f"{name}.harn"
            if "/" not in name and helper.is_file():
                runtime.import_module(key, helper)
