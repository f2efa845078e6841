"""``harnpy waitpoint ls|show|complete|cancel|resume``: durable waitpoints from the shell.

* ``harnpy waitpoint ls [--all] [--json]`` — open waitpoints (``--all``: every status, and
  the timers of waits with a timeout), oldest first, with who waits on them.
* ``harnpy waitpoint show ID [--json]`` — one waitpoint: status, value, waiters.
* ``harnpy waitpoint complete ID [JSON] [--by NAME] [--resume] [--json]`` — complete it with
  the JSON value (default ``null``; a string is ``'"text"'``). ``--resume`` then resumes,
  in this process, the programs parked on it whose wait is over.
* ``harnpy waitpoint cancel ID [--reason TEXT] [--by NAME] [--resume] [--json]``.
* ``harnpy waitpoint resume [ID] [--watch] [--poll-ms N] [--llm-mock FILE]
  [--upgrade-code]`` — resume the parked programs whose wait is over (ID: only those parked
  on that waitpoint, or the checkpoint ``prog-...`` itself), here, one after another;
  ``--watch`` keeps polling until Ctrl-C (a minimal replica loop).

``--upgrade-code`` (``resume``, and ``complete`` / ``cancel`` with ``--resume``) continues
each resumed run on the current files when the functions on its parked stack did not
change, as ``harnpy run --resume --upgrade-code`` (a changed one is refused naming it,
``E406``, and the run stays parked); without it a run resumes on the code it started with.

The store is ``--store URL``, else ``HARNPY_STORE``. Exit status: 0 done; 1 the waitpoint
is unknown or not open any more (``complete`` / ``cancel`` lost the race), or a resumed
program failed or could not be restored; 2 usage error or a store that cannot be used
(one line naming it); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from harnpy.lifecycle.cli_args import positive_int

#: Help text of ``--upgrade-code`` on the commands that resume parked programs.
UPGRADE_HELP = (
    "resumed runs continue on the current files when the functions on their parked stack "
    "did not change (default: the code each run started with; HARNPY_UPGRADE_CODE=1)"
)


def add_subparsers(sub: Any) -> None:
    """Add ``waitpoint`` (``ls``, ``show``, ``complete``, ``cancel``, ``resume``) to the
    ``harnpy`` subcommand parser ``sub``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", metavar="URL", help="store URL (default: HARNPY_STORE)")
    wp = sub.add_parser("waitpoint", help="list, complete, cancel and resume durable waitpoints")
    wsub = wp.add_subparsers(dest="waitpoint_command")
    ls = wsub.add_parser("ls", parents=[common], help="list waitpoints")
    ls.add_argument("--all", action="store_true", help="every status, timers too")
    ls.add_argument("--json", action="store_true", help="JSON output")
    show = wsub.add_parser("show", parents=[common], help="show one waitpoint")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="JSON output")
    comp = wsub.add_parser("complete", parents=[common], help="complete a waitpoint")
    comp.add_argument("id")
    comp.add_argument("value", nargs="?", default="null", help="the value, as JSON")
    canc = wsub.add_parser("cancel", parents=[common], help="cancel a waitpoint")
    canc.add_argument("id")
    canc.add_argument("--reason", default=None, help="why (WaitpointCancelledError.reason)")
    for p in (comp, canc):
        p.add_argument("--by", default=None, help="who completes / cancels it")
        p.add_argument("--resume", action="store_true", help="then resume its waiters here")
        p.add_argument("--json", action="store_true", help="JSON output")
    res = wsub.add_parser("resume", parents=[common], help="resume parked programs now")
    res.add_argument("id", nargs="?", default=None, help="a waitpoint or checkpoint id")
    res.add_argument("--watch", action="store_true", help="keep polling until Ctrl-C")
    res.add_argument("--poll-ms", type=positive_int, default=500, help="poll interval with --watch")
    for p in (comp, canc, res):
        p.add_argument("--llm-mock", metavar="FILE", help="mock LLM replies for resumed runs")
        p.add_argument("--upgrade-code", action="store_true", help=UPGRADE_HELP)
    wp.set_defaults(handler=main)


def _err(text: str) -> None:
    sys.stderr.write(text.rstrip("\n") + "\n")


def main(args: argparse.Namespace) -> int:
    """Run ``harnpy waitpoint ...``; returns the exit status (module docstring)."""
    from harnpy.runtime.errors import HarnInterrupt
    from harnpy.store import StoreError, configured_store_url

    cmd = getattr(args, "waitpoint_command", None)
    if cmd is None:
        _err("harnpy waitpoint: error: give ls, show ID, complete ID JSON, cancel ID or resume")
        return 2
    ref_id = getattr(args, "id", None)
    if isinstance(ref_id, str) and "#" in ref_id and args.store is None:
        # the checkpoint reference a park prints: `<store url>#<checkpoint id>`
        args.store, args.id = ref_id.rsplit("#", 1)
    try:
        url = configured_store_url(args.store)
    except StoreError as e:
        _err(f"harnpy waitpoint {cmd}: error: {e.message}")
        return 2
    if url is None or url.kind == "directory":
        _err(
            f"harnpy waitpoint {cmd}: error: no store named: give --store URL (sqlite:///PATH, "
            "postgresql://...) or set HARNPY_STORE (durable waitpoints live in a store)"
        )
        return 2
    value: Any = None
    if cmd == "complete":
        try:
            value = json.loads(args.value)
        except ValueError as e:
            _err(
                f"harnpy waitpoint complete: error: the value is not JSON ({e}); quote a string "
                "as '\"text\"'"
            )
            return 2
    if getattr(args, "upgrade_code", False):
        if cmd in ("complete", "cancel") and not args.resume:
            _err(f"harnpy waitpoint {cmd}: error: --upgrade-code applies with --resume only")
            return 2
        from harnpy.runtime.resume import opt_into_upgrade

        opt_into_upgrade()
    if url.kind == "sqlite" and not os.path.exists(url.target):
        return _no_store(args, cmd, url.display)
    try:
        from harnpy.lifecycle.waitpoints.stores import shared_store

        store = shared_store(url)
        if cmd == "ls":
            return _ls(store, args)
        if cmd == "show":
            return _show(store, args)
        if cmd in ("complete", "cancel"):
            return _finish(store, args, cmd, value)
        return _resume(store, args)
    except StoreError as e:
        _err(f"harnpy waitpoint {cmd}: error: {e.message}")
        return 2
    except KeyboardInterrupt:
        _err("harnpy: interrupted")
        return 130
    except HarnInterrupt:
        # Ctrl-C / SIGTERM while a resumed program ran here: its finally blocks ran, its
        # park and claim were put back
        _err("harnpy: interrupted")
        return 130


def _no_store(args: argparse.Namespace, cmd: str, display: str) -> int:
    """``harnpy waitpoint CMD`` on an SQLite store file that does not exist (a misspelt
    path, or nothing was ever stored): said so, and the file is not created. ``ls`` and
    ``resume`` without an id find nothing (0); a named waitpoint is unknown (1)."""
    where = f"no store at {display} (check --store / HARNPY_STORE)"
    if cmd == "ls":
        if args.json:
            sys.stdout.write("[]\n")
        _err(f"harnpy waitpoint ls: no waitpoints: {where}")
        return 0
    if cmd == "resume" and args.id is None:
        _err(f"harnpy waitpoint resume: nothing was resumed: {where}")
        return 0
    what = "waitpoint or parked program" if cmd in ("show", "resume") else "waitpoint"
    _err(f"harnpy waitpoint {cmd}: error: no {what} {args.id}: {where}")
    return 1


def _waiter_states(store: Any, rec: Any) -> list[tuple[str, str | None, str]]:
    """``(worker id, park id, state)`` of each program registered as a waiter of ``rec``:
    ``waiting`` while its checkpoint is still parked at that park (or being resumed from
    it), else what became of it (``completed``, ``failed``, ``parked elsewhere``, ``gone``...):
    a program that finished or moved on stays registered, but no longer waits."""
    out: list[tuple[str, str | None, str]] = []
    for w, p in rec.waiters:
        try:
            info = store.checkpoint_info(w)
        except Exception:  # noqa: BLE001 - a damaged row: shown, not fatal to the listing
            out.append((w, p, "unreadable"))
            continue
        if info is None:
            state = "gone"
        elif info.status == "running":
            state = "waiting"  # its resume runs now (the park shown is the one it claimed)
        elif info.status == "suspended":
            state = "waiting" if p is None or info.park_id == p else "parked elsewhere"
        else:
            state = info.status
        out.append((w, p, state))
    return out


def _row(rec: Any, store: Any = None) -> dict[str, Any]:
    from harnpy.lifecycle.waitpoints.model import iso_ms

    d = rec.to_json()
    d["created_at"] = iso_ms(rec.created_at_ms)
    d["completed_at"] = iso_ms(rec.completed_at_ms)
    d["kind"] = (rec.metadata or {}).get("kind") or "waitpoint"
    if store is None:
        d["waiters"] = [{"worker_id": w, "park_id": p} for w, p in rec.waiters]
    else:
        d["waiters"] = [
            {"worker_id": w, "park_id": p, "state": st} for w, p, st in _waiter_states(store, rec)
        ]
    return d


def _ls(store: Any, args: argparse.Namespace) -> int:
    recs = store.list_waitpoints(None if args.all else ("open",))
    if not args.all:
        recs = [r for r in recs if (r.metadata or {}).get("kind") != "timeout"]
    if args.json:
        sys.stdout.write(json.dumps([_row(r, store) for r in recs], ensure_ascii=False) + "\n")
        return 0
    if not recs:
        sys.stdout.write("no open waitpoints\n" if not args.all else "no waitpoints\n")
        return 0
    lines = [("ID", "STATUS", "KIND", "CREATED", "WAITERS")]
    for r in recs:
        d = _row(r, store)
        # who waits now (a program that finished or parked elsewhere no longer does)
        waiters = ",".join(w["worker_id"] for w in d["waiters"] if w["state"] == "waiting")
        lines.append((r.id, r.status, d["kind"], d["created_at"] or "-", waiters or "-"))
    widths = [max(len(x[i]) for x in lines) for i in range(4)]
    for ln in lines:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(ln[:4], widths, strict=True)))
        sys.stdout.write("  " + ln[4] + "\n")
    return 0


def _show(store: Any, args: argparse.Namespace) -> int:
    from harnpy.lifecycle.waitpoints.durable import MODE

    rec = store.get_waitpoint(args.id)
    if rec is None:
        info = store.checkpoint_info(args.id)
        if info is not None and info.mode in (MODE, None):
            return _show_program(store, args, info)
        _err(
            f"harnpy waitpoint show: error: no waitpoint or parked program {args.id} in "
            f"{store.display}"
        )
        return 1
    d = _row(rec, store)
    if args.json:
        sys.stdout.write(json.dumps(d, ensure_ascii=False) + "\n")
        return 0
    out = [
        f"id:           {rec.id}",
        f"status:       {rec.status}",
        f"kind:         {d['kind']}",
        f"created_at:   {d['created_at']}",
    ]
    if rec.completed_at_ms is not None:
        out.append(f"finished_at:  {d['completed_at']} by {rec.completed_by or '-'}")
    if rec.status == "completed":
        out.append(f"value:        {json.dumps(rec.value, ensure_ascii=False)}")
    if rec.error is not None and rec.status != "completed":
        out.append(f"error:        {json.dumps(rec.error, ensure_ascii=False)}")
    if rec.submission_key:
        out.append(f"key:          {rec.submission_key}")
    if rec.run_id:
        out.append(f"run:          {rec.run_id}")
    for w in d["waiters"]:
        state = "" if w["state"] == "waiting" else f"; no longer waits: {w['state']}"
        out.append(f"waiter:       {w['worker_id']} (park {w['park_id'] or '-'}{state})")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _show_program(store: Any, args: argparse.Namespace, info: Any) -> int:
    """``waitpoint show prog-...``: a program checkpoint of the store (parked on
    waitpoints, being resumed, or finished): its status, the waitpoints it waits on and
    how to resume it."""
    from harnpy.lifecycle.waitpoints.durable import checkpoint_ready
    from harnpy.lifecycle.waitpoints.model import iso_ms

    # the waitpoints of its current park (not those of waits it is past)
    wps = [
        w
        for w in store.waitpoints_of(info.worker_id)
        if (info.worker_id, info.park_id) in w.waiters
    ]
    if args.json:
        d = info.to_json()
        d["updated_at"] = iso_ms(info.updated_at_ms)
        d["waitpoints"] = [
            {"id": w.id, "status": w.status, "kind": (w.metadata or {}).get("kind") or "waitpoint"}
            for w in wps
        ]
        sys.stdout.write(json.dumps(d, ensure_ascii=False) + "\n")
        return 0
    out = [
        f"program:      {info.worker_id}",
        f"status:       {info.status}",
        f"updated_at:   {iso_ms(info.updated_at_ms)} (version {info.version})",
        f"checkpoint:   {info.ref}",
    ]
    if info.status == "running":
        until = info.claim_expires_at_ms
        out.append(
            f"claim:        being resumed by {info.claim_holder or '-'}"
            + (f" (lease until {iso_ms(until)})" if until is not None else "")
        )
    if info.status in ("suspended", "running"):
        for w in wps:
            if (w.metadata or {}).get("kind") == "timeout":
                due = iso_ms(w.timeout_at_ms) if w.timeout_at_ms is not None else "-"
                out.append(f"times out:    {due} (timer {w.id}, {w.status})")
            else:
                out.append(f"waits on:     {w.id} ({w.status})")
    if info.status == "suspended":
        when = "its wait is over" if checkpoint_ready(store, info) else "once its wait is over"
        out.append(f"resume with:  harnpy waitpoint resume {info.worker_id} ({when})")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _llm(args: argparse.Namespace) -> dict[str, Any] | None:
    mock = getattr(args, "llm_mock", None)
    return {"mock_file": mock, "record_file": None} if mock else None


def _report(results: list[Any]) -> int:
    code = 0
    for r in results:
        if r.status in ("completed", "parked"):
            what = "completed" if r.status == "completed" else "parked again"
            _err(f"harnpy: resumed {r.worker_id}: {what}")
        else:
            _err(
                f"harnpy: resumed {r.worker_id}: {r.status}"
                + (f": {r.message}" if r.message else "")
            )
            code = 1
    return code


def _nothing_resumed(store: Any, key: str | None) -> None:
    """After a pass that resumed nothing: one line, and one per parked program that is
    still there, saying why it was not resumed (its wait is not over, another process holds
    its claim, its row is damaged...)."""
    from harnpy.lifecycle.waitpoints.durable import MODE, checkpoint_ready
    from harnpy.lifecycle.waitpoints.model import iso_ms

    rec = store.get_waitpoint(key) if key is not None else None
    if rec is not None:
        wids = [w for w, _ in rec.waiters]
    elif key is not None:
        wids = [key]
    else:
        wids = [i.worker_id for i in store.list_checkpoints() if i.mode in (MODE, None)]
    lines: list[str] = []
    for wid in wids:
        info = store.checkpoint_info(wid)
        if info is None:
            continue
        if info.status in ("completed", "failed", "cancelled"):
            if key is not None and rec is None:  # the program named: say it is done
                lines.append(f"  {wid}: {info.status} already; nothing to resume")
            continue
        if info.status == "running":
            until = info.claim_expires_at_ms
            when = f" (its lease runs until {iso_ms(until)})" if until is not None else ""
            lines.append(f"  {wid}: being resumed by {info.claim_holder}{when}")
        elif info.status == "corrupt":
            lines.append(f"  {wid}: {info.reason}")
        elif info.status != "suspended":
            lines.append(f"  {wid}: status {info.status!r} is not a park; left as it is")
        elif not checkpoint_ready(store, info):
            wake = "; ".join(info.wake) or "its waitpoints"
            lines.append(f"  {wid}: its wait is not over (waits for {wake})")
    _err("harnpy waitpoint resume: nothing was resumed" + (":" if lines else ""))
    for line in lines:
        _err(line)


def _finish(store: Any, args: argparse.Namespace, cmd: str, value: Any) -> int:
    from harnpy.lifecycle.waitpoints.durable import resume_waiters
    from harnpy.store import TimerWaitpoint

    try:
        if cmd == "complete":
            won = store.complete_waitpoint(args.id, value, by=args.by)
        else:
            won = store.cancel_waitpoint(args.id, error={"reason": args.reason}, by=args.by)
    except TimerWaitpoint as e:
        _err(f"harnpy waitpoint {cmd}: error: {e.message}")
        return 1
    rec = store.get_waitpoint(args.id)
    if rec is None:
        _err(f"harnpy waitpoint {cmd}: error: no waitpoint {args.id} in {store.display}")
        return 1
    if args.json:
        d = _row(rec)
        d["won"] = bool(won)
        sys.stdout.write(json.dumps(d, ensure_ascii=False) + "\n")
    code = 0
    if not won:
        _err(f"harnpy waitpoint {cmd}: error: {args.id} is {rec.status} already; nothing changed")
        code = 1
    elif not args.json:
        sys.stdout.write(f"{args.id} {rec.status}\n")
    if args.resume:
        sys.stdout.flush()
        code = max(code, _report(resume_waiters(store, args.id, llm_options=_llm(args))))
    return code


def _resume(store: Any, args: argparse.Namespace) -> int:
    from harnpy.lifecycle.waitpoints import durable

    def one_pass() -> list[Any]:
        if args.id is None:
            return durable.resume_ready(store, llm_options=_llm(args))
        durable.time_out_due(store)
        if store.get_waitpoint(args.id) is not None:
            return durable.resume_waiters(store, args.id, llm_options=_llm(args))
        if store.checkpoint_info(args.id) is None:
            raise LookupError(args.id)
        r = durable.resume_checkpoint(store, args.id, llm_options=_llm(args))
        return [r] if r is not None else []

    code = 0
    try:
        while True:
            results = one_pass()
            sys.stdout.flush()
            code = max(code, _report(results))
            if not args.watch:
                if not results:
                    _nothing_resumed(store, args.id)
                break
            time.sleep(args.poll_ms / 1000.0)
    except LookupError:
        _err(
            f"harnpy waitpoint resume: error: no waitpoint or checkpoint {args.id} in {store.display}"
        )
        return 1
    return code
