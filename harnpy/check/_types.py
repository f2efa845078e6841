"""The static type model of the checker: type terms, their display and assignability.

Types here are a small, deliberately incomplete picture of spec language.md 2.11. The
checker only reports a mismatch when it is *certain*: every function in this module answers
"compatible" whenever a type is partly unknown (``None``), gradual (``any``), a type
parameter, or a name it cannot resolve.
"""

from __future__ import annotations

from typing import Any

from harnpy.syntax import ast as A

_NOLIT: Any = object()


class Ty:
    """Base of the type terms: small immutable-by-convention classes with ``__slots__``
    (plain classes rather than dataclasses keep ``harnpy run`` start-up cheap)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {fmt(self)}>"


class Prim(Ty):
    """A primitive type (``int``, ``string``, ``duration``...). ``lit`` is the value when the
    type was inferred from a literal (used for literal-type checks, never displayed)."""

    __slots__ = ("name", "lit")

    def __init__(self, name: str, lit: Any = _NOLIT) -> None:
        self.name = name
        self.lit = lit

    @property
    def has_lit(self) -> bool:
        """True when the type was inferred from a literal (``lit`` holds its value)."""
        return self.lit is not _NOLIT


class Gradual(Ty):
    """``any``, ``unknown`` or ``never``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class ListT(Ty):
    """``list<elem>``; ``elem`` None for a bare ``list``."""

    __slots__ = ("elem",)

    def __init__(self, elem: Ty | None) -> None:
        self.elem = elem


class DictT(Ty):
    """``dict<key, value>``; both None for a bare ``dict``."""

    __slots__ = ("key", "value")

    def __init__(self, key: Ty | None, value: Ty | None) -> None:
        self.key = key
        self.value = value


class Field:
    """One shape field (``type`` None when unknown)."""

    __slots__ = ("name", "type", "optional")

    def __init__(self, name: str, type: Ty | None, optional: bool = False) -> None:
        self.name = name
        self.type = type
        self.optional = optional


class ShapeT(Ty):
    """``{a: int, b?: string}``, fields in source order."""

    __slots__ = ("fields",)

    def __init__(self, fields: tuple[Field, ...]) -> None:
        self.fields = fields

    def get(self, name: str) -> Field | None:
        """The field called ``name``, if any."""
        for f in self.fields:
            if f.name == name:
                return f
        return None


class FnT(Ty):
    """``fn(params) -> ret``."""

    __slots__ = ("params", "ret")

    def __init__(self, params: tuple[Ty | None, ...], ret: Ty | None) -> None:
        self.params = params
        self.ret = ret


class UnionT(Ty):
    """``A | B``."""

    __slots__ = ("options",)

    def __init__(self, options: tuple[Ty, ...]) -> None:
        self.options = options


class LitT(Ty):
    """A literal type from an annotation: ``"pass"``, ``2``, ``true``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class NamedT(Ty):
    """A named type. ``kind`` is ``builtin`` (Result, iter, Generator, Stream), ``struct``,
    ``enum``, ``interface`` or ``opaque`` (a name we cannot resolve)."""

    __slots__ = ("name", "kind", "args")

    def __init__(self, name: str, kind: str, args: tuple[Ty | None, ...] = ()) -> None:
        self.name = name
        self.kind = kind
        self.args = args


class AliasT(Ty):
    """A ``type`` alias use: displayed by name, checked through ``target``."""

    __slots__ = ("name", "target", "args")

    def __init__(self, name: str, target: Ty | None, args: tuple[Ty | None, ...] = ()) -> None:
        self.name = name
        self.target = target
        self.args = args


class VarT(Ty):
    """A generic type parameter."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


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
    if isinstance(t, (Prim, Gradual, VarT)):
        return t.name
    if isinstance(t, ListT):
        return "list" if t.elem is None else f"list<{fmt(t.elem)}>"
    if isinstance(t, DictT):
        if t.key is None and t.value is None:
            return "dict"
        return f"dict<{fmt(t.key)}, {fmt(t.value)}>"
    if isinstance(t, ShapeT):
        parts = [f"{f.name}{'?' if f.optional else ''}: {fmt(f.type)}" for f in t.fields]
        return "{" + ", ".join(parts) + "}"
    if isinstance(t, FnT):
        return f"fn({', '.join(fmt(p) for p in t.params)}) -> {fmt(t.ret)}"
    if isinstance(t, UnionT):
        return " | ".join(fmt(o) for o in t.options)
    if isinstance(t, LitT):
        return _fmt_lit(t.value)
    if isinstance(t, (NamedT, AliasT)):
        if t.args and any(a is not None for a in t.args):
            return f"{t.name}<{', '.join(fmt(a) for a in t.args)}>"
        return t.name
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
        if isinstance(node, A.TypeName):
            return self._named(node, generics)
        if isinstance(node, A.TypeList):
            return ListT(self.convert(node.elem, generics))
        if isinstance(node, A.TypeShape):
            return ShapeT(
                tuple(
                    Field(f.name, self.convert(f.type, generics), f.optional) for f in node.fields
                )
            )
        if isinstance(node, A.TypeFn):
            return FnT(
                tuple(self.convert(p, generics) for p in node.params),
                self.convert(node.ret, generics),
            )
        if isinstance(node, A.TypeLiteral):
            if node.keyword == "nil":
                return NIL
            if node.keyword == "never":
                return NEVER
            if node.keyword in ("true", "false"):
                return LitT(node.keyword == "true")
            return LitT(node.value)
        if isinstance(node, A.TypeUnion):
            opts: list[Ty] = []
            for o in node.options:
                c = self.convert(o, generics)
                if c is None:
                    return None
                opts.extend(c.options if isinstance(c, UnionT) else (c,))
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
    """``t`` with the type parameters in ``binding`` replaced (None means unknown)."""
    if t is None:
        return None
    if isinstance(t, VarT):
        return binding[t.name] if t.name in binding else t
    if isinstance(t, ListT):
        return ListT(substitute(t.elem, binding))
    if isinstance(t, DictT):
        return DictT(substitute(t.key, binding), substitute(t.value, binding))
    if isinstance(t, ShapeT):
        return ShapeT(
            tuple(Field(f.name, substitute(f.type, binding), f.optional) for f in t.fields)
        )
    if isinstance(t, FnT):
        return FnT(tuple(substitute(p, binding) for p in t.params), substitute(t.ret, binding))
    if isinstance(t, UnionT):
        opts = [substitute(o, binding) for o in t.options]
        if any(o is None for o in opts):
            return None
        return UnionT(tuple(o for o in opts if o is not None))
    if isinstance(t, NamedT):
        return NamedT(t.name, t.kind, tuple(substitute(a, binding) for a in t.args))
    if isinstance(t, AliasT):
        return AliasT(
            t.name, substitute(t.target, binding), tuple(substitute(a, binding) for a in t.args)
        )
    return t


def has_vars(t: Ty | None) -> bool:
    """Whether ``t`` mentions a type parameter anywhere."""
    if t is None:
        return False
    if isinstance(t, VarT):
        return True
    if isinstance(t, ListT):
        return has_vars(t.elem)
    if isinstance(t, DictT):
        return has_vars(t.key) or has_vars(t.value)
    if isinstance(t, ShapeT):
        return any(has_vars(f.type) for f in t.fields)
    if isinstance(t, FnT):
        return any(has_vars(p) for p in t.params) or has_vars(t.ret)
    if isinstance(t, UnionT):
        return any(has_vars(o) for o in t.options)
    if isinstance(t, (NamedT, AliasT)):
        return any(has_vars(a) for a in t.args)
    return False


def unalias(t: Ty | None) -> Ty | None:
    """Follow aliases to the underlying type (None when it cannot be resolved)."""
    depth = 0
    while isinstance(t, AliasT) and depth < 50:
        t = t.target
        depth += 1
    return None if isinstance(t, AliasT) else t


def widen(t: Ty | None) -> Ty | None:
    """``t`` without literal values (for display and generic bindings)."""
    if isinstance(t, Prim) and t.has_lit:
        return Prim(t.name)
    if isinstance(t, LitT):
        return Prim(lit_base(t.value))
    return t


def kind(t: Ty | None) -> str | None:
    """The runtime value kind a type guarantees, or None when it does not pin one down.

    Kinds: primitive names, ``list``, ``dict`` (shapes too), ``iter``, ``Generator``,
    ``Stream``, ``Result``, ``struct:Name``, ``enum:Name``, ``closure``.
    """
    t = unalias(t)
    if isinstance(t, Prim):
        return t.name
    if isinstance(t, LitT):
        b = lit_base(t.value)
        return None if b == "?" else b
    if isinstance(t, ListT):
        return "list"
    if isinstance(t, (DictT, ShapeT)):
        return "dict"
    if isinstance(t, FnT):
        return "closure"
    if isinstance(t, NamedT):
        if t.kind == "builtin":
            return t.name
        if t.kind in ("struct", "enum"):
            return f"{t.kind}:{t.name}"
    return None


# ---------------------------------------------------------------- checks


def assignable(src: Ty | None, dst: Ty | None, fresh: bool = True) -> bool:
    """False only when a value of type ``src`` can certainly not be stored in ``dst``.

    ``fresh`` is true when ``src`` describes a new value (a literal): list and dict element
    types are then compared covariantly; a value read from a variable must match them exactly
    (lists are mutable, so ``list<int>`` does not flow into ``list<float>``).
    """
    d = unalias(dst)
    s = unalias(src)
    if d is None or s is None:
        return True
    if isinstance(d, Gradual):
        return d.name != "never" or isinstance(s, Gradual)
    if isinstance(d, VarT) or isinstance(s, VarT):
        return True
    if isinstance(s, Gradual):
        return s.name != "unknown"
    if isinstance(d, NamedT) and d.kind in ("opaque", "interface"):
        return True
    if isinstance(s, NamedT) and s.kind in ("opaque", "interface"):
        return True
    if isinstance(d, UnionT):
        return any(assignable(s, o, fresh) for o in d.options)
    if isinstance(s, UnionT):
        return True
    ks = kind(s)
    if isinstance(d, LitT):
        if isinstance(s, LitT):
            return _same_lit(s.value, d.value)
        if isinstance(s, Prim) and s.has_lit:
            return _same_lit(s.lit, d.value)
        return ks is None or ks == "nil" or ks == lit_base(d.value)
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
    if isinstance(d, ListT) and isinstance(s, ListT):
        return _elem_ok(s.elem, d.elem, fresh)
    if isinstance(d, DictT):
        if isinstance(s, DictT):
            return _elem_ok(s.value, d.value, fresh)
        if isinstance(s, ShapeT):
            return all(assignable(f.type, d.value, fresh) for f in s.fields)
    if isinstance(d, ShapeT) and isinstance(s, ShapeT):
        for f in d.fields:
            got = s.get(f.name)
            if got is None:
                if not f.optional:
                    return False
            elif not assignable(got.type, f.type, fresh):
                return False
        return True
    if isinstance(d, NamedT) and isinstance(s, NamedT):
        return all(assignable(a, b, fresh) for a, b in zip(s.args, d.args))
    return True


def _elem_ok(s: Ty | None, d: Ty | None, fresh: bool) -> bool:
    if fresh:
        return assignable(s, d, True)
    s2 = widen(unalias(s))
    d2 = unalias(d)
    if isinstance(s2, Prim) and isinstance(d2, Prim):
        return s2.name == d2.name
    return assignable(s, d, False)


def _same_lit(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def same(a: Ty | None, b: Ty | None) -> bool | None:
    """Whether two types are the same: True/False when certain, None when unknown."""
    a = widen(unalias(a))
    b = widen(unalias(b))
    if a is None or b is None or isinstance(a, (Gradual, VarT)) or isinstance(b, (Gradual, VarT)):
        return None
    ka = kind(a)
    kb = kind(b)
    if ka is None or kb is None:
        return None
    if ka != kb:
        if {ka.split(":")[0], kb.split(":")[0]} == {"struct", "dict"}:
            return None  # a struct instance and a dict can stand for one another
        return False
    if isinstance(a, Prim) and isinstance(b, Prim):
        return True
    return None
