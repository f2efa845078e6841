"""Habits from Python get a hint saying how Harn writes it (issue: what a new user trips on,
point 7): ``'hi'``, ``and``/``or``/``not``, ``elif``, ``def``, ``None``/``True``/``False``,
``x++``; and a misspelt module or imported name gets a did-you-mean.

Syntax habits are checked on the parser's diagnostics (the hint is a note under the error);
one end-to-end run of ``harnpy check`` and ``harnpy run`` shows the hint as a user sees it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harnpy.check import check_file
from harnpy.stdlib import load_all
from harnpy.stdlib.registry import BUILTINS
from harnpy.syntax import HarnSyntaxError, parse
from tests.conftest import harnpy

SYNTAX_HABITS = [
    ("let s = 'hi'\n", "E101", "double quotes"),
    ("let a = true\nlet b = false\nif a and b { println(1) }\n", "E104", "`&&`"),
    ("let a = true\nlet b = false\nif a or b { println(1) }\n", "E104", "`||`"),
    ("let a = true\nif not a { println(1) }\n", "E104", "`!`"),
    ("let a = 1\nif a == 1 { println(1) } elif a == 2 { println(2) }\n", "E104", "`else if`"),
    ("def f(x) {\n  return x\n}\n", "E104", "`fn`"),
    ("var x = 1\nx++\n", "E104", "`x += 1`"),
    ("# a comment\nprintln(1)\n", "E101", "`//`"),
]


@pytest.mark.parametrize(("source", "code", "hint"), SYNTAX_HABITS)
def test_a_python_habit_is_a_syntax_error_with_a_hint(source: str, code: str, hint: str) -> None:
    with pytest.raises(HarnSyntaxError) as info:
        parse(source, "<habit>")
    diag = info.value.diagnostics[0]
    assert diag.code == code
    notes = " ".join(diag.notes)
    assert notes.startswith("hint: "), diag.render()
    assert hint in notes, diag.render()


def test_the_same_operators_written_the_harn_way_have_no_hint() -> None:
    # the hints come from the habit, not from any error near `&&`, `!` or `+`
    with pytest.raises(HarnSyntaxError) as info:
        parse("let a = true\nif a && { println(1) }\n", "<habit>")
    assert not info.value.diagnostics[0].notes
    with pytest.raises(HarnSyntaxError) as info:
        parse("var x = 1\nx + + 1\n", "<habit>")
    assert not info.value.diagnostics[0].notes  # `+ +` apart is not `++`


@pytest.mark.parametrize(("word", "harn"), [("None", "nil"), ("True", "true"), ("False", "false")])
def test_python_literals_suggest_the_harn_word(word: str, harn: str) -> None:
    load_all()
    diags = check_file("<habit>", f"let x = {word}\nprintln(x)\n", set(BUILTINS))
    assert [d.code for d in diags] == ["E210"]
    assert f"Undefined variable: {word} (did you mean `{harn}`?)" in diags[0].message


def test_check_and_run_show_the_hints(tmp_path: Path) -> None:
    prog = tmp_path / "habit.harn"
    prog.write_text("let ok = true\nif ok and ok { println(None) }\n", encoding="utf-8")
    for command in ("check", "run"):
        proc = harnpy(command, str(prog))
        assert proc.returncode == 2, proc.stderr
        assert "error[E104]" in proc.stderr
        assert "= hint: Harn writes `&&` for `and`" in proc.stderr
    prog.write_text("let x = None\nprintln(x)\n", encoding="utf-8")
    proc = harnpy("run", str(prog))
    assert proc.returncode == 1
    assert "Undefined variable: None (did you mean `nil`?)" in proc.stderr


def test_a_misspelt_module_or_imported_name_gets_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "utils.harn").write_text("pub fn helper() { return 1 }\n", encoding="utf-8")
    prog = tmp_path / "main.harn"
    cases = [
        ('import "std/mathh"\n', "cannot find module 'std/mathh' (did you mean `std/math`?)"),
        ('import "std/agent/lop"\n', "(did you mean `std/agent/loop`?)"),
        ('import { clampp } from "std/math"\n', "'clampp' is not defined in std/math "
         "(did you mean `clamp`?)"),
        ('import "./utills"\n', "cannot find module './utills' (did you mean `./utils`?)"),
        ('import { helpr } from "./utils"\n', "(did you mean `helper`?)"),
    ]  # fmt: skip
    for source, message in cases:
        prog.write_text(source + "println(1)\n", encoding="utf-8")
        for command in ("check", "run"):
            proc = harnpy(command, str(prog))
            assert proc.returncode == 2, (source, command, proc.stderr)
            assert message in proc.stderr, (source, command, proc.stderr)
    # nothing close: no hint
    prog.write_text('import "std/zzzzzzzz"\nprintln(1)\n', encoding="utf-8")
    proc = harnpy("run", str(prog))
    assert "cannot find module 'std/zzzzzzzz'" in proc.stderr
    assert "did you mean" not in proc.stderr
