"""Snapshots of the evaluator, proven across processes (issue: harnpy runs Harn scripts,
point 4): ``__snapshot_exit`` three calls deep inside a loop, with closures, a generator,
lazy iterators and dict/list locals alive; ``harnpy run --resume`` in a new process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harnpy.runtime.sources import sources_dir
from harnpy.security import seal
from tests.conftest import harnpy
from tests.sealing import write_doc

PROGRAM = Path(__file__).parent / "programs" / "snapshot_deep.harn"


def _setup(tmp_path: Path) -> Path:
    prog = tmp_path / "prog.harn"
    shutil.copy(PROGRAM, prog)
    return prog


def test_resume_continues_exactly_after_the_snapshot_call(tmp_path: Path) -> None:
    prog = _setup(tmp_path)
    full = harnpy("run", str(prog))
    assert full.returncode == 0, full.stderr
    snap = tmp_path / "state.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    assert snap.is_file()
    # the first process printed exactly the lines before the snapshot point
    full_lines = full.stdout.splitlines()
    first_lines = first.stdout.splitlines()
    assert first_lines == full_lines[: len(first_lines)]
    assert first_lines[-1] == "iter 2: x=c gen=20"
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # the new process prints exactly the rest: nothing before the snapshot runs twice
    assert resumed.stdout.splitlines() == full_lines[len(first_lines) :]


def test_snapshot_is_versioned_json_with_code_references(tmp_path: Path) -> None:
    prog = _setup(tmp_path)
    snap = tmp_path / "state.json"
    assert harnpy("run", str(prog), env={"SNAP": str(snap)}).returncode == 3
    doc = json.loads(snap.read_text())
    assert doc["_type"] == "harnpy_snapshot"
    assert doc["harnpy_snapshot_version"] == 1
    (mod,) = doc["modules"]
    assert mod["role"] == "main" and len(mod["hash"]) == 64
    text = snap.read_text()
    assert "pickle" not in text
    # frames point into code by [module key, node id]; no code is stored
    assert any(isinstance(r, dict) and r.get("$t") == "frame" for r in doc["heap"])
    assert (snap.stat().st_mode & 0o777) == 0o600


def test_resume_refuses_changed_source_and_keeps_the_snapshot(tmp_path: Path) -> None:
    prog = _setup(tmp_path)
    snap = tmp_path / "state.json"
    assert harnpy("run", str(prog), env={"SNAP": str(snap)}).returncode == 3
    before = snap.read_bytes()
    prog.write_text(prog.read_text().replace("level2 after", "level2 later"))
    # the stored copy of the code it ran is gone too (else the resume runs on it:
    # tests/lifecycle/test_resume_code_changes.py)
    shutil.rmtree(sources_dir(str(snap)))
    res = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert res.returncode == 2
    assert "changed since the snapshot was taken" in res.stderr
    assert "Traceback" not in res.stderr
    assert snap.read_bytes() == before


def test_resume_of_a_damaged_snapshot_is_a_clear_error(tmp_path: Path) -> None:
    # broken JSON under a good seal (what a harnpy bug could write): refused after the seal
    bad = tmp_path / "bad.json"
    data = seal(b'{"_type": "harnpy_snapshot", "heap": [')
    bad.write_bytes(data)
    res = harnpy("run", "--resume", str(bad))
    assert res.returncode == 2
    assert "not valid JSON" in res.stderr and "Traceback" not in res.stderr
    assert bad.read_bytes() == data
    # the same bytes unsealed (an older harnpy, or by hand): refused before any parsing
    bad.write_text('{"_type": "harnpy_snapshot", "heap": [')
    res = harnpy("run", "--resume", str(bad))
    assert res.returncode == 2
    assert "error[E404]" in res.stderr and "is not sealed" in res.stderr
    assert "Traceback" not in res.stderr
    assert bad.read_text() == '{"_type": "harnpy_snapshot", "heap": ['
    # harnpy's own errors have one prefix style, `harnpy COMMAND: error[...]` (before: the
    # program path wrote `bad.json: error[E404]`, like a diagnostic at a source location)
    assert res.stderr.startswith("harnpy run --resume: error[E404]: "), res.stderr
    assert str(bad) in res.stderr


def test_snapshot_of_a_host_object_names_the_variable(tmp_path: Path) -> None:
    prog = tmp_path / "host.harn"
    prog.write_text(
        'fn work() {\n  let ops = stream.map([1, 2], { x -> x })\n  __snapshot_exit("'
        + str(tmp_path / "s.json")
        + '")\n}\nwork()\n'
    )
    res = harnpy("run", str(prog))
    assert res.returncode == 1
    assert "stream_node held at <work>.ops" in res.stderr and "host object" in res.stderr
    assert not (tmp_path / "s.json").exists()


def _first(heap: list[dict], tag: str) -> int:
    return next(i for i, v in enumerate(heap) if isinstance(v, dict) and v.get("$t") == tag)


DAMAGE = {
    "frame parent is itself": lambda d: d["heap"][_first(d["heap"], "frame")].update(
        parent={"$ref": _first(d["heap"], "frame")}
    ),
    "generator kind": lambda d: d["heap"][_first(d["heap"], "generator")].update(kind="zz"),
    "generator done": lambda d: d["heap"][_first(d["heap"], "generator")].update(done="x"),
    "frame generator": lambda d: d["heap"][_first(d["heap"], "frame")].update(generator=[None]),
    "frame defers": lambda d: d["heap"][_first(d["heap"], "frame")].update(defers=[1]),
    "thread top": lambda d: d["thread"].update(top=0),
    "return slot": lambda d: d["heap"][_first(d["heap"], "frame")].update(ret_slot=10**9),
    "module globals": lambda d: d["globals"].update({k: True for k in d["globals"]}),
    "untagged heap entry": lambda d: d["heap"][_first(d["heap"], "frame")].update({"$t": None}),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_structurally_damaged_snapshot_is_refused_and_left_as_it_was(
    tmp_path: Path, damage: str
) -> None:
    prog = _setup(tmp_path)
    snap = tmp_path / "state.json"
    assert harnpy("run", str(prog), env={"SNAP": str(snap)}).returncode == 3
    doc = json.loads(snap.read_text())
    DAMAGE[damage](doc)
    write_doc(snap, doc)
    before = snap.read_bytes()
    res = harnpy("run", "--resume", str(snap), cwd=tmp_path, timeout=30)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "error[E404]" in res.stderr and "Traceback" not in res.stderr
    assert "bug in harnpy" not in res.stderr
    assert snap.read_bytes() == before


def test_resume_of_a_program_importing_std_and_reexporting_modules(tmp_path: Path) -> None:
    # a std import and a `pub import` facade: the resumed process compiles the code exactly
    # as the first one did, and the facade's re-exported names are bound again
    (tmp_path / "lib.harn").write_text('pub fn alpha() { return "a" }\n')
    (tmp_path / "facade.harn").write_text('pub import { alpha } from "lib"\n')
    (tmp_path / "main.harn").write_text(
        'import { int_to_string } from "std/text"\nimport "facade"\n'
        "pipeline default() {\n"
        '  println(alpha() + int_to_string(1))\n  __snapshot_exit("s.json")\n'
        "  println(alpha() + int_to_string(2))\n}\n"
    )
    first = harnpy("run", "main.harn", cwd=tmp_path)
    assert (first.returncode, first.stdout) == (3, "a1\n"), first.stderr
    resumed = harnpy("run", "--resume", "s.json", cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout) == (0, "a2\n"), resumed.stderr
