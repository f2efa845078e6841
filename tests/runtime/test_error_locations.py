"""Runtime errors point at the failing expression, not at the start of its statement: the
diagnostic's line:col and the caret underline come from the innermost expression that
failed, and each stack-trace entry names where its frame was."""

from __future__ import annotations

import io

import pytest

from harnpy.cli import render_runtime_error
from harnpy.runtime.errors import HarnError
from harnpy.runtime.runtime import Runtime


def failure(source: str) -> tuple[HarnError, str]:
    """Run ``source`` as ``t.harn``; return the uncaught error and its rendered diagnostic."""
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)  # type: ignore[arg-type]
    with pytest.raises(HarnError) as info:
        rt.run_module(rt.load_main("t.harn", source))
    return info.value, render_runtime_error(info.value, rt)


def caret_line(rendered: str) -> str:
    return rendered.splitlines()[2]


@pytest.mark.parametrize(
    ("source", "line", "col", "width"),
    [
        ("let y = [1]\nlet z = y[0] + nil_value_x\n", 2, 16, 11),  # undefined name
        ("let x = {foo: nil}\nlet z = 1 + x.foo.bar\n", 2, 13, 9),  # property of nil
        ("let xs = [1, 2]\nprintln(xs[0] + xs[5] * 2)\n", 2, 17, 9),  # nil (xs[5]) * 2
        ("let a = 3\nlet b = a + 1 - (a / 0)\n", 2, 18, 5),  # division by zero
        ('let s = "x"\nlet n = 1 + -s\n', 2, 13, 2),  # unary minus on a string
        (
            'let s = 1\nlet u = json_parse("null")\nlet n = [2] + (s + u)\n',
            3,
            16,
            5,
        ),  # binary operator types
        ('let n = 1\nprintln(n, to_int("a") + [])\n', 2, 12, 16),  # binary op over a call
    ],
)
def test_the_caret_underlines_the_innermost_failing_expression(
    source: str, line: int, col: int, width: int
) -> None:
    err, rendered = failure(source)
    top = err.trace[0]
    assert (top.line, top.col) == (line, col), rendered
    assert rendered.splitlines()[0].startswith(f"t.harn:{line}:{col}: error[")
    assert caret_line(rendered) == "    | " + " " * (col - 1) + "^" * width


def test_each_frame_keeps_its_own_location() -> None:
    err, rendered = failure(
        "fn inner(d) {\n  return d.k.j\n}\nfn outer() {\n  let v = 1 + inner({k: nil})\n"
        "  return v\n}\nouter()\n"
    )
    where = [(t.function, t.line, t.col) for t in err.trace]
    # inner: the failing `d.k.j`; outer: the call `inner(...)`; module: the call `outer()`.
    assert where == [("inner", 2, 10), ("outer", 5, 15), ("<module>", 8, 1)], rendered


def test_an_inline_callback_gets_its_own_trace_entry() -> None:
    err, rendered = failure("let xs = [1, 2]\nlet ys = xs.map({ x -> x.size.q })\n")
    assert [(t.function, t.line, t.col) for t in err.trace] == [
        ("<closure>", 2, 24),
        ("<module>", 2, 10),
    ], rendered


def test_a_caught_and_rethrown_error_is_located_at_the_rethrow() -> None:
    err, rendered = failure(
        'fn f() {\n  try {\n    let z = nil.q\n  } catch (e) {\n    throw "again: " + e\n  }\n}\nf()\n'
    )
    assert err.trace[0].line == 5, rendered
    assert "Thrown: again: " in rendered


def test_an_expression_over_several_lines_gets_a_single_caret() -> None:
    err, rendered = failure('let u = json_parse("null")\nlet z = [1,\n  2] + (u\n  - 1)\n')
    assert (err.trace[0].line, err.trace[0].col) == (3, 9)
    assert caret_line(rendered) == "    | " + " " * 8 + "^"


def test_frames_replaced_by_tail_calls_are_noted_in_the_trace() -> None:
    err, rendered = failure(
        "fn a(x) { return x.foo.bar }\nfn b(x) { return a(x) }\nfn c(x) {\n  let r = b(x)\n"
        "  return r\n}\nc({foo: nil})\n"
    )
    assert [(t.function, t.tail_calls) for t in err.trace] == [
        ("a", 1),
        ("c", 0),
        ("<module>", 0),
    ]
    lines = rendered.splitlines()
    at_a = lines.index("  at a (t.harn:1:18)")
    assert lines[at_a + 1] == "  ... 1 frame elided by tail calls"
    assert lines[at_a + 2] == "  at c (t.harn:4:11)"
