"""``harnpy worker``: the long-running runner that resumes due waits from the store.

Spec: lifecycle.md §10 (one replica atomically claims a wait, then resumes it), §4.4
(trigger / timeout resume), §1.2 T10 (``on_timeout: "fail"``).

One pass (:meth:`WorkerRunner.run_once`): list the due waits (cron tick due, deadline
passed, event or trigger event arrived, or a claim whose lease expired), and for each:

1. **claim** it (conditional update; losers skip it);
2. if a **resume receipt** already exists, the resume happened in an earlier attempt whose
   runner died before recording the outcome: record it (``recovered``) and stop;
3. build the :class:`~harnpy.lifecycle.triggers.dispatcher.ResumeRequest` (cron ticks
   missed during downtime are coalesced into one fire whose payload counts them);
4. **resume** through the resume function, which begins the resume with
   :meth:`ResumeTicket.begin` (inserting the receipt) exactly when it takes effect;
   ``on_timeout: "fail"`` rewrites the worker snapshot to ``failed`` instead;
5. **record** the outcome (``completed`` / ``failed``).

A crash anywhere leaves either no receipt (the next runner resumes it) or a receipt (the
next runner only records): the wait is resumed exactly once. Test hook:
``HARNPY_WORKER_TEST_CRASH=before_fire|after_fire`` makes the runner ``os._exit(86)`` just
before step 4 or between steps 4 and 5.

The default resume function (:class:`SubprocessResume`) runs
``harnpy run --resume <snapshot>`` (or a configured command) under the
:mod:`~harnpy.lifecycle.triggers.resume_child` shim, which inserts the receipt in the child
process before the command starts; the runner renews its lease while the child runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harnpy.lifecycle.triggers._util import rewrite_snapshot_status, snapshot_park
from harnpy.lifecycle.triggers.bindings import ResumeRequest
from harnpy.lifecycle.triggers.events import build_resume_request, cron_tick_event, timeout_event
from harnpy.lifecycle.triggers.store import WaitRecord, store_log_dir
from harnpy.runtime.errors import HarnInterrupt
from harnpy.security import private_dir
from harnpy.store.sql import SqlStore

CRASH_ENV = "HARNPY_WORKER_TEST_CRASH"
CRASH_EXIT = 86
#: Exit status of the resume shim when the wait's resume already began elsewhere.
ALREADY_RESUMED_EXIT = 75
#: Exit status of ``harnpy run --resume`` when the resumed worker parked again.
PARKED_AGAIN_EXIT = 3
DEFAULT_LEASE_MS = 60_000
DEFAULT_POLL_MS = 1_000
DEFAULT_MAX_ATTEMPTS = 5


class _WallClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass
class ResumeTicket:
    """The right to resume one claimed wait: ``begin()`` exactly once, when the resume
    takes effect; ``renew()`` keeps the claim alive during long resumes."""

    store: Any
    wait_id: str
    token: str
    clock: Any
    lease_ms: int = DEFAULT_LEASE_MS

    def begin(self, info: Any = None) -> bool:
        """Insert the resume receipt; False when this wait's resume already began."""
        return bool(self.store.begin_resume(self.wait_id, self.token, self.clock.now_ms(), info))

    def renew(self) -> bool:
        """Extend the claim's lease; False when the claim was lost."""
        return bool(self.store.renew(self.wait_id, self.token, self.clock.now_ms(), self.lease_ms))


#: A resume function: ``fn(request, ticket) -> outcome dict`` with ``status`` in
#: ``resumed`` / ``already_resumed`` / ``failed`` (+ details). The runner calls
#: ``ticket.begin()`` just before calling it, unless the function has a true
#: ``begins_itself`` attribute (then it must call ``ticket.begin()`` when the resume takes
#: effect, and not resume if that returns False).
ResumeFn = Callable[[ResumeRequest, ResumeTicket], dict[str, Any]]


def resume_env(req: ResumeRequest, ticket: ResumeTicket) -> dict[str, str]:
    """Environment variables describing the resume for a child process."""
    data = req.to_json()
    return {
        "HARNPY_RESUME_REQUEST": json.dumps(data),
        "HARNPY_RESUME_INPUT": json.dumps(data["input"]),
        "HARNPY_RESUME_INITIATOR": req.initiator,
        "HARNPY_RESUME_CONTINUE_TRANSCRIPT": "true" if req.continue_transcript else "false",
        "HARNPY_WAIT_ID": req.wait_id,
        "HARNPY_WORKER_ID": req.worker_id,
        "HARNPY_STORE": ticket.store.location,
    }


class SubprocessResume:
    """Resume by running a command in a child process (default:
    ``<python> -m harnpy run --resume <snapshot>``).

    ``command`` items may contain ``{snapshot}``, ``{worker_id}``, ``{wait_id}``; when none
    mentions ``{snapshot}`` the snapshot path is appended. The child runs under the
    resume shim (receipt first), with :func:`resume_env` set; its output goes to
    ``<store dir>/logs/<wait id>.log``.
    """

    #: The shim begins the ticket in the child process (the runner must not).
    begins_itself = True

    def __init__(
        self,
        command: list[str] | None = None,
        heartbeat_s: float | None = None,
        capture: bool = False,
    ):
        self.command = command
        self.heartbeat_s = heartbeat_s
        #: Also return the child's output (``outcome["output"]``, the last 8000 characters
        #: of what it wrote to the log) so an interactive command can show it.
        self.capture = capture

    def argv(self, req: ResumeRequest) -> list[str]:
        """The command line resuming ``req`` (without the shim)."""
        snap = req.snapshot_path or ""
        if not self.command:
            return [sys.executable, "-m", "harnpy", "run", "--resume", snap]
        subst = {"snapshot": snap, "worker_id": req.worker_id, "wait_id": req.wait_id}
        out = [c.format(**subst) if "{" in c else c for c in self.command]
        if not any("{snapshot}" in c for c in self.command) and snap:
            out.append(snap)
        return out

    def __call__(self, req: ResumeRequest, ticket: ResumeTicket) -> dict[str, Any]:
        cmd = self.argv(req)
        shim = [
            sys.executable,
            "-m",
            "harnpy.lifecycle.triggers.resume_child",
            "--store",
            ticket.store.location,
            "--wait",
            req.wait_id,
            "--token",
            ticket.token,
            "--",
            *cmd,
        ]
        env = dict(os.environ)
        env.update(resume_env(req, ticket))
        log_dir = store_log_dir(ticket.store.location)
        private_dir(log_dir)
        log_path = os.path.join(log_dir, f"{req.wait_id}.log")
        beat = self.heartbeat_s or max(0.05, ticket.lease_ms / 3000.0)
        # transcripts and tool output: readable by the owner only, whatever the umask
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "ab") as log:
            start = log.tell()
            proc = subprocess.Popen(shim, env=env, stdout=log, stderr=subprocess.STDOUT)
            last = time.monotonic()
            try:
                while True:
                    try:
                        rc = proc.wait(timeout=min(beat, 0.5))
                        break
                    except subprocess.TimeoutExpired:
                        if time.monotonic() - last >= beat:
                            ticket.renew()
                            last = time.monotonic()
            except KeyboardInterrupt:
                _stop_child(proc)  # Ctrl-C / SIGTERM: the child puts its park back first
                raise
        out: dict[str, Any] = {"exit_code": rc, "command": cmd, "log": log_path}
        if rc == ALREADY_RESUMED_EXIT:
            out["status"] = "already_resumed"
        elif rc in (0, PARKED_AGAIN_EXIT):
            out["status"] = "resumed"
            if rc == PARKED_AGAIN_EXIT:
                out["parked_again"] = True
        else:
            out["status"] = "failed"
        if self.capture:
            out["output"] = log_tail(log_path, start)
        return out


#: How much of the end of a resume's log ``capture`` reads (bytes; its last 8,000
#: characters are kept).
_OUTPUT_TAIL_BYTES = 32_000


def log_tail(log_path: str, start: int) -> str:
    """The last 8,000 characters a resume wrote to its log from offset ``start`` ("" when
    the log cannot be read). At most :data:`_OUTPUT_TAIL_BYTES` are read, whatever the
    log's size, and only from a regular file (:func:`harnpy.security.read_part`)."""
    from harnpy.security import read_part

    try:
        tail = read_part(log_path, _OUTPUT_TAIL_BYTES, start=start, last=True)
    except OSError:
        return ""
    return tail.decode("utf-8", "replace")[-8000:]


def _stop_child(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    """Interrupt a resume child (SIGTERM: it stops as on Ctrl-C, putting its park back) and
    wait for it; SIGKILL after ``grace_s`` seconds."""
    import signal

    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except KeyboardInterrupt:
        proc.kill()
        proc.wait()


def _process_alive(info: dict[str, Any]) -> bool:
    """Whether the resume shim a receipt names (``{pid, host}``) may still run: its pid is
    alive on this host, or it ran on another host (not known to be gone)."""
    host = info.get("host")
    if host is not None and host != os.uname().nodename:
        return True
    pid = info.get("pid")
    if type(pid) is not int or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _recover_park(path: str | None) -> None:
    """Put back the park of a worker snapshot whose resume died mid-run
    (:func:`harnpy.lifecycle.claims.recover_stale_claim`)."""
    if not path or "#" in path or not os.path.isfile(path):
        return
    from harnpy.lifecycle.suspend import recover_stale_claim

    try:
        recover_stale_claim(path)
    except OSError:
        pass


def _held_live(path: str | None, record: dict[str, Any]) -> bool:
    """Whether a worker snapshot that says ``running`` is held by a live resume: a store
    row shows ``running`` only under a live lease (a dead owner's claim ends with it, and
    the park shows again); a file, while its owner process runs."""
    from harnpy.lifecycle.checkpoint_store import is_store_ref
    from harnpy.lifecycle.suspend import owner_alive

    return is_store_ref(path or "") or owner_alive(record)


def _crash_hook(point: str) -> None:
    if os.environ.get(CRASH_ENV) == point:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(CRASH_EXIT)


class WorkerRunner:
    """Polls a :class:`~harnpy.store.sql.SqlStore` and resumes due waits.

    Args:
        store: the wait store.
        resume_fn: the resume function (default :class:`SubprocessResume`).
        clock: object with ``now_ms()`` (default: the wall clock).
        runner_id: name recorded in claims (default ``worker:<host pid>``).
        lease_ms: claim lease; a claim not renewed for this long can be taken over.
        max_attempts: resume attempts (that never began) before a wait is marked failed.
        log: ``fn(text)`` for one-line progress messages (default: stderr).
    """

    def __init__(
        self,
        store: SqlStore,
        resume_fn: ResumeFn | None = None,
        clock: Any = None,
        runner_id: str | None = None,
        lease_ms: int = DEFAULT_LEASE_MS,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.resume_fn: ResumeFn = resume_fn or SubprocessResume()
        self.clock = clock or _WallClock()
        self.runner_id = runner_id or f"worker:{os.uname().nodename}:{os.getpid()}"
        self.lease_ms = lease_ms
        self.max_attempts = max_attempts
        self._log = log or (lambda text: sys.stderr.write(text + "\n"))

    def log(self, text: str) -> None:
        """Write one progress line."""
        self._log(f"harnpy worker: {text}")

    # ---- polling

    def run_once(self) -> list[dict[str, Any]]:
        """Process every wait due now, claiming them one at a time with
        :meth:`~harnpy.store.sql_waits.WaitsMixin.claim_due` (on PostgreSQL ``FOR UPDATE
        SKIP LOCKED``: replicas polling the same store never wait on each other, and each
        due wait goes to exactly one of them); returns one result dict per wait acted on.
        A pass takes at most as many claims as there were due waits when it began, and
        never the same wait twice."""
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for _ in range(len(self.store.due(self.clock.now_ms()))):
            claims = self.store.claim_due(self.runner_id, self.clock.now_ms(), self.lease_ms)
            if not claims:
                break
            claim = claims[0]
            if claim.record.id in seen:  # handed back during this pass (in progress)
                self.store.release(claim.record.id, claim.token, self.clock.now_ms(), None)
                break
            seen.add(claim.record.id)
            out.append(self._handle(claim, manual=False, manual_input=None))
        out.extend(self._resume_programs())
        return out

    def _resume_programs(self) -> list[dict[str, Any]]:
        """Resume, here and one after another, the programs parked on durable waitpoints
        whose wait is over (:func:`harnpy.lifecycle.waitpoints.durable.resume_ready`: the
        same exactly-once claim as every resumer, under this replica's lease); one result
        dict each."""
        from harnpy.lifecycle.waitpoints.durable import resume_ready

        out: list[dict[str, Any]] = []
        if not hasattr(self.store, "list_checkpoints"):  # a store without checkpoints
            return out
        for r in resume_ready(self.store, lease_ms=self.lease_ms):
            self.log(
                f"program {r.worker_id}: {r.status}" + (f" ({r.message})" if r.message else "")
            )
            out.append({"worker_id": r.worker_id, "kind": "program", "status": r.status})
        return out

    def run(self, poll_ms: int = DEFAULT_POLL_MS, once: bool = False) -> int:
        """Poll until interrupted (or one pass with ``once``); returns an exit status."""
        self.log(f"store {self.store.location}, runner {self.runner_id}")
        try:
            while True:
                self.run_once()
                if once:
                    return 0
                time.sleep(max(poll_ms, 10) / 1000.0)
        except (KeyboardInterrupt, HarnInterrupt):
            # HarnInterrupt: the stop came while a parked program ran here (its finally
            # blocks ran, its park and claim were put back)
            self.log("stopped")
            return 0  # harnpy.cli turns this into 143 after SIGTERM

    # ---- one wait

    def process(
        self, wait_id: str, *, manual: bool = False, manual_input: Any = None
    ) -> dict[str, Any] | None:
        """Claim, resume and record one wait; None when it could not be claimed.

        ``manual`` resumes it even if nothing is due (``harnpy workers resume``), with
        ``manual_input`` as the resume input and initiator ``operator``.
        """
        now = self.clock.now_ms()
        claim = self.store.claim(wait_id, self.runner_id, now, self.lease_ms, force=manual)
        if claim is None:
            return None
        return self._handle(claim, manual=manual, manual_input=manual_input)

    def _handle(self, claim: Any, *, manual: bool, manual_input: Any) -> dict[str, Any]:
        """Resume and record one claimed wait (:meth:`process`)."""
        now = self.clock.now_ms()
        rec, token = claim.record, claim.token
        base = {"wait_id": rec.id, "worker_id": rec.worker_id}
        _recover_park(rec.snapshot_path)
        receipt = self.store.receipt(rec.id)
        if receipt is not None:
            state = self._receipt_state(rec, receipt)
            if state == "in_progress":
                # its resume still runs (a runner whose lease lapsed while its child ran):
                # leave the wait to it; decided on a later pass
                self.store.release(rec.id, token, self.clock.now_ms(), "resume in progress")
                return {**base, "status": "in_progress"}
            if state == "not_taken":
                # the resume this receipt announced never took effect (its runner was
                # killed before the claim, or its resume died mid-run and the park was put
                # back): run exactly that resume again
                self.store.revoke_receipt(rec.id, str(receipt["token"]))
                self.log(f"{rec.id}: the earlier resume never took effect; resuming again")
                receipt = None
        if receipt is not None:
            outcome = {
                "status": "recovered",
                "resume_began_at_ms": receipt["began_at_ms"],
                "resume_outcome": receipt.get("outcome"),
            }
            self.store.complete(rec.id, token, "completed", outcome, self.clock.now_ms())
            self.log(f"{rec.id}: resume had already begun; recorded (recovered)")
            return {**base, "status": "recovered", "outcome": outcome}
        if manual:
            cause, event = "manual", None
        else:
            cause, event = self._cause(rec, now)
        if self._resumed_elsewhere(rec):
            # a resume that did not come through this wait (`harnpy run --resume` by hand)
            # holds the worker: decided on a later pass, once it committed (this wait is
            # then stale) or died (its park is put back, and this wait resumes it)
            self.store.release(rec.id, token, self.clock.now_ms(), "resume in progress elsewhere")
            return {**base, "status": "in_progress"}
        stale = self._stale(rec, cause)
        if stale is not None:
            outcome = {"cause": cause, "status": "stale", "error": stale}
            self.store.complete(rec.id, token, "cancelled", outcome, self.clock.now_ms())
            self.log(f"{rec.id}: {stale}")
            return {**base, "status": "stale", "outcome": outcome}
        req = build_resume_request(
            rec.id,
            rec.version,
            rec.worker_id,
            rec.snapshot_path,
            rec.on_timeout,
            cause,
            event,
            manual_input,
            park_id=rec.park_id,
        )
        ticket = ResumeTicket(self.store, rec.id, token, self.clock, self.lease_ms)
        _crash_hook("before_fire")
        try:
            if req.action == "fail":
                outcome = self._apply_fail(req, ticket)
            else:
                begins_itself = getattr(self.resume_fn, "begins_itself", False)
                if not begins_itself and not ticket.begin(req.to_json()):
                    outcome = {"status": "already_resumed"}
                else:
                    outcome = self.resume_fn(req, ticket)
        except KeyboardInterrupt:
            self._interrupted(rec, token)
            raise
        except Exception as e:  # noqa: BLE001 - a failed resume is recorded, not fatal
            return self._resume_error(rec, token, base, e)
        _crash_hook("after_fire")
        outcome = {"cause": cause, **outcome}
        if outcome.get("status") == "failed" and self._still_parked(rec):
            return self._refused(rec, token, base, outcome, manual)
        final = "failed" if outcome.get("status") == "failed" else "completed"
        self.store.complete(rec.id, token, final, outcome, self.clock.now_ms())
        self.log(f"{rec.id}: {cause} -> {outcome.get('status')}")
        return {**base, "status": outcome.get("status"), "outcome": outcome}

    def _interrupted(self, rec: WaitRecord, token: str) -> None:
        """The runner was interrupted (Ctrl-C, SIGTERM) during a resume: when the worker is
        still parked at the wait's park (the resume stopped and put it back, or never
        began) the receipt is revoked and the claim released, so another runner resumes it
        at once instead of after the lease."""
        try:
            if self._still_parked(rec):
                self.store.revoke_receipt(rec.id, token)
                self.store.release(rec.id, token, self.clock.now_ms(), "runner interrupted")
        except Exception:  # noqa: BLE001 - stopping: the lease expires anyway
            pass

    def _receipt_state(self, rec: WaitRecord, receipt: dict[str, Any]) -> str:
        """What became of the resume a receipt announced: ``"taken"`` (the worker moved on:
        parked again elsewhere, or settled), ``"in_progress"`` (its shim still runs, or a
        live process holds the worker's claim), or ``"not_taken"`` (the worker is still
        suspended at the wait's park and the resume either died before it finished — a
        shim on this host whose pid is gone — or finished with a failure its runner did
        not live to record)."""
        from harnpy.lifecycle.triggers._util import _read_worker_record

        outcome = receipt.get("outcome")
        raw = receipt.get("info")
        info: dict[str, Any] = raw if isinstance(raw, dict) else {}
        path = rec.snapshot_path
        read = _read_worker_record(path) if path else None
        if read is not None and read[1].get("status") == "running":
            from harnpy.lifecycle.suspend import recover_stale_claim

            if _held_live(path, read[1]):
                return "in_progress"
            # its resume claimed the snapshot and died without committing a next state
            # (after the recovery at the start of :meth:`_handle` looked: the owner still
            # lived then): nothing of it took effect; put the park back and decide again
            if path and recover_stale_claim(path):
                return self._receipt_state(rec, receipt)
            return "taken"
        if not self._still_parked(rec):
            return "taken"
        if outcome is None:
            return "in_progress" if _process_alive(info) else "not_taken"
        code = outcome.get("exit_code") if isinstance(outcome, dict) else None
        return "taken" if code in (0, PARKED_AGAIN_EXIT, ALREADY_RESUMED_EXIT) else "not_taken"

    def _resumed_elsewhere(self, rec: WaitRecord) -> bool:
        """Whether ``rec``'s worker snapshot says ``running`` under a live claim: a store
        row's live lease, or a file whose owner process still runs (a dead owner's park
        was put back at the start of :meth:`_handle`)."""
        from harnpy.lifecycle.triggers._util import _read_worker_record

        path = rec.snapshot_path
        read = _read_worker_record(path) if path else None
        return read is not None and read[1].get("status") == "running" and _held_live(path, read[1])

    def _stale(self, rec: WaitRecord, cause: str) -> str | None:
        """The ``HARN-SUS-006`` text when ``rec``'s worker snapshot shows that the wait no
        longer applies — the worker is not suspended any more (resumed, completed, closed)
        or it parked again since (another park id) — else None. A snapshot that cannot be
        read is left to the resume itself to report."""
        status, park = snapshot_park(rec.snapshot_path)
        if status is None:
            return None
        what = {"timeout": "auto-resume timeout", "manual": "resume"}.get(cause, "auto-resume")
        if status != "suspended":
            return (
                f"HARN-SUS-006: {what}: worker {rec.worker_id} is no longer suspended "
                f"(status={status})"
            )
        if rec.park_id is not None and park != rec.park_id:
            return (
                f"HARN-SUS-006: {what}: worker {rec.worker_id} parked again since this wait "
                "was registered; the wait of the earlier park is dropped"
            )
        return None

    def _still_parked(self, rec: WaitRecord) -> bool:
        """Whether ``rec``'s worker snapshot is still suspended at the wait's park (a resume
        that failed without taking effect: refused before its claim, or rolled back)."""
        status, park = snapshot_park(rec.snapshot_path)
        return status == "suspended" and (rec.park_id is None or park == rec.park_id)

    def _refused(
        self,
        rec: WaitRecord,
        token: str,
        base: dict[str, Any],
        outcome: dict[str, Any],
        manual: bool,
    ) -> dict[str, Any]:
        """A resume that failed without taking effect (the snapshot is still parked: blank
        input, changed source, a resume command that could not run...): its receipt is
        revoked and the claim released, so the wait stays resumable and closable. A manual
        resume is reported ``refused``; an automatic one is retried up to ``max_attempts``
        times."""
        now = self.clock.now_ms()
        self.store.revoke_receipt(rec.id, token)
        why = f"resume did not take effect (exit status {outcome.get('exit_code')})"
        if not manual and rec.attempts >= self.max_attempts:
            done = {**outcome, "gave_up": True, "error": why}
            self.store.complete(rec.id, token, "failed", done, now)
            self.log(f"{rec.id}: {why}; giving up after {rec.attempts} attempts")
            return {**base, "status": "failed", "outcome": done}
        self.store.release(rec.id, token, now, why)
        self.log(f"{rec.id}: {why}; the wait stays pending")
        return {**base, "status": "refused" if manual else "retry", "outcome": outcome}

    def _resume_error(
        self, rec: WaitRecord, token: str, base: dict[str, Any], e: Exception
    ) -> dict[str, Any]:
        now = self.clock.now_ms()
        msg = f"{type(e).__name__}: {e}"
        if self.store.receipt(rec.id) is not None:
            self.store.complete(rec.id, token, "failed", {"status": "failed", "error": msg}, now)
            return {**base, "status": "failed", "error": msg}
        if rec.attempts >= self.max_attempts:
            self.store.complete(
                rec.id, token, "failed", {"status": "failed", "error": msg, "gave_up": True}, now
            )
            return {**base, "status": "failed", "error": msg}
        self.store.release(rec.id, token, now, msg)
        self.log(f"{rec.id}: resume did not start ({msg}); will retry")
        return {**base, "status": "retry", "error": msg}

    def _cause(self, rec: WaitRecord, now: int) -> tuple[str, dict[str, Any] | None]:
        due = rec.due_instant(now)
        if due is None:
            return "manual", None
        cause, _at = due
        if cause == "event":
            payload = rec.due_payload if isinstance(rec.due_payload, dict) else {}
            topic = payload.get("topic")
            return "event", {
                "id": f"event:{rec.id}",
                "provider": "harn",
                "kind": "event",
                "topic": topic,
                "provider_payload": {
                    "provider": "harn",
                    "topic": topic,
                    "raw": payload.get("payload"),
                },
            }
        if cause == "trigger":
            return "trigger", rec.due_payload if isinstance(rec.due_payload, dict) else None
        if cause == "cron":
            from harnpy.lifecycle.triggers.cron import parse_schedule

            sched = parse_schedule(rec.schedule, rec.timezone)
            ticks = sched.due(rec.last_tick_ms or rec.created_at_ms, now, "latest")
            due_ticks = ticks.due or [rec.next_fire_ms or now]
            kind = (rec.match_events or ["cron.tick"])[0]
            return "cron", cron_tick_event(
                rec.id,
                rec.provider or "cron",
                kind,
                sched.expression,
                sched.tz_name,
                due_ticks[-1],
                due_ticks,
                now,
            )
        return "timeout", timeout_event(rec.id, rec.worker_id, rec.on_timeout, rec.deadline_ms, now)

    def _apply_fail(self, req: ResumeRequest, ticket: ResumeTicket) -> dict[str, Any]:
        """``on_timeout: "fail"`` (T10, suspended -> failed only): mark the worker snapshot
        failed, once, and only while it is still suspended at the wait's park (checked
        under the snapshot directory's lock). A worker that is no longer suspended is left
        as it is: ``HARN-SUS-006`` (lifecycle.md 1.3)."""
        if not ticket.begin(req.to_json()):
            return {"status": "already_resumed"}
        updated = False
        if req.snapshot_path:
            updated = rewrite_snapshot_status(
                req.snapshot_path,
                "failed",
                "auto-resume timeout expired",
                self.clock.now_ms(),
                expect_status="suspended",
                expect_park_id=req.park_id,
            )
            if not updated:
                status, _ = snapshot_park(req.snapshot_path)
                if status is not None:
                    return {
                        "status": "stale",
                        "error": f"HARN-SUS-006: auto-resume timeout: worker {req.worker_id} "
                        f"is no longer suspended (status={status})",
                    }
        return {"status": "worker_failed", "snapshot_updated": updated}
