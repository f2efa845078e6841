"""``harnpy worker`` and ``harnpy workers ls|show|resume|close`` (the shell side of the wait
store; lifecycle.md §9, §10).

* ``harnpy worker [--store PATH] [--once] [--poll-ms N] [--lease-ms N] [--resume-cmd CMD]
  [--upgrade-code]`` — run the :class:`~harnpy.lifecycle.triggers.runner.WorkerRunner` poll loop (Ctrl-C stops
  it; ``--once`` makes one pass). ``--resume-cmd`` replaces ``harnpy run --resume
  <snapshot>`` (shell-split; ``{snapshot}``, ``{worker_id}``, ``{wait_id}`` substituted).
* ``harnpy workers ls [--all] [--wide] [--json]`` — parked workers: the store's active
  waits and the snapshot directory's parked workers, with the reason and wake conditions
  (:mod:`harnpy.lifecycle.worker_listing`; ``--all``: also finished ones; fits 100
  columns unless ``--wide``).
* ``harnpy workers show ID [--json]`` — one wait (by wait id or worker id), its receipt and
  the worker snapshot's status.
* ``harnpy workers resume ID [--input TEXT] [--resume-cmd CMD] [--upgrade-code]`` — resume
  now, through the same claim + receipt path as the runner (initiator ``operator``).

``--upgrade-code`` continues the resumed runs on the current files when the functions on
their parked stack did not change (``HARNPY_UPGRADE_CODE=1``, which the ``harnpy run
--resume`` children inherit); without it each resumes on the code it started with.
* ``harnpy workers close ID`` — cancel the wait and rewrite the worker snapshot's status to
  ``cancelled`` (atomically) when the file exists.
* ``harnpy workers fire PROVIDER KIND [--payload JSON]`` — deliver a trigger event from the
  shell: the waits whose trigger listens to it become due (a ``harnpy worker`` resumes them).

The store is ``--store URL``, else ``HARNPY_STORE``, else ``.harn/harnpy.sqlite3``
(:mod:`harnpy.lifecycle.triggers.store`; SQLite or PostgreSQL).
Exit status: 0 done, 1 not found / refused / resume failed, 2 usage or store error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harnpy.lifecycle.cli_args import positive_int


def add_subparsers(sub: Any) -> None:
    """Add ``worker`` and ``workers`` to the ``harnpy`` subcommand parser ``sub``."""
    store_opt = argparse.ArgumentParser(add_help=False)
    store_opt.add_argument(
        "--store",
        metavar="URL",
        help="store: sqlite:///PATH or postgresql://... (default: HARNPY_STORE)",
    )

    w = sub.add_parser(
        "worker", parents=[store_opt], help="resume due parked workers from the wait store"
    )
    w.add_argument("--once", action="store_true", help="one pass, then exit")
    w.add_argument("--poll-ms", type=positive_int, default=1000, help="poll interval (ms)")
    w.add_argument(
        "--lease-ms",
        type=positive_int,
        default=60_000,
        help="claim lease (ms) of the waits and parked programs it resumes",
    )
    w.add_argument("--resume-cmd", metavar="CMD", help="command resuming a snapshot")
    w.add_argument("--runner-id", metavar="ID", help="name recorded in claims")
    upgrade_help = (
        "resumed runs continue on the current files when the functions on their parked "
        "stack did not change (default: the code each run started with; HARNPY_UPGRADE_CODE=1)"
    )
    w.add_argument("--upgrade-code", action="store_true", help=upgrade_help)

    ws = sub.add_parser("workers", help="inspect and drive parked workers")
    wsub = ws.add_subparsers(dest="workers_command")
    ls = wsub.add_parser(
        "ls",
        parents=[store_opt],
        help="list parked workers (the snapshot directory's, and the store's waits)",
    )
    ls.add_argument("--all", action="store_true", help="include finished waits and workers")
    ls.add_argument("--json", action="store_true", help="JSON output")
    ls.add_argument("--wide", action="store_true", help="every column, nothing cut")
    show = wsub.add_parser(
        "show",
        parents=[store_opt],
        help="show one parked worker: reason, wake conditions, snapshot",
    )
    show.add_argument("id", help="a worker id, or a prefix of it `workers ls` shows")
    show.add_argument("--json", action="store_true", help="JSON output")
    res = wsub.add_parser("resume", parents=[store_opt], help="resume a parked worker now")
    res.add_argument("id")
    res.add_argument("--input", default=None, help="resume input text")
    res.add_argument("--resume-cmd", metavar="CMD", help="command resuming a snapshot")
    res.add_argument("--lease-ms", type=positive_int, default=60_000, help="claim lease (ms)")
    res.add_argument("--upgrade-code", action="store_true", help=upgrade_help)
    close = wsub.add_parser("close", parents=[store_opt], help="cancel a parked worker")
    close.add_argument("id")
    fire = wsub.add_parser(
        "fire",
        parents=[store_opt],
        help="deliver a trigger event: the parked workers waiting on it become due",
    )
    fire.add_argument("provider", help="the event's provider (`github`, `webhook`, ...)")
    fire.add_argument("kind", help="the event's kind (`review.approved`, ...)")
    fire.add_argument(
        "--payload", default="{}", metavar="JSON", help="the event's payload (a JSON value)"
    )


class UsageError(Exception):
    """A bad command-line value (exit status 2); ``str(e)`` says which."""


def main(args: argparse.Namespace) -> int:
    """Dispatch ``worker`` / ``workers`` commands; returns the exit status (2 for a usage
    error or a store that cannot be opened or read, with a one-line message naming it)."""
    from harnpy.lifecycle.checkpoint_store import use_store_option
    from harnpy.lifecycle.triggers.store import StoreError

    bad_ref = _store_of_reference(args)
    if bad_ref is not None:
        sys.stderr.write(f"harnpy workers: {bad_ref}\n")
        return 2
    use_store_option(getattr(args, "store", None))  # checkpoint references in that store
    if args.command == "workers":
        missing = _missing_store(getattr(args, "store", None))
        if missing is not None:  # inspecting creates nothing: no store means no waits
            return _no_store(args, missing)
    if getattr(args, "upgrade_code", False):
        from harnpy.runtime.resume import opt_into_upgrade

        opt_into_upgrade()  # in-process resumes and the `harnpy run --resume` children
    try:
        _resume_fn(getattr(args, "resume_cmd", None))  # a usage error before the store opens
        store = _open(getattr(args, "store", None))
    except UsageError as e:
        sys.stderr.write(f"harnpy: {e}\n")
        return 2
    except (StoreError, OSError) as e:
        sys.stderr.write(f"harnpy: {e}\n")
        return 2
    try:
        return _dispatch(args, store)
    except UsageError as e:
        sys.stderr.write(f"harnpy: {e}\n")
        return 2
    except StoreError as e:
        sys.stderr.write(f"harnpy: {e}\n")
        return 2
    finally:
        store.close()


def _store_of_reference(args: argparse.Namespace) -> str | None:
    """``workers show|resume|close <url>#<id>`` (the checkpoint reference a park prints,
    which ``run --resume`` takes): the worker is ``<id>`` of the store ``<url>``, used as
    the command's store when none is configured. Rewrites ``args.id`` / ``args.store``;
    returns the error to report (exit status 2) when the reference names another store
    than the configured one, or one whose password is masked, else None."""
    from harnpy.lifecycle.checkpoint_store import configured_sql_url, is_store_ref, split_store_ref
    from harnpy.store import StoreError

    ident = getattr(args, "id", None)
    if getattr(args, "workers_command", None) not in ("show", "resume", "close"):
        return None
    if type(ident) is not str or not is_store_ref(ident):
        return None
    url, key = split_store_ref(ident)
    option = getattr(args, "store", None)
    try:
        configured = configured_sql_url(_RefOption(option))
    except StoreError as e:
        return str(e)
    if configured is None:
        if ":***@" in url:
            return (
                f"`{ident}` is in a store whose password is not shown: give --store URL "
                "(or HARNPY_STORE) naming that store"
            )
        args.store = url
    elif configured.display != url:
        return (
            f"`{ident}` is a checkpoint of store {url}, not of the store this command "
            f"uses ({configured.display}): give --store naming that store"
        )
    args.id = key
    return None


class _RefOption:
    """A stand-in runtime carrying the command's ``--store`` (``configured_sql_url``)."""

    def __init__(self, option: str | None) -> None:
        self.store_option = option


def _dispatch(args: argparse.Namespace, store: Any) -> int:
    if args.command == "worker":
        return _worker(args, store)
    cmd = getattr(args, "workers_command", None)
    if cmd == "ls":
        return _ls(args, store)
    if cmd == "show":
        return _show(args, store)
    if cmd == "resume":
        return _resume(args, store)
    if cmd == "close":
        return _close(args, store)
    if cmd == "fire":
        return _fire(args, store)
    sys.stderr.write(
        "harnpy workers: give one of ls, show ID, resume ID, close ID, fire PROVIDER KIND\n"
    )
    return 2


def _store_path(option: str | None) -> str:
    from harnpy.lifecycle.triggers.store import configured_store_path, default_store_path

    return configured_store_path(option) or default_store_path()


def _open(option: str | None) -> Any:
    from harnpy.lifecycle.triggers.store import open_store

    return open_store(_store_path(option))


def _missing_store(option: str | None) -> str | None:
    """The store path when it names a file that does not exist yet, else None (a store URL
    that is not a path, or an existing file)."""
    import os

    from harnpy.lifecycle.triggers.store import StoreError, is_sqlite_path

    try:
        path = _store_path(option)
    except StoreError:
        return None  # reported by _open with its own message
    return None if not is_sqlite_path(path) or os.path.exists(path) else path


def _no_store(args: argparse.Namespace, path: str) -> int:
    """``harnpy workers ...`` when the store file does not exist: nothing is parked."""
    cmd = getattr(args, "workers_command", None)
    if cmd == "ls":
        return _ls(args, None)  # the snapshot directory's parked workers
    if cmd == "show":
        shown = _show_parked(args, None)
        if shown is not None:
            return shown
    if cmd in ("show", "resume", "close"):
        sys.stderr.write(
            f"harnpy workers: error: no wait for `{args.id}` (no wait store at {path})\n"
        )
        if cmd == "resume":
            sys.stderr.write(
                "harnpy workers: without a store, resume a parked worker with "
                "`harnpy run --resume ID [--input TEXT]`\n"
            )
        return 1
    if cmd == "fire":
        sys.stderr.write(
            f"harnpy workers: no wait store at {path}, so no parked worker waits on a "
            "trigger; park with a store (--store URL or HARNPY_STORE) to wake workers by event\n"
        )
        return 1
    sys.stderr.write(
        "harnpy workers: give one of ls, show ID, resume ID, close ID, fire PROVIDER KIND\n"
    )
    return 2


def _resume_fn(cmd: str | None, capture: bool = False) -> Any:
    """The resume function of ``--resume-cmd`` (shell-split); ``capture`` keeps the
    child's output for the terminal (``harnpy workers resume``).

    Raises:
        UsageError: the command cannot be split (unbalanced quote) or is empty.
    """
    import shlex

    from harnpy.lifecycle.triggers.runner import SubprocessResume

    if cmd is None:
        return SubprocessResume(None, capture=capture)
    try:
        argv = shlex.split(cmd)
    except ValueError as e:
        raise UsageError(f"--resume-cmd {cmd!r}: {e}") from None
    if not argv:
        raise UsageError("--resume-cmd is empty")
    return SubprocessResume(argv, capture=capture)


def _worker(args: argparse.Namespace, store: Any) -> int:
    from harnpy.lifecycle.triggers.runner import WorkerRunner

    runner = WorkerRunner(
        store, _resume_fn(args.resume_cmd), runner_id=args.runner_id, lease_ms=args.lease_ms
    )
    return runner.run(poll_ms=args.poll_ms, once=args.once)


def _when(ms: int | None) -> str:
    """A stored instant (epoch ms) as RFC 3339, ``-`` for none; one no date can show (a
    huge timeout recorded by an older harnpy, a hand-edited store) as ``<ms> ms since the
    epoch`` — never an error."""
    from harnpy.lifecycle.triggers._util import rfc3339

    if ms is None:
        return "-"
    try:
        return rfc3339(ms)
    except (ValueError, OverflowError, OSError, TypeError):
        return f"{ms} ms since the epoch (out of the date range)"


def _waiting_for(rec: Any) -> str:
    parts = []
    if rec.trigger is not None:
        t = f"trigger {rec.provider}:{','.join(rec.match_events)}"
        if rec.schedule:
            t += f" cron '{rec.schedule}' {rec.timezone}"
        parts.append(t)
    if rec.on_event:
        parts.append(f"event {rec.on_event}")
    if rec.deadline_ms is not None:
        parts.append(f"timeout {_when(rec.deadline_ms)} ({rec.on_timeout})")
    return "; ".join(parts) or "-"


def _ls(args: argparse.Namespace, store: Any) -> int:
    import json

    from harnpy.lifecycle.worker_listing import list_workers, render_table

    def warn(text: str) -> None:
        sys.stderr.write(text + "\n")

    rows = list_workers(store, include_all=args.all, warn=warn)
    if args.json:
        sys.stdout.write(json.dumps([r.to_json() for r in rows], indent=2, default=str) + "\n")
        return 0
    sys.stdout.write(render_table(rows, wide=getattr(args, "wide", False)))
    programs = _parked_programs(store)
    if programs:
        sys.stdout.write(
            f"{programs} program{'s' if programs != 1 else ''} parked on waitpoints in this "
            "store (not workers): `harnpy waitpoint ls` lists them\n"
        )
    return 0


def _parked_programs(store: Any) -> int:
    """How many main programs are parked on waitpoints in ``store`` (0 without one, or when
    it cannot be read: the hint is best effort)."""
    from harnpy.store import StoreError

    lister = getattr(store, "list_checkpoints", None)
    if lister is None:
        return 0
    try:
        return sum(1 for i in lister(("suspended",)) if i.mode == "program")
    except StoreError:
        return 0


def _due(rec: Any) -> str:
    """Why a wait is due (it fired), else when it next can be: its next cron tick or its
    deadline, whichever comes first (``-`` for neither)."""
    if rec.due_reason:
        return str(rec.due_reason)
    times = [x for x in (rec.next_fire_ms, rec.deadline_ms) if x is not None]
    return _when(min(times, default=None))


def _find(store: Any, key: str, quiet: bool = False) -> Any:
    """The wait ``key`` names: a wait id, a worker id, or a unique prefix of either (a
    worker id's with or without ``worker_``, as ``workers ls`` shows it)."""
    rec = store.find(key)
    if rec is None and key and not key.startswith("worker_"):
        rec = store.find("worker_" + key)
    if rec is None and not quiet:
        _not_found(store, key)
    return rec


def _not_found(store: Any, key: str) -> None:
    """``no wait for KEY``, or, when ``KEY`` is a program checkpoint (``prog-...``, a run
    parked on durable waitpoints, which ``harnpy workers`` does not drive), the commands
    that do."""
    if _is_program(store, key):
        sys.stderr.write(
            f"harnpy workers: error: `{key}` is a program checkpoint (a run parked on waitpoints), "
            f"not a worker: `harnpy waitpoint show {key}` shows it, `harnpy waitpoint resume "
            f"{key}` resumes it\n"
        )
    else:
        sys.stderr.write(f"harnpy workers: error: no wait for `{key}`\n")


def _show_parked(args: argparse.Namespace, store: Any) -> int | None:
    """``workers show ID`` of a worker the snapshot directory or the store's checkpoints
    hold (no wait of it in the store): its status, reason, wake conditions and snapshot; None when ``ID`` names no
    such worker (1 when it names several)."""
    import json

    from harnpy.lifecycle.worker_listing import list_workers, resolve_worker

    rows = {r.worker_id: r for r in list_workers(store, include_all=True)}
    hits = resolve_worker(args.id, rows)
    if not hits:
        return None
    if len(hits) > 1:
        sys.stderr.write(
            f"harnpy workers: error: `{args.id}` is the start of {len(hits)} worker ids; give more of it\n"
        )
        return 1
    row = rows[hits[0]]
    if args.json:
        sys.stdout.write(json.dumps(row.to_json(), indent=2, default=str) + "\n")
        return 0
    lines = [
        f"worker       {row.worker_id}",
        f"status       {row.status}",
        f"reason       {row.reason or '-'}",
        *[f"wakes on     {w}" for w in row.wake],
        f"snapshot     {row.snapshot_path or '-'}",
    ]
    if row.status == "suspended":
        lines.append(f"resume with  harnpy run --resume {_resume_name(row)} [--input TEXT]")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _is_program(store: Any, worker_id: str) -> bool:
    """Whether ``store`` holds a program checkpoint (``prog-...``, parked on durable
    waitpoints) of that id: what ``harnpy waitpoint show`` shows, not a worker."""
    from harnpy.lifecycle.checkpoint_store import PROGRAM_MODE

    try:
        info = store.checkpoint_info(worker_id) if hasattr(store, "checkpoint_info") else None
    except Exception:  # noqa: BLE001 - only a hint: a store that cannot say gives none
        return False
    return info is not None and info.mode == PROGRAM_MODE


def _resume_name(row: Any) -> str:
    """What ``harnpy run --resume`` takes for ``row`` from this shell: its short id when
    that finds it (a snapshot file, or a row of the store ``HARNPY_STORE`` names), else the
    full store reference, shell-quoted (``workers show <url>#<id>`` or ``--store`` naming
    another store than ``HARNPY_STORE``)."""
    import shlex

    from harnpy.lifecycle.checkpoint_store import is_store_ref
    from harnpy.store import configured_store_url

    ref = row.snapshot_path or ""
    if not is_store_ref(ref):
        return str(row.short_id)
    try:
        url = configured_store_url(None)  # the environment's, not this command's --store
    except Exception:  # noqa: BLE001 - an unusable HARNPY_STORE finds nothing by short id
        url = None
    if url is not None and ref == f"{url.display}#{row.worker_id}":
        return str(row.short_id)
    return shlex.quote(ref)


def _show(args: argparse.Namespace, store: Any) -> int:
    import json

    from harnpy.lifecycle.triggers._util import snapshot_status

    rec = _find(store, args.id, quiet=True)
    if rec is None:
        shown = _show_parked(args, store)
        if shown is not None:
            return shown
        _not_found(store, args.id)
        return 1
    data = rec.to_json()
    data["receipt"] = store.receipt(rec.id)
    data["snapshot_status"] = snapshot_status(rec.snapshot_path)
    if args.json:
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return 0
    lines = [
        f"wait         {rec.id} (version {rec.version})",
        f"worker       {rec.worker_id}",
        f"status       {rec.status}",
        f"waiting for  {_waiting_for(rec)}",
        f"next tick    {_when(rec.next_fire_ms)}",
        f"deadline     {_when(rec.deadline_ms)}",
        f"due          {_due(rec)}",
        f"snapshot     {rec.snapshot_path or '-'} (status {data['snapshot_status'] or '?'})",
        f"attempts     {rec.attempts}",
        f"claimed by   {rec.claimed_by or '-'}",
        f"resumed at   {_when((data['receipt'] or {}).get('began_at_ms'))}",
        f"outcome      {json.dumps(rec.outcome, default=str) if rec.outcome else '-'}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _resume(args: argparse.Namespace, store: Any) -> int:
    from harnpy.lifecycle.triggers.runner import WorkerRunner

    resume_fn = _resume_fn(args.resume_cmd, capture=True)
    rec = _find(store, args.id)
    if rec is None:
        return 1
    runner = WorkerRunner(store, resume_fn, lease_ms=args.lease_ms, log=lambda text: None)
    res = runner.process(rec.id, manual=True, manual_input=args.input)
    if res is None:
        sys.stderr.write(
            f"harnpy workers: wait {rec.id} is {rec.status} and cannot be resumed now\n"
        )
        return 1
    status = res.get("status")
    outcome = res.get("outcome") or {}
    output = outcome.get("output") or ""
    ok = status in ("resumed", "recovered", "worker_failed")
    if output:
        (sys.stdout if ok else sys.stderr).write(output if output.endswith("\n") else output + "\n")
    if ok:
        sys.stdout.write(f"{rec.id}: {status}\n")
        return 0
    if status == "refused":
        sys.stderr.write(
            f"harnpy workers: the resume of {rec.id} was refused (exit status "
            f"{outcome.get('exit_code')}); the worker is still parked and the wait stays "
            "pending: fix the cause and resume again, or close it\n"
        )
    elif status == "stale":
        sys.stderr.write(f"harnpy workers: {outcome.get('error')}; the wait was dropped\n")
    else:
        detail = (
            outcome.get("error") or res.get("error") or f"exit status {outcome.get('exit_code')}"
        )
        sys.stderr.write(f"harnpy workers: the resume of {rec.id} failed: {detail}\n")
    return 1


def _close(args: argparse.Namespace, store: Any) -> int:
    import time

    from harnpy.lifecycle.triggers._util import rewrite_snapshot_status

    rec = _find(store, args.id)
    if rec is None:
        return 1
    now = time.time_ns() // 1_000_000
    if not store.cancel(rec.id, now, "closed from the shell"):
        sys.stderr.write(f"harnpy workers: wait {rec.id} is {rec.status}; nothing to close\n")
        return 1
    updated = False
    if rec.snapshot_path:
        # only a worker still parked at this wait's park is marked cancelled
        updated = rewrite_snapshot_status(
            rec.snapshot_path,
            "cancelled",
            "worker cancelled",
            now,
            expect_status="suspended",
            expect_park_id=rec.park_id,
        )
    note = " (snapshot marked cancelled)" if updated else ""
    sys.stdout.write(f"{rec.id}: cancelled{note}\n")
    return 0


def _fire(args: argparse.Namespace, store: Any) -> int:
    """``harnpy workers fire PROVIDER KIND [--payload JSON]``: post a trigger event to the
    store (the event envelope ``trigger_fire`` builds); every pending wait whose trigger
    listens to it becomes due, and a ``harnpy worker`` resumes it with the event. Exit 0
    when some wait became due, 1 when none listens, 2 for a payload that is not JSON."""
    import json
    import time

    from harnpy.lifecycle.triggers.events import normalize_event
    from harnpy.lifecycle.triggers.spec import jsonable

    try:
        payload = json.loads(args.payload)
    except ValueError as e:
        raise UsageError(f"workers fire: --payload is not JSON: {e}") from None
    now = time.time_ns() // 1_000_000
    event = normalize_event(
        {"provider": args.provider, "kind": args.kind, "payload": payload},
        now,
        builtin="harnpy workers fire",
    )
    woken = list(store.post_trigger_event(args.provider, args.kind, jsonable(event), now, None))
    if not woken:
        sys.stderr.write(
            f"harnpy workers: no parked worker waits on a {args.provider}:{args.kind} trigger "
            f"in {store.display}\n"
        )
        return 1
    for wid in woken:
        sys.stdout.write(f"{wid}: due (trigger {args.provider}:{args.kind})\n")
    sys.stdout.write("`harnpy worker` resumes them (or `harnpy workers resume ID` now)\n")
    return 0
