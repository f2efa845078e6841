"""Arguments a user can write never become internal errors (issue 13 point 11; findings F12
and F18): they are catchable Harn errors naming the builtin, and every builtin's arguments
go through the registry's one path (surplus dropped, missing ones defaulted)."""

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
        ('date_to_zone(0, "+99:00")', "+99:00"),  # F18: ValueError before
        ('date_to_zone(0, "-24:00")', "-24:00"),
    ],
)
def test_bad_argument_is_a_catchable_error_naming_it(call: str, names: str) -> None:
    out = _run(f"let r = try {{ {call} }}\nprintln(is_err(r))\nprintln(to_string(r))\n")
    first, second = out.splitlines()[:2]
    assert first == "true", out
    assert names in second and "internal error" not in second


def test_extra_argument_to_a_lazy_iterator_method_is_dropped_like_everywhere() -> None:
    # F18: `.to_list(1)` on a lazy sequence raised TypeError (E999); surplus arguments are
    # dropped by the registry's one path, as for `iter([1]).to_list(1)`
    out = _run(
        "println((1 to 10).map({ x -> x * 2 }).to_list(1))\n"
        "println(iter([1]).to_list(1))\n"
        "println((1 to 5).filter({ x -> x > 2 }).take(2, 9).to_list())\n"
    )
    assert out == "[2, 4, 6, 8, 10, 12, 14, 16, 18, 20]\n[1]\n[3, 4]\n"


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
