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
from typing import Any, Union, dataclass_transform


class _FieldSpec:
    __slots__ = ("default",)

    def __init__(self, default: Any) -> None:
        self.default = default


def _field(*, default: Any, kw_only: bool = False) -> Any:
    """Field specifier (``span`` is keyword-only); unwrapped by :class:`_NodeMeta`."""
    return _FieldSpec(default)


@dataclass_transform(frozen_default=True, field_specifiers=(_field,))
class _NodeMeta(type):
    """Builds frozen, slotted record classes from annotations, like
    ``@dataclass(frozen=True, slots=True)`` but without one ``exec`` per class: the
    ``__init__`` of all node classes are compiled in a single batch by :func:`_build_methods`
    (start-up cost matters: every ``harnpy run`` imports this module); equality, hashing and
    repr are generic over ``_fields``.

    Field order follows the annotations; a class attribute gives a field's default;
    ``span`` is keyword-only and excluded from equality and repr.
    """

    registry: list[type] = []

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
        own = [f for f in ns.get("__annotations__", {}) if not f.startswith("_")]
        inherited: list[str] = []
        defaults: dict[str, Any] = {}
        for b in bases:
            inherited.extend(f for f in getattr(b, "_fields", ()) if f not in inherited)
            defaults.update(getattr(b, "_defaults", {}))
        for f in own:
            if f in ns:
                d = ns.pop(f)
                defaults[f] = d.default if isinstance(d, _FieldSpec) else d
        ns["__slots__"] = tuple(f for f in own if f not in inherited)
        ns["_fields"] = tuple(inherited + [f for f in own if f not in inherited])
        ns["_defaults"] = defaults
        cls = super().__new__(mcls, name, bases, ns)
        _NodeMeta.registry.append(cls)
        return cls


def _build_methods(classes: list[type]) -> None:
    src: list[str] = []
    env: dict[str, Any] = {"_set": object.__setattr__}
    for i, cls in enumerate(classes):
        fields_ = [f for f in cls._fields if f != "span"]  # type: ignore[attr-defined]
        kw = "span" in cls._fields  # type: ignore[attr-defined]
        defaults = cls._defaults  # type: ignore[attr-defined]
        params = []
        for f in fields_:
            if f in defaults:
                env[f"_d{i}_{f}"] = defaults[f]
                params.append(f"{f}=_d{i}_{f}")
            else:
                params.append(f)
        if kw:
            env[f"_d{i}_span"] = defaults.get("span")
            params.append(f"*, span=_d{i}_span")
        body = [f"    _set(self, {f!r}, {f})" for f in fields_]
        if kw:
            body.append("    _set(self, 'span', span)")
        src.append(f"def _init{i}(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass"))
    exec("\n".join(src), env)  # noqa: S102 - one batch of generated record methods
    for i, cls in enumerate(classes):
        cls.__init__ = env[f"_init{i}"]  # type: ignore[misc]


class _Record(metaclass=_NodeMeta):
    """Frozen slotted record (see :class:`_NodeMeta`)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: AST nodes are immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: AST nodes are immutable")

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._fields if f != "span")  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.__class__.__name__, self._key()))

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{f}={getattr(self, f)!r}"
            for f in self._fields  # type: ignore[attr-defined]
            if f != "span"
        )
        return f"{self.__class__.__name__}({inner})"


class Span(_Record):
    """Source span: 1-based ``line``/``col`` of the first character, 0-based ``start``/``end``
    character offsets (end exclusive), and ``end_line``/``end_col`` of the last character."""

    line: int = 0
    col: int = 0
    start: int = 0
    end: int = 0
    end_line: int = 0
    end_col: int = 0


_NodeMeta.registry.remove(_Record)
_build_methods([Span])
NO_SPAN = Span()


class Node(_Record):
    """Base of all nodes."""

    span: Span = _field(default=NO_SPAN, kw_only=True)


# ----------------------------------------------------------------- types


class TypeName(Node):
    """``int``, ``list<int>``, ``Result<T, E>``, ``Foo``."""

    name: str
    args: tuple[TypeExpr, ...] = ()


class TypeList(Node):
    """``[T]`` list shorthand."""

    elem: TypeExpr


class ShapeField(Node):
    """``name?: T`` inside a shape type."""

    name: str
    type: TypeExpr
    optional: bool = False


class TypeShape(Node):
    """``{a: int, b?: string}``."""

    fields: tuple[ShapeField, ...]


class TypeFn(Node):
    """``fn(int, string) -> bool``."""

    params: tuple[TypeExpr, ...]
    ret: TypeExpr


class TypeLiteral(Node):
    """A literal type: ``"ok"``, ``3``, ``-1``, ``nil``, ``true``, ``false``, ``never``."""

    value: Any
    keyword: str = ""  # "nil" | "true" | "false" | "never" | "" (for string/int literals)


class TypeUnion(Node):
    """``A | B | C``."""

    options: tuple[TypeExpr, ...]


TypeExpr = Union[TypeName, TypeList, TypeShape, TypeFn, TypeLiteral, TypeUnion]


# ------------------------------------------------------------ expressions


class Literal(Node):
    """``42``, ``3.5``, ``"text"`` (no interpolation), ``r"raw"``, ``true``, ``false``, ``nil``."""

    value: Any


class DurationLit(Node):
    """``5s``: ``ms`` is the value in milliseconds."""

    ms: int


class InterpString(Node):
    """``"a ${x} b"``: ``parts`` alternates literal ``str`` pieces and expression nodes."""

    parts: tuple[str | Expr, ...]


class Name(Node):
    """An identifier reference. ``_`` is the discard / pipe placeholder."""

    id: str


class Spread(Node):
    """``...expr`` inside a list literal, dict literal or call arguments."""

    value: Expr


class ListLit(Node):
    """``[a, ...b, c]``."""

    items: tuple[Expr, ...]  # elements may be Spread


class DictEntry(Node):
    """``key: value``. ``key`` is a str for bare/quoted keys, an expression for ``[expr]``."""

    key: str | Expr
    value: Expr
    computed: bool = False


class DictLit(Node):
    """``{a: 1, "b": 2, [k]: 3, ...other}``."""

    entries: tuple[DictEntry | Spread, ...]


class Param(Node):
    """A parameter: ``name``, ``name: T``, ``name = default``, ``...rest``."""

    name: str
    type: TypeExpr | None = None
    default: Expr | None = None
    rest: bool = False


class Block(Node):
    """``{ stmt; stmt }``: a list of statements opening a scope."""

    body: tuple[Stmt, ...]


class ClosureExpr(Node):
    """``{ a, b -> body }`` or ``fn(a, b) { body }`` (``is_fn_expr``). Both return the value
    of their last statement implicitly."""

    params: tuple[Param, ...]
    body: Block
    is_fn_expr: bool = False


class BinOp(Node):
    """Binary operator. ``op`` is one of ``+ - * / % ** == != < > <= >= in not_in``."""

    op: str
    left: Expr
    right: Expr


class LogicalOp(Node):
    """``a && b`` / ``a || b`` (``op`` is ``"&&"`` or ``"||"``); always yields a bool."""

    op: str
    left: Expr
    right: Expr


class NilCoalesce(Node):
    """``a ?? b``."""

    left: Expr
    right: Expr


class UnaryOp(Node):
    """``-x`` or ``!x`` (``op`` is ``"-"`` or ``"!"``)."""

    op: str
    operand: Expr


class Pipe(Node):
    """``left |> right``."""

    left: Expr
    right: Expr


class Ternary(Node):
    """``cond ? a : b``."""

    cond: Expr
    then: Expr
    otherwise: Expr


class RangeExpr(Node):
    """``a to b`` (inclusive) or ``a to b exclusive``."""

    start: Expr
    end: Expr
    inclusive: bool = True


class Call(Node):
    """``name(args)``: a call on a bare name (``func`` is always a :class:`Name`)."""

    func: Name
    args: tuple[Expr, ...]  # elements may be Spread
    type_args: tuple[TypeExpr, ...] = ()


class MethodCall(Node):
    """``obj.name(args)`` or ``obj?.name(args)`` (``optional``)."""

    obj: Expr
    name: str
    args: tuple[Expr, ...]
    optional: bool = False


class Attribute(Node):
    """``obj.name`` or ``obj?.name`` (``optional``)."""

    obj: Expr
    name: str
    optional: bool = False


class Index(Node):
    """``obj[index]`` or ``obj?[index]`` (``optional``)."""

    obj: Expr
    index: Expr
    optional: bool = False


class Slice(Node):
    """``obj[start:end]``; either bound may be None."""

    obj: Expr
    start: Expr | None
    end: Expr | None


class TryPropagate(Node):
    """Postfix ``expr?`` (Result propagation)."""

    value: Expr


class TryStar(Node):
    """``try* expr``."""

    value: Expr


class StructLit(Node):
    """``Name { field: expr, ... }``."""

    name: str
    fields: tuple[DictEntry, ...]


class IfExpr(Node):
    """``if cond { } else if ... else { }``; ``otherwise`` is a Block, an IfExpr or None."""

    cond: Expr
    then: Block
    otherwise: Block | IfExpr | None = None


class MatchArm(Node):
    """``p1 | p2 if guard -> { body }``; patterns are expressions read structurally."""

    patterns: tuple[Expr, ...]
    guard: Expr | None
    body: Block


class MatchExpr(Node):
    """``match value { arms }``."""

    value: Expr
    arms: tuple[MatchArm, ...]


class TryExpr(Node):
    """``try { } catch (e: T) { } finally { }``. With neither catch nor finally it is a
    try-expression producing a Result (``has_catch`` false and ``finally_body`` None)."""

    body: Block
    catch_name: str | None = None
    catch_type: TypeExpr | None = None
    catch_body: Block | None = None
    finally_body: Block | None = None
    has_catch: bool = False


class SpawnExpr(Node):
    """``spawn { body }``."""

    body: Block


class ParallelExpr(Node):
    """``parallel n { i -> }``, ``parallel each xs { x -> }``, ``parallel settle xs { x -> }``.

    ``mode`` is ``"count"``, ``"each"`` or ``"settle"``; ``param`` the bound name or None."""

    mode: str
    value: Expr
    param: str | None
    body: Block
    max_concurrent: Expr | None = None
    as_stream: bool = False


class RetryExpr(Node):
    """``retry n { body }``."""

    count: Expr
    body: Block


class DeadlineExpr(Node):
    """``deadline 2s { body }``."""

    duration: Expr
    body: Block


# ------------------------------------------------------------- patterns


class NamePattern(Node):
    """A plain binding name (``_`` discards)."""

    name: str


class DictPatternField(Node):
    """``key``, ``key: alias``, ``key = default``, or ``...rest`` (``rest`` true)."""

    key: str
    alias: str | None = None
    default: Expr | None = None
    rest: bool = False


class DictPattern(Node):
    """``{a, b: c, d = 1, ...rest}``."""

    fields: tuple[DictPatternField, ...]


class ListPatternElem(Node):
    """``name``, ``name = default`` or ``...rest``."""

    name: str
    default: Expr | None = None
    rest: bool = False


class ListPattern(Node):
    """``[a, b = 2, ...rest]``."""

    elems: tuple[ListPatternElem, ...]


class PairPattern(Node):
    """``(a, b)`` in ``for (a, b) in it``: binds ``.first`` / ``.second``."""

    first: str
    second: str


Pattern = Union[NamePattern, DictPattern, ListPattern, PairPattern]


# ------------------------------------------------------------- statements


class LetStmt(Node):
    """``let pat: T = value`` (``mutable`` false), ``var pat: T = value`` (true) or
    ``const pat = value`` (``is_const``: later Harn revisions, where ``let`` is reassignable
    in files that use ``const``)."""

    pattern: Pattern
    value: Expr
    type: TypeExpr | None = None
    mutable: bool = False
    is_const: bool = False


class AssignStmt(Node):
    """``target = value`` or ``target op= value`` (``op`` is ``"+"`` etc., None for ``=``).
    ``target`` is a Name, Attribute or Index."""

    target: Expr
    value: Expr
    op: str | None = None


class FnDecl(Node):
    """``pub? gen? fn name<T>(params) -> T { body }``."""

    name: str
    params: tuple[Param, ...]
    body: Block
    ret_type: TypeExpr | None = None
    is_pub: bool = False
    is_gen: bool = False
    generics: tuple[str, ...] = ()


class ToolDecl(Node):
    """``tool name(params) -> T { description "..." body }``."""

    name: str
    params: tuple[Param, ...]
    body: Block
    description: str = ""
    ret_type: TypeExpr | None = None
    is_pub: bool = False


class StructField(Node):
    """``name?: T`` in a struct declaration."""

    name: str
    type: TypeExpr | None = None
    optional: bool = False


class StructDecl(Node):
    """``struct Name<T> { fields }``."""

    name: str
    fields: tuple[StructField, ...]
    is_pub: bool = False
    generics: tuple[str, ...] = ()


class EnumVariant(Node):
    """``Name`` or ``Name(a, b: T)``."""

    name: str
    params: tuple[Param, ...] = ()


class EnumDecl(Node):
    """``enum Name<T> { variants }``."""

    name: str
    variants: tuple[EnumVariant, ...]
    is_pub: bool = False
    generics: tuple[str, ...] = ()


class InterfaceDecl(Node):
    """``interface Name { fn m(self) -> T ... }`` (compile-time only)."""

    name: str
    methods: tuple[str, ...] = ()


class ImplDecl(Node):
    """``impl Name { fn m(self, a) { } }``."""

    type_name: str
    methods: tuple[FnDecl, ...]


class TypeDecl(Node):
    """``type Name<T> = T``."""

    name: str
    type: TypeExpr
    generics: tuple[str, ...] = ()


class ForStmt(Node):
    """``for pattern in iterable { body }``."""

    pattern: Pattern
    iterable: Expr
    body: Block


class WhileStmt(Node):
    """``while cond { body }``."""

    cond: Expr
    body: Block


class GuardStmt(Node):
    """``guard cond else { body }``."""

    cond: Expr
    otherwise: Block


class RequireStmt(Node):
    """``require cond, message``."""

    cond: Expr
    message: Expr | None = None


class ThrowStmt(Node):
    """``throw value``."""

    value: Expr


class ReturnStmt(Node):
    """``return value?``."""

    value: Expr | None = None


class BreakStmt(Node):
    """``break``."""


class ContinueStmt(Node):
    """``continue``."""


class DeferStmt(Node):
    """``defer { body }``."""

    body: Block


class YieldStmt(Node):
    """``yield value?``."""

    value: Expr | None = None


class EmitStmt(Node):
    """``emit value`` (inside ``gen fn``)."""

    value: Expr


class MutexStmt(Node):
    """``mutex { body }``."""

    body: Block


class SelectCase(Node):
    """One ``select`` case: ``name from channel { }`` (kind ``"recv"``), ``timeout d { }``
    (kind ``"timeout"``) or ``default { }`` (kind ``"default"``)."""

    kind: str
    body: Block
    name: str | None = None
    value: Expr | None = None


class SelectStmt(Node):
    """``select { cases }``."""

    cases: tuple[SelectCase, ...]


class ExprStmt(Node):
    """An expression used as a statement."""

    value: Expr


class ImportDecl(Node):
    """``import "path"`` (``names`` None) or ``import { a, b } from "path"``."""

    path: str
    names: tuple[str, ...] | None = None
    is_pub: bool = False


class Attribute_(Node):
    """One ``@name(args)`` attribute; ``args`` holds ``(key or None, value)`` pairs."""

    name: str
    args: tuple[tuple[str | None, Any], ...] = ()


class AttributedDecl(Node):
    """``@attr ... declaration``."""

    attributes: tuple[Attribute_, ...]
    decl: Stmt


class PipelineDecl(Node):
    """``pipeline name(params) -> T extends parent { body }``."""

    name: str
    params: tuple[Param, ...]
    body: Block
    extends: str | None = None
    is_pub: bool = False


class OverrideDecl(Node):
    """``override name(params) { }`` inside a child pipeline (compiles to nothing)."""

    name: str


class SkillDecl(Node):
    """``skill name { field expr ... }``: lowers to ``skill_define``."""

    name: str
    fields: tuple[tuple[str, Expr], ...]
    is_pub: bool = False


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


_build_methods([c for c in _NodeMeta.registry if c is not Span])


def node_id(node: Node) -> int:
    """Stable id of a code-owning node within its module: its start offset."""
    return node.span.start


def children(node: Node) -> Iterator[Node]:
    """Direct child nodes of ``node`` (the one generic walk helper)."""
    for name in node._fields:  # type: ignore[attr-defined]
        if name == "span":
            continue
        v = getattr(node, name)
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


def pattern_names(p: Node) -> list[str]:
    """Names a ``let``/``var``/``for`` pattern binds, in order (``_`` excluded)."""
    t = type(p)
    if t is NamePattern:
        return [] if p.name == "_" else [p.name]  # type: ignore[attr-defined]
    if t is DictPattern:
        return [f.key if f.rest else (f.alias or f.key) for f in p.fields]  # type: ignore[attr-defined]
    if t is ListPattern:
        return [e.name for e in p.elems if e.name != "_"]  # type: ignore[attr-defined]
    if t is PairPattern:
        return [p.first, p.second]  # type: ignore[attr-defined]
    return []
