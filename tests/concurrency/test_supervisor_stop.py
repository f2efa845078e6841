"""Stopping a supervisor: one ``supervisor_stopping`` and one ``supervisor_stopped`` event per
stop, whichever way it ends (drained by the children themselves, forced, stopped twice, two
tasks stopping it at once), and the status says ``stopped`` only once nothing can run."""

from __future__ import annotations

from typing import Any

from harnpy.runtime.session import Session

DRAINS = '{ _c -> while !is_cancelled() { sleep(1ms) }; "done" }'
STUBBORN = "{ _c -> while true { sleep(5ms) } }"


def run(src: str) -> Any:
    out: list[str] = []
    s = Session(stdout=out.append, stderr=out.append, handle_sigint=False)
    return s.eval("mock_time(0)\n" + src).value


def kinds(var: str = "sup") -> str:
    return f'supervisor_events({var}).map({{ e -> e.kind + ":" + to_string(e.message) }})'


def test_a_drained_stop_records_one_stopped_event() -> None:
    evs = run(
        f'let sup = supervisor_start({{children: [{{name: "a", restart: "never", task: {DRAINS}}}]}})\n'
        "sleep(1ms)\n"
        "let st = supervisor_stop(sup, 50ms)\n"
        f"[st.status, st.children[0].status, {kinds()}]\n"
    )
    assert evs[0] == "stopped" and evs[1] == "stopped"
    assert evs[2] == [
        "supervisor_started:nil",
        "child_started:nil",
        "supervisor_stopping:nil",
        "child_stopped:nil",
        "supervisor_stopped:drained",
    ]


def test_stopping_a_stopped_supervisor_again_records_nothing() -> None:
    r = run(
        f'let sup = supervisor_start({{children: [{{name: "a", task: {STUBBORN}}}]}})\n'
        "sleep(1ms)\n"
        "let first = supervisor_stop(sup, 10ms)\n"
        "let n = len(supervisor_events(sup))\n"
        "let again = supervisor_stop(sup, 10ms)\n"
        "[first.status, again.status, n, len(supervisor_events(sup))]\n"
    )
    assert r == ["stopped", "stopped", 5, 5]


def test_two_tasks_stopping_at_once_share_one_stop() -> None:
    r = run(
        f'let sup = supervisor_start({{children: [{{name: "a", task: {STUBBORN}}}]}})\n'
        "sleep(1ms)\n"
        "let t1 = spawn { supervisor_stop(sup, 20ms).status }\n"
        "let t2 = spawn { supervisor_stop(sup, 20ms).status }\n"
        f"[await(t1), await(t2), {kinds()}]\n"
    )
    assert r[0] == "stopped" and r[1] == "stopped"
    assert r[2] == [
        "supervisor_started:nil",
        "child_started:nil",
        "supervisor_stopping:nil",
        "child_stopped:supervisor stop",
        "supervisor_stopped:forced",
    ]


def test_the_status_is_not_stopped_while_a_child_still_waits_to_restart() -> None:
    # "b" failed and waits 1 s for its restart when the stop begins; "a" drains at once.
    # Until the stop ends "b" is still waiting: the supervisor is draining, not stopped.
    r = run(
        "let sup = supervisor_start({children: [\n"
        f'  {{name: "a", restart: "never", task: {DRAINS}}},\n'
        '  {name: "b", restart: {mode: "on_failure", backoff_ms: 1000}, task: { _c -> '
        'throw "x" }},\n'
        "]})\n"
        "sleep(1ms)\n"
        "let seen = atomic(nil)\n"
        "let watcher = spawn {\n"
        "  sleep(3ms)\n"
        "  atomic_set(seen, supervisor_state(sup).status)\n"
        "}\n"
        "let st = supervisor_stop(sup, 10ms)\n"
        "await(watcher)\n"
        f"[atomic_get(seen), st.status, st.children[1].status, {kinds()}]\n"
    )
    assert r[0] == "draining"
    assert r[1] == "stopped" and r[2] == "stopped"
    stopped = [k for k in r[3] if k.startswith("supervisor_stopped")]
    assert stopped == ["supervisor_stopped:forced"]


def test_a_propagated_restart_does_not_stop_an_ended_sibling_twice() -> None:
    # one_for_all: "b" ended on its own; "a" fails later and restarts every child, "b" too,
    # without a second child_stopped event for "b"
    r = run(
        'let sup = supervisor_start({strategy: "one_for_all", children: [\n'
        '  {name: "a", restart: {mode: "on_failure", max_restarts: 1}, task: { c -> '
        'sleep(5ms); if c.attempt == 1 { throw "x" }; "ok" }},\n'
        '  {name: "b", restart: "on_failure", task: { _c -> "b done" }},\n'
        "]})\n"
        "sleep(20ms)\n"
        'supervisor_events(sup).filter({ e -> e.child == "b" }).map({ e -> e.kind })\n'
    )
    assert r == [
        "child_started",
        "child_stopped",
        "child_restarted",
        "child_started",
        "child_restart_started",
        "child_stopped",
    ]


def test_a_builtin_child_restarted_always_does_not_recurse_and_yields_to_the_program() -> None:
    # A builtin task ends inside its own launch; its restarts go through the scheduler, so
    # the program keeps running between them and the stop ends them.
    # Real time here: under mock_time a zero-backoff restart loop never lets the clock move.
    out: list[str] = []
    session = Session(stdout=out.append, stderr=out.append, handle_sigint=False)
    res = session.eval(
        'let sup = supervisor_start({children: [{name: "b", restart: "always", task: to_string}]})\n'
        "sleep(5ms)\n"
        "let during = supervisor_state(sup)\n"
        "let st = supervisor_stop(sup, 50ms)\n"
        "[during.status, during.children[0].restart_count > 3, st.status]\n"
    ).value
    assert res == ["running", True, "stopped"]
