"""``__snapshot_exit``'s error names the variable that holds a value which is not data
(issue: what a new user trips on, point 12): never only a compiler temporary (``$tmp0``) when
a variable holds the value too — a ``for`` loop's variable (its iterable is a temporary),
a destructured binding (the destructured value is a temporary), a value passed on in a
spilled argument."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import harnpy

CLIENT = "stream.map([1, 2], { x -> x })"  # a stream: a host object, not snapshot data

CASES = {
    "for loop variable": f"for client in [{CLIENT}] {{\n  __snapshot_exit(SNAP)\n}}\n",
    "destructured in a function": (
        f"fn f() {{\n  let [client, n] = [{CLIENT}, 1]\n  __snapshot_exit(SNAP)\n  return n\n}}\n"
        "println(f())\n"
    ),
    # a module-level collection literal leaves the value in a temporary of the module frame
    # too; the global holding the collection names it (before: `<<module>>.$tmp0`)
    "top-level dict literal": f"let d = {{client: {CLIENT}}}\n__snapshot_exit(SNAP)\n",
    "top-level list literal": f"let d = [{CLIENT}]\n__snapshot_exit(SNAP)\n",
    "spilled argument": (
        f"fn g() {{\n  let client = {CLIENT}\n  println(len([client, __snapshot_exit(SNAP)]))\n}}\n"
        "g()\n"
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_snapshot_exit_names_the_variable(case: str, tmp_path: Path) -> None:
    snap = tmp_path / "park.json"
    prog = tmp_path / "main.harn"
    prog.write_text(CASES[case].replace("SNAP", f'"{snap}"'), encoding="utf-8")
    proc = harnpy("run", str(prog))
    assert proc.returncode == 1, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert "error[E402]" in first
    assert "cannot snapshot stream_node held at " in first
    held_at = first.split(" held at ", 1)[1]
    assert ".client<" in held_at or ".d[0]<" in held_at, first
    assert "$tmp" not in held_at, first
    assert not snap.exists()


def test_a_parked_loop_with_temporaries_still_resumes(tmp_path: Path) -> None:
    # the frame's slots are written named ones first: the document still restores in order
    snap = tmp_path / "park.json"
    prog = tmp_path / "main.harn"
    prog.write_text(
        "let xs = [1, 2, 3]\nvar total = 0\nfor x in xs {\n  total = total + x\n"
        f'  if x == 2 {{ __snapshot_exit("{snap}") }}\n}}\n'
        'let {a, b} = {a: total, b: len(xs)}\nprintln("${a} ${b}")\n',
        encoding="utf-8",
    )
    proc = harnpy("run", str(prog))
    assert proc.returncode == 3, proc.stderr
    proc = harnpy("run", "--resume", str(snap))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6 3"
