"""Direct calls (harnpy.runtime.direct): effect-free functions that cannot suspend run as
one Python call, with exactly the results, errors and traces of the frame path; anything
unexpected (a non-direct callee, deep recursion, an interrupt, any error) falls back to
frames, and a function that can reach a snapshot point is never run directly."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harnpy.runtime import direct
from harnpy.runtime.errors import HarnError, HarnInterrupt
from harnpy.runtime.runtime import Runtime
from tests.conftest import harnpy


def run(source: str, **kwargs: Any) -> tuple[str, Runtime]:
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write, **kwargs)
    rt.run_module(rt.load_main("<test>", source))
    return out.getvalue(), rt


def outcome(source: str, **kwargs: Any) -> tuple[str, str | None, list[tuple[Any, ...]]]:
    """(output, error text or None, error trace) of a run."""
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write, **kwargs)
    try:
        rt.run_module(rt.load_main("<test>", source))
    except HarnError as err:
        trace = [(t.function, t.line, t.col, t.end_col) for t in err.trace]
        return out.getvalue(), str(err), trace
    return out.getvalue(), None, []


def both(source: str, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> Any:
    """The outcome with direct calls and without; asserts they are identical."""
    with_direct = outcome(source, **kwargs)
    monkeypatch.setattr(direct, "ENABLED", False)
    on_frames = outcome(source, **kwargs)
    monkeypatch.setattr(direct, "ENABLED", True)
    assert with_direct == on_frames
    return with_direct


def codes(rt: Runtime) -> dict[str, Any]:
    mod = rt.main_module
    assert mod is not None
    return {c.name: c for c in mod.codes.values()}


PROGRAM = """
fn fib(n) {
  if n < 2 { return n }
  return fib(n - 1) + fib(n - 2)
}
fn make_adder(n) { return { x -> x + n } }
fn compose(f, g) { return { x -> f(g(x)) } }
fn classify(n) {
  if n < 0 { return "neg" } else if n == 0 { return "zero" }
  return if n % 2 == 0 { "even" } else { "odd" }
}
fn loops(n) {
  var total = 0
  var i = 0
  while i < n {
    i = i + 1
    if i % 3 == 0 { continue }
    if i > 50 { break }
    total += i
  }
  for x in [1, 2, 3] { total = total + x * 10 }
  for k in range(4) { total = total + k }
  for e in {b: 2, a: 1} { total = total + e.value }
  return total
}
fn strs(n) {
  let parts = "a-b-c".split("-")
  let s = "n=${n}, f=${1.5}, l=${[1, "x"]}, d=${ {k: nil} }, b=${n > 2}"
  return s + " " + parts.join("+") + " " + to_string(len(parts)) + " " + "Hi".upper()
}
fn data(n) {
  let d = {name: "x", n: n, xs: [n, n + 1]}
  let xs = d.xs.push(7)
  return [d.name, d["n"], xs[2], d.missing ?? "dflt", len(xs), xs.contains(7), 5 in xs]
}
fn floats(a, b) { return [a / b, a * 1.5, a - 0.25, -a, !(a > b), a ** 2, a % 3] }
fn logic(a, b) { return [a && b, a || b, a ?? b, a ? "t" : "f"] }
let rec = { n -> if n <= 1 { 1 } else { n * rec(n - 1) } }
let add3 = make_adder(3)
let h = compose(add3, { x -> x * 2 })
println(fib(20))
println(h(5))
println([classify(-1), classify(0), classify(3), classify(4)])
println(loops(100))
println(strs(3))
println(data(4))
println(floats(7, 2))
println(floats(7.0, 2))
println(logic(true, nil))
println(logic(nil, 3))
println(rec(10))
println(range(5).map({ x -> h(x) }))
println([1, 2, 3].map({ x -> fib(x + 10) }).filter({ v -> v % 2 == 0 }))
"""


def test_direct_and_frame_paths_give_identical_output(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err, _ = both(PROGRAM, monkeypatch)
    assert err is None
    lines = out.splitlines()
    assert lines[:2] == ["6765", "13"] and len(lines) == 13


def test_eligible_functions_are_translated_and_run_directly() -> None:
    _, rt = run(PROGRAM)
    by_name = codes(rt)
    for name in ("fib", "make_adder", "compose", "classify", "loops", "strs", "data"):
        code = by_name[name]
        assert code.direct_source is not None, name
        # the first call replaced the translation stub by the compiled function
        assert code.direct.__name__ == "direct", name


def test_translated_code_counts_as_evaluator_code_for_ctrl_c() -> None:
    # a first Ctrl-C in a direct function or loop is served at the next safe point: the
    # session tells evaluator code from builtins by the frame's module name
    from harnpy.runtime.session import _waiting_or_blocked

    _, rt = run(PROGRAM)
    fn = codes(rt)["fib"].direct
    assert fn.__globals__["__name__"].startswith("harnpy.runtime.")

    class _Frame:
        f_globals = fn.__globals__
        f_code = fn.__code__
        f_back = None

    assert _waiting_or_blocked(_Frame()) is False


def test_functions_with_effects_or_suspension_points_stay_on_frames() -> None:
    src = """
fn say(x) { println(x) }
fn nap() { sleep(1) }
fn gen() { yield 1 }
fn catches() { try { return 1 } catch e { return 2 } }
fn prints() { print("a") }
fn plain(x) { return x + 1 }
say(plain(1))
"""
    _, rt = run(src)
    by_name = codes(rt)
    for name in ("say", "nap", "gen", "catches", "prints"):
        assert by_name[name].direct is None, name
    assert by_name["plain"].direct is not None


def test_errors_and_traces_are_those_of_the_frame_path(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [
        "fn f(a, b) {\n  return a / b\n}\nfn g(n) { return f(n, 0) + 1 }\nprintln(g(3))\n",
        'fn f(n) {\n  if n == 0 { throw "boom ${n}" }\n  return f(n - 1)\n}\nf(3)\n',
        "fn f(xs) { return xs[5] + 1 }\nfn g() {\n  return f([1, 2])\n}\nprintln(g())\n",
        'fn f(s) {\n  return s - 1\n}\nprintln([1, 2].map({ x -> f("a") }))\n',
        "fn f(d) { return d.a.b }\nprintln(f({a: nil}))\n",
        "fn f(n) { return undefined_name + n }\nprintln(f(1))\n",
    ]
    for src in cases:
        out, err, trace = both(src, monkeypatch)
        assert err is not None, src
        assert trace, src
    # int overflow (not an error here) takes the generic operator on both paths
    both("fn big(n) { return n * 9223372036854775807 }\nprintln(big(2))\n", monkeypatch)


def test_errors_caught_by_the_caller_are_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    src = """
fn div(a, b) { return a / b }
fn safe(a, b) {
  let r = try { div(a, b) }
  return r
}
println(safe(6, 3))
println(safe(1, 0))
let caught = try { div(1, 0) } catch e { "caught: ${e}" }
println(caught)
"""
    out, err, _ = both(src, monkeypatch)
    assert err is None and "caught:" in out


def test_deep_recursion_falls_back_to_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    src = "fn count(n) {\n  if n == 0 { return 0 }\n  return 1 + count(n - 1)\n}\nprintln(count(3000))\n"
    out, err, _ = both(src, monkeypatch)
    assert err is None and out == "3000\n"
    # past max_depth the frame path's catchable Stack overflow, as without direct calls
    over = "fn down(n) { return 1 + down(n + 1) }\nprintln(try { down(0) })\n"
    out, err, _ = both(over, monkeypatch, max_depth=500)
    assert out == "Result.Err(Stack overflow: too many nested calls)\n"


def test_a_depth_abort_pauses_direct_calls_above_it() -> None:
    src = "fn count(n) {\n  if n == 0 { return 0 }\n  return 1 + count(n - 1)\n}\nprintln(count(1000))\n"
    out, rt = run(src)
    assert out == "1000\n"
    th = rt.main_thread
    assert th is not None
    # the first direct run aborted at DIRECT_DEPTH: direct calls were paused above it
    assert th.direct_hi - th.direct_lo == direct.DIRECT_DEPTH


def test_interrupt_stops_a_long_direct_run() -> None:
    src = "fn spin(n) {\n  var i = 0\n  while true { i = i + 1 }\n  return i\n}\nspin(1)\n"
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)
    mod = rt.load_main("<test>", src)
    assert codes(rt)["spin"].direct is not None

    def stop() -> None:
        th = rt.main_thread
        while th is None:
            th = rt.main_thread
        th.interrupt_requested = True

    timer = threading.Timer(0.3, stop)
    timer.start()
    with pytest.raises(HarnInterrupt):
        rt.run_module(mod)
    timer.join()


def test_a_snapshot_inside_a_callee_of_a_direct_function_still_happens(tmp_path: Path) -> None:
    prog = tmp_path / "prog.harn"
    prog.write_text(
        "fn apply(f, x) { return f(x) + 1 }\n"
        "fn twice(x) { return x * 2 }\n"
        "fn stop(x) {\n"
        '  __snapshot_exit(env("SNAP") ?? "")\n'
        "  return x\n"
        "}\n"
        "println(apply(twice, 20))\n"
        'println("before")\n'
        "println(apply(stop, 1))\n"
        'println("after")\n'
    )
    snap = tmp_path / "state.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    assert first.stdout.splitlines() == ["41", "before"]
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["2", "after"]


def test_harnpy_direct_calls_0_disables_them() -> None:
    code = (
        "from harnpy.runtime import direct\n"
        "from harnpy.runtime.runtime import Runtime\n"
        "rt = Runtime(stdout=lambda s: None)\n"
        "rt.load_main('<t>', 'fn f(n) { return n + 1 }')\n"
        "print(direct.ENABLED, [c.direct is None for c in rt.main_module.codes.values() if c.name == 'f'])\n"
    )
    env = dict(os.environ, HARNPY_DIRECT_CALLS="0")
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert off.stdout.strip() == "False [True]", off.stderr
    env["HARNPY_DIRECT_CALLS"] = "1"
    on = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert on.stdout.strip() == "True [False]", on.stderr


LOOPS = """
var total = 0
var i = 1
while i <= 1000 {
  total = total + i
  i = i + 1
}
var line = ""
var flushed = 0
var n = 0
for k in range(3000) {
  line = line + "w${k % 97}-${k} "
  if len(line) > 200 {
    flushed = flushed + len(line)
    n += 1
    line = ""
  }
}
var odd = 0
for x in [1, 2, 3, 4, 5, 6, 7, 8] {
  if x % 2 == 0 { continue }
  if x > 6 { break }
  odd = odd + x
}
var acc = []
for x in range(5) { acc += [x] }
fn inner(m) {
  var s = 0
  var j = 0
  while true {
    j += 1
    if j > m { break }
    let sq = j * j
    s = s + sq
  }
  return s
}
var seen = 0
for e in {b: 2, a: 1} { seen = seen + e.value }
fn nums() {
  yield 1
  yield 2
}
var g = 0
for v in nums() { g = g + v }
println([total, i, flushed, n, len(line), odd, acc, inner(10), seen, g])
"""


def test_direct_loops_give_identical_results(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err, _ = both(LOOPS, monkeypatch)
    assert err is None
    assert out.startswith("[500500, 1001, ")
    _, rt = run(LOOPS)
    mod = rt.main_module
    assert mod is not None
    loops = [i for c in mod.codes.values() for i in c.instrs if hasattr(i, "direct_loop_source")]
    assert len(loops) >= 4


def test_an_error_inside_a_direct_loop_leaves_the_frame_path_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    src = """
var total = 0
var i = 0
let r = try {
  while i < 10 {
    total = total + i
    i = i + 1
    if i == 5 {
      total = total + nil
    }
  }
}
println([total, i, r])
var j = 0
while j < 10 {
  j = j + 1
  let bad = j == 7 ? j - "x" : j
}
"""
    out, err, trace = both(src, monkeypatch)
    assert out.startswith("[10, 5, Result.Err(")
    assert err is not None and trace[0][1] == 17


def test_interrupt_stops_a_long_direct_loop() -> None:
    src = "var i = 0\nwhile true {\n  i = i + 1\n}\n"
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)
    mod = rt.load_main("<test>", src)

    def stop() -> None:
        th = rt.main_thread
        while th is None:
            th = rt.main_thread
        th.interrupt_requested = True

    timer = threading.Timer(0.3, stop)
    timer.start()
    with pytest.raises(HarnInterrupt):
        rt.run_module(mod)
    timer.join()
    # the loop's variable was written back at an iteration boundary
    assert mod.globals["i"] > 0


def test_index_assignments_in_direct_loops_keep_value_semantics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    src = """
var d = {}
let keep = d
for i in range(10) {
  d["k${i}"] = i * 2
}
var found = 0
for i in range(10) {
  found = found + d["k${i}"]
}
var xs = [0, 0, 0]
let ys = xs
var j = 0
while j < 6 {
  xs[j % 3] = j
  j += 1
}
var e = {a: 1}
let r = try {
  for i in range(5) {
    e["x${i}"] = i
    if i == 3 { e["bad"] = e.zz + 1 }
  }
}
println([len(d), found, keep, xs, ys, e, r])
"""
    out, err, _ = both(src, monkeypatch)
    assert err is None
    # the aliases made before the loops keep their values; the aborted iteration's
    # first assignment (x3) happened once, on the frame path
    assert out.startswith("[10, 90, {}, [3, 4, 5], [0, 0, 0], {a: 1, x0: 0, x1: 1, x2: 2, x3: 3}")


def test_a_direct_loop_naming_a_global_not_assigned_yet_runs_on_frames(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the loops read a global declared further down (a global of the module, and one the
    # function captures, still unbound): the frame path never reads it, so neither may
    # the direct loop (it used to fail at its head: KeyError / DirectAbort, E999)
    src = """
var i = 0
while i < 3 {
  i = i + 1
  if i > 5 { x = 1 }
}
fn f() {
  var j = 0
  while j < 3 {
    j = j + 1
    if j > 5 { y = y + 1 }
  }
  return j
}
println([i, f()])
var x = 0
var y = 0
"""
    out, err, _ = both(src, monkeypatch)
    assert (out, err) == ("[3, 3]\n", None)
