"""The terminal REPL driven through prompt-toolkit with a pipe input and a dummy output:
multi-line entry with auto-indent, Ctrl-C discarding an entry, Ctrl-D exiting with 0,
Tab completion, Alt-Enter, commands, errors that do not end the session, history."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("prompt_toolkit")

from prompt_toolkit.input import create_pipe_input  # noqa: E402
from prompt_toolkit.output import DummyOutput  # noqa: E402

from harnpy.repl import ReplCore, run_interactive  # noqa: E402

ENTER = "\r"
CTRL_C = "\x03"
CTRL_D = "\x04"
TAB = "\t"
ALT_ENTER = "\x1b\r"


class Run:
    """One REPL run: the keystrokes, what it wrote, its status and the core."""

    def __init__(self, keys: str, tmp_path: Path, history: Path | None = None) -> None:
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.core = ReplCore(self.out.write, self.err.write)
        self.history = history or tmp_path / "repl_history"
        with create_pipe_input() as inp:
            inp.send_text(keys)
            self.status = run_interactive(
                self.core,
                input=inp,
                output=DummyOutput(),
                history_path=str(self.history),
                banner=False,
            )

    @property
    def entries(self) -> list[str]:
        return [e.source for e in self.core.session.entries]


@pytest.fixture
def run(tmp_path: Path) -> Iterator[object]:
    yield lambda keys, **kw: Run(keys, tmp_path, **kw)


def test_multi_line_function_with_auto_indent_then_call(run) -> None:  # type: ignore[no-untyped-def]
    r = run(
        "fn add(a, b) {"
        + ENTER
        + "return a + b"
        + ENTER
        + "}"
        + ENTER
        + "add(2, 3)"
        + ENTER
        + CTRL_D
    )
    assert r.status == 0
    assert r.out.getvalue() == "5\n"
    # the body line was indented automatically and the closing brace dedented
    assert r.entries[0] == "fn add(a, b) {\n    return a + b\n}"


def test_entry_stays_open_on_trailing_operator_and_open_list(run) -> None:  # type: ignore[no-untyped-def]
    r = run("1 +" + ENTER + "2" + ENTER + "[1," + ENTER + "2]" + ENTER + CTRL_D)
    assert r.out.getvalue() == "3\n[1, 2]\n"
    assert r.entries == ["1 +\n2", "[1,\n    2]"]


def test_ctrl_c_discards_the_entry_being_typed(run) -> None:  # type: ignore[no-untyped-def]
    r = run("let lost = 1" + CTRL_C + "fn f() {" + ENTER + "1" + CTRL_C + "2 * 21" + ENTER + CTRL_D)
    assert r.out.getvalue() == "42\n"
    assert r.entries == ["2 * 21"]
    assert r.status == 0


def test_ctrl_d_on_an_empty_line_exits_zero_even_after_errors(run) -> None:  # type: ignore[no-untyped-def]
    r = run("1 / 0" + ENTER + CTRL_D)
    assert r.status == 0
    assert "error[E303]: Division by zero" in r.err.getvalue()


def test_errors_show_diagnostics_and_the_session_goes_on(run) -> None:  # type: ignore[no-untyped-def]
    r = run(
        "let x = 1" + ENTER + "let = 2" + ENTER + "x + undefined_y" + ENTER + "x" + ENTER + CTRL_D
    )
    err = r.err.getvalue()
    assert "<repl#2>:1:5: error[E104]" in err and "  1 | let = 2" in err
    assert "error[E301]: Undefined variable: undefined_y" in err
    assert r.out.getvalue() == "1\n"


def test_tab_completes_names_and_methods(run) -> None:  # type: ignore[no-untyped-def]
    r = run(
        'let greeting = "a-b"' + ENTER + "greet" + TAB + ".spl" + TAB + '("-")' + ENTER + CTRL_D
    )
    assert r.entries[-1] == 'greeting.split("-")'
    assert r.out.getvalue() == '["a", "b"]\n'


def test_tab_at_line_start_indents(run) -> None:  # type: ignore[no-untyped-def]
    r = run("[" + ENTER + TAB + "1]" + ENTER + CTRL_D)
    assert r.entries == ["[\n        1]"]


def test_alt_enter_submits_an_incomplete_entry(run) -> None:  # type: ignore[no-untyped-def]
    r = run("fn f()" + ALT_ENTER + "7" + ENTER + CTRL_D)
    assert "error[E105]" in r.err.getvalue()
    assert r.out.getvalue() == "7\n"


def test_empty_line_submits_what_the_parser_cannot_finish(run) -> None:  # type: ignore[no-untyped-def]
    r = run("fn g()" + ENTER + ENTER + "8" + ENTER + CTRL_D)
    assert "error[E105]" in r.err.getvalue()
    assert r.out.getvalue() == "8\n"


def test_commands(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    snap = tmp_path / "s.json"
    r = run(
        "let keep = 5"
        + ENTER
        + f":save {snap}"
        + ENTER
        + ":reset"
        + ENTER
        + ":type keep"
        + ENTER
        + f":restore {snap}"
        + ENTER
        + ":type keep"
        + ENTER
        + ":doc len"
        + ENTER
        + ":help"
        + ENTER
        + ":quit"
        + ENTER
        + "never reached"
        + ENTER
    )
    out = r.out.getvalue()
    assert f"saved 1 entry to {snap}" in out
    assert "session reset" in out
    assert "Undefined variable: keep" in r.err.getvalue()
    assert f"restored 1 entry from {snap}" in out
    assert "\nint\n" in out
    assert "len(v)  (builtin)" in out
    assert ":restore FILE" in out
    assert r.status == 0
    assert "never reached" not in "".join(r.entries)


def test_output_without_newline_is_finished_before_the_next_prompt(run) -> None:  # type: ignore[no-untyped-def]
    r = run('print("partial")' + ENTER + "1" + ENTER + CTRL_D)
    assert r.out.getvalue() == "partial\n1\n"


def test_history_is_written_and_read_back(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hist = tmp_path / "hist"
    run("let a = 41" + ENTER + "a + 1" + ENTER + CTRL_D, history=hist)
    assert "+a + 1" in hist.read_text()
    # Up arrow walks back through the previous session's entries
    r = run("\x1b[A\x1b[A" + ENTER + "a" + ENTER + CTRL_D, history=hist)
    assert r.entries == ["let a = 41", "a"]
    assert r.out.getvalue() == "41\n"


def test_damaged_history_file_gives_a_warning_not_a_crash(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hist = tmp_path / "hist"
    hist.mkdir()  # a directory where the file should be
    r = run("6 * 7" + ENTER + CTRL_D, history=hist)
    assert r.out.getvalue() == "42\n"
    assert "warning: " in r.err.getvalue()
    assert r.status == 0


def test_strict_mode_reports_failures_at_exit(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    core = ReplCore(out.write, err.write)
    core.strict = True
    with create_pipe_input() as inp:
        inp.send_text("nope" + ENTER + CTRL_D)
        status = run_interactive(
            core, input=inp, output=DummyOutput(), history_path=None, banner=False
        )
    assert status == 1


def test_exit_builtin_ends_the_repl_with_its_status(run) -> None:  # type: ignore[no-untyped-def]
    r = run("exit(3)" + ENTER + "1" + ENTER + CTRL_D)
    assert r.status == 3
    assert r.out.getvalue() == ""
