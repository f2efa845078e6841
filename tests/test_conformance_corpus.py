"""The Harn conformance corpus (``../shared/conformance``), run in-process.

Skipped when ``../shared`` is absent (a fresh clone). The pass count may only rise: raise
``FLOOR`` when more cases pass; a drop below it fails the test with the list of failures.
"""

from __future__ import annotations

import os

import pytest

from harnpy.conformance import discover, run_case

#: Minimum number of passing cases of ``../shared/conformance/cases`` (367 cases in all).
FLOOR = 367


def test_conformance_corpus_meets_the_floor(shared_dir) -> None:  # type: ignore[no-untyped-def]
    root = shared_dir / "conformance" / "cases"
    os.environ["HARN_LLM_CALLS_DISABLED"] = "1"
    failures = []
    passed = 0
    for rel, path, kind in discover(str(root)):
        if kind == "skip":
            continue
        ok, reason = run_case(path, kind, timeout=20)
        if not ok and rel.startswith("tests/concurrency/"):
            # a few concurrency cases compare wall-clock sleeps with timers of a few ms
            # (supervisor_restart_window: restarts 5 ms apart inside a 30 ms sleep); on a
            # loaded CI machine one can miss: it runs once more, and must pass then
            print(f"conformance: {rel} failed once ({reason}); run again")
            ok, reason = run_case(path, kind, timeout=20)
        if ok:
            passed += 1
        else:
            failures.append(f"{rel}: {reason}")
    print(f"conformance: {passed} passed, {len(failures)} failed")
    if passed < FLOOR:
        pytest.fail(f"{passed} cases pass, below the floor of {FLOOR}:\n" + "\n".join(failures))
