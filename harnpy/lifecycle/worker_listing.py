"""``harnpy workers ls``: the parked workers, from the store's waits, the store's worker
checkpoints and the snapshot directory (issue 14 point 3, issue 10 points 1 and 6).

A row is one worker: its durable wait when the store has one (the wait's status, what it
waits for, when it is due), merged with its snapshot file when the snapshot directory has
one (the park's reason and wake conditions). Without a store every row comes from the
snapshot directory (``HARN_WORKER_STATE_DIR``, ``.harn/workers``, or the per-user fallback
directory of this working directory). A snapshot that says ``running`` with an owner known
to be gone (a resume killed mid-run, whose park is kept beside it) is listed as
``suspended``: the next resume takes the park back.

The text table fits 100 columns (ids shortened to their shortest unique prefix, at least 8
characters; long cells cut with ``…``); ``--wide`` shows everything; ``--json`` is one
object per row with the wait record's fields (``id``, ``worker_id``, ``status``,
``deadline_ms``...; ``id`` is the worker id when there is no wait) plus ``reason``,
``wake``, ``snapshot_path``, ``snapshot_status``, ``short_id``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable
from typing import Any

import attrs

__all__ = [
    "ParkedWorker",
    "list_workers",
    "render_table",
    "resolve_worker",
    "snapshot_dirs",
    "wake_conditions",
]

#: Width of the text table.
TABLE_WIDTH = 100


@attrs.define
class ParkedWorker:
    """One row of ``harnpy workers ls``.

    ``status`` is the wait's status when there is an active wait, else the snapshot's;
    ``wake`` one line per wake condition; ``due`` when the wait is due (RFC 3339, or the
    cause that fired); ``wait`` the wait record's JSON (None without one)."""

    worker_id: str
    status: str
    reason: str = ""
    wake: list[str] = attrs.field(factory=list)
    due: str = "-"
    snapshot_path: str | None = None
    snapshot_status: str | None = None
    wait: dict[str, Any] | None = None
    short_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object (module docstring)."""
        base: dict[str, Any] = dict(self.wait) if self.wait is not None else {"id": self.worker_id}
        base.update(
            {
                "worker_id": self.worker_id,
                "status": self.status,
                "reason": self.reason,
                "wake": list(self.wake),
                "due": self.due,
                "snapshot_path": self.snapshot_path,
                "snapshot_status": self.snapshot_status,
                "short_id": self.short_id,
            }
        )
        return base


def snapshot_dirs(cwd: str | None = None) -> list[str]:
    """The snapshot directories of this working directory that exist: the state directory
    (``HARN_WORKER_STATE_DIR`` or ``.harn/workers``) and its per-user fallback under the
    temporary directory (:func:`harnpy.lifecycle.checkpoint_store.snapshot_dir`)."""
    from harnpy.lifecycle.workers import state_dir

    base = cwd or os.getcwd()
    preferred = os.path.join(base, state_dir())
    tag = hashlib.sha256(os.path.abspath(state_dir()).encode()).hexdigest()[:12]
    fallback = os.path.join(tempfile.gettempdir(), f"harnpy-{os.getuid()}", "workers", tag)
    out = []
    for d in (preferred, fallback):
        if os.path.isdir(d) and d not in out:
            out.append(d)
    return out


def _when(ms: Any, exact: bool = False) -> str:
    """An instant as RFC 3339 (to the second unless ``exact``), ``-`` for none."""
    from harnpy.lifecycle.triggers._util import rfc3339

    if type(ms) is not int:
        return "-"
    try:
        return rfc3339(ms if exact else ms - ms % 1000)
    except (ValueError, OverflowError, OSError):
        return f"{ms} ms since the epoch (out of the date range)"


def wake_conditions(conditions: Any, resume_wait: Any = None, durable: bool = False) -> list[str]:
    """What wakes a park, one line per condition, from its ``ResumeConditions``
    (``suspension.conditions``) and its registered wait (``resume_wait``: the absolute
    deadline). A park with no conditions is resumed by hand; a trigger or timeout that no
    store records is marked ``(not durable: nothing wakes it after this process)``."""
    c = conditions if isinstance(conditions, dict) else {}
    out: list[str] = []
    trig = c.get("trigger")
    if isinstance(trig, dict):
        out.append(f"trigger {trig.get('provider', '?')}:{trig.get('kind', '?')}")
    if isinstance(c.get("on_event"), str):
        out.append(f"event {c['on_event']}")
    timeout = c.get("timeout")
    if isinstance(timeout, dict):
        rw = resume_wait if isinstance(resume_wait, dict) else {}
        at = _when(rw.get("deadline_ms")) if rw.get("deadline_ms") is not None else None
        what = at or f"after {timeout.get('duration_minutes', '?')} min"
        action = timeout.get("on_timeout") or "resume_with_summary"
        out.append(f"timeout {what}" + ("" if action == "resume_with_summary" else f" ({action})"))
    if not out:
        return ["resume by hand (harnpy run --resume)"]
    if not durable:
        out.append("not durable: nothing wakes it once its process exits")
    return out


def _snapshot_rows(
    dirs: Iterable[str], include_all: bool, warn: Callable[[str], None]
) -> list[ParkedWorker]:
    from harnpy.lifecycle.checkpoint_store import _loads
    from harnpy.lifecycle.claims import owner_alive, owner_gone, park_copy_path
    from harnpy.security import read_capped

    rows = []
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".json") or name.startswith("."):
                continue
            path = os.path.join(d, name)
            try:
                doc = _loads(read_capped(path, 4 * 1024 * 1024 + 1))
            except (OSError, ValueError) as e:
                warn(f"harnpy workers: skipped {path}: {e}")
                continue
            if not isinstance(doc, dict) or doc.get("_type") != "worker_snapshot":
                continue
            wid = doc.get("id")
            if type(wid) is not str:
                continue
            status = str(doc.get("status") or "interrupted")
            raw_sus = doc.get("suspension")
            sus: dict[str, Any] = raw_sus if isinstance(raw_sus, dict) else {}
            if status == "running" and owner_gone(doc) and os.path.isfile(park_copy_path(path)):
                try:
                    park = _loads(read_capped(park_copy_path(path), 4 * 1024 * 1024 + 1))
                except (OSError, ValueError):
                    park = None
                if isinstance(park, dict) and park.get("status") == "suspended":
                    status, doc = "suspended", park
                    raw_sus = park.get("suspension")
                    sus = raw_sus if isinstance(raw_sus, dict) else {}
            elif status == "running" and not owner_alive(doc):
                status = "interrupted"
            if status != "suspended" and not include_all:
                continue
            rw = doc.get("resume_wait")
            durable = isinstance(rw, dict) and bool(rw.get("durable"))
            rows.append(
                ParkedWorker(
                    worker_id=wid,
                    status=status,
                    reason=str(sus.get("reason") or ""),
                    wake=wake_conditions(sus.get("conditions"), rw, durable)
                    if status == "suspended"
                    else [],
                    snapshot_path=path,
                    snapshot_status=status,
                )
            )
    return rows


def _stored_rows(store: Any, include_all: bool, warn: Callable[[str], None]) -> list[ParkedWorker]:
    """The agent workers whose checkpoints are rows of SQL ``store`` (a worker parked with
    ``--store`` / ``HARNPY_STORE``): ``suspended`` ones, every one with ``include_all``. A
    row a live claim holds shows ``running``; one whose claim's lease ran out is
    ``suspended`` again (its next resume takes the park back)."""
    from harnpy.lifecycle.checkpoint_store import PROGRAM_MODE
    from harnpy.store import StoreError

    lister = getattr(store, "list_checkpoints", None)
    if lister is None:
        return []
    try:
        infos = lister(None)
    except StoreError as e:
        warn(f"harnpy workers: cannot list the checkpoints of {store.display}: {e.message}")
        return []
    for i in infos:
        if i.status == "corrupt":  # skipped with a warning, as a corrupt record is
            warn(f"harnpy workers: warning: checkpoint {i.worker_id}: {i.reason}")
    if not include_all:
        infos = [i for i in infos if i.status == "suspended"]
    return [
        ParkedWorker(
            worker_id=i.worker_id,
            status=i.status,
            reason=i.reason or "",
            wake=list(i.wake) if i.status == "suspended" else [],
            snapshot_path=i.ref,
            snapshot_status=i.status,
        )
        for i in infos
        if i.mode != PROGRAM_MODE  # a parked program is `harnpy waitpoint ls`'s
    ]


def _wait_row(rec: Any) -> ParkedWorker:
    from harnpy.lifecycle.triggers._util import snapshot_status

    wake: list[str] = []
    if rec.trigger is not None:
        t = f"trigger {rec.provider}:{','.join(rec.match_events) or rec.kind or '?'}"
        if rec.schedule:
            t += f" cron '{rec.schedule}' {rec.timezone}"
        wake.append(t)
    if rec.on_event:
        wake.append(f"event {rec.on_event}")
    if rec.deadline_ms is not None:
        action = rec.on_timeout or "resume_with_summary"
        extra = "" if action == "resume_with_summary" else f" ({action})"
        wake.append(f"timeout {_when(rec.deadline_ms)}{extra}")
    if rec.due_reason:
        due = str(rec.due_reason)
    else:
        times = [x for x in (rec.next_fire_ms, rec.deadline_ms) if x is not None]
        due = _when(min(times), exact=True) if times else "-"
    path = rec.snapshot_path or None
    return ParkedWorker(
        worker_id=rec.worker_id,
        status=rec.status,
        wake=wake or ["-"],
        due=due,
        snapshot_path=rec.snapshot_path,
        snapshot_status=snapshot_status(path) if path else None,
        wait=rec.to_json(),
    )


def list_workers(
    store: Any,
    *,
    include_all: bool = False,
    dirs: Iterable[str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[ParkedWorker]:
    """The rows of ``harnpy workers ls`` (module docstring): the store's active waits (all
    with ``include_all``), then the parked workers of the snapshot directories that have no
    such wait (every worker with ``include_all``). ``store`` may be None."""
    from harnpy.lifecycle.triggers.store import ACTIVE_STATUSES

    say = warn or (lambda text: None)
    rows: list[ParkedWorker] = []
    by_worker: dict[str, ParkedWorker] = {}
    if store is not None:
        for rec in store.list_waits(None if include_all else ACTIVE_STATUSES):
            row = _wait_row(rec)
            rows.append(row)
            by_worker.setdefault(rec.worker_id, row)
    found = _snapshot_rows(snapshot_dirs() if dirs is None else dirs, include_all, say)
    if store is not None:
        found = [*_stored_rows(store, include_all, say), *found]
    for snap in found:
        known = by_worker.get(snap.worker_id)
        if known is not None:
            known.reason = known.reason or snap.reason
            known.snapshot_status = snap.snapshot_status
            continue
        rows.append(snap)
    _shorten(rows)
    return rows


def _core(worker_id: str) -> str:
    return worker_id[len("worker_") :] if worker_id.startswith("worker_") else worker_id


def _shorten(rows: list[ParkedWorker], floor: int = 8) -> None:
    """Give each row the shortest prefix of its id (without ``worker_``), at least
    ``floor`` characters, that no other listed worker shares."""
    cores = sorted({_core(r.worker_id) for r in rows})
    for r in rows:
        core = _core(r.worker_id)
        n = min(floor, len(core))
        while n < len(core) and any(o != core and o.startswith(core[:n]) for o in cores):
            n += 1
        r.short_id = core[:n]


def resolve_worker(
    key: str, candidates: Iterable[str], parked: Callable[[str], bool] | None = None
) -> list[str]:
    """The worker ids among ``candidates`` that ``key`` names: the id itself (with or
    without its ``worker_`` prefix), or every id that starts with ``key``. When several
    match and ``parked`` (id -> whether that worker is parked) picks out exactly one of
    them, that one: ``workers ls`` shortens ids among the parked workers it lists, so a
    prefix it showed names the parked worker even when finished workers share it."""
    ids = sorted(set(candidates))
    for exact in (key, f"worker_{key}"):
        if exact in ids:
            return [exact]
    hits = [i for i in ids if i.startswith(key) or _core(i).startswith(key)]
    if len(hits) > 1 and parked is not None:
        only = [i for i in hits if parked(i)]
        if len(only) == 1:
            return only
    return hits


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def render_table(rows: list[ParkedWorker], *, wide: bool = False) -> str:
    """The text listing (module docstring); ``no parked workers`` when empty."""
    if not rows:
        return "no parked workers\n"
    if wide:
        head = ["WORKER", "STATUS", "DUE", "WAKE", "REASON", "WAIT", "SNAPSHOT"]
        body = [
            [
                r.worker_id,
                r.status,
                r.due,
                "; ".join(r.wake),
                r.reason or "-",
                str((r.wait or {}).get("id") or "-"),
                r.snapshot_path or "-",
            ]
            for r in rows
        ]
        widths = [max(len(head[i]), *(len(b[i]) for b in body)) for i in range(len(head) - 1)]
        lines = [
            "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=False)) + "  " + head[-1]
        ]
        for b in body:
            lines.append(
                "  ".join(c.ljust(w) for c, w in zip(b, widths, strict=False)) + "  " + b[-1]
            )
        return "\n".join(x.rstrip() for x in lines) + "\n"
    id_w = max(6, *(len(r.short_id) for r in rows))
    st_w = max(6, *(len(r.status) for r in rows))
    rest = TABLE_WIDTH - id_w - st_w - 3 * 2
    wake_w = max(20, rest * 3 // 5)
    reason_w = max(10, rest - wake_w)
    lines = [f"{'WORKER'.ljust(id_w)}  {'STATUS'.ljust(st_w)}  {'WAKE'.ljust(wake_w)}  REASON"]
    for r in rows:
        wake = "; ".join(r.wake)
        lines.append(
            f"{r.short_id.ljust(id_w)}  {r.status.ljust(st_w)}  {_cut(wake, wake_w).ljust(wake_w)}"
            f"  {_cut(r.reason or '-', reason_w)}".rstrip()
        )
    return "\n".join(lines) + "\n"
