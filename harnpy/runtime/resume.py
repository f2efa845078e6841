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
from harnpy.runtime.sources import SourceLookup, is_stored_kind


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


class SourceRefused(SnapshotError):
    """``E406``: the only files a module's source could be in were refused before they were
    read (over the 16 MiB source limit, :data:`~harnpy.runtime.modules.MAX_SOURCE_BYTES`),
    so the message says so, with the size and the limit, instead of "cannot find"."""


def locate_source(
    rec: dict[str, Any], snapshot_path: str, expected_hash: str | None = None
) -> tuple[str, str]:
    """Find a module's source file (see :func:`source_candidates`); with ``expected_hash``
    (default: the record's ``hash``) the first candidate with that content wins, else the
    first existing one (the caller then reports the changed source). Files are read with a
    cap (:func:`read_source`). A ``source`` inline in the record is used only for a module
    without a file (a pseudo-path, :func:`is_pseudo_path`): for any other module the file
    decides, whatever the record carries.

    Raises SnapshotError (E406) when no candidate exists (:class:`SourceRefused` when the
    candidates that exist were all refused as too large: the message gives the size and
    the limit), E404 when a pseudo-path module's inline source is missing."""
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

    from harnpy.security import FileTooLarge

    want = expected_hash or rec.get("hash")
    first: tuple[str, str] | None = None
    too_large: list[str] = []
    for c in source_candidates(path, snapshot_path)[:400]:
        if not os.path.isfile(c):
            continue
        try:
            text = read_source(c)
        except FileTooLarge as e:
            too_large.append(f"{e.filename} is {e.size} bytes, over the {e.cap}-byte limit")
            continue
        except (OSError, UnicodeDecodeError):
            continue
        found = (path if c == path else os.path.abspath(c)), text
        if want is None or source_hash(text) == want:
            return found
        if first is None:
            first = found
    if first is not None:
        return first
    if too_large:
        raise SourceRefused(
            f"the source of {path} needed by the snapshot is too large to be a program "
            f"source: {'; '.join(too_large)}",
            "E406",
        )
    raise SnapshotError(f"cannot find the source of {path} needed by the snapshot", "E406")


def changed_source_error(path: str, refused: list[str] | None = None) -> SnapshotError:
    """The E406 refusal for a module whose source no longer has the snapshot's hash (and of
    which no usable stored copy exists; ``refused`` says why copies found were not used)."""
    why = f" ({'; '.join(refused)})" if refused else ""
    return SnapshotError(
        f"the source of {path} changed since the snapshot was taken and no stored copy of "
        f"the code it ran is available{why}; refusing to resume (the snapshot file is left "
        "as it was)",
        "E406",
    )


def checked_source(
    rec: dict[str, Any], snapshot_path: str, lookup: SourceLookup | None = None
) -> tuple[str, str]:
    """The source module record ``rec`` ran: a file (:func:`locate_source`) whose hash is the
    recorded one, else the stored copy with that hash from ``lookup``
    (:mod:`harnpy.runtime.sources`: the snapshot's sources directory, the store); the
    recorded path is returned with a stored copy.

    Raises SnapshotError (E406): no source with the recorded hash is available."""
    missing: SnapshotError | None = None
    source: str | None
    try:
        path, source = locate_source(rec, snapshot_path)
    except SnapshotError as e:
        if e.code != "E406" or lookup is None:
            raise
        path, source, missing = "", None, e
    if source is not None and source_hash(source) == rec["hash"]:
        return path, source
    stored = lookup.get(rec["hash"], rec["path"]) if lookup is not None else None
    if stored is not None:
        return rec["path"], stored
    if source is None:
        why = f" ({'; '.join(lookup.refused)})" if lookup is not None and lookup.refused else ""
        if isinstance(missing, SourceRefused):
            raise SourceRefused(
                f"{missing.message}, and no stored copy of it is available{why}", "E406"
            ) from missing
        raise SnapshotError(
            f"cannot find the source of {rec['path']} needed by the snapshot, and no stored "
            f"copy of it is available{why}",
            "E406",
        ) from missing
    raise changed_source_error(path, lookup.refused if lookup is not None else None)


def upgrade_requested(runtime: Any) -> bool:
    """Whether a resume runs on the current code (``run --resume --upgrade-code``, or
    ``HARNPY_UPGRADE_CODE=1`` for resumes started by ``harnpy worker`` / ``harnpy waitpoint
    resume``)."""
    if getattr(runtime, "upgrade_code", False):
        return True
    return os.environ.get(UPGRADE_ENV, "").lower() in ("1", "true", "yes")


#: Environment variable opting every resume of this process into the current code.
UPGRADE_ENV = "HARNPY_UPGRADE_CODE"


def opt_into_upgrade() -> None:
    """Opt every resume this process starts into the current code, and the resumes of the
    child processes it starts (``harnpy worker`` runs ``harnpy run --resume`` in a child):
    what ``--upgrade-code`` of ``harnpy worker``, ``harnpy workers resume``, ``harnpy
    waitpoint resume|complete|cancel`` and ``harnpy serve`` does. Sets
    :data:`UPGRADE_ENV` in this process's environment; the check itself is
    :func:`upgraded_document`'s (functions on the parked stack unchanged, else ``E406``
    naming the function)."""
    os.environ[UPGRADE_ENV] = "1"


def current_source(
    rec: dict[str, Any], snapshot_path: str, lookup: SourceLookup | None
) -> tuple[str, str]:
    """For an upgrading resume: the module's current file (the recorded path first, then the
    relocated candidates), whatever its hash; a module whose file is gone runs its stored
    copy (the code it started with).

    Raises SnapshotError (E406): neither exists."""
    try:
        return locate_source(rec, snapshot_path, expected_hash=_NO_HASH)
    except SnapshotError as e:
        if e.code != "E406":
            raise
        return checked_source(rec, snapshot_path, lookup)


#: A hash no source has: :func:`locate_source` then returns the first existing candidate.
_NO_HASH = "-"


def source_pins(
    records: list[dict[str, Any]],
    snapshot_path: str,
    lookup: SourceLookup | None,
    *,
    upgrade: bool,
) -> dict[str, str]:
    """The library sources a restore compiles instead of reading their files (module key ->
    text, :attr:`harnpy.runtime.runtime.Runtime.source_pins`): every library's source the
    snapshot ran; with ``upgrade`` only those whose file is gone.

    Raises SnapshotError (E406): a library's source is nowhere to be found."""
    pins: dict[str, str] = {}
    for rec in records:
        key = rec.get("key")
        if rec.get("role") == "main" or not isinstance(key, str):
            continue
        if not is_stored_kind(key, rec.get("path", "")):
            continue
        if upgrade and os.path.exists(key):
            continue
        try:
            pins[key] = checked_source(rec, snapshot_path, lookup)[1]
        except SnapshotError:
            if upgrade:
                raise
            # a moved project: the import finds the library where it is now (and restore
            # checks its hash)
    return pins


def compile_records(
    runtime: Any, records: list[dict[str, Any]], source_of: Any, *, main_is_main: bool = True
) -> set[str]:
    """Compile (without running) the modules of ``records`` that ``runtime`` lacks, the main
    module first (its imports compile the libraries), then any record still missing;
    ``source_of(rec) -> (path, text)``. With ``main_is_main`` the main record becomes the
    runtime's main module. Returns the keys compiled.

    Raises SnapshotError (from ``source_of``), DiagnosticError (a module does not compile)."""
    from harnpy.runtime.modules import resolve_import

    before = set(runtime.modules)
    saved_restoring = runtime.restoring
    runtime.restoring = True
    try:
        for rec in sorted(records, key=lambda r: r.get("role") != "main"):
            key = rec["key"]
            if key in runtime.modules:
                continue
            if key.startswith("std/"):
                k, p = resolve_import(key, None)  # type: ignore[arg-type]
                runtime.import_module(k, p)
                continue
            path, source = source_of(rec)
            saved_main = runtime.main_module
            mod = runtime.load_main(path, source)
            if not main_is_main or rec.get("role") != "main":
                runtime.main_module = saved_main
            if mod.path != key:
                runtime.modules[key] = mod
    finally:
        runtime.restoring = saved_restoring
    return set(runtime.modules) - before


def upgraded_document(
    doc: dict[str, Any], runtime: Any, snapshot_path: str, lookup: SourceLookup | None
) -> dict[str, Any]:
    """``doc`` (an encoded thread snapshot, externals included) translated to the modules
    ``runtime`` compiled from the current files (:mod:`harnpy.runtime.code_upgrade`), or
    ``doc`` itself when no module changed. A note per changed function the run will call
    goes to ``runtime``'s stderr.

    Raises SnapshotError (E406): a function on the stack changed, the source the snapshot
    ran is not available to compare with, or a change cannot be bound."""
    from harnpy.runtime.code_upgrade import plan_upgrade, translate
    from harnpy.runtime.runtime import Runtime

    records = [r for r in doc["modules"] if isinstance(r, dict)]
    known = {id(runtime.modules[r["key"]]) for r in records if r["key"] in runtime.modules}
    for key, mod in runtime.modules.items():
        if id(mod) not in known:
            raise SnapshotError(
                f"--upgrade-code: the new code imports {key}, which the parked run never "
                "loaded (its top level never ran); resume without --upgrade-code to run "
                "the code the snapshot started with (the snapshot is left as it was)",
                "E406",
            )
    changed = [
        r["key"]
        for r in records
        if r["key"] in runtime.modules
        and is_stored_kind(r["key"], r.get("path", ""))
        and runtime.modules[r["key"]].hash != r["hash"]
    ]
    if not changed:
        return doc

    def old_source(rec: dict[str, Any]) -> tuple[str, str]:
        try:
            return checked_source(rec, snapshot_path, lookup)
        except SnapshotError:
            raise SnapshotError(
                f"--upgrade-code: the source {rec['path']} ran when it parked is not stored "
                f"(sha256 {rec['hash'][:12]}…), so the functions that changed cannot be "
                "told apart; restore that file to resume",
                "E406",
            ) from None

    scratch = Runtime(stdout=lambda _t: None, stderr=lambda _t: None)
    scratch.source_pins = {
        r["key"]: old_source(r)[1]
        for r in records
        if is_stored_kind(r["key"], r.get("path", "")) and r.get("role") != "main"
    }
    compile_records(scratch, records, lambda r: (r["path"], old_source(r)[1]), main_is_main=True)
    old = {k: scratch.modules[k] for k in changed if k in scratch.modules}
    plan = plan_upgrade(doc, runtime, old, [k for k in changed if k in old])
    for note in plan.notes:
        runtime.write_err(f"harnpy: --upgrade-code: {note}\n")
    return translate(doc, plan)


def load_for_resume(snapshot_path: str, runtime: Any, *, store: Any = None) -> Any:
    """Load ``snapshot_path`` into ``runtime`` and return the restored thread (``store``: a
    store, or a callable opening one, asked for module sources not stored beside the
    snapshot)."""
    from harnpy.runtime.snapshot import load_document

    return load_document_for_resume(
        load_document(snapshot_path), snapshot_path, runtime, store=store
    )


def load_document_for_resume(
    doc: dict[str, Any],
    snapshot_path: str,
    runtime: Any,
    *,
    store: Any = None,
    upgrade: bool | None = None,
) -> Any:
    """Load the program snapshot ``doc`` (unsealed and validated already: a file's, or a
    store checkpoint's) into ``runtime`` and return the restored thread. Sources are
    looked for relative to ``snapshot_path`` and the working directory
    (:func:`source_candidates`), then among the stored copies (the snapshot's sources
    directory, ``store``: :class:`~harnpy.runtime.sources.SourceLookup`). By default the
    run continues on the code it started with; with ``upgrade`` (default
    :func:`upgrade_requested`) on the current files, when the functions on its stack did
    not change (:mod:`harnpy.runtime.code_upgrade`).

    Raises SnapshotError (E404 / E406), DiagnosticError (a module does not compile)."""
    from harnpy.runtime.snapshot import restore

    if upgrade is None:
        upgrade = upgrade_requested(runtime)
    lookup = SourceLookup(snapshot_path, store)
    mains = [m for m in doc["modules"] if m.get("role") == "main"]
    if len(mains) != 1:
        raise SnapshotError("snapshot does not name exactly one main module", "E404")
    main = mains[0]
    if upgrade and not is_pseudo_path(main["key"]):
        path, source = current_source(main, snapshot_path, lookup)
    else:
        path, source = checked_source(main, snapshot_path, lookup)
    pins = source_pins(doc["modules"], snapshot_path, lookup, upgrade=upgrade)
    runtime.restoring = True
    runtime.argv = list(doc["thread"].get("argv", []))
    runtime.source_pins = pins
    try:
        mod = runtime.load_main(path, source)
        if mod.path != main["key"]:
            runtime.modules[main["key"]] = mod
            _alias_relocated_modules(doc, runtime, main["path"], path)
        load_std_modules(doc, runtime)
    finally:
        runtime.source_pins = {}
    if upgrade:
        doc = upgraded_document(doc, runtime, snapshot_path, lookup)
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
