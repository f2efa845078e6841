"""Resume across code changes (issue 10 point 5), in real subprocesses.

Every snapshot writer stores the sources the snapshot runs, content-addressed
(``.harn/sources/<sha256>.harn`` beside the snapshot, or the store's ``sources`` table for a
store checkpoint). A parked run then resumes on the code it started with whatever happened
to the files since (edited, deleted); ``--upgrade-code`` (``HARNPY_UPGRADE_CODE=1``)
continues it on the current files when the functions on its stack did not change, and
refuses naming the function when one did. A stored copy whose bytes do not have the sealed
hash is never run. Covered for program snapshots (``__snapshot_exit``), worker snapshots
(a parked root ``agent_loop`` with a tool) and store-backed waitpoint parks (both
backends).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from harnpy.runtime.sources import sources_dir
from tests.conftest import harnpy
from tests.waitpoints.helpers import run as run_with_store

LIB = """pub fn greet(n) {
  return "hello " + n
}
"""

MAIN = """import { greet } from "./lib"

fn helper(x) {
  return x * 2
}

fn step(n) {
  let a = n + 1
  __snapshot_exit("snap.json")
  return helper(a)
}

let r = step(20)
println(greet("v1") + " " + to_string(r))

fn spare() {
  return 0
}
"""


def _park_program(tmp_path: Path) -> tuple[Path, bytes]:
    (tmp_path / "lib.harn").write_text(LIB, encoding="utf-8")
    (tmp_path / "main.harn").write_text(MAIN, encoding="utf-8")
    first = harnpy("run", "main.harn", cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    snap = tmp_path / "snap.json"
    return snap, snap.read_bytes()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def _resume(tmp_path: Path, *extra: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return harnpy("run", "--resume", "snap.json", *extra, cwd=tmp_path, env=env)


def test_sources_are_stored_content_addressed_and_private(tmp_path: Path) -> None:
    snap, _ = _park_program(tmp_path)
    d = Path(sources_dir(str(snap)))
    assert d == tmp_path / ".harn" / "sources"
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    files = sorted(d.iterdir())
    want = sorted(hashlib.sha256(t.encode()).hexdigest() + ".harn" for t in (LIB, MAIN))
    assert [f.name for f in files] == want
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        assert hashlib.sha256(f.read_bytes()).hexdigest() + ".harn" == f.name


def test_edits_off_the_stack_resume_on_the_old_code_by_default(tmp_path: Path) -> None:
    snap, before = _park_program(tmp_path)
    _edit(tmp_path / "main.harn", "x * 2", "x * 3")
    _edit(tmp_path / "lib.harn", '"hello "', '"HELLO "')
    res = _resume(tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "hello v1 42\n"  # helper and greet as they were when it parked
    # a program snapshot is a fork point: the same file resumes again, on the new code now
    assert snap.read_bytes() == before
    up = _resume(tmp_path, "--upgrade-code")
    assert up.returncode == 0, up.stderr
    assert up.stdout == "HELLO v1 63\n"
    assert "function `helper` (main.harn:3) changed" in up.stderr
    assert "function `greet` (lib.harn:1) changed" in up.stderr
    env = _resume(tmp_path, env={"HARNPY_UPGRADE_CODE": "1"})
    assert env.returncode == 0 and env.stdout == "HELLO v1 63\n", env.stderr


def test_a_changed_function_on_the_stack_refuses_the_upgrade_naming_it(tmp_path: Path) -> None:
    snap, before = _park_program(tmp_path)
    _edit(tmp_path / "main.harn", "return helper(a)", "return helper(a) + 1000")
    res = _resume(tmp_path, "--upgrade-code")
    assert res.returncode == 2
    assert "error[E406]" in res.stderr
    assert "function `step` (main.harn:7) is on the parked stack and changed" in res.stderr
    assert res.stdout == ""
    assert snap.read_bytes() == before
    # without the opt-in it runs the code it started with
    old = _resume(tmp_path)
    assert old.returncode == 0 and old.stdout == "hello v1 42\n", old.stderr


def test_moving_adding_and_removing_functions_is_not_a_change_of_the_stack(
    tmp_path: Path,
) -> None:
    _park_program(tmp_path)
    main = tmp_path / "main.harn"
    text = main.read_text(encoding="utf-8")
    # helper moves below step (every code offset shifts, the script's top level too: it is
    # on the stack) and calls a new function; spare, which nothing holds, is removed
    text = text.replace("fn helper(x) {\n  return x * 2\n}\n", "")
    text = text.replace("fn spare() {\n  return 0\n}\n", "")
    text = text.replace(
        "let r = step(20)",
        "fn triple(x) {\n  return x * 3\n}\n\nfn helper(x) {\n  return triple(x)\n}\n\n"
        "let r = step(20)",
    )
    main.write_text(text, encoding="utf-8")
    res = _resume(tmp_path, "--upgrade-code")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "hello v1 63\n"
    assert "function `helper` (main.harn:14) changed" in res.stderr


def test_a_changed_top_level_statement_is_refused(tmp_path: Path) -> None:
    snap, before = _park_program(tmp_path)
    _edit(tmp_path / "main.harn", "let r = step(20)", "let r = step(20) + 1")
    res = _resume(tmp_path, "--upgrade-code")
    assert res.returncode == 2
    assert "the top level (main.harn:1) is on the parked stack and changed" in res.stderr
    assert snap.read_bytes() == before


def test_a_new_top_level_binding_is_refused(tmp_path: Path) -> None:
    snap, before = _park_program(tmp_path)
    _edit(tmp_path / "lib.harn", "pub fn greet(n) {", 'let word = "hi "\n\npub fn greet(n) {')
    res = _resume(tmp_path, "--upgrade-code")
    assert res.returncode == 2
    assert "new top-level binding `word` in lib.harn was never initialised" in res.stderr
    assert snap.read_bytes() == before


def test_deleted_sources_resume_from_the_stored_copy(tmp_path: Path) -> None:
    _park_program(tmp_path)
    (tmp_path / "main.harn").unlink()
    (tmp_path / "lib.harn").unlink()
    res = _resume(tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "hello v1 42\n"


def test_a_tampered_stored_copy_is_refused(tmp_path: Path) -> None:
    snap, before = _park_program(tmp_path)
    stored = Path(sources_dir(str(snap))) / (hashlib.sha256(MAIN.encode()).hexdigest() + ".harn")
    stored.write_text(MAIN.replace("x * 2", "x * 1000"), encoding="utf-8")
    # the file still has the sealed hash: it decides, the stored copy is not needed
    ok = _resume(tmp_path)
    assert ok.returncode == 0 and ok.stdout == "hello v1 42\n", ok.stderr
    _edit(tmp_path / "main.harn", "x * 2", "x * 3")
    res = _resume(tmp_path)
    assert res.returncode == 2
    assert "error[E406]" in res.stderr
    assert "does not have the snapshot's hash" in res.stderr
    assert res.stdout == ""
    assert snap.read_bytes() == before
    # an upgrade cannot tell what changed without the code it ran either
    up = _resume(tmp_path, "--upgrade-code")
    assert up.returncode == 2 and "is not stored" in up.stderr, up.stderr


def test_upgrade_code_applies_to_resume_only(tmp_path: Path) -> None:
    (tmp_path / "main.harn").write_text('println("x")\n', encoding="utf-8")
    res = harnpy("run", "main.harn", "--upgrade-code", cwd=tmp_path)
    assert res.returncode == 2 and "--upgrade-code applies to --resume" in res.stderr


WORKER = """
fn make_tools(label) {
  return tool_define(tool_registry(), "record", "record a note", {
    parameters: {note: "string"},
    handler: { args ->
      append_file("log.txt", "tool:" + args.note + ":" + label + "\\n")
      return "recorded " + args.note
    },
  })
}

pipeline main() {
  llm_mock({tool_calls: [{id: "t1", name: "record", arguments: {note: "one"}}]})
  llm_mock({tool_calls: [{id: "p1", name: "agent_await_resumption", arguments: {reason: "x"}}]})
  llm_mock({tool_calls: [{id: "t2", name: "record", arguments: {note: "two"}}]})
  llm_mock({text: "all done"})
  const r = agent_loop("work", nil, {provider: "mock", tools: make_tools("L"), max_iterations: 6})
  println(r.snapshot_path)
}
"""

WORKER_ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": ".harn/workers"}


@pytest.mark.parametrize("upgrade", [False, True])
def test_worker_resumes_after_a_tool_description_and_handler_edit(
    tmp_path: Path, upgrade: bool
) -> None:
    (tmp_path / "w.harn").write_text(WORKER, encoding="utf-8")
    first = harnpy("run", "w.harn", cwd=tmp_path, env=WORKER_ENV)
    assert first.returncode == 0, first.stderr
    snap = first.stdout.strip().splitlines()[-1]
    assert (tmp_path / ".harn" / "sources").is_dir()
    _edit(tmp_path / "w.harn", '"record a note"', '"record a note (v2)"')
    _edit(tmp_path / "w.harn", '"tool:" + args.note', '"tool-v2:" + args.note')
    flags = ["--upgrade-code"] if upgrade else []
    res = harnpy("run", "--resume", snap, *flags, cwd=tmp_path, env=WORKER_ENV)
    assert res.returncode == 0, res.stderr
    assert "completed" in res.stderr
    log = (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()
    # the handler ran once before the park; after it, the old or the new version
    assert log == ["tool:one:L", "tool-v2:two:L" if upgrade else "tool:two:L"]
    assert json.loads((tmp_path / snap).read_text(encoding="utf-8"))["status"] == "completed"


def test_worker_resumes_from_the_stored_copy_when_its_file_is_gone(tmp_path: Path) -> None:
    (tmp_path / "w.harn").write_text(WORKER, encoding="utf-8")
    first = harnpy("run", "w.harn", cwd=tmp_path, env=WORKER_ENV)
    assert first.returncode == 0, first.stderr
    snap = first.stdout.strip().splitlines()[-1]
    (tmp_path / "w.harn").unlink()
    res = harnpy("run", "--resume", snap, "--upgrade-code", cwd=tmp_path, env=WORKER_ENV)
    assert res.returncode == 0, res.stderr
    log = (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()
    assert log == ["tool:one:L", "tool:two:L"]


PARK = """
import "std/waitpoint"

fn shown(v) {
  return "got " + json_stringify(v)
}

fn step(n) {
  let local = "kept-" + to_string(n)
  let wp = create({id: "approval"})
  let got = wait(wp)
  println(shown(got.value) + " " + local)
  return got.value.ok
}

pipeline main() {
  let r = step(7)
  println("result " + to_string(r))
}
"""


def _park_on_store(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "park.harn").write_text(PARK, encoding="utf-8")
    first = run_with_store("run", "park.harn", cwd=tmp_path, store=store_url)
    assert first.returncode == 3, first.stderr
    done = run_with_store(
        "waitpoint", "complete", "approval", '{"ok": true}', cwd=tmp_path, store=store_url
    )
    assert done.returncode == 0, done.stderr


def test_waitpoint_park_keeps_its_sources_in_the_store(tmp_path: Path, store_url: str) -> None:
    from harnpy.store import open_store

    _park_on_store(tmp_path, store_url)
    sha = hashlib.sha256(PARK.encode()).hexdigest()
    assert open_store(store_url).get_source(sha) == PARK.encode()
    assert not (tmp_path / ".harn" / "sources").exists()  # the store holds them
    os.unlink(tmp_path / "park.harn")
    res = run_with_store("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ['got {"ok":true} kept-7', "result true"]


def test_waitpoint_upgrade_on_the_store(tmp_path: Path, store_url: str) -> None:
    _park_on_store(tmp_path, store_url)
    src = tmp_path / "park.harn"
    _edit(src, 'println(shown(got.value) + " " + local)', 'println(shown(got.value) + "!" + local)')
    refused = run_with_store(
        "waitpoint", "resume", cwd=tmp_path, store=store_url, env={"HARNPY_UPGRADE_CODE": "1"}
    )
    assert "function `step` (park.harn:8) is on the parked stack and changed" in (
        refused.stdout + refused.stderr
    )
    # the park is left as it was: the edit reverted, an upgrade of a function off the stack
    src.write_text(PARK.replace('"got "', '"GOT "'), encoding="utf-8")
    res = run_with_store(
        "waitpoint", "resume", cwd=tmp_path, store=store_url, env={"HARNPY_UPGRADE_CODE": "1"}
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ['GOT {"ok":true} kept-7', "result true"]
