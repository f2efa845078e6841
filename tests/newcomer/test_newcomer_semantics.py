"""Newcomer bug reports: wrong results of the evaluator (each test documents one bug).

Every test is ``xfail(strict=True)``: it fails today because of the bug named in its reason,
and starts passing (turning the suite red) once the bug is fixed, so remove the mark then.
"""

from __future__ import annotations

import pytest

from tests.conftest import harnpy


def run(code: str, *extra: str):  # type: ignore[no-untyped-def]
    return harnpy("run", "-e", code, *extra, timeout=60)


@pytest.mark.xfail(
    strict=True,
    reason="closure parameter named like an enclosing local reads the captured outer value "
    "(compiler.closure_expr never removes parameter names from the captures)",
)
def test_closure_parameter_shadows_enclosing_local() -> None:
    p = run(
        "fn main() {\n"
        "  let x = 1\n"
        "  println([1, 2, 3].map({ x -> x + 100 }))\n"
        "  let f = { x -> x * 10 }\n"
        "  println(f(5))\n"
        "}\n"
        "main()\n"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "[101, 102, 103]\n50\n"


@pytest.mark.xfail(
    strict=True,
    reason="nested fn parameter named like an enclosing local reads the captured outer value",
)
def test_nested_fn_parameter_shadows_enclosing_local() -> None:
    p = run(
        "fn main() {\n"
        '  let c = "outer"\n'
        "  fn inner(c: string) { return c }\n"
        '  println(inner("param"))\n'
        "}\n"
        "main()\n"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "param\n"


@pytest.mark.xfail(
    strict=True,
    reason="`return f(...)` reuses the frame and drops the caller's registered defer blocks "
    "(spec 3.12: deferred blocks run in LIFO order on return)",
)
def test_defer_survives_tail_call() -> None:
    p = run(
        "fn d(n) {\n"
        '  defer { println("defer ${n}") }\n'
        '  if n == 0 { println("base"); return 0 }\n'
        "  return d(n - 1)\n"
        "}\n"
        "d(2)\n"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "base\ndefer 0\ndefer 1\ndefer 2\n"


@pytest.mark.xfail(
    strict=True,
    reason="late-bound function lookup (spec 3.10) fails when the enclosing frame was "
    "replaced by a tail call: `return a()` where a calls b declared after a",
)
def test_late_bound_function_through_tail_call() -> None:
    p = run(
        "fn outer() {\n"
        "  fn a() { return b() }\n"
        "  fn b() { return 3 }\n"
        "  return a()\n"
        "}\n"
        "println(outer())\n"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "3\n"


@pytest.mark.xfail(
    strict=True,
    reason="script mode: top-level variables are shared mutable globals, so a counter "
    "closure counts (spec 3.10: closures capture by value; a counter closure returns the "
    "same value every call)",
)
def test_script_mode_closure_captures_by_value() -> None:
    p = run(
        "var n = 1\n"
        "let f = { -> n }\n"
        "n = 2\n"
        "println(f())\n"
        "var c = 0\n"
        "let bump = { -> c += 1; c }\n"
        "println(bump())\n"
        "println(bump())\n"
        "println(c)\n"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "1\n1\n1\n0\n"


@pytest.mark.xfail(
    strict=True,
    reason="pipeline mode: a top-level fn writing a top-level var changes it for everyone "
    "(spec 3.10: top-level functions see top-level bindings read-only in effect)",
)
def test_pipeline_mode_top_level_var_is_read_only_in_functions() -> None:
    p = run(
        "var counter = 0\n"
        "fn bump() { counter += 1; return counter }\n"
        "pipeline default() {\n"
        "  println(bump())\n"
        "  println(bump())\n"
        "  println(counter)\n"
        "}\n"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "1\n1\n0\n"


@pytest.mark.xfail(
    strict=True,
    reason="`harnpy run -e CODE -- x y`: argparse takes x as the FILE positional, argv() loses it",
)
def test_run_e_passes_every_script_argument() -> None:
    p = run("println(argv())", "--", "x", "y")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "[x, y]\n"
