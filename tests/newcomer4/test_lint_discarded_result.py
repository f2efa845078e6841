"""L005 (found as a new user): ``fn double(x) { x * 2 }`` returns nil — a named fn needs
``return`` (spec 3.10), unlike a closure — and neither ``check`` nor ``lint`` said a word.
``harnpy lint`` reports a named fn whose last statement is a bare value, and only that."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import harnpy

PROGRAM = """\
fn double(x) { x * 2 }
fn name(p) {
  let n = p.name
  n
}
fn say(x) { println(x) }
fn ok(x) { return x + 1 }
gen fn g() { emit 1 }
fn choose(x) { if x { 1 } else { 2 } }
fn greeting() { "hello ${1}" }
fn allowed(x) { x + 1 } // lint: allow L005
let c = { x -> x * 2 }
impl Box { fn get(self) { self.v } }
struct Box { v }
println([double(1), name({name: 1}), say(1), ok(1), choose(true), greeting(), c(1), allowed(1)])
println(Box({v: 1}).get())
"""


def test_lint_flags_a_named_fn_that_drops_its_last_value(tmp_path: Path) -> None:
    (tmp_path / "p.harn").write_text(PROGRAM)
    r = harnpy("lint", "--format", "json", "p.harn", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    diags = json.loads(r.stdout)["files"][0]["diagnostics"]
    assert [(d["code"], d["line"], d["col"], d["message"], d["notes"]) for d in diags] == [
        ("L005", 1, 16, "`fn double` drops the value of its last expression and returns nil",
         ["hint: write `return x * 2`"]),
        ("L005", 4, 3, "`fn name` drops the value of its last expression and returns nil",
         ["hint: write `return n`"]),
        ("L005", 10, 17, "`fn greeting` drops the value of its last expression and returns nil",
         ['hint: write `return "hello ${1}"`']),
        ("L005", 13, 27, "`fn get` drops the value of its last expression and returns nil",
         ["hint: write `return self.v`"]),
    ]  # fmt: skip


def test_what_lint_says_is_what_run_does(tmp_path: Path) -> None:
    (tmp_path / "p.harn").write_text(PROGRAM)
    r = harnpy("run", "p.harn", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "1\n[nil, nil, nil, 2, nil, nil, 2, nil]\nnil\n"), (
        r.stderr
    )


def test_a_fn_that_returns_is_not_reported(tmp_path: Path) -> None:
    (tmp_path / "q.harn").write_text("fn double(x) {\n  return x * 2\n}\nprintln(double(2))\n")
    r = harnpy("lint", "q.harn", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
