"""Operations that build a string or list from a count refuse results over
``MAX_BUILD_SIZE`` with a catchable ``E323`` error before allocating anything, so a script
can recover (``try``) instead of the interpreter running out of memory."""

from __future__ import annotations

import io

import pytest

from harnpy.runtime.errors import MAX_BUILD_SIZE
from harnpy.runtime.runtime import Runtime

BIG = MAX_BUILD_SIZE + 1


def run(source: str) -> str:
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)  # type: ignore[arg-type]
    rt.run_module(rt.load_main("<test>", source))
    return out.getvalue()


@pytest.mark.parametrize(
    ("expr", "what"),
    [
        (f'"ab" * {BIG}', "string * int"),
        (f'"ab".repeat({BIG})', "string.repeat"),
        (f'"x".pad_left({BIG})', "string.pad_left"),
        (f"(1 to {BIG}).to_list()", "range.to_list"),
        (f"parallel each 1 to {BIG} {{ x -> x }}", "parallel"),
        (f"parallel {BIG} {{ i -> i }}", "parallel"),
    ],
)
def test_oversized_results_are_catchable_e323_errors(expr: str, what: str) -> None:
    out = run(f'let r = try {{ {expr} }}\nprintln(r)\nprintln("still running")\n')
    first, second = out.splitlines()
    assert first.startswith(f"Result.Err(Runtime error: {what}: result too large (")
    assert f"the limit is {MAX_BUILD_SIZE})" in first
    assert second == "still running"


def test_results_within_the_limit_are_built() -> None:
    assert run('println(len("ab" * 1000))\nprintln(parallel each 1 to 3 { x -> x * 2 })\n') == (
        "2000\n[2, 4, 6]\n"
    )
