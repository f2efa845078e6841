"""Exactly-once resumes under a race (issue 10): 100 programs parked on 100 waitpoints; 10
processes each complete every waitpoint and try to resume its waiters, in their own random
order, at the same time. Every program is resumed exactly once, with the value of the one
completion that won."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

PROGRAM = """
pipeline main() {
  let n = argv()[0]
  let wp = waitpoint_create({id: "race-" + n})
  let got = waitpoint_wait(wp)
  println("resumed " + n + " " + got.value)
}
"""

RACER = """
import random, sys
from harnpy.lifecycle.waitpoints import complete_waitpoint, resume_ready, resume_waiters
url, me = sys.argv[1], sys.argv[2]
ids = [f"race-{i}" for i in range(int(sys.argv[3]))]
random.shuffle(ids)
for i in ids:
    complete_waitpoint(url, i, me)
    resume_waiters(url, i)
resume_ready(url)
"""

N = 100
RACERS = 10


def _park_all(src: Path, url: str) -> None:
    from harnpy.runtime.errors import SnapshotExit
    from harnpy.runtime.runtime import Runtime

    text = src.read_text(encoding="utf-8")
    for i in range(N):
        rt = Runtime(argv=[str(i)], stdout=lambda s: None, stderr=lambda s: None)
        rt.store_option = url
        with pytest.raises(SnapshotExit):
            rt.run_module(rt.load_main(str(src), text))


@pytest.mark.slow
def test_ten_processes_race_over_a_hundred_waitpoints(tmp_path: Path, store_url: str) -> None:
    from harnpy.store import open_store

    src = tmp_path / "race.harn"
    src.write_text(PROGRAM, encoding="utf-8")
    _park_all(src, store_url)
    store = open_store(store_url)
    parked = [i for i in store.list_checkpoints(("suspended",)) if i.mode == "program"]
    assert len(parked) == N

    env = dict(os.environ)
    env.pop("HARNPY_STORE", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, store_url, f"racer{k}", str(N)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for k in range(RACERS)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    lines = [ln for out, _ in outs for ln in out.splitlines() if ln.startswith("resumed ")]
    per_program = Counter(ln.split()[1] for ln in lines)
    assert per_program == Counter({str(i): 1 for i in range(N)})  # exactly one resume each
    winners = {ln.split()[1]: ln.split()[2] for ln in lines}
    for i in range(N):
        rec = store.get_waitpoint(f"race-{i}")
        assert rec is not None and rec.status == "completed"
        assert winners[str(i)] == rec.value  # the one completion that won
    done = [i for i in store.list_checkpoints() if i.mode == "program"]
    assert Counter(i.status for i in done) == Counter({"completed": N})
    counts = [sum(ln.startswith("resumed ") for ln in out.splitlines()) for out, _ in outs]
    print(f"resumes per process: {counts} (total {sum(counts)})")
