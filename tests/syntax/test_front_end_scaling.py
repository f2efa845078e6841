"""Parse, check and compile take time linear in the source size (issue: a linear front end).

Each shape below was super-linear once: closures nested N deep (exponential: the body of a
call-free closure was compiled twice per level), one string with N ``${}`` parts (quadratic
in the compiler's left-to-right spill analysis), dict literals nested N deep (the lexer's
``{`` classification scanned ahead to the matching ``}`` for every ``{``), ``fn``
declarations nested N deep (the compiler re-walked every nested function's subtree for its
captures) and interpolations nested N deep (each level rescanned the rest of the string for
its closing ``}``, and built the string text of all inner parts).

Each test runs the whole front end (parse, every static check, compile) on size N and 2N in
the same process and asserts the 2N run took at most ~2.5x the CPU time of the N run (a
quadratic front end takes ~4x, an exponential one far more). CPU time (with the garbage
collector paused), interleaved runs and the minimum of several repetitions keep the ratio
stable on a loaded machine.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from harnpy.check import check_file
from harnpy.diagnostics import DiagnosticError
from harnpy.runtime.runtime import Runtime
from harnpy.stdlib import load_all
from harnpy.stdlib.registry import BUILTINS
from harnpy.syntax import parse
from harnpy.syntax.lexer import MAX_INTERPOLATION_DEPTH

MAX_RATIO = 2.5


@pytest.fixture(autouse=True)
def _deep_recursion() -> Iterator[None]:
    # the CLI's limit (harnpy.cli.main): the transformer and compiler recurse over nesting
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 30_000))
    yield
    sys.setrecursionlimit(old)


def front_end(source: str) -> None:
    """Parse, check and compile ``source`` as ``harnpy check`` and ``harnpy run`` would,
    asserting it is a valid program (so the test measures the full pipeline)."""
    module = parse(source, "<scale>")
    assert module.body
    diags = check_file("<scale>", source, set(BUILTINS))
    assert not [d for d in diags if d.severity == "error"], diags
    rt = Runtime()
    rt.restoring = True  # compile only: the program is not run
    try:
        rt.load_main("<scale>", source)
    except DiagnosticError as e:  # pragma: no cover - shown when the program is rejected
        raise AssertionError(e.render()) from None


def cpu_time(source: str) -> float:
    """CPU seconds of :func:`front_end` on ``source``, with the cyclic garbage collector
    paused (its passes over the test process's whole heap land at random points and would
    be measured with whichever run they fall in)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        front_end(source)
        return time.process_time() - t0
    finally:
        gc.enable()


def ratio(make: Callable[[int], str], n: int, repeats: int = 3) -> tuple[float, float, float]:
    """(time of N, time of 2N, ratio): minimum CPU time over ``repeats`` interleaved runs."""
    small, large = make(n), make(2 * n)
    front_end(small)  # warm up (grammar tables, builtins)
    best_small = best_large = float("inf")
    for _ in range(repeats):
        best_small = min(best_small, cpu_time(small))
        best_large = min(best_large, cpu_time(large))
    return best_small, best_large, best_large / max(best_small, 1e-9)


def nested(opener: str, closer: str) -> Callable[[int], str]:
    return lambda n: "let d = " + opener * n + "1" + closer * n + "\nprintln(d)\n"


SHAPES: dict[str, tuple[Callable[[int], str], int]] = {
    "closures nested N deep": (nested("{ -> ", " }"), 250),
    "one string with N interpolations": (
        lambda n: 'let x = 1\nlet h = "' + "${x}" * n + '"\nprintln(len(h))\n',
        5000,
    ),
    "dict literals nested N deep": (nested("{a: ", "}"), 500),
    "fn declarations nested N deep": (
        lambda n: "".join(f"fn f{i}() {{\n" for i in range(n)) + "1\n" + "}\n" * n,
        250,
    ),
    "interpolations nested N deep": (nested('"${', '}"'), MAX_INTERPOLATION_DEPTH // 2),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_front_end_is_linear(shape: str) -> None:
    load_all()
    make, n = SHAPES[shape]
    for _attempt in range(3):  # a noisy neighbour can spoil one measurement, not three
        t_n, t_2n, r = ratio(make, n)
        if r <= MAX_RATIO:
            break
    assert r <= MAX_RATIO, f"{shape}: N={n} took {t_n:.3f}s, 2N took {t_2n:.3f}s (x{r:.2f})"
