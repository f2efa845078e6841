"""``harnpy store migrate|info|prune-sources [URL]``: the shell side of the durable store.

* ``harnpy store migrate [URL]`` — apply pending schema migrations (safe while other
  processes use or migrate the store); prints the versions applied, or that the schema is
  current.
* ``harnpy store info [URL] [--json]`` — backend, schema version, migrations applied and
  row counts per table and status.
* ``harnpy store prune-sources [URL] [--grace-ms N]`` — delete the module sources no
  checkpoint needs any more (those of settled checkpoints; nothing younger than
  ``--grace-ms``, default one hour); prints how many.

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


def main(args: argparse.Namespace) -> int:
    """Run ``harnpy store ...``; returns the exit status (module docstring)."""
    from harnpy.store import StoreError, configured_store_url, open_store

    cmd = getattr(args, "store_command", None)
    if cmd not in ("migrate", "info", "prune-sources"):
        sys.stderr.write("harnpy store: give migrate [URL], info [URL] or prune-sources [URL]\n")
        return 2
    try:
        url = configured_store_url(args.url or args.store_opt)
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

            grace = PRUNE_GRACE_MS if args.grace_ms is None else args.grace_ms
            n = store.prune_sources(grace)
            sys.stdout.write(
                f"{store.display}: pruned {n['sources']} module sources and {n['refs']} "
                "references no checkpoint needs\n"
            )
            return 0
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
