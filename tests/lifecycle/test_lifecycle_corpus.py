"""The lifecycle conformance cases of the suspend / resume topics (``suspend``,
``resume``, ``await_resumption``, ``daemon``, ``cli`` in
``../shared/conformance/lifecycle/cases/tiers.tsv``) run end to end through ``harnpy
run``, each in its ``.plain`` form when it has one. Skipped when ``../shared`` is absent."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED, harnpy

TOPICS = {"suspend", "resume", "await_resumption", "daemon", "cli"}
CASES_DIR = SHARED / "conformance" / "lifecycle" / "cases"


def _cases() -> list[str]:
    tiers = CASES_DIR / "tiers.tsv"
    if not tiers.is_file():
        return []
    rows = [
        line.split("\t")
        for line in tiers.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    chosen = {r[0] for r in rows if len(r) > 2 and r[2] in TOPICS}
    out = []
    for rel in sorted(chosen):
        if rel.endswith(".plain.harn"):
            continue
        plain = rel[: -len(".harn")] + ".plain.harn"
        out.append(plain if plain in chosen else rel)
    return out


@pytest.mark.parametrize("rel", _cases() or ["(lifecycle cases not present)"])
def test_case(rel: str, tmp_path: Path) -> None:
    case = CASES_DIR / rel
    if not case.is_file():
        pytest.skip("../shared/conformance/lifecycle is not present")
    # the CLI case runs the interpreter itself: give it this checkout's harnpy
    wrapper = tmp_path / "harnpy-bin"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m harnpy "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    env = {
        "HARN_LLM_CALLS_DISABLED": "1",
        "HARN_CONFORMANCE_HARN_BIN": str(wrapper),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    proc = harnpy("run", str(case), cwd=case.parent, env=env, timeout=120)
    expected_file = case.with_suffix(".expected")
    expected = expected_file.read_text(encoding="utf-8").rstrip().split("\n")
    got = proc.stdout.rstrip().split("\n") if proc.stdout.strip() else []
    assert proc.returncode == 0, proc.stderr
    assert got == expected
    assert not (case.parent / ".harn").exists(), "a case wrote into the shared tree"
