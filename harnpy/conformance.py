"""``harnpy test conformance DIR``: run Harn conformance cases in-process.

The rules are those of ``shared/conformance/README.md`` (upstream ``harn test
conformance``): a ``NAME.harn`` with ``NAME.expected`` must exit successfully and print
exactly the expected text (after trimming trailing whitespace of the whole text, ``\\r\\n``
as ``\\n``, and ``[timer] NAME: <n>ms`` lines compared without the number); a ``NAME.harn``
with ``NAME.error`` must fail with an error text matching the spec (substring, ``re:``
regex, or any line of a multi-line spec); ``NAME.conformance-skip`` skips the case.

Each case runs in a fresh :class:`~harnpy.runtime.runtime.Runtime` with the case's
directory as working directory and ``HARN_LLM_CALLS_DISABLED=1``; output is captured.
Prints one line per failure and ends with ``N passed, M failed``.
"""

from __future__ import annotations

import io
import os
import re
import sys
import threading
from dataclasses import dataclass

_RUST_WS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


@dataclass
class CaseResult:
    """Outcome of one case: ``status`` is ``pass``/``fail``/``skip``."""

    rel: str
    status: str
    reason: str = ""


def _lines(text: str) -> list[str]:
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def _norm_line(line: str) -> str:
    if line.endswith("ms"):
        head, sep, _ = line[:-2].rpartition(": ")
        if sep and head.startswith("[timer] "):
            return f"{head}: <ms>"
    return line


def normalize_output(text: str) -> str:
    """The comparison form of an output text (see module docstring)."""
    return "\n".join(_norm_line(x) for x in _lines(text.rstrip(_RUST_WS)))


def error_matches(actual: str, spec: str) -> bool:
    """Whether an error text satisfies an ``.error`` spec."""
    lines = _lines(spec)
    pats = [x.strip(_RUST_WS) for x in lines] if len(lines) > 1 else [spec.strip(_RUST_WS)]
    for p in pats:
        if p.startswith("re:"):
            rx = re.sub(r"\(\?<([A-Za-z_]\w*)>", r"(?P<\1>", p[3:].strip(_RUST_WS))
            try:
                if re.search(rx.replace(r"\z", r"\Z"), actual):
                    return True
            except re.error:
                continue
        elif p in actual:
            return True
    return False


def discover(root: str) -> list[tuple[str, str, str]]:
    """``(relative path, absolute path, kind)`` of every case under ``root``."""
    out = []
    root = os.path.abspath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        # state directories (`.harn/` of a program run here) and other dot folders hold no
        # cases; a `.harn` folder would otherwise look like a case file
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(".harn"):
                continue
            path = os.path.join(dirpath, name)
            base = path[: -len(".harn")]
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if os.path.exists(base + ".conformance-skip"):
                out.append((rel, path, "skip"))
            elif os.path.isfile(base + ".expected"):
                out.append((rel, path, "expected"))
            elif os.path.isfile(base + ".error"):
                out.append((rel, path, "error"))
    return out


@dataclass
class Execution:
    """What running one program in-process gave: its ``out`` and ``err`` text, whether it
    ``failed`` (an error, a non-zero ``exit``), and ``timed_out``."""

    out: str
    err: str
    failed: bool
    timed_out: bool = False


def execute(path: str, source: str, timeout: float = 10.0, entry: str | None = None) -> Execution:
    """Run ``source`` (the file ``path``) in a fresh runtime with the file's directory as
    working directory, output captured; ``entry`` names the pipeline to run instead of the
    default one. ``__snapshot_exit`` counts as success; after ``timeout`` seconds the
    program is interrupted at its next back-edge and the execution is ``timed_out``."""
    from harnpy.cli import nested_too_deeply, render_runtime_error
    from harnpy.diagnostics import RECURSION_LIMIT_MESSAGE, DiagnosticError
    from harnpy.runtime.errors import HarnError, HarnExit, SnapshotExit
    from harnpy.runtime.runtime import Runtime

    out = io.StringIO()
    err = io.StringIO()
    failed = False
    holder: dict[str, Runtime] = {}

    def target() -> None:
        nonlocal failed
        old_cwd = os.getcwd()
        os.chdir(os.path.dirname(path) or ".")
        try:
            rt = Runtime(stdout=out.write, stderr=err.write)
            holder["rt"] = rt
            try:
                try:
                    mod = rt.load_main(path, source, entry)
                except RecursionError:  # the parser or compiler, on deeply nested source
                    failed = True
                    err.write(nested_too_deeply(path).render() + "\n")
                    return
                rt.run_module(mod)
            except RecursionError:
                failed = True
                err.write(RECURSION_LIMIT_MESSAGE + "\n")
            except DiagnosticError as e:
                failed = True
                err.write(e.render() + "\n")
            except HarnError as e:
                failed = True
                err.write(render_runtime_error(e, rt) + "\n")
            except SnapshotExit:
                pass
            except HarnExit as e:  # the `exit(code)` builtin: the case's exit status
                failed = e.code != 0
            except SystemExit as e:
                failed = bool(e.code)
            except BaseException as e:  # noqa: BLE001 - report internal errors as failures
                failed = True
                err.write(f"internal error: {type(e).__name__}: {e}\n")
        finally:
            os.chdir(old_cwd)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        rt = holder.get("rt")
        if rt is not None and rt.main_thread is not None:
            rt.main_thread.interrupt_requested = True  # stop it at the next back-edge
        t.join(2.0)
        return Execution(out.getvalue(), err.getvalue(), True, timed_out=True)
    return Execution(out.getvalue(), err.getvalue(), failed)


def run_case(path: str, kind: str, timeout: float = 10.0) -> tuple[bool, str]:
    """Run one case in-process; returns ``(passed, reason)``."""
    base = path[: -len(".harn")]
    want_file = base + (".expected" if kind == "expected" else ".error")
    try:
        with open(want_file, encoding="utf-8", errors="replace") as fh:
            want = fh.read()
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        return False, f"cannot read case: {e}"
    ex = execute(path, source, timeout)
    return judge(kind, ex, want)


def judge(kind: str, ex: Execution, want: str) -> tuple[bool, str]:
    """Whether an execution passes its case (``expected`` output or ``error`` spec);
    returns ``(passed, reason)``."""
    if ex.timed_out:
        return False, "timed out"
    if kind == "expected":
        if ex.failed:
            last = ex.err.strip().splitlines()
            return False, f"failed: {last[0] if last else ''}"
        if normalize_output(ex.out) == normalize_output(want):
            return True, ""
        return False, "output differs from expected"
    if not ex.failed:
        return False, "expected an error, but succeeded"
    if error_matches(ex.err, want.rstrip(_RUST_WS)):
        return True, ""
    last = ex.err.strip().splitlines()
    return False, f"error text does not match: {last[0] if last else '(empty)'}"


def harnpy_executable() -> str | None:
    """The path of the ``harnpy`` command running now: the console script beside the
    Python interpreter, else the one on ``PATH``, else None."""
    import shutil

    beside = os.path.join(os.path.dirname(sys.executable), "harnpy")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("harnpy")


def run_conformance(root: str, pattern: str | None = None, verbose: bool = False) -> int:
    """CLI handler: run every case under ``root``; exit 0 when all pass, else 1."""
    if not os.path.isdir(root):
        sys.stderr.write(f"harnpy test: no such directory: {root}\n")
        return 2
    os.environ["HARN_LLM_CALLS_DISABLED"] = "1"
    if not os.environ.get("HARN_CONFORMANCE_HARN_BIN") and not os.environ.get("HARN_BIN"):
        # Cases that start a second interpreter (cold-restart fixtures) find it here; the
        # Harn fixtures otherwise look for a cargo build of the reference.
        exe = harnpy_executable()
        if exe is not None:
            os.environ["HARN_CONFORMANCE_HARN_BIN"] = exe
    passed = failed = skipped = 0
    for rel, path, kind in discover(root):
        if pattern and pattern not in rel:
            continue
        if kind == "skip":
            skipped += 1
            continue
        ok, reason = run_case(path, kind)
        if ok:
            passed += 1
            if verbose:
                print(f"PASS  {rel}")
        else:
            failed += 1
            print(f"FAIL  {rel}: {reason}")
    summary = f"{passed} passed, {failed} failed"
    if skipped:
        summary += f", {skipped} skipped"
    print(summary)
    return 0 if failed == 0 else 1
