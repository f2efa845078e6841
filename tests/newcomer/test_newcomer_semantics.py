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


def test_parallel_each_over_lazy_sources() -> None:
    p = run(
        "fn g() { yield 1; yield 2 }\n"
        "println(parallel each iter([1, 2]) { x -> x * 10 })\n"
        "println(parallel each g() { x -> x * 10 })\n"
        "println(parallel settle iter([1]) { x -> x }.succeeded)\n"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "[10, 20]\n[10, 20]\n1\n"


def test_snapshot_inside_parallel_branch_is_not_silently_partial(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # was: the branch thread alone was snapshotted and the run exited 0 (main program lost)
    snap = tmp_path / "par.json"
    p = run(
        f'let e = try {{ parallel 2 {{ i -> __snapshot_exit("{snap}"); i }} }}\n'
        "println(type_of(e))\n"
        'println("after")\n'
    )
    if not snap.exists():  # refused with a catchable error, like spawn
        assert p.returncode == 0, p.stderr
        assert p.stdout == "enum\nafter\n"
        return
    r = harnpy("run", "--resume", str(snap))
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("after\n")


def test_defer_runs_when_the_function_throws() -> None:
    p = run(
        "fn f() {\n"
        '  defer { println("cleanup 1") }\n'
        '  defer { println("cleanup 2") }\n'
        '  throw "boom"\n'
        "}\n"
        'try { f() } catch (e) { println("caught ${e}") }\n'
        "fn g() {\n"
        '  defer { println("cleanup g") }\n'
        "  let x = 1 / 0\n"
        "}\n"
        'try { g() } catch (e) { println("caught ${e}") }\n'
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == ("cleanup 2\ncleanup 1\ncaught boom\ncleanup g\ncaught Division by zero\n")


def test_repl_closures_capture_by_value_like_run() -> None:
    src = "var x = 1\nlet f = { -> x }\nx = 2\nf()\nfn g() { return x }\nx = 3\ng()\n"
    p = harnpy("repl", input=src)
    assert p.returncode == 0, p.stderr
    r = run(src.replace("f()\n", "println(f())\n").replace("g()\n", "println(g())\n", 1))
    assert r.stdout == "1\n2\n", r.stderr
    assert p.stdout == r.stdout


def test_regex_follows_the_rust_dialect() -> None:
    p = harnpy(
        "run",
        "-e",
        'println(regex_match("\\\\p{L}+", "héllo wörld"))\n'
        'println(regex_match("(a*)*b", "' + "a" * 40 + 'c"))\n',
        timeout=20,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "[héllo, wörld]\nnil\n"
