"""End to end: ``harnpy doc`` (issue 14 §4), ``harnpy test`` (§6), colour and message style
(§11), ``__snapshot_exit``'s exit status (§11) and state directories left by a run (§11)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import REPO, harn_files, harnpy


def test_doc_prints_the_repl_doc_text() -> None:
    from harnpy.docgen import builtin_doc
    from harnpy.repl import doc_text
    from harnpy.runtime.session import Session

    r = harnpy("doc", "split")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("split(s, sep?)  (builtin)\n")
    assert r.stdout == builtin_doc("split") + "\n" == doc_text(Session(), "split") + "\n"
    m = harnpy("doc", "list.map")
    assert m.returncode == 0 and m.stdout.startswith("list.map(f)  (method)")
    std = harnpy("doc", "std/agent/loop.agent_loop")
    assert std.returncode == 0 and 'from "std/agent/loop"' in std.stdout


def test_doc_of_an_unknown_name_suggests_one() -> None:
    r = harnpy("doc", "lenn")
    assert r.returncode == 1
    assert r.stderr == (
        "harnpy doc: error: no builtin, method or std/ function named lenn (did you mean `len`?)\n"
    )


def _project(root: Path) -> None:
    t = root / "tests"
    t.mkdir()
    (t / "ok.harn").write_text('println("hi")\n')
    (t / "ok.expected").write_text("hi\n")
    (t / "wrong.harn").write_text('println("x")\nprintln("y")\n')
    (t / "wrong.expected").write_text("x\nz\n")
    (t / "boom.harn").write_text('throw "boom"\n')
    (t / "boom.error").write_text("boom\n")
    (t / "math.harn").write_text(
        "fn double(x) { return x * 2 }\n"
        "pipeline test_double() { assert_eq(double(21), 42) }\n"
        "pipeline test_broken() { assert_eq(double(1), 3) }\n"
    )
    (t / "lib.harn").write_text("pub fn helper() { return 1 }\n")  # a helper: not run
    (t / "later.harn").write_text('println("not yet")\n')
    (t / "later.skip").write_text("")


def test_harnpy_test_runs_a_project_with_diffs_skips_junit_and_json(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "tests" / ".harn" / "workers").mkdir(parents=True)  # a state dir: ignored
    r = harnpy("test", "--junit", str(tmp_path / "report.xml"), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    out = r.stdout
    assert out.splitlines()[-1] == "3 passed, 2 failed, 1 skipped"
    assert "FAIL  wrong.harn: output differs from expected" in out
    assert "    -z\n    +y\n" in out  # the diff, expected first
    assert "FAIL  math.harn::test_broken:" in out and "expected 3, got 2" in out
    assert "SKIP  later.harn" in out
    assert "lib.harn" not in out and ".harn/" not in out
    suite = ET.parse(tmp_path / "report.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("6", "2", "1")
    names = {tc.get("name") for tc in suite.iter("testcase")}
    assert "math.harn::test_double" in names
    j = harnpy("test", "tests", "--json", cwd=tmp_path)
    doc = json.loads(j.stdout)
    assert doc["summary"] == {"passed": 3, "failed": 2, "skipped": 1}
    by = {c["name"]: c for c in doc["cases"]}
    assert by["wrong.harn"]["status"] == "failed" and "+y" in by["wrong.harn"]["diff"]
    assert by["ok.harn"]["status"] == "passed"
    f = harnpy("test", "tests", "--filter", "math", "-v", cwd=tmp_path)
    assert "PASS  math.harn::test_double" in f.stdout
    assert f.stdout.splitlines()[-1] == "1 passed, 1 failed"


def test_harnpy_test_refuses_a_missing_path(tmp_path: Path) -> None:
    r = harnpy("test", "nowhere", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == "harnpy test: error: no such file or directory: nowhere\n"


def test_snapshot_exit_exits_with_the_parked_status(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text('println("before")\n__snapshot_exit("s.json")\nprintln("after")\n')
    r = harnpy("run", str(prog), cwd=tmp_path)
    assert (r.returncode, r.stdout) == (3, "before\n")
    resumed = harnpy("run", "--resume", "s.json", cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout) == (0, "after\n")


def test_cli_messages_name_the_command_and_share_one_prefix(tmp_path: Path) -> None:
    r = harnpy("run", str(tmp_path / "missing.harn"))
    assert r.stderr.startswith(f"harnpy run: error: cannot read {tmp_path / 'missing.harn'}")
    c = harnpy("check", str(tmp_path / "missing.harn"))
    assert c.stderr.startswith("harnpy check: error: cannot read")
    bad = tmp_path / "bad.json"
    bad.write_text('{"_type": "worker_snapshot"}')
    w = harnpy("run", "--resume", str(bad), cwd=tmp_path)
    assert w.returncode == 1
    assert w.stderr.startswith("harnpy run --resume: error[HARN-SUS-004]: failed to load")
    assert "resume_agent" not in w.stderr  # the user ran `harnpy run --resume`


def test_colour_on_a_terminal_only_and_never_with_no_color(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    prog = tmp_path / "bad.harn"
    prog.write_text("let x = 1 / 0\n")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"

    def on_tty(extra: dict[str, str]) -> str:
        child = pexpect.spawn(
            sys.executable,
            ["-m", "harnpy", "run", str(prog)],
            env={**env, **extra},
            encoding="utf-8",
            timeout=60,
        )
        child.expect(pexpect.EOF)
        return str(child.before)

    coloured = on_tty({})
    assert "\x1b[1;31merror[E303]\x1b[0m" in coloured
    assert "\x1b[" not in on_tty({"NO_COLOR": "1"})
    piped = harnpy("run", str(prog), env={"TERM": "xterm-256color"})
    assert "error[E303]" in piped.stderr and "\x1b[" not in piped.stderr


def test_a_run_inside_examples_leaves_state_the_tests_do_not_pick_up(tmp_path: Path) -> None:
    """Running the lifecycle example where it lives writes `.harn/` there (as the README
    says); a `.harn` folder must not be taken for a program by the tests or `harnpy test`."""
    ex = tmp_path / "examples"
    shutil.copytree(REPO / "examples", ex)
    life = ex / "lifecycle"
    env = {"HARN_WORKER_STATE_DIR": ""}  # the default: .harn/workers in the working dir
    r = harnpy("run", "approval.harn", "--llm-mock", "approval.jsonl", cwd=life, env=env)
    assert r.returncode == 0, r.stderr
    assert (life / ".harn" / "workers").is_dir()
    (ex / ".harn").mkdir()  # as if a program had been run from examples/ itself
    found = harn_files(ex, recursive=True)
    assert found and all(p.is_file() and ".harn" not in p.parent.parts for p in found)
    t = harnpy("test", str(ex / "tour"), cwd=tmp_path)
    assert t.returncode == 0, t.stdout + t.stderr
    cases = len(list((ex / "tour").glob("*.expected")))
    assert cases >= 5
    assert t.stdout.splitlines()[-1] == f"{cases} passed, 0 failed"
