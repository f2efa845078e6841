"""Durable waitpoints on both store backends (issue 10 points 2 and 3): a program parks on
a waitpoint in one process, the waitpoint is completed from another, and a third resumes
the program right after the wait with its locals intact; completion before and after the
checkpoint commits; timeouts; cancellation; replay-stable submission keys; a wait inside a
tool handler called by agent_loop."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.waitpoints.helpers import run

PARK = """
import "std/waitpoint"

fn step(n) {
  let local = "kept-" + to_string(n)
  var counter = n * 2
  let wp = create({id: "approval"})
  println("created " + wp.id + " " + wp.status)
  let got = wait(wp)
  counter = counter + 1
  println("resumed with " + json_stringify(got.value) + ", " + local + ", " + to_string(counter))
  return got.value.ok
}

pipeline main() {
  println("start")
  let r = step(7)
  println("result " + to_string(r))
}
"""


def _store(url: str):  # type: ignore[no-untyped-def]
    from harnpy.store import open_store

    return open_store(url)


def test_park_complete_resume_in_three_processes(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "park.harn").write_text(PARK, encoding="utf-8")
    first = run("run", "park.harn", cwd=tmp_path, store=store_url)
    assert first.returncode == 3, first.stderr
    assert first.stdout.splitlines() == ["start", "created approval open"]
    assert "parked on waitpoint approval" in first.stderr

    listed = run("waitpoint", "ls", "--json", cwd=tmp_path, store=store_url)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["id"] for r in rows] == ["approval"]
    assert rows[0]["waiters"] and rows[0]["waiters"][0]["worker_id"].startswith("prog-")

    workers = run("workers", "ls", cwd=tmp_path, store=store_url)
    assert workers.returncode == 0, workers.stderr
    assert "1 program parked on waitpoints in this store" in workers.stdout
    assert "harnpy waitpoint ls" in workers.stdout

    early = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert early.returncode == 0 and early.stdout == "", early.stderr  # not ready: nothing
    assert "nothing was resumed" in early.stderr and "its wait is not over" in early.stderr

    done = run("waitpoint", "complete", "approval", '{"ok": true}', cwd=tmp_path, store=store_url)
    assert done.returncode == 0, done.stderr
    # another (live) process holds the claim: the resume says so instead of nothing
    st = _store(store_url)
    (wid,) = [i.worker_id for i in st.list_checkpoints() if i.mode == "program"]
    info = st.checkpoint_info(wid)
    claim = st.claim_checkpoint(
        wid, "someone-else", park_id=info.park_id, lease_ms=600_000,
        owner={"pid": os.getpid(), "host": socket.gethostname()},
    )  # fmt: skip
    held = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert held.returncode == 0 and held.stdout == "", held.stderr
    assert f"{wid}: being resumed by someone-else" in held.stderr
    assert st.release_checkpoint_claim(wid, claim.fence)
    st.close()
    again = run("waitpoint", "complete", "approval", '{"ok": false}', cwd=tmp_path, store=store_url)
    assert again.returncode == 1 and "completed already" in again.stderr

    resumed = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == [
        'resumed with {"ok":true}, kept-7, 15',
        "result true",
    ]
    twice = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert twice.returncode == 0 and twice.stdout == ""  # resumed exactly once

    st = _store(store_url)
    infos = [i for i in st.list_checkpoints() if i.mode == "program"]
    assert [i.status for i in infos] == ["completed"]


def test_completion_before_the_checkpoint_commits(tmp_path: Path, store_url: str) -> None:
    """The waitpoint is completed by another store connection while the waiting program
    commits its checkpoint: the program sees it when it registers as a waiter, wins its own
    checkpoint back and goes on in the same process."""
    from harnpy.lifecycle.waitpoints.stores import shared_store
    from harnpy.runtime.runtime import Runtime
    from harnpy.store import open_store

    src = tmp_path / "park.harn"
    src.write_text(PARK, encoding="utf-8")
    other = open_store(store_url)  # another "process": its own connection
    mine = shared_store(store_url)
    real_put = mine.put_checkpoint
    calls: list[str] = []

    def put_then_complete(worker_id, body, meta, **kw):  # type: ignore[no-untyped-def]
        calls.append(meta.status)
        if meta.status == "suspended":
            assert other.complete_waitpoint("approval", {"ok": "early"}, by="test")
        return real_put(worker_id, body, meta, **kw)

    mine.put_checkpoint = put_then_complete  # type: ignore[method-assign]
    out: list[str] = []
    try:
        rt = Runtime(stdout=out.append, stderr=out.append)
        rt.store_option = store_url
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            rt.run_module(rt.load_main(str(src), PARK))
        finally:
            os.chdir(cwd)
    finally:
        del mine.put_checkpoint
    text = "".join(out)
    assert 'resumed with {"ok":"early"}, kept-7, 15' in text
    assert calls == ["suspended", "completed"]
    info = [i for i in other.list_checkpoints() if i.mode == "program"]
    assert [i.status for i in info] == ["completed"]
    # nobody else can resume it again
    again = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert again.returncode == 0 and again.stdout == ""


def test_complete_from_a_script_and_resume_on_complete(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "park.harn").write_text(PARK, encoding="utf-8")
    (tmp_path / "approve.harn").write_text(
        'import "std/waitpoint"\npipeline main() {\n'
        '  println(complete("approval", {ok: "script"}, {by: "bot"}).completed_by)\n}\n',
        encoding="utf-8",
    )
    assert run("run", "park.harn", cwd=tmp_path, store=store_url).returncode == 3
    approve = run("run", "approve.harn", cwd=tmp_path, store=store_url)
    assert approve.returncode == 0, approve.stderr
    assert approve.stdout == "bot\n"
    shown = run("waitpoint", "show", "approval", "--json", cwd=tmp_path, store=store_url)
    assert json.loads(shown.stdout)["value"] == {"ok": "script"}
    resumed = run("waitpoint", "resume", "approval", cwd=tmp_path, store=store_url)
    assert resumed.returncode == 0, resumed.stderr
    assert 'resumed with {"ok":"script"}, kept-7, 15' in resumed.stdout


FANIN = """
import "std/waitpoint"

pipeline main() {
  let a = create("a")
  let b = create("b")
  let t = create("t")
  try {
    let both = wait([a, b], {timeout: 1h})
    println("fan-in " + both[0].value + both[1].value)
  } catch e {
    println("unexpected " + e.name)
  }
  try {
    wait(t, {timeout: 1s})
  } catch e {
    println(e.name + " " + e.category)
  }
  let c = create("c")
  try {
    wait(c)
  } catch e {
    println(e.name + " " + e.reason)
  }
}
"""


def test_fan_in_timeout_and_cancel_across_processes(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "p.harn").write_text(FANIN, encoding="utf-8")
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    assert run("waitpoint", "complete", "a", '"x"', cwd=tmp_path, store=store_url).returncode == 0
    half = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert half.stdout == ""  # b is still open: fan-in waits for both
    r = run("waitpoint", "complete", "b", '"y"', "--resume", cwd=tmp_path, store=store_url)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["b completed", "fan-in xy"]  # parked again on t
    assert "parked again" in r.stderr
    time.sleep(1.1)  # past the 1 s timeout of the wait on t (it parked before)
    r = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["WaitpointTimeoutError timeout"]  # then parks on c
    r = run(
        "waitpoint", "cancel", "c", "--reason", "rejected", "--resume",
        cwd=tmp_path, store=store_url,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["c cancelled", "WaitpointCancelledError rejected"]
    st = _store(store_url)
    timers = [w for w in st.list_waitpoints() if w.metadata.get("kind") == "timeout"]
    # the fan-in's timer was cancelled when it ended; the second wait's timer fired
    assert sorted(w.status for w in timers) == ["cancelled", "timed_out"]


KEYS = """
import "std/waitpoint"

pipeline main() {
  let first = create()
  println("first " + first.id)
  wait(first)
  let second = create()
  println("second " + second.id)
  if env("CRASH") == "1" {
    sleep(60s)
  }
  wait(second)
  println("done")
}
"""


@pytest.mark.slow
def test_a_retried_resume_gets_the_same_waitpoint(tmp_path: Path, store_url: str) -> None:
    """A resume killed after it created a waitpoint is retried from the checkpoint: the
    replay derives the same submission key, so the same waitpoint comes back."""
    (tmp_path / "p.harn").write_text(KEYS, encoding="utf-8")
    r = run("run", "p.harn", cwd=tmp_path, store=store_url)
    assert r.returncode == 3, r.stderr
    first = r.stdout.split()[1]
    assert run("waitpoint", "complete", first, cwd=tmp_path, store=store_url).returncode == 0
    env = dict(os.environ, HARNPY_STORE=store_url, CRASH="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "harnpy", "waitpoint", "resume"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("second ")
    second = line.split()[1]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    retry = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert retry.returncode == 0, retry.stderr
    assert retry.stdout.splitlines() == [f"second {second}"]  # the same waitpoint
    st = _store(store_url)
    assert len([w for w in st.list_waitpoints() if w.metadata.get("kind") == "waitpoint"]) == 2
    fin = run("waitpoint", "complete", second, "--resume", cwd=tmp_path, store=store_url)
    assert fin.returncode == 0, fin.stderr
    assert fin.stdout.splitlines() == [f"{second} completed", "done"]


TOOL = """
import "std/waitpoint"

fn tools() {
  return tool_define(tool_registry(), "ask_human", "ask a person", {
    parameters: {question: "string"},
    handler: { args ->
      let asked = "asked: " + args.question
      let wp = create({id: "human"})
      let answer = wait(wp)
      return asked + " -> " + answer.value
    },
  })
}

pipeline main() {
  llm_mock({text: "let me ask", tool_calls: [{name: "ask_human", arguments: {question: "ok?"}}]})
  llm_mock({text: "all done"})
  println("before the loop")
  let r = agent_loop("decide", nil, {provider: "mock", tools: tools(), max_iterations: 3})
  println("after the loop: " + r.status)
  println(r.tool_calls.map({ c -> c.name + "=" + to_string(c.result) }))
}
"""


def test_wait_inside_a_tool_handler_resumes_mid_function(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "p.harn").write_text(TOOL, encoding="utf-8")
    first = run("run", "p.harn", cwd=tmp_path, store=store_url)
    assert first.returncode == 3, first.stderr
    assert first.stdout.splitlines() == ["before the loop"]
    r = run("waitpoint", "complete", "human", '"yes"', "--resume", cwd=tmp_path, store=store_url)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "human completed"
    assert lines[1].startswith("after the loop: ")
    assert lines[2].startswith("[ask_human=asked: ok? -> yes")


def test_bad_store_and_bad_values_are_one_line(tmp_path: Path) -> None:
    r = run("waitpoint", "ls", cwd=tmp_path)
    assert r.returncode == 2 and "no store named" in r.stderr
    url = f"sqlite://{tmp_path / 's.db'}"
    r = run("waitpoint", "complete", "x", "{nope", cwd=tmp_path, store=url)
    assert r.returncode == 2 and "not JSON" in r.stderr
    r = run("waitpoint", "complete", "x", "1", cwd=tmp_path, store=url)
    assert r.returncode == 1 and "no waitpoint x" in r.stderr
    r = run("waitpoint", "ls", cwd=tmp_path, store="postgresql://nobody@127.0.0.1:1/x")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot connect" in r.stderr
    # a misspelt SQLite path is said to hold nothing, and no file or folder is made for it
    typo = tmp_path / "tpyo" / "s.db"
    for args, code in (
        (["ls"], 0),
        (["ls", "--json"], 0),
        (["show", "x"], 1),
        (["complete", "x", "1"], 1),
        (["cancel", "x"], 1),
        (["resume"], 0),
        (["resume", "x"], 1),
    ):
        r = run("waitpoint", *args, cwd=tmp_path, store=f"sqlite://{typo}")
        assert r.returncode == code and f"no store at sqlite://{typo}" in r.stderr, (args, r)
        assert r.stdout == ("[]\n" if "--json" in args else ""), (args, r.stdout)
    assert not typo.parent.exists()
    (tmp_path / "p.harn").write_text('waitpoint_wait(waitpoint_create("z"))\n', encoding="utf-8")
    r = run("run", "p.harn", cwd=tmp_path, store="postgresql://nobody@127.0.0.1:1/x")
    assert r.returncode == 1 and "E411" in r.stderr and "Traceback" not in r.stderr


def test_a_live_task_makes_the_wait_poll_instead_of_parking(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 's.db'}"
    (tmp_path / "p.harn").write_text(
        """
pipeline main() {
  let wp = waitpoint_create("w")
  let t = spawn {
    sleep(300ms)
    waitpoint_complete("w", "from the task")
  }
  println(waitpoint_wait(wp).value)
}
""",
        encoding="utf-8",
    )
    r = run("run", "p.harn", cwd=tmp_path, store=url)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "from the task\n"
    assert "cannot park the program" in r.stderr


def test_the_python_api_hosts_call(tmp_path: Path, store_url: str) -> None:
    from harnpy.lifecycle.waitpoints import cancel_waitpoint, complete_waitpoint, resume_waiters

    (tmp_path / "p.harn").write_text(
        'import "std/waitpoint"\npipeline main() {\n  try {\n    wait(create("api"))\n'
        '  } catch e {\n    println("cancelled: " + e.reason)\n  }\n}\n',
        encoding="utf-8",
    )
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    assert resume_waiters(store_url, "api") == []  # still open: nothing to resume
    assert cancel_waitpoint(store_url, "api", reason="declined", by="host") is True
    assert cancel_waitpoint(store_url, "api") is False
    assert complete_waitpoint(store_url, "api", 1) is False  # not open any more
    out: list[str] = []
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        results = resume_waiters(store_url, "api", stdout=out.append)
    finally:
        os.chdir(cwd)
    assert [(r.status, r.exit_code) for r in results] == [("completed", 0)]
    assert "".join(out) == "cancelled: declined\n"
    assert resume_waiters(store_url, "api") == []  # exactly once


def test_harnpy_worker_resumes_parked_programs(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "park.harn").write_text(PARK, encoding="utf-8")
    assert run("run", "park.harn", cwd=tmp_path, store=store_url).returncode == 3
    idle = run("worker", "--once", "--store", store_url, cwd=tmp_path)
    assert idle.returncode == 0 and idle.stdout == "", idle.stderr
    assert (
        run(
            "waitpoint", "complete", "approval", '{"ok": 1}', cwd=tmp_path, store=store_url
        ).returncode
        == 0
    )
    w = run("worker", "--once", "--store", store_url, cwd=tmp_path)
    assert w.returncode == 0, w.stderr
    assert w.stdout.splitlines() == ['resumed with {"ok":1}, kept-7, 15', "result 1"]
    assert "completed" in w.stderr


TIMED = """
import "std/waitpoint"

pipeline main() {
  let wp = create("slow-review")
  try {
    wait(wp, {timeout: 1h})
    println("answered")
  } catch e {
    println(e.name + " " + e.category)
  }
}
"""


def test_a_wait_timeout_is_read_on_the_store_clock(tmp_path: Path, store_url: str) -> None:
    # the deadline is set and checked against the store's clock, not each host's: a replica
    # whose clock runs ahead does not fire it early, and the store clock passing it fires it
    from harnpy.lifecycle.waitpoints.durable import time_out_due

    (tmp_path / "p.harn").write_text(TIMED, encoding="utf-8")
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    st = _store(store_url)
    try:
        timer = next(w for w in st.list_waitpoints() if w.metadata.get("kind") == "timeout")
        hour = 3_600_000
        assert abs(timer.timeout_at_ms - (st.now_ms() + hour)) < 120_000
        assert time_out_due(st) == 0  # the store clock has not reached it
        st.clock_offset_ms = hour + 60_000  # the store clock an hour on
        assert time_out_due(st) == 1
        assert st.get_waitpoint(timer.id).status == "timed_out"  # type: ignore[union-attr]
    finally:
        st.close()
    r = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["WaitpointTimeoutError timeout"]


SLOW_AFTER_WAKE = """
import "std/waitpoint"

pipeline main() {
  wait(create({id: "go"}))
  sleep(2000)
  println("finished")
}
"""


def test_harnpy_worker_claims_parked_programs_with_its_lease(
    tmp_path: Path, store_url: str
) -> None:
    # `--lease-ms` is the lease of the program claims a replica holds too, so a killed
    # replica's program is taken over after it, not after the 60 s default
    import threading

    (tmp_path / "p.harn").write_text(SLOW_AFTER_WAKE, encoding="utf-8")
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    st = _store(store_url)
    try:
        (worker_id,) = [i.worker_id for i in st.list_checkpoints(("suspended",))]
        assert st.complete_waitpoint("go", 1)
        leases: list[int] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                info = st.checkpoint_info(worker_id)
                if info is not None and info.status == "running" and info.claim_expires_at_ms:
                    leases.append(info.claim_expires_at_ms - st.now_ms())
                time.sleep(0.05)

        t = threading.Thread(target=watch)
        t.start()
        try:
            w = run("worker", "--once", "--lease-ms", "900", cwd=tmp_path, store=store_url)
        finally:
            stop.set()
            t.join()
        assert w.returncode == 0 and w.stdout == "finished\n", w.stderr
        assert leases, "the claim was never seen"
        # renewed every third of 900 ms while the program ran: never further out than that
        assert max(leases) <= 900 + 200, leases
        assert st.checkpoint_info(worker_id).status == "completed"  # type: ignore[union-attr]
    finally:
        st.close()


def _sigterm_once_running(
    args: list[str], cwd: Path, store_url: str, st: Any, worker_id: str, settle_s: float
) -> tuple[int, str]:
    """Start ``harnpy ARGS`` on ``store_url``, wait until it holds ``worker_id`` (the
    checkpoint shows ``running``: the resumed program sleeps), ``settle_s`` seconds more,
    then SIGTERM it; its exit status and stderr."""
    env = dict(os.environ, HARNPY_STORE=store_url)
    env.pop("HARNPY_DEBUG", None)
    p = subprocess.Popen(
        [sys.executable, "-m", "harnpy", *args],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = st.checkpoint_info(worker_id)
        if info is not None and info.status == "running":
            break
        time.sleep(0.05)
    time.sleep(settle_s)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    return p.returncode, err


def test_sigterm_to_harnpy_worker_mid_resume_puts_the_park_back_and_exits_143(
    tmp_path: Path, store_url: str
) -> None:
    (tmp_path / "p.harn").write_text(SLOW_AFTER_WAKE.replace("2000", "8000"), encoding="utf-8")
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    st = _store(store_url)
    try:
        assert st.complete_waitpoint("go", 1)
        (worker_id,) = [i.worker_id for i in st.list_checkpoints()]
        rc, err = _sigterm_once_running(
            ["worker", "--poll-ms", "100"], tmp_path, store_url, st, worker_id, 0.5
        )
        assert rc == 143, err
        assert "Traceback" not in err and "stopped" in err, err
        (info,) = st.list_checkpoints()
        assert info.status == "suspended"  # the park and its claim were put back
    finally:
        st.close()
    again = run("worker", "--once", cwd=tmp_path, store=store_url, timeout=60)
    assert again.returncode == 0 and again.stdout == "finished\n", again.stderr


def test_the_timer_of_a_wait_cannot_be_completed_or_cancelled_by_hand(
    tmp_path: Path, store_url: str
) -> None:
    (tmp_path / "p.harn").write_text(TIMED, encoding="utf-8")
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    st = _store(store_url)
    try:
        (timer,) = [w for w in st.list_waitpoints() if w.metadata.get("kind") == "timeout"]
    finally:
        st.close()
    for cmd in (["complete", timer.id, '"x"'], ["cancel", timer.id]):
        r = run("waitpoint", *cmd, cwd=tmp_path, store=store_url)
        assert r.returncode == 1 and "is the timer of a wait" in r.stderr, r.stderr
    # a script's builtins and the Python API are refused the same way (the store refuses)
    (tmp_path / "hand.harn").write_text(
        "pipeline main() {\n"
        "  try { waitpoint_complete(argv()[0], 1) } catch e { println(e) }\n"
        "  try { waitpoint_cancel(argv()[0]) } catch e { println(e) }\n"
        "}\n",
        encoding="utf-8",
    )
    r = run("run", "hand.harn", "--", timer.id, cwd=tmp_path, store=store_url)
    assert r.returncode == 0 and r.stdout.count("is the timer of a wait") == 2, (r.stdout, r.stderr)
    (tmp_path / "bare.harn").write_text(
        "pipeline main() { waitpoint_complete(argv()[0], 1) }\n", encoding="utf-8"
    )
    r = run("run", "bare.harn", "--", timer.id, cwd=tmp_path, store=store_url)
    assert r.returncode == 1 and "E413" in r.stderr and "E411" not in r.stderr, r.stderr
    from harnpy.lifecycle.waitpoints import cancel_waitpoint, complete_waitpoint
    from harnpy.store import TimerWaitpoint

    with pytest.raises(TimerWaitpoint, match="is the timer of a wait"):
        complete_waitpoint(store_url, timer.id, "x")
    with pytest.raises(TimerWaitpoint, match="is the timer of a wait"):
        cancel_waitpoint(store_url, timer.id)
    st = _store(store_url)
    try:
        assert st.get_waitpoint(timer.id).status == "open"  # type: ignore[union-attr]
    finally:
        st.close()


def test_a_program_that_finished_no_longer_shows_as_waiting(tmp_path: Path, store_url: str) -> None:
    """A fan-in ended by one cancelled waitpoint: the program finished, the other waitpoint
    is still open with the program registered on it; `ls` lists no waiter for it and
    `show` says the program no longer waits (it used to list the finished program)."""
    (tmp_path / "p.harn").write_text(
        'import "std/waitpoint"\n'
        "pipeline main() {\n"
        '  let a = create("a")\n'
        '  let b = create("b")\n'
        '  try { wait([a, b]) } catch e { println("caught " + e.name) }\n'
        "}\n",
        encoding="utf-8",
    )
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    before = run("waitpoint", "ls", "--json", cwd=tmp_path, store=store_url)
    rows = {r["id"]: r for r in json.loads(before.stdout)}
    (prog,) = {w["worker_id"] for w in rows["b"]["waiters"]}
    assert rows["b"]["waiters"][0]["state"] == "waiting"
    r = run("waitpoint", "cancel", "a", "--resume", cwd=tmp_path, store=store_url)
    assert r.returncode == 0 and "caught WaitpointCancelledError" in r.stdout, r.stderr
    listed = run("waitpoint", "ls", cwd=tmp_path, store=store_url)
    (line,) = [ln for ln in listed.stdout.splitlines() if ln.startswith("b ")]
    assert line.split()[-1] == "-" and prog not in listed.stdout, listed.stdout
    shown = run("waitpoint", "show", "b", cwd=tmp_path, store=store_url)
    assert f"waiter:       {prog} (park " in shown.stdout
    assert "no longer waits: completed" in shown.stdout, shown.stdout
    as_json = json.loads(
        run("waitpoint", "show", "b", "--json", cwd=tmp_path, store=store_url).stdout
    )
    assert [w["state"] for w in as_json["waiters"]] == ["completed"]


def test_waitpoint_show_shows_a_parked_and_a_finished_program(
    tmp_path: Path, store_url: str
) -> None:
    """`waitpoint show prog-...` shows the program checkpoint (what it waits on, how to
    resume it; then that it completed); `workers show prog-...` points there."""
    (tmp_path / "p.harn").write_text(
        'import "std/waitpoint"\npipeline main() {\n  let v = wait(create("x"))\n'
        "  println(v.value)\n}\n",
        encoding="utf-8",
    )
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    shown = json.loads(
        run("waitpoint", "show", "x", "--json", cwd=tmp_path, store=store_url).stdout
    )
    prog = shown["waiters"][0]["worker_id"]
    parked = run("waitpoint", "show", prog, cwd=tmp_path, store=store_url)
    assert parked.returncode == 0, parked.stderr
    assert "status:       suspended" in parked.stdout
    assert "waits on:     x (open)" in parked.stdout
    assert f"resume with:  harnpy waitpoint resume {prog}" in parked.stdout
    hint = run("workers", "show", prog, "--store", store_url, cwd=tmp_path)
    assert hint.returncode == 1 and f"`harnpy waitpoint show {prog}` shows it" in hint.stderr
    assert "no wait for" not in hint.stderr
    by_id = run("run", "--resume", prog, cwd=tmp_path, store=store_url)
    assert by_id.returncode == 2 and "is a program parked on a waitpoint" in by_id.stderr
    assert "`harnpy waitpoint resume " in by_id.stderr and "E404" not in by_id.stderr
    hint = run("workers", "resume", prog, "--store", store_url, cwd=tmp_path)
    assert hint.returncode == 1 and f"`harnpy waitpoint resume {prog}` resumes it" in hint.stderr
    r = run("waitpoint", "complete", "x", '"ok"', "--resume", cwd=tmp_path, store=store_url)
    assert r.returncode == 0 and r.stdout.splitlines() == ["x completed", "ok"], r.stderr
    done = json.loads(
        run("waitpoint", "show", prog, "--json", cwd=tmp_path, store=store_url).stdout
    )
    assert done["status"] == "completed" and done["version"] == 2
    again = run("waitpoint", "resume", prog, cwd=tmp_path, store=store_url)
    assert again.returncode == 0 and f"{prog}: completed already" in again.stderr, again.stderr
    missing = run("waitpoint", "show", "prog-nope", cwd=tmp_path, store=store_url)
    assert missing.returncode == 1 and "no waitpoint or parked program prog-nope" in missing.stderr


RACE = """
import "std/waitpoint"

pipeline main() {
  let wp = create(argv()[0])
  try {
    let got = wait(wp, {timeout: 1s})
    println("got " + got.value)
  } catch e {
    println("caught " + e.name)
  }
}
"""


def test_completion_and_timeout_whichever_came_first_wins(tmp_path: Path, store_url: str) -> None:
    """A completion that arrives after the deadline, before any poller fired the timer, is
    a timeout (it used to win); a completion before the deadline wins even when the timer
    was fired by a poller afterwards."""
    from harnpy.lifecycle.waitpoints.durable import time_out_due

    (tmp_path / "p.harn").write_text(RACE, encoding="utf-8")
    for wid in ("late", "early"):
        r = run("run", "p.harn", "--", wid, cwd=tmp_path, store=store_url)
        assert r.returncode == 3, r.stderr
    st = _store(store_url)
    try:
        assert st.complete_waitpoint("early", "in time")
        time.sleep(1.3)  # both deadlines pass; nothing fired the timers
        assert st.complete_waitpoint("late", "too late")
        assert time_out_due(st) == 2  # a poller fires both timers now
    finally:
        st.close()
    r = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["caught WaitpointTimeoutError", "got in time"]


def test_waitpoint_show_of_a_program_lists_its_current_wait_only(
    tmp_path: Path, store_url: str
) -> None:
    """After a first wait is over, `show prog-...` lists the waitpoints of the park it is
    at (not the earlier one's), shows the timer as a deadline, and says when the wait is
    over."""
    (tmp_path / "p.harn").write_text(
        'import "std/waitpoint"\npipeline main() {\n  wait(create("first"))\n'
        '  wait([create("c"), create("d")], {timeout: 1h})\n  println("done")\n}\n',
        encoding="utf-8",
    )
    assert run("run", "p.harn", cwd=tmp_path, store=store_url).returncode == 3
    r = run("waitpoint", "complete", "first", "1", "--resume", cwd=tmp_path, store=store_url)
    assert r.returncode == 0 and "parked again" in r.stderr, r.stderr
    rows = json.loads(run("waitpoint", "ls", "--json", cwd=tmp_path, store=store_url).stdout)
    prog = next(r["waiters"][0]["worker_id"] for r in rows if r["id"] == "c")
    shown = run("waitpoint", "show", prog, cwd=tmp_path, store=store_url).stdout
    lines = shown.splitlines()
    assert [ln for ln in lines if ln.startswith("waits on:")] == [
        "waits on:     c (open)",
        "waits on:     d (open)",
    ], shown
    assert any(ln.startswith("times out:") and "(timer " in ln for ln in lines), shown
    assert lines[-1].endswith("(once its wait is over)"), shown
    for wid in ("c", "d"):
        assert run("waitpoint", "complete", wid, "1", cwd=tmp_path, store=store_url).returncode == 0
    shown = run("waitpoint", "show", prog, cwd=tmp_path, store=store_url).stdout
    assert shown.splitlines()[-1].endswith("(its wait is over)"), shown


def test_sigterm_to_waitpoint_resume_puts_the_park_back(tmp_path: Path, store_url: str) -> None:
    """SIGTERM to `harnpy waitpoint resume` while the resumed program runs: `interrupted`,
    exit 143, the park put back (it was a HarnInterrupt traceback, exit 1); the checkpoint
    reference the park printed names it from a shell with no store set."""
    (tmp_path / "p.harn").write_text(SLOW_AFTER_WAKE, encoding="utf-8")
    parked = run("run", "p.harn", cwd=tmp_path, store=store_url)
    assert parked.returncode == 3
    ref = parked.stderr.split("(checkpoint ", 1)[1].split(")", 1)[0]
    shown = run("waitpoint", "show", ref, cwd=tmp_path)  # no HARNPY_STORE: the ref names it
    assert shown.returncode == 0 and "status:       suspended" in shown.stdout, shown.stderr
    worker_id = ref.rsplit("#", 1)[1]
    st = _store(store_url)
    try:
        assert st.complete_waitpoint("go", 1)
        rc, err = _sigterm_once_running(
            ["waitpoint", "resume"], tmp_path, store_url, st, worker_id, 0.3
        )
        assert rc == 143, err
        assert "Traceback" not in err and "interrupted" in err, err
        info = st.checkpoint_info(worker_id)
        assert info is not None and info.status == "suspended"
    finally:
        st.close()
    again = run("waitpoint", "resume", ref, cwd=tmp_path, timeout=60)
    assert again.returncode == 0 and again.stdout == "finished\n", again.stderr
