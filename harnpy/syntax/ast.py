"""AST node classes for Harn programs.

Every node is a frozen, slotted dataclass with a ``span`` (source position). Node names
mirror the grammar rules of ``grammar/harn.lark`` and spec language.md section 2. Nodes that
own code (functions, closures, pipelines, the module itself) are identified in snapshots by
their ``span.start`` offset together with the module path and source hash (see
:func:`node_id`), which is stable for a given source text.

Statements and expressions share one node hierarchy: ``if``, ``match``, ``try`` and friends
are expressions that may also stand as statements.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, Union


@dataclass(frozen=True, slots=True)
class Span:
    """Source span: 1-based ``line``/``col`` of the first character, 0-based ``start``/``end``
    character offsets (end exclusive), and ``end_line``/``end_col`` of the last character."""

    line: int = 0
    col: int = 0
    start: int = 0
    end: int = 0
    end_line: int = 0
    end_col: int = 0


NO_SPAN = Span()


@dataclass(frozen=True, slots=True)
class Node:
    """Base of all nodes."""

    span: Span = field(default=NO_SPAN, kw_only=True, compare=False, repr=False)


# ----------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class TypeName(Node):
    """``int``, ``list<int>``, ``Result<T, E>``, ``Foo``."""

    name: str
    args: tuple[TypeExpr, ...] = ()


@dataclass(frozen=True, slots=True)
class TypeList(Node):
    """``[T]`` list shorthand."""

    elem: TypeExpr


@dataclass(frozen=True, slots=True)
class ShapeField(Node):
    """``name?: T`` inside a shape type."""

    name: str
    type: TypeExpr
    optional: bool = False


@dataclass(frozen=True, slots=True)
class TypeShape(Node):
    """``{a: int, b?: string}``."""

    fields: tuple[ShapeField, ...]


@dataclass(frozen=True, slots=True)
class TypeFn(Node):
    """``fn(int, string) -> bool``."""

    params: tuple[TypeExpr, ...]
    ret: TypeExpr


@dataclass(frozen=True, slots=True)
class TypeLiteral(Node):
    """A literal type: ``"ok"``, ``3``, ``-1``, ``nil``, ``true``, ``false``, ``never``."""

    value: Any
    keyword: str = ""  # "nil" | "true" | "false" | "never" | "" (for string/int literals)


@dataclass(frozen=True, slots=True)
class TypeUnion(Node):
    """``A | B | C``."""

    options: tuple[TypeExpr, ...]


TypeExpr = Union[TypeName, TypeList, TypeShape, TypeFn, TypeLiteral, TypeUnion]


# ------------------------------------------------------------ expressions


@dataclass(frozen=True, slots=True)
class Literal(Node):
    """``42``, ``3.5``, ``"text"`` (no interpolation), ``r"raw"``, ``true``, ``false``, ``nil``."""

    value: Any


@dataclass(frozen=True, slots=True)
class DurationLit(Node):
    """``5s``: ``ms`` is the value in milliseconds."""

    ms: int


@dataclass(frozen=True, slots=True)
class InterpString(Node):
    """``"a ${x} b"``: ``parts`` alternates literal ``str`` pieces and expression nodes."""

    parts: tuple[str | Expr, ...]


@dataclass(frozen=True, slots=True)
class Name(Node):
    """An identifier reference. ``_`` is the discard / pipe placeholder."""

    id: str


@dataclass(frozen=True, slots=True)
class Spread(Node):
    """``...expr`` inside a list literal, dict literal or call arguments."""

    value: Expr


@dataclass(frozen=True, slots=True)
class ListLit(Node):
    """``[a, ...b, c]``."""

    items: tuple[Expr, ...]  # elements may be Spread


@dataclass(frozen=True, slots=True)
class DictEntry(Node):
    """``key: value``. ``key`` is a str for bare/quoted keys, an expression for ``[expr]``."""

    key: str | Expr
    value: Expr
    computed: bool = False


@dataclass(frozen=True, slots=True)
class DictLit(Node):
    """``{a: 1, "b": 2, [k]: 3, ...other}``."""

    entries: tuple[DictEntry | Spread, ...]


@dataclass(frozen=True, slots=True)
class Param(Node):
    """A parameter: ``name``, ``name: T``, ``name = default``, ``...rest``."""

    name: str
    type: TypeExpr | None = None
    default: Expr | None = None
    rest: bool = False


@dataclass(frozen=True, slots=True)
class Block(Node):
    """``{ stmt; stmt }``: a list of statements opening a scope."""

    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class ClosureExpr(Node):
    """``{ a, b -> body }`` or ``fn(a, b) { body }`` (``is_fn_expr``). Both return the value
    of their last statement implicitly."""

    params: tuple[Param, ...]
    body: Block
    is_fn_expr: bool = False


@dataclass(frozen=True, slots=True)
class BinOp(Node):
    """Binary operator. ``op`` is one of ``+ - * / % ** == != < > <= >= in not_in``."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class LogicalOp(Node):
    """``a && b`` / ``a || b`` (``op`` is ``"&&"`` or ``"||"``); always yields a bool."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class NilCoalesce(Node):
    """``a ?? b``."""

    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class UnaryOp(Node):
    """``-x`` or ``!x`` (``op`` is ``"-"`` or ``"!"``)."""

    op: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class Pipe(Node):
    """``left |> right``."""

    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Ternary(Node):
    """``cond ? a : b``."""

    cond: Expr
    then: Expr
    otherwise: Expr


@dataclass(frozen=True, slots=True)
class RangeExpr(Node):
    """``a to b`` (inclusive) or ``a to b exclusive``."""

    start: Expr
    end: Expr
    inclusive: bool = True


@dataclass(frozen=True, slots=True)
class Call(Node):
    """``name(args)``: a call on a bare name (``func`` is always a :class:`Name`)."""

    func: Name
    args: tuple[Expr, ...]  # elements may be Spread
    type_args: tuple[TypeExpr, ...] = ()


@dataclass(frozen=True, slots=True)
class MethodCall(Node):
    """``obj.name(args)`` or ``obj?.name(args)`` (``optional``)."""

    obj: Expr
    name: str
    args: tuple[Expr, ...]
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Attribute(Node):
    """``obj.name`` or ``obj?.name`` (``optional``)."""

    obj: Expr
    name: str
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Index(Node):
    """``obj[index]`` or ``obj?[index]`` (``optional``)."""

    obj: Expr
    index: Expr
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Slice(Node):
    """``obj[start:end]``; either bound may be None."""

    obj: Expr
    start: Expr | None
    end: Expr | None


@dataclass(frozen=True, slots=True)
class TryPropagate(Node):
    """Postfix ``expr?`` (Result propagation)."""

    value: Expr


@dataclass(frozen=True, slots=True)
class TryStar(Node):
    """``try* expr``."""

    value: Expr


@dataclass(frozen=True, slots=True)
class StructLit(Node):
    """``Name { field: expr, ... }``."""

    name: str
    fields: tuple[DictEntry, ...]


@dataclass(frozen=True, slots=True)
class IfExpr(Node):
    """``if cond { } else if ... else { }``; ``otherwise`` is a Block, an IfExpr or None."""

    cond: Expr
    then: Block
    otherwise: Block | IfExpr | None = None


@dataclass(frozen=True, slots=True)
class MatchArm(Node):
    """``p1 | p2 if guard -> { body }``; patterns are expressions read structurally."""

    patterns: tuple[Expr, ...]
    guard: Expr | None
    body: Block


@dataclass(frozen=True, slots=True)
class MatchExpr(Node):
    """``match value { arms }``."""

    value: Expr
    arms: tuple[MatchArm, ...]


@dataclass(frozen=True, slots=True)
class TryExpr(Node):
    """``try { } catch (e: T) { } finally { }``. With neither catch nor finally it is a
    try-expression producing a Result (``has_catch`` false and ``finally_body`` None)."""

    body: Block
    catch_name: str | None = None
    catch_type: TypeExpr | None = None
    catch_body: Block | None = None
    finally_body: Block | None = None
    has_catch: bool = False


@dataclass(frozen=True, slots=True)
class SpawnExpr(Node):
    """``spawn { body }``."""

    body: Block


@dataclass(frozen=True, slots=True)
class ParallelExpr(Node):
    """``parallel n { i -> }``, ``parallel each xs { x -> }``, ``parallel settle xs { x -> }``.

    ``mode`` is ``"count"``, ``"each"`` or ``"settle"``; ``param`` the bound name or None."""

    mode: str
    value: Expr
    param: str | None
    body: Block
    max_concurrent: Expr | None = None
    as_stream: bool = False


@dataclass(frozen=True, slots=True)
class RetryExpr(Node):
    """``retry n { body }``."""

    count: Expr
    body: Block


@dataclass(frozen=True, slots=True)
class DeadlineExpr(Node):
    """``deadline 2s { body }``."""

    duration: Expr
    body: Block


# ------------------------------------------------------------- patterns


@dataclass(frozen=True, slots=True)
class NamePattern(Node):
    """A plain binding name (``_`` discards)."""

    name: str


@dataclass(frozen=True, slots=True)
class DictPatternField(Node):
    """``key``, ``key: alias``, ``key = default``, or ``...rest`` (``rest`` true)."""

    key: str
    alias: str | None = None
    default: Expr | None = None
    rest: bool = False


@dataclass(frozen=True, slots=True)
class DictPattern(Node):
    """``{a, b: c, d = 1, ...rest}``."""

    fields: tuple[DictPatternField, ...]


@dataclass(frozen=True, slots=True)
class ListPatternElem(Node):
    """``name``, ``name = default`` or ``...rest``."""

    name: str
    default: Expr | None = None
    rest: bool = False


@dataclass(frozen=True, slots=True)
class ListPattern(Node):
    """``[a, b = 2, ...rest]``."""

    elems: tuple[ListPatternElem, ...]


@dataclass(frozen=True, slots=True)
class PairPattern(Node):
    """``(a, b)`` in ``for (a, b) in it``: binds ``.first`` / ``.second``."""

    first: str
    second: str


Pattern = Union[NamePattern, DictPattern, ListPattern, PairPattern]


# ------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class LetStmt(Node):
    """``let pat: T = value`` (``mutable`` false) or ``var pat: T = value`` (true)."""

    pattern: Pattern
    value: Expr
    type: TypeExpr | None = None
    mutable: bool = False


@dataclass(frozen=True, slots=True)
class AssignStmt(Node):
    """``target = value`` or ``target op= value`` (``op`` is ``"+"`` etc., None for ``=``).
    ``target`` is a Name, Attribute or Index."""

    target: Expr
    value: Expr
    op: str | None = None


@dataclass(frozen=True, slots=True)
class FnDecl(Node):
    """``pub? gen? fn name<T>(params) -> T { body }``."""

    name: str
    params: tuple[Param, ...]
    body: Block
    ret_type: TypeExpr | None = None
    is_pub: bool = False
    is_gen: bool = False
    generics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolDecl(Node):
    """``tool name(params) -> T { description "..." body }``."""

    name: str
    params: tuple[Param, ...]
    body: Block
    description: str = ""
    ret_type: TypeExpr | None = None
    is_pub: bool = False


@dataclass(frozen=True, slots=True)
class StructField(Node):
    """``name?: T`` in a struct declaration."""

    name: str
    type: TypeExpr | None = None
    optional: bool = False


@dataclass(frozen=True, slots=True)
class StructDecl(Node):
    """``struct Name<T> { fields }``."""

    name: str
    fields: tuple[StructField, ...]
    is_pub: bool = False
    generics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EnumVariant(Node):
    """``Name`` or ``Name(a, b: T)``."""

    name: str
    params: tuple[Param, ...] = ()


@dataclass(frozen=True, slots=True)
class EnumDecl(Node):
    """``enum Name<T> { variants }``."""

    name: str
    variants: tuple[EnumVariant, ...]
    is_pub: bool = False
    generics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class InterfaceDecl(Node):
    """``interface Name { fn m(self) -> T ... }`` (compile-time only)."""

    name: str
    methods: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ImplDecl(Node):
    """``impl Name { fn m(self, a) { } }``."""

    type_name: str
    methods: tuple[FnDecl, ...]


@dataclass(frozen=True, slots=True)
class TypeDecl(Node):
    """``type Name<T> = T``."""

    name: str
    type: TypeExpr
    generics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ForStmt(Node):
    """``for pattern in iterable { body }``."""

    pattern: Pattern
    iterable: Expr
    body: Block


@dataclass(frozen=True, slots=True)
class WhileStmt(Node):
    """``while cond { body }``."""

    cond: Expr
    body: Block


@dataclass(frozen=True, slots=True)
class GuardStmt(Node):
    """``guard cond else { body }``."""

    cond: Expr
    otherwise: Block


@dataclass(frozen=True, slots=True)
class RequireStmt(Node):
    """``require cond, message``."""

    cond: Expr
    message: Expr | None = None


@dataclass(frozen=True, slots=True)
class ThrowStmt(Node):
    """``throw value``."""

    value: Expr


@dataclass(frozen=True, slots=True)
class ReturnStmt(Node):
    """``return value?``."""

    value: Expr | None = None


@dataclass(frozen=True, slots=True)
class BreakStmt(Node):
    """``break``."""


@dataclass(frozen=True, slots=True)
class ContinueStmt(Node):
    """``continue``."""


@dataclass(frozen=True, slots=True)
class DeferStmt(Node):
    """``defer { body }``."""

    body: Block


@dataclass(frozen=True, slots=True)
class YieldStmt(Node):
    """``yield value?``."""

    value: Expr | None = None


@dataclass(frozen=True, slots=True)
class EmitStmt(Node):
    """``emit value`` (inside ``gen fn``)."""

    value: Expr


@dataclass(frozen=True, slots=True)
class MutexStmt(Node):
    """``mutex { body }``."""

    body: Block


@dataclass(frozen=True, slots=True)
class SelectCase(Node):
    """One ``select`` case: ``name from channel { }`` (kind ``"recv"``), ``timeout d { }``
    (kind ``"timeout"``) or ``default { }`` (kind ``"default"``)."""

    kind: str
    body: Block
    name: str | None = None
    value: Expr | None = None


@dataclass(frozen=True, slots=True)
class SelectStmt(Node):
    """``select { cases }``."""

    cases: tuple[SelectCase, ...]


@dataclass(frozen=True, slots=True)
class ExprStmt(Node):
    """An expression used as a statement."""

    value: Expr


@dataclass(frozen=True, slots=True)
class ImportDecl(Node):
    """``import "path"`` (``names`` None) or ``import { a, b } from "path"``."""

    path: str
    names: tuple[str, ...] | None = None
    is_pub: bool = False


@dataclass(frozen=True, slots=True)
class Attribute_(Node):
    """One ``@name(args)`` attribute; ``args`` holds ``(key or None, value)`` pairs."""

    name: str
    args: tuple[tuple[str | None, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class AttributedDecl(Node):
    """``@attr ... declaration``."""

    attributes: tuple[Attribute_, ...]
    decl: Stmt


@dataclass(frozen=True, slots=True)
class PipelineDecl(Node):
    """``pipeline name(params) -> T extends parent { body }``."""

    name: str
    params: tuple[Param, ...]
    body: Block
    extends: str | None = None
    is_pub: bool = False


@dataclass(frozen=True, slots=True)
class OverrideDecl(Node):
    """``override name(params) { }`` inside a child pipeline (compiles to nothing)."""

    name: str


@dataclass(frozen=True, slots=True)
class SkillDecl(Node):
    """``skill name { field expr ... }``: lowers to ``skill_define``."""

    name: str
    fields: tuple[tuple[str, Expr], ...]
    is_pub: bool = False


@dataclass(frozen=True, slots=True)
class Module(Node):
    """A parsed source file. ``path`` is the file path as given to the parser."""

    body: tuple[Stmt, ...]
    path: str = "<input>"


Expr = Union[
    Literal,
    DurationLit,
    InterpString,
    Name,
    Spread,
    ListLit,
    DictLit,
    ClosureExpr,
    BinOp,
    LogicalOp,
    NilCoalesce,
    UnaryOp,
    Pipe,
    Ternary,
    RangeExpr,
    Call,
    MethodCall,
    Attribute,
    Index,
    Slice,
    TryPropagate,
    TryStar,
    StructLit,
    IfExpr,
    MatchExpr,
    TryExpr,
    SpawnExpr,
    ParallelExpr,
    RetryExpr,
    DeadlineExpr,
]

Stmt = Union[
    LetStmt,
    AssignStmt,
    FnDecl,
    ToolDecl,
    StructDecl,
    EnumDecl,
    InterfaceDecl,
    ImplDecl,
    TypeDecl,
    ForStmt,
    WhileStmt,
    GuardStmt,
    RequireStmt,
    ThrowStmt,
    ReturnStmt,
    BreakStmt,
    ContinueStmt,
    DeferStmt,
    YieldStmt,
    EmitStmt,
    MutexStmt,
    SelectStmt,
    ExprStmt,
    ImportDecl,
    AttributedDecl,
    PipelineDecl,
    OverrideDecl,
    SkillDecl,
]


def node_id(node: Node) -> int:
    """Stable id of a code-owning node within its module: its start offset."""
    return node.span.start


def children(node: Node) -> Iterator[Node]:
    """Direct child nodes of ``node`` (the one generic walk helper)."""
    for f in fields(node):
        if f.name == "span":
            continue
        v = getattr(node, f.name)
        if isinstance(v, Node):
            yield v
        elif isinstance(v, tuple):
            for item in v:
                if isinstance(item, Node):
                    yield item
                elif isinstance(item, tuple):
                    for sub in item:
                        if isinstance(sub, Node):
                            yield sub


def walk(node: Node) -> Iterator[Node]:
    """``node`` and all its descendants, pre-order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(children(n))))
