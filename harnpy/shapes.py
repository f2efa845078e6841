"""Validated data shapes: attrs classes built from plain JSON-like data by one cattrs converter.

Every record that crosses a boundary (a snapshot read from disk, an LLM request built from
Harn options, a Suspension handed back to a script, a trigger manifest) is an attrs class
declared with :func:`shape` and checked by :func:`structure`. attrs and cattrs are used rather
than pydantic because they cost almost nothing to import and to declare: a cold
``harnpy run --resume`` validates several of these shapes, and its start-up budget is tight
(lifecycle issue: cold resume within 1.5x of bare library imports).

The converter is *strict*, unlike cattrs' defaults:

* ``str``, ``int`` and ``bool`` accept exactly that type (``True`` is not an int, ``"5"`` is
  not a number); ``float`` also accepts an int (converted).
* lists must be lists and dicts must be dicts (a string is not a list of characters);
* ``Literal[...]`` accepts only its listed values; unions of primitives and at most one
  container or class pass the value through when its type is a member.

Field options (``attrs.field(metadata=...)``): ``{"key": "_type"}`` reads and writes the field
under another JSON key; ``{"dump": False}`` leaves it out of :func:`unstructure` (secrets,
live callables). A class
declared ``@shape(forbid_extra=True)`` rejects unknown keys; otherwise they are ignored.

Errors: :func:`structure` raises :class:`ShapeError`, whose message is one line naming the
first problem by its JSON path (``field `timeout.duration_minutes`: must be greater than
0``), never cattrs' exception-group rendering.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.cols import is_mapping, is_sequence, list_structure_factory, mapping_structure_factory
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, override
from cattrs.strategies import configure_union_passthrough

T = TypeVar("T")

__all__ = [
    "ShapeError",
    "converter",
    "field_problem",
    "kind_name",
    "min_len",
    "greater_than",
    "at_least",
    "shape",
    "structure",
    "unstructure",
]

converter = cattrs.Converter(detailed_validation=True)
"""The one converter every shape is registered with (strict hooks, see the module docstring)."""

_KEYS: dict[str, str] = {}
"""Attribute name -> JSON key, for fields declared with another key (error paths use keys)."""


class ShapeError(ValueError):
    """Data that does not fit a shape.

    Attributes:
        problems: ``[(path, why), ...]`` in document order; ``path`` is dotted
            (``timeout.duration_minutes``, ``messages[2].role``) or ``""`` for the top level.

    ``str(err)`` is :meth:`describe`: the first problem, plus how many more there are.
    """

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems or [("", "invalid value")]
        super().__init__(self.describe())

    def describe(self) -> str:
        """``field `a.b`: why`` (or just ``why`` at the top level), ``(and N more)`` when
        there are several problems."""
        path, why = self.problems[0]
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return (f"field `{path}`: {why}" if path else why) + more


class _FieldProblem(ValueError):
    """Raised by field validators so the problem is reported at the field's path."""

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.why = why
        super().__init__(f"{name}: {why}")


def field_problem(name: str, why: str) -> ValueError:
    """An error for a validator to raise about field ``name`` (reported as ``field `name`:
    why`` by :func:`structure`)."""
    return _FieldProblem(name, why)


def greater_than(bound: int) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """attrs validator: the value (a number, or None) is greater than ``bound``."""

    def check(_inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and not value > bound:
            raise _FieldProblem(attr.name, f"must be greater than {bound}")

    return check


def at_least(bound: int) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """attrs validator: the value (a number, or None) is at least ``bound``."""

    def check(_inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and not value >= bound:
            raise _FieldProblem(attr.name, f"must be at least {bound}")

    return check


def positive() -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """attrs validator: the value (a number, or None) is finite and greater than 0."""

    def check(_inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and not 0 < value < float("inf"):
            raise _FieldProblem(attr.name, "must be a positive number")

    return check


def min_len(n: int) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """attrs validator: the value (a string or list, or None) has at least ``n`` items."""

    def check(_inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and len(value) < n:
            why = "must not be empty" if n == 1 else f"must have at least {n} items"
            raise _FieldProblem(attr.name, why)

    return check


# ------------------------------------------------------------------------ strict hooks


def kind_name(value: Any) -> str:
    """The JSON kind of ``value`` as error messages name it (``null``, ``int``, ``string``,
    ``list``, ``dict``...)."""
    if value is None:
        return "null"
    return {
        bool: "bool",
        int: "int",
        float: "float",
        str: "string",
        list: "list",
        dict: "dict",
    }.get(type(value), type(value).__name__)


def _exact(tp: type, name: str) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _t: Any) -> Any:
        if type(value) is tp:
            return value
        raise TypeError(f"expected {name}, got {kind_name(value)}")

    return hook


def _float(value: Any, _t: Any) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    raise TypeError(f"expected a number, got {kind_name(value)}")


def _strict(
    pytype: type, noun: str, base: Callable[[Any, Any], Any] | None
) -> Callable[[Any, Any], Any]:
    """A hook that accepts only values of exactly ``pytype`` (a list or a dict: no tuple, no
    other mapping), then structures them with ``base`` (None: kept as they are)."""

    def hook(value: Any, t: Any) -> Any:
        if type(value) is not pytype:
            raise TypeError(f"expected {noun}, got {kind_name(value)}")
        return value if base is None else base(value, t)

    return hook


def _strict_list(tp: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    args = typing.get_args(tp)
    plain = not args or args[0] is Any
    return _strict(list, "a list", None if plain else list_structure_factory(tp, conv))


def _strict_mapping(tp: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    args = typing.get_args(tp)
    # dict / dict[str, Any]: any JSON object, keys already strings
    plain = not args or (args[0] in (str, Any) and args[1] is Any)
    return _strict(dict, "a dict", None if plain else mapping_structure_factory(tp, conv))


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is typing.Literal


def _literal(tp: Any, _conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    allowed = typing.get_args(tp)
    shown = ", ".join(repr(a) for a in allowed)

    def hook(value: Any, _t: Any) -> Any:
        for a in allowed:
            if value == a and type(value) is type(a):
                return value
        raise ValueError(f"expected one of {shown}, got {value!r}")

    return hook


converter.register_structure_hook(str, _exact(str, "a string"))
converter.register_structure_hook(int, _exact(int, "an integer"))
converter.register_structure_hook(bool, _exact(bool, "a bool"))
converter.register_structure_hook(float, _float)
converter.register_structure_hook_factory(_is_literal, _literal)
converter.register_structure_hook_factory(
    lambda t: t is list or (is_sequence(t) and typing.get_origin(t) is list), _strict_list
)
converter.register_structure_hook_factory(is_mapping, _strict_mapping)
configure_union_passthrough(typing.Union[str, int, float, bool, None], converter)


# ------------------------------------------------------------------------ declaring


def shape(
    *, forbid_extra: bool = False, check: Callable[[dict[str, Any]], None] | None = None
) -> Callable[[type[T]], type[T]]:
    """Class decorator: register an attrs class with :data:`converter` (apply it *above*
    ``@attrs.define``).

    Args:
        forbid_extra: reject keys that are not fields (``unknown field``); otherwise they are
            ignored.
        check: called with the raw dict before its fields are structured; raises
            ``ValueError`` (or :func:`field_problem`) to reject it as a whole.
    """

    def register(cls: type[T]) -> type[T]:
        fields = attrs.fields(cls)  # type: ignore[arg-type]
        s_over: dict[str, Any] = {}
        for f in fields:
            key = f.metadata.get("key")
            if key:
                s_over[f.name] = override(rename=key)
                _KEYS[f.name] = key

        def factory(_t: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
            base = make_dict_structure_fn(
                cls, conv, _cattrs_forbid_extra_keys=forbid_extra, **s_over
            )

            def hook(value: Any, t: Any) -> Any:
                if type(value) is not dict:
                    if type(value) is cls:  # already built (like pydantic's instances)
                        return value
                    raise TypeError(f"expected a dict, got {kind_name(value)}")
                if check is not None:
                    check(value)
                return base(value, t)

            return hook

        converter.register_structure_hook_factory(lambda t: t is cls, factory)
        return cls

    return register


# ------------------------------------------------------------------------ using


def structure(data: Any, cls: type[T]) -> T:
    """Build a ``cls`` (a :func:`shape` class, or a type like ``list[Message]``) from
    JSON-like ``data``. Values that already are instances of the shape classes are taken
    as they are.

    Raises:
        ShapeError: ``data`` does not fit (wrong type, missing or unknown field, failed
            constraint), naming every problem by path.
    """
    if type(data) is cls:
        return data
    if not isinstance(data, dict) and attrs.has(cls):
        raise ShapeError([("", f"expected a dict, got {kind_name(data)}")])
    try:
        return converter.structure(data, cls)
    except (ClassValidationError, IterableValidationError) as exc:
        raise ShapeError(list(_problems(exc, ""))) from None
    except (TypeError, ValueError, KeyError) as exc:
        raise ShapeError(list(_leaf(exc, ""))) from None


def unstructure(obj: Any, *, exclude_defaults: bool = False, exclude_none: bool = False) -> Any:
    """``obj`` (a shape, or lists/dicts of them) as new plain JSON-like data: fields under
    their JSON keys, ``dump=False`` fields left out.

    Args:
        exclude_defaults: leave out fields equal to their default (at every level).
        exclude_none: leave out fields that are None (at every level).
    """
    if attrs.has(type(obj)):
        out: dict[str, Any] = {}
        for f in attrs.fields(type(obj)):
            if f.metadata.get("dump") is False:
                continue
            value = getattr(obj, f.name)
            if exclude_none and value is None:
                continue
            if exclude_defaults and f.default is not attrs.NOTHING:
                default = f.default
                if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                    default = default.factory()  # type: ignore[attr-defined]
                if value == default:
                    continue
            out[f.metadata.get("key", f.name)] = unstructure(
                value, exclude_defaults=exclude_defaults, exclude_none=exclude_none
            )
        return out
    if type(obj) is list or type(obj) is tuple:
        return [
            unstructure(x, exclude_defaults=exclude_defaults, exclude_none=exclude_none)
            for x in obj
        ]
    if type(obj) is dict:
        return {
            k: unstructure(v, exclude_defaults=exclude_defaults, exclude_none=exclude_none)
            for k, v in obj.items()
        }
    return obj


def _join(path: str, part: str | int) -> str:
    if isinstance(part, int):
        return f"{path}[{part}]"
    return f"{path}.{part}" if path else part


def _problems(exc: BaseException, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            if isinstance(note, AttributeValidationNote):
                yield from _problems(sub, _join(path, _KEYS.get(note.name, note.name)))
            elif isinstance(note, IterableValidationNote):
                yield from _problems(sub, _join(path, note.index))
            else:
                yield from _problems(sub, path)
        for sub in without:
            yield from _problems(sub, path)
    else:
        yield from _leaf(exc, path)


def _leaf(exc: BaseException, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(exc, ForbiddenExtraKeysError):
        for key in sorted(exc.extra_fields):
            yield _join(path, key), "unknown field"
    elif isinstance(exc, _FieldProblem):
        yield _join(path, _KEYS.get(exc.name, exc.name)), exc.why
    elif isinstance(exc, KeyError):
        yield path, "required field missing"
    elif isinstance(exc, (ClassValidationError, IterableValidationError)):
        yield from _problems(exc, path)
    else:
        yield path, str(exc) or "invalid value"
