"""The static type model of the checker: type terms, their display and assignability.

Types here are a small, deliberately incomplete picture of spec language.md 2.11. The
checker only reports a mismatch when it is *certain*: every function in this module answers
"compatible" whenever a type is partly unknown (``None``), gradual (``any``), a type
parameter, or a name it cannot resolve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harnpy.syntax import ast as A

_NOLIT: Any = object()


class Ty:
    """Base of the type terms (frozen, slotted dataclasses)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Prim(Ty):
    """A primitive type (``int``, ``string``, ``duration``...). ``lit`` is the value when the
    type was inferred from a literal (used for literal-type checks, never displayed)."""

    name: str
    lit: Any = _NOLIT

    @property
    def has_lit(self) -> bool:
        return self.lit is not _NOLIT


@dataclass(frozen=True, slots=True)
class Gradual(Ty):
    """``any``, ``unknown`` or ``never``."""

    name: str


@dataclass(frozen=True, slots=True)
class ListT(Ty):
    """``list<elem>``; ``elem`` None for a bare ``list``."""

    elem: Ty | None


@dataclass(frozen=True, slots=True)
class DictT(Ty):
    """``dict<key, value>``; both None for a bare ``dict``."""

    key: Ty | None
    value: Ty | None


@dataclass(frozen=True, slots=True)
class Field:
    """One shape field (``type`` None when unknown)."""

    name: str
    type: Ty | None
    optional: bool = False


@dataclass(frozen=True, slots=True)
class ShapeT(Ty):
    """``{a: int, b?: string}``, fields in source order."""

    fields: tuple[Field, ...]

    def get(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


@dataclass(frozen=True, slots=True)
class FnT(Ty):
    """``fn(params) -> ret``."""

    params: tuple[Ty | None, ...]
    ret: Ty | None


@dataclass(frozen=True, slots=True)
class UnionT(Ty):
    """``A | B``."""

    options: tuple[Ty, ...]


@dataclass(frozen=True, slots=True)
class LitT(Ty):
    """A literal type from an annotation: ``"pass"``, ``2``, ``true``."""

    value: Any


@dataclass(frozen=True, slots=True)
class NamedT(Ty):
    """A named type. ``kind`` is ``builtin`` (Result, iter, Generator, Stream, range...),
    ``struct``, ``enum``, ``interface`` or ``opaque`` (a name we cannot resolve)."""

    name: str
    kind: str
    args: tuple[Ty | None, ...] = ()


@dataclass(frozen=True, slots=True)
class AliasT(Ty):
    """A ``type`` alias use: displayed by name, checked through ``target``."""

    name: str
    target: Ty | None
    args: tuple[Ty | None, ...] = ()


@dataclass(frozen=True, slots=True)
class VarT(Ty):
    """A generic type parameter."""

    name: str


ANY = Gradual("any")
UNKNOWN = Gradual("unknown")
NEVER = Gradual("never")
INT = Prim("int")
FLOAT = Prim("float")
STRING = Prim("string")
BOOL = Prim("bool")
NIL = Prim("nil")

#: Primitive annotation names (``set<int>`` keeps only ``set``).
PRIM_NAMES = frozenset(
    {"int", "float", "string", "bool", "nil", "bytes", "duration", "closure", "set", "range"}
)
#: Builtin generic names, normalised (``Iter`` and ``iter`` are one type).
BUILTIN_NAMED = {
    "Result": "Result",
    "Iter": "iter",
    "iter": "iter",
    "Generator": "Generator",
    "Stream": "Stream",
}
GRADUAL_NAMES = {"any": ANY, "unknown": UNKNOWN, "never": NEVER}


# ------------------------------------------------------------------ display


def fmt(t: Ty | None) -> str:
    """The display form used in messages: ``list<int>``, ``{name: string}``, ``"pass"``."""
    if t is None:
        return "any"
    tt = type(t)
    if tt is Prim or tt is Gradual:
        return t.name  # type: ignore[attr-defined, no-any-return]
    if tt is ListT:
        return "list" if t.elem is None else f"list<{fmt(t.elem)}>"  # type: ignore[attr-defined]
    if tt is DictT:
        if t.key is None and t.value is None:  # type: ignore[attr-defined]
            return "dict"
        return f"dict<{fmt(t.key)}, {fmt(t.value)}>"  # type: ignore[attr-defined]
    if tt is ShapeT:
        parts = [
            f"{f.name}{'?' if f.optional else ''}: {fmt(f.type)}"
            for f in t.fields  # type: ignore[attr-defined]
        ]
        return "{" + ", ".join(parts) + "}"
    if tt is FnT:
        ps = ", ".join(fmt(p) for p in t.params)  # type: ignore[attr-defined]
        return f"fn({ps}) -> {fmt(t.ret)}"  # type: ignore[attr-defined]
    if tt is UnionT:
        return " | ".join(fmt(o) for o in t.options)  # type: ignore[attr-defined]
    if tt is LitT:
        return _fmt_lit(t.value)  # type: ignore[attr-defined]
    if tt is NamedT or tt is AliasT:
        args = t.args  # type: ignore[attr-defined]
        if args and any(a is not None for a in args):
            return f"{t.name}<{', '.join(fmt(a) for a in args)}>"  # type: ignore[attr-defined]
        return t.name  # type: ignore[attr-defined, no-any-return]
    if tt is VarT:
        return t.name  # type: ignore[attr-defined, no-any-return]
    return "any"


def _fmt_lit(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if v is None:
        return "nil"
    return str(v)


def lit_base(v: Any) -> str:
    """The primitive type name of a literal value."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    if v is None:
        return "nil"
    return "?"


# ----------------------------------------------------------- annotations


class TypeEnv:
    """What type names mean in one file: aliases, structs, enums, interfaces.

    ``aliases`` maps a name to its :class:`~harnpy.syntax.ast.TypeDecl` when the file declares
    it exactly once (names declared twice are left opaque).
    """

    def __init__(
        self,
        aliases: dict[str, A.TypeDecl],
        structs: set[str],
        enums: set[str],
        interfaces: set[str],
    ) -> None:
        self.aliases = aliases
        self.structs = structs
        self.enums = enums
        self.interfaces = interfaces
        self._alias_cache: dict[str, Ty | None] = {}
        self._resolving: set[str] = set()

    def convert(self, node: A.TypeExpr | None, generics: frozenset[str] = frozenset()) -> Ty | None:
        """The :class:`Ty` of an annotation (None when absent or not understood)."""
        if node is None:
            return None
        t = type(node)
        if t is A.TypeName:
            return self._named(node, generics)  # type: ignore[arg-type]
        if t is A.TypeList:
            return ListT(self.convert(node.elem, generics))  # type: ignore[union-attr]
        if t is A.TypeShape:
            return ShapeT(
                tuple(
                    Field(f.name, self.convert(f.type, generics), f.optional)
                    for f in node.fields  # type: ignore[union-attr]
                )
            )
        if t is A.TypeFn:
            return FnT(
                tuple(self.convert(p, generics) for p in node.params),  # type: ignore[union-attr]
                self.convert(node.ret, generics),  # type: ignore[union-attr]
            )
        if t is A.TypeLiteral:
            kw = node.keyword  # type: ignore[union-attr]
            if kw == "nil":
                return NIL
            if kw == "never":
                return NEVER
            if kw in ("true", "false"):
                return LitT(kw == "true")
            return LitT(node.value)  # type: ignore[union-attr]
        if t is A.TypeUnion:
            opts: list[Ty] = []
            for o in node.options:  # type: ignore[union-attr]
                c = self.convert(o, generics)
                if c is None:
                    return None
                if type(c) is UnionT:
                    opts.extend(c.options)  # type: ignore[attr-defined]
                else:
                    opts.append(c)
            return UnionT(tuple(opts))
        return None

    def _named(self, node: A.TypeName, generics: frozenset[str]) -> Ty | None:
        name = node.name
        args = tuple(self.convert(a, generics) for a in node.args)
        if name in generics:
            return VarT(name)
        if name in PRIM_NAMES:
            return Prim(name)
        if name == "list":
            return ListT(args[0] if args else None)
        if name == "dict":
            if len(args) >= 2:
                return DictT(args[0], args[1])
            return DictT(None, args[0] if args else None)
        if name in GRADUAL_NAMES:
            return GRADUAL_NAMES[name]
        if name in BUILTIN_NAMED:
            return NamedT(BUILTIN_NAMED[name], "builtin", args)
        if name in self.aliases:
            return AliasT(name, self._alias_target(name, args), args)
        if name in self.structs:
            return NamedT(name, "struct", args)
        if name in self.enums:
            return NamedT(name, "enum", args)
        if name in self.interfaces:
            return NamedT(name, "interface", args)
        return NamedT(name, "opaque", args)

    def _alias_target(self, name: str, args: tuple[Ty | None, ...]) -> Ty | None:
        decl = self.aliases[name]
        if decl.generics:
            if name in self._resolving:
                return None
            self._resolving.add(name)
            try:
                body = self.convert(decl.type, frozenset(decl.generics))
            finally:
                self._resolving.discard(name)
            binding = {g: (args[i] if i < len(args) else None) for i, g in enumerate(decl.generics)}
            return substitute(body, binding)
        if name in self._alias_cache:
            return self._alias_cache[name]
        if name in self._resolving:
            return None
        self._resolving.add(name)
        try:
            target = self.convert(decl.type)
        finally:
            self._resolving.discard(name)
        self._alias_cache[name] = target
        return target


def substitute(t: Ty | None, binding: dict[str, Ty | None]) -> Ty | None:
    """``t`` with type parameters replaced (unbound ones become None, i.e. unknown)."""
    if t is None:
        return None
    tt = type(t)
    if tt is VarT:
        return binding.get(t.name) if t.name in binding else t  # type: ignore[attr-defined]
    if tt is ListT:
        return ListT(substitute(t.elem, binding))  # type: ignore[attr-defined]
    if tt is DictT:
        return DictT(substitute(t.key, binding), substitute(t.value, binding))  # type: ignore[attr-defined]
    if tt is ShapeT:
        return ShapeT(
            tuple(
                Field(f.name, substitute(f.type, binding), f.optional)
                for f in t.fields  # type: ignore[attr-defined]
            )
        )
    if tt is FnT:
        return FnT(
            tuple(substitute(p, binding) for p in t.params),  # type: ignore[attr-defined]
            substitute(t.ret, binding),  # type: ignore[attr-defined]
        )
    if tt is UnionT:
        opts = [substitute(o, binding) for o in t.options]  # type: ignore[attr-defined]
        if any(o is None for o in opts):
            return None
        return UnionT(tuple(opts))  # type: ignore[arg-type]
    if tt is NamedT:
        return NamedT(t.name, t.kind, tuple(substitute(a, binding) for a in t.args))  # type: ignore[attr-defined]
    if tt is AliasT:
        return AliasT(
            t.name,  # type: ignore[attr-defined]
            substitute(t.target, binding),  # type: ignore[attr-defined]
            tuple(substitute(a, binding) for a in t.args),  # type: ignore[attr-defined]
        )
    return t


def has_vars(t: Ty | None) -> bool:
    """Whether ``t`` mentions a type parameter anywhere."""
    if t is None:
        return False
    tt = type(t)
    if tt is VarT:
        return True
    if tt is ListT:
        return has_vars(t.elem)  # type: ignore[attr-defined]
    if tt is DictT:
        return has_vars(t.key) or has_vars(t.value)  # type: ignore[attr-defined]
    if tt is ShapeT:
        return any(has_vars(f.type) for f in t.fields)  # type: ignore[attr-defined]
    if tt is FnT:
        return any(has_vars(p) for p in t.params) or has_vars(t.ret)  # type: ignore[attr-defined]
    if tt is UnionT:
        return any(has_vars(o) for o in t.options)  # type: ignore[attr-defined]
    if tt is NamedT or tt is AliasT:
        return any(has_vars(a) for a in t.args)  # type: ignore[attr-defined]
    return False


def unalias(t: Ty | None) -> Ty | None:
    """Follow aliases to the underlying type (None when it cannot be resolved)."""
    depth = 0
    while type(t) is AliasT and depth < 50:
        t = t.target  # type: ignore[union-attr]
        depth += 1
    return None if type(t) is AliasT else t


def widen(t: Ty | None) -> Ty | None:
    """``t`` without literal values (for display and generic bindings)."""
    if type(t) is Prim and t.has_lit:  # type: ignore[union-attr]
        return Prim(t.name)  # type: ignore[union-attr]
    if type(t) is LitT:
        return Prim(lit_base(t.value))  # type: ignore[union-attr]
    return t


def kind(t: Ty | None) -> str | None:
    """The runtime value kind a type guarantees, or None when it does not pin one down.

    Kinds: primitive names, ``list``, ``dict`` (shapes too), ``iter``, ``Generator``,
    ``Stream``, ``Result``, ``struct:Name``, ``enum:Name``, ``closure``.
    """
    t = unalias(t)
    if t is None:
        return None
    tt = type(t)
    if tt is Prim:
        return t.name  # type: ignore[attr-defined, no-any-return]
    if tt is LitT:
        b = lit_base(t.value)  # type: ignore[attr-defined]
        return None if b == "?" else b
    if tt is ListT:
        return "list"
    if tt is DictT or tt is ShapeT:
        return "dict"
    if tt is FnT:
        return "closure"
    if tt is NamedT:
        k = t.kind  # type: ignore[attr-defined]
        if k == "builtin":
            return t.name  # type: ignore[attr-defined, no-any-return]
        if k in ("struct", "enum"):
            return f"{k}:{t.name}"  # type: ignore[attr-defined]
    return None


# ---------------------------------------------------------------- checks


def assignable(src: Ty | None, dst: Ty | None, fresh: bool = True) -> bool:
    """False only when a value of type ``src`` can certainly not be stored in ``dst``.

    ``fresh`` is true when ``src`` describes a new value (a literal): list and dict element
    types are then compared covariantly; a value read from a variable must match them exactly
    (lists are mutable, so ``list<int>`` does not flow into ``list<float>``).
    """
    if src is None or dst is None:
        return True
    d = unalias(dst)
    s = unalias(src)
    if d is None or s is None:
        return True
    td = type(d)
    ts = type(s)
    if td is Gradual:
        return d.name != "never" or ts is Gradual  # type: ignore[attr-defined]
    if td is VarT or ts is VarT:
        return True
    if ts is Gradual:
        return s.name != "unknown"  # type: ignore[attr-defined]
    if td is NamedT and d.kind in ("opaque", "interface"):  # type: ignore[attr-defined]
        return True
    if ts is NamedT and s.kind in ("opaque", "interface"):  # type: ignore[attr-defined]
        return True
    if td is UnionT:
        return any(assignable(s, o, fresh) for o in d.options)  # type: ignore[attr-defined]
    if ts is UnionT:
        return True
    if td is LitT:
        want = d.value  # type: ignore[attr-defined]
        if ts is LitT:
            return _same_lit(s.value, want)  # type: ignore[attr-defined]
        if ts is Prim and s.has_lit:  # type: ignore[attr-defined]
            return _same_lit(s.lit, want)  # type: ignore[attr-defined]
        ks = kind(s)
        return ks is None or ks == "nil" or ks == lit_base(want)
    ks = kind(s)
    kd = kind(d)
    if ks is None or kd is None:
        return True
    if ks != kd:
        # nil is accepted everywhere (the corpus' reference predates strict nil checks); an
        # int widens to float; ranges are list-like; dicts and structs are interchangeable
        # (a dict builds a struct; a struct instance has the fields a shape asks for).
        return (
            ks == "nil"
            or (kd == "float" and ks == "int")
            or (kd == "list" and ks == "range")
            or (kd.startswith("struct:") and ks == "dict")
            or (kd == "dict" and ks.startswith("struct:"))
        )
    if td is ListT and ts is ListT:
        return _elem_ok(s.elem, d.elem, fresh)  # type: ignore[attr-defined]
    if td is DictT and ts in (DictT, ShapeT):
        if ts is DictT:
            return _elem_ok(s.value, d.value, fresh)  # type: ignore[attr-defined]
        return all(assignable(f.type, d.value, fresh) for f in s.fields)  # type: ignore[attr-defined]
    if td is ShapeT and ts is ShapeT:
        for f in d.fields:  # type: ignore[attr-defined]
            got = s.get(f.name)  # type: ignore[attr-defined]
            if got is None:
                if not f.optional:
                    return False
                continue
            if not assignable(got.type, f.type, fresh):
                return False
        return True
    if td is NamedT and ts is NamedT:
        for a, b in zip(s.args, d.args):  # type: ignore[attr-defined]
            if not assignable(a, b, fresh):
                return False
    return True


def _elem_ok(s: Ty | None, d: Ty | None, fresh: bool) -> bool:
    if fresh:
        return assignable(s, d, True)
    s2 = widen(unalias(s))
    d2 = unalias(d)
    if type(s2) is Prim and type(d2) is Prim:
        return s2.name == d2.name  # type: ignore[union-attr]
    return assignable(s, d, False)


def _same_lit(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def same(a: Ty | None, b: Ty | None) -> bool | None:
    """Whether two types are the same: True/False when certain, None when unknown."""
    a = widen(unalias(a))
    b = widen(unalias(b))
    if a is None or b is None:
        return None
    if type(a) is Gradual or type(b) is Gradual or type(a) is VarT or type(b) is VarT:
        return None
    ka = kind(a)
    kb = kind(b)
    if ka is None or kb is None:
        return None
    if ka != kb:
        if {ka.split(":")[0], kb.split(":")[0]} == {"struct", "dict"}:
            return None  # a struct instance and a dict can stand for one another
        return False
    if type(a) is Prim and type(b) is Prim:
        return True
    return None
