"""Syntax error diagnostics: codes, wording (conformance `.error` substrings), positions."""

from __future__ import annotations

import pytest

from harnpy.diagnostics import DiagnosticError
from harnpy.syntax import HarnSyntaxError, parse, parse_expression


def errors(src: str, path: str = "t.harn") -> list:
    with pytest.raises(HarnSyntaxError) as info:
        parse(src, path)
    return info.value.diagnostics


def first(src: str):
    return errors(src)[0]


def test_syntax_error_is_a_diagnostic_error_with_source_and_path() -> None:
    diag = first('pipeline test(task) {\n  let x = "unterminated\n}\n')
    assert isinstance(HarnSyntaxError([diag]), DiagnosticError)
    assert (diag.code, diag.path, diag.line, diag.col) == ("E102", "t.harn", 2, 11)
    assert diag.message == "Unterminated string at 2:11"
    assert diag.render().splitlines() == [
        "t.harn:2:11: error[E102]: Unterminated string at 2:11",
        '  2 |   let x = "unterminated',
        "    |           ^",
    ]


@pytest.mark.parametrize(
    ("src", "code", "message"),
    [
        ("pipeline test(task) {\n  let x = `\n}", "E101", "Unexpected character '`' at 2:11"),
        ("pipeline p(x) {\n", "E105", "Unexpected end of file, expected } at 2:1"),
        ("let x = f(1,", "E105", "Unexpected end of file, expected ) at 1:13"),
        ("let x = [1", "E105", "Unexpected end of file, expected ] at 1:11"),
        ("let x =", "E105", "Unexpected end of file, expected expression at 1:8"),
        ("x.", "E105", "Unexpected end of file, expected identifier at 1:3"),
        ("pipeline test(task) {\n  let x = )\n}", "E104", "Expected expression, got ) at 2:11"),
        ("f(1 2)", "E104", "Expected `,` or `)`, got 2 at 1:5"),
        ("let d = {a: 1 b: 2}", "E104", "Expected `,` or `}`, got b at 1:15"),
        ("struct 5 { }", "E104", "Expected identifier, got 5 at 1:8"),
        ("/* never closed", "E103", "Unterminated block comment at 1:1"),
        (
            "fn f(a, b = 1, c) { }",
            "E106",
            "Required parameter cannot follow a parameter with a default value at 1:16",
        ),
        ("fn f(...a, b) { }", "E106", "Rest parameter must be the last parameter at 1:6"),
        ("f() = 2", "E107", "invalid assignment target at 1:1"),
        (
            "let a = 1\neval_pack checks {\n  cases []\n}",
            "E104",
            "`eval_pack` declarations are not supported by harnpy yet at 2:1",
        ),
    ],
)
def test_messages_codes_and_positions(src: str, code: str, message: str) -> None:
    diag = first(src)
    assert (diag.code, diag.message) == (code, message)


def test_statement_separator_messages() -> None:
    assert first("pipeline p() {\n  log(1) log(2)\n}").message == (
        "Expected statement separator (`;` or newline), got log at 2:10"
    )
    assert first("log(1) log(2)").message == (
        "Expected top-level item separator (`;` or newline), got log at 1:8"
    )


def test_semicolon_conformance_cases() -> None:
    # tests/language/semicolon_*_invalid.error: "got ;", and "else" / "catch" lines
    assert "got ;" in first('pipeline test(task) {\n  log("one");; log("two")\n}').message
    msg = first('pipeline t(task) {\n  if true {\n    log("then")\n  }; else {\n  }\n}').message
    assert "else" in msg and msg.endswith("at 4:6")
    msg = first("pipeline t(task) {\n  try {\n  }; catch {\n  }\n}").message
    assert "catch" in msg and msg.endswith("at 3:6")


def test_known_bad_snippets_get_specific_messages() -> None:
    assert first("let v = f(1)(2)").message.startswith("only names (`f(x)`) and methods")
    assert first("let x = a = 1").message.startswith("assignment is a statement")
    assert first("pipeline p() {\n  if a = 1 { }\n}").message.startswith(
        "assignment is a statement"
    )
    assert first("let match = 1").message == (
        "Expected `[`, `{` or identifier, got keyword match (reserved words cannot be names) at 1:5"
    )
    assert "got keyword type" in first("fn f(type) { }").message


def test_several_errors_are_reported_in_order() -> None:
    src = "pipeline test(task) {\n  let x = )\n  let y = 42\n  let z = )\n  log(y)\n}\n"
    diags = errors(src)
    assert [(d.line, d.col, d.message) for d in diags] == [
        (2, 11, "Expected expression, got ) at 2:11"),
        (4, 11, "Expected expression, got ) at 4:11"),
    ]
    assert all(d.source == src for d in diags)


def test_no_invented_follow_up_errors() -> None:
    # the fault is on line 1 (`+` then nothing); blanking line 2 would cascade, so stop
    assert len(errors("let x = 1 +\nlet y = 2\nlet z = 3\n")) == 1
    # an unbalanced line is not blanked either
    assert len(errors("foo(1,\n  2 3)\nlet a = )\n")) == 1


def test_parse_expression_errors() -> None:
    with pytest.raises(HarnSyntaxError) as info:
        parse_expression("1 +")
    assert info.value.diagnostics[0].message == "Unexpected end of file, expected expression at 1:4"


def test_errors_inside_interpolation_point_into_the_string() -> None:
    diag = first('let a = 1\nlet s = "x ${a +} y"')
    assert diag.message == "Unexpected end of interpolation, expected expression at 2:17"
    diag = first('let s = "x ${a b} y"')
    assert diag.message == "Expected `}` closing the interpolation, got b at 1:16"


def test_a_utf8_byte_order_mark_is_not_part_of_the_program() -> None:
    assert parse("\ufeffprintln(1)\n", "t.harn") == parse("println(1)\n", "t.harn")
    diag = first("\ufefflet x = `\n")
    assert (diag.line, diag.col, diag.message) == (1, 9, "Unexpected character '`' at 1:9")
    assert diag.render().splitlines()[1:3] == ["  1 | let x = `", "    |         ^"]
    diag = first("\ufefflet x = )\n")
    assert (diag.line, diag.col) == (1, 9)


def test_the_caret_counts_terminal_cells_of_wide_characters() -> None:
    diag = first('let s = "日本🎉" )\n')
    assert diag.col == 15
    # the three wide characters take two cells each: the caret sits under `)`
    assert diag.render().splitlines()[2] == "    | " + " " * 17 + "^"
    from harnpy.diagnostics import Diagnostic

    under = Diagnostic("E1", "m", "t", 1, 9, source='let s = "日本" + 1', end_col=13)
    assert under.render().splitlines()[2] == "    | " + " " * 8 + "^" * 6
