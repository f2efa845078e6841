"""Schemas: validation, conversion to/from JSON Schema, and Harn types as schemas.

A *schema* is a Harn dict in the canonical form below (JSON-Schema-like, snake_case keys);
:func:`canonicalize` also accepts JSON Schema / OpenAPI spellings (``object``, ``integer``,
``minLength``, ``additionalProperties``, ``oneOf``, ``anyOf``, ``allOf``, type lists).

======================  ==================================================================
key                     meaning
======================  ==================================================================
``type``                ``int float string bool nil list dict set closure bytes any ...``
``properties``          dict of field name -> schema (for dicts and structs)
``required``            list of field names that must be present
``additional_properties``  ``false`` (no other keys) or a schema for the other values
``items``               schema of list/set elements
``union`` / ``all_of``  lists of schemas (any one / every one must match)
``enum`` / ``const``    allowed values
``min`` ``max``         numeric bounds; ``min_length`` ``max_length`` for strings;
                        ``min_items`` ``max_items`` ``unique_items`` for lists
``pattern``             Rust-dialect regex a string must contain a match of
``nullable``            nil is accepted as well
``default``             value filled in for a missing property by ``schema_parse``
``$ref``                JSON pointer (``#/definitions/X``) into the root schema
======================  ==================================================================

Harn types map to schemas through :func:`type_to_schema` (used by ``schema_of(T)``,
``schema_is(v, T)`` and the evaluator's typed-parameter checks, see :func:`check_param`).
Validation messages follow the reference: ``at <path>: <message>`` where the path is
``root``, ``a.b`` or ``items[2]``. Spec language.md 4.10 (schema helpers), 3.11 (typed
parameters).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, runtime_error, type_error
from harnpy.runtime.ops import values_equal
from harnpy.runtime.values import (
    BoundMethod,
    Builtin,
    Closure,
    HSet,
    StructType,
    StructValue,
    err,
    ok,
    type_name,
)
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.registry import builtin
from harnpy.syntax import ast

Schema = dict[str, Any]

# ------------------------------------------------------------------ canonical form

_TYPE_ALIASES = {
    "object": "dict",
    "array": "list",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "nil",
    "str": "string",
    "map": "dict",
}

_KEY_ALIASES = {
    "minimum": "min",
    "maximum": "max",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minItems": "min_items",
    "maxItems": "max_items",
    "uniqueItems": "unique_items",
    "additionalProperties": "additional_properties",
    "allOf": "all_of",
    "oneOf": "union",
    "anyOf": "union",
}


def canonicalize(schema: Any) -> Schema:
    """The canonical form of ``schema`` (a new dict; nested schemas converted too).

    Raises ``ValueError("schema must be a dict")`` for non-dict schemas.
    """
    if type(schema) is not dict:
        raise ValueError("schema must be a dict")
    out: Schema = {}
    for key, value in schema.items():
        key = _KEY_ALIASES.get(key) or key
        if key in ("properties", "definitions", "$defs"):
            if type(value) is dict:
                out[key] = {k: canonicalize(v) for k, v in value.items()}
        elif key == "items":
            if type(value) is dict:
                out[key] = canonicalize(value)
        elif key == "additional_properties":
            if type(value) is bool:
                out[key] = value
            elif type(value) is dict:
                out[key] = canonicalize(value)
        elif key in ("union", "all_of"):
            if type(value) is not list:
                raise ValueError("schema union/all_of must be a list")
            out[key] = [canonicalize(v) for v in value]
        elif key == "required":
            if type(value) is list:
                out[key] = [text(k) for k in value]
        elif key == "type":
            if type(value) is list:
                out["union"] = [{"type": _TYPE_ALIASES.get(text(t), text(t))} for t in value]
            elif type(value) is str:
                out["type"] = _TYPE_ALIASES.get(value, value)
        elif key == "unique_items" or key == "nullable":
            if value is True:
                out[key] = True
        elif key == "components" and type(value) is dict:
            comps = dict(value)
            if type(comps.get("schemas")) is dict:
                comps["schemas"] = {k: canonicalize(v) for k, v in comps["schemas"].items()}
            out[key] = comps
        else:
            out[key] = value
    if out.get("x-harn-type") == "set":
        out["type"] = "set"
    # JSON Schema's `"type": ["string", "null"]` means nullable string.
    branches = out.get("union")
    if "type" not in out and type(branches) is list and len(branches) == 2:
        nil_ix = [i for i, b in enumerate(branches) if b == {"type": "nil"}]
        if len(nil_ix) == 1 and type(schema.get("type")) is list:
            other = branches[1 - nil_ix[0]]
            del out["union"]
            out.update(other)
            out["nullable"] = True
    return out


# ------------------------------------------------------------------ validation


def _label(path: str) -> str:
    return path or "root"


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]" if path else f"[{i}]"


def actual_type(v: Any) -> str:
    """Type name used in schema messages (structs count as ``dict``)."""
    return "dict" if type(v) is StructValue else type_name(v)


def matches_type(
    v: Any, expected: str, numeric_compat: bool = False, int_as_float: bool = False
) -> bool:
    """Whether ``v`` has schema type ``expected`` (``dict`` accepts structs; with
    ``numeric_compat`` ints pass as floats and floats as ints; with ``int_as_float`` only
    ints pass as floats, the typed-parameter rule of spec 3.11)."""
    if expected == "any":
        return True
    t = type(v)
    if expected == "dict":
        return t is dict or t is StructValue
    if expected == "int":
        return t is int or (numeric_compat and t is float)
    if expected == "float":
        return t is float or ((numeric_compat or int_as_float) and t is int)
    if expected == "struct":
        return t is StructValue
    if expected == "closure":
        return t is Closure or t is Builtin or t is BoundMethod or t is StructType
    return actual_type(v) == expected


def is_object_like(schema: Schema) -> bool:
    """True for schemas describing dicts (type dict, or properties/required present)."""
    return (
        schema.get("type") == "dict"
        or "properties" in schema
        or "required" in schema
        or "additional_properties" in schema
    )


def expected_label(schema: Schema) -> str:
    """Short description of what a schema accepts (``dict``, ``int``, ``string|int``)."""
    if is_object_like(schema):
        return "dict"
    t = schema.get("type")
    if type(t) is str:
        return t
    branches = schema.get("union")
    if type(branches) is list:
        labels = [expected_label(b) for b in branches if type(b) is dict]
        if labels:
            return "|".join(labels)
    return "value"


Issue = tuple[str, str]  # (path label, message)


class _Validator:
    """One validation run: root schema (for ``$ref``), options, and the ``$ref`` stack."""

    def __init__(
        self, root: Schema, apply_defaults: bool, numeric_compat: bool, int_as_float: bool = False
    ) -> None:
        self.root = root
        self.apply_defaults = apply_defaults
        self.numeric_compat = numeric_compat
        self.int_as_float = int_as_float
        self.ref_stack: list[str] = []
        self.depth = 0

    def resolve_ref(self, pointer: str) -> Schema | None:
        if not pointer.startswith("#"):
            return None
        cur: Any = self.root
        stripped = pointer[1:].lstrip("/")
        if stripped:
            for seg in stripped.split("/"):
                seg = seg.replace("~1", "/").replace("~0", "~")
                if type(cur) is dict and seg in cur:
                    cur = cur[seg]
                elif type(cur) is list and seg.isdigit() and int(seg) < len(cur):
                    cur = cur[int(seg)]
                else:
                    return None
        return cur if type(cur) is dict else None

    def validate(self, value: Any, schema: Schema, path: str) -> tuple[Any, list[Issue]]:
        self.depth += 1
        try:
            if self.depth > 128:
                return value, [(_label(path), "schema nesting too deep")]
            return self._validate(value, schema, path)
        finally:
            self.depth -= 1

    def _validate(self, value: Any, schema: Schema, path: str) -> tuple[Any, list[Issue]]:
        ref = schema.get("$ref")
        if type(ref) is str:
            target = self.resolve_ref(ref)
            if target is None:
                return value, [(_label(path), f"unresolved schema reference '{ref}'")]
            if ref in self.ref_stack:
                cycle = " -> ".join([*self.ref_stack[self.ref_stack.index(ref) :], ref])
                return value, [(_label(path), f"cyclic schema reference: {cycle}")]
            self.ref_stack.append(ref)
            try:
                return self.validate(value, target, path)
            finally:
                self.ref_stack.pop()

        if value is None and schema.get("nullable") is True:
            return None, []
        if "const" in schema and not values_equal(value, schema["const"]):
            msg = f"expected constant {display(schema['const'])}, got {display(value)}"
            return value, [(_label(path), msg)]

        issues: list[Issue] = []
        normalized = value
        all_of = schema.get("all_of")
        if type(all_of) is list:
            for branch in all_of:
                if type(branch) is dict:
                    normalized, more = self.validate(normalized, branch, path)
                    issues.extend(more)
        union = schema.get("union")
        if type(union) is list:
            for branch in union:
                if type(branch) is dict:
                    candidate, more = self.validate(value, branch, path)
                    if not more:
                        normalized = candidate
                        break
            else:
                issues.append((_label(path), "value did not match any union branch"))

        expected = schema.get("type")
        if type(expected) is str and not matches_type(
            value, expected, self.numeric_compat, self.int_as_float
        ):
            msg = f"expected type '{expected}', got '{actual_type(value)}'"
            issues.append((_label(path), msg))
            return normalized, issues

        t = type(normalized)
        if t is dict or t is StructValue:
            normalized, more = self._object(normalized, schema, path)
            issues.extend(more)
        elif t is list or t is HSet:
            normalized, more = self._items(normalized, schema, path)
            issues.extend(more)
        elif t is str:
            issues.extend(self._string(normalized, schema, path))
        elif (t is int or t is float) and t is not bool:
            issues.extend(self._number(normalized, schema, path))
        self._enum(normalized, schema, path, issues)
        return normalized, issues

    def _object(self, value: Any, schema: Schema, path: str) -> tuple[Any, list[Issue]]:
        fields: dict[str, Any] = value.fields if type(value) is StructValue else value
        issues: list[Issue] = []
        merged = dict(fields)
        props = schema.get("properties")
        props = props if type(props) is dict else {}
        required = schema.get("required")
        if type(required) is list:
            for key in required:
                key = text(key)
                if key in fields:
                    continue
                prop = props.get(key)
                if self.apply_defaults and type(prop) is dict and "default" in prop:
                    continue
                issues.append((_label(path), f"missing required key '{key}'"))
        for key, prop in props.items():
            if type(prop) is not dict:
                continue
            if key in fields:
                child, more = self.validate(fields[key], prop, _child(path, key))
            elif self.apply_defaults and "default" in prop:
                child, more = self.validate(prop["default"], prop, _child(path, key))
            else:
                continue
            if more:
                issues.extend(more)
            else:
                merged[key] = child
        extra = schema.get("additional_properties")
        if extra is False:
            for key in fields:
                if key not in props:
                    issues.append((_label(path), f"unexpected key '{key}'"))
        elif type(extra) is dict:
            for key, item in fields.items():
                if key in props:
                    continue
                child, more = self.validate(item, extra, _child(path, key))
                if more:
                    issues.extend(more)
                else:
                    merged[key] = child
        if type(value) is StructValue:
            return StructValue(value.name, merged), issues
        return merged, issues

    def _items(self, value: Any, schema: Schema, path: str) -> tuple[Any, list[Issue]]:
        items: list[Any] = value.items if type(value) is HSet else value
        issues: list[Issue] = []
        lo, hi = schema.get("min_items"), schema.get("max_items")
        if type(lo) is int and len(items) < lo:
            issues.append((_label(path), f"expected at least {lo} items, got {len(items)}"))
        if type(hi) is int and len(items) > hi:
            issues.append((_label(path), f"expected at most {hi} items, got {len(items)}"))
        item_schema = schema.get("items")
        out: Any = value
        if type(item_schema) is dict:
            normalized_items = []
            for i, item in enumerate(items):
                child, more = self.validate(item, item_schema, _index(path, i))
                if more:
                    issues.extend(more)
                else:
                    normalized_items.append(child)
            out = HSet.from_unique(normalized_items) if type(value) is HSet else normalized_items
        if schema.get("unique_items") is True:
            seq = out.items if type(out) is HSet else out
            if any(values_equal(a, b) for i, a in enumerate(seq) for b in seq[i + 1 :]):
                issues.append((_label(path), "expected items to be unique"))
        return out, issues

    def _string(self, value: str, schema: Schema, path: str) -> list[Issue]:
        issues: list[Issue] = []
        n = len(value)
        lo, hi = schema.get("min_length"), schema.get("max_length")
        if type(lo) is int and n < lo:
            issues.append((_label(path), f"expected length >= {lo}, got {n}"))
        if type(hi) is int and n > hi:
            issues.append((_label(path), f"expected length <= {hi}, got {n}"))
        pattern = schema.get("pattern")
        if type(pattern) is str:
            from harnpy.stdlib.regexlib import compile_pattern

            try:
                matched = compile_pattern(pattern).search(value) is not None
            except HarnError as e:
                issues.append((_label(path), f"invalid regex pattern '{pattern}': {e}"))
            else:
                if not matched:
                    msg = f"value does not match pattern '{pattern}'"
                    issues.append((_label(path), msg))
        return issues

    def _number(self, value: float, schema: Schema, path: str) -> list[Issue]:
        issues: list[Issue] = []
        lo, hi = schema.get("min"), schema.get("max")
        if isinstance(lo, (int, float)) and type(lo) is not bool and value < lo:
            issues.append((_label(path), f"expected value >= {_num(lo)}, got {_num(value)}"))
        if isinstance(hi, (int, float)) and type(hi) is not bool and value > hi:
            issues.append((_label(path), f"expected value <= {_num(hi)}, got {_num(value)}"))
        return issues

    def _enum(self, value: Any, schema: Schema, path: str, issues: list[Issue]) -> None:
        allowed = schema.get("enum")
        if type(allowed) is list and not any(values_equal(c, value) for c in allowed):
            shown = ", ".join(display(c) for c in allowed)
            issues.append((_label(path), f"value must be one of [{shown}]"))


def _num(x: float) -> str:
    return str(int(x)) if type(x) is float and x == int(x) else display(x)


def validate(
    value: Any,
    schema: Any,
    apply_defaults: bool = False,
    numeric_compat: bool = False,
    int_as_float: bool = False,
) -> tuple[Any, list[Issue]]:
    """Validate ``value`` against ``schema`` (any accepted spelling).

    Returns ``(normalized_value, issues)`` where ``issues`` lists ``(path, message)``
    pairs (empty when valid) and the normalized value has defaults filled in when
    ``apply_defaults``. Number rules as in :func:`matches_type`. Raises ``ValueError`` for
    a malformed schema.
    """
    canon = canonicalize(schema)
    return _Validator(canon, apply_defaults, numeric_compat, int_as_float).validate(
        value, canon, ""
    )


def render_issue(issue: Issue) -> str:
    """``at <path>: <message>``."""
    return f"at {issue[0]}: {issue[1]}"


def _result(value: Any, schema: Any, apply_defaults: bool) -> Any:
    try:
        normalized, issues = validate(value, schema, apply_defaults)
    except ValueError as e:
        issues, normalized = [("root", str(e))], value
    if not issues:
        return ok(normalized)
    messages = [render_issue(i) for i in issues]
    payload = {
        "message": messages[0],
        "errors": messages,
        "issues": [{"path": p, "message": m, "code": "schema.validation"} for p, m in issues],
        "value": normalized,
    }
    return err(payload)


def _expect(value: Any, schema: Any, apply_defaults: bool) -> Any:
    try:
        normalized, issues = validate(value, schema, apply_defaults)
    except ValueError as e:
        raise fail(str(e)) from None
    if issues:
        raise fail("; ".join(render_issue(i) for i in issues))
    return normalized


# ------------------------------------------------------------------ typed parameters


def param_error(value: Any, param: str, schema: Schema) -> str | None:
    """The first reason ``value`` does not fit parameter ``param``'s canonical ``schema``
    (ints are accepted for floats), or None. Messages follow spec 3.11, e.g.
    ``parameter 'u': missing field 'age' (int)`` or ``parameter 'a' expected int, got
    string (hello)``."""
    return _ParamChecker(schema).check(value, schema, param)


def check_param(value: Any, param: str, schema: Schema) -> None:
    """Raise the runtime error for a typed-parameter mismatch (spec 3.11): a
    ``Type error: ...`` for dict/shape schemas, ``Runtime error: TypeError: ...`` for
    others. Does nothing when ``value`` fits."""
    msg = param_error(value, param, schema)
    if msg is None:
        return
    if is_object_like(schema):
        raise type_error(msg)
    raise runtime_error(f"TypeError: {msg}")


class _ParamChecker:
    def __init__(self, root: Schema) -> None:
        self.root = root
        # Spec 3.11: an int is accepted for a float, never a float for an int.
        self.validator = _Validator(root, False, False, int_as_float=True)

    def check(self, value: Any, schema: Schema, param: str) -> str | None:
        ref = schema.get("$ref")
        if type(ref) is str:
            target = self.validator.resolve_ref(ref)
            if target is None:
                return f"parameter '{param}': unresolved schema reference '{ref}'"
            if ref in self.validator.ref_stack:
                return None
            self.validator.ref_stack.append(ref)
            try:
                return self.check(value, target, param)
            finally:
                self.validator.ref_stack.pop()
        if value is None and schema.get("nullable") is True:
            return None
        all_of = schema.get("all_of")
        if type(all_of) is list:
            for branch in all_of:
                if type(branch) is dict:
                    msg = self.check(value, branch, param)
                    if msg:
                        return msg
            return None
        union = schema.get("union")
        if type(union) is list:
            for branch in union:
                if type(branch) is dict and self.check(value, branch, param) is None:
                    return None
            return (
                f"parameter '{param}' expected {expected_label(schema)}, "
                f"got {actual_type(value)} ({display(value)})"
            )
        if is_object_like(schema):
            t = type(value)
            if t is StructValue:
                return self.object(value.fields, schema, param)
            if t is dict:
                return self.object(value, schema, param)
            return f"parameter '{param}': expected dict or struct, got {type_name(value)}"
        expected = schema.get("type")
        if type(expected) is str and not matches_type(value, expected, int_as_float=True):
            return (
                f"parameter '{param}' expected {expected}, "
                f"got {actual_type(value)} ({display(value)})"
            )
        _, issues = self.validator.validate(value, schema, "root")
        if not issues:
            return None
        parts = []
        for path, message in issues:
            rendered = render_issue((path, message))
            parts.append(rendered[len("at root: ") :] if path == "root" else rendered)
        return f"parameter '{param}': " + "; ".join(parts)

    def field(self, key: str, item: Any, schema: Schema, param: str) -> str | None:
        if is_object_like(schema):
            if type(item) is dict or type(item) is StructValue:
                return self.check(item, schema, f"{param}.{key}")
            return (
                f"parameter '{param}': field '{key}' expected dict or struct, got {type_name(item)}"
            )
        expected = schema.get("type")
        if type(expected) is str and not matches_type(item, expected, int_as_float=True):
            return (
                f"parameter '{param}': field '{key}' expected {expected}, got {actual_type(item)}"
            )
        return self.check(item, schema, f"{param}.{key}")

    def object(self, fields: dict[str, Any], schema: Schema, param: str) -> str | None:
        props = schema.get("properties")
        props = props if type(props) is dict else {}
        required = schema.get("required")
        for key in required if type(required) is list else []:
            key = text(key)
            if key in fields:
                continue
            prop = props.get(key)
            expected = expected_label(prop) if type(prop) is dict else "value"
            missing = f"parameter '{param}': missing field '{key}' ({expected})"
            close = difflib.get_close_matches(key, [k for k in fields if k[:1] == key[:1]], 1)
            if close:
                missing += f", did you mean '{close[0]}'?"
            return missing
        for key in sorted(props):
            prop = props[key]
            if key in fields and type(prop) is dict:
                bad = self.field(key, fields[key], prop, param)
                if bad:
                    return bad
        extra = schema.get("additional_properties")
        if extra is False:
            for key in fields:
                if key not in props:
                    return f"parameter '{param}': unexpected field '{key}'"
        elif type(extra) is dict:
            for key in sorted(fields):
                if key not in props:
                    bad = self.field(key, fields[key], extra, param)
                    if bad:
                        return bad
        return None


# ------------------------------------------------------------------ Harn types -> schemas

_PRIMITIVES = {
    "int",
    "float",
    "string",
    "bool",
    "nil",
    "list",
    "dict",
    "set",
    "closure",
    "duration",
    "bytes",
    "range",
    "pair",
    "builtin",
    "channel",
    "atomic",
    "task_handle",
    "enum",
    "struct",
}
_RENAMED = {
    "unknown": "any",
    "Iter": "iter",
    "iter": "iter",
    "Generator": "generator",
    "generator": "generator",
    "Stream": "stream",
    "stream": "stream",
    "fn": "closure",
    "Result": "enum",
    "str": "string",
}

Resolver = Callable[[str], "Schema | None"]


def type_to_schema(t: ast.TypeExpr | None, resolve: Resolver | None = None) -> Schema:
    """The canonical schema of a Harn type expression (spec 2.11).

    * primitives -> ``{type: name}`` (``unknown``/``any``/missing type -> ``{type: any}``);
    * ``list<T>`` / ``[T]`` / ``set<T>`` -> ``{type, items}``;
      ``dict<K, V>`` -> ``{type: dict, additional_properties: schema(V)}``;
    * shapes ``{a: T, b?: U}`` -> ``{type: dict, properties, required}`` (declaration order);
    * literal types -> ``{type: base, enum: [value]}``; unions of literals sharing a base
      type merge into one ``enum``; ``T | nil`` -> schema(T) + ``nullable: true``; other
      unions -> ``{union: [...]}``;
    * ``fn(...) -> T`` -> ``{type: closure}``;
    * any other name (type alias, struct, enum, generic parameter) is passed to
      ``resolve(name)``, which returns its schema or None (then ``{type: any}``).

    ``resolve`` lets the evaluator expand ``type`` aliases (typically by calling
    ``type_to_schema`` on the alias body) and describe structs; it must guard against
    recursive aliases itself.
    """
    if t is None:
        return {"type": "any"}
    if isinstance(t, ast.TypeName):
        return _named(t, resolve)
    if isinstance(t, ast.TypeList):
        return {"type": "list", "items": type_to_schema(t.elem, resolve)}
    if isinstance(t, ast.TypeShape):
        props: Schema = {}
        required: list[str] = []
        for f in t.fields:
            props[f.name] = type_to_schema(f.type, resolve)
            if not f.optional:
                required.append(f.name)
        return {"type": "dict", "properties": props, "required": required}
    if isinstance(t, ast.TypeFn):
        return {"type": "closure"}
    if isinstance(t, ast.TypeLiteral):
        return _literal(t)
    if isinstance(t, ast.TypeUnion):
        return _union(t, resolve)
    return {"type": "any"}


def _named(t: ast.TypeName, resolve: Resolver | None) -> Schema:
    name = _RENAMED.get(t.name, t.name)
    args = t.args
    if name in ("list", "List") and args:
        return {"type": "list", "items": type_to_schema(args[0], resolve)}
    if name in ("set", "Set") and args:
        return {"type": "set", "items": type_to_schema(args[0], resolve)}
    if name in ("dict", "Dict", "map") and args:
        value_schema = type_to_schema(args[-1], resolve)
        if value_schema == {"type": "any"}:
            return {"type": "dict"}
        return {"type": "dict", "additional_properties": value_schema}
    if name == "any":
        return {"type": "any"}
    if name == "never":
        return {"type": "never"}
    if name in _PRIMITIVES or name in ("iter", "generator", "stream", "closure"):
        return {"type": name}
    if resolve is not None:
        found = resolve(t.name)
        if found is not None:
            return found
    return {"type": "any"}


def _literal_value(t: ast.TypeLiteral) -> tuple[str, Any]:
    """(base type, value) of a literal type."""
    if t.keyword == "nil":
        return "nil", None
    if t.keyword in ("true", "false"):
        return "bool", t.keyword == "true"
    if t.keyword == "never":
        return "never", None
    v = t.value
    if type(v) is bool:
        return "bool", v
    if type(v) is int:
        return "int", v
    if type(v) is float:
        return "float", v
    return "string", v


def _literal(t: ast.TypeLiteral) -> Schema:
    base, value = _literal_value(t)
    if base in ("nil", "never"):
        return {"type": base}
    return {"type": base, "enum": [value]}


def _is_nil(t: Any) -> bool:
    if isinstance(t, ast.TypeName):
        return t.name == "nil"
    return isinstance(t, ast.TypeLiteral) and t.keyword == "nil"


def _union(t: ast.TypeUnion, resolve: Resolver | None) -> Schema:
    options = list(t.options)
    non_nil = [o for o in options if not _is_nil(o)]
    nullable = len(non_nil) < len(options)
    if non_nil and all(isinstance(o, ast.TypeLiteral) for o in non_nil):
        pairs = [_literal_value(o) for o in non_nil if isinstance(o, ast.TypeLiteral)]
        bases = {b for b, _ in pairs}
        if len(bases) == 1 and "never" not in bases:
            schema: Schema = {"type": bases.pop(), "enum": [v for _, v in pairs]}
            if nullable:
                schema["nullable"] = True
            return schema
    if nullable and len(non_nil) == 1:
        schema = dict(type_to_schema(non_nil[0], resolve))
        schema["nullable"] = True
        return schema
    return {"union": [type_to_schema(o, resolve) for o in options]}


# ------------------------------------------------------------------ JSON Schema export

_JSON_TYPES = {
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "dict": "object",
    "nil": "null",
}
_PASSTHROUGH = (
    "title",
    "description",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
    "example",
    "examples",
    "x-harn-type",
)


def to_json_schema(schema: Schema, openapi: bool = False) -> Schema:
    """Canonical schema -> JSON Schema (or OpenAPI 3.0 style with ``nullable`` when
    ``openapi``)."""
    out: Schema = {}
    if type(schema.get("$ref")) is str:
        out["$ref"] = schema["$ref"]
    t = schema.get("type")
    if type(t) is str:
        if t == "set":
            out.update({"type": "array", "uniqueItems": True, "x-harn-type": "set"})
        elif t in ("closure", "builtin"):
            out.update({"type": "string", "x-harn-type": t})
        elif t != "any":
            out["type"] = _JSON_TYPES.get(t, t)
    for key, json_key in (
        ("min", "minimum"),
        ("max", "maximum"),
        ("min_length", "minLength"),
        ("max_length", "maxLength"),
        ("min_items", "minItems"),
        ("max_items", "maxItems"),
    ):
        if key in schema:
            out[json_key] = schema[key]
    if schema.get("unique_items") is True:
        out["uniqueItems"] = True
    for key in ("pattern", "default", "const", "enum"):
        if key in schema:
            out[key] = schema[key]
    if type(schema.get("items")) is dict:
        out["items"] = to_json_schema(schema["items"], openapi)
    if type(schema.get("properties")) is dict:
        out["properties"] = {k: to_json_schema(v, openapi) for k, v in schema["properties"].items()}
    if type(schema.get("required")) is list:
        out["required"] = [text(k) for k in schema["required"]]
    extra = schema.get("additional_properties")
    if type(extra) is bool:
        out["additionalProperties"] = extra
    elif type(extra) is dict:
        out["additionalProperties"] = to_json_schema(extra, openapi)
    if type(schema.get("union")) is list:
        branches = [to_json_schema(b, openapi) for b in schema["union"]]
        if openapi and len(branches) == 2:
            nulls = [i for i, b in enumerate(branches) if b.get("type") == "null"]
            if len(nulls) == 1:
                other = dict(branches[1 - nulls[0]])
                other["nullable"] = True
                return other
        out["oneOf"] = branches
    if type(schema.get("all_of")) is list:
        out["allOf"] = [to_json_schema(b, openapi) for b in schema["all_of"]]
    if schema.get("nullable") is True:
        if openapi:
            out["nullable"] = True
        elif "type" in out:
            out["type"] = [out["type"], "null"]
    for container in ("definitions", "$defs"):
        if type(schema.get(container)) is dict:
            out[container] = {k: to_json_schema(v, openapi) for k, v in schema[container].items()}
    comps = schema.get("components")
    if type(comps) is dict:
        new_comps = dict(comps)
        if type(comps.get("schemas")) is dict:
            new_comps["schemas"] = {
                k: to_json_schema(v, openapi) for k, v in comps["schemas"].items()
            }
        out["components"] = new_comps
    for key in _PASSTHROUGH:
        if key in schema:
            out[key] = schema[key]
    return out


# ------------------------------------------------------------------ builtins


def _canon(name: str, schema: Any) -> Schema:
    try:
        return canonicalize(schema)
    except ValueError as e:
        raise fail(f"{name}: {e}") from None


@builtin()
def json_validate(thread: Any, value: Any = None, schema: Any = None) -> bool:
    """``json_validate(v, schema)``: true when ``v`` matches; otherwise throws the
    violations joined by ``; `` (``at root: missing required key 'age'``)."""
    _expect(value, schema, False)
    return True


@builtin()
def schema_check(thread: Any, value: Any = None, schema: Any = None) -> Any:
    """``schema_check(v, schema)``: ``Ok(v)`` or ``Err({message, errors, issues, value})``
    (``errors``: rendered messages; ``issues``: ``{path, message, code}`` dicts)."""
    return _result(value, schema, False)


@builtin()
def schema_parse(thread: Any, value: Any = None, schema: Any = None) -> Any:
    """``schema_parse(v, schema)``: like ``schema_check`` but fills in ``default`` values
    of missing properties."""
    return _result(value, schema, True)


@builtin()
def schema_is(thread: Any, value: Any = None, schema: Any = None) -> bool:
    """``schema_is(v, schema)``: whether ``v`` matches (throws for a malformed schema)."""
    try:
        return not validate(value, schema)[1]
    except ValueError as e:
        raise fail(str(e)) from None


@builtin()
def schema_expect(
    thread: Any, value: Any = None, schema: Any = None, apply_defaults: Any = None
) -> Any:
    """``schema_expect(v, schema, apply_defaults?)``: the (normalized) value, or throws
    the violations joined by ``; ``."""
    return _expect(value, schema, apply_defaults is True)


@builtin()
def schema_of(thread: Any, t: Any = None) -> Schema:
    """``schema_of(T)``: the schema of a type. The evaluator passes the type's schema dict
    (see :func:`type_to_schema`); a type-name string gives ``{type: name}``."""
    if type(t) is dict:
        return _canon("schema_of", t)
    if type(t) is str:
        return {"type": _TYPE_ALIASES.get(t, _RENAMED.get(t, t))}
    raise fail("schema_of: expected a type")


@builtin()
def schema_to_json_schema(thread: Any, schema: Any = None) -> Schema:
    """``schema_to_json_schema(s)``: JSON Schema (``object``, ``integer``, ``minLength``,
    ``oneOf``, nullable as a type list)."""
    return to_json_schema(_canon("schema_to_json_schema", schema))


@builtin(aliases=("schema_to_openapi",))
def schema_openapi(thread: Any, schema: Any = None) -> Schema:
    """``schema_openapi(s)``: OpenAPI 3.0 schema (like JSON Schema, ``nullable: true``)."""
    return to_json_schema(_canon("schema_openapi", schema), openapi=True)


@builtin(aliases=("schema_from_openapi",))
def schema_from_json_schema(thread: Any, schema: Any = None) -> Schema:
    """``schema_from_json_schema(js)``: canonical schema from JSON Schema / OpenAPI."""
    return _canon("schema_from_json_schema", schema)


def _keys(name: str, keys: Any) -> list[str]:
    if type(keys) is HSet:
        keys = keys.items
    if type(keys) is not list:
        raise fail(f"{name}: expected a list of keys")
    return [text(k) for k in keys]


@builtin()
def schema_pick(thread: Any, schema: Any = None, keys: Any = None) -> Schema:
    """``schema_pick(s, keys)``: ``s`` restricted to the listed properties."""
    s = _canon("schema_pick", schema)
    wanted = _keys("schema_pick", keys)
    if type(s.get("properties")) is dict:
        s["properties"] = {k: v for k, v in s["properties"].items() if k in wanted}
    if type(s.get("required")) is list:
        s["required"] = [k for k in s["required"] if k in wanted]
    return s


@builtin()
def schema_omit(thread: Any, schema: Any = None, keys: Any = None) -> Schema:
    """``schema_omit(s, keys)``: ``s`` without the listed properties."""
    s = _canon("schema_omit", schema)
    dropped = _keys("schema_omit", keys)
    if type(s.get("properties")) is dict:
        s["properties"] = {k: v for k, v in s["properties"].items() if k not in dropped}
    if type(s.get("required")) is list:
        s["required"] = [k for k in s["required"] if k not in dropped]
    return s


def _partial(s: Schema) -> Schema:
    out = dict(s)
    out.pop("required", None)
    if type(s.get("properties")) is dict:
        out["properties"] = {k: _partial(v) for k, v in s["properties"].items()}
    for key in ("union", "all_of"):
        if type(s.get(key)) is list:
            out[key] = [_partial(b) if type(b) is dict else b for b in s[key]]
    for key in ("items", "additional_properties"):
        if type(s.get(key)) is dict:
            out[key] = _partial(s[key])
    return out


@builtin()
def schema_partial(thread: Any, schema: Any = None) -> Schema:
    """``schema_partial(s)``: ``s`` with no required properties, recursively."""
    return _partial(_canon("schema_partial", schema))


@builtin()
def schema_extend(thread: Any, base: Any = None, overrides: Any = None) -> Schema:
    """``schema_extend(base, overrides)``: shallow merge, ``overrides`` winning."""
    out = _canon("schema_extend", base)
    out.update(_canon("schema_extend", overrides))
    return out


@builtin()
def schema_object(thread: Any, properties: Any = None, options: Any = None) -> Schema:
    """``schema_object(props, opts?)``: a dict schema. Every property is required unless
    its schema has a ``default``, ``optional: true`` or ``nullable: true``; ``opts`` may
    set ``additional_properties``, ``required`` (overrides the computed list), ``title``,
    ``description``."""
    if type(properties) is not dict:
        raise fail("schema_object: expected a dict of property schemas")
    props: Schema = {}
    required: list[str] = []
    for key, prop in properties.items():
        p = _canon("schema_object", prop)
        optional = p.pop("optional", None) is True
        if not (optional or "default" in p or p.get("nullable") is True):
            required.append(key)
        props[key] = p
    out: Schema = {"type": "dict", "properties": props, "required": required}
    if type(options) is dict:
        for key, value in options.items():
            key = _KEY_ALIASES.get(key) or key
            if key == "required":
                out["required"] = _keys("schema_object", value)
            else:
                out[key] = value
    return canonicalize(out)


@builtin()
def schema_field(thread: Any, schema: Any = None, options: Any = None) -> Schema:
    """``schema_field(s, opts?)``: property schema ``s`` with ``opts`` merged in
    (``description``, ``default``, ``optional: true``; ``required: false`` means optional)."""
    out = _canon("schema_field", schema)
    if type(options) is dict:
        opts = dict(options)
        required = opts.pop("required", None)
        if type(required) is bool:
            opts["optional"] = not required
        out.update(opts)
    return out


@builtin()
def schema_default(thread: Any, schema: Any = None, value: Any = None) -> Schema:
    """``schema_default(s, v)``: ``s`` with ``default: v`` (so the property is optional
    and ``schema_parse`` fills it in)."""
    out = _canon("schema_default", schema)
    out["default"] = value
    return out


@builtin()
def schema_optional(thread: Any, schema: Any = None) -> Schema:
    """``schema_optional(s)``: ``s`` marked optional for ``schema_object``."""
    out = _canon("schema_optional", schema)
    out["optional"] = True
    return out


@builtin()
def schema_nullable(thread: Any, schema: Any = None) -> Schema:
    """``schema_nullable(s)``: ``s`` that also accepts nil."""
    out = _canon("schema_nullable", schema)
    out["nullable"] = True
    return out


def _simple(type_name_: str) -> Any:
    def fn(thread: Any, options: Any = None) -> Schema:
        out: Schema = {"type": type_name_}
        if type(options) is dict:
            out.update(canonicalize(options))
            out["type"] = type_name_
        return out

    fn.__doc__ = f"``schema_{type_name_}(opts?)``: ``{{type: {type_name_}}}`` plus ``opts``."
    return fn


for _t in ("string", "int", "float", "bool", "any", "nil"):
    builtin(f"schema_{_t}")(_simple(_t))


@builtin()
def schema_list(thread: Any, items: Any = None, options: Any = None) -> Schema:
    """``schema_list(item_schema?, opts?)``: a list schema."""
    out: Schema = {"type": "list"}
    if items is not None:
        out["items"] = _canon("schema_list", items)
    if type(options) is dict:
        out.update(canonicalize(options))
    return out


@builtin()
def schema_dict(thread: Any, values: Any = None) -> Schema:
    """``schema_dict(value_schema?)``: a dict schema whose values all match."""
    out: Schema = {"type": "dict"}
    if values is not None:
        out["additional_properties"] = _canon("schema_dict", values)
    return out


@builtin()
def schema_enum(thread: Any, values: Any = None) -> Schema:
    """``schema_enum(values)``: accepts exactly the listed values (``type`` inferred when
    they share one)."""
    if type(values) is not list:
        raise fail("schema_enum: expected a list of values")
    out: Schema = {"enum": list(values)}
    kinds = {type_name(v) for v in values}
    if len(kinds) == 1:
        out["type"] = kinds.pop()
    return out


@builtin()
def schema_union(thread: Any, *branches: Any) -> Schema:
    """``schema_union(a, b, ...)`` or ``schema_union([a, b])``: any branch may match."""
    items = list(branches[0]) if len(branches) == 1 and type(branches[0]) is list else branches
    return {"union": [_canon("schema_union", b) for b in items]}
