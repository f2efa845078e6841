"""Grammar constructs of spec language.md section 2: AST shapes, precedence and spans."""

from __future__ import annotations

import pytest

from harnpy.syntax import HarnSyntaxError, parse, parse_expression
from harnpy.syntax import ast as A
from harnpy.syntax.ast import (
    AssignStmt,
    Attribute,
    BinOp,
    Block,
    Call,
    ClosureExpr,
    DictEntry,
    DictLit,
    DictPattern,
    DictPatternField,
    ExprStmt,
    FnDecl,
    ForStmt,
    IfExpr,
    Index,
    LetStmt,
    ListLit,
    ListPattern,
    ListPatternElem,
    Literal,
    LogicalOp,
    MatchArm,
    MatchExpr,
    MethodCall,
    Name,
    NamePattern,
    NilCoalesce,
    PairPattern,
    Param,
    Pipe,
    RangeExpr,
    ReturnStmt,
    Slice,
    Spread,
    StructLit,
    Ternary,
    TryExpr,
    TryPropagate,
    TryStar,
    TypeName,
    UnaryOp,
)


def body(src: str) -> tuple:
    return parse(src).body


def one(src: str):
    (stmt,) = parse(src).body
    return stmt


def e(src: str):
    return parse_expression(src)


def lit(v) -> Literal:
    return Literal(v)


n = Name


def block(*stmts) -> Block:
    return Block(tuple(stmts))


# ------------------------------------------------------------------ precedence (2.12)


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("1 + 2 * 3", BinOp("+", lit(1), BinOp("*", lit(2), lit(3)))),
        ("-2 ** 2", BinOp("**", UnaryOp("-", lit(2)), lit(2))),
        ("2 ** 3 ** 2", BinOp("**", lit(2), BinOp("**", lit(3), lit(2)))),
        ("2 ** -1", BinOp("**", lit(2), UnaryOp("-", lit(1)))),
        ("a ?? b + 1", BinOp("+", NilCoalesce(n("a"), n("b")), lit(1))),
        ("a ?? b * 2", NilCoalesce(n("a"), BinOp("*", n("b"), lit(2)))),
        ("a - b - c", BinOp("-", BinOp("-", n("a"), n("b")), n("c"))),
        ("a < b < c", BinOp("<", BinOp("<", n("a"), n("b")), n("c"))),
        ("a == b < c", BinOp("==", n("a"), BinOp("<", n("b"), n("c")))),
        ("a || b && c", LogicalOp("||", n("a"), LogicalOp("&&", n("b"), n("c")))),
        ("!a && b", LogicalOp("&&", UnaryOp("!", n("a")), n("b"))),
        ("x in xs == true", BinOp("==", BinOp("in", n("x"), n("xs")), lit(True))),
        ("x not in xs", BinOp("not_in", n("x"), n("xs"))),
        ("a + 1 in xs", BinOp("in", BinOp("+", n("a"), lit(1)), n("xs"))),
        ("1 to n + 1", RangeExpr(lit(1), BinOp("+", n("n"), lit(1)))),
        ("0 to 10 exclusive", RangeExpr(lit(0), lit(10), inclusive=False)),
        ("c ? a : b", Ternary(n("c"), n("a"), n("b"))),
        ("x > 0 ? 1 : -1", Ternary(BinOp(">", n("x"), lit(0)), lit(1), UnaryOp("-", lit(1)))),
        ("a || b ? 1 : 2", Ternary(LogicalOp("||", n("a"), n("b")), lit(1), lit(2))),
        ("c ? 1 : 2 to 5", RangeExpr(Ternary(n("c"), lit(1), lit(2)), lit(5))),
        ("x |> f |> g", Pipe(Pipe(n("x"), n("f")), n("g"))),
        ("1 to 3 |> f", Pipe(RangeExpr(lit(1), lit(3)), n("f"))),
        ("-x.y", UnaryOp("-", Attribute(n("x"), "y"))),
        ("!f()?", UnaryOp("!", TryPropagate(Call(n("f"), ())))),
        ("try* f() + 1", BinOp("+", TryStar(Call(n("f"), ())), lit(1))),
        ("(a + b) * c", BinOp("*", BinOp("+", n("a"), n("b")), n("c"))),
    ],
)
def test_precedence(src: str, expected) -> None:
    assert e(src) == expected


def test_nested_ternary_requires_parens() -> None:
    with pytest.raises(HarnSyntaxError):
        e("a ? b : c ? d : e")
    assert e("a ? b : (c ? d : e)") == Ternary(n("a"), n("b"), Ternary(n("c"), n("d"), n("e")))


def test_question_mark_ternary_or_postfix() -> None:
    assert e("f(x)?") == TryPropagate(Call(n("f"), (n("x"),)))
    assert e("c ? -1 : 1") == Ternary(n("c"), UnaryOp("-", lit(1)), lit(1))
    assert e('c ? "a" : nil') == Ternary(n("c"), lit("a"), lit(None))
    assert e("xs?[0]") == Index(n("xs"), lit(0), optional=True)
    assert one("let v = parse(x)?") == LetStmt(
        NamePattern("v"), TryPropagate(Call(n("parse"), (n("x"),)))
    )


# ------------------------------------------------------------------ postfix forms


def test_calls_methods_properties_and_indexing() -> None:
    assert e("a.b.c(1, ...xs)") == MethodCall(
        Attribute(n("a"), "b"), "c", (lit(1), Spread(n("xs")))
    )
    assert e("a?.b?.c()") == MethodCall(
        Attribute(n("a"), "b", optional=True), "c", (), optional=True
    )
    assert e("m[k][0]") == Index(Index(n("m"), n("k")), lit(0))
    assert e("f<int, list<string>>(x)") == Call(
        n("f"), (n("x"),), (TypeName("int"), TypeName("list", (TypeName("string"),)))
    )
    assert e("a < b") == BinOp("<", n("a"), n("b"))


@pytest.mark.parametrize(
    ("src", "start", "end"),
    [
        ("s[1:2]", lit(1), lit(2)),
        ("s[:2]", None, lit(2)),
        ("s[1:]", lit(1), None),
        ("s[:]", None, None),
    ],
)
def test_slices(src: str, start, end) -> None:
    assert e(src) == Slice(n("s"), start, end)


@pytest.mark.parametrize("src", ["f(1)(2)", "(g)(1)", "a.b(1)(2)", "[1](0)"])
def test_calls_only_on_names_and_methods(src: str) -> None:
    with pytest.raises(HarnSyntaxError) as info:
        parse(src)
    assert "can be called" in info.value.diagnostics[0].message


# ------------------------------------------------------------------ literals


def test_list_dict_and_spread_literals() -> None:
    assert e("[1, ...xs, 2,]") == ListLit((lit(1), Spread(n("xs")), lit(2)))
    assert e('{a: 1, "b c": 2, [k]: 3, ...o}') == DictLit(
        (
            DictEntry("a", lit(1)),
            DictEntry("b c", lit(2)),
            DictEntry(n("k"), lit(3), computed=True),
            Spread(n("o")),
        )
    )
    assert e("{}") == DictLit(())
    assert e("[]") == ListLit(())


def test_struct_literal_only_for_capitalised_names_with_fields() -> None:
    assert e("Point { x: 1, y: 2 }") == StructLit(
        "Point", (DictEntry("x", lit(1)), DictEntry("y", lit(2)))
    )
    assert e("Point {}") == StructLit("Point", ())
    assert e('Point {\n "x": 1 }') == StructLit("Point", (DictEntry("x", lit(1)),))
    with pytest.raises(HarnSyntaxError):
        e("point { x: 1 }")
    # `if Foo {}` is struct construction (spec 2.5), so the `if` lacks its block
    with pytest.raises(HarnSyntaxError):
        parse("if Foo {}")
    assert isinstance(one("if Foo { log(1) }").value, IfExpr)


def test_closures_and_fn_expressions() -> None:
    assert e("{ x, y -> x + y }") == ClosureExpr(
        (Param("x"), Param("y")), block(ExprStmt(BinOp("+", n("x"), n("y"))))
    )
    assert e("{ -> 42 }") == ClosureExpr((), block(ExprStmt(lit(42))))
    assert e("{ a, b = 1 -> a }") == ClosureExpr(
        (Param("a"), Param("b", default=lit(1))), block(ExprStmt(n("a")))
    )
    assert e("{ ...xs -> xs }") == ClosureExpr((Param("xs", rest=True),), block(ExprStmt(n("xs"))))
    assert e("fn(x: int) { return x }") == ClosureExpr(
        (Param("x", TypeName("int")),), block(ReturnStmt(n("x"))), is_fn_expr=True
    )
    # a `{` with `->` nested deeper is still a dict
    assert e("{f: { x -> x }}") == DictLit(
        (DictEntry("f", ClosureExpr((Param("x"),), block(ExprStmt(n("x"))))),)
    )


def test_bare_brace_statement_is_an_expression() -> None:
    assert body("{ a: 1 }") == (ExprStmt(DictLit((DictEntry("a", lit(1)),))),)
    (stmt,) = body("{ x -> x }")
    assert isinstance(stmt.value, ClosureExpr)


# ------------------------------------------------------------------ bindings (2.3)


def test_let_var_patterns_and_types() -> None:
    assert one("let x: int = 1") == LetStmt(NamePattern("x"), lit(1), TypeName("int"))
    assert one("var y = 2") == LetStmt(NamePattern("y"), lit(2), mutable=True)
    assert one("let {a, b: c, d = 1, ...rest} = m").pattern == DictPattern(
        (
            DictPatternField("a"),
            DictPatternField("b", alias="c"),
            DictPatternField("d", default=lit(1)),
            DictPatternField("rest", rest=True),
        )
    )
    assert one("let [x, y = 2, ...zs] = xs").pattern == ListPattern(
        (ListPatternElem("x"), ListPatternElem("y", lit(2)), ListPatternElem("zs", rest=True))
    )


def test_rest_pattern_must_be_last() -> None:
    with pytest.raises(HarnSyntaxError):
        parse("let [...a, b] = xs")


@pytest.mark.parametrize(
    ("src", "target", "op"),
    [
        ("x = 1", n("x"), None),
        ("a.b = 1", Attribute(n("a"), "b"), None),
        ("a[i] = 1", Index(n("a"), n("i")), None),
        ("x += 1", n("x"), "+"),
        ("x -= 1", n("x"), "-"),
        ("x *= 1", n("x"), "*"),
        ("x /= 1", n("x"), "/"),
        ("x %= 1", n("x"), "%"),
    ],
)
def test_assignments(src: str, target, op) -> None:
    assert one(src) == AssignStmt(target, lit(1), op)


@pytest.mark.parametrize("src", ["f() = 1", "a?.b = 1", "-x = 1", "1 = 2", "a + b = 1"])
def test_invalid_assignment_targets(src: str) -> None:
    with pytest.raises(HarnSyntaxError):
        parse(src)


# ------------------------------------------------------------------ functions (2.4)


def test_fn_declarations() -> None:
    fn = one("pub fn add<T>(a: int, b: int = 2, ...more) -> int where T: Num { return a }")
    assert fn == FnDecl(
        "add",
        (
            Param("a", TypeName("int")),
            Param("b", TypeName("int"), lit(2)),
            Param("more", rest=True),
        ),
        block(ReturnStmt(n("a"))),
        TypeName("int"),
        is_pub=True,
        generics=("T",),
    )
    gen = one("pub gen fn s() { emit 1 }")
    assert gen.is_gen and gen.is_pub and gen.body == block(A.EmitStmt(lit(1)))


@pytest.mark.parametrize(
    ("src", "message"),
    [
        (
            "fn f(x = 10, y) { }",
            "Required parameter cannot follow a parameter with a default value",
        ),
        ("fn f(...xs, y) { }", "Rest parameter must be the last parameter"),
        (
            "let g = { a = 1, b -> a }",
            "Required parameter cannot follow a parameter with a default value",
        ),
    ],
)
def test_parameter_order_errors(src: str, message: str) -> None:
    with pytest.raises(HarnSyntaxError) as info:
        parse(src)
    assert info.value.diagnostics[0].message.startswith(message)


# ------------------------------------------------------------------ control flow (2.5-2.7)


def test_if_else_chain_is_an_expression() -> None:
    stmt = one("let v = if a { 1 } else if b { 2 } else { 3 }")
    assert stmt.value == IfExpr(
        n("a"),
        block(ExprStmt(lit(1))),
        IfExpr(n("b"), block(ExprStmt(lit(2))), block(ExprStmt(lit(3)))),
    )


def test_for_patterns() -> None:
    assert one("for x in xs { }") == ForStmt(NamePattern("x"), n("xs"), block())
    assert one("for (k, v) in m { }").pattern == PairPattern("k", "v")
    assert isinstance(one("for {a, b} in m { }").pattern, DictPattern)
    assert isinstance(one("for [a, b] in m { }").pattern, ListPattern)
    assert one("for i in 0 to 3 { }").iterable == RangeExpr(lit(0), lit(3))


def test_while_guard_require_throw() -> None:
    assert one("while (i < 3) { i += 1 }") == A.WhileStmt(
        BinOp("<", n("i"), lit(3)), block(AssignStmt(n("i"), lit(1), "+"))
    )
    assert one("guard ok else { return }") == A.GuardStmt(n("ok"), block(ReturnStmt()))
    assert one('require x > 0, "positive"') == A.RequireStmt(
        BinOp(">", n("x"), lit(0)), lit("positive")
    )
    assert one("require x") == A.RequireStmt(n("x"))
    assert one('throw "boom"') == A.ThrowStmt(lit("boom"))
    assert body("while true { break; continue }")[0].body == block(A.BreakStmt(), A.ContinueStmt())


def test_match_arms() -> None:
    src = """let r = match x {
  1 | 2 if y > 0 -> { "small" }
  Result.Ok(v) -> { v }
  {kind: "a"} -> { 1 }
  [a, _] -> { a }
  _ -> { nil }
}"""
    m = one(src).value
    assert isinstance(m, MatchExpr) and len(m.arms) == 5
    assert m.arms[0] == MatchArm(
        (lit(1), lit(2)), BinOp(">", n("y"), lit(0)), block(ExprStmt(lit("small")))
    )
    assert m.arms[1].patterns == (MethodCall(n("Result"), "Ok", (n("v"),)),)
    assert m.arms[2].patterns == (DictLit((DictEntry("kind", lit("a")),)),)
    assert m.arms[3].patterns == (ListLit((n("a"), n("_"))),)
    assert m.arms[4] == MatchArm((n("_"),), None, block(ExprStmt(lit(None))))


def test_try_forms() -> None:
    assert e("try { f() }") == TryExpr(block(ExprStmt(Call(n("f"), ()))))
    t = one("try { a } catch (e: MyErr) { b } finally { c }").value
    assert t == TryExpr(
        block(ExprStmt(n("a"))),
        "e",
        TypeName("MyErr"),
        block(ExprStmt(n("b"))),
        block(ExprStmt(n("c"))),
        has_catch=True,
    )
    assert one("try { } catch e { }").value.catch_name == "e"
    assert one("try { } catch (e) { }").value.catch_name == "e"
    anon = one("try { } catch { }").value
    assert anon.has_catch and anon.catch_name is None
    fin = one("try { } finally { }").value
    assert not fin.has_catch and fin.finally_body == block()
    assert e("try* g()") == TryStar(Call(n("g"), ()))


def test_defer_yield_emit_spawn_mutex() -> None:
    fn = one("fn g() {\n  defer { close() }\n  yield 1\n  yield\n  mutex { n += 1 }\n}")
    assert fn.body.body == (
        A.DeferStmt(block(ExprStmt(Call(n("close"), ())))),
        A.YieldStmt(lit(1)),
        A.YieldStmt(None),
        A.MutexStmt(block(AssignStmt(n("n"), lit(1), "+"))),
    )
    assert e("spawn { 1 }") == A.SpawnExpr(block(ExprStmt(lit(1))))


# ------------------------------------------------------------------ concurrency (2.9)


def test_parallel_forms() -> None:
    p = e("parallel each xs with { max_concurrent: 2 } { x -> f(x) } as stream")
    assert p == A.ParallelExpr(
        "each", n("xs"), "x", block(ExprStmt(Call(n("f"), (n("x"),)))), lit(2), as_stream=True
    )
    assert e("parallel 3 { i -> i }") == A.ParallelExpr(
        "count", lit(3), "i", block(ExprStmt(n("i")))
    )
    assert e("parallel (n) { work() }").param is None
    assert e("parallel settle xs { x -> x }").mode == "settle"
    with pytest.raises(HarnSyntaxError):
        parse("parallel each xs with { limit: 2 } { x -> x }")


def test_retry_deadline_select() -> None:
    assert e("retry 3 { f() }") == A.RetryExpr(lit(3), block(ExprStmt(Call(n("f"), ()))))
    assert e("deadline 2s { f() }") == A.DeadlineExpr(
        A.DurationLit(2000), block(ExprStmt(Call(n("f"), ())))
    )
    sel = one("select {\n  msg from ch { log(msg) }\n  timeout 50ms { }\n}")
    assert [c.kind for c in sel.cases] == ["recv", "timeout"]
    assert [c.kind for c in one("select { default { } }").cases] == ["default"]
    assert (sel.cases[0].name, sel.cases[0].value) == ("msg", n("ch"))
    assert sel.cases[1].value == A.DurationLit(50)
    with pytest.raises(HarnSyntaxError, match="at least one case"):
        parse("select { }")
    with pytest.raises(HarnSyntaxError, match="both a timeout and a default"):
        parse("select {\n  timeout 1s { }\n  default { }\n}")


# ------------------------------------------------------------------ declarations (2.10, 2.11)


def test_struct_enum_impl_interface_type() -> None:
    s = one("pub struct Pair<A, B> {\n  first: A\n  second?: B,\n  extra\n}")
    assert s == A.StructDecl(
        "Pair",
        (
            A.StructField("first", TypeName("A")),
            A.StructField("second", TypeName("B"), optional=True),
            A.StructField("extra"),
        ),
        is_pub=True,
        generics=("A", "B"),
    )
    en = one("enum Shape { Point, Circle(r: float)\n Rect(w, h) }")
    assert [v.name for v in en.variants] == ["Point", "Circle", "Rect"]
    assert en.variants[1].params == (Param("r", TypeName("float")),)
    impl = one("impl Box {\n  fn size(self) { 1 }\n  pub fn area(self) -> int { 2 }\n}")
    assert impl.type_name == "Box" and [m.name for m in impl.methods] == ["size", "area"]
    iface = one(
        "interface Coll<in T> {\n  type Item = int\n  fn get(self, i: int) -> Item\n  fn len(self)\n}"
    )
    assert iface == A.InterfaceDecl("Coll", ("get", "len"))
    td = one('type T<X> = {a: int, b?: [X], "c": fn(int) -> bool} | "lit" | -1 | nil')
    assert td == A.TypeDecl(
        "T",
        A.TypeUnion(
            (
                A.TypeShape(
                    (
                        A.ShapeField("a", TypeName("int")),
                        A.ShapeField("b", A.TypeList(TypeName("X")), optional=True),
                        A.ShapeField("c", A.TypeFn((TypeName("int"),), TypeName("bool"))),
                    )
                ),
                A.TypeLiteral("lit"),
                A.TypeLiteral(-1),
                A.TypeLiteral(None, "nil"),
            )
        ),
        ("X",),
    )
    assert one("type N = never").type == A.TypeLiteral(None, "never")


def test_tool_attributes_skill_imports_pipelines() -> None:
    tool = one('pub tool search(q: string) -> string {\n  description "Find"\n  return q\n}')
    assert tool == A.ToolDecl(
        "search",
        (Param("q", TypeName("string")),),
        block(ReturnStmt(n("q"))),
        "Find",
        TypeName("string"),
        is_pub=True,
    )
    att = one('@test\n@meta(k: "v", n: -1, xs: [1, 2], f: helper, flag)\nfn t() { }')
    assert att.attributes == (
        A.Attribute_("test"),
        A.Attribute_(
            "meta", (("k", "v"), ("n", -1), ("xs", (1, 2)), ("f", n("helper")), (None, n("flag")))
        ),
    )
    assert isinstance(att.decl, FnDecl)
    sk = one('skill writer {\n  description "Writes"\n  tools ["a"]\n}')
    assert sk == A.SkillDecl(
        "writer", (("description", lit("Writes")), ("tools", ListLit((lit("a"),))))
    )
    assert body('import "std/math"\npub import { a, b } from "./lib"') == (
        A.ImportDecl("std/math"),
        A.ImportDecl("./lib", ("a", "b"), is_pub=True),
    )
    pl = one("pipeline child(task) extends base {\n  override step(x) { }\n}")
    assert pl == A.PipelineDecl(
        "child", (Param("task"),), block(A.OverrideDecl("step")), extends="base"
    )


def test_const_is_an_immutable_let() -> None:
    assert one("const x = 1") == LetStmt(NamePattern("x"), lit(1), is_const=True)
    assert one("const = 1") == AssignStmt(n("const"), lit(1))


# ------------------------------------------------------------------ spans


def test_spans_of_a_sample_program() -> None:
    src = "pipeline p() {\n  let total = a + f(b)\n}\n"
    mod = parse(src, "x.harn")
    assert mod.path == "x.harn"
    pl = mod.body[0]
    let = pl.body.body[0]
    binop = let.value
    call = binop.right

    def text(node) -> str:
        return src[node.span.start : node.span.end]

    assert text(pl) == src.rstrip("\n")
    assert text(pl.body) == "{\n  let total = a + f(b)\n}"
    assert text(let) == "let total = a + f(b)"
    assert (let.span.line, let.span.col, let.span.end_line, let.span.end_col) == (2, 3, 2, 22)
    assert text(let.pattern) == "total"
    assert text(binop) == "a + f(b)"
    assert (binop.span.line, binop.span.col) == (2, 15)
    assert text(call) == "f(b)" and text(call.func) == "f"
    assert (call.args[0].span.col, call.args[0].span.end_col) == (21, 21)


def test_every_node_has_a_span() -> None:
    src = (
        'fn f(a, b = 2) -> int {\n  let s = "v=${a}"\n  return match a { 1 -> { b } _ -> { 0 } }\n}'
    )
    for node in A.walk(parse(src)):
        assert node.span != A.NO_SPAN, type(node).__name__
        assert node.span.line >= 1 and node.span.col >= 1
        assert node.span.end > node.span.start


def test_parse_expression_rejects_statements_and_trailing_tokens() -> None:
    with pytest.raises(HarnSyntaxError):
        parse_expression("let x = 1")
    with pytest.raises(HarnSyntaxError):
        parse_expression("1 2")
    assert parse_expression("  1 +\n 2  ") == BinOp("+", lit(1), lit(2))


def test_very_long_operator_chains_do_not_recurse() -> None:
    value = one("let v = " + " + ".join(["1"] * 3000)).value
    depth = 0
    while isinstance(value, BinOp):
        value, depth = value.left, depth + 1
    assert depth == 2999


def test_binary_spans_include_parentheses_of_operands() -> None:
    src = "x + (a + b) * c"
    node = e(src)
    inner = node.right
    assert src[node.span.start : node.span.end] == src
    assert src[inner.span.start : inner.span.end] == "(a + b) * c"
    assert src[inner.left.span.start : inner.left.span.end] == "a + b"
