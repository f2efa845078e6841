"""Tests of the lifecycle standard modules: ``std/lifecycle``, ``std/lifecycle/combinators``,
``std/agent/resume_by``, the session-hook registry and the pipeline-finish lifecycle
(lifecycle.md 5, 6, 7, 2.16, 11 items 5, 7, 9).

Each ``*.harn`` program here runs through ``python -m harnpy run``; its stdout must equal
the sibling ``.expected`` file. ``item*`` programs are conformance-style fixtures of spec
section 11; ``table_*`` programs are table tests printing ``PASS <row>`` / ``FAIL <row>``
(no row may fail). A first line ``// env: HARNPY_STORE=<tmp>/NAME`` runs the program with a
durable wait store in a temporary directory. ``HARNPY_UPDATE_GOLDENS=1`` rewrites the
``.expected`` files (review the diff).

The in-process tests drive :class:`~harnpy.runtime.runtime.Runtime` directly: the finish
lifecycle's effect on the program value and its hook rules, and the Python hook API.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from harnpy.lifecycle import hooks
from harnpy.runtime.errors import HarnError
from harnpy.runtime.runtime import Runtime
from tests.conftest import harn_files

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROGRAMS = harn_files(HERE)
UPDATE = os.environ.get("HARNPY_UPDATE_GOLDENS") == "1"


def _run(program: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("HARNPY_STORE", None)
    first = program.read_text(encoding="utf-8").splitlines()[0]
    with tempfile.TemporaryDirectory() as tmp:
        if first.startswith("// env: "):
            name, _, value = first[len("// env: ") :].partition("=")
            env[name.strip()] = value.strip().replace("<tmp>", tmp)
        return subprocess.run(
            [sys.executable, "-m", "harnpy", "run", str(program)],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture(scope="module")
def results() -> dict[Path, subprocess.CompletedProcess[str]]:
    """Every program's run, started together (independent processes)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(PROGRAMS, pool.map(_run, PROGRAMS), strict=True))


def test_programs_exist_and_have_goldens() -> None:
    """The section-11 fixtures and the table tests are all present with .expected files."""
    names = {p.stem for p in PROGRAMS}
    for required in (
        "item05_mock_clock_timeout",
        "item07_open_park",
        "item09_resume_by",
        "item09_resume_by_cloud",
        "item09_combinators_on_finish",
        "table_combinators",
        "table_presets",
        "table_parse_resume_conditions",
    ):
        assert required in names
    for program in PROGRAMS:
        assert program.with_suffix(".expected").exists(), program.name


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_output_matches_golden(
    program: Path, results: dict[Path, subprocess.CompletedProcess[str]]
) -> None:
    """The program succeeds and its stdout equals the .expected file."""
    proc = results[program]
    golden = program.with_suffix(".expected")
    if UPDATE and proc.returncode == 0:
        golden.write_text(proc.stdout, encoding="utf-8")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip() == golden.read_text(encoding="utf-8").rstrip()


@pytest.mark.parametrize(
    "program", [p for p in PROGRAMS if p.stem.startswith("table_")], ids=lambda p: p.stem
)
def test_table_rows_all_pass(
    program: Path, results: dict[Path, subprocess.CompletedProcess[str]]
) -> None:
    """Every row of a table test prints PASS (none prints FAIL)."""
    lines = results[program].stdout.splitlines()
    assert lines
    failed = [ln for ln in lines if ln.startswith("FAIL")]
    assert not failed
    assert all(ln.startswith(("PASS", "  ")) for ln in lines)


# ------------------------------------------------------------------ in process


def _run_source(source: str, tmp_path: Path) -> tuple[Any, str, Runtime]:
    out: list[str] = []
    rt = Runtime(stdout=out.append, stderr=out.append)
    path = tmp_path / "prog.harn"
    path.write_text(source, encoding="utf-8")
    mod = rt.load_main(str(path), source)
    value = rt.run_module(mod)
    return value, "".join(out), rt


def test_on_finish_return_replaces_the_program_value(tmp_path: Path) -> None:
    """The last registered callback runs with (harness, value); its return is the value."""
    value, out, _ = _run_source(
        """
pipeline main() {
  pipeline_on_finish({ _h, v -> v + 100 })
  pipeline_on_finish({ h, v ->
    println("harness is a " + type_of(h))
    return v * 2
  })
  return 21
}
""",
        tmp_path,
    )
    assert value == 42
    assert out == "harness is a struct\n"


def test_nothing_registered_loads_no_finish_module(tmp_path: Path) -> None:
    """Programs without a callback or finish hook keep their value and never load the
    internal finish module."""
    value, _, rt = _run_source("pipeline main() { return 5 }", tmp_path)
    assert value == 5
    assert "std/lifecycle/_finish" not in rt.modules


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        ("pre_finish", "PreFinish hook returned block, which is not a valid control: no"),
        ("on_unsettled_detected", "OnUnsettledDetected hook blocked pipeline finish: no"),
    ],
)
def test_finish_blocks_are_errors(tmp_path: Path, hook: str, message: str) -> None:
    """A Block from PreFinish (always) or OnUnsettledDetected (work pending) is an error."""
    with pytest.raises(HarnError) as exc:
        _run_source(
            f"""
pipeline main(harness: Harness) {{
  harness.handoff_to("later", nil)
  register_session_hook("{hook}", {{ _ev -> {{block: true, reason: "no"}} }})
  return 1
}}
""",
            tmp_path,
        )
    assert message in exc.value.message


def test_post_finish_block_is_ignored_and_modify_feeds_later_hooks(tmp_path: Path) -> None:
    """PostFinish is advisory; a PreFinish Modify is what later PreFinish hooks see."""
    value, out, _ = _run_source(
        """
pipeline main() {
  register_session_hook("pre_finish", { _ev -> {modify: {return_value: "changed"}} })
  register_session_hook("pre_finish", { ev -> println("second saw " + ev.return_value) })
  register_session_hook("post_finish", { _ev -> false })
  return "original"
}
""",
        tmp_path,
    )
    assert value == "original"
    assert out == "second saw changed\n"


def test_on_finish_error_propagates(tmp_path: Path) -> None:
    """A throw from the callback is the program's error."""
    with pytest.raises(HarnError) as exc:
        _run_source(
            'pipeline main() {\n  pipeline_on_finish({ _h, _v -> throw "late failure" })\n}\n',
            tmp_path,
        )
    assert "late failure" in str(exc.value.catch_value)


@pytest.mark.parametrize(
    ("pattern", "payload", "want"),
    [
        ("*", {}, True),
        ("", {"x": 1}, True),
        ("worker.id == w1", {"worker": {"id": "w1"}}, True),
        ("worker.id == 'w1'", {"worker": {"id": "w2"}}, False),
        ("worker.id != w1", {"worker": {"id": "w2"}}, True),
        ("reason =~ ^urg", {"reason": "urgent"}, True),
        ("reason =~ ^urg", {"reason": "not urgent"}, False),
        ("reason =~ (", {"reason": "x"}, False),
        ("conditions.trigger", {"conditions": {"trigger": {"kind": "x"}}}, True),
        ("conditions.trigger", {"conditions": {}}, False),
        ("read_*", {"tool": {"name": "read_file"}}, True),
        ("read_*", {"tool": {"name": "write_file"}}, False),
        ("nightly*", {"target": "nightly-drain"}, True),
    ],
)
def test_pattern_matches(pattern: str, payload: dict[str, Any], want: bool) -> None:
    """Hook patterns: match-all, ==, !=, =~ (bad regex never matches), dotted truthy
    paths, tool-name globs and target globs."""
    assert hooks.pattern_matches(pattern, payload) is want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, {"control": "allow"}),
        (True, {"control": "allow"}),
        (False, {"control": "block", "reason": "PreResume hook returned false"}),
        ({"block": 1}, {"control": "block", "reason": "PreResume hook blocked the operation"}),
        ({"block": True, "reason": "x"}, {"control": "block", "reason": "x"}),
        ({"decision": " DENY "}, {"control": "decision", "decision": "deny"}),
        ({"modify": {"a": 1}}, {"control": "modify", "modify": {"a": 1}}),
        ({"then": False}, {"control": "block", "reason": "PreResume hook returned false"}),
        ({"other": 1}, {"control": "allow"}),
    ],
)
def test_parse_control(value: Any, want: dict[str, Any]) -> None:
    """Hook returns map to controls as lifecycle.md 7 lists them."""
    assert hooks.parse_control("PreResume", value) == want


def test_is_veto_and_event_names() -> None:
    """Block and a deny decision veto (13 Q21); both event spellings are accepted."""
    assert hooks.is_veto({"control": "block", "reason": "r"})
    assert hooks.is_veto({"control": "decision", "decision": "deny"})
    assert not hooks.is_veto({"control": "decision", "decision": "ask"})
    assert not hooks.is_veto({"control": "modify", "modify": {}})
    assert hooks.canonical_event("on_unsettled_detected") == "OnUnsettledDetected"
    assert hooks.canonical_event("WorkerSuspended") == "WorkerSuspended"
    assert hooks.canonical_event("error") == "SessionError"
    with pytest.raises(HarnError):
        hooks.canonical_event("post_lunch")


# ------------------------------------------------------------------ shared corpus


#: Topics of ``../shared/conformance/lifecycle/cases/tiers.tsv`` this suite owns, and the
#: trigger cases of std/triggers ``InterruptAndSuspend``.
OWNED_TOPICS = ("resume_by", "combinators", "lifecycle")


def test_lifecycle_topics_of_the_shared_corpus_pass(shared_dir) -> None:  # type: ignore[no-untyped-def]
    """Every case (original and ``.plain`` copy) of the owned topics passes in-process,
    and the ``trigger_interrupt_and_suspend_*`` cases too."""
    from harnpy.conformance import discover, run_case

    root = shared_dir / "conformance" / "lifecycle" / "cases"
    topics: dict[str, str] = {}
    for line in (root / "tiers.tsv").read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) >= 3 and not line.startswith("#"):
            topics[cols[0]] = cols[2]
    failures = []
    ran = 0
    for rel, path, kind in discover(str(root)):
        owned = topics.get(rel) in OWNED_TOPICS or "trigger_interrupt_and_suspend" in rel
        if kind == "skip" or not owned:
            continue
        ran += 1
        ok, reason = run_case(path, kind, timeout=20)
        if not ok:
            failures.append(f"{rel}: {reason}")
    assert ran >= 22
    assert not failures, "\n".join(failures)
