"""``harnpy check``, ``harnpy fmt`` and ``harnpy lint`` over several files and directories.

A PATH is a ``.harn`` file or a directory searched recursively for ``*.harn`` files (folders
whose name starts with ``.``, such as the ``.harn/`` state directory a run leaves, are
skipped). Exit codes: 0 nothing to report; 1 ``fmt --check`` found files to reformat or
``lint`` found problems; 2 a usage error, an unreadable file, a syntax or check error.

``--format json`` prints one JSON document: ``{"files": [{"path", "ok", "diagnostics":
[{"code", "severity", "message", "line", "col", "notes"}]}], "errors": N, "warnings": N}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from harnpy import clitext
from harnpy.clitext import write_err
from harnpy.diagnostics import Diagnostic

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


def add_subparsers(sub: Any) -> None:
    """Add ``check``, ``fmt`` and ``lint`` to the ``harnpy`` subcommand parser ``sub``."""
    check = sub.add_parser(
        "check",
        help="parse and statically check files",
        description="Parse and statically check each .harn file under PATHs (files or "
        "directories), then compile it as `harnpy run` would (without running it).",
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    check.add_argument("--format", choices=["text", "json"], default="text", help="output form")
    check.set_defaults(handler=cmd_check)

    fmt = sub.add_parser(
        "fmt",
        help="format .harn files",
        description="Lay out the .harn files under PATHs: two-space indentation by bracket "
        "level, no trailing whitespace, at most one blank line in a row. Tokens and comments "
        "are never changed, so the program does the same; formatting twice changes nothing.",
    )
    fmt.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    fmt.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a file would change"
    )
    fmt.set_defaults(handler=cmd_fmt)

    lint = sub.add_parser(
        "lint",
        help="report likely mistakes in .harn files",
        description="Report unused bindings (L001), unreachable code (L002), shadowed names "
        "(L003), long waits without cleanup (L004) and a named fn's dropped last value (L005) in "
        "the .harn files under PATHs; exit 1 "
        "when there are findings. A line with `// lint: allow L00N` is not reported for that "
        "code.",
    )
    lint.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    lint.add_argument("--format", choices=["text", "json"], default="text", help="output form")
    lint.set_defaults(handler=cmd_lint)


def harn_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """The ``.harn`` files PATHs name (sorted within each directory; a file named twice,
    as ``a.harn`` and ``./a.harn`` or through a directory, once), and the PATHs that do not
    exist. A PATH that exists and is no directory is kept whatever it is (a FIFO, a device),
    so that reading it says why it cannot be used."""
    files: list[str] = []
    missing: list[str] = []
    seen: set[str] = set()

    def add(f: str) -> None:
        key = os.path.normpath(os.path.abspath(f))
        if key not in seen:
            seen.add(key)
            files.append(f)

    for p in paths:
        if os.path.isdir(p):
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for n in sorted(filenames):
                    if n.endswith(".harn"):
                        add(os.path.join(dirpath, n))
        elif os.path.lexists(p):
            add(p)
        else:
            missing.append(p)
    return files, missing


def _read(path: str, command: str) -> str | None:
    from harnpy.runtime.modules import read_source
    from harnpy.security import ReadRefused

    try:
        return read_source(path)
    except ReadRefused as e:  # a FIFO, a device, a file over the cap: refused unread
        clitext.error(command, e.message)
    except OSError as e:
        clitext.error(command, f"cannot read {path}: {e.strerror or e}")
    except UnicodeDecodeError:
        clitext.error(command, f"{path} is not UTF-8 text")
    return None


def _diag_json(d: Diagnostic) -> dict[str, Any]:
    return {
        "code": d.code,
        "severity": d.severity,
        "message": d.message,
        "line": d.line,
        "col": d.col,
        "notes": list(d.notes),
    }


def _report(results: list[tuple[str, list[Diagnostic]]], form: str, ok_line: bool) -> None:
    if form == "json":
        doc = {
            "files": [
                {
                    "path": path,
                    "ok": not any(d.severity == "error" for d in diags),
                    "diagnostics": [_diag_json(d) for d in diags],
                }
                for path, diags in results
            ],
            "errors": sum(d.severity == "error" for _, ds in results for d in ds),
            "warnings": sum(d.severity != "error" for _, ds in results for d in ds),
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    for path, diags in results:
        for d in diags:
            write_err(d.render() + "\n")
        if ok_line and not any(d.severity == "error" for d in diags):
            sys.stdout.write(f"{path}: ok\n")


def _usage_problem(command: str, paths: list[str]) -> list[str] | None:
    files, missing = harn_files(paths)
    for p in missing:
        clitext.error(command, f"cannot read {p}: No such file or directory")
    if missing:
        return None
    if not files:
        clitext.error(command, "no .harn files under " + " ".join(paths))
        return None
    return files


def cmd_check(args: argparse.Namespace) -> int:
    """``harnpy check PATH... [--format json]``: the diagnostics of
    :func:`harnpy.cli.check_diagnostics` for every file; ``FILE: ok`` for a clean one (text
    form). Exit 0 when no file has an error, 2 otherwise (also for a missing PATH)."""
    from harnpy.cli import check_diagnostics

    files = _usage_problem("check", args.paths)
    if files is None:
        return EXIT_ERROR
    results: list[tuple[str, list[Diagnostic]]] = []
    failed = False
    for path in files:
        diags = check_diagnostics(path)
        if diags is None:
            failed = True
            continue
        results.append((path, diags))
        failed = failed or any(d.severity == "error" for d in diags)
    _report(results, args.format, ok_line=True)
    return EXIT_ERROR if failed else EXIT_OK


def cmd_fmt(args: argparse.Namespace) -> int:
    """``harnpy fmt [--check] PATH...``: rewrite each file in its formatted layout
    (:func:`harnpy.syntax.fmt.format_source`), saying ``reformatted FILE``; with ``--check``
    only say ``would reformat FILE`` and exit 1 when one would change. A file that does not
    parse is reported with its syntax error (exit 2) and left alone."""
    from harnpy.syntax import HarnSyntaxError
    from harnpy.syntax.fmt import format_source

    files = _usage_problem("fmt", args.paths)
    if files is None:
        return EXIT_ERROR
    changed = 0
    errors = 0
    for path in files:
        source = _read(path, "fmt")
        if source is None:
            errors += 1
            continue
        try:
            out = format_source(source, path)
        except HarnSyntaxError as e:
            write_err(e.render() + "\n")
            errors += 1
            continue
        if out == source:
            continue
        changed += 1
        if args.check:
            sys.stdout.write(f"would reformat {path}\n")
            continue
        _write_like(path, out)
        sys.stdout.write(f"reformatted {path}\n")
    if errors:
        return EXIT_ERROR
    if args.check and changed:
        return EXIT_FINDINGS
    return EXIT_OK


def _write_like(path: str, text: str) -> None:
    """Replace ``path``'s content with ``text`` atomically, keeping its permissions."""
    target = Path(path)
    mode = target.stat().st_mode & 0o7777
    tmp = target.with_name(f".{target.name}.fmt-{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, target)


def cmd_lint(args: argparse.Namespace) -> int:
    """``harnpy lint PATH... [--format json]``: the findings of :func:`harnpy.check.lint.lint`
    (warnings ``L001``-``L005``) for each file that parses; a file that does not parse is
    reported with its syntax error. Exit 1 when anything was found, 2 for a syntax error or
    a missing PATH, else 0."""
    from harnpy.check.lint import lint
    from harnpy.syntax import HarnSyntaxError, parse

    files = _usage_problem("lint", args.paths)
    if files is None:
        return EXIT_ERROR
    results: list[tuple[str, list[Diagnostic]]] = []
    broken = False
    for path in files:
        source = _read(path, "lint")
        if source is None:
            broken = True
            continue
        try:
            tree = parse(source, os.path.abspath(path))
            diags = lint(tree, path, source)
        except HarnSyntaxError as e:
            diags = list(e.diagnostics)
            broken = True
        except RecursionError:
            from harnpy.cli import nested_too_deeply

            diags = [nested_too_deeply(path)]
            broken = True
        results.append((path, diags))
    _report(results, args.format, ok_line=False)
    if broken:
        return EXIT_ERROR
    return EXIT_FINDINGS if any(ds for _, ds in results) else EXIT_OK
