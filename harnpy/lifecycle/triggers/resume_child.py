"""The resume shim: ``python -m harnpy.lifecycle.triggers.resume_child --store S --wait W
--token T -- CMD...``.

Inserts the wait's resume receipt (:meth:`SqliteWaitStore.begin_resume`) *in the child
process*, immediately before running ``CMD`` — the moment the resume takes effect — then
runs ``CMD`` and attaches its exit status to the receipt. If the receipt cannot be inserted
(the resume already began, or this claim token is stale) it exits with status 75 without
running ``CMD``. This makes the resume itself idempotent: however runners crash or race,
``CMD`` runs at most once per wait (lifecycle.md §10).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ALREADY_RESUMED_EXIT = 75


def main(argv: list[str] | None = None) -> int:
    """Run the shim; returns the exit status (the command's, or 75)."""
    from harnpy.lifecycle.triggers.store import open_store

    p = argparse.ArgumentParser(prog="harnpy-resume-child")
    p.add_argument("--store", required=True)
    p.add_argument("--wait", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        sys.stderr.write("harnpy-resume-child: no command\n")
        return 2
    store = open_store(args.store)
    now = time.time_ns() // 1_000_000
    if not store.begin_resume(
        args.wait, args.token, now, {"pid": os.getpid(), "host": os.uname().nodename, "cmd": cmd}
    ):
        sys.stderr.write(f"harnpy: wait {args.wait} was already resumed; not resuming again\n")
        return ALREADY_RESUMED_EXIT
    sys.stdout.flush()
    try:
        rc = subprocess.call(cmd)
    except OSError as e:
        sys.stderr.write(f"harnpy-resume-child: cannot run {cmd[0]}: {e}\n")
        rc = 127
    store.finish_receipt(args.wait, args.token, {"exit_code": rc}, time.time_ns() // 1_000_000)
    store.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
