"""``harnpy test``: run a project's own tests and conformance directories (issue 14 §6).

``harnpy test [PATH ...]`` (default: ``tests/`` when the working directory has one, else
``.``) finds, under each directory (or in each file given), skipping folders whose name
starts with ``.`` (state directories such as ``.harn/``):

* ``NAME.harn`` with ``NAME.expected`` beside it: the program must succeed and print exactly
  the expected text (the conformance comparison: trailing whitespace of the whole text
  ignored, ``\\r\\n`` read as ``\\n``, ``[timer] x: <n>ms`` numbers ignored); a failure shows
  a unified diff, expected first;
* ``NAME.harn`` with ``NAME.error``: the program must fail with an error text matching the
  spec (substring, ``re:`` regex, or any line of a multi-line spec);
* ``NAME.harn`` with ``NAME.skip`` or ``NAME.conformance-skip``: reported as skipped;
* any other ``.harn`` file declaring ``test_*`` pipelines: each such pipeline is a test
  that passes when it returns without an uncaught error (``assert``/``assert_eq`` throw),
  run in a fresh runtime with the file's top-level code first. Files with neither are
  helpers (imported modules) and are not run.

``harnpy test conformance DIR`` runs a conformance directory: the same rules, without the
``test_*`` pipelines (a file without a sidecar is a helper there).

Each test runs in-process in a fresh runtime, its file's directory as working directory,
``HARN_LLM_CALLS_DISABLED=1`` and a per-test timeout (``--timeout``, default 10 s). Output:
``PASS``/``FAIL``/``SKIP`` lines (passes with ``-v``), the diff or error of each failure,
then ``N passed, M failed, K skipped`` (and a warning on stderr when no test was found);
``--json`` prints one JSON document instead and
``--junit FILE`` writes a JUnit XML report. Exit status 0 when nothing failed, 1 when a
test failed, 2 for a path that does not exist or a report that cannot be written.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

SIDE_SKIP = (".skip", ".conformance-skip")


@dataclass
class Case:
    """One test: ``name`` (``file`` relative to its root, plus ``::pipeline`` for a
    ``test_*`` pipeline), the absolute ``path``, its ``kind`` (``expected``, ``error``,
    ``pipeline`` or ``skip``) and the pipeline's name for ``pipeline`` cases."""

    name: str
    path: str
    kind: str
    entry: str | None = None


@dataclass
class Outcome:
    """The result of one case: ``status`` ``passed`` / ``failed`` / ``skipped``, a one-line
    ``reason``, a unified ``diff`` for an output mismatch, the captured ``stderr`` of a
    failure and the ``duration_ms``."""

    name: str
    file: str
    kind: str
    status: str
    reason: str = ""
    diff: str = ""
    stderr: str = ""
    duration_ms: int = 0


@dataclass
class Report:
    """Every outcome of a run, in discovery order."""

    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        """How many outcomes have ``status``."""
        return sum(1 for o in self.outcomes if o.status == status)

    def summary(self) -> str:
        """``N passed, M failed`` (``, K skipped`` when some were)."""
        text = f"{self.count('passed')} passed, {self.count('failed')} failed"
        skipped = self.count("skipped")
        return text + (f", {skipped} skipped" if skipped else "")


def _test_pipelines(path: str) -> list[str]:
    """The names of the ``test_*`` pipelines a file declares (none when it does not parse:
    then the file is run as an ``error``-free program would be, and fails with its syntax
    error only if it is a case)."""
    from harnpy.runtime.modules import _unwrap, read_source
    from harnpy.syntax import HarnSyntaxError, parse
    from harnpy.syntax import ast as A

    try:
        source = read_source(path)  # capped, regular files only: a FIFO is not waited on
    except (OSError, UnicodeDecodeError):
        return []
    if "test_" not in source:
        return []
    try:
        tree = parse(source, path)
    except (HarnSyntaxError, RecursionError):  # run as a case, it reports the error itself
        return []
    names = []
    for stmt in tree.body:
        node = _unwrap(stmt)
        if type(node) is A.PipelineDecl and node.name.startswith("test_"):
            names.append(node.name)
    return names


def discover(roots: list[str], pipelines: bool = True) -> list[Case]:
    """The cases under ``roots`` (files or directories; module docstring), sorted by path
    within each root; ``pipelines=False`` (conformance) leaves ``test_*`` pipelines out."""
    cases: list[Case] = []
    for root in roots:
        root_abs = os.path.abspath(root)
        if os.path.isfile(root_abs):
            files = [root_abs]
            base_dir = os.path.dirname(root_abs)
        else:
            base_dir = root_abs
            files = []
            for dirpath, dirnames, filenames in os.walk(root_abs):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                files += [
                    os.path.join(dirpath, n) for n in sorted(filenames) if n.endswith(".harn")
                ]
        for path in files:
            stem = path[: -len(".harn")]
            rel = os.path.relpath(path, base_dir).replace(os.sep, "/")
            if any(os.path.exists(stem + ext) for ext in SIDE_SKIP):
                cases.append(Case(rel, path, "skip"))
            elif os.path.isfile(stem + ".expected"):
                cases.append(Case(rel, path, "expected"))
            elif os.path.isfile(stem + ".error"):
                cases.append(Case(rel, path, "error"))
            elif pipelines:
                for name in _test_pipelines(path):
                    cases.append(Case(f"{rel}::{name}", path, "pipeline", name))
    return cases


def run_one(case: Case, timeout: float) -> Outcome:
    """Run one case (module docstring) and judge it."""
    from harnpy.conformance import execute, judge, normalize_output

    file = case.name.split("::", 1)[0]
    if case.kind == "skip":
        return Outcome(case.name, file, case.kind, "skipped", "skip file beside it")
    start = time.perf_counter()
    from harnpy.runtime.modules import MAX_SOURCE_BYTES, read_source
    from harnpy.security import ReadRefused, read_capped

    try:
        source = read_source(case.path)  # capped, regular files only (as harnpy run)
        want = ""
        if case.kind in ("expected", "error"):
            side = case.path[: -len(".harn")] + (
                ".expected" if case.kind == "expected" else ".error"
            )
            want = read_capped(side, MAX_SOURCE_BYTES).decode("utf-8", errors="replace")
    except ReadRefused as e:
        return Outcome(case.name, file, case.kind, "failed", f"cannot read the test: {e.message}")
    except (OSError, UnicodeDecodeError) as e:
        return Outcome(case.name, file, case.kind, "failed", f"cannot read the test: {e}")
    ex = execute(case.path, source, timeout, case.entry)
    ms = int((time.perf_counter() - start) * 1000)
    if case.kind == "pipeline":
        if ex.timed_out:
            return Outcome(
                case.name,
                file,
                case.kind,
                "failed",
                f"timed out after {timeout:g}s",
                duration_ms=ms,
            )
        if ex.failed:
            first = next((ln for ln in ex.err.splitlines() if ln.strip()), "failed")
            return Outcome(
                case.name, file, case.kind, "failed", first, stderr=ex.err, duration_ms=ms
            )
        return Outcome(case.name, file, case.kind, "passed", duration_ms=ms)
    ok, reason = judge(case.kind, ex, want)
    if ex.timed_out:
        reason = f"timed out after {timeout:g}s"
    diff = ""
    if not ok and case.kind == "expected" and not ex.failed:
        diff = "".join(
            difflib.unified_diff(
                (normalize_output(want) + "\n").splitlines(keepends=True),
                (normalize_output(ex.out) + "\n").splitlines(keepends=True),
                fromfile=f"{file} (expected)",
                tofile=f"{file} (actual)",
            )
        )
    return Outcome(
        case.name,
        file,
        case.kind,
        "passed" if ok else "failed",
        reason,
        diff=diff,
        stderr="" if ok else ex.err,
        duration_ms=ms,
    )


def run(
    roots: list[str],
    *,
    pipelines: bool = True,
    pattern: str | None = None,
    timeout: float = 10.0,
    on_outcome: Any = None,
) -> Report:
    """Discover and run every case under ``roots`` whose name contains ``pattern``;
    ``on_outcome(outcome)`` is called as each one ends."""
    report = Report()
    for case in discover(roots, pipelines):
        if pattern and pattern not in case.name:
            continue
        outcome = run_one(case, timeout)
        report.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return report


def junit_xml(report: Report, suite: str = "harnpy") -> str:
    """The JUnit XML text of ``report`` (one ``testsuite``; ``failure`` and ``skipped``
    elements; the captured stderr as ``system-err``)."""
    import xml.etree.ElementTree as ET

    total_s = sum(o.duration_ms for o in report.outcomes) / 1000
    root = ET.Element("testsuites")
    ts = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(report.outcomes)),
        failures=str(report.count("failed")),
        skipped=str(report.count("skipped")),
        errors="0",
        time=f"{total_s:.3f}",
    )
    for o in report.outcomes:
        tc = ET.SubElement(
            ts, "testcase", classname=o.file, name=o.name, time=f"{o.duration_ms / 1000:.3f}"
        )
        if o.status == "failed":
            f = ET.SubElement(tc, "failure", message=o.reason)
            f.text = o.diff or o.stderr or o.reason
        elif o.status == "skipped":
            ET.SubElement(tc, "skipped", message=o.reason)
        if o.stderr and o.status == "failed":
            ET.SubElement(tc, "system-err").text = o.stderr
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def main(args: Any) -> int:
    """CLI handler of ``harnpy test`` (module docstring); returns the exit status."""
    from harnpy import clitext

    paths = list(args.paths or [])
    conformance = bool(paths) and paths[0] == "conformance"
    if conformance:
        paths = paths[1:]
        if not paths:
            clitext.error("test", "give the conformance directory: harnpy test conformance DIR")
            return 2
    elif not paths:
        paths = ["tests"] if os.path.isdir("tests") else ["."]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        clitext.error("test", f"no such file or directory: {missing[0]}")
        return 2
    os.environ["HARN_LLM_CALLS_DISABLED"] = "1"
    if conformance:
        from harnpy.conformance import harnpy_executable

        if not os.environ.get("HARN_CONFORMANCE_HARN_BIN") and not os.environ.get("HARN_BIN"):
            exe = harnpy_executable()  # cold-restart fixtures start a second interpreter
            if exe is not None:
                os.environ["HARN_CONFORMANCE_HARN_BIN"] = exe

    def show(o: Outcome) -> None:
        if args.json:
            return
        if o.status == "passed":
            if args.verbose:
                print(f"PASS  {o.name} ({o.duration_ms} ms)")
            return
        if o.status == "skipped":
            print(f"SKIP  {o.name}: {o.reason}")
            return
        print(f"FAIL  {o.name}: {o.reason}")
        if o.diff:
            sys.stdout.write(_indent(o.diff))
        elif o.stderr and o.kind == "pipeline":
            rest = _after_reason(o.stderr, o.reason)
            if rest.strip():
                sys.stdout.write(_indent(rest))
        sys.stdout.flush()

    report = run(
        paths,
        pipelines=not conformance,
        pattern=args.filter,
        timeout=args.timeout,
        on_outcome=show,
    )
    if args.junit:
        try:
            with open(args.junit, "w", encoding="utf-8") as fh:
                fh.write(junit_xml(report, "conformance" if conformance else "harnpy"))
        except OSError as e:
            clitext.error("test", f"cannot write {args.junit}: {e.strerror or e}")
            return 2
    if args.json:
        doc = {
            "schemaVersion": 1,
            "summary": {
                "passed": report.count("passed"),
                "failed": report.count("failed"),
                "skipped": report.count("skipped"),
            },
            "cases": [asdict(o) for o in report.outcomes],
        }
        sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
    else:
        print(report.summary())
    if not report.outcomes:
        what = "conformance cases" if conformance else "tests"
        clitext.warning(
            "test",
            f"no {what} found under {' '.join(paths)}: a test is NAME.harn with NAME.expected "
            "or NAME.error beside it" + ("" if conformance else ", or a `pipeline test_*()`"),
        )
    return 1 if report.count("failed") else 0


def _after_reason(stderr: str, reason: str) -> str:
    """``stderr`` without its first non-blank line when that line is ``reason`` (already on
    the ``FAIL`` line: the message is shown once)."""
    lines = stderr.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip():
            return "".join(lines[i + 1 :]) if line.strip() == reason.strip() else stderr
    return stderr


def _indent(text: str) -> str:
    return "".join(f"    {line}" for line in text.splitlines(keepends=True)) + (
        "" if text.endswith("\n") else "\n"
    )


__all__ = ["Case", "Outcome", "Report", "discover", "junit_xml", "main", "run", "run_one"]
