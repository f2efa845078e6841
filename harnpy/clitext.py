"""How the ``harnpy`` command line words and colours what it says on stderr.

One prefix style (issue 14 §11):

* a problem tied to a place in a source file is a diagnostic,
  ``path:line:col: error[CODE]: message`` with the source line and a caret
  (:mod:`harnpy.diagnostics`), or ``path: error[CODE]: message`` for a snapshot file;
* everything else the CLI reports is ``harnpy COMMAND: error: message`` (argparse's own
  usage errors have that form too), ``harnpy COMMAND: warning: message`` for a warning, and
  ``harnpy: message`` for a status note (``worker ... parked again``, an agent loop's
  failure as it happens).

Colour: on a terminal, ``error`` is red and bold, ``warning`` yellow, the caret line red and a
status note dim — unless ``NO_COLOR`` is set (to anything; https://no-color.org) or
``TERM=dumb``. Text written to a file or a pipe is never coloured.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TextIO

_RESET = "\x1b[0m"
_RED = "\x1b[1;31m"
_YELLOW = "\x1b[33m"
_CARET = "\x1b[31m"

_LABEL = re.compile(r"(?<![\w-])(error(?:\[[A-Z0-9-]+\])?|warning(?:\[[A-Z0-9-]+\])?)(?=:)")
_CARET_LINE = re.compile(r"^(\s*\|\s*)(\^+~*)\s*$")


def use_color(stream: TextIO | None = None) -> bool:
    """Whether text written to ``stream`` (default ``sys.stderr``) gets ANSI colours: it is a
    terminal, ``NO_COLOR`` is unset or empty and ``TERM`` is not ``dumb``."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def colorize(text: str) -> str:
    """``text`` with its ``error`` / ``warning`` labels and caret lines coloured."""
    out = []
    for line in text.split("\n"):
        m = _CARET_LINE.match(line)
        if m:
            line = f"{m.group(1)}{_CARET}{m.group(2)}{_RESET}"
        else:
            line = _LABEL.sub(
                lambda mm: (
                    (_RED if mm.group(1).startswith("error") else _YELLOW) + mm.group(1) + _RESET
                ),
                line,
                count=1,
            )
        out.append(line)
    return "\n".join(out)


def write_err(text: str) -> None:
    """Write ``text`` to stderr, coloured when :func:`use_color` says so."""
    sys.stderr.write(colorize(text) if use_color() else text)


def error(command: str, message: str) -> None:
    """Write ``harnpy COMMAND: error: MESSAGE`` (``harnpy: error: ...`` without a command)."""
    write_err(f"{_prog(command)}: error: {message}\n")


def warning(command: str, message: str) -> None:
    """Write ``harnpy COMMAND: warning: MESSAGE``."""
    write_err(f"{_prog(command)}: warning: {message}\n")


def _prog(command: str) -> str:
    return f"harnpy {command}" if command else "harnpy"


__all__ = ["colorize", "error", "use_color", "warning", "write_err"]
