"""Runtime state in program snapshots: the providers of harnpy/runtime/extensions.py carry
the state stdlib modules keep on the runtime (mock clock, log level, colour mode, shared
cells, seeded rngs...) under ``doc["runtime_state"]``; a damaged or unknown section is
refused before anything is applied; a supervisor refuses the snapshot."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from harnpy.runtime.resume import load_for_resume
from harnpy.runtime.runtime import Runtime
from harnpy.runtime.snapshot import SnapshotError
from tests.conftest import harnpy
from tests.sealing import write_doc

_SNAP = """
pipeline main(task) {{
  {before}
  __snapshot_exit(env("SNAP"))
  {after}
}}
"""


def _resume(tmp_path: Path, before: str, after: str) -> tuple[str, str, dict]:
    prog = tmp_path / "prog.harn"
    prog.write_text(_SNAP.format(before=before, after=after))
    snap = tmp_path / "state.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    return first.stdout, resumed.stdout, json.loads(snap.read_text())


def test_mock_clock_log_level_and_colour_mode_survive_a_new_process(tmp_path: Path) -> None:
    _, out, doc = _resume(
        tmp_path,
        'mock_time(1000000)\n  advance_time(250)\n  log_set_level("error")\n'
        '  set_color_mode("always")',
        "println(now_ms())\n  println(monotonic_ms())\n  println(log_get_level())\n"
        '  println(color("x", "red"))',
    )
    assert out.splitlines() == ["1000250", "250", "error", "\x1b[31mx\x1b[0m"]
    state = doc["runtime_state"]
    assert state["clock"] == {"wall_ms": 1000250, "mono_ms": 250.0}
    assert state["log_level"] == "error" and state["color_mode"] == "always"


def test_a_seeded_rng_resumes_its_sequence_and_stays_one_object(tmp_path: Path) -> None:
    before = "let r = rng_seed(7)\n  let same = r\n  let a = random_int(r, 1, 1000000)"
    after = "println(random_int(r, 1, 1000000))\n  println(random_int(same, 1, 1000000))"
    prog = tmp_path / "plain.harn"
    prog.write_text(_SNAP.format(before=before, after=after).replace("__snapshot_exit", "len"))
    plain = harnpy("run", str(prog))
    assert plain.returncode == 0, plain.stderr
    _, out, doc = _resume(tmp_path, before, after)
    assert out == plain.stdout
    rngs = [r for r in doc["heap"] if isinstance(r, dict) and r.get("$t") == "rng"]
    assert len(rngs) == 1  # `r` and `same` are one generator: written once, referenced twice


def test_shared_cells_and_held_permits_survive(tmp_path: Path) -> None:
    _, out, _ = _resume(
        tmp_path,
        'let c = shared_cell({key: "n", initial: 1})\n  shared_set(c, 41)\n'
        '  let p = sync_semaphore_acquire("s", 2, 2)',
        'println(shared_get(c))\n  println(sync_semaphore_acquire("s", 2, 1, 0))\n'
        "  println(sync_release(p))",
    )
    assert out.splitlines() == ["41", "nil", "true"]


def _doc_with_state(tmp_path: Path) -> tuple[dict, Path]:
    prog = tmp_path / "p.harn"
    prog.write_text(_SNAP.format(before='log_set_level("warn")', after='println("done")'))
    snap = tmp_path / "s.json"
    assert harnpy("run", str(prog), env={"SNAP": str(snap)}).returncode == 3
    return json.loads(snap.read_text()), snap


@pytest.mark.parametrize(
    ("section", "code"),
    [({"log_level": "loud"}, "E404"), ({"mystery": 1}, "E406"), ([], "E404")],
)
def test_a_damaged_or_unknown_section_is_refused_and_nothing_applied(
    tmp_path: Path, section: object, code: str
) -> None:
    doc, snap = _doc_with_state(tmp_path)
    doc["runtime_state"] = section
    if isinstance(section, dict):
        doc["runtime_state"] = {"color_mode": "always", **section}
    write_doc(snap, doc)
    rt = Runtime(stdout=io.StringIO().write, stderr=io.StringIO().write)  # type: ignore[arg-type]
    with pytest.raises(SnapshotError) as ei:
        load_for_resume(str(snap), rt)
    assert ei.value.code == code
    assert getattr(rt, "color_mode", None) is None  # the good section was not applied


def test_a_supervisor_refuses_the_snapshot_naming_it(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text(
        "pipeline main(task) {\n"
        '  let s = supervisor_start({children: [{id: "a", task: { -> 1 }}]})\n'
        '  __snapshot_exit(env("SNAP"))\n}\n'
    )
    r = harnpy("run", str(prog), env={"SNAP": str(tmp_path / "s.json")})
    assert r.returncode != 0
    assert "supervisor 'supervisor_1'" in r.stderr and "E402" in r.stderr
    assert not (tmp_path / "s.json").exists()


def test_an_older_snapshot_without_runtime_state_still_resumes(tmp_path: Path) -> None:
    doc, snap = _doc_with_state(tmp_path)
    del doc["runtime_state"]
    write_doc(snap, doc)
    r = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "done\n"
