"""``harnpy run --resume SNAPSHOT``: continue a program from a snapshot file.

Two kinds of snapshot are accepted:

* a program snapshot (``_type: "harnpy_snapshot"``, written by ``__snapshot_exit``): read
  and validate the document (never modifying it) -> locate and hash-check every module's
  source -> compile the modules without running them -> restore the heap, frames and module
  globals -> run the restored thread to its end. Any failure before the thread runs leaves
  the snapshot file untouched and exits with status 2.
* a worker snapshot (``_type: "worker_snapshot"`` / ``"daemon_snapshot"``, written when an
  agent worker or a root ``agent_loop`` parks; lifecycle.md 9.1): the file is claimed
  (``HARN-SUS-006`` when another process resumed it first), the worker's frames are
  restored, it is resumed warm (initiator ``operator`` unless ``HARNPY_RESUME_INITIATOR``
  says otherwise; ``HARNPY_RESUME_INPUT`` / ``HARNPY_RESUME_CONTINUE_TRANSCRIPT`` /
  ``HARNPY_RESUME_REQUEST`` come from ``harnpy worker``) and run until it settles. Exit
  status: 0 completed (or, for a retriggerable worker, awaiting its next input), 1 failed (or
  the resume was refused), 3 parked again. Its final value
  is the worker summary; without ``--json`` the completed loop's final text
  (``result.summary``) is printed on stdout and a status line on stderr.

Which kind a file is: :func:`_snapshot_kind` (only a file whose first bytes say it is a
program snapshot takes the program path; an empty, truncated or other file is a worker
snapshot that cannot be loaded, ``HARN-SUS-004``; something that is not a regular file is
E404). Both paths read at most 4 MiB + 1 bytes (type and size checked first) and check the
document's seal before decoding anything (dev/impl.md, "Snapshot trust"). A worker resume
that fails after the claim puts the claimed bytes back (an unexpected exception while
restoring is ``HARN-SUS-004``; one while the worker runs is an internal error, E999, exit
status 1).

``SNAPSHOT`` is a path (absolute, or relative to the working directory), a bare worker id
(``<state dir>/<id>.json``) or a unique prefix of one (with or without ``worker_``, as
``harnpy workers ls`` shows it). ``--input TEXT`` is the worker's resume input (what
``resume_agent(h, TEXT)`` gives; it overrides ``HARNPY_RESUME_INPUT``). With ``--json`` stdout is NDJSON: one envelope
``{"schemaVersion": 1, "command": "run", "data": {"seq", "event_type", ...}}`` per line —
``stdout`` / ``stderr`` events (``payload``; dropped with ``--quiet``), the run events the
agent loop and the hook layer report while the run goes on (``tool_call``, ``tool_result``,
``hook``; kept with ``--quiet``; :meth:`JsonEvents.run_event` is the runtime's run-event
sink), then ``result`` (``value``, ``exit_code``) or ``error`` (``error: {code, message}``).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

from harnpy.clitext import write_err
from harnpy.runtime.resume import load_for_resume
from harnpy.runtime.snapshot import SnapshotError


class JsonEvents:
    """NDJSON event writer of ``run --json`` (lifecycle.md 9.1): one envelope per line,
    ``seq`` from 1."""

    def __init__(self, quiet: bool = False) -> None:
        self.seq = 0
        self.quiet = quiet

    def emit(self, event_type: str, **data: Any) -> None:
        """Write one envelope ``{schemaVersion: 1, command: "run", data: {seq, event_type,
        ...data}}``."""
        self.seq += 1
        env = {
            "schemaVersion": 1,
            "command": "run",
            "data": {"seq": self.seq, "event_type": event_type, **data},
        }
        sys.stdout.write(json.dumps(env, ensure_ascii=False) + "\n")

    def stdout(self, text: str) -> None:
        """A ``stdout`` event (``payload``), unless quiet."""
        if not self.quiet and text:
            self.emit("stdout", payload=text)

    def stderr(self, text: str) -> None:
        """A ``stderr`` event (``payload``), unless quiet."""
        if not self.quiet and text:
            self.emit("stderr", payload=text)

    def run_event(self, event_type: str, data: dict[str, Any]) -> None:
        """The run-event sink (:data:`harnpy.lifecycle.services.RunEventSink`): one
        ``tool_call`` / ``tool_result`` / ``hook`` event whose Harn values are written as
        JSON data (never dropped by ``--quiet``)."""
        from harnpy.stdlib.jsonlib import to_json_data

        self.emit(event_type, **to_json_data(data))

    def attach(self, runtime: Any) -> None:
        """Install :meth:`run_event` as ``runtime``'s run-event sink."""
        from harnpy.lifecycle.services import services

        services(runtime).run_events = self.run_event


def resolve_target(target: str, store_option: str | None = None) -> str:
    """The checkpoint ``--resume`` names: a store reference ``<url>#<id>`` as given, an
    existing path (absolute or relative to the working directory), else a bare worker id
    (or a unique prefix of one) under the worker state dir or, with a store configured
    (``--store`` / ``HARNPY_STORE``), in that store. Of several workers a prefix matches,
    the only parked one is taken.

    Raises:
        AmbiguousTarget: the prefix names several workers in the configured store or the
            snapshot directories (and not exactly one parked one); stderr says so.
    """
    from harnpy.lifecycle.checkpoint_store import is_store_ref, stored_worker_ref

    if is_store_ref(target) or os.path.exists(target):
        return target
    if "/" not in target and not target.endswith(".json"):
        from harnpy.lifecycle.workers import state_dir

        cand = os.path.join(state_dir(), f"{target}.json")
        if os.path.exists(cand):
            return cand
        several: list[str] = []
        try:
            stored = stored_worker_ref(target, _StoreOption(store_option), several)
        except Exception as e:  # noqa: BLE001 - StoreError: say why, look at files too
            write_err(f"harnpy run --resume: warning: {e}\n")
            stored = None
        if stored is not None:
            return stored
        if several:
            _ambiguous(target, several)
        found = _by_prefix(target)
        if found is not None:
            return found
    return target


class _StoreOption:
    """Stands in for a runtime when only the command's ``--store`` is known."""

    def __init__(self, store_option: str | None) -> None:
        self.store_option = store_option


def _by_prefix(prefix: str) -> str | None:
    """The one worker snapshot of the snapshot directories whose id starts with ``prefix``
    (with or without ``worker_``), or the one parked worker among several; None for no
    match; :class:`AmbiguousTarget` (after a message) for several."""
    from harnpy.lifecycle.worker_listing import resolve_worker, snapshot_dirs

    files: dict[str, str] = {}
    for d in snapshot_dirs():
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                files.setdefault(name[: -len(".json")], os.path.join(d, name))
    from harnpy.lifecycle.triggers._util import snapshot_status

    hits = resolve_worker(prefix, files, lambda h: snapshot_status(files[h]) == "suspended")
    if len(hits) > 1:
        _ambiguous(prefix, hits)
    return files[hits[0]] if hits else None


def _ambiguous(prefix: str, hits: list[str]) -> None:
    """Say that ``prefix`` is the start of the worker ids ``hits`` and raise
    :class:`AmbiguousTarget`."""
    write_err(
        f"harnpy run --resume: `{prefix}` is the start of {len(hits)} worker ids "
        f"({', '.join(hits[:3])}{', ...' if len(hits) > 3 else ''}); give more of it\n"
    )
    raise AmbiguousTarget(prefix)


class AmbiguousTarget(Exception):
    """A ``--resume`` prefix names several workers (already said on stderr)."""


#: How many bytes of a snapshot file decide which resume path it takes.
_HEAD_BYTES = 512


def _snapshot_kind(path: str) -> str | None:
    """Which resume path a snapshot file takes: ``"program"`` for a program snapshot (its
    first bytes name ``_type: "harnpy_snapshot"``; a sealed document's ``_type`` follows its
    seal), ``"worker"`` for any other regular file — a worker or daemon snapshot, and also a
    file that is empty, truncated, not JSON or of another ``_type`` (refused with
    ``HARN-SUS-004``, exit status 1, like any unloadable worker snapshot) — and None when the
    file cannot be read or is not a regular file (the program path reports it, exit status 2).

    Only the first :data:`_HEAD_BYTES` bytes are read (opened without blocking, type checked
    first) and nothing is decoded: both paths check the seal before they parse anything, so
    the head only chooses which path refuses a bad file."""
    import stat

    from harnpy.lifecycle.checkpoint_store import checkpoint_for, is_store_ref
    from harnpy.lifecycle.waitpoints.durable import MODE as PROGRAM_MODE

    if is_store_ref(path):
        try:
            store, key = checkpoint_for(path)
            info = store.checkpoint_info(key)
        except Exception:  # noqa: BLE001 - StoreError: the worker path reports it
            return "worker"
        # only a row marked as a parked program is one: a damaged row (status `corrupt`,
        # no mode) goes the worker way, which names the damage
        if info is not None and info.mode == PROGRAM_MODE:
            return "stored_program"
        return "worker"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, _HEAD_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = head.decode("utf-8", "replace").replace(" ", "")
    return "program" if '"_type":"harnpy_snapshot"' in text else "worker"


def resume_main(args: Any) -> int:
    """CLI handler of ``run --resume``; returns the exit code."""
    from harnpy.lifecycle.checkpoint_store import use_store_option

    use_store_option(getattr(args, "store", None))
    try:
        path = resolve_target(args.resume, getattr(args, "store", None))
    except AmbiguousTarget:
        return 2
    events = JsonEvents(getattr(args, "quiet", False)) if getattr(args, "json", False) else None
    kind = _snapshot_kind(path)
    if kind == "worker":
        return resume_worker_main(args, path, events)
    if kind == "stored_program":
        write_err(
            f"harnpy run --resume: error: {args.resume} is a program parked on a waitpoint; "
            f"`harnpy waitpoint show {shlex.quote(path)}` shows what it waits on, and "
            f"`harnpy waitpoint resume {shlex.quote(path)}` resumes it once that is "
            "complete\n"
        )
        return 2
    if getattr(args, "input", None) is not None:
        write_err(
            "harnpy run --resume: error: --input is the resume input of a parked worker; "
            f"{args.resume} is a program snapshot (it continues where it stopped, with no input)\n"
        )
        return 2
    return resume_program_main(args, path, events)


def _runtime(events: JsonEvents | None) -> Any:
    """A fresh runtime for the resume; with ``--json`` its output and run events go to
    ``events``."""
    from harnpy.runtime.runtime import Runtime

    if events is None:
        return Runtime()
    rt = Runtime(stdout=events.stdout, stderr=events.stderr)
    events.attach(rt)
    return rt


def _env_resume_options() -> dict[str, Any]:
    """Resume options from ``harnpy worker`` (HARNPY_RESUME_*); operator defaults."""
    out: dict[str, Any] = {
        "initiator": os.environ.get("HARNPY_RESUME_INITIATOR") or "operator",
        "input_value": None,
        "continue_transcript": True,
        "trigger_event": None,
    }
    raw_input = os.environ.get("HARNPY_RESUME_INPUT")
    if raw_input:
        try:
            out["input_value"] = json.loads(raw_input)
        except ValueError:
            out["input_value"] = raw_input
    if os.environ.get("HARNPY_RESUME_CONTINUE_TRANSCRIPT", "").lower() == "false":
        out["continue_transcript"] = False
    raw_req = os.environ.get("HARNPY_RESUME_REQUEST")
    if raw_req:
        try:
            req = json.loads(raw_req)
            out["trigger_event"] = req.get("trigger_event") if isinstance(req, dict) else None
        except ValueError:
            pass
    if out["initiator"] not in ("self", "parent", "operator", "triggered", "timeout"):
        out["initiator"] = "operator"
    return out


#: Every line ``run --resume`` of a worker writes on stderr (status notes and errors alike)
#: starts with the command the user ran (one prefix style, issue 14 point 11).
_PREFIX = "harnpy run --resume: "


def resume_worker_main(args: Any, path: str, events: JsonEvents | None) -> int:
    """``run --resume <worker snapshot>`` (module docstring); returns 0 / 1 / 3."""
    from harnpy.cli import (
        EXIT_INTERRUPTED,
        EXIT_OK,
        EXIT_PARKED,
        EXIT_RUNTIME,
        _configure_llm,
        flush_stdout,
        report_internal_error,
    )
    from harnpy.lifecycle.suspend import (
        SnapshotLoadError,
        canonical_snapshot,
        drive_until_settled,
        read_document,
        recover_stale_claim,
        resume_from_cli,
    )
    from harnpy.lifecycle.worker_documents import resolve_links
    from harnpy.runtime.errors import HarnError, HarnExit, HarnInterrupt, SnapshotExit
    from harnpy.stdlib.jsonlib import to_json_data

    rt = _runtime(events)
    rt.upgrade_code = bool(getattr(args, "upgrade_code", False))
    rt.store_option = getattr(args, "store", None)
    _configure_llm(rt, args)
    # the resumed loop's outcome is this command's result (status line, exit code), not a
    # root loop's failure to report (harnpy.lifecycle.outcome_report)
    rt.resuming_worker = True

    def fail(code: str, message: str) -> int:
        flush_stdout()
        text = cli_wording(message, code)
        if events is not None:
            events.emit("error", error={"code": code, "message": text}, exit_code=EXIT_RUNTIME)
        where = "" if args.resume in text else f" ({args.resume})"
        write_err(f"{_PREFIX}error[{code}]: {text}{where}\n")
        return EXIT_RUNTIME

    try:
        path = resolve_links(path)  # a link's target is what a resume claims
        recover_stale_claim(path)  # a resume that died mid-run: its park goes back
    except OSError:
        pass
    except SnapshotLoadError as e:
        return fail("HARN-SUS-004", f"failed to load snapshot `{args.resume}`: {e}")
    try:
        doc, _ = read_document(path)
        path, doc = canonical_snapshot(path, doc)
    except SnapshotLoadError as e:
        return fail("HARN-SUS-004", f"failed to load snapshot `{args.resume}`: {e}")
    except RecursionError:
        return fail(
            "HARN-SUS-004",
            f"failed to load snapshot `{args.resume}`: it is nested too deeply to decode",
        )
    try:
        options = _env_resume_options()
        if getattr(args, "input", None) is not None:
            options["input_value"] = args.input
        rec = resume_from_cli(rt, path, doc, **options)
        settled = drive_until_settled(rt, rec)
    except HarnError as e:
        diag = e.message.split(":", 1)[0] if e.message.startswith("HARN-") else e.code
        return fail(diag, e.message)
    except (KeyboardInterrupt, HarnInterrupt):
        flush_stdout()
        write_err("harnpy: interrupted\n")
        return EXIT_INTERRUPTED
    except HarnExit as e:  # exit(n) called by the resumed worker's code
        flush_stdout()
        return e.code
    except SnapshotExit:  # __snapshot_exit(path) called by the resumed worker's code
        flush_stdout()
        return EXIT_PARKED
    except RecursionError:  # a value or program nested deeper than Python's stack allows
        return fail("E109", "nested too deeply to resume (Python recursion limit reached)")
    except Exception as e:  # noqa: BLE001 - a harnpy bug; the park was put back
        flush_stdout()
        if events is not None:
            events.emit("error", error={"code": "E999", "message": str(e)}, exit_code=EXIT_RUNTIME)
        return report_internal_error(e)
    flush_stdout()
    summary = rec.summary()
    if not settled:
        return fail("E320", f"worker {rec.id} is blocked and nothing can wake it")
    if rec.status == "completed":
        code = EXIT_OK
        note = f"{_PREFIX}worker {rec.id} completed"
    elif rec.status == "awaiting":  # a retriggerable worker ended its cycle (lifecycle.md T8)
        code = EXIT_OK
        note = (
            f"{_PREFIX}worker {rec.id} finished its cycle and awaits input (worker_trigger or "
            "send_input)"
        )
    elif rec.status == "suspended":
        code = EXIT_PARKED
        reason = (rec.suspension or {}).get("reason")
        why = f" ({reason})" if isinstance(reason, str) and reason else ""
        note = (
            f"{_PREFIX}worker {rec.id} parked again{why}; resume with: harnpy run --resume "
            f"{rec.snapshot_path}"
        )
    else:
        code = EXIT_RUNTIME
        note = f"{_PREFIX}worker {rec.id} {rec.status}: {rec.error or ''}".rstrip(": ")
    if events is not None:
        events.emit("result", value=to_json_data(summary), exit_code=code)
    else:
        answer = _final_text(summary) if code == EXIT_OK else None
        if answer:
            # The loop's answer is the run's output (the script that started the loop
            # finished in the first process); the status line goes to stderr.
            sys.stdout.write(answer + "\n")
            flush_stdout()
        write_err(note + "\n")
    return code


def cli_wording(message: str, code: str = "") -> str:
    """A lifecycle message as the command line says it: without a leading ``CODE: `` (the
    CLI shows the code as ``error[CODE]``) and without the ``resume_agent: `` of the builtin
    (the user ran ``harnpy run --resume``, not ``resume_agent``)."""
    text = message
    if code and text.startswith(code + ":"):
        text = text[len(code) + 1 :].lstrip()
    for prefix in ("resume_agent: ", "load_agent: "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text


def _final_text(summary: Any) -> str | None:
    """The final model text of a completed worker summary (``result.summary``), or None."""
    result = summary.get("result") if isinstance(summary, dict) else None
    text = result.get("summary") if isinstance(result, dict) else None
    return text if isinstance(text, str) and text.strip() else None


def _configured_store(option: str | None) -> Any:
    """The SQL store ``--store`` or ``HARNPY_STORE`` names (asked for module sources not
    stored beside a program snapshot), or None."""
    from harnpy.store import configured_store_url, open_store

    url = configured_store_url(option)
    if url is None or url.kind not in ("sqlite", "postgresql"):
        return None
    return open_store(url)


def _naming(message: str, target: str) -> str:
    """``message`` naming the snapshot ``target`` (the messages of the snapshot layer often
    do already): the one prefix style of harnpy's own errors, ``harnpy COMMAND: error``."""
    return message if target in message else f"snapshot `{target}`: {message}"


def resume_program_main(args: Any, path: str, events: JsonEvents | None) -> int:
    """``run --resume <program snapshot>`` (module docstring); returns the exit code."""
    from harnpy.cli import (
        EXIT_OK,
        EXIT_PARKED,
        EXIT_RUNTIME,
        EXIT_USAGE,
        flush_stdout,
        render_runtime_error,
        report_internal_error,
    )
    from harnpy.diagnostics import RECURSION_LIMIT_MESSAGE, DiagnosticError
    from harnpy.runtime.errors import HarnError, SnapshotExit
    from harnpy.stdlib.jsonlib import to_json_data

    rt = _runtime(events)
    rt.upgrade_code = bool(getattr(args, "upgrade_code", False))

    def done(code: int, value: Any = None) -> int:
        if events is not None:
            events.emit("result", value=to_json_data(value), exit_code=code)
        return code

    def failed(code: int, diag: str, message: str) -> int:
        if events is not None:
            events.emit("error", error={"code": diag, "message": message}, exit_code=code)
        return code

    try:
        th = load_for_resume(
            path, rt, store=lambda: _configured_store(getattr(args, "store", None))
        )
    except SnapshotError as e:
        write_err(f"harnpy run --resume: error[{e.code}]: {_naming(e.message, args.resume)}\n")
        return failed(EXIT_USAGE, e.code, e.message)
    except DiagnosticError as e:
        write_err(e.render() + "\n")
        return failed(EXIT_USAGE, "E200", e.render())
    except HarnError as e:
        write_err(f"harnpy run --resume: error[{e.code}]: {_naming(e.message, args.resume)}\n")
        return failed(EXIT_USAGE, e.code, e.message)
    except RecursionError:  # nothing was claimed or changed: the snapshot is left as it was
        message = "the snapshot is nested too deeply to restore (Python recursion limit reached)"
        write_err(f"harnpy run --resume: error[E109]: {_naming(message, args.resume)}\n")
        return failed(EXIT_USAGE, "E109", message)
    try:
        # through the scheduler: the restored program may block (model calls, timers, tasks)
        value = rt.scheduler.run_until(th)
    except HarnError as e:
        flush_stdout()
        write_err(render_runtime_error(e, rt) + "\n")
        return failed(EXIT_RUNTIME, e.code, e.message)
    except SnapshotExit:  # parked itself again: `run --resume` of the new file goes on
        flush_stdout()
        return done(EXIT_PARKED)
    except RecursionError:
        flush_stdout()
        write_err(RECURSION_LIMIT_MESSAGE + "\n")
        return failed(EXIT_RUNTIME, "E399", RECURSION_LIMIT_MESSAGE)
    except Exception as e:  # noqa: BLE001
        flush_stdout()
        return report_internal_error(e)
    flush_stdout()
    return done(EXIT_OK, value)
