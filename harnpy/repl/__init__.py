"""``harnpy repl``: the interactive Harn REPL (a harnpy extension of lifecycle.md 9.2).

One live :class:`~harnpy.runtime.session.Session` runs every entry once, incrementally;
an expression's value is echoed with the display rules (``println`` format) and bound to
the next of ``_1``, ``_2``, ... (lifecycle.md 9.2); ``nil`` is not echoed. The terminal
front end opens with ``Harn REPL v<version>`` and says ``Goodbye!`` on Ctrl-D. Errors are
rendered like ``harnpy run`` renders them and never end the session.

Two front ends share :class:`ReplCore` (entry splitting, ``:commands``, echo, errors):

* **terminal** (stdin and stdout are TTYs): a prompt-toolkit prompt with Harn syntax
  highlighting (:class:`harnpy.highlight.HarnLexer`), multi-line entry that stays open
  while brackets, braces, a triple-quoted string or a block comment are open or the line
  ends with an operator, auto-indent, Tab completion (keywords, builtins, names in scope,
  ``std/`` modules, methods after ``.``, commands and file names), history in
  ``~/.harnpy/repl_history``; Ctrl-C discards the entry or interrupts a running one,
  Ctrl-D on an empty line exits with status 0, Alt-Enter submits an entry as it is;
* **piped** (anything else): entries are read from stdin without prompts, colours or
  escape codes; results go to stdout, diagnostics to stderr; the exit status is 0 at end
  of input, or 1 when ``--strict`` is given and some entry failed. This path never
  imports prompt-toolkit.

Commands: ``:help``, ``:quit``, ``:reset``, ``:load FILE``, ``:type EXPR``, ``:doc NAME``,
``:vars``, ``:save FILE``, ``:restore FILE`` (see :data:`HELP`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from harnpy.repl.complete import Candidate, complete, stdlib_modules
from harnpy.repl.core import HELP, ReplCore, ReplExit, describe_type, doc_text
from harnpy.repl.history import HistoryFile, default_history_path
from harnpy.repl.scan import Scan, indent_for, is_complete, scan
from harnpy.repl.terminal import run_interactive

# ----------------------------------------------------------------- piped mode


def read_entries(lines: Iterable[str]) -> Iterator[str]:
    """Split input lines into entries with the terminal's rules (:func:`is_complete`);
    blank lines between entries are skipped and the rest is submitted at end of input."""
    buf: list[str] = []
    for raw in lines:
        line = raw[:-1] if raw.endswith("\n") else raw
        if line.endswith("\r"):
            line = line[:-1]
        if not buf and not line.strip():
            continue
        buf.append(line)
        text = "\n".join(buf)
        if is_complete(text):
            yield text.rstrip("\n")
            buf = []
    if buf:
        text = "\n".join(buf).strip("\n")
        if text.strip():
            yield text


def _lines(stream: TextIO) -> Iterator[str]:
    # readline (not iteration): builtins such as read_line() share the stream.
    while True:
        line = stream.readline()
        if not line:
            return
        yield line


def run_piped(core: ReplCore, stdin: TextIO) -> int:
    """The non-terminal REPL: entries from ``stdin``, no prompts or escape codes."""
    try:
        for entry in read_entries(_lines(stdin)):
            try:
                core.handle(entry)
            except KeyboardInterrupt:
                core.error("interrupted")
    except ReplExit as e:
        core.end_line()
        return e.code
    core.end_line()
    return core.exit_status()


# ----------------------------------------------------------------- entry point


def run_repl(
    strict: bool = False,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    interactive: bool | None = None,
) -> int:
    """``harnpy repl``: the terminal REPL when stdin and stdout are terminals, the piped
    REPL otherwise. Returns the exit status (0; 1 with ``strict`` after a failure; the
    program's ``exit`` code)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if interactive is None:
        interactive = _isatty(stdin) and _isatty(stdout)

    def flush() -> None:
        try:
            stdout.flush()
        except Exception:  # noqa: BLE001
            pass

    def write_out(text: str) -> None:
        stdout.write(text)
        if interactive:
            flush()

    def write_err(text: str) -> None:
        stderr.write(text)
        try:
            stderr.flush()
        except Exception:  # noqa: BLE001
            pass

    color = bool(interactive) and not os.environ.get("NO_COLOR")
    width = None
    if interactive:
        import shutil

        def width() -> int:
            return shutil.get_terminal_size((100, 24)).columns

    core = ReplCore(write_out, write_err, color=color, flush=flush, width=width)
    core.strict = strict
    core.session.stdout_isatty = bool(interactive)
    if interactive:
        return run_interactive(core, history_path=default_history_path())
    return run_piped(core, stdin)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


__all__ = [
    "Candidate",
    "HELP",
    "Scan",
    "run_repl",
    "run_piped",
    "run_interactive",
    "ReplCore",
    "ReplExit",
    "HistoryFile",
    "is_complete",
    "scan",
    "indent_for",
    "complete",
    "describe_type",
    "doc_text",
    "read_entries",
    "stdlib_modules",
]
