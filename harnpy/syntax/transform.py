"""Lark parse tree to AST (:mod:`harnpy.syntax.ast`): one method per grammar rule.

The transformer only builds nodes with spans; it never evaluates. It does enforce the few
syntax rules the grammar leaves open (parameter order, assignment targets, the
``max_concurrent`` option name) by raising :class:`HarnSyntaxError`.

It walks the tree with an explicit stack rather than Lark's recursive ``Transformer``, so a
long operator chain (``a + b + ...`` with thousands of terms) cannot hit Python's recursion
limit; each rule method still receives ``(meta, children)`` like ``@v_args(meta=True)``.
"""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

from harnpy.syntax import ast
from harnpy.syntax.errors import E_ASSIGN_TARGET, E_PARAMS, E_UNEXPECTED_TOKEN, syntax_error

_ASSIGN_OPS = {
    "EQUAL": None,
    "PLUSEQ": "+",
    "MINUSEQ": "-",
    "STAREQ": "*",
    "SLASHEQ": "/",
    "PERCENTEQ": "%",
}


def token_span(tok: Token) -> ast.Span:
    """Span of one token (``end_col`` is the column of its last character)."""
    return ast.Span(
        tok.line or 0,
        tok.column or 0,
        tok.start_pos or 0,
        tok.end_pos or 0,
        tok.end_line or 0,
        (tok.end_column or 1) - 1,
    )


def meta_span(meta: Any) -> ast.Span:
    """Span of a rule match from Lark's propagated positions (``NO_SPAN`` if empty)."""
    if getattr(meta, "empty", True):
        return ast.NO_SPAN
    return ast.Span(
        meta.line, meta.column, meta.start_pos, meta.end_pos, meta.end_line, meta.end_column - 1
    )


def join_spans(first: ast.Span, last: ast.Span) -> ast.Span:
    """The span from the start of ``first`` to the end of ``last``."""
    return ast.Span(first.line, first.col, first.start, last.end, last.end_line, last.end_col)


_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    ">": 4,
    "<=": 4,
    ">=": 4,
    "in": 4,
    "not_in": 4,
    "+": 5,
    "-": 5,
    "??": 6,
    "*": 7,
    "/": 7,
    "%": 7,
    "**": 8,
}


def _binary_node(op: str, left: Any, right: Any, span: ast.Span) -> Any:
    if op in ("||", "&&"):
        return ast.LogicalOp(op, left, right, span=span)
    if op == "??":
        return ast.NilCoalesce(left, right, span=span)
    return ast.BinOp(op, left, right, span=span)


def _tok(items: list[Any], typ: str) -> Token | None:
    for item in items:
        if isinstance(item, Token) and item.type == typ:
            return item
    return None


def _nodes(items: list[Any]) -> list[Any]:
    """Children that are AST nodes (drops tokens and None placeholders)."""
    return [c for c in items if isinstance(c, ast.Node)]


class AstBuilder:
    """Builds :class:`ast.Module` (start rule ``module``) or one expression (``expr_only``).

    ``source`` and ``path`` are used for error diagnostics only.

    Every public method but :meth:`transform` is a rule callback: the method named after
    a rule (or ``-> alias``) of ``grammar/harn.lark`` is called as ``rule(meta, children)``
    with Lark's propagated positions and the already transformed children (AST nodes,
    tokens, and None for an absent optional item) and returns the AST node for that rule
    (its span from ``meta``), or, for helper rules (``params``, ``generics``,
    ``catch_head``, ``par_body``...), a tuple or value the parent rule unpacks. A callback
    raises :class:`HarnSyntaxError` when one of the rule checks in the module docstring
    fails.
    """

    def __init__(self, source: str, path: str) -> None:
        self.source = source
        self.path = path
        # id(node) -> (node, span including the parentheses it was written in)
        self._parens: dict[int, tuple[Any, ast.Span]] = {}

    def transform(self, tree: Tree) -> Any:
        """The AST for ``tree``: children first, then ``self.<rule>(meta, children)``.

        Raises:
            HarnSyntaxError: a rule check failed (see the module docstring).
        """
        values: list[Any] = []
        todo: list[tuple[Any, bool]] = [(tree, False)]
        while todo:
            node, ready = todo.pop()
            if not isinstance(node, Tree):
                values.append(node)
            elif ready:
                count = len(node.children)
                children = values[len(values) - count :]
                del values[len(values) - count :]
                values.append(getattr(self, node.data)(node.meta, children))
            else:
                todo.append((node, True))
                todo.extend((child, False) for child in reversed(node.children))
        return values[0]

    # -- helpers

    def _error(self, code: str, message: str, span: ast.Span) -> Exception:
        return syntax_error(
            code,
            f"{message} at {span.line}:{span.col}",
            path=self.path,
            source=self.source,
            line=span.line,
            col=span.col,
        )

    def _block(self, meta: Any, stmts: list[Any]) -> ast.Block:
        body = tuple(_nodes(stmts))
        span = join_spans(body[0].span, body[-1].span) if body else meta_span(meta)
        return ast.Block(body, span=span)

    # -- program

    def module(self, meta: Any, ch: list[Any]) -> ast.Module:
        src = self.source
        last_nl = src.rfind("\n")
        span = ast.Span(1, 1, 0, len(src), src.count("\n") + 1, len(src) - last_nl - 1)
        return ast.Module(tuple(_nodes(ch)), path=self.path, span=span)

    def expr_only(self, meta: Any, ch: list[Any]) -> Any:
        return ch[0]

    def import_decl(self, meta: Any, ch: list[Any]) -> ast.ImportDecl:
        pub, path = ch
        return ast.ImportDecl(path.value, None, is_pub=pub is not None, span=meta_span(meta))

    def import_names(self, meta: Any, ch: list[Any]) -> ast.ImportDecl:
        names = tuple(c.value for c in ch[1:-1])
        return ast.ImportDecl(ch[-1].value, names, is_pub=ch[0] is not None, span=meta_span(meta))

    def pipeline_decl(self, meta: Any, ch: list[Any]) -> ast.PipelineDecl:
        pub, name, params, _ret, parent, body = ch
        return ast.PipelineDecl(
            name.value,
            params or (),
            body,
            extends=parent.value if parent is not None else None,
            is_pub=pub is not None,
            span=meta_span(meta),
        )

    def block(self, meta: Any, ch: list[Any]) -> ast.Block:
        return ast.Block(tuple(_nodes(ch)), span=meta_span(meta))

    # -- bindings

    def let_stmt(self, meta: Any, ch: list[Any]) -> ast.LetStmt:
        pat, typ, value = ch
        return ast.LetStmt(pat, value, typ, mutable=False, span=meta_span(meta))

    def const_stmt(self, meta: Any, ch: list[Any]) -> ast.LetStmt:
        _const, pat, typ, value = ch
        return ast.LetStmt(pat, value, typ, mutable=False, is_const=True, span=meta_span(meta))

    def var_stmt(self, meta: Any, ch: list[Any]) -> ast.LetStmt:
        pat, typ, value = ch
        return ast.LetStmt(pat, value, typ, mutable=True, span=meta_span(meta))

    def assign_stmt(self, meta: Any, ch: list[Any]) -> ast.AssignStmt:
        target, op, value = ch
        ok = isinstance(target, ast.Name) or (
            isinstance(target, (ast.Attribute, ast.Index)) and not target.optional
        )
        if not ok:
            raise self._error(E_ASSIGN_TARGET, "invalid assignment target", target.span)
        return ast.AssignStmt(target, value, _ASSIGN_OPS[op.type], span=meta_span(meta))

    def expr_stmt(self, meta: Any, ch: list[Any]) -> ast.ExprStmt:
        return ast.ExprStmt(ch[0], span=meta_span(meta))

    def name_pat(self, meta: Any, ch: list[Any]) -> ast.NamePattern:
        return ast.NamePattern(ch[0].value, span=meta_span(meta))

    def dict_pat(self, meta: Any, ch: list[Any]) -> ast.DictPattern:
        fields = tuple(_nodes(ch))
        self._check_rest_last(fields)
        return ast.DictPattern(fields, span=meta_span(meta))

    def dict_pat_rest(self, meta: Any, ch: list[Any]) -> ast.DictPatternField:
        return ast.DictPatternField(ch[0].value, rest=True, span=meta_span(meta))

    def dict_pat_field(self, meta: Any, ch: list[Any]) -> ast.DictPatternField:
        key, alias, default = ch
        return ast.DictPatternField(
            str(key.value),
            alias.value if alias is not None else None,
            default,
            span=meta_span(meta),
        )

    def list_pat(self, meta: Any, ch: list[Any]) -> ast.ListPattern:
        elems = tuple(_nodes(ch))
        self._check_rest_last(elems)
        return ast.ListPattern(elems, span=meta_span(meta))

    def list_pat_rest(self, meta: Any, ch: list[Any]) -> ast.ListPatternElem:
        return ast.ListPatternElem(ch[0].value, rest=True, span=meta_span(meta))

    def list_pat_elem(self, meta: Any, ch: list[Any]) -> ast.ListPatternElem:
        return ast.ListPatternElem(ch[0].value, ch[1], span=meta_span(meta))

    def _check_rest_last(self, items: tuple[Any, ...]) -> None:
        for item in items[:-1]:
            if item.rest:
                raise self._error(E_PARAMS, "rest pattern must be the last element", item.span)

    # -- functions

    def fn_decl(self, meta: Any, ch: list[Any]) -> ast.FnDecl:
        pub, gen, name, generics, params, ret, _where, body = ch
        return ast.FnDecl(
            name.value,
            params or (),
            body,
            ret,
            is_pub=pub is not None,
            is_gen=gen is not None,
            generics=generics or (),
            span=meta_span(meta),
        )

    def generics(self, meta: Any, ch: list[Any]) -> tuple[str, ...]:
        return tuple(ch)

    def generic_param(self, meta: Any, ch: list[Any]) -> str:
        return str(ch[-1].value)

    def where_clause(self, meta: Any, ch: list[Any]) -> tuple[tuple[str, str], ...]:
        names = [c.value for c in ch if c.type == "NAME"]
        return tuple(zip(names[0::2], names[1::2]))

    def params(self, meta: Any, ch: list[Any]) -> tuple[ast.Param, ...]:
        params = tuple(ch)
        seen_default = False
        for i, p in enumerate(params):
            if p.rest:
                if i != len(params) - 1:
                    raise self._error(E_PARAMS, "Rest parameter must be the last parameter", p.span)
            elif p.default is not None:
                seen_default = True
            elif seen_default:
                raise self._error(
                    E_PARAMS,
                    "Required parameter cannot follow a parameter with a default value",
                    p.span,
                )
        return params

    def ret_type(self, meta: Any, ch: list[Any]) -> Any:
        return ch[0] if ch else None

    type_ann = ret_type
    default_value = ret_type

    def param(self, meta: Any, ch: list[Any]) -> ast.Param:
        rest, name, typ, default = ch
        return ast.Param(name.value, typ, default, rest=rest is not None, span=meta_span(meta))

    def closure(self, meta: Any, ch: list[Any]) -> ast.ClosureExpr:
        span = meta_span(meta)
        return ast.ClosureExpr(ch[0] or (), self._block(meta, ch[1:]), span=span)

    def fn_expr(self, meta: Any, ch: list[Any]) -> ast.ClosureExpr:
        params, body = ch
        return ast.ClosureExpr(params or (), body, is_fn_expr=True, span=meta_span(meta))

    def override_decl(self, meta: Any, ch: list[Any]) -> ast.OverrideDecl:
        return ast.OverrideDecl(ch[0].value, span=meta_span(meta))

    # -- statements

    def for_stmt(self, meta: Any, ch: list[Any]) -> ast.ForStmt:
        pat, iterable, body = ch
        return ast.ForStmt(pat, iterable, body, span=meta_span(meta))

    def pair_pat(self, meta: Any, ch: list[Any]) -> ast.PairPattern:
        return ast.PairPattern(ch[0].value, ch[1].value, span=meta_span(meta))

    def while_stmt(self, meta: Any, ch: list[Any]) -> ast.WhileStmt:
        return ast.WhileStmt(ch[0], ch[1], span=meta_span(meta))

    def guard_stmt(self, meta: Any, ch: list[Any]) -> ast.GuardStmt:
        return ast.GuardStmt(ch[0], ch[1], span=meta_span(meta))

    def require_stmt(self, meta: Any, ch: list[Any]) -> ast.RequireStmt:
        return ast.RequireStmt(ch[0], ch[1], span=meta_span(meta))

    def throw_stmt(self, meta: Any, ch: list[Any]) -> ast.ThrowStmt:
        return ast.ThrowStmt(ch[0], span=meta_span(meta))

    def return_stmt(self, meta: Any, ch: list[Any]) -> ast.ReturnStmt:
        return ast.ReturnStmt(ch[0], span=meta_span(meta))

    def break_stmt(self, meta: Any, ch: list[Any]) -> ast.BreakStmt:
        return ast.BreakStmt(span=meta_span(meta))

    def continue_stmt(self, meta: Any, ch: list[Any]) -> ast.ContinueStmt:
        return ast.ContinueStmt(span=meta_span(meta))

    def defer_stmt(self, meta: Any, ch: list[Any]) -> ast.DeferStmt:
        return ast.DeferStmt(ch[0], span=meta_span(meta))

    def yield_stmt(self, meta: Any, ch: list[Any]) -> ast.YieldStmt:
        return ast.YieldStmt(ch[0], span=meta_span(meta))

    def emit_stmt(self, meta: Any, ch: list[Any]) -> ast.EmitStmt:
        return ast.EmitStmt(ch[0], span=meta_span(meta))

    def mutex_stmt(self, meta: Any, ch: list[Any]) -> ast.MutexStmt:
        return ast.MutexStmt(ch[0], span=meta_span(meta))

    def select_stmt(self, meta: Any, ch: list[Any]) -> ast.SelectStmt:
        span = meta_span(meta)
        kinds = [case.kind for case in ch]
        if not kinds:
            raise self._error(E_UNEXPECTED_TOKEN, "select needs at least one case", span)
        if "timeout" in kinds and "default" in kinds:
            raise self._error(
                E_UNEXPECTED_TOKEN, "select cannot have both a timeout and a default case", span
            )
        return ast.SelectStmt(tuple(ch), span=span)

    def select_recv(self, meta: Any, ch: list[Any]) -> ast.SelectCase:
        name, value, body = ch
        return ast.SelectCase("recv", body, name.value, value, span=meta_span(meta))

    def select_timeout(self, meta: Any, ch: list[Any]) -> ast.SelectCase:
        return ast.SelectCase("timeout", ch[2], None, ch[1], span=meta_span(meta))

    def select_default(self, meta: Any, ch: list[Any]) -> ast.SelectCase:
        return ast.SelectCase("default", ch[1], span=meta_span(meta))

    # -- declarations

    def tool_decl(self, meta: Any, ch: list[Any]) -> ast.ToolDecl:
        pub, name, params, ret, (description, body) = ch
        return ast.ToolDecl(
            name.value,
            params or (),
            body,
            description,
            ret,
            is_pub=pub is not None,
            span=meta_span(meta),
        )

    def tool_body(self, meta: Any, ch: list[Any]) -> tuple[str, ast.Block]:
        description = ""
        if ch and isinstance(ch[0], Token) and ch[0].type == "DESCRIPTION":
            description = ch[1].value
            ch = ch[2:]
        return description, self._block(meta, ch)

    def struct_decl(self, meta: Any, ch: list[Any]) -> ast.StructDecl:
        pub, name, generics, *fields = ch
        return ast.StructDecl(
            name.value,
            tuple(fields),
            is_pub=pub is not None,
            generics=generics or (),
            span=meta_span(meta),
        )

    def struct_field(self, meta: Any, ch: list[Any]) -> ast.StructField:
        name, opt, typ = ch
        return ast.StructField(name.value, typ, optional=opt is not None, span=meta_span(meta))

    def enum_decl(self, meta: Any, ch: list[Any]) -> ast.EnumDecl:
        pub, name, generics, *variants = ch
        return ast.EnumDecl(
            name.value,
            tuple(variants),
            is_pub=pub is not None,
            generics=generics or (),
            span=meta_span(meta),
        )

    def enum_variant(self, meta: Any, ch: list[Any]) -> ast.EnumVariant:
        params = ch[1] if len(ch) > 1 and ch[1] is not None else ()
        return ast.EnumVariant(ch[0].value, params, span=meta_span(meta))

    def interface_decl(self, meta: Any, ch: list[Any]) -> ast.InterfaceDecl:
        name, _generics, *items = ch
        methods = tuple(n for kind, n in items if kind == "fn")
        return ast.InterfaceDecl(name.value, methods, span=meta_span(meta))

    def iface_type(self, meta: Any, ch: list[Any]) -> tuple[str, str]:
        return ("type", str(ch[0].value))

    def iface_fn(self, meta: Any, ch: list[Any]) -> tuple[str, str]:
        return ("fn", str(ch[0].value))

    def impl_decl(self, meta: Any, ch: list[Any]) -> ast.ImplDecl:
        return ast.ImplDecl(ch[0].value, tuple(ch[1:]), span=meta_span(meta))

    def type_decl(self, meta: Any, ch: list[Any]) -> ast.TypeDecl:
        name, generics, typ = ch
        return ast.TypeDecl(name.value, typ, generics or (), span=meta_span(meta))

    def skill_decl(self, meta: Any, ch: list[Any]) -> ast.SkillDecl:
        pub, name, *fields = ch
        return ast.SkillDecl(
            name.value, tuple(fields), is_pub=pub is not None, span=meta_span(meta)
        )

    def skill_field(self, meta: Any, ch: list[Any]) -> tuple[str, Any]:
        return (str(ch[0].value), ch[1])

    def attributed(self, meta: Any, ch: list[Any]) -> ast.AttributedDecl:
        return ast.AttributedDecl(tuple(ch[:-1]), ch[-1], span=meta_span(meta))

    def attribute(self, meta: Any, ch: list[Any]) -> ast.Attribute_:
        args = tuple(c for c in ch[1:] if c is not None)
        return ast.Attribute_(ch[0].value, args, span=meta_span(meta))

    def attr_arg(self, meta: Any, ch: list[Any]) -> tuple[str | None, Any]:
        key, value = ch
        return (key.value if key is not None else None, value)

    def attr_lit(self, meta: Any, ch: list[Any]) -> Any:
        if len(ch) == 2:  # "-" INT | "-" FLOAT
            return -ch[1].value
        tok = ch[0]
        return {"TRUE": True, "FALSE": False, "NIL": None}.get(tok.type, tok.value)

    def attr_name(self, meta: Any, ch: list[Any]) -> ast.Name:
        return ast.Name(ch[0].value, span=meta_span(meta))

    def attr_list(self, meta: Any, ch: list[Any]) -> tuple[Any, ...]:
        return tuple(ch)

    # -- types

    def type_union(self, meta: Any, ch: list[Any]) -> ast.TypeUnion:
        return ast.TypeUnion(tuple(ch), span=meta_span(meta))

    def type_name(self, meta: Any, ch: list[Any]) -> ast.TypeExpr:
        name = ch[0].value
        if name == "never" and len(ch) == 1:
            return ast.TypeLiteral(None, "never", span=meta_span(meta))
        return ast.TypeName(name, tuple(ch[1:]), span=meta_span(meta))

    def type_list(self, meta: Any, ch: list[Any]) -> ast.TypeList:
        return ast.TypeList(ch[0], span=meta_span(meta))

    def type_shape(self, meta: Any, ch: list[Any]) -> ast.TypeShape:
        return ast.TypeShape(tuple(ch), span=meta_span(meta))

    def shape_field(self, meta: Any, ch: list[Any]) -> ast.ShapeField:
        key, opt, typ = ch
        return ast.ShapeField(str(key.value), typ, optional=opt is not None, span=meta_span(meta))

    def type_fn(self, meta: Any, ch: list[Any]) -> ast.TypeFn:
        return ast.TypeFn(tuple(ch[:-1]), ch[-1], span=meta_span(meta))

    def type_lit(self, meta: Any, ch: list[Any]) -> ast.TypeLiteral:
        span = meta_span(meta)
        if len(ch) == 2:  # "-" INT
            return ast.TypeLiteral(-ch[1].value, span=span)
        tok = ch[0]
        if tok.type in ("NIL", "TRUE", "FALSE"):
            value = {"NIL": None, "TRUE": True, "FALSE": False}[tok.type]
            return ast.TypeLiteral(value, tok.type.lower(), span=span)
        return ast.TypeLiteral(tok.value, span=span)

    # -- operators

    def pipe(self, meta: Any, ch: list[Any]) -> ast.Pipe:
        return ast.Pipe(ch[0], ch[1], span=meta_span(meta))

    def range(self, meta: Any, ch: list[Any]) -> ast.RangeExpr:
        start, end, exclusive = ch
        return ast.RangeExpr(start, end, inclusive=exclusive is None, span=meta_span(meta))

    def ternary(self, meta: Any, ch: list[Any]) -> ast.Ternary:
        return ast.Ternary(ch[0], ch[1], ch[2], span=meta_span(meta))

    def binary(self, meta: Any, ch: list[Any]) -> Any:
        """Fold ``operand (op operand)*`` by the precedence table of spec 2.12 (levels 4-11);
        iterative shunting-yard, so long chains need no recursion."""
        operands = [ch[0]]
        ops: list[str] = []
        i = 1
        while i < len(ch):
            op = str(ch[i].value)
            if ch[i].type == "NOT":  # `not` `in`
                op, i = "not_in", i + 1
            i += 1
            prec = _PRECEDENCE[op]
            while ops and (
                _PRECEDENCE[ops[-1]] > prec or (_PRECEDENCE[ops[-1]] == prec and op != "**")
            ):
                self._fold(operands, ops)
            ops.append(op)
            operands.append(ch[i])
            i += 1
        while len(ops) > 1:
            self._fold(operands, ops)
        right, left = operands.pop(), operands.pop()
        return _binary_node(ops.pop(), left, right, meta_span(meta))

    def _fold(self, operands: list[Any], ops: list[str]) -> None:
        right, left = operands.pop(), operands.pop()
        span = join_spans(self._extent(left), self._extent(right))
        operands.append(_binary_node(ops.pop(), left, right, span))

    def _extent(self, node: Any) -> ast.Span:
        """The node's span, widened to its parentheses if it was written in some."""
        entry = self._parens.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else node.span

    def paren(self, meta: Any, ch: list[Any]) -> Any:
        self._parens[id(ch[0])] = (ch[0], meta_span(meta))
        return ch[0]

    def unary_op(self, meta: Any, ch: list[Any]) -> ast.UnaryOp:
        return ast.UnaryOp(ch[0].value, ch[1], span=meta_span(meta))

    def try_star(self, meta: Any, ch: list[Any]) -> ast.TryStar:
        return ast.TryStar(ch[0], span=meta_span(meta))

    # -- postfix

    def attr(self, meta: Any, ch: list[Any]) -> ast.Attribute:
        optional = _tok(ch, "QDOT") is not None
        return ast.Attribute(ch[0], ch[-1].value, optional=optional, span=meta_span(meta))

    def method_call(self, meta: Any, ch: list[Any]) -> ast.MethodCall:
        optional = isinstance(ch[1], Token) and ch[1].type == "QDOT"
        rest = ch[2:] if optional else ch[1:]
        name, args = rest[0], tuple(rest[1:])
        return ast.MethodCall(ch[0], name.value, args, optional=optional, span=meta_span(meta))

    def index(self, meta: Any, ch: list[Any]) -> ast.Index:
        optional = _tok(ch, "QLSQB") is not None
        return ast.Index(ch[0], ch[-1], optional=optional, span=meta_span(meta))

    def slice(self, meta: Any, ch: list[Any]) -> ast.Slice:
        return ast.Slice(ch[0], ch[1], ch[2], span=meta_span(meta))

    def try_prop(self, meta: Any, ch: list[Any]) -> ast.TryPropagate:
        return ast.TryPropagate(ch[0], span=meta_span(meta))

    # -- primaries

    def literal(self, meta: Any, ch: list[Any]) -> ast.Node:
        tok = ch[0]
        span = token_span(tok)
        typ = tok.type
        if typ == "DURATION":
            return ast.DurationLit(tok.value, span=span)
        if typ == "ISTRING":
            return ast.InterpString(tuple(tok.value), span=span)
        if typ == "TRUE":
            return ast.Literal(True, span=span)
        if typ == "FALSE":
            return ast.Literal(False, span=span)
        if typ == "NIL":
            return ast.Literal(None, span=span)
        return ast.Literal(tok.value, span=span)

    def name(self, meta: Any, ch: list[Any]) -> ast.Name:
        return ast.Name(ch[0].value, span=token_span(ch[0]))

    def call(self, meta: Any, ch: list[Any]) -> ast.Call:
        name, type_args, *args = ch
        func = ast.Name(name.value, span=token_span(name))
        return ast.Call(func, tuple(args), type_args or (), span=meta_span(meta))

    def type_args(self, meta: Any, ch: list[Any]) -> tuple[Any, ...]:
        return tuple(ch)

    def spread(self, meta: Any, ch: list[Any]) -> ast.Spread:
        return ast.Spread(ch[0], span=meta_span(meta))

    def list_lit(self, meta: Any, ch: list[Any]) -> ast.ListLit:
        return ast.ListLit(tuple(ch), span=meta_span(meta))

    def dict_lit(self, meta: Any, ch: list[Any]) -> ast.DictLit:
        return ast.DictLit(tuple(ch), span=meta_span(meta))

    def dict_entry(self, meta: Any, ch: list[Any]) -> ast.DictEntry:
        return ast.DictEntry(str(ch[0].value), ch[1], span=meta_span(meta))

    def computed_entry(self, meta: Any, ch: list[Any]) -> ast.DictEntry:
        return ast.DictEntry(ch[0], ch[1], computed=True, span=meta_span(meta))

    def struct_lit(self, meta: Any, ch: list[Any]) -> ast.StructLit:
        return ast.StructLit(ch[0].value, tuple(ch[1:]), span=meta_span(meta))

    def if_expr(self, meta: Any, ch: list[Any]) -> ast.IfExpr:
        otherwise = ch[2] if len(ch) > 2 else None
        return ast.IfExpr(ch[0], ch[1], otherwise, span=meta_span(meta))

    def match_expr(self, meta: Any, ch: list[Any]) -> ast.MatchExpr:
        return ast.MatchExpr(ch[0], tuple(ch[1:]), span=meta_span(meta))

    def match_arm(self, meta: Any, ch: list[Any]) -> ast.MatchArm:
        *patterns, guard, body = ch
        return ast.MatchArm(tuple(patterns), guard, body, span=meta_span(meta))

    def try_expr(self, meta: Any, ch: list[Any]) -> ast.TryExpr:
        body, catch, fin = ch
        span = meta_span(meta)
        if catch is None:
            return ast.TryExpr(body, finally_body=fin, span=span)
        head, catch_body = catch
        name, typ = head if head is not None else (None, None)
        return ast.TryExpr(body, name, typ, catch_body, fin, has_catch=True, span=span)

    def catch_clause(self, meta: Any, ch: list[Any]) -> tuple[Any, ast.Block]:
        return (ch[0], ch[1])

    def catch_head(self, meta: Any, ch: list[Any]) -> tuple[str, Any]:
        return (str(ch[0].value), ch[1] if len(ch) > 1 else None)

    def finally_clause(self, meta: Any, ch: list[Any]) -> ast.Block:
        return ch[0]

    def spawn_expr(self, meta: Any, ch: list[Any]) -> ast.SpawnExpr:
        return ast.SpawnExpr(ch[0], span=meta_span(meta))

    def retry_expr(self, meta: Any, ch: list[Any]) -> ast.RetryExpr:
        return ast.RetryExpr(ch[0], ch[1], span=meta_span(meta))

    def deadline_expr(self, meta: Any, ch: list[Any]) -> ast.DeadlineExpr:
        return ast.DeadlineExpr(ch[0], ch[1], span=meta_span(meta))

    def _parallel(self, meta: Any, mode: str, ch: list[Any], as_stream: bool) -> ast.ParallelExpr:
        value, opts, (param, body) = ch
        return ast.ParallelExpr(
            mode, value, param, body, opts, as_stream=as_stream, span=meta_span(meta)
        )

    def parallel_count(self, meta: Any, ch: list[Any]) -> ast.ParallelExpr:
        return self._parallel(meta, "count", ch, False)

    def parallel_each(self, meta: Any, ch: list[Any]) -> ast.ParallelExpr:
        _each, value, opts, body, as_tok, _stream = ch
        return self._parallel(meta, "each", [value, opts, body], as_tok is not None)

    def parallel_settle(self, meta: Any, ch: list[Any]) -> ast.ParallelExpr:
        return self._parallel(meta, "settle", ch[1:], False)

    def par_opts(self, meta: Any, ch: list[Any]) -> Any:
        _with, name, value = ch
        if name.value != "max_concurrent":
            raise self._error(
                E_UNEXPECTED_TOKEN,
                f"unknown parallel option '{name.value}' (only max_concurrent is accepted)",
                token_span(name),
            )
        return value

    def par_body(self, meta: Any, ch: list[Any]) -> tuple[str | None, ast.Block]:
        if ch and isinstance(ch[0], Token):
            return str(ch[0].value), self._block(meta, ch[1:])
        return None, self._block(meta, ch)
