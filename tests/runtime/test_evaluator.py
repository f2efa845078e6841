"""Evaluator properties that the conformance corpus does not pin down: frame limits, tail
calls, value semantics under the in-place update optimisation, closure capture, scheduling."""

from __future__ import annotations

import io

import pytest

from harnpy.runtime.errors import HarnError
from harnpy.runtime.runtime import Runtime
from tests.conftest import harnpy


def run(source: str, **kwargs: object) -> str:
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write, **kwargs)  # type: ignore[arg-type]
    rt.run_module(rt.load_main("<test>", source))
    return out.getvalue()


def test_deep_recursion_hits_the_frame_limit_as_a_catchable_error() -> None:
    src = """
fn down(n) { return 1 + down(n + 1) }
let r = try { down(0) }
println(r)
"""
    assert run(src) == "Result.Err(Stack overflow: too many nested calls)\n"


def test_frame_limit_is_configurable_and_independent_of_python() -> None:
    src = "fn d(n) {\n  if n == 0 { return 0 }\n  return 1 + d(n - 1)\n}\nprintln(d(50000))\n"
    with pytest.raises(HarnError, match="Stack overflow"):
        run(src)
    assert run(src, max_depth=60000) == "50000\n"


def test_tail_calls_do_not_grow_the_stack() -> None:
    src = "fn loop(n, acc) {\n  if n == 0 { return acc }\n  return loop(n - 1, acc + 1)\n}\nprintln(loop(200000, 0))\n"
    assert run(src, max_depth=100) == "200000\n"


def test_in_place_updates_never_leak_into_other_holders() -> None:
    src = """
fn main() {
  var a = [1, 2, 3]
  let b = a
  let keep = {list: a}
  let f = { -> a }
  a[0] = 99
  a.push(4)
  var d = {k: 1}
  let snapshot = [d]
  d.k = 2
  println("${a} ${b} ${keep.list} ${f()} ${d} ${snapshot}")
}
main()
"""
    assert run(src) == "[99, 2, 3] [1, 2, 3] [1, 2, 3] [1, 2, 3] {k: 2} [{k: 1}]\n"


def test_unshared_dict_updates_are_linear_time() -> None:
    # 50,000 inserts would take minutes if each one copied the dict.
    src = 'var d = {}\nfor i in range(50000) { d["k${i}"] = i }\nprintln(len(d))\n'
    assert run(src) == "50000\n"


def test_closures_capture_values_not_variables() -> None:
    src = """
var x = 1
fn make() {
  var n = 10
  let f = { -> n }
  n = 20
  return f
}
let g = make()
println(g())
"""
    assert run(src) == "10\n"


def test_spawned_tasks_interleave_with_channels() -> None:
    src = """
let ch = channel("c")
let t = spawn {
  for x in ch { println("got ${x}") }
  "drained"
}
send(ch, 1)
send(ch, 2)
close_channel(ch)
println(await(t))
"""
    assert run(src) == "got 1\ngot 2\ndrained\n"


def test_cli_reports_runtime_errors_with_harn_trace_and_exit_1(tmp_path) -> None:  # type: ignore[no-untyped-def]
    prog = tmp_path / "boom.harn"
    prog.write_text('fn inner() { throw "fatal" }\nfn outer() { inner() }\nouter()\n')
    res = harnpy("run", str(prog))
    assert res.returncode == 1
    assert "Thrown: fatal" in res.stderr
    assert "at inner" in res.stderr and "at outer" in res.stderr
    assert "Traceback" not in res.stderr


def test_cli_reports_syntax_errors_with_location_and_caret(tmp_path) -> None:  # type: ignore[no-untyped-def]
    prog = tmp_path / "bad.harn"
    prog.write_text('let x = 1\nlet y = "oops\n')
    res = harnpy("run", str(prog))
    assert res.returncode == 2
    first = res.stderr.splitlines()[0]
    assert first.startswith(f"{prog}:2:9: error[E1")
    assert "Unterminated string at 2:9" in first
    assert "^" in res.stderr and "Traceback" not in res.stderr


def test_cli_passes_script_arguments(tmp_path) -> None:  # type: ignore[no-untyped-def]
    prog = tmp_path / "args.harn"
    prog.write_text("println(argv())\n")
    res = harnpy("run", str(prog), "--", "a", "b c")
    assert res.returncode == 0 and res.stdout == "[a, b c]\n"
    res = harnpy("run", "-e", "println(1 + 2)")
    assert res.stdout == "3\n"


def test_expression_callbacks_keep_their_semantics() -> None:
    # `{ x -> ... }` bodies without calls run without a frame switch; output, captured
    # values, errors and laziness must be exactly as for ordinary callbacks.
    src = """
fn main() {
  let k = 10
  println([1, 2, 3].map({ x -> x * k }))
  println([1, 2, 3, 4].filter({ x -> x % 2 == 0 }))
  println([1, 2, 3].reduce(0, { acc, x -> acc + x * k }))
  let r = try { [1, 0].map({ x -> 10 / x }) }
  println(r)
  println((1 to 1000000).map({ x -> x * 2 }).take(3).to_list())
  let s = spawn { [5].map({ x -> "${x}!" }) }
  println(await(s))
}
main()
"""
    assert run(src) == ("[10, 20, 30]\n[2, 4]\n60\nResult.Err(Division by zero)\n[2, 4, 6]\n[5!]\n")
