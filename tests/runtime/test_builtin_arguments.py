"""Arguments a user can write never become internal errors (issue 13 point 11; findings F12
and F18): they are catchable Harn errors naming the builtin, and every builtin's arguments
go through the registry's one path (a surplus argument is an E324 error naming the builtin
and how many it takes, missing ones defaulted)."""

from __future__ import annotations

import io

import pytest

from harnpy.runtime.runtime import Runtime
from tests.conftest import harnpy


def _run(code: str) -> str:
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)  # type: ignore[arg-type]
    rt.run_module(rt.load_main("<-e>", code))
    return out.getvalue()


@pytest.mark.parametrize(
    ("call", "names"),
    [
        ("sleep_ms(1000000000000000000)", "sleep_ms"),  # F12: OverflowError before
        ("sleep(1000000000000000000)", "sleep"),
        ("sleep_ms(1.0 / 0.0)", "sleep_ms"),
        ('date_to_zone(0, "+99:00")', "date_to_zone: unknown time zone '+99:00'"),  # F18
        ('date_to_zone(0, "-24:00")', "date_to_zone: unknown time zone '-24:00'"),
        ('date_format(0, "%Y", "Mars/Base")', "date_format: unknown time zone 'Mars/Base'"),
    ],
)
def test_bad_argument_is_a_catchable_error_naming_it(call: str, names: str) -> None:
    out = _run(f"let r = try {{ {call} }}\nprintln(is_err(r))\nprintln(to_string(r))\n")
    first, second = out.splitlines()[:2]
    assert first == "true", out
    assert names in second and "internal error" not in second


def _caught(call: str) -> str:
    return _run(f"let r = try {{ {call} }}\nprintln(is_err(r))\nprintln(to_string(r))\n")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # F18: `.to_list(1)` on a lazy sequence raised TypeError (E999); before this, plain
        # iterators, builtins and methods dropped the surplus argument silently
        ("(1 to 10).map({ x -> x * 2 }).to_list(1)", ".to_list(): takes no arguments, got 1"),
        ("iter([1]).to_list(1)", ".to_list(): takes no arguments, got 1"),
        ("(1 to 5).filter({ x -> x > 2 }).take(2, 9)", ".take(): takes at most 1 argument, got 2"),
        ("len([1], 2)", "len: takes at most 1 argument, got 2"),
        ('to_string(1, "x")', "to_string: takes at most 1 argument, got 2"),
        ("[3, 1].sort(1, 2, 3)", ".sort(): takes no arguments, got 3"),
        ('{a: 1}.get("a", 2, 3)', ".get(): takes at most 2 arguments, got 3"),  # *args ones
        ("[1].push(2, 3)", ".push(): takes at most 1 argument, got 2"),
        ('"aa".replace("a", "b", 1)', ".replace(): takes at most 2 arguments, got 3"),
        ('"abc".upper(1)', ".upper(): takes no arguments, got 1"),  # the alias called
        ('split("a,b", ",", 3)', "split: takes at most 2 arguments, got 3"),
        ("abs(...[-1, 2])", "abs: takes at most 1 argument, got 2"),  # spread
    ],
)
def test_a_surplus_argument_is_a_catchable_error_naming_the_builtin(
    call: str, message: str
) -> None:
    first, second = _caught(call).splitlines()[:2]
    assert first == "true", second
    assert message in second, second


def test_a_surplus_argument_is_caught_in_every_call_path() -> None:
    # a pure builtin inline in an expression, one in a function that could run directly,
    # a builtin called through a variable, and one passed as a callback
    out = _run(
        "fn spawn_len() { return await(spawn { len([1], [2]) }) }\n"
        "fn direct(a) { return len(a, a) }\n"
        "fn method(a) { return a.upper(a) }\n"
        "let f = len\n"
        'for c in [{ -> 1 + len("ab", 1) }, { -> direct([1]) }, { -> method("x") },\n'
        '          { -> f("ab", 2) }, { -> [[1]].map(len) }, { -> spawn_len() }] {\n'
        "  let r = try { c() }\n"
        "  println(to_string(r))\n"
        "}\n"
    )
    lines = out.splitlines()
    assert len(lines) == 6, out
    assert "len: takes at most 1 argument, got 2" in lines[0], lines[0]
    assert "len: takes at most 1 argument, got 2" in lines[1], lines[1]
    assert ".upper(): takes no arguments, got 1" in lines[2], lines[2]
    assert "len: takes at most 1 argument, got 2" in lines[3], lines[3]
    assert lines[4] == "Result.Ok([1])", lines[4]  # map calls its callback with one value
    assert "len: takes at most 1 argument, got 2" in lines[5], lines[5]


def test_the_surplus_error_has_the_argument_error_code_and_a_location() -> None:
    from harnpy.runtime.errors import HarnError

    with pytest.raises(HarnError) as e:
        _run('let n = 1\nprintln(len("abc", n))\n')
    assert e.value.code == "E324"
    assert "len: takes at most 1 argument, got 2" in e.value.message


def test_variadic_builtins_still_take_any_number() -> None:
    assert _run('println(format("{} {} {}", 1, 2, 3))\n') == "1 2 3\n"
    assert _run("println(max(1, 5))\nprintln(min(4, 2))\n") == "5\n2\n"


def test_a_python_error_inside_any_builtin_is_catchable_and_names_it() -> None:
    # the registry net: whatever ValueError/TypeError/OverflowError a builtin raises on a
    # value it did not anticipate is a Harn error (E324) naming the builtin
    from harnpy.runtime.errors import HarnError
    from harnpy.stdlib.registry import argument_error, builtin

    def boom() -> None:
        raise OverflowError("too big to handle")

    try:
        boom()
    except OverflowError as e:
        assert argument_error(e) is None  # not raised inside a builtin: an internal error

    from harnpy.stdlib import registry

    @builtin("zz_test_overflowing_builtin")
    def overflowing(thread: object, x: object = None) -> None:
        raise OverflowError("cannot represent it")

    try:
        out = _run(
            "let r = try { zz_test_overflowing_builtin(1) }\nprintln(to_string(r))\n"
            "zz_test_overflowing_builtin(2)\n"
        )
        pytest.fail(f"the uncaught error did not propagate: {out}")
    except HarnError as e:
        assert e.code == "E324"
        assert "zz_test_overflowing_builtin: invalid argument (cannot represent it)" in e.message
    finally:
        registry.BUILTINS.pop("zz_test_overflowing_builtin", None)


def test_every_builtin_tolerates_missing_arguments() -> None:
    # missing arguments arrive as Python defaults: a builtin whose parameter has none
    # would raise TypeError at the call (outside the builtin, so not caught as its error)
    from harnpy.stdlib import load_all
    from harnpy.stdlib.registry import BUILTINS, METHODS

    load_all()
    internal = {"__spawn", "__select", "__parallel"}  # emitted by the compiler, full arity
    bad = []
    for table, skip in [(BUILTINS, 1)] + [(t, 2) for t in METHODS.values()]:
        for name, b in table.items():
            code = getattr(b.fn, "__code__", None)
            if code is None or name in internal:
                continue
            if code.co_argcount - skip > len(b.fn.__defaults__ or ()):
                bad.append(name)
    assert not bad


def test_findings_cli_runs_give_no_internal_error() -> None:
    for code in (
        "println(try { (1 to 10).map({ x -> x }).to_list(1) })",
        'println(try { date_to_zone(0, "+99:00") })',
        "println(try { sleep_ms(1000000000000000000) })",
    ):
        res = harnpy("run", "-e", code)
        assert res.returncode == 0, res.stderr
        assert "E999" not in res.stderr and "bug in harnpy" not in res.stderr
