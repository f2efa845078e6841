"""std/waitpoint without a store: waitpoints live in the program (issue 10 point 2)."""

from __future__ import annotations

from pathlib import Path

from tests.waitpoints.helpers import run

PROGRAM = """
import "std/waitpoint"

pipeline main() {
  let a = create()
  let b = create("fixed")
  let b2 = create("fixed")
  println(a.status + " " + b.id + " same=" + to_string(b.id == b2.id))
  let k1 = create({key: "job-1"})
  let k2 = create({key: "job-1"})
  println("key same=" + to_string(k1.id == k2.id) + " key=" + k1.key)
  // fan-out: two tasks wait on one waitpoint; fan-in: main waits on two
  let w1 = spawn { return wait(a).value.x + 1 }
  let w2 = spawn { return wait(a).value.x + 2 }
  spawn {
    sleep(5ms)
    complete(a, {x: 10})
    complete(b, "two", {by: "me"})
  }
  let both = wait([a, b])
  println(both.map({ w -> to_string(w.value) }))
  println("by " + both[1].completed_by + " " + both[1].status)
  println("fan-out " + to_string(await(w1)) + " " + to_string(await(w2)))
  let again = complete(a, {x: 99})
  println("second completion kept " + to_string(again.value.x))
  let c = create()
  try {
    wait(c, {timeout: 20ms})
    println("no timeout?")
  } catch e {
    println(e.name + " " + e.category + " " + to_string(e.waitpoint_ids == [c.id]))
  }
  let d = create()
  spawn { cancel(d, {reason: "nope"}) }
  try {
    wait(d)
  } catch e {
    println(e.name + " " + e.category + " " + e.reason)
  }
  println(cancel(d).status)
}
"""


def test_create_wait_complete_cancel_in_memory(tmp_path: Path) -> None:
    (tmp_path / "p.harn").write_text(PROGRAM, encoding="utf-8")
    r = run("run", "p.harn", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "open fixed same=true",
        "key same=true key=job-1",
        "[{x: 10}, two]",
        "by me completed",
        "fan-out 11 12",
        "second completion kept 10",
        "WaitpointTimeoutError timeout true",
        "WaitpointCancelledError cancelled nope",
        "cancelled",
    ]


def test_derived_keys_differ_per_call_and_builtins_refuse_bad_input(tmp_path: Path) -> None:
    (tmp_path / "p.harn").write_text(
        """
pipeline main() {
  var ids = []
  for i in [1, 2, 3] {
    ids = ids + [waitpoint_create().key]
  }
  println(len(set(ids)))
  for bad in [{}, [], 5] {
    try {
      waitpoint_wait(bad)
    } catch e {
      println(e)
    }
  }
  try {
    waitpoint_complete("nope", 1)
  } catch e {
    println(e)
  }
}
""",
        encoding="utf-8",
    )
    r = run("run", "p.harn", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "3"
    assert "waitpoint_wait" in lines[1] and "waitpoint" in lines[1]
    assert "list of waitpoints is empty" in lines[2]
    assert "waitpoint_wait" in lines[3]
    assert lines[4].endswith("waitpoint_complete: no waitpoint nope")


def test_waitpoints_survive_snapshot_exit(tmp_path: Path) -> None:
    (tmp_path / "p.harn").write_text(
        """
pipeline main() {
  let a = waitpoint_create({metadata: {who: "ann"}})
  __snapshot_exit("s.json")
  let t = spawn { waitpoint_complete(a, "late") }
  println(waitpoint_wait(a).value + " " + a.metadata.who)
  println(waitpoint_create(a.id).status)
}
""",
        encoding="utf-8",
    )
    first = run("run", "p.harn", cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    resumed = run("run", "--resume", "s.json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["late ann", "completed"]


def test_nothing_completes_is_a_deadlock_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "p.harn").write_text(
        'pipeline main() {\n  waitpoint_wait(waitpoint_create("never"))\n}\n', encoding="utf-8"
    )
    r = run("run", "p.harn", cwd=tmp_path, timeout=30)
    assert r.returncode == 1
    assert "never" in r.stderr


def test_a_wait_nothing_can_complete_says_so(tmp_path: Path) -> None:
    """No store, nothing else running, a long timeout: the wait warns (once) that nothing
    can complete it and how to park it durably; a wait another task completes does not."""
    (tmp_path / "lonely.harn").write_text(
        'import "std/waitpoint"\n'
        "pipeline main() {\n"
        "  mock_time(1000)\n"
        '  let wp = create("approve-42")\n'
        "  try { wait(wp, {timeout: 1m}) } catch e { println(e.category) }\n"
        "}\n"
    )
    (tmp_path / "served.harn").write_text(
        'import "std/waitpoint"\n'
        "pipeline main() {\n"
        '  let wp = create("approve-43")\n'
        '  spawn { sleep(5ms)\n complete(wp, "ok") }\n'
        "  println(wait(wp, {timeout: 1m}).value)\n"
        "}\n"
    )
    served = run("run", "served.harn", cwd=tmp_path)
    assert served.returncode == 0, served.stderr
    assert served.stdout == "ok\n" and "warning" not in served.stderr
    lonely = run("run", "lonely.harn", cwd=tmp_path)
    assert lonely.stdout == "timeout\n", lonely.stderr  # the mock clock jumped the minute
    assert "waiting on waitpoint approve-42 in memory" in lonely.stderr
    assert "HARNPY_STORE" in lonely.stderr and lonely.stderr.count("warning") == 1
