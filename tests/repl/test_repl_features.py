"""The REPL under a real pseudo-terminal (issue 14 §10 and §12): ``_`` is the last value,
``name?`` is ``:doc name``, strings are echoed quoted, wide nested values are broken over
lines, ``:time EXPR``, ``:edit`` through ``$EDITOR``, and an entry that can never become
valid (``let u = "${ "{" }"``) is reported at once instead of opening a continuation."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.repl.test_pty import spawn, submit

pexpect = pytest.importorskip("pexpect")

pytestmark = pytest.mark.slow

PROMPT = "harn> "


def test_last_value_doc_query_quoting_time_and_pretty_printing(tmp_path: Path) -> None:
    child = spawn(tmp_path)
    try:
        submit(child, "20 + 1")
        child.expect("21")
        child.expect(PROMPT)
        submit(child, "_ * 2")
        child.expect("42")
        child.expect(PROMPT)
        submit(child, "len?")
        child.expect(r"len\(v\)  \(builtin\)")
        child.expect(PROMPT)
        submit(child, "json_stringify({a: 1})")
        child.expect(r'"\{\\"a\\":1\}"')  # a JSON string shown as a string literal
        child.expect(PROMPT)
        submit(child, ":time 6 * 7")
        child.expect("42")
        child.expect(r"time: [0-9.]+ (µs|ms|s)")
        child.expect(PROMPT)
        wide = "{" + ", ".join(f'k{i}: "{"v" * 12}"' for i in range(12)) + "}"
        submit(child, wide)
        # wider than the terminal (120 columns): one key per line, closed on its own line
        child.expect(r'\{\r?\n  k0: "vvvvvvvvvvvv",\r?\n  k1: "vvvvvvvvvvvv",')
        child.expect(r'k9: "vvvvvvvvvvvv"\r?\n\}')  # keys sorted: k9 is last
        child.expect(PROMPT)
    finally:
        child.sendcontrol("d")
        child.expect(pexpect.EOF)


def test_an_entry_that_cannot_become_valid_is_reported_at_once(tmp_path: Path) -> None:
    child = spawn(tmp_path)
    try:
        submit(child, 'let u = "${ 1 + 1 }')  # a plain string cannot go on to the next line
        # where it is: said once (no " at 1:9" after the message; colours may close it)
        child.expect(r"error\[E102\]: Unterminated string(\x1b\[0m)?\r?\n")
        child.expect(PROMPT)  # a fresh prompt, not the "  ... " continuation
        submit(child, "1 + 1")
        # the value, ended by a newline (not a 2 inside an escape code such as "\x1b[?25h")
        child.expect(r"(?<![0-9;?\[])2\r?\n")
        child.expect(PROMPT)
    finally:
        child.sendcontrol("d")
        child.expect(pexpect.EOF)


def test_edit_opens_the_editor_and_runs_what_was_saved(tmp_path: Path) -> None:
    editor = tmp_path / "fake_editor.py"
    log = tmp_path / "seen.txt"
    editor.write_text(
        "import sys\n"
        "path = sys.argv[1]\n"
        f"open({str(log)!r}, 'w').write(open(path).read())\n"
        "open(path, 'w').write('println(\"edited\")\\n40 + 2\\n')\n"
    )
    env_editor = f"{sys.executable} {editor}"
    old = os.environ.get("EDITOR")
    os.environ["EDITOR"] = env_editor
    try:
        child = spawn(tmp_path)
    finally:
        if old is None:
            os.environ.pop("EDITOR", None)
        else:
            os.environ["EDITOR"] = old
    try:
        submit(child, "let a = 1")
        child.expect(PROMPT)
        submit(child, ":edit")
        child.expect("edited")
        child.expect("42")
        child.expect(PROMPT)
    finally:
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    assert log.read_text() == "let a = 1\n"  # the editor was given the last entry
