"""Running claimed runs on a replica: worker threads, leases, events, the final commit.

A run is executed by the replica that claimed it (``SqlStore.claim_run``: the claim carries
a lease and a fence). The :class:`Executor` runs each claimed run on one of its worker
threads in a fresh :class:`~harnpy.runtime.runtime.Runtime`:

* what the program prints and the agent-loop reporters (``tool_call`` / ``tool_result`` /
  ``hook``) become run events (the NDJSON events of ``harnpy run --resume --json``), written
  under the fence, ending with ``result`` or ``error``;
* a renewer thread extends the lease of every run in progress every third of the lease; a
  renewal that fails (another replica took the run over, or it was cancelled) interrupts
  the run, and nothing it does afterwards is committed (every write presents the fence);
* at the end the completion snapshot (:mod:`harnpy.serve.completion`) or the sanitized
  failure is committed with the fence, and the lease given back;
* on :meth:`Executor.stop` (SIGTERM) every running run is asked to park at its next
  instruction boundary (a loop back-edge or a call / return, so after the model call or
  tool it is in returns): its whole state is checkpointed ready at once
  (:func:`~harnpy.lifecycle.waitpoints.durable.park_for_shutdown`) and the run re-queued,
  so another replica continues it mid-function. A run that cannot park within the grace
  period (blocked on a long wait, or holding live tasks) is interrupted and re-queued: it
  starts again from its last park.

Work inside a run happens at least once (a replica that dies mid-run loses its lease, and
the run starts again elsewhere); the run's final status and snapshot are committed exactly
once (the fence).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from harnpy.serve.completion import (
    CompletionSnapshot,
    ModelCall,
    SnapshotTooLarge,
    encode_snapshot,
    model_call_of,
    sanitize_failure,
)
from harnpy.serve.metrics import Metrics
from harnpy.serve.program import AppProgram
from harnpy.store import Fenced, RunRecord, StoreError

__all__ = ["Executor", "Outcome"]

log = logging.getLogger("harnpy.serve")

#: Stack size of the worker threads (bytes): the parser and compiler recurse over nested
#: source, as on the main thread with its raised recursion limit.
THREAD_STACK_BYTES = 64 * 1024 * 1024


class Outcome:
    """How one execution ended: ``status`` (``completed`` / ``failed`` / ``in_progress``
    for a park / ``lost`` when the claim was lost) and the stored record (None when lost)."""

    def __init__(self, status: str, record: RunRecord | None) -> None:
        self.status = status
        self.record = record


class _Events:
    """Run events of one execution, written under its fence."""

    def __init__(self, store: Any, run_id: str, fence: int, on_lost: Callable[[], None]):
        self.store = store
        self.run_id = run_id
        self.fence = fence
        self.on_lost = on_lost
        self.lost = False
        self.stdout_parts: list[str] = []

    def emit(self, event_type: str, data: dict[str, Any]) -> None:
        if self.lost:
            return
        try:
            self.store.append_run_event(
                self.run_id, event_type, {"event_type": event_type, **data}, fence=self.fence
            )
        except Fenced:
            self.lost = True
            self.on_lost()
        except StoreError as e:  # e.g. one event over 4 MiB: dropped, the run goes on
            log.warning("run %s: event %s not written: %s", self.run_id, event_type, e)

    def stdout(self, text: str) -> None:
        if text:
            self.stdout_parts.append(text)
            self.emit("stdout", {"payload": text})

    def stderr(self, text: str) -> None:
        if text:
            self.emit("stderr", {"payload": text})

    def run_event(self, event_type: str, data: dict[str, Any]) -> None:
        from harnpy.stdlib.jsonlib import to_json_data

        self.emit(event_type, to_json_data(data))


class _Active:
    def __init__(self, run: RunRecord) -> None:
        self.run = run
        self.fence = run.lease_fence
        self.runtime: Any = None
        self.lost = False
        self.future: Future[Outcome] = Future()

    def interrupt(self) -> None:
        th = getattr(self.runtime, "main_thread", None)
        if th is not None:
            th.park_request = None
            th.interrupt_requested = True

    def request_park(self) -> None:
        """Ask the run's program to park at its next instruction boundary (shutdown)."""
        from harnpy.lifecycle.waitpoints.durable import park_for_shutdown

        th = getattr(self.runtime, "main_thread", None)
        if th is not None and th.park_request is None and not self.lost:
            th.park_request = park_for_shutdown
            th.interrupt_requested = True


class Executor:
    """Worker threads running claimed runs of one replica (module docstring).

    Args:
        app: the served program.
        store: the shared store.
        replica_id: this replica's lease holder name.
        concurrency: worker threads (runs executed at once).
        lease_ms: the lease of a claim (renewed every third of it).
        metrics: the replica's metrics.
        secrets: strings never stored in a failure (the server's API keys).
        keep_raw: keep raw model metadata in completion snapshots.
    """

    def __init__(
        self,
        app: AppProgram,
        store: Any,
        replica_id: str,
        *,
        concurrency: int = 4,
        lease_ms: int = 15_000,
        metrics: Metrics,
        secrets: tuple[str, ...] = (),
        keep_raw: bool = False,
    ) -> None:
        self.app = app
        self.store = store
        self.replica_id = replica_id
        self.concurrency = max(1, concurrency)
        self.lease_ms = lease_ms
        self.metrics = metrics
        self.secrets = secrets
        self.keep_raw = keep_raw
        self.active: dict[str, _Active] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue[_Active | None] = queue.Queue()
        self._stopping = threading.Event()
        self._stopped = threading.Event()  # the lease renewer runs until the very end
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ threads

    def start(self) -> None:
        """Start the worker threads and the lease renewer."""
        old = threading.stack_size()
        try:
            threading.stack_size(THREAD_STACK_BYTES)
        except (ValueError, RuntimeError):  # pragma: no cover - platform without it
            pass
        try:
            for i in range(self.concurrency):
                t = threading.Thread(target=self._work, name=f"harnpy-run-{i}", daemon=True)
                t.start()
                self._threads.append(t)
        finally:
            threading.stack_size(old)
        r = threading.Thread(target=self._renew_loop, name="harnpy-lease-renewer", daemon=True)
        r.start()
        self._threads.append(r)

    def busy(self) -> int:
        """Runs claimed by this replica and not finished yet."""
        with self._lock:
            return len(self.active)

    def has_capacity(self) -> bool:
        """Whether a worker thread is free for another claimed run."""
        return not self._stopping.is_set() and self.busy() < self.concurrency

    def submit(self, run: RunRecord) -> Future[Outcome]:
        """Queue a run this replica has claimed; the future resolves with its outcome."""
        act = _Active(run)
        with self._lock:
            self.active[run.id] = act
        self.metrics.claims.inc()
        self._queue.put(act)
        return act.future

    def cancel_local(self, run_id: str) -> None:
        """Interrupt ``run_id`` if it runs here (its status was already set cancelled)."""
        with self._lock:
            act = self.active.get(run_id)
        if act is not None:
            act.lost = True
            act.interrupt()

    def stop(self, grace_s: float) -> None:
        """Stop: take no more runs and ask the running ones to park at their next
        instruction boundary (module docstring); wait up to ``grace_s`` seconds for them,
        then interrupt those still running and put them back in the queue of runnable runs
        (``queued``, lease given back) for another replica. Leases are renewed until the
        end."""
        self._stopping.set()
        deadline = time.monotonic() + grace_s
        while self.busy() and time.monotonic() < deadline:
            with self._lock:
                running = list(self.active.values())
            for act in running:  # again and again: a park refused now may work later
                act.request_park()
            time.sleep(0.05)
        with self._lock:
            left = list(self.active.values())
        for act in left:
            act.lost = True
            act.interrupt()
            try:
                self.store.update_run(act.run.id, fence=act.fence, status="queued", release=True)
            except (Fenced, StoreError):
                pass
        self._stopped.set()
        for _ in self._threads:
            self._queue.put(None)

    def _work(self) -> None:
        while True:
            act = self._queue.get()
            if act is None:
                return
            try:
                outcome = self._execute(act)
            except BaseException as e:  # noqa: BLE001 - a worker thread must survive
                log.exception("run %s: internal error", act.run.id)
                outcome = self._fail(act, "internal", _internal_message(e))
            finally:
                with self._lock:
                    self.active.pop(act.run.id, None)
            if not act.future.done():
                act.future.set_result(outcome)

    def _renew_loop(self) -> None:
        period = max(0.05, self.lease_ms / 3000)
        while not self._stopped.wait(period):
            with self._lock:
                acts = list(self.active.values())
            for act in acts:
                if act.lost:
                    continue
                try:
                    ok = self.store.renew_run(act.run.id, act.fence, self.lease_ms)
                except StoreError as e:
                    log.warning("run %s: lease renewal failed: %s", act.run.id, e)
                    continue
                if not ok:
                    self._lose(act)

    def _lose(self, act: _Active) -> None:
        if not act.lost:
            act.lost = True
            self.metrics.lease_losses.inc()
        act.interrupt()

    # ------------------------------------------------------------------ one run

    def _execute(self, act: _Active) -> Outcome:
        from harnpy.diagnostics import RECURSION_LIMIT_MESSAGE, DiagnosticError
        from harnpy.runtime.errors import HarnError, HarnExit, HarnInterrupt, SnapshotExit
        from harnpy.runtime.runtime import Runtime
        from harnpy.runtime.values import type_name
        from harnpy.stdlib.jsonlib import from_json_data, to_json_data

        run = act.run
        log.info("run %s: claimed (fence %s, checkpoint %s)", run.id, act.fence, run.worker_id)
        events = _Events(self.store, run.id, act.fence, lambda: self._lose(act))
        calls: list[ModelCall] = []
        if run.worker_id is None:
            # a replica that died between the park's commit and handing the run back left
            # the checkpoint (``prog-<run id>``, as the waitpoint state names it) unrecorded
            own = f"prog-{run.id}"
            if self.store.checkpoint_info(own) is not None:
                run.worker_id = own
        if run.worker_id is not None:  # it parked: continue from its checkpoint
            return self._resume(act, events, calls)
        rt = Runtime(stdout=events.stdout, stderr=events.stderr)
        self._prepare(act, rt, events, calls)
        entry = self.app.resolve(run.entry)
        if entry is None:
            return self._fail(act, "unknown_entry", f"no entry point {run.entry!r}", events)
        try:
            mod = self.app.load(rt, entry, from_json_data(run.input))
            value = rt.run_module(mod)
        except SnapshotExit:
            return self._parked(act, rt)
        except DiagnosticError as e:
            return self._fail(act, "load_error", e.render(), events, "E200")
        except HarnError as e:
            return self._fail(act, "runtime_error", e.message, events, e.code)
        except HarnExit as e:
            if e.code != 0:
                return self._fail(act, "exit", f"the program called exit({e.code})", events)
            value = None
        except HarnInterrupt:
            return self._fail(act, "interrupted", "the run was interrupted", events)
        except RecursionError:
            return self._fail(act, "runtime_error", RECURSION_LIMIT_MESSAGE, events)
        return self._complete(act, events, calls, to_json_data(value), type_name(value))

    def _prepare(self, act: _Active, rt: Any, events: _Events, calls: list[ModelCall]) -> None:
        """Wire a run's runtime: events, model-call metadata, its waitpoints in the store
        under the run's id (a wait parks the run as checkpoint ``prog-<run id>``)."""
        from harnpy.lifecycle.services import services

        act.runtime = rt
        rt.serve_run = True
        svc = services(rt)
        svc.run_events = events.run_event
        svc.llm_listeners.append(lambda r: calls.append(model_call_of(r, self.keep_raw)))
        st = _waitpoint_state(rt)
        if st is not None:
            if st.run_id is None:
                st.run_id = act.run.id
            st.run_fence = act.fence
            st.use_store(self.store)

    def _parked(self, act: _Active, rt: Any) -> Outcome:
        """The run parked on a waitpoint: keep it ``in_progress``, give the lease back
        (the completion re-queues it for any replica)."""
        st = _waitpoint_state(rt)
        worker_id = st.worker_id() if st is not None else f"prog-{act.run.id}"
        if act.lost:
            log.info("run %s: parked as %s after losing its claim", act.run.id, worker_id)
            return Outcome("lost", None)
        log.info("run %s: parked as %s", act.run.id, worker_id)
        info = self.store.checkpoint_info(worker_id)
        if info is not None:
            self.metrics.checkpoint_bytes.observe(info.size)
        from harnpy.lifecycle.waitpoints.durable import SHUTDOWN_REASON

        # parked because this replica is stopping: runnable again at once, anywhere
        again = info is not None and info.reason == SHUTDOWN_REASON
        try:
            rec = self.store.update_run(
                act.run.id,
                fence=act.fence,
                worker_id=worker_id,
                status="queued" if again else None,
                release=True,
            )
        except Fenced:
            self._lose(act)
            return Outcome("lost", None)
        self.metrics.finished.labels("handed_over" if again else "parked").inc()
        return Outcome("in_progress", rec)

    def _resume(self, act: _Active, events: _Events, calls: list[ModelCall]) -> Outcome:
        """Continue a parked run from its checkpoint (or take the outcome another process
        committed there: ``harnpy waitpoint resume`` may have resumed it)."""
        from harnpy.lifecycle.waitpoints import resume_checkpoint
        from harnpy.stdlib.jsonlib import to_json_data

        run = act.run
        wid = run.worker_id
        assert wid is not None
        info = self.store.checkpoint_info(wid)
        if info is None:
            return self._fail(act, "resume_refused", "the run's checkpoint is gone", events)
        if info.status in ("completed", "failed"):
            return self._settled_elsewhere(act, events, calls, wid)
        if info.status != "suspended":  # another process is resuming it right now
            log.info("run %s: checkpoint %s is %s: released", run.id, wid, info.status)
            return self._release(act)
        earlier = self.store.run_events(run.id, 0, 100_000)
        events.stdout_parts = [
            str(e.data.get("payload", ""))
            for e in earlier
            if e.event_type == "stdout" and isinstance(e.data, dict)
        ]

        # the resume builds its own runtime on this thread: wire it as it is created
        _pending.prepare = lambda rt: self._prepare(act, rt, events, calls)
        try:
            res = resume_checkpoint(self.store, wid, stdout=events.stdout, stderr=events.stderr)
        finally:
            _pending.prepare = None
        log.info("run %s: resume of %s: %s", run.id, wid, res.status if res else "not claimed")
        if res is None:  # not ready after all, or another process won the claim
            return self._release(act)
        if res.status == "parked":
            return self._parked(act, act.runtime)
        if res.status == "completed":
            value = getattr(act.runtime, "serve_final_value", None)
            from harnpy.runtime.values import type_name

            return self._complete(act, events, calls, to_json_data(value), type_name(value))
        category = {"failed": "runtime_error", "refused": "resume_refused"}.get(
            res.status, "internal"
        )
        return self._fail(act, category, res.message or res.status, events)

    def _settled_elsewhere(
        self, act: _Active, events: _Events, calls: list[ModelCall], wid: str
    ) -> Outcome:
        from harnpy.runtime.snapshot import SnapshotError, open_document

        got = self.store.get_checkpoint(wid)
        if got is None:
            return self._fail(act, "resume_refused", "the run's checkpoint is gone", events)
        body = got[1]
        try:
            doc = open_document(body, f"checkpoint {wid}")
        except SnapshotError as e:
            return self._fail(act, "resume_refused", e.message, events)
        if not isinstance(doc, dict) or doc.get("status") not in ("completed", "failed"):
            return self._fail(act, "resume_refused", "the run's checkpoint is damaged", events)
        if doc["status"] == "failed":
            return self._fail(act, "runtime_error", str(doc.get("error") or "failed"), events)
        return self._complete(act, events, calls, doc.get("value"), "unknown")

    def _release(self, act: _Active) -> Outcome:
        """Give a claimed parked run back as it was (parked, no lease), with its checkpoint
        recorded: a run adopted from an unrecorded ``prog-<run id>`` checkpoint (its replica
        died between the park's commit and ``_parked``) is listed by ``parked_runs`` only
        with ``worker_id`` set, so without it nothing would re-queue it when its wait ends."""
        try:
            rec = self.store.update_run(
                act.run.id, fence=act.fence, worker_id=act.run.worker_id, release=True
            )
        except Fenced:
            return Outcome("lost", None)
        return Outcome("in_progress", rec)

    def _complete(
        self, act: _Active, events: _Events, calls: list[ModelCall], output: Any, type_name: str
    ) -> Outcome:
        run = act.run
        snap = CompletionSnapshot.build(
            output,
            type_name=type_name,
            stdout="".join(events.stdout_parts),
            metadata=dict(run.metadata.get("caller") or {}),
            calls=calls,
        )
        try:
            data = encode_snapshot(snap)
        except SnapshotTooLarge as e:
            return self._fail(
                act,
                "output_too_large",
                f"the completion snapshot is {e.size} bytes of JSON, over the 4 MiB limit",
                events,
            )
        result = {"event_type": "result", "value": output, "exit_code": 0}
        return self._commit(act, "completed", output=data, event=("result", result))

    def _commit(self, act: _Active, status: str, **fields: Any) -> Outcome:
        if act.lost:
            log.info("run %s: %s not committed: the claim was lost", act.run.id, status)
            return Outcome("lost", None)
        log.info("run %s: committing %s", act.run.id, status)
        started = time.perf_counter()
        try:
            rec = self.store.update_run(act.run.id, fence=act.fence, status=status, **fields)
        except Fenced:
            self._lose(act)
            return Outcome("lost", None)
        if "output" in fields:
            import orjson

            self.metrics.checkpoint_bytes.observe(len(orjson.dumps(fields["output"])))
            self.metrics.checkpoint_seconds.observe(time.perf_counter() - started)
        self.metrics.finished.labels(status).inc()
        return Outcome(status, rec)

    def _fail(
        self,
        act: _Active,
        category: str,
        message: str,
        events: _Events | None = None,
        code: str | None = None,
    ) -> Outcome:
        from harnpy.serve.completion import secret_values

        error = sanitize_failure(category, message, code, secret_values(self.secrets))
        if act.lost:
            return Outcome("lost", None)
        event = None
        if events is not None:
            event = (
                "error",
                {
                    "event_type": "error",
                    "error": {"code": code or category, "message": error["message"]},
                    "exit_code": 1,
                },
            )
        return self._commit(act, "failed", error=error, event=event)


def _waitpoint_state(rt: Any) -> Any:
    """The durable-waitpoint state of ``rt`` (:mod:`harnpy.lifecycle.waitpoints`), or None
    when this build has no durable waitpoints (runs then cannot park)."""
    try:
        from harnpy.lifecycle.waitpoints.state import state_of
    except ImportError:  # pragma: no cover - the waitpoints package ships with harnpy
        return None
    return state_of(rt)


class _Pending(threading.local):
    """Per worker thread: how to wire the next Runtime created on it (a resume creates
    its runtime itself)."""

    prepare: Callable[[Any], None] | None = None


_pending = _Pending()


def _on_runtime_init(rt: Any) -> None:
    prepare = _pending.prepare
    if prepare is not None:
        _pending.prepare = None
        prepare(rt)


def _on_program_finish(rt: Any, value: Any) -> Any:
    if getattr(rt, "serve_run", False):
        rt.serve_final_value = value
    return value


def _install_hooks() -> None:
    from harnpy.runtime import extensions

    if _on_runtime_init not in extensions.RUNTIME_INIT:
        extensions.RUNTIME_INIT.append(_on_runtime_init)
    if _on_program_finish not in extensions.PROGRAM_FINISH:
        extensions.PROGRAM_FINISH.append(_on_program_finish)


_install_hooks()


def _internal_message(e: BaseException) -> str:
    return f"internal error ({type(e).__name__}); the server log has the details"
