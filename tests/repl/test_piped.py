"""``harnpy repl`` without a terminal (stdin piped): entries are read without prompts,
colours or escape codes; results go to stdout, diagnostics to stderr; exit status 0 at
end of input, 1 with ``--strict`` when an entry failed. Neither this path nor
``harnpy run`` imports prompt-toolkit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import harnpy
from tests.sealing import write_doc


def repl(text: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return harnpy("repl", *args, input=text, cwd=cwd)


def test_results_are_printed_without_prompts_or_escape_codes() -> None:
    p = repl('let x = 2\nx * 21\n"text"\nnil\nprintln("out")\n[1, "a", {k: true}]\n')
    assert p.returncode == 0, p.stderr
    # strings are echoed as literals, inside collections too (println prints bare text)
    assert p.stdout == '42\n"text"\nout\n[1, "a", {k: true}]\n'
    assert p.stderr == ""
    assert "\x1b" not in p.stdout + p.stderr
    assert "harn>" not in p.stdout


def test_multi_line_entries_and_blank_lines() -> None:
    src = (
        'fn add(a, b) {\n  return a + b\n}\n\n\nadd(1,\n  2)\nlet s = """\n  two\n  lines\n"""\ns\n'
    )
    p = repl(src)
    assert p.returncode == 0, p.stderr
    assert p.stdout == '3\n"two\\nlines"\n'


def test_errors_go_to_stderr_in_the_run_format_and_the_session_goes_on() -> None:
    p = repl("let a = 1\n1 / 0\nlet = 3\na + 1\n")
    assert p.returncode == 0
    assert p.stdout == "2\n"
    assert p.stderr == (
        "<repl#2>:1:1: error[E303]: Division by zero\n"
        "  1 | 1 / 0\n"
        "    | ^^^^^\n"
        "<repl#3>:1:5: error[E104]: expected a binding name or a {…} / […] pattern after "
        "let; got =\n"
        "  1 | let = 3\n"
        "    |     ^\n"
    )


def test_an_interpolation_that_ends_too_early_is_reported_at_once() -> None:
    # closed quotes and braces: no further line can make it valid, so it is not continued
    # (before, the next entry was swallowed into it)
    p = repl('let u = "${ 1 + }"\nprintln(3)\n')
    assert p.stdout == "3\n"
    assert "<repl#1>:1:17: error[E105]: Unexpected end of interpolation" in p.stderr
    assert p.stderr.count("error[") == 1


def test_runtime_error_text_matches_harnpy_run() -> None:
    run = harnpy("run", "-e", "let v = [1]\nv[5].x")
    p = repl("let v = [1]\nv[5].x\n")
    assert run.returncode == 1 and p.returncode == 0
    run_lines = run.stderr.splitlines()
    repl_lines = p.stderr.splitlines()
    # the same diagnostic and caret, at the entry's own path and line; the REPL leaves
    # out a stack trace that would only name the entry itself
    assert run_lines[0].replace("<-e>:2:", "<repl#2>:1:") == repl_lines[0]
    assert run_lines[1].replace("  2 |", "  1 |") == repl_lines[1]
    assert run_lines[2] == repl_lines[2]
    assert len(repl_lines) == 3


def test_exit_status_zero_at_end_of_input_even_after_failures() -> None:
    assert repl("undefined_name\n").returncode == 0


def test_strict_makes_a_failed_entry_exit_1() -> None:
    assert repl("1 + 1\n", "--strict").returncode == 0
    p = repl("1 + 1\nundefined_name\n2\n", "--strict")
    assert p.returncode == 1
    assert p.stdout == "2\n2\n"  # later entries still ran
    assert repl(":nope\n", "--strict").returncode == 1


def test_incomplete_last_entry_is_reported_at_end_of_input() -> None:
    p = repl("1\nfn f() {\n", "--strict")
    assert p.stdout == "1\n"
    assert "error[E105]" in p.stderr
    assert p.returncode == 1


def test_exit_builtin_and_quit_command() -> None:
    p = repl("println(1)\nexit(4)\nprintln(2)\n")
    assert (p.returncode, p.stdout) == (4, "1\n")
    p = repl("1\n:quit\n2\n")
    assert (p.returncode, p.stdout) == (0, "1\n")


def test_read_line_reads_the_following_input_line() -> None:
    p = repl('let name = read_line()\nworld\n"hello " + name\n')
    assert p.stdout == '"hello world"\n', p.stderr


def test_commands_in_piped_mode_and_restore_in_another_process(tmp_path: Path) -> None:
    snap = tmp_path / "session.json"
    first = repl(
        f"fn sq(x) {{ return x * x }}\nvar total = 10\ntotal = total + sq(3)\n:save {snap}\n"
        ":type total\n:doc sq\n",
        cwd=tmp_path,
    )
    assert first.returncode == 0, first.stderr
    assert f"saved 3 entries to {snap}" in first.stdout
    assert "int\n" in first.stdout
    assert "fn sq(x)  (defined in <repl#1>)" in first.stdout
    second = repl(f":restore {snap}\ntotal + sq(2)\ntotal = 0\ntotal\n", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[1:] == ["23", "0"]


def test_load_runs_a_file_in_the_session(tmp_path: Path) -> None:
    (tmp_path / "lib.harn").write_text('fn hi(n) { return "hi " + n }\nprintln("loading")\n')
    p = repl(':load lib.harn\nhi("bob")\n:load missing.harn\n', cwd=tmp_path)
    assert p.stdout.splitlines() == ["loading", "loaded lib.harn", '"hi bob"']
    assert "cannot read missing.harn" in p.stderr


def _imported_modules(args: list[str], stdin: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "harnpy", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def test_piped_repl_does_not_import_prompt_toolkit() -> None:
    log = _imported_modules(["repl"], "1 + 1\n")
    assert "harnpy.repl" in log
    assert "prompt_toolkit" not in log


def test_run_never_imports_prompt_toolkit() -> None:
    code = (
        "import sys\n"
        "from harnpy.cli import main\n"
        "rc = main(['run', '-e', 'println(1 + 1)'])\n"
        "assert rc == 0\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('prompt_toolkit', 'harnpy.repl')))\n"
        "print(bad)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["2", "[]"]


def test_echoed_values_are_bound_to_underscore_numbers(tmp_path: Path) -> None:
    # lifecycle.md 9.2: results are addressable as _1, _2, ...; nil results take no number
    p = repl('40 + 2\nprintln("side")\n_1 + 1\n[_1, _2]\n:save s.json\n', cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[:4] == ["42", "side", "43", "[42, 43]"]
    # a restored session goes on counting after the highest number it holds
    p = repl(":restore s.json\nlen(_3)\n_4 + 1\n", "--strict", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1:] == ["2", "3"]


def test_save_into_a_missing_directory_fails_and_creates_nothing(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "s.json"
    p = repl(f"let a = 1\n:save {target}\n", "--strict", cwd=tmp_path)
    assert p.returncode == 1
    assert "No such file or directory" in p.stderr
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda rec: rec["entries"].__setitem__(0, 5),
        lambda rec: rec["entries"][0].__setitem__("path", 0),
        lambda rec: rec.__setitem__("counter", []),
        lambda rec: rec.__setitem__("entries", "x"),
    ],
)
def test_restore_of_a_damaged_session_record_is_an_error_and_the_session_goes_on(
    tmp_path: Path, damage: Any
) -> None:
    assert repl("let a = 1\n:save s.json\n", cwd=tmp_path).returncode == 0
    doc = json.loads((tmp_path / "s.json").read_text())
    damage(doc["extra"]["repl_session"])
    write_doc(tmp_path / "s.json", doc)
    p = repl('let b = 2\n:restore s.json\nprintln("alive " + to_string(b))\n', cwd=tmp_path)
    assert "Traceback" not in p.stderr
    assert "error[E404]" in p.stderr and "session record is damaged" in p.stderr
    assert p.stdout.endswith("alive 2\n")


def test_doc_of_an_unknown_name_suggests_what_harnpy_doc_suggests() -> None:
    # the REPL's candidates are harnpy doc's (methods and std functions too) plus the
    # session's names: `uper` is the method `upper` (before: the builtin `iter`)
    p = repl(":doc uper\nfn sqr(x) { return x * x }\n:doc sqrr\n")
    assert "no builtin, method or definition named uper (did you mean `upper`?)" in p.stderr
    assert "named sqrr (did you mean `sqr`?)" in p.stderr
    d = harnpy("doc", "uper")
    assert "did you mean `upper`?" in d.stderr
