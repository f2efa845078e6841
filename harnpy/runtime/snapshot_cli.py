"""``harnpy run --resume SNAPSHOT``: continue a program from a snapshot file.

Steps: read and validate the document (never modifying it) -> locate and hash-check every
module's source -> compile the modules without running them -> restore the heap, frames and
module globals -> run the restored thread to its end. Any failure before the thread runs
leaves the snapshot file untouched and exits with status 2.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from harnpy.runtime.snapshot import SnapshotError


def locate_source(rec: dict[str, Any], snapshot_path: str) -> tuple[str, str]:
    """Find a module's source file: its recorded path, else by name next to the snapshot or
    in the working directory (a snapshot moved to another machine)."""
    path = rec["path"]
    if rec.get("source") is not None:
        return path, rec["source"]
    if rec["key"].startswith("std/"):
        from harnpy.runtime.modules import resolve_import

        _, p = resolve_import(rec["key"], None)  # type: ignore[arg-type]
        return str(p), p.read_text(encoding="utf-8")
    cands = [path]
    base = os.path.basename(path)
    cands.append(os.path.join(os.path.dirname(os.path.abspath(snapshot_path)), base))
    cands.append(os.path.join(os.getcwd(), base))
    for c in cands:
        if os.path.isfile(c):
            with open(c, encoding="utf-8") as fh:
                return (path if c == path else os.path.abspath(c)), fh.read()
    raise SnapshotError(f"cannot find the source of {path} needed by the snapshot", "E406")


def load_for_resume(snapshot_path: str, runtime: Any) -> Any:
    """Load ``snapshot_path`` into ``runtime`` and return the restored thread."""
    from harnpy.runtime.snapshot import load_document, restore

    doc = load_document(snapshot_path)
    mains = [m for m in doc["modules"] if m.get("role") == "main"]
    if len(mains) != 1:
        raise SnapshotError("snapshot does not name exactly one main module", "E404")
    main = mains[0]
    path, source = locate_source(main, snapshot_path)
    from harnpy.runtime.modules import source_hash

    if source_hash(source) != main["hash"]:
        raise SnapshotError(
            f"the source of {path} changed since the snapshot was taken; refusing to resume "
            "(the snapshot file is left as it was)",
            "E406",
        )
    runtime.restoring = True
    runtime.argv = list(doc["thread"].get("argv", []))
    mod = runtime.load_main(path, source)
    if mod.path != main["key"]:
        runtime.modules[main["key"]] = mod
    _load_std_modules(doc, runtime)
    th = restore(doc, runtime)
    runtime.restoring = False
    runtime.relink_imports()
    runtime.main_thread = th
    return th


def _load_std_modules(doc: dict[str, Any], runtime: Any) -> None:
    """Compile the bundled ``std/`` modules the snapshot refers to that the main module
    does not import itself (e.g. ``std/agent/_loop``, loaded on first use by agent_loop)."""
    from harnpy.runtime.modules import resolve_import

    for rec in doc["modules"]:
        key = rec["key"]
        if key.startswith("std/") and key not in runtime.modules:
            k, p = resolve_import(key, None)  # type: ignore[arg-type]
            runtime.import_module(k, p)


def resume_main(args: Any) -> int:
    """CLI handler of ``run --resume``; returns the exit code."""
    from harnpy.cli import (
        EXIT_OK,
        EXIT_RUNTIME,
        EXIT_USAGE,
        flush_stdout,
        render_runtime_error,
        report_internal_error,
    )
    from harnpy.diagnostics import DiagnosticError
    from harnpy.runtime.errors import HarnError, SnapshotExit
    from harnpy.runtime.runtime import Runtime

    rt = Runtime()
    try:
        th = load_for_resume(args.resume, rt)
    except SnapshotError as e:
        sys.stderr.write(f"{args.resume}: error[{e.code}]: {e.message}\n")
        return EXIT_USAGE
    except DiagnosticError as e:
        sys.stderr.write(e.render() + "\n")
        return EXIT_USAGE
    except HarnError as e:
        sys.stderr.write(f"{args.resume}: error[{e.code}]: {e.message}\n")
        return EXIT_USAGE
    try:
        # through the scheduler: the restored program may block (model calls, timers, tasks)
        rt.scheduler.run_until(th)
    except HarnError as e:
        flush_stdout()
        sys.stderr.write(render_runtime_error(e, rt) + "\n")
        return EXIT_RUNTIME
    except SnapshotExit:
        flush_stdout()
        return EXIT_OK
    except Exception as e:  # noqa: BLE001
        flush_stdout()
        return report_internal_error(e)
    flush_stdout()
    return EXIT_OK
