"""Benchmarks: each Harn program in ``../shared/bench/programs`` against its Python mirror.

    python bench/run.py [-n RUNS] [--programs DIR] [NAME ...]

For every ``NAME.harn`` with a ``NAME.py`` beside it, both are run as whole processes,
alternating (A B A B ...) so that machine drift hits both, RUNS times after one warm-up
each; the output of the Harn run is checked against the mirror's. Printed per program: the
median wall time of each side and the median of the pairwise ratios, next to the ratio the
project must meet. Also times ``harnpy run`` of a hello-world against
``python -c "import lark, pydantic, cattrs, prompt_toolkit, croniter"``.

Exit status 1 when an output differs or a must-meet ratio is exceeded.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROGRAMS = os.path.join(HERE, "..", "..", "shared", "bench", "programs")

#: Must-meet ratios (issue: whole process, harnpy / CPython).
LIMITS = {
    "fib": 80.0,
    "loop": 50.0,
    "closures": 35.0,
    "strings": 15.0,
    "collections_bench": 9.0,
    "agent_turns": 9.0,
}


def run_once(cmd: list[str]) -> tuple[float, str, int]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t0, p.stdout, p.returncode


def compare(
    cmd_a: list[str], cmd_b: list[str], runs: int
) -> tuple[list[float], list[float], str, str]:
    run_once(cmd_a)
    run_once(cmd_b)
    a_times: list[float] = []
    b_times: list[float] = []
    out_a = out_b = ""
    for _ in range(runs):
        ta, out_a, rc_a = run_once(cmd_a)
        tb, out_b, rc_b = run_once(cmd_b)
        if rc_a != 0 or rc_b != 0:
            raise SystemExit(f"command failed: {cmd_a if rc_a else cmd_b}")
        a_times.append(ta)
        b_times.append(tb)
    return a_times, b_times, out_a, out_b


def harnpy_cmd() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "harnpy")
    return [exe, "run"] if os.path.exists(exe) else [sys.executable, "-m", "harnpy", "run"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=5, help="runs per side (default 5)")
    ap.add_argument("--programs", default=DEFAULT_PROGRAMS)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    progs = os.path.abspath(args.programs)
    if not os.path.isdir(progs):
        print(f"bench: programs directory not found: {progs}", file=sys.stderr)
        return 2
    names = args.names or sorted(
        n[:-5]
        for n in os.listdir(progs)
        if n.endswith(".harn") and os.path.exists(os.path.join(progs, n[:-5] + ".py"))
    )
    failed = False
    print(f"{'program':<20}{'harnpy s':>10}{'python s':>10}{'ratio':>8}{'limit':>8}  ok")
    for name in names:
        a, b, out_a, out_b = compare(
            harnpy_cmd() + [os.path.join(progs, name + ".harn")],
            [sys.executable, os.path.join(progs, name + ".py")],
            args.n,
        )
        ratio = statistics.median(x / y for x, y in zip(a, b))
        limit = LIMITS.get(name)
        same = out_a == out_b
        ok = same and (limit is None or ratio <= limit)
        failed |= not ok
        note = "yes" if ok else ("OUTPUT DIFFERS" if not same else "TOO SLOW")
        print(
            f"{name:<20}{statistics.median(a):>10.3f}{statistics.median(b):>10.3f}"
            f"{ratio:>8.1f}{(f'{limit:g}' if limit else '-'):>8}  {note}"
        )
    with tempfile.NamedTemporaryFile("w", suffix=".harn", delete=False) as fh:
        fh.write('println("hello, world")\n')
        hello = fh.name
    try:
        a, b, _, _ = compare(
            harnpy_cmd() + [hello],
            [sys.executable, "-c", "import lark, pydantic, cattrs, prompt_toolkit, croniter"],
            args.n,
        )
    finally:
        os.unlink(hello)
    ratio = statistics.median(x / y for x, y in zip(a, b))
    ok = ratio <= 1.0
    failed |= not ok
    print(
        f"{'hello (start-up)':<20}{statistics.median(a):>10.3f}{statistics.median(b):>10.3f}"
        f"{ratio:>8.2f}{'1':>8}  {'yes' if ok else 'TOO SLOW'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
