"""Statement separators and line continuation: the table of spec language.md 1.9."""

from __future__ import annotations

import pytest

from harnpy.syntax import HarnSyntaxError, parse
from harnpy.syntax.ast import (
    AssignStmt,
    Attribute,
    BinOp,
    Block,
    Call,
    ExprStmt,
    FnDecl,
    IfExpr,
    LetStmt,
    ListLit,
    Literal,
    LogicalOp,
    MethodCall,
    Name,
    NamePattern,
    NilCoalesce,
    Pipe,
    ReturnStmt,
    TryExpr,
    TypeDecl,
    TypeName,
    TypeUnion,
    UnaryOp,
)


def body(src: str) -> tuple:
    return parse(src).body


def let(name: str, value) -> LetStmt:
    return LetStmt(NamePattern(name), value)


# after any binary operator token, newlines are skipped
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%", "**", "==", "!=", "<", ">", "<=", ">="])
def test_newline_after_binary_operator_continues(op: str) -> None:
    assert body(f"let v = a {op}\n b") == (let("v", BinOp(op, Name("a"), Name("b"))),)


def test_newline_after_in_and_pipe_continues() -> None:
    assert body("let v = a in\n b") == (let("v", BinOp("in", Name("a"), Name("b"))),)
    assert body("x |>\n f") == (ExprStmt(Pipe(Name("x"), Name("f"))),)


# before these operators at the start of the next line, the line continues
@pytest.mark.parametrize("op", ["==", "!=", "<", ">", "<=", ">=", "+", "*", "/", "%", "**"])
def test_newline_before_continuation_operator(op: str) -> None:
    assert body(f"let v = a\n  {op} b") == (let("v", BinOp(op, Name("a"), Name("b"))),)


def test_newline_before_logical_pipe_coalesce_and_dots() -> None:
    assert body("let v = a\n || b\n && c") == (
        let("v", LogicalOp("||", Name("a"), LogicalOp("&&", Name("b"), Name("c")))),
    )
    assert body("x\n |> f") == (ExprStmt(Pipe(Name("x"), Name("f"))),)
    assert body("let v = a\n ?? b") == (let("v", NilCoalesce(Name("a"), Name("b"))),)
    assert body("let v = a\n  .b()\n  ?.c") == (
        let("v", Attribute(MethodCall(Name("a"), "b", ()), "c", optional=True)),
    )


# before `-`, `in`, `not in`, `to`, `exclusive`, `?`, `[`, `(` a new statement starts
def test_minus_on_next_line_starts_a_statement() -> None:
    assert body("x\n - 1") == (ExprStmt(Name("x")), ExprStmt(UnaryOp("-", Literal(1))))


def test_paren_and_bracket_on_next_line_start_statements() -> None:
    assert body("f\n(1)") == (ExprStmt(Name("f")), ExprStmt(Literal(1)))
    assert body("f\n[1]") == (ExprStmt(Name("f")), ExprStmt(ListLit((Literal(1),))))


@pytest.mark.parametrize("line2", ["in y", "to 3", "exclusive", "? 1 : 2"])
def test_other_operators_on_next_line_do_not_continue(line2: str) -> None:
    with pytest.raises(HarnSyntaxError):
        parse(f"let v = x\n{line2}")


def test_not_in_on_next_line_is_a_new_statement() -> None:
    # `not` is an ordinary name at the start of a statement
    assert body("let v = x\nnot in y") == (
        let("v", Name("x")),
        ExprStmt(BinOp("in", Name("not"), Name("y"))),
    )


# after `=`, `(`, `[`, `,`, `:`, `{`, `->`, `throw` newlines are skipped
def test_newlines_after_openers_and_punctuation() -> None:
    assert body("let v =\n  f(\n  1,\n  2\n)") == (
        let("v", Call(Name("f"), (Literal(1), Literal(2)))),
    )
    assert body("let v = [\n1,\n\n2,\n]") == (let("v", ListLit((Literal(1), Literal(2)))),)
    (stmt,) = body("let d = {\n  a:\n    1,\n  b: 2\n}")
    assert [e.key for e in stmt.value.entries] == ["a", "b"]
    (stmt,) = body('fn f() {\n  throw\n    "x"\n}')
    assert stmt.body.body[0].value == Literal("x")


def test_closure_arrow_then_newline() -> None:
    (stmt,) = body("let f = { x ->\n  x + 1\n}")
    assert stmt.value.body.body == (ExprStmt(BinOp("+", Name("x"), Literal(1))),)


# between `}` and `else` / `catch` / `finally`, and between a header and its `{`
def test_else_catch_finally_on_next_line() -> None:
    (stmt,) = body("if a {\n  1\n}\nelse {\n  2\n}")
    assert isinstance(stmt.value, IfExpr) and stmt.value.otherwise is not None
    (stmt,) = body("try {\n}\ncatch e {\n}\nfinally {\n}")
    assert stmt.value == TryExpr(Block(()), "e", None, Block(()), Block(()), has_catch=True)


def test_header_brace_on_next_line() -> None:
    (stmt,) = body("if a\n{\n  b\n}")
    assert stmt == ExprStmt(IfExpr(Name("a"), Block((ExprStmt(Name("b")),))))
    (fn,) = body("fn f()\n{\n  1\n}")
    assert isinstance(fn, FnDecl)


# after `return` / `yield` a newline ends the statement
def test_return_then_newline_returns_nil() -> None:
    (fn,) = body("fn f() {\n  return\n  x\n}")
    assert fn.body.body == (ReturnStmt(None), ExprStmt(Name("x")))


def test_return_before_closing_brace_and_semicolon() -> None:
    (fn,) = body("fn f() { return }")
    assert fn.body.body == (ReturnStmt(None),)
    (fn,) = body("fn f() { return; }")
    assert fn.body.body == (ReturnStmt(None),)


# statements are separated by newlines or a single `;`
def test_semicolons_separate_statements() -> None:
    assert body("x = 1; y = 2;\n\n z = 3") == (
        AssignStmt(Name("x"), Literal(1)),
        AssignStmt(Name("y"), Literal(2)),
        AssignStmt(Name("z"), Literal(3)),
    )


@pytest.mark.parametrize("src", ["a;; b", "a;\n; b", "a\n;b"])
def test_empty_statement_is_an_error(src: str) -> None:
    with pytest.raises(HarnSyntaxError) as info:
        parse(src)
    assert "got ;" in info.value.diagnostics[0].message


def test_two_statements_on_one_line_need_a_separator() -> None:
    with pytest.raises(HarnSyntaxError) as info:
        parse("pipeline p() {\n  let a = 1 let b = 2\n}")
    assert info.value.diagnostics[0].message == (
        "Expected statement separator (`;` or newline), got let at 2:13"
    )
    with pytest.raises(HarnSyntaxError) as info:
        parse("let a = 1 let b = 2")
    assert info.value.diagnostics[0].message.startswith("Expected top-level item separator")


def test_blank_lines_and_comments_between_statements() -> None:
    assert body("\n\n// c\nx\n\n/* d */\n\ny\n\n") == (ExprStmt(Name("x")), ExprStmt(Name("y")))


def test_type_union_continues_only_after_trailing_bar() -> None:
    (decl,) = body("type U = int |\n  string")
    assert decl == TypeDecl("U", TypeUnion((TypeName("int"), TypeName("string"))))
    with pytest.raises(HarnSyntaxError):
        parse("type U = int\n  | string")


def test_leading_minus_inside_parens_is_accepted_superset() -> None:
    # the reference rejects `(a\n - b)`; harnpy accepts this small superset (spec 1.9 hint)
    assert body("let v = (a\n - b)") == (let("v", BinOp("-", Name("a"), Name("b"))),)
