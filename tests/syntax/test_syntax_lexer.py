"""Lexical structure (spec language.md section 1): strings, numbers, durations, comments."""

from __future__ import annotations

import pytest

from harnpy.syntax import HarnSyntaxError, parse, parse_expression
from harnpy.syntax.ast import (
    Attribute,
    BinOp,
    Call,
    DictEntry,
    DictLit,
    DurationLit,
    ExprStmt,
    Index,
    InterpString,
    LetStmt,
    Literal,
    MethodCall,
    Name,
)
from harnpy.syntax.lexer import dedent_triple, dedent_triple_parts


def value_of(src: str):
    """The expression bound by the single `let v = ...` in ``src``."""
    (stmt,) = parse(src).body
    assert isinstance(stmt, LetStmt)
    return stmt.value


def error_of(src: str) -> str:
    with pytest.raises(HarnSyntaxError) as info:
        parse(src)
    return info.value.diagnostics[0].message


# ------------------------------------------------------------------ plain strings


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        (r'"a\nb"', "a\nb"),
        (r'"tab\there"', "tab\there"),
        (r'"back\\slash"', "back\\slash"),
        (r'"say \"hi\""', 'say "hi"'),
        (r'"cost \$5"', "cost $5"),
        (r'"\d+"', "\\d+"),  # unknown escapes keep both characters
        (r'"\r\u{41}\'"', "\\r\\u{41}\\'"),
        (r'"\${x}"', "${x}"),  # an escaped dollar is no interpolation
        ('"$ and $x"', "$ and $x"),  # `$` not followed by `{` is literal
        ('""', ""),
    ],
)
def test_plain_string_escapes(src: str, expected: str) -> None:
    assert parse_expression(src) == Literal(expected)


def test_interpolation_parts_alternate_text_and_expressions() -> None:
    node = parse_expression('"a ${x} b ${y + 1}"')
    assert node == InterpString(("a ", Name("x"), " b ", BinOp("+", Name("y"), Literal(1)), ""))


def test_interpolation_allows_quotes_and_calls_inside() -> None:
    node = parse_expression('"${join(xs, ", ")}|${d["k"]}"')
    assert node == InterpString(
        (
            "",
            Call(Name("join"), (Name("xs"), Literal(", "))),
            "|",
            Index(Name("d"), Literal("k")),
            "",
        )
    )


def test_interpolation_counts_braces_only() -> None:
    node = parse_expression('"${ {a: 1}["a"] }"')
    assert node == InterpString(
        ("", Index(DictLit((DictEntry("a", Literal(1)),)), Literal("a")), "")
    )


def test_nested_interpolated_string_inside_interpolation() -> None:
    node = parse_expression('"<${f("${x}!")}>"')
    assert node == InterpString(("<", Call(Name("f"), (InterpString(("", Name("x"), "!")),)), ">"))


def test_interpolation_spans_point_into_the_file() -> None:
    src = 'let v = 1\nlet s = "ab ${x.y}"\n'
    value = parse(src).body[1].value
    attr = value.parts[1]
    assert isinstance(attr, Attribute)
    assert (attr.span.line, attr.span.col) == (2, 15)
    assert src[attr.span.start : attr.span.end] == "x.y"
    assert (attr.obj.span.line, attr.obj.span.col, attr.obj.span.end_col) == (2, 15, 15)


def test_empty_interpolation_is_an_error() -> None:
    assert error_of('let s = "a ${} b"').startswith("empty interpolation `${}` at 1:12")


def test_unterminated_string_reports_the_opening_quote() -> None:
    assert error_of('let x = 1\n  let s = "oops\n') == "Unterminated string at 2:11"


def test_raw_newline_in_plain_string_is_unterminated() -> None:
    assert error_of('"ab\ncd"') == "Unterminated string at 1:1"


def test_raw_strings_have_no_escapes_or_interpolation() -> None:
    assert parse_expression(r'r"C:\x\n${y}"') == Literal(r"C:\x\n${y}")


def test_unterminated_raw_string() -> None:
    assert error_of('let p = r"abc') == "Unterminated string at 1:9"


# ------------------------------------------------------------------ triple-quoted strings


def test_triple_quoted_dedent_without_interpolation() -> None:
    src = 'let v = """\n    first\n      indented\n\n    last\n    """'
    assert value_of(src) == Literal("first\n  indented\n\nlast")


def test_triple_quoted_keeps_backslashes() -> None:
    assert value_of('let v = """a\\nb"""') == Literal("a\\nb")


def test_triple_quoted_without_leading_newline_and_zero_indent() -> None:
    # common indent 0: only the trailing newline goes; whitespace-only lines stay
    src = 'let v = """x\n  y\n  \n"""'
    assert value_of(src) == Literal("x\n  y\n  ")


def test_triple_quoted_with_interpolation_spec_example() -> None:
    src = 'let s = """\n    total: ${n}\n    done\n    """'
    assert value_of(src) == InterpString(("total: ", Name("n"), "\ndone"))


def test_triple_quoted_interpolation_quirk_text_after_interpolation_loses_spaces() -> None:
    src = 'let s = """\n    Hello ${a} and ${b}\n    """'
    assert value_of(src) == InterpString(("Hello ", Name("a"), "and ", Name("b"), ""))


def test_triple_quoted_interpolation_quirk_line_of_only_interpolation() -> None:
    src = 'let s = """\n  a\n  ${x}\n  b\n  """'
    # the segment "a\n" loses its trailing newline, so `a` and x touch
    assert value_of(src) == InterpString(("a", Name("x"), "\nb"))


def test_triple_quoted_interpolation_zero_indent_drops_final_blank_segment() -> None:
    assert value_of('let s = """a ${x}\n"""') == InterpString(("a ", Name("x"), ""))
    assert value_of('let s = """a ${x} b\n"""') == InterpString(("a ", Name("x"), " b\n"))


def test_dedent_helpers_directly() -> None:
    assert dedent_triple("  a\n   b\n  ") == "a\n b"
    assert dedent_triple("  a\n   b\n") == "a\n b"
    assert dedent_triple("\t\tx\n\t\ty\n") == "x\ny"
    assert dedent_triple_parts(["    k: ", "\n    v\n    "]) == ["k: ", "\nv"]
    assert dedent_triple_parts(["a ", "\n  "]) == ["a ", ""]


def test_unterminated_triple_quoted_string() -> None:
    assert error_of('let x = 1\nlet s = """abc\n') == "Unterminated string at 2:9"


def test_triple_quoted_string_span_covers_all_lines() -> None:
    src = 'let s = """\n  a\n  """\nlet t = 2'
    body = parse(src).body
    span = body[0].value.span
    assert (span.line, span.col, span.end_line, span.end_col) == (1, 9, 3, 5)
    assert body[1].span.line == 4


# ------------------------------------------------------------------ numbers and durations


@pytest.mark.parametrize(
    ("src", "ms"),
    [
        ("10ms", 10),
        ("5s", 5000),
        ("2m", 120_000),
        ("3h", 10_800_000),
        ("1d", 86_400_000),
        ("2w", 1_209_600_000),
    ],
)
def test_durations(src: str, ms: int) -> None:
    assert parse_expression(src) == DurationLit(ms)


def test_ms_wins_even_before_letters() -> None:
    # `ms` is taken whenever `m` is followed by `s`; then `x` is a separate name
    assert error_of("let d = 5msx").startswith("Expected top-level item separator")


@pytest.mark.parametrize("src", ["5sec", "2min", "3hours"])
def test_suffix_followed_by_letters_is_not_a_duration(src: str) -> None:
    assert "got" in error_of(f"let d = {src}")


def test_numbers() -> None:
    assert parse_expression("42") == Literal(42)
    assert parse_expression("3.25") == Literal(3.25)
    assert parse_expression("42.x") == Attribute(Literal(42), "x")
    assert parse_expression("3.0.x") == Attribute(Literal(3.0), "x")
    big = parse_expression("99999999999999999999")
    assert isinstance(big, Literal) and isinstance(big.value, float)


@pytest.mark.parametrize("src", ["1_000", "0x1F", "1.5e3", "1."])
def test_unsupported_number_forms_fail(src: str) -> None:
    with pytest.raises(HarnSyntaxError):
        parse(f"let n = {src}")


# ------------------------------------------------------------------ comments and layout


def test_comments_produce_no_tokens() -> None:
    src = "#!/usr/bin/env harn\n// line\n/// doc\nlet v = /* a /* nested */ b */ 1 // tail\n"
    assert value_of(src) == Literal(1)


def test_newlines_inside_block_comment_are_swallowed() -> None:
    # the block comment hides the newline, so both statements are on one line
    assert error_of("let a = 1 /*\n*/ let b = 2").startswith("Expected top-level item separator")


def test_unterminated_block_comment() -> None:
    assert error_of("let a = 1\n  /* open /* nested */ still open") == (
        "Unterminated block comment at 2:3"
    )


def test_backslash_newline_joins_lines() -> None:
    assert value_of("let v = 1 \\\n - 2") == BinOp("-", Literal(1), Literal(2))


@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("pipeline test(task) {\n  let x = `\n}", "Unexpected character '`' at 2:11"),
        ("let a = 1 # no", "Unexpected character '#' at 1:11"),
        ("let a = b & c", "Unexpected character '&' at 1:11"),
        ("let a = \\ b", "Unexpected character '\\' at 1:9"),
    ],
)
def test_unexpected_characters(src: str, message: str) -> None:
    assert error_of(src) == message


def test_shebang_only_at_offset_zero() -> None:
    assert value_of("#!harn\nlet v = 1") == Literal(1)
    assert error_of("\n#!harn\nlet v = 1") == "Unexpected character '#' at 2:1"


# ------------------------------------------------------------------ keywords


def test_keywords_after_dot_are_names() -> None:
    node = parse_expression("op.type.match(cfg.for)")
    assert node == MethodCall(
        Attribute(Name("op"), "type"), "match", (Attribute(Name("cfg"), "for"),)
    )


def test_keywords_as_bare_dict_keys() -> None:
    node = parse_expression("{type: 1, for: 2, in: 3, true: 4}")
    assert node == DictLit(
        tuple(
            DictEntry(k, Literal(v)) for k, v in (("type", 1), ("for", 2), ("in", 3), ("true", 4))
        )
    )


@pytest.mark.parametrize("word", ["finally", "require", "select", "skill", "eval_pack"])
def test_five_keywords_are_not_bare_keys(word: str) -> None:
    with pytest.raises(HarnSyntaxError):
        parse_expression(f"{{{word}: 1}}")
    assert parse_expression(f'{{"{word}": 1}}') == DictLit((DictEntry(word, Literal(1)),))


@pytest.mark.parametrize("word", ["type", "from", "to", "in", "match", "select", "emit"])
def test_reserved_words_are_not_variable_names(word: str) -> None:
    with pytest.raises(HarnSyntaxError):
        parse(f"let {word} = 1")


@pytest.mark.parametrize("word", ["gen", "each", "settle", "with", "not", "where", "out", "self"])
def test_contextual_words_are_ordinary_names_elsewhere(word: str) -> None:
    (stmt,) = parse(f"let {word} = {word} + 1").body
    assert stmt.value == BinOp("+", Name(word), Literal(1))


def test_expression_statement_of_name() -> None:
    assert parse("each").body == (ExprStmt(Name("each")),)


def test_simple_interpolated_name_span() -> None:
    src = 'let a = 1\nlet s = """\n  x ${ a } y\n  """'
    name = parse(src).body[1].value.parts[1]
    assert name == Name("a")
    assert (name.span.line, name.span.col, name.span.end_col) == (3, 8, 8)
    assert src[name.span.start : name.span.end] == "a"


def test_non_printable_unexpected_character_is_escaped() -> None:
    assert error_of("let x = \x01") == "Unexpected character '\\u{0001}' at 1:9"
