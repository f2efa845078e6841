"""``harnpy store migrate|info|prune-sources [URL]``: the shell side of the durable store.

* ``harnpy store migrate [URL]`` — apply pending schema migrations (safe while other
  processes use or migrate the store); prints the versions applied, or that the schema is
  current.
* ``harnpy store info [URL] [--json]`` — backend, schema version, migrations applied and
  row counts per table and status.
* ``harnpy store prune-sources [URL] [--grace-ms N] [--dir STATE_DIR] [--dry-run]`` —
  delete the module sources no checkpoint needs any more (those of settled checkpoints;
  nothing younger than ``--grace-ms``, default one hour): in the store when one is named,
  and always in the sources directory of the snapshot files (``STATE_DIR/sources``; default
  the worker state directory's, ``.harn/sources``), where a source is kept while a
  snapshot file that is not settled records it
  (:func:`harnpy.runtime.sources.prune_source_files`); prints how many. Without a store it
  prunes the directory only. Exit status 1 when a snapshot file could not be read (nothing
  deleted in the directory).

``URL`` defaults to ``--store`` / ``HARNPY_STORE``. Exit status: 0 done, 2 usage error or a
store that cannot be used (unreachable, credentials refused, newer schema version, not a
database), with one line naming the store and what to do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def add_subparsers(sub: Any) -> None:
    """Add ``store`` (``migrate``, ``info``, ``prune-sources``) to the ``harnpy`` subcommand
    parser ``sub``."""
    st = sub.add_parser("store", help="create, migrate and inspect the durable store")
    ssub = st.add_subparsers(dest="store_command")
    for name, text in (
        ("migrate", "apply pending schema migrations"),
        ("info", "show the store's schema version and contents"),
        ("prune-sources", "delete the module sources no checkpoint needs"),
    ):
        p = ssub.add_parser(name, help=text)
        p.add_argument(
            "url",
            nargs="?",
            default=None,
            help="store URL: sqlite:///PATH, postgresql://..., default (HARNPY_STORE)",
        )
        p.add_argument("--store", dest="store_opt", metavar="URL", help="the same as URL")
        if name == "info":
            p.add_argument("--json", action="store_true", help="JSON output")
        if name == "prune-sources":
            p.add_argument(
                "--grace-ms",
                type=int,
                default=None,
                metavar="N",
                help="keep anything younger than N ms (default: one hour)",
            )
            p.add_argument(
                "--dir",
                dest="state_dir",
                metavar="STATE_DIR",
                default=None,
                help="the state directory of the snapshot files whose sources/ is pruned "
                "(default: that of HARN_WORKER_STATE_DIR, else .harn)",
            )
            p.add_argument(
                "--dry-run", action="store_true", help="list what would be deleted, delete nothing"
            )


def main(args: argparse.Namespace) -> int:
    """Run ``harnpy store ...``; returns the exit status (module docstring)."""
    from harnpy.store import StoreError, configured_store_url, open_store

    cmd = getattr(args, "store_command", None)
    if cmd not in ("migrate", "info", "prune-sources"):
        sys.stderr.write("harnpy store: give migrate [URL], info [URL] or prune-sources [URL]\n")
        return 2
    try:
        url = configured_store_url(args.url or args.store_opt)
        if cmd == "prune-sources" and (url is None or url.kind == "directory"):
            return _prune_files(args)
        if url is None:
            sys.stderr.write(
                f"harnpy store {cmd}: no store named: give a URL (sqlite:///PATH, "
                "postgresql://...) or set HARNPY_STORE\n"
            )
            return 2
        if url.kind == "directory":
            sys.stderr.write(
                f"harnpy store {cmd}: {url} holds snapshot files and has no schema; name an "
                "SQLite or PostgreSQL store\n"
            )
            return 2
        if cmd == "info" and url.kind == "sqlite" and not os.path.exists(url.target):
            sys.stderr.write(
                f"harnpy store info: no store at {url.target} yet (nothing was written); "
                f"`harnpy store migrate {url}` creates it\n"
            )
            return 2
        store = open_store(url, migrate=cmd == "prune-sources")
    except StoreError as e:
        sys.stderr.write(f"harnpy: {e.message}\n")
        return 2
    try:
        if cmd == "migrate":
            before = store.schema_version()
            applied = store.migrate()
            if applied:
                sys.stdout.write(
                    f"{store.display}: migrated from schema version {before} to "
                    f"{applied[-1]} (applied {', '.join(map(str, applied))})\n"
                )
            else:
                sys.stdout.write(f"{store.display}: schema version {before} is current\n")
            return 0
        if cmd == "prune-sources":
            from harnpy.store.sql_sources import PRUNE_GRACE_MS

            code = _prune_files(args)
            grace = PRUNE_GRACE_MS if args.grace_ms is None else args.grace_ms
            if args.dry_run:
                sys.stdout.write(f"{store.display}: --dry-run: the store is left as it is\n")
                return code
            n = store.prune_sources(grace)
            sys.stdout.write(
                f"{store.display}: pruned {n['sources']} module sources and {n['refs']} "
                "references no checkpoint needs\n"
            )
            return code
        data = store.info()
        if args.json:
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
            return 0
        _print_info(data)
        return 0
    except StoreError as e:
        sys.stderr.write(f"harnpy: {e.message}\n")
        return 2
    finally:
        store.close()


def _prune_files(args: argparse.Namespace) -> int:
    """Prune the stored sources of the snapshot files (module docstring); returns the exit
    status (1 when a snapshot could not be read and nothing was deleted)."""
    from harnpy.lifecycle.workers import state_dir as worker_state_dir
    from harnpy.runtime.sources import (
        PRUNE_GRACE_MS,
        PruneRefused,
        prune_source_files,
        sources_dir,
    )

    if args.grace_ms is not None and args.grace_ms < 0:
        sys.stderr.write("harnpy store prune-sources: --grace-ms must be 0 or more\n")
        return 2
    state = args.state_dir
    if state is None:
        state = os.path.dirname(sources_dir(os.path.join(worker_state_dir(), "w.json")))
    grace = PRUNE_GRACE_MS if args.grace_ms is None else args.grace_ms
    try:
        res = prune_source_files(state, grace, dry_run=args.dry_run)
    except PruneRefused as e:
        sys.stderr.write(
            f"harnpy store prune-sources: {e}; nothing was deleted (the sources it needs are "
            "unknown): move the file away or repair it, then prune again\n"
        )
        return 1
    except OSError as e:
        sys.stderr.write(f"harnpy store prune-sources: {e}\n")
        return 1
    verb = "would delete" if args.dry_run else "pruned"
    sys.stdout.write(
        f"{res['dir']}: {verb} {len(res['deleted'])} module sources no snapshot needs "
        f"({res['kept']} kept for {res['snapshots']} snapshots or the grace period)\n"
    )
    for sha in res["deleted"] if args.dry_run else []:
        sys.stdout.write(f"  {sha}\n")
    return 0


def _print_info(data: dict[str, Any]) -> None:
    version = data["schema_version"]
    latest = data["latest_version"]
    note = "" if version == latest else f" (this harnpy writes {latest}: run harnpy store migrate)"
    lines = [
        f"store           {data['store']}",
        f"backend         {data['backend']}",
        f"schema version  {version}{note}",
    ]
    for table, counts in data["tables"].items():
        if isinstance(counts, dict):
            shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "empty"
        else:
            shown = str(counts)
        lines.append(f"  {table:<16}{shown}")
    sys.stdout.write("\n".join(lines) + "\n")
