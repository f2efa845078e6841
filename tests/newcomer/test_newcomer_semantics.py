"""Newcomer bug reports: wrong results of the evaluator (each test documents one bug).

Regression tests for bugs found by newcomer testing (each test pins one fixed bug).
"""

from __future__ import annotations

from tests.conftest import harnpy


def run(code: str, *extra: str):  # type: ignore[no-untyped-def]
    return harnpy("run", "-e", code, *extra, timeout=60)


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


def test_run_e_passes_every_script_argument() -> None:
    p = run("println(argv())", "--", "x", "y")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "[x, y]\n"
