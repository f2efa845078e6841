"""Supervisors: long-running child tasks restarted by policy (Erlang-style supervision).

``supervisor_start(spec)`` starts every child of ``spec.children`` as a task and returns a
handle ``{_type: "supervisor", id, name}`` at once; the supervisor then reacts to child
exits on the scheduler (no thread of its own):

* restart policy per child (``restart``: ``"never"`` | ``"on_failure"`` | ``"always"`` or
  ``{mode, max_restarts, window_ms, backoff_ms, max_backoff_ms, factor, jitter_ms,
  circuit_open_ms}``; default on_failure, no cap, 60 s window): a restart waits
  ``backoff_ms * factor^n`` (capped at ``max_backoff_ms``, plus deterministic jitter);
* restart cap: with ``window_ms`` a failure is suppressed once more than ``max_restarts``
  failures happened within the window (else once ``max_restarts`` restarts happened); a
  suppressed child is ``"suppressed"`` (wait reason ``restart_cap_exceeded``), or with
  ``circuit_open_ms`` it is ``"circuit_open"`` and started again after that time;
* strategies: ``one_for_one`` (default), ``one_for_all`` / ``rest_for_one`` (a failure
  restarts all / the later siblings too; a sibling with restart ``never`` just stops;
  upstream Harn leaves an ``on_failure`` sibling ``waiting`` forever there, harnpy restarts
  it), ``escalate_to_parent`` (a failure stops all);
* once every child ended for good the supervisor is ``"completed"``.

``supervisor_stop(sup, timeout?)`` asks the children to stop (``is_cancelled()`` turns
true in them), waits up to ``timeout`` (default ``shutdown_ms``, 5 s) for them to return,
then kills the rest; returns the final state. ``supervisor_state``, ``supervisor_events``
and ``supervisor_metrics`` read the supervisor. Children's output is not printed; it is
recorded as ``child_output`` events. State lives on the runtime (``runtime.supervisors``).
"""

from __future__ import annotations

from collections.abc import Generator as PyGenerator
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.runtime.extensions import register_state
from harnpy.runtime.values import Builtin, Closure, Duration, type_name
from harnpy.stdlib.registry import builtin

Gen = PyGenerator[Any, Any, Any]

_STRATEGIES = {
    "one_for_one": "one_for_one",
    "oneforone": "one_for_one",
    "one_for_all": "one_for_all",
    "oneforall": "one_for_all",
    "rest_for_one": "rest_for_one",
    "restforone": "rest_for_one",
    "escalate_to_parent": "escalate_to_parent",
    "escalate": "escalate_to_parent",
}
_MODES = {
    "never": "never",
    "on_failure": "on_failure",
    "onfailure": "on_failure",
    "failure": "on_failure",
    "always": "always",
}


def _normalize(s: str) -> str:
    return s.strip().lower().replace("-", "_").replace(" ", "_")


def _duration_ms(v: Any) -> int | None:
    """A duration, ms number or ``"10ms"``/``"2s"``/``"1m"``/``"1h"`` string, in ms."""
    if type(v) is Duration:
        return max(0, v.ms)
    if type(v) is int:
        return max(0, v)
    if type(v) is float:
        return max(0, int(v))
    if type(v) is str:
        t = v.strip()
        digits = len(t) - len(t.lstrip("0123456789"))
        if digits == 0:
            return None
        n, unit = int(t[:digits]), t[digits:].strip()
        scale = {"": 1, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}.get(unit)
        return None if scale is None else n * scale
    return None


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return None


class _Policy:
    def __init__(self) -> None:
        self.mode = "on_failure"
        self.max_restarts: int | None = None
        self.window_ms = 60_000
        self.backoff_ms = 0
        self.max_backoff_ms = 30_000
        self.factor = 2.0
        self.jitter_ms = 0
        self.circuit_open_ms: int | None = None


def _parse_policy(v: Any) -> _Policy:
    p = _Policy()
    if v is None:
        return p
    if type(v) is str:
        p.mode = _mode(v)
        return p
    if type(v) is not dict:
        raise runtime_error(
            f"supervisor_start: restart policy must be a string or dict, got {type_name(v)}"
        )
    mode = _first(v, "mode", "policy")
    if mode is not None:
        p.mode = _mode(display(mode))
    mx = _first(v, "max_restarts", "max")
    if type(mx) is int:
        p.max_restarts = max(0, mx)
    for attr, keys in (
        ("window_ms", ("window_ms", "window")),
        ("backoff_ms", ("backoff_ms", "backoff", "initial_backoff_ms")),
        ("max_backoff_ms", ("max_backoff_ms", "max_backoff")),
        ("jitter_ms", ("jitter_ms", "jitter")),
    ):
        ms = _duration_ms(_first(v, *keys))
        if ms is not None:
            setattr(p, attr, ms)
    f = _first(v, "factor", "backoff_factor")
    if type(f) in (int, float) and type(f) is not bool:
        p.factor = max(1.0, float(f))
    p.circuit_open_ms = _duration_ms(_first(v, "circuit_open_ms", "circuit_open"))
    return p


def _mode(s: str) -> str:
    m = _MODES.get(_normalize(s))
    if m is None:
        raise runtime_error(f"supervisor_start: unknown restart mode '{_normalize(s)}'")
    return m


def restart_delay_ms(p: _Policy, restart_count: int, child_index: int) -> int:
    """Backoff before restart number ``restart_count`` (0-based) of child ``child_index``:
    ``backoff_ms * factor^restart_count`` rounded, capped at ``max(max_backoff_ms,
    backoff_ms)``, plus a deterministic jitter in ``0..jitter_ms``."""
    base = 0 if p.backoff_ms == 0 else round(p.backoff_ms * p.factor**restart_count)
    capped = min(base, max(p.max_backoff_ms, p.backoff_ms))
    if p.jitter_ms == 0:
        return int(capped)
    jitter = ((child_index + 1) * 1103 + restart_count * 9176) % (p.jitter_ms + 1)
    return int(capped + jitter)


class _Child:
    def __init__(self, name: str, kind: str, task: Any, policy: _Policy, lease: str | None):
        self.name = name
        self.kind = kind
        self.task = task
        self.policy = policy
        self.lease = lease
        self.status = "pending"
        self.restart_count = 0
        self.generation = 0
        self.failures: list[float] = []  # monotonic ms of failures
        self.last_error: str | None = None
        self.wait_reason: str | None = None
        self.next_restart: int | None = None
        self.token: Any = None
        self.run: Any = None

    def value(self) -> dict[str, Any]:
        """The child's record in ``supervisor_state``: ``{name, kind, status, restart_count,
        last_error, current_wait_reason, active_lease, next_restart_time}``."""
        return {
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "restart_count": self.restart_count,
            "last_error": self.last_error,
            "current_wait_reason": self.wait_reason,
            "active_lease": self.lease,
            "next_restart_time": self.next_restart,
        }


class Supervisor:
    """One running supervisor (see module docstring); ``base`` is the starting thread."""

    def __init__(self, rt: Any, base: Any, sid: str, name: str, strategy: str, shutdown: int):
        self.rt = rt
        self.base = base
        self.id = sid
        self.name = name
        self.strategy = strategy
        self.shutdown_ms = shutdown
        self.status = "running"
        self.stop_requested = False
        #: True while :meth:`spawn_child` launches a task: a child that ends inside its own
        #: launch (a builtin task) has its restart put on the scheduler, not started from
        #: within the launch (which would recurse without end under ``restart: "always"``).
        self.launching = False
        self.children: list[_Child] = []
        self.events: list[dict[str, Any]] = []
        self.counts = dict.fromkeys(
            ("started", "stopped", "failed", "restarted", "suppressed", "escalated"), 0
        )

    # ---- values

    def handle(self) -> dict[str, Any]:
        """The handle value ``{_type: "supervisor", id, name}``."""
        return {"_type": "supervisor", "id": self.id, "name": self.name}

    def metrics(self) -> dict[str, Any]:
        """A copy of the counters ``{started, stopped, failed, restarted, suppressed,
        escalated}``."""
        return dict(self.counts)

    def state(self) -> dict[str, Any]:
        """The ``supervisor_state`` record: ``{_type: "supervisor_state", id, name, status,
        strategy, metrics, children}`` (children as :meth:`_Child.value`)."""
        return {
            "_type": "supervisor_state",
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "strategy": self.strategy,
            "metrics": self.metrics(),
            "children": [c.value() for c in self.children],
        }

    def event(self, child: str | None, kind: str, message: str | None = None) -> None:
        """Append a lifecycle event ``{seq, at_ms, supervisor_id, child, kind, message}``;
        ``at_ms`` is the runtime clock's wall time (epoch ms)."""
        self.events.append(
            {
                "seq": len(self.events),
                "at_ms": self.rt.clock.now_ms(),
                "supervisor_id": self.id,
                "child": child,
                "kind": kind,
                "message": message,
            }
        )

    # ---- children

    def spawn_child(self, index: int, is_restart: bool) -> None:
        """Start child ``index`` as a task with a fresh cancel token and the argument
        ``{supervisor_id, child_name, child_kind, attempt, restart_count}``; its end calls
        :meth:`child_exited`. Does nothing once a stop was requested."""
        from harnpy.stdlib import task_context as tc
        from harnpy.stdlib.concurrency import launch

        if self.stop_requested:
            return
        c = self.children[index]
        token = tc.CancelToken()
        c.status = "running"
        c.wait_reason = None
        c.next_restart = None
        c.token = token
        self.counts["started"] += 1
        self.event(c.name, "child_started")
        if is_restart:
            self.event(c.name, "child_restart_started")
        base_id = tc.context_of(self.base)["task_id"]
        ctx = tc.child_context(
            self.base, f"{base_id}:supervisor:{self.id}:{c.name}", f"supervisor {c.kind}", self.id
        )
        arg = {
            "supervisor_id": self.id,
            "child_name": c.name,
            "child_kind": c.kind,
            "attempt": c.generation + 1,
            "restart_count": c.generation,
        }
        gen = c.generation
        c.run = None
        outer, self.launching = self.launching, True
        try:
            run = launch(
                self.base,
                c.task,
                [arg],
                name=f"supervisor {self.id}:{c.name}",
                ctx=ctx,
                token=token,
                on_done=lambda r: self.child_exited(index, gen, r),
            )
        finally:
            self.launching = outer
        if not run.done:
            c.run = run

    def child_exited(self, index: int, generation: int, run: Any) -> None:
        """React to the end of child ``index``'s task (``run``, a
        :class:`~harnpy.stdlib.concurrency.TaskRun`): record the outcome and events, then apply
        the strategy and the restart policy (module docstring). Ignored for a killed run or one
        of an older ``generation`` (superseded by a restart or a stop)."""
        if run.killed:
            return
        c = self.children[index]
        if c.generation != generation:
            return
        if run.output:
            self.event(c.name, "child_output", run.output)
        failed = run.error is not None
        c.run = None
        c.token = None
        c.next_restart = None
        c.wait_reason = None
        if failed:
            c.status = "failed"
            c.last_error = run.error.message
            c.failures.append(self.rt.clock.monotonic_ms())
            self.counts["failed"] += 1
            self.event(c.name, "child_failed", c.last_error)
        else:
            c.status = "stopped"
            c.last_error = None
            self.counts["stopped"] += 1
            self.event(c.name, "child_stopped")
        if self.stop_requested:
            # Drained: nothing is left that could run (a child waiting for a restart or a
            # circuit is stopped by finish_stop, which then reports the stop itself).
            if self.status == "draining" and all(not _live(ch) for ch in self.children):
                self.status = "stopped"
                self.event(None, "supervisor_stopped", "drained")
            return
        plan: list[tuple[int, int, int]] = []
        if failed and self.strategy == "escalate_to_parent":
            self.status = "escalated"
            self.stop_requested = True
            self.counts["escalated"] += 1
            self.event(c.name, "child_escalated", "failure escalated to parent supervisor")
            for ch in self.children:
                self._kill(ch)
                ch.status = "stopped"
            return
        if failed and self.strategy in ("one_for_all", "rest_for_one"):
            start = 0 if self.strategy == "one_for_all" else index
            for i in range(start, len(self.children)):
                if i != index:
                    self._cancel_for_restart(i)
            for i in range(start, len(self.children)):
                p = self._restart_decision(i, i == index, propagated=i != index)
                if p is not None:
                    plan.append(p)
        else:
            p = self._restart_decision(index, failed)
            if p is not None:
                plan.append(p)
        for idx, delay, gen in plan:
            if delay == 0 and not self.launching:
                self.spawn_child(idx, True)
            else:
                self._schedule_restart(idx, gen, delay)
        self._check_terminal()

    def _kill(self, c: _Child) -> None:
        from harnpy.stdlib.concurrency import kill_task

        if c.token is not None:
            c.token.cancelled = True
        if c.run is not None:
            kill_task(c.run)
        c.run = None
        c.token = None

    def _cancel_for_restart(self, index: int) -> None:
        c = self.children[index]
        was_live = _live(c)
        c.generation += 1
        self._kill(c)
        c.status = "waiting"
        c.wait_reason = "propagation_restart"
        if was_live:  # a sibling that had already ended got its child_stopped/failed event
            self.event(c.name, "child_stopped", "propagation restart")

    def _restart_decision(
        self, index: int, failed: bool, propagated: bool = False
    ) -> tuple[int, int, int] | None:
        """Schedule a restart of child ``index`` (``(index, delay_ms, generation)``) or
        not (None). ``propagated``: a sibling stopped for a one_for_all/rest_for_one
        restart, restarted unless its mode is ``never`` (then it stays stopped)."""
        c = self.children[index]
        p = c.policy
        wanted = failed or propagated
        if not (p.mode == "always" or (p.mode == "on_failure" and wanted)):
            if propagated:
                c.status = "stopped"
                c.wait_reason = None
            return None
        now = self.rt.clock.monotonic_ms()
        if p.window_ms > 0:
            c.failures = [t for t in c.failures if now - t <= p.window_ms]
        if p.max_restarts is not None:
            if failed and p.window_ms > 0:
                exceeded = len(c.failures) > p.max_restarts
            else:
                exceeded = c.restart_count >= p.max_restarts
            if exceeded:
                self.counts["suppressed"] += 1
                if p.circuit_open_ms is not None:
                    c.status = "circuit_open"
                    c.wait_reason = "circuit_open"
                    c.next_restart = self.rt.clock.now_ms() + p.circuit_open_ms
                    c.restart_count = 0
                    c.failures.clear()
                    self.event(c.name, "child_suppressed", "restart cap reached; circuit opened")
                    return index, p.circuit_open_ms, c.generation
                c.status = "suppressed"
                c.wait_reason = "restart_cap_exceeded"
                self.event(c.name, "child_suppressed", "restart cap reached")
                return None
        delay = restart_delay_ms(p, c.restart_count, index)
        c.restart_count += 1
        c.generation += 1
        c.status = "waiting"
        c.wait_reason = "restart_backoff"
        c.next_restart = self.rt.clock.now_ms() + delay
        self.counts["restarted"] += 1
        self.event(c.name, "child_restarted", f"scheduled after {delay}ms")
        return index, delay, c.generation

    def _schedule_restart(self, index: int, generation: int, delay: int) -> None:
        def due() -> None:
            c = self.children[index]
            if c.generation == generation and not self.stop_requested:
                self.spawn_child(index, True)
            self._check_terminal()

        self.rt.scheduler.at(self.rt.clock.monotonic_ms() + delay, due)

    def _check_terminal(self) -> None:
        if self.status != "running":
            return
        for c in self.children:
            ended = c.status in ("stopped", "failed", "suppressed") or (
                c.status == "circuit_open" and c.next_restart is None
            )
            if not ended or c.run is not None:
                return
        self.status = "completed"
        self.event(None, "supervisor_completed")

    # ---- stopping

    def begin_stop(self) -> None:
        """First half of ``supervisor_stop``: status ``draining``, no more restarts, and every
        child's cancel token set (``is_cancelled()`` turns true in them). Does nothing when
        already stopped or stopping (a second ``supervisor_stop`` waits for the same stop)."""
        if self.status in ("stopped", "draining"):
            return
        self.status = "draining"
        self.stop_requested = True
        self.event(None, "supervisor_stopping")
        for c in self.children:
            if c.status == "running":
                c.status = "draining"
                c.wait_reason = "shutdown"
            if c.token is not None:
                c.token.cancelled = True

    def finish_stop(self) -> None:
        """Second half of ``supervisor_stop``: kill every child still running, draining, waiting
        or circuit-open and end in status ``stopped`` (event message ``forced`` when something
        was killed, else ``drained``). Does nothing when already stopped (the children
        drained by themselves, or another ``supervisor_stop`` finished first)."""
        if self.status == "stopped":
            return
        forced = False
        for c in self.children:
            if c.status in ("running", "draining", "waiting", "circuit_open"):
                c.generation += 1
                self._kill(c)
                c.status = "stopped"
                c.wait_reason = None
                c.next_restart = None
                forced = True
                self.event(c.name, "child_stopped", "supervisor stop")
        self.status = "stopped"
        self.event(None, "supervisor_stopped", "forced" if forced else "drained")


def _live(c: _Child) -> bool:
    """Whether child ``c`` runs or may run again without a new decision: running, draining,
    waiting for a (re)start or behind an open circuit."""
    return c.status in ("running", "draining", "waiting", "circuit_open")


# ------------------------------------------------------------------------ registry


def _registry(rt: Any) -> dict[str, Supervisor]:
    reg = getattr(rt, "supervisors", None)
    if reg is None:
        reg = rt.supervisors = {}
    return reg  # type: ignore[no-any-return]


def supervisor_debug_values(rt: Any) -> list[dict[str, Any]]:
    """The state of every supervisor of runtime ``rt`` (``runtime_context().debug``)."""
    return [s.state() for s in _registry(rt).values()]


def _lookup(thread: Any, v: Any, what: str) -> Supervisor:
    if v is None:
        raise runtime_error(f"{what}: supervisor handle or id is required")
    if type(v) is dict and v.get("_type") == "supervisor":
        sid = v.get("id")
        if not sid:
            raise runtime_error(f"{what}: supervisor handle missing id")
        sid = display(sid)
    else:
        sid = display(v)
        if not sid:
            raise runtime_error(f"{what}: supervisor id must not be empty")
    sup = _registry(thread.runtime).get(sid)
    if sup is None:
        raise runtime_error(f"{what}: unknown supervisor '{sid}'")
    return sup


def _parse_children(v: Any, default_restart: Any) -> list[_Child]:
    if type(v) is not list:
        raise runtime_error("supervisor_start: children must be a list")
    out = []
    for i, c in enumerate(v):
        if type(c) is not dict:
            raise runtime_error("supervisor_start child: expected a dict")
        name = display(c["name"]) if c.get("name") not in (None, "") else f"child_{i}"
        kind = display(c["kind"]) if c.get("kind") not in (None, "") else "task"
        task = c.get("task", c.get("handler"))
        if type(task) not in (Closure, Builtin):
            raise runtime_error(f"supervisor_start: child '{name}' requires a task closure")
        restart = c["restart"] if c.get("restart") is not None else default_restart
        lease = _first(c, "active_lease", "lease")
        out.append(
            _Child(name, kind, task, _parse_policy(restart), display(lease) if lease else None)
        )
    return out


@builtin("supervisor_start")
def supervisor_start(thread: Any, spec: Any = None) -> dict[str, Any]:
    """``supervisor_start({id?, name?, strategy?, shutdown_ms?, restart?, children})``:
    start the children and return the supervisor handle. Each child is ``{name?, kind?,
    task: {ctx -> ...}, restart?, active_lease?}``; ``ctx`` is ``{supervisor_id,
    child_name, child_kind, attempt, restart_count}``. Runtime error for a bad spec or an
    id already in use."""
    if spec is None:
        raise runtime_error("supervisor_start: spec is required")
    if type(spec) is not dict:
        raise runtime_error("supervisor_start: expected a dict")
    rt = thread.runtime
    reg = _registry(rt)
    sid = display(spec["id"]) if spec.get("id") not in (None, "") else None
    if sid is None:
        rt.supervisor_counter = getattr(rt, "supervisor_counter", 0) + 1
        sid = f"supervisor_{rt.supervisor_counter}"
    name = display(spec["name"]) if spec.get("name") not in (None, "") else sid
    raw = spec.get("strategy")
    strategy = "one_for_one" if raw is None else _STRATEGIES.get(_normalize(display(raw)))
    if strategy is None:
        raise runtime_error(f"supervisor_start: unknown strategy '{_normalize(display(raw))}'")
    shutdown = _duration_ms(_first(spec, "shutdown_ms", "drain_ms"))
    children = _parse_children(spec.get("children"), spec.get("restart"))
    if not children:
        raise runtime_error("supervisor_start: children must include at least one child")
    if sid in reg:
        raise runtime_error(f"supervisor_start: supervisor '{sid}' already exists")
    sup = Supervisor(rt, thread, sid, name, strategy, 5000 if shutdown is None else shutdown)
    sup.children = children
    reg[sid] = sup
    sup.event(None, "supervisor_started")
    for i in range(len(children)):
        sup.spawn_child(i, False)
    sup._check_terminal()
    return sup.handle()


@builtin("supervisor_state")
def supervisor_state(thread: Any, sup: Any = None) -> dict[str, Any]:
    """``supervisor_state(sup)``: ``{_type, id, name, status, strategy, metrics, children:
    [{name, kind, status, restart_count, last_error, current_wait_reason, active_lease,
    next_restart_time}]}``."""
    return _lookup(thread, sup, "supervisor_state").state()


@builtin("supervisor_events")
def supervisor_events(thread: Any, sup: Any = None) -> list[dict[str, Any]]:
    """``supervisor_events(sup)``: lifecycle events ``{seq, at_ms, supervisor_id, child,
    kind, message}`` in order (``supervisor_started``, ``child_started``, ...)."""
    return [dict(e) for e in _lookup(thread, sup, "supervisor_events").events]


@builtin("supervisor_metrics")
def supervisor_metrics(thread: Any, sup: Any = None) -> dict[str, Any]:
    """``supervisor_metrics(sup)``: ``{started, stopped, failed, restarted, suppressed,
    escalated}`` counts."""
    return _lookup(thread, sup, "supervisor_metrics").metrics()


@builtin("supervisor_stop", callback=True)
def supervisor_stop(thread: Any, sup: Any = None, timeout: Any = None) -> Gen:
    """``supervisor_stop(sup, timeout?)``: stop gracefully (children see
    ``is_cancelled()``), wait up to ``timeout`` (default the spec's ``shutdown_ms``) for
    them, kill the rest; returns the final state (status ``"stopped"``)."""
    s = _lookup(thread, sup, "supervisor_stop")
    ms = _duration_ms(timeout)
    if ms is None:
        ms = s.shutdown_ms
    s.begin_stop()
    clock = thread.runtime.clock
    deadline = clock.monotonic_ms() + ms
    while any(c.status in ("running", "draining") for c in s.children):
        left = deadline - clock.monotonic_ms()
        if left <= 0:
            break
        yield thread.runtime.scheduler.sleep(min(5.0, left))
    s.finish_stop()
    return s.state()


# ------------------------------------------------------------------ snapshot state


def _save_supervisors(thread: Any) -> None:
    """Supervisors are not snapshot data: they own live child tasks, restart timers and
    event logs of the running process. A snapshot taken while one exists is refused
    (SnapshotError E402 naming it) rather than resumed without it."""
    reg = getattr(thread.runtime, "supervisors", None)
    if reg:
        from harnpy.runtime.snapshot import SnapshotError

        sid, sup = next(iter(reg.items()))
        raise SnapshotError(
            f"cannot snapshot while the supervisor '{sid}' exists (status "
            f"{getattr(sup, 'status', '?')}): it holds live child tasks and timers, which are "
            "not snapshot data",
            "E402",
        )
    return None


def _load_supervisors(thread: Any, data: Any) -> Any:
    raise TypeError("supervisors are never saved in a snapshot")


register_state("supervisors", _save_supervisors, _load_supervisors)
