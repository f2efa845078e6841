"""The specialised operator evs and fused instructions (harnpy.runtime.fastops) give the same
results and errors as the generic ones: int fast paths, every other type on the slow path."""

from __future__ import annotations

import io

import pytest

from harnpy.runtime import fastops
from harnpy.runtime.errors import HarnError
from harnpy.runtime.runtime import Runtime


def run(source: str, **kwargs: object) -> str:
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write, **kwargs)  # type: ignore[arg-type]
    rt.run_module(rt.load_main("<test>", source))
    return out.getvalue()


def test_int_fast_paths_wrap_like_the_generic_operators() -> None:
    src = """
var big = 9223372036854775807
println(big + 1)
fn inc(n) { return n + 1 }
println(inc(9223372036854775807))
var q = -7
println(q % 3)
println(q * 3)
fn loop() {
  var i = 0
  var total = 0
  while i < 5 {
    total = total + i
    i = i + 1
  }
  return total
}
println(loop())
"""
    assert run(src).split() == ["-9223372036854775808", "-9223372036854775808", "-1", "-21", "10"]


def test_other_operand_types_take_the_generic_path() -> None:
    src = """
var s = "a"
var t = "b"
println(s + t)
var x = 1.5
var y = 2
println(x + y)
println(x < 2)
var z = 0.5
while z < 3 { z = z + 1 }
println(z)
var n = 0
while n != 5 { n = n + 1 }
println(n)
println(try { s + 1 })
"""
    assert run(src).splitlines() == [
        "ab",
        "3.5",
        "true",
        "3.5",
        "5",
        "Result.Err(Type error: Cannot add string and int)",
    ]


def test_a_global_read_before_it_is_set_is_late_bound() -> None:
    src = """
fn later() { return counter + 1 }
var counter = 41
println(later())
"""
    assert run(src) == "42\n"
    with pytest.raises(HarnError, match="Undefined variable: missing"):
        run("fn f() { return missing + 1 }\nprintln(f())\n")


def test_a_slow_path_error_points_at_the_operator() -> None:
    src = "fn g(a, b) {\n  return a - b\n}\nprintln(g(10))\n"
    with pytest.raises(HarnError) as info:
        run(src)
    assert "Cannot subtract nil from int" in str(info.value)
    top = info.value.trace[0]
    assert (top.function, top.line, top.col) == ("g", 2, 10)


def test_fast_calls_keep_arity_defaults_and_captures() -> None:
    src = """
fn g(a, b) { return a - b }
println(g(10, 3, 4))
fn opt(a, b = 5) { return a + b }
println(opt(1))
let k = 100
let add = { a, b -> a + b + k }
println(add(1, 2))
fn fib(n) {
  if n < 2 { return n }
  return fib(n - 1) + fib(n - 2)
}
println(fib(15))
"""
    assert run(src).split() == ["7", "6", "103", "610"]


def test_fast_calls_still_hit_the_frame_limit() -> None:
    src = "fn down(n) { return 1 + down(n + 1) }\nprintln(try { down(0) })\n"
    assert run(src, max_depth=200) == "Result.Err(Stack overflow: too many nested calls)\n"


def test_shapes_are_recognised() -> None:
    """The compiler tags slot reads, so `n < 2` and `i = i + 1` get the fused forms."""
    k = fastops.slot_ev(3)
    assert fastops.slot_of(k) == 3

    def generic(f: object) -> object:
        raise AssertionError("not reached for ints")

    lt = fastops.binop_ev("<", k, lambda f: 2, 2, generic, lambda err: None)  # type: ignore[arg-type]
    assert lt is not None and fastops.shape_of(lt) == ("<", ("s", 3), ("c", 2))
    jump = fastops.fused_jump(lt, 7, 1, jump_if=False)
    assert jump is not None

    class F:
        slots = [0, 0, 0, 1]

    assert jump(F()) == 1  # type: ignore[arg-type]
    F.slots[3] = 5
    assert jump(F()) == 7  # type: ignore[arg-type]


def test_interpolation_displays_every_kind_of_value() -> None:
    src = """
let i = 7
let s = "str"
fn show(x) { return "[${x}]" }
println("a${i}b${s}c${1.5}d${true}e${nil}f${[1, "x"]}g${{k: 1}}h${i * 2}")
println(show(3) + show("q") + show(false))
println("${i}")
"""
    assert run(src).splitlines() == [
        "a7bstrc1.5dtrueenilf[1, x]g{k: 1}h14",
        "[3][q][false]",
        "7",
    ]


def test_operators_over_expression_operands_give_the_generic_results() -> None:
    src = """
let total = [1, 2, 3].map({ x -> x + 0.5 }).sum() + len([1, 2])
println(total)
println(1.0 + len("abc"))
println(len("ab") < 3.5)
println(len("ab") == 2)
println("a" + "${len("xyz")}")
fn plus_len(v) { return len("ab") + v }
println(try { plus_len("x") })
"""
    assert run(src).splitlines() == [
        "9.5",
        "4.0",
        "true",
        "true",
        "a3",
        "Result.Err(Type error: Cannot add int and string)",
    ]


def test_an_expression_closure_called_inline_keeps_its_trace() -> None:
    src = 'let bad = { x, y -> x - y }\nfn outer(v) {\n  let r = bad(1, v)\n  return r\n}\nouter("s")\n'
    with pytest.raises(HarnError) as info:
        run(src)
    trace = [(t.function, t.line, t.col) for t in info.value.trace]
    assert trace == [("<closure>", 1, 21), ("outer", 3, 11), ("<module>", 6, 1)]


def test_map_filter_chains_without_callback_frames_stay_lazy() -> None:
    """A chain of expression closures runs in one loop, but item by item: the filter sees
    item 2 (and fails) before the map reaches item 7 (which would divide by zero)."""
    src = """
let r = try { range(10).map({ x -> x == 2 ? "two" : 10 / (x - 7) }).filter({ v -> v - 1 > 0 }).to_list() }
println(r)
let xs = range(10).map({ x -> x * 2 })
println(xs.filter({ v -> v % 4 == 0 }).to_list())
println(len(xs))
println(xs.map({ v -> v + 1 }).filter({ v -> v > 10 }).sum())
let it = iter([1, 2, 3, 4]).map({ x -> x * 10 }).filter({ x -> x > 10 })
println(it.to_list())
println(it.to_list())
"""
    assert run(src).splitlines() == [
        "Result.Err(Type error: Cannot subtract int from string)",
        "[0, 4, 8, 12, 16]",
        "10",
        "75",
        "[20, 30, 40]",
        "[]",
    ]


def test_inline_call_arguments_and_returns_keep_the_generic_results() -> None:
    """`f(n - 1)` and `return a + b` compute int arithmetic on slots inline; floats, strings,
    overflow and type errors still give the generic operator's results."""
    src = """
fn id(x) { return x }
fn add(a, b) { return a + b }
fn args(n, s) {
  return [id(n - 1), id(n * 2), id(s + s), add(n, 1), add(s, "!")]
}
println(args(3, "ab"))
println(args(1.5, "x"))
println(args(9223372036854775807, ""))
println(try { add(1, "x") })
"""
    assert run(src).splitlines() == [
        "[2, 6, abab, 4, ab!]",
        "[0.5, 3.0, xx, 2.5, x!]",
        "[9223372036854775806, -2, , -9223372036854775808, !]",
        "Result.Err(Type error: Cannot add int and string)",
    ]


def test_expression_callbacks_run_inline_keep_errors_and_nesting() -> None:
    """Expression closures called by builtins (`reduce` over lazy stages, `sort_by`) and by
    call instructions run without a frame of their own: results, the error with the
    closure's trace entry, and a nested use of the same closure are as with frames."""
    src = """
let add = { acc, v -> acc + v }
let ys = range(10).map({ x -> x * 2 }).filter({ v -> v % 3 == 0 })
println(ys.reduce(0, add))
println([3, 1, 2].reduce(0, add))
println(iter([1, 2]).map({ x -> x + 1 }).reduce(100, add))
let lazy = range(3).map({ x -> add(x, 1) })
println(add(len(lazy), 10))
fn bad() {
  return [1, 2].reduce(0, { acc, v -> acc + nil })
}
println(try { bad() })
"""
    assert run(src).splitlines() == [
        "36",
        "6",
        "105",
        "13",
        "Result.Err(Type error: Cannot add int and nil)",
    ]
    with pytest.raises(HarnError) as info:
        run("let f = { acc, v -> acc - nil }\nprintln([1].reduce(0, f))\n")
    assert [t.function for t in info.value.trace][:1] == ["<closure>"]


def test_for_loop_back_edges_step_every_kind_of_iterable() -> None:
    """The back-edge of a `for` takes the next item of a plain list or range itself;
    generators, lazy iters, channels, patterns, `continue` and `break` still loop alike."""
    src = """
fn gen() {
  yield 1
  yield 2
}
var out = []
for x in [1, 2, 3] { out = out + [x] }
for x in range(2) { if x == 0 { continue }
  out = out + [x] }
for g in gen() { out = out + [g * 10] }
for m in iter([4, 5]).map({ v -> v + 1 }) { out = out + [m] }
for [a, b] in [[1, 2], [3, 4]] { out = out + [a + b] }
for x in range(100) { if x == 2 { break }
  out = out + [x] }
let ch = channel("c", 3)
send(ch, 7)
send(ch, 8)
close_channel(ch)
for v in ch { out = out + [v] }
println(out)
"""
    assert run(src) == "[1, 2, 3, 1, 10, 20, 5, 6, 3, 7, 0, 1, 7, 8]\n"
