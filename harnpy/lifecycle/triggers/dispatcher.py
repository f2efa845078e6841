"""The in-process trigger dispatcher of one runtime (local ``ResumeBy.local_runtime``).

Spec: lifecycle.md §4.2-4.5 (auto-resume bindings, trigger and timeout resume, on_event),
§4.3 (trigger registry: ``trigger_register`` / ``trigger_fire``; providers github, webhook,
channel, cron...), §13 Q4/Q5.

A :class:`TriggerDispatcher` holds *bindings* (parsed trigger specs with a handler, an id
and a version) and *resume waits* (a parked worker's conditions: a trigger binding with the
``auto_resume`` handler, an absolute timeout deadline, an ``on_event`` topic, a cron
schedule). All time is read from the injected clock (``runtime.clock`` or any object with
``now_ms()``), so tests move it by hand.

Firing paths:

* ``fire(handle, event)`` dispatches one event to one binding (``trigger_fire``);
* ``route_event(event)`` dispatches to every binding whose provider and event kind match;
  channel bindings match by selector (``emit_channel``);
* ``emit_event(topic, payload)`` wakes every wait whose ``on_event`` is ``topic`` (harnpy
  wires ``on_event``; the reference only validates it);
* ``poll(now_ms)`` fires what the clock made due: wait deadlines (``on_timeout``), cron
  ticks of waits and of cron bindings (missed ticks coalesced per ``catchup_mode``). When
  the dispatcher belongs to a runtime, :meth:`TriggerDispatcher.arm` keeps one scheduler
  timer set for the next due instant, so parked programs wake without anyone polling.

Dispatching is written as generators: a handler that is a Harn closure is called by
yielding a :class:`~harnpy.runtime.values.CallRequest` (the builtins drive them); Python
callers use :func:`run_sync` when no Harn call can occur.

Resuming is the worker layer's job: it installs ``dispatcher.resume_handler``, a function
``(ResumeRequest) -> Any`` called when a wait fires (``request.action`` is ``"resume"`` or
``"fail"`` for ``on_timeout: "fail"``). Durable waits (registered with ``durable=True`` on a
dispatcher that has a store) are claimed in the store first, so an in-process firing and a
``harnpy worker`` process never resume the same wait twice.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator
from typing import Any

import attrs

from harnpy.lifecycle.triggers._util import rfc3339, sanitize_id, uuid7
from harnpy.lifecycle.triggers.bindings import (
    Binding,
    ResumeRequest,
    ResumeWait,
    TriggerRegistryError,
    _absolute_ref,
)
from harnpy.lifecycle.triggers.events import (
    _DispatchFailure,
    _error_text,
    _handle_parts,
    _truthy,
    build_resume_request,
    cron_tick_event,
    normalize_event,
    timeout_event,
)

Gen = Generator[Any, Any, Any]

#: Lease a dispatcher takes when it claims a durable wait in the store.
INPROC_LEASE_MS = 5 * 60_000


def run_sync(gen: Gen) -> Any:
    """Drive a dispatch generator that must not call Harn code; returns its result.

    Raises:
        RuntimeError: the generator asked for a Harn call (a closure handler).
    """
    try:
        req = next(gen)
    except StopIteration as stop:
        return stop.value
    gen.close()
    raise RuntimeError(f"dispatch needs a Harn call ({type(req).__name__}) outside a builtin")


class TriggerDispatcher:
    """In-process trigger registry, resume-wait table and clock-driven firing.

    Args:
        clock: object with ``now_ms()`` (default: ``runtime.clock``).
        runtime: the interpreter runtime (scheduler timers, Harn threads for cron ticks of
            closure handlers); optional for pure-Python use.
        store: a :class:`~harnpy.lifecycle.triggers.store.WaitStore` for durable waits.
        warn: ``fn(text)`` for warnings (default: the runtime's stderr).
    """

    def __init__(
        self,
        clock: Any = None,
        runtime: Any = None,
        store: Any = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if clock is None:
            clock = getattr(runtime, "clock", None)
        if clock is None:
            from harnpy.runtime.clock import Clock

            clock = Clock()
        self.clock = clock
        self.runtime = runtime
        self.store = store
        self.runner_id = f"inproc:{os.getpid()}:{id(self):x}"
        self._warn = warn
        self.bindings: dict[str, Binding] = {}
        self._versions: dict[str, int] = {}
        self.waits: dict[str, ResumeWait] = {}
        #: ``fn(ResumeRequest) -> Any`` installed by the worker layer.
        self.resume_handler: Callable[[ResumeRequest], Any] | None = None
        #: ``fn(ResumeRequest) -> bool`` installed by the worker layer: whether the worker
        #: is still parked at the request's park after its resume handler raised (the wait
        #: is then kept, as for a PreResume denial).
        self.still_parked: Callable[[ResumeRequest], bool] | None = None
        #: Executors of handler variants (``interrupt_and_suspend``...), installed by the
        #: layer that owns them: ``fn(dispatcher, binding, event) -> value | generator``.
        self.variant_executors: dict[str, Callable[..., Any]] = {}
        self.worker_queues: dict[str, list[dict[str, Any]]] = {}
        self.dlq: list[dict[str, Any]] = []
        self.event_log: dict[str, list[dict[str, Any]]] = {}
        self.channel_log: dict[str, list[dict[str, Any]]] = {}
        self.fired: list[dict[str, Any]] = []  # poll() history (tests, trigger_list)
        #: Harn calls of timer-fired handlers made while no runtime was attached.
        self.pending_calls: list[tuple[Any, list[Any]]] = []
        self._seq = 0
        self._armed_at: float | None = None

    # ------------------------------------------------------------ helpers

    def now_ms(self) -> int:
        """Current wall-clock time of the injected clock (epoch ms)."""
        return int(self.clock.now_ms())

    def warn(self, text: str) -> None:
        """Report a warning (stderr of the runtime, or ``sys.stderr``)."""
        if self._warn is not None:
            self._warn(text)
        elif self.runtime is not None and hasattr(self.runtime, "write_err"):
            self.runtime.write_err(text + "\n")
        else:
            sys.stderr.write(text + "\n")

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    # ------------------------------------------------------------ registry

    def register(self, spec: Any, *, now_ms: int | None = None) -> Binding:
        """Register a parsed :class:`TriggerSpec`; an empty id becomes
        ``dynamic_trigger_<uuidv7>``. Cron specs get their first tick scheduled.

        Raises:
            TriggerRegistryError: ``duplicate trigger id '<id>'``.
        """
        now = self.now_ms() if now_ms is None else now_ms
        tid = spec.id.strip() or f"dynamic_trigger_{uuid7(now)}"
        if tid in self.bindings:
            raise TriggerRegistryError(f"duplicate trigger id '{tid}'")
        version = self._versions.get(tid, 0) + 1
        self._versions[tid] = version
        b = Binding(tid, version, spec, now)
        if spec.cron is not None:
            b.cron = spec.cron.compile()
            b.last_tick_ms = now
            b.next_fire_ms = b.cron.next_after(now)
        self.bindings[tid] = b
        self.arm()
        return b

    def unregister(self, tid: str) -> bool:
        """Remove a binding (and cancel its wait); False for an unknown id."""
        b = self.bindings.pop(tid, None)
        if b is None:
            return False
        b.state = "terminated"
        if b.wait is not None and b.wait.state == "pending":
            b.wait.state = "cancelled"
        return True

    def resolve(self, tid: str, version: int | None = None) -> Binding:
        """The live binding ``tid`` (at ``version`` when given).

        Raises:
            TriggerRegistryError: unknown id or version.
        """
        b = self.bindings.get(tid)
        if b is None:
            raise TriggerRegistryError(f"unknown trigger id '{tid}'")
        if version is not None and version != b.version:
            raise TriggerRegistryError(f"unknown trigger binding version {version} for '{tid}'")
        return b

    def list_bindings(self) -> list[Binding]:
        """Live bindings in registration order."""
        return list(self.bindings.values())

    # ------------------------------------------------------------ resume waits

    def register_resume_wait(
        self,
        worker_id: str,
        conditions: Any,
        snapshot_path: str | None = None,
        now_ms: int | None = None,
        *,
        deadline_ms: int | None = None,
        durable: bool = False,
        park_id: str | None = None,
    ) -> dict[str, Any] | None:
        """Register a parked worker's wait (raw suspend path, lifecycle.md §4.2).

        Returns ``{id, version, deadline_ms, next_fire_ms, durable, store}`` (``store``:
        the store file of a durable wait, else None) or None when the conditions register
        nothing (open park). ``deadline_ms`` re-arms a timeout at its original absolute
        deadline (cold loads); by default it is ``now + duration``. ``durable`` also
        records the wait in the store (``ResumeBy.cloud_harness``); ``park_id`` (the
        worker snapshot's park id) is recorded with it so that it can never resume a later
        park.

        Raises:
            HarnError: ``HARN-SUS-002`` / ``-007`` / ``-008`` from condition parsing,
                ``HARN-SUS-007`` when registration fails.
        """
        from harnpy.lifecycle.triggers.conditions import (
            ignored_timeout_warning,
            parse_wait_conditions,
            sus_error,
        )
        from harnpy.lifecycle.triggers.spec import TriggerSpec

        now = self.now_ms() if now_ms is None else now_ms
        warning = ignored_timeout_warning(conditions)
        if warning:
            self.warn(warning)
        wc = parse_wait_conditions(conditions)
        if wc is None:
            return None
        if wc.trigger is None:
            self.warn(
                "harnpy: note: ResumeConditions.on_event without a trigger is wired by harnpy "
                "(emit_event wakes the worker); the reference runtime only validates it"
            )
        wid = f"auto_resume_{sanitize_id(worker_id)}_{uuid7(now)}"
        spec = wc.trigger
        if spec is None:
            spec = TriggerSpec(id=wid, kind="auto_resume", provider="harn")
        spec = attrs.evolve(spec, id=wid)
        deadline = None
        on_timeout = None
        if wc.timeout is not None:
            on_timeout = wc.timeout["on_timeout"]
            deadline = (
                deadline_ms
                if deadline_ms is not None
                else now + wc.timeout["duration_minutes"] * 60_000
            )
        try:
            b = self.register(spec, now_ms=now)
        except Exception as e:  # noqa: BLE001 - reported as the registration diagnostic
            raise sus_error(7, f"auto_resume: failed to register trigger: {e}") from None
        b.listen = wc.trigger is not None
        wait = ResumeWait(
            wid,
            b.version,
            worker_id,
            wc,
            snapshot_path,
            deadline,
            on_timeout,
            wc.on_event,
            bool(durable and self.store is not None),
            now,
            park_id=park_id,
        )
        b.wait = wait
        self.waits[wid] = wait
        if wait.durable:
            try:
                self.store.add(self._wait_record(wait, b, now))
            except Exception as e:  # noqa: BLE001
                self.unregister(wid)
                self.waits.pop(wid, None)
                raise sus_error(
                    7, f"auto_resume: failed to record the wait in the store: {e}"
                ) from None
        self.arm()
        return {
            "id": wid,
            "version": b.version,
            "deadline_ms": deadline,
            "next_fire_ms": b.next_fire_ms,
            "durable": wait.durable,
            "store": self.store.location if wait.durable else None,
        }

    def _wait_record(self, wait: ResumeWait, b: Binding, now: int) -> Any:
        from harnpy.lifecycle.triggers._util import file_sha256
        from harnpy.lifecycle.triggers.store import WaitRecord

        wc = wait.conditions
        spec = wc.trigger
        return WaitRecord(
            id=wait.id,
            worker_id=wait.worker_id,
            version=wait.version,
            snapshot_path=_absolute_ref(wait.snapshot_path),
            snapshot_sha256=file_sha256(wait.snapshot_path),
            park_id=wait.park_id,
            conditions=wc.to_json(),
            trigger=spec.to_json() if spec is not None else None,
            provider=spec.provider if spec is not None else None,
            kind=spec.kind if spec is not None else None,
            match_events=spec.events() if spec is not None else [],
            on_event=wait.on_event,
            deadline_ms=wait.deadline_ms,
            on_timeout=wait.on_timeout,
            schedule=spec.cron.schedule if spec is not None and spec.cron else None,
            timezone=spec.cron.timezone if spec is not None and spec.cron else None,
            catchup_mode=spec.cron.catchup_mode if spec is not None and spec.cron else None,
            next_fire_ms=b.next_fire_ms,
            last_tick_ms=b.last_tick_ms,
            created_at_ms=now,
            updated_at_ms=now,
        )

    def cancel_resume_wait(self, handle: Any, *, reason: str = "resumed") -> bool:
        """Unregister a wait by id or ``{id, version}`` handle (any resume or close does
        this; a late timer is then a no-op). Durable waits are cancelled in the store too.
        False when it is unknown or already fired/cancelled."""
        wid = handle.get("id") if isinstance(handle, dict) else handle
        if not isinstance(wid, str):
            return False
        wait = self.waits.get(wid)
        if wait is None or wait.state != "pending":
            return False
        wait.state = "cancelled"
        self.bindings.pop(wid, None)
        if wait.durable and self.store is not None:
            try:
                self.store.cancel(wid, self.now_ms(), reason)
            except Exception as e:  # noqa: BLE001
                self.warn(f"harnpy: warning: could not cancel wait {wid} in the store: {e}")
        return True

    def pending_waits(self) -> list[ResumeWait]:
        """Waits that have not fired or been cancelled."""
        return [w for w in self.waits.values() if w.state == "pending"]

    def due_waits(self, now_ms: int | None = None) -> list[tuple[ResumeWait, str, int]]:
        """``(wait, cause, at_ms)`` for every pending wait due at ``now_ms`` (a cron tick or
        the deadline passed), earliest first; nothing is fired."""
        now = self.now_ms() if now_ms is None else now_ms
        out = []
        for w in self.pending_waits():
            b = self.bindings.get(w.id)
            causes = []
            if b is not None and b.next_fire_ms is not None and b.next_fire_ms <= now:
                causes.append((b.next_fire_ms, 0, "cron"))
            if w.deadline_ms is not None and w.deadline_ms <= now:
                causes.append((w.deadline_ms, 1, "timeout"))
            if causes:
                at, _, cause = min(causes)
                out.append((w, cause, at))
        out.sort(key=lambda x: x[2])
        return out

    # ------------------------------------------------------------ events

    def normalize_event(self, raw: Any, *, builtin: str = "trigger_fire") -> dict[str, Any]:
        """:func:`normalize_event` at this dispatcher's clock.

        Raises:
            ValueError: not a dict, or ``provider`` / ``kind`` missing.
        """
        return normalize_event(raw, self.now_ms(), builtin=builtin)

    def fire(self, handle: Any, raw_event: Any, *, builtin: str = "trigger_fire") -> Gen:
        """Dispatch one event to one binding (``trigger_fire``); generator returning the
        ``DispatchHandle`` dict ``{event_id, binding_id, binding_version, status,
        replay_of_event_id, dlq_entry_id, error, result}``.

        Raises:
            TriggerRegistryError: unknown id/version.  ValueError: malformed event/handle.
        """
        tid, version = _handle_parts(handle, builtin)
        b = self.resolve(tid, version)
        event = self.normalize_event(raw_event, builtin=builtin)
        return (yield from self.dispatch(b, event))

    def route_event(self, raw_event: Any, *, builtin: str = "trigger_fire") -> Gen:
        """Dispatch an event to every listening binding matching provider and kind;
        generator returning the list of dispatch handles."""
        event = self.normalize_event(raw_event, builtin=builtin)
        out = []
        for b in list(self.bindings.values()):
            if b.listen and b.spec.matches(event["provider"], event["kind"]):
                out.append((yield from self.dispatch(b, event)))
        if self.store is not None:
            self._post_store_trigger(event["provider"], event["kind"], event, None)
        return out

    def dispatch(self, b: Binding, event: dict[str, Any]) -> Gen:
        """Run binding ``b``'s handler on a normalized ``event``; generator returning the
        dispatch handle (status ``dispatched`` / ``failed`` / ``dlq`` / ``skipped``)."""
        from harnpy.runtime.errors import HarnError
        from harnpy.runtime.values import CallRequest

        b.metrics["received"] += 1
        b.metrics["last_received_ms"] = self.now_ms()
        handle: dict[str, Any] = {
            "event_id": event["id"],
            "binding_id": b.id,
            "binding_version": b.version,
            "status": "dispatched",
            "replay_of_event_id": None,
            "dlq_entry_id": None,
            "error": None,
            "result": None,
        }
        spec = b.spec
        try:
            if spec.when is not None:
                ok = yield CallRequest(spec.when, [event])
                if not _truthy(ok):
                    b.metrics["dispatched"] += 1
                    return handle
            if b.wait is not None:
                handle["result"] = self._fire_wait(b.wait, "trigger", event)
            else:
                handle["result"] = yield from self._run_handler(b, event)
        except HarnError as e:
            return self._failed(b, event, handle, _error_text(e))
        except _DispatchFailure as e:
            return self._failed(b, event, handle, str(e))
        b.metrics["dispatched"] += 1
        return handle

    def _failed(self, b: Binding, event: dict[str, Any], handle: dict[str, Any], msg: str) -> Any:
        b.metrics["dlq"] += 1
        entry = {
            "id": f"dlq_{uuid7(self.now_ms())}",
            "event_id": event["id"],
            "binding_id": b.id,
            "binding_version": b.version,
            "provider": event.get("provider"),
            "kind": event.get("kind"),
            "state": "pending",
            "error": msg,
            "event": event,
        }
        self.dlq.append(entry)
        handle.update(status="dlq", dlq_entry_id=entry["id"], error=msg, result=None)
        return handle

    def _run_handler(self, b: Binding, event: dict[str, Any]) -> Gen:
        from harnpy.runtime.errors import HarnError
        from harnpy.runtime.values import CallRequest

        h = b.spec.handler
        if h.kind == "local":
            attempts = b.spec.retry.max if b.spec.retry.backoff == "immediate" else 1
            last: HarnError | None = None
            for _ in range(max(1, attempts)):
                try:
                    return (yield CallRequest(h.callable, [event]))
                except HarnError as e:
                    last = e
            assert last is not None
            raise last
        if h.kind == "worker":
            q = self.worker_queues.setdefault(h.target or "", [])
            q.append(event)
            return {"queued": True, "queue": h.target, "depth": len(q)}
        if h.kind == "a2a":
            raise _DispatchFailure(f"a2a handler `a2a://{h.target}` is not supported by harnpy")
        executor = self.variant_executors.get(h.kind)
        if executor is None:
            raise _DispatchFailure(f"handler variant '{h.kind}' is not available in this runtime")
        result = executor(self, b, event)
        if isinstance(result, Generator):
            result = yield from result
        return result

    # ------------------------------------------------------------ resuming

    def _fire_wait(self, wait: ResumeWait, cause: str, event: dict[str, Any] | None) -> Any:
        """Fire ``wait`` once: build the :class:`ResumeRequest`, claim durable waits in the
        store, call the resume handler, unregister the wait. Returns the handler's result
        (or a ``{status: "skipped", reason}`` dict).

        A handler result that is a dict with ``pre_resume_denied`` (a PreResume hook
        blocked the resume, lifecycle.md §2.4 step 2) leaves the wait registered as it was
        — binding, version, timer — except that a *timeout* that fired is not armed again
        (it would fire again at once): the worker stays suspended and a later trigger or
        event can still resume it. A handler that raises while the worker is still parked
        (:attr:`still_parked`) keeps the wait the same way, then re-raises."""
        if wait.state != "pending":
            return {"status": "skipped", "reason": f"wait is {wait.state}"}
        req = self.resume_request(wait, cause, event)
        if self.resume_handler is None:
            raise _DispatchFailure(
                "auto_resume: no worker runtime is attached to resume worker " + wait.worker_id
            )
        token = None
        now = self.now_ms()
        if wait.durable and self.store is not None:
            claim = self.store.claim(wait.id, self.runner_id, now, INPROC_LEASE_MS, force=True)
            if claim is None or not self.store.begin_resume(
                wait.id, claim.token, now, req.to_json()
            ):
                wait.state = "fired"
                self.bindings.pop(wait.id, None)
                return {"status": "skipped", "reason": "resumed by another runner"}
            token = claim.token
        wait.state = "firing"
        binding = self.bindings.pop(wait.id, None)
        try:
            result = self.resume_handler(req)
        except Exception as e:
            if self._still_parked(req):
                # refused before it took effect (blank input, a failing hook...): the wait
                # stays, the error is reported by the caller (dispatch: dlq)
                self._keep_denied_wait(wait, binding, cause, token)
                raise
            wait.state = "fired"
            if token is not None:
                self.store.complete(
                    wait.id, token, "failed", {"status": "failed", "error": str(e)}, now
                )
            raise
        if isinstance(result, dict) and result.get("pre_resume_denied") is not None:
            self._keep_denied_wait(wait, binding, cause, token)
            return result
        wait.state = "fired"
        if token is not None:
            outcome = {
                "status": "failed" if req.action == "fail" else "resumed",
                "in_process": True,
            }
            self.store.complete(wait.id, token, "completed", outcome, self.now_ms())
        return result

    def _still_parked(self, req: ResumeRequest) -> bool:
        if self.still_parked is None:
            return False
        try:
            return bool(self.still_parked(req))
        except Exception:  # noqa: BLE001 - a broken check keeps the old behaviour
            return False

    def _keep_denied_wait(
        self, wait: ResumeWait, binding: Binding | None, cause: str, token: str | None
    ) -> None:
        """A PreResume hook refused the resume of ``wait``: register it again as it was (a
        fired timeout stays disarmed); a durable wait gets its receipt revoked and its claim
        released."""
        wait.state = "pending"
        if cause == "timeout":
            wait.deadline_ms = None
        if binding is not None and binding.state != "terminated":
            self.bindings[wait.id] = binding
        if token is not None and self.store is not None:
            try:
                self.store.revoke_receipt(wait.id, token)
                self.store.release(
                    wait.id,
                    token,
                    self.now_ms(),
                    "a PreResume hook denied the resume",
                    disarm=("timeout",) if cause == "timeout" else ("due",),
                )
            except Exception as e:  # noqa: BLE001
                self.warn(f"harnpy: warning: could not release wait {wait.id} in the store: {e}")
        self.arm()

    def resume_request(
        self, wait: ResumeWait, cause: str, event: dict[str, Any] | None
    ) -> ResumeRequest:
        """The :class:`ResumeRequest` for firing ``wait`` because of ``cause`` (§4.4)."""
        return build_resume_request(
            wait.id,
            wait.version,
            wait.worker_id,
            wait.snapshot_path,
            wait.on_timeout,
            cause,
            event,
            park_id=wait.park_id,
        )

    def _timeout_event(self, wait: ResumeWait) -> dict[str, Any]:
        return timeout_event(
            wait.id, wait.worker_id, wait.on_timeout, wait.deadline_ms, self.now_ms()
        )

    def fire_timeout(self, wait_id: str) -> Any:
        """Fire a wait's timeout now (its ``on_timeout`` action); None if not pending."""
        wait = self.waits.get(wait_id)
        if wait is None or wait.state != "pending":
            return None
        return self._fire_wait(wait, "timeout", self._timeout_event(wait))

    # ------------------------------------------------------------ emit_event / channels

    def emit_event(self, topic: str, payload: Any) -> dict[str, Any]:
        """Append ``payload`` to EventLog ``topic`` and wake every pending wait whose
        ``on_event`` is ``topic`` (also in the store, for ``harnpy worker``).

        Returns ``{topic, event_id, seq, woken: [worker ids], stored: [wait ids]}``.

        Raises:
            ValueError: invalid topic name.
        """
        from harnpy.lifecycle.triggers.spec import jsonable, validate_topic

        t = topic.strip() if isinstance(topic, str) else topic
        why = validate_topic(t) if isinstance(t, str) else "topic must be a string"
        if why is not None:
            raise ValueError(f"emit_event: {why}")
        now = self.now_ms()
        seq = self._next_seq()
        record = {
            "seq": seq,
            "id": f"event_{uuid7(now)}",
            "topic": t,
            "payload": payload,
            "at": rfc3339(now),
        }
        self.event_log.setdefault(t, []).append(record)
        event = {
            "id": record["id"],
            "provider": "harn",
            "kind": "event",
            "topic": t,
            "received_at": record["at"],
            "dedupe_key": f"event:{t}:{seq}",
            "headers": {},
            "signature_status": {"state": "unsigned"},
            "provider_payload": {"provider": "harn", "topic": t, "raw": payload},
        }
        woken = []
        for w in list(self.pending_waits()):
            if w.on_event == t:
                self._fire_wait(w, "event", event)
                woken.append(w.worker_id)
        stored: list[str] = []
        if self.store is not None:
            try:
                stored = self.store.post_event(t, jsonable(payload), now)
            except Exception as e:  # noqa: BLE001
                self.warn(f"harnpy: warning: could not post event to the store: {e}")
        return {"topic": t, "event_id": record["id"], "seq": seq, "woken": woken, "stored": stored}

    def emit_channel(self, name: Any, payload: Any, options: Any = None) -> Gen:
        """``emit_channel(name, payload, options?)``: append to the channel's log and fan out
        to matching ``provider: "channel"`` bindings; generator returning the receipt.

        Raises:
            ValueError: malformed name/options (``HARN-CHN-00x`` texts).
        """
        from harnpy.lifecycle.triggers.spec import (
            TriggerSpecError,
            jsonable,
            parse_channel_name,
            parse_channel_selector,
        )

        if type(name) is not str:
            raise ValueError("emit_channel: name must be a string")
        opts = options if type(options) is dict else {}
        if options is not None and type(options) is not dict:
            raise ValueError("emit_channel: options must be a dict or nil")
        try:
            scope, scope_id, cname = parse_channel_name(name)
        except TriggerSpecError as e:
            raise ValueError(str(e)) from None
        opt_scope = opts.get("scope")
        if opt_scope is not None and scope is not None and opt_scope != scope:
            raise ValueError(
                f"HARN-CHN-003 channel scope prefix '{scope}' conflicts with options.scope "
                f"'{opt_scope}'"
            )
        scope = scope or opt_scope or "tenant"
        if scope == "org":
            raise ValueError(
                "HARN-CHN-002 org-scoped channels are disabled until org grants are available"
            )
        if scope not in ("session", "pipeline", "tenant"):
            raise ValueError(f"HARN-CHN-003 malformed channel scope '{scope}'")
        if scope_id is None:
            if scope == "session":
                scope_id = opts.get("session_id") or "session"
            elif scope == "pipeline":
                scope_id = opts.get("pipeline_id")
                if not scope_id:
                    raise ValueError(
                        "HARN-CHN-001 missing pipeline context for pipeline-scoped channel"
                    )
            else:
                scope_id = opts.get("tenant_id") or "default"
        resolved = f"{scope}:{scope_id}:{cname}"
        topic = f"channels.{scope}.{sanitize_id(str(scope_id))}.{sanitize_id(cname)}"
        log = self.channel_log.setdefault(topic, [])
        now = self.now_ms()
        event_id = opts.get("id") or f"channel_evt_{uuid7(now)}"
        for prev in log:
            if prev["id"] == event_id:
                return dict(prev, inserted=False, duplicate=True)
        seq = len(log) + 1
        receipt = {
            "event_id": seq,
            "cursor": seq,
            "id": event_id,
            "name": resolved,
            "name_resolved": resolved,
            "scope": scope,
            "scope_id": scope_id,
            "payload": payload,
            "emitted_at": {"at_ms": now, "at": rfc3339(now)},
            "emitted_by": "harn",
            "pipeline_id": scope_id if scope == "pipeline" else None,
            "session_id": scope_id if scope == "session" else None,
            "tenant_id": scope_id if scope == "tenant" else None,
            "retention": {
                "session": "in_process_session",
                "pipeline": "pipeline_event_log",
                "tenant": "tenant_event_log",
            }[scope],
            "ttl_ms": None,
            "topic": topic,
            "inserted": True,
            "duplicate": False,
        }
        log.append(receipt)

        def selector_matches(selector: str) -> bool:
            try:
                s_scope, s_id, s_name = parse_channel_selector(selector)
            except TriggerSpecError:
                return False
            return (
                s_name == cname
                and (s_scope is None or s_scope == scope)
                and (s_id is None or s_id == scope_id)
            )

        raw_event = {
            "provider": "channel",
            "kind": "channel.emit",
            "id": event_id,
            "provider_payload": {
                "provider": "channel",
                "id": event_id,
                "name": cname,
                "name_resolved": resolved,
                "scope": scope,
                "scope_id": scope_id,
                "payload": jsonable(payload),
                "emitted_by": "harn",
                "raw": jsonable(payload),
            },
        }
        event = self.normalize_event(raw_event, builtin="emit_channel")
        dispatched = []
        for b in list(self.bindings.values()):
            if (
                b.listen
                and b.spec.provider == "channel"
                and any(selector_matches(s) for s in b.spec.match_events)
            ):
                dispatched.append((yield from self.dispatch(b, event)))
        receipt = dict(receipt, dispatched=len(dispatched))
        if self.store is not None:
            self._post_store_trigger(
                "channel",
                "channel.emit",
                event,
                lambda rec: any(selector_matches(s) for s in rec.match_events),
            )
        return receipt

    def _post_store_trigger(
        self, provider: str, kind: str, event: dict[str, Any], match: Any
    ) -> list[str]:
        from harnpy.lifecycle.triggers.spec import jsonable

        try:
            return list(
                self.store.post_trigger_event(provider, kind, jsonable(event), self.now_ms(), match)
            )
        except Exception as e:  # noqa: BLE001
            self.warn(f"harnpy: warning: could not post trigger event to the store: {e}")
            return []

    # ------------------------------------------------------------ clock-driven firing

    def poll(self, now_ms: int | None = None) -> list[dict[str, Any]]:
        """Fire everything due at ``now_ms`` (default: the clock): wait timeouts and cron
        ticks of waits (each wait fires once, for its earliest due cause) and cron ticks of
        other bindings (per ``catchup_mode``). Returns one record per fire:
        ``{binding_id, cause, at_ms, tick_at, coalesced, result}``."""
        from harnpy.runtime.errors import HarnError

        now = self.now_ms() if now_ms is None else now_ms
        fired: list[dict[str, Any]] = []
        for wait, cause, at in self.due_waits(now):
            if wait.state != "pending":
                continue
            b = self.bindings.get(wait.id)
            if cause == "timeout":
                event = self._timeout_event(wait)
                coalesced = 1
            else:
                assert b is not None and b.cron is not None
                ticks = b.cron.due(b.last_tick_ms or b.created_ms, now, "latest")
                event = self._tick_event(b, ticks.due[-1], ticks.due, now)
                coalesced = len(ticks.due)
                at = ticks.due[-1]
            try:
                result = self._fire_wait(wait, cause, event)
            except _DispatchFailure as e:
                self.warn(f"harnpy: warning: {e}")
                result = {"status": "failed", "error": str(e)}
            except HarnError as e:
                # e.g. HARN-SUS-006: the worker is no longer suspended; nothing changed
                self.warn(f"harnpy: warning: {_error_text(e)}")
                result = {"status": "failed", "error": _error_text(e)}
            rec = {
                "binding_id": wait.id,
                "worker_id": wait.worker_id,
                "cause": cause,
                "at_ms": at,
                "fired_at_ms": now,
                "coalesced": coalesced,
                "result": result,
            }
            fired.append(rec)
        for b in list(self.bindings.values()):
            if b.wait is not None or b.cron is None or b.next_fire_ms is None:
                continue
            if b.next_fire_ms > now:
                continue
            ticks = b.cron.due(b.last_tick_ms or b.created_ms, now, b.spec.cron.catchup_mode)
            b.last_tick_ms = now
            b.next_fire_ms = ticks.next_ms
            for tick in ticks.fire:
                event = self._tick_event(b, tick, ticks.due, now)
                result = self._dispatch_detached(b, event)
                fired.append(
                    {
                        "binding_id": b.id,
                        "cause": "cron",
                        "at_ms": tick,
                        "fired_at_ms": now,
                        "coalesced": ticks.coalesced,
                        "result": result,
                    }
                )
        self.fired.extend(fired)
        self.arm()
        return fired

    def _tick_event(self, b: Binding, tick: int, due: list[int], now: int) -> dict[str, Any]:
        spec = b.spec
        kind = spec.events()[0] if spec.match_events else "cron.tick"
        return cron_tick_event(
            b.id, spec.provider, kind, spec.cron.schedule, spec.cron.timezone, tick, due, now
        )

    def _dispatch_detached(self, b: Binding, event: dict[str, Any]) -> Any:
        """Dispatch from a timer (no calling builtin). A Harn closure handler runs on a new
        thread of the runtime (its ``when`` predicate is not evaluated on this path);
        without a runtime the call is queued in ``pending_calls``."""
        h = b.spec.handler
        if h is None or h.kind != "local":
            return run_sync(self.dispatch(b, event))
        b.metrics["received"] += 1
        b.metrics["last_received_ms"] = self.now_ms()
        b.metrics["dispatched"] += 1
        if self.runtime is None:
            self.pending_calls.append((h.callable, [event]))
            return {"status": "queued"}
        from harnpy.stdlib.concurrency import start_thread

        th = start_thread(self.runtime, h.callable, [event], f"trigger:{b.id}")
        if not th.finished:
            self.runtime.scheduler.add(th)
        return {"status": "dispatched", "thread": th.name}

    def next_due_ms(self) -> int | None:
        """The earliest instant at which :meth:`poll` has something to fire."""
        cands = []
        for w in self.pending_waits():
            if w.deadline_ms is not None:
                cands.append(w.deadline_ms)
        for b in self.bindings.values():
            if b.next_fire_ms is not None:
                cands.append(b.next_fire_ms)
        return min(cands) if cands else None

    def arm(self) -> None:
        """Keep one runtime-scheduler timer set for :meth:`next_due_ms` (no-op without a
        runtime). The timer polls with the wall clock, so a mock clock moved by hand (or
        reset) is honoured: early wake-ups just re-arm."""
        rt = self.runtime
        if rt is None or getattr(rt, "scheduler", None) is None:
            return
        due = self.next_due_ms()
        if due is None:
            return
        clock = self.clock
        mono_target = clock.monotonic_ms() + max(0, due - self.now_ms())
        if self._armed_at is not None and self._armed_at <= mono_target:
            return
        self._armed_at = mono_target

        def on_timer() -> None:
            if self._armed_at != mono_target:
                return
            self._armed_at = None
            self.poll()

        rt.scheduler.at(mono_target, on_timer)


def get_dispatcher(runtime: Any) -> TriggerDispatcher:
    """The runtime's dispatcher (``runtime.trigger_dispatcher``), created on first use with
    the runtime clock and the configured store (``runtime.wait_store_path`` or
    ``HARNPY_STORE``), with the worker layer attached
    (:func:`harnpy.lifecycle.suspend.install`).

    Raises:
        HarnError: the configured store cannot be opened (unsupported backend, I/O error).
    """
    d = getattr(runtime, "trigger_dispatcher", None)
    if d is None:
        from harnpy.lifecycle.triggers.store import StoreError, configured_store_path, open_store
        from harnpy.runtime.errors import runtime_error

        try:
            path = configured_store_path(getattr(runtime, "wait_store_path", None))
            store = open_store(path) if path else None
        except (StoreError, OSError) as e:
            raise runtime_error(f"wait store (HARNPY_STORE): {e}") from None
        d = TriggerDispatcher(runtime=runtime, store=store)
        runtime.trigger_dispatcher = d
        # the worker layer: resume handler of auto-resume waits, InterruptAndSuspend
        from harnpy.lifecycle.suspend import install

        install(d)
    return d
