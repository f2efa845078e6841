"""Agent-worker checkpoints in the SQL store (issue 10 point 1): with ``--store`` /
``HARNPY_STORE`` and no ``HARN_WORKER_STATE_DIR``, a parked worker's snapshot is the store's
checkpoint row ``<url>#<worker id>``, so a process elsewhere (another working directory,
another machine) resumes it, exactly once; ``harnpy workers ls`` lists it; a resumer
killed mid-run gives the park back when its lease expires. Every test runs on SQLite and on
PostgreSQL (``store_url``)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO, harnpy

APPROVAL = """
tool note(text: string) -> string {
  description "Record a step."
  append_file("STEPS", text + "\\n")
  return "noted"
}
pipeline main() {
  llm_mock({tool_calls: [{id: "a", name: "note", arguments: {text: "before"}}]})
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption",
    arguments: {reason: "needs approval"}}]})
  llm_mock({tool_calls: [{id: "b", name: "note", arguments: {text: "after"}}]})
  llm_mock({text: "shipped"})
  const r = agent_loop("ship it", nil, {provider: "mock", tools: [note], max_iterations: 8})
  println(r.status)
  println(r.snapshot_path)
}
"""


def _env(store_url: str, steps: Path, **extra: str) -> dict[str, str]:
    # no state directory: checkpoints go to the store; STEPS is where the tool writes
    return {
        "HARN_LLM_CALLS_DISABLED": "1",
        "HARN_WORKER_STATE_DIR": "",
        "HARNPY_STORE": store_url,
        "PYTHONPATH": str(REPO),
        **extra,
    }


def _park(tmp_path: Path, store_url: str, prog: str = APPROVAL) -> str:
    """Run ``prog`` in ``tmp_path/a``; returns the checkpoint reference it parked at."""
    a = tmp_path / "a"
    a.mkdir()
    (a / "w.harn").write_text(prog, encoding="utf-8")
    p = harnpy("run", "w.harn", cwd=a, env=_env(store_url, a / "STEPS"))
    assert p.returncode == 0, p.stderr
    status, ref = p.stdout.strip().splitlines()[-2:]
    assert status == "suspended", p.stdout
    return ref


def _steps(d: Path) -> list[str]:
    f = d / "STEPS"
    return f.read_text(encoding="utf-8").split() if f.exists() else []


def test_a_worker_parked_with_a_store_is_a_row_and_resumes_in_another_directory(
    tmp_path: Path, store_url: str
) -> None:
    ref = _park(tmp_path, store_url)
    wid = ref.rpartition("#")[2]
    assert ref.startswith(("sqlite://", "postgresql://")) and wid.startswith("worker_")
    assert not (tmp_path / "a" / ".harn" / "workers").exists()  # no snapshot file anywhere
    assert _steps(tmp_path / "a") == ["before"]
    # another process in another working directory (another machine: it shares only the
    # store) resumes it by a unique prefix of its id
    b = tmp_path / "b"
    b.mkdir()
    env = _env(store_url, b / "STEPS")
    ls = harnpy("workers", "ls", "--json", cwd=b, env=env)
    (row,) = json.loads(ls.stdout)
    assert (row["worker_id"], row["status"], row["snapshot_path"]) == (wid, "suspended", ref)
    assert row["reason"] == "needs approval"
    r = harnpy("run", "--resume", wid.removeprefix("worker_")[:13], cwd=b, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "shipped"
    assert f"worker {wid} completed" in r.stderr
    assert _steps(b) == ["after"]  # the turn before the park did not run again
    # exactly once: the checkpoint now says completed, a second resume is refused
    again = harnpy("run", "--resume", ref, cwd=b, env=env)
    assert again.returncode == 1
    assert "HARN-SUS-003" in again.stderr and "status=completed" in again.stderr
    assert _steps(b) == ["after"]
    assert json.loads(harnpy("workers", "ls", "--json", cwd=b, env=env).stdout) == []


def test_concurrent_resumes_of_one_stored_checkpoint_have_one_winner(
    tmp_path: Path, store_url: str
) -> None:
    ref = _park(tmp_path, store_url)
    b = tmp_path / "b"
    b.mkdir()
    env = {**os.environ, **_env(store_url, b / "STEPS")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "harnpy", "run", "--resume", ref],
            cwd=b,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    codes = sorted(c for c, _ in results)
    assert codes == [0, 1, 1, 1], results
    for code, err in results:
        if code == 1:
            assert "HARN-SUS-006" in err or "HARN-SUS-003" in err, err
    assert _steps(b) == ["after"]  # the resumed turn ran once


SLOW = """
tool slow(text: string) -> string {
  description "A slow step."
  append_file("STEPS", text + "\\n")
  while file_exists("HOLD") { sleep(50) }
  return "done"
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "go"}}]})
  llm_mock({tool_calls: [{id: "s", name: "slow", arguments: {text: "slow"}}]})
  llm_mock({text: "finished"})
  const r = agent_loop("run", nil, {provider: "mock", tools: [slow], max_iterations: 6})
  println(r.status)
  println(r.snapshot_path)
}
"""


def test_a_resumer_killed_mid_run_gives_the_park_back_when_its_lease_expires(
    tmp_path: Path, store_url: str
) -> None:
    ref = _park(tmp_path, store_url, SLOW)
    b = tmp_path / "b"
    b.mkdir()
    (b / "HOLD").write_text("")  # the slow tool waits while this file exists
    env = _env(store_url, b / "STEPS", HARNPY_CHECKPOINT_LEASE_MS="1500")
    p = subprocess.Popen(
        [sys.executable, "-m", "harnpy", "run", "--resume", ref],
        cwd=b,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _steps(b) != ["slow"]:  # the resumed turn is running its tool
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.05)
    time.sleep(1.0)  # longer than a third of the lease: it was renewed at least once
    # while the claim's lease is renewed a second resume is refused
    busy = harnpy("run", "--resume", ref, cwd=b, env=env)
    assert busy.returncode == 1 and "HARN-SUS-006" in busy.stderr, busy.stderr
    ls = json.loads(harnpy("workers", "ls", "--all", "--json", cwd=b, env=env).stdout)
    assert [r["status"] for r in ls] == ["running"]
    os.kill(p.pid, signal.SIGKILL)  # the machine is lost mid-turn
    p.wait()
    time.sleep(2.0)  # its lease expires
    ls = json.loads(harnpy("workers", "ls", "--json", cwd=b, env=env).stdout)
    assert [r["status"] for r in ls] == ["suspended"]
    # the next resume starts again from the last park: the killed turn runs again (at
    # least once inside a turn), and the outcome is committed once
    (b / "HOLD").unlink()
    r = harnpy("run", "--resume", ref, cwd=b, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "finished"
    assert _steps(b) == ["slow", "slow"]
    again = harnpy("run", "--resume", ref, cwd=b, env=env)
    assert again.returncode == 1 and "status=completed" in again.stderr


def test_resume_agent_in_another_process_finds_the_worker_in_the_store(
    tmp_path: Path, store_url: str
) -> None:
    ref = _park(tmp_path, store_url)
    wid = ref.rpartition("#")[2]
    b = tmp_path / "b"
    b.mkdir()
    (b / "r.harn").write_text(
        # a script's resume_agent answers from the script's own mock queue
        "pipeline main() {\n"
        '  llm_mock({tool_calls: [{id: "b", name: "note", arguments: {text: "after"}}]})\n'
        '  llm_mock({text: "shipped"})\n'
        f'  const s = wait_agent(resume_agent("{wid}", "approved"))\n'
        "  println(s.status)\n  println(s.result.summary)\n}\n",
        encoding="utf-8",
    )
    r = harnpy("run", "r.harn", cwd=b, env=_env(store_url, b / "STEPS"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["completed", "shipped"]
    assert _steps(b) == ["after"]


TWO_PARKS = """
pipeline main() {
  llm_mock({text: "first answer MARKER-4711", tool_calls: [{id: "p1",
    name: "agent_await_resumption", arguments: {reason: "first"}}]})
  llm_mock({text: "second", tool_calls: [{id: "p2", name: "agent_await_resumption",
    arguments: {reason: "second"}}]})
  llm_mock({text: "all done"})
  const r = agent_loop("go", nil, {provider: "mock", max_iterations: 8})
  println(r.status)
  println(r.snapshot_path)
}
"""


def _rows(store_url: str, worker_id: str) -> list[tuple[str, int, bytes]]:
    from harnpy.store import open_store

    st = open_store(store_url)
    with st.read() as c:
        got = c.all(
            "SELECT generation, seq, body FROM transcript_rows WHERE worker_id = ? "
            "ORDER BY generation, seq",
            (worker_id,),
        )
    return [(str(g), int(s), bytes(b)) for g, s, b in got]


def test_a_stored_worker_transcript_is_rows_appended_per_park_not_in_the_checkpoint(
    tmp_path: Path, store_url: str
) -> None:
    from harnpy.store import open_store

    ref = _park(tmp_path, store_url, TWO_PARKS)
    wid = ref.rpartition("#")[2]
    first = _rows(store_url, wid)
    assert first and any(b"MARKER-4711" in b for _, _, b in first)
    b = tmp_path / "b"
    b.mkdir()
    env = _env(store_url, b / "STEPS")
    r = harnpy("run", "--resume", ref, cwd=b, env=env)
    assert r.returncode == 3, r.stderr  # parked again
    second = _rows(store_url, wid)
    # appended: the rows of the first park are unchanged, new ones follow
    assert len(second) > len(first) and second[: len(first)] == first
    # the messages are in the rows only, not inside the checkpoint's body
    got = open_store(store_url).get_checkpoint(wid)
    assert got is not None and b"MARKER-4711" not in got[1]
    r = harnpy("run", "--resume", ref, cwd=b, env=env)
    assert r.returncode == 0, r.stderr
    # the summary joins the text of every turn: the earlier ones came back from the rows
    assert r.stdout.strip().splitlines() == ["first answer MARKER-4711", "second", "all done"]


def test_a_damaged_transcript_row_refuses_the_resume_and_keeps_the_park(
    tmp_path: Path, store_url: str
) -> None:
    from harnpy.store import open_store

    ref = _park(tmp_path, store_url, TWO_PARKS)
    wid = ref.rpartition("#")[2]
    st = open_store(store_url)
    with st.txn() as c:
        c.run(
            "UPDATE transcript_rows SET body = ? WHERE worker_id = ? AND seq = 0",
            (b'["m",{"role":"user","content":"forged"}]', wid),
        )
    before = st.get_checkpoint(wid)
    b = tmp_path / "b"
    b.mkdir()
    r = harnpy("run", "--resume", ref, cwd=b, env=_env(store_url, b / "STEPS"))
    assert r.returncode == 1
    assert "HARN-SUS-004" in r.stderr and "hash differs" in r.stderr, r.stderr
    after = st.get_checkpoint(wid)
    assert after is not None and before is not None
    assert after[0].status == "suspended" and after[1] == before[1]


TRIGGERED = """
tool note(text: string) -> string {
  description "Record a step."
  append_file("STEPS", text + "\\n")
  return "noted"
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "wait",
    conditions: {trigger: {kind: "go", provider: "webhook"},
                 timeout: {duration_minutes: 30, on_timeout: "resume_with_summary"}}}}]})
  llm_mock({tool_calls: [{id: "m", name: "note", arguments: {text: "resumed"}}]})
  llm_mock({text: "done"})
  const r = agent_loop("go", nil, {provider: "mock", tools: [note], max_iterations: 5})
  println(r.status)
  println(r.snapshot_path)
}
"""


def test_harnpy_worker_resumes_a_due_wait_of_a_stored_checkpoint_once(
    tmp_path: Path, store_url: str
) -> None:
    from harnpy.lifecycle.triggers.store import open_store

    ref = _park(tmp_path, store_url, TRIGGERED)
    wid = ref.rpartition("#")[2]
    s = open_store(store_url)
    (wait,) = s.list_waits()
    assert wait.snapshot_path == ref and wait.worker_id == wid
    wait.deadline_ms = 1  # its timeout is due now
    s.update(wait)
    # a runner in another directory: it shares only the store with the parked program
    b = tmp_path / "b"
    b.mkdir()
    env = _env(store_url, b / "STEPS")
    for _ in range(2):  # the second pass finds nothing to do
        w = harnpy("worker", "--once", cwd=b, env=env)
        assert w.returncode == 0, w.stderr
    assert _steps(b) == ["resumed"]
    rec = s.get(wait.id)
    assert rec is not None and rec.status == "completed"
    info = s.checkpoint_info(wid)
    assert info is not None and info.status == "completed"


def test_an_unreachable_store_at_park_time_names_the_store_not_a_snapshot_file(
    tmp_path: Path,
) -> None:
    # nothing listens on port 9: the park cannot be written; the error says which store
    # failed (before: "cannot write worker snapshot .harn/workers/<id>.json", a file that
    # was never meant to exist) and no snapshot file appears instead
    a = tmp_path / "a"
    a.mkdir()
    (a / "w.harn").write_text(APPROVAL, encoding="utf-8")
    url = "postgresql://nobody@127.0.0.1:9/nodb"
    p = harnpy("run", "w.harn", cwd=a, env=_env(url, a / "STEPS"))
    assert p.returncode != 0
    assert "cannot write the checkpoint of worker worker_" in p.stderr
    assert f"store {url}: cannot connect" in p.stderr
    assert ".harn/workers" not in p.stderr and "Traceback" not in p.stderr
    assert not (a / ".harn" / "workers").exists()


def test_a_reference_to_a_store_that_does_not_exist_creates_no_database(
    tmp_path: Path,
) -> None:
    import sqlite3

    from harnpy.lifecycle.checkpoint_store import checkpoint_for
    from harnpy.store import StoreError

    missing = tmp_path / "gone" / "x.db"
    plain = tmp_path / "plain.db"
    with sqlite3.connect(plain) as c:
        c.execute("CREATE TABLE t (x)")
    for ref, says in (
        (f"sqlite:///{missing}#worker_1", "no such database file"),
        (f"sqlite:///{plain}#worker_1", "not a harnpy store"),
    ):
        try:
            checkpoint_for(ref)
        except StoreError as e:
            assert says in e.message and e.kind == "unreachable"
        else:
            raise AssertionError(f"{ref} opened")
    # nothing was made on the way: no directory, no file, no harnpy tables
    assert not (tmp_path / "gone").exists()
    with sqlite3.connect(plain) as c:
        names = [r[0] for r in c.execute("SELECT name FROM sqlite_master")]
    assert names == ["t"]
    # run --resume of such a reference says so (it used to say 'no such checkpoint')
    p = harnpy("run", "--resume", f"sqlite:///{missing}#worker_1", cwd=tmp_path)
    assert p.returncode == 1 and "no such database file" in p.stderr, p.stderr
    assert not (tmp_path / "gone").exists()


def test_workers_show_takes_the_reference_a_park_prints(tmp_path: Path, store_url: str) -> None:
    ref = _park(tmp_path, store_url)
    wid = ref.rpartition("#")[2]
    b = tmp_path / "b"
    b.mkdir()
    # no store configured: the reference names it (as for run --resume REF)
    env = _env(store_url, b / "STEPS", HARNPY_STORE="")
    p = harnpy("workers", "show", ref, cwd=b, env=env)
    assert p.returncode == 0 and f"worker       {wid}" in p.stdout, p.stderr
    # ... and the resume command it suggests is one that works from this shell: the full
    # reference (a short id finds nothing here, with no store configured)
    (hint,) = [ln for ln in p.stdout.splitlines() if ln.startswith("resume with")]
    cmd = shlex.split(hint.removeprefix("resume with").removesuffix("[--input TEXT]"))
    assert cmd[:3] == ["harnpy", "run", "--resume"] and cmd[3] == ref, hint
    # the configured store: the same, and the short id is enough
    p = harnpy("workers", "show", ref, cwd=b, env=_env(store_url, b / "STEPS"))
    assert p.returncode == 0 and "status       suspended" in p.stdout, p.stderr
    assert f"harnpy run --resume {wid[len('worker_') :][:8]} " in p.stdout, p.stdout
    r = harnpy(*cmd[1:], cwd=b, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "shipped", r.stderr
    # another store configured: one error naming both, nothing looked up in the wrong one
    other = f"sqlite:///{tmp_path / 'other.db'}"
    p = harnpy("workers", "show", ref, "--store", other, cwd=b, env=env)
    assert p.returncode == 2 and "is a checkpoint of store" in p.stderr, p.stderr
    assert not (tmp_path / "other.db").exists()


def test_an_ambiguous_prefix_of_stored_workers_is_one_error(tmp_path: Path, store_url: str) -> None:
    first = _park(tmp_path, store_url).rpartition("#")[2]
    (tmp_path / "a").rename(tmp_path / "a1")
    second = _park(tmp_path, store_url).rpartition("#")[2]
    n = next(i for i, (x, y) in enumerate(zip(first, second)) if x != y)
    common = first[len("worker_") : n]  # both ids start with the same time stamp
    b = tmp_path / "b"
    b.mkdir()
    p = harnpy("run", "--resume", common, cwd=b, env=_env(store_url, b / "STEPS"))
    # it used to fall through to `cannot read snapshot <prefix>` (E404)
    assert p.returncode == 2 and f"`{common}` is the start of 2 worker ids" in p.stderr, p.stderr
    assert "E404" not in p.stderr and not _steps(b)


def test_a_damaged_checkpoint_row_is_named_not_lost(tmp_path: Path) -> None:
    # SQLite keeps what a hand edit puts in a column: a row whose version is not a number
    # used to vanish from `workers ls` without a word, and its resume (by id or reference)
    # said 'cannot read snapshot' (E404) or called it 'a program parked on a waitpoint'
    import sqlite3

    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    ref = _park(tmp_path, url)
    wid = ref.rpartition("#")[2]
    with sqlite3.connect(db) as c:
        c.execute("UPDATE checkpoints SET version = 'abc'")
    env = _env(url, tmp_path / "STEPS")
    ls = harnpy("workers", "ls", cwd=tmp_path, env=env)
    assert ls.returncode == 0 and f"checkpoint {wid}: damaged row" in ls.stderr, ls.stderr
    for target in (wid, wid[len("worker_") : len("worker_") + 10], ref):
        p = harnpy("run", "--resume", target, cwd=tmp_path, env=env)
        assert p.returncode == 1, p.stderr
        assert f"the row of checkpoint {wid} is damaged" in p.stderr, (target, p.stderr)
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT version, status FROM checkpoints").fetchall() == [
            ("abc", "suspended")
        ]


def test_a_sqlite_url_naming_a_directory_is_refused_by_waits_as_by_checkpoints(
    tmp_path: Path,
) -> None:
    # `sqlite:///DIR` names DIR itself: the checkpoints refuse it as a directory, and the
    # waits' store used to read the resolved path again as a plain setting and make
    # DIR/harnpy.sqlite3 (so `workers ls` created a database and listed nothing)
    d = tmp_path / "data"
    d.mkdir()
    p = harnpy("workers", "ls", "--store", f"sqlite:///{d}", cwd=tmp_path)
    assert p.returncode == 2 and "is a directory, not a database file" in p.stderr, p.stderr
    assert list(d.iterdir()) == []
    # a plain path naming a directory still means harnpy.sqlite3 inside it
    p = harnpy("workers", "ls", "--store", str(d), cwd=tmp_path)
    assert p.returncode == 0 and "no parked workers" in p.stdout, p.stderr


def test_a_row_holding_another_workers_body_is_refused_and_both_parks_are_kept(
    tmp_path: Path,
) -> None:
    # the bodies are sealed, but a copy of worker A's sealed body into worker B's row would
    # resume A's park a second time under B's claim: the row key must be the body's id
    import sqlite3

    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    for d in ("one", "two"):
        (tmp_path / d).mkdir()
    ref_a = _park(tmp_path / "one", url)
    ref_b = _park(tmp_path / "two", url)
    a, b = ref_a.rpartition("#")[2], ref_b.rpartition("#")[2]
    cols = "body, size, sha256, park_id"
    with sqlite3.connect(db) as c:
        row = c.execute(f"SELECT {cols} FROM checkpoints WHERE worker_id = ?", (a,)).fetchone()
        c.execute(
            "UPDATE checkpoints SET body = ?, size = ?, sha256 = ?, park_id = ? "
            "WHERE worker_id = ?",
            (*row, b),
        )
        # and A's transcript rows, so that the body's own checks all pass
        c.execute("DELETE FROM transcript_rows WHERE worker_id = ?", (b,))
        c.execute(
            "INSERT INTO transcript_rows (worker_id, generation, stream, seq, body) "
            "SELECT ?, generation, stream, seq, body FROM transcript_rows WHERE worker_id = ?",
            (b, a),
        )
    env = _env(url, tmp_path / "STEPS")
    p = harnpy("run", "--resume", ref_b, cwd=tmp_path, env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "HARN-SUS-004" in p.stderr and f"the checkpoint row {b} holds the snapshot of" in (
        p.stderr
    )
    assert _steps(tmp_path) == []  # nothing of A's turn ran again
    with sqlite3.connect(db) as c:
        rows = dict(c.execute("SELECT worker_id, status FROM checkpoints").fetchall())
    assert rows == {a: "suspended", b: "suspended"}
    ok = harnpy("run", "--resume", ref_a, cwd=tmp_path, env=env)
    assert ok.returncode == 0, ok.stderr


def test_a_row_whose_mode_column_was_lost_is_listed_and_resumed_by_prefix(
    tmp_path: Path, store_url: str
) -> None:
    # the mode column is a listing aid; the sealed body says what the worker is. A row that
    # lost it (an edit by hand, a partial migration) is neither hidden from `workers ls` nor
    # "no such file" to `run --resume PREFIX`
    from harnpy.store import open_store

    ref = _park(tmp_path, store_url)
    wid = ref.rpartition("#")[2]
    st = open_store(store_url)
    try:
        with st.txn() as c:
            c.run("UPDATE checkpoints SET mode = NULL WHERE worker_id = ?", (wid,))
    finally:
        st.close()
    b = tmp_path / "b"
    b.mkdir()
    env = _env(store_url, b / "STEPS")
    ls = harnpy("workers", "ls", "--json", cwd=b, env=env)
    assert ls.returncode == 0, ls.stderr
    assert [w["worker_id"] for w in json.loads(ls.stdout)] == [wid]
    r = harnpy("run", "--resume", wid[: len("worker_") + 8], cwd=b, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "shipped"
    assert _steps(b) == ["after"]
