"""The one registry of builtins and methods.

``@builtin`` adds a function to the global universe (``BUILTINS``); ``@method`` adds it to a
per-type method table (``METHODS[type_name][method_name]``). Both tables are filled once, at
import time of the ``harnpy.stdlib`` modules, and never change afterwards.

Calling convention (all builtins):

* the Python function receives the calling :class:`~harnpy.runtime.thread.Thread` first,
  then the Harn arguments positionally (for methods: the receiver, then the arguments);
* missing arguments arrive as the Python default (declare ``=None`` for optional ones);
  surplus arguments are dropped unless the function takes ``*args``;
* it returns a Harn value (see :mod:`harnpy.runtime.values`) or raises a
  :class:`~harnpy.runtime.errors.HarnError`;
* a builtin that calls back into Harn code (``map``, ``sort_by``, tool handlers) is
  registered with ``callback=True`` and written as a Python generator: each
  ``result = yield CallRequest(fn, args)`` runs a Harn call on the interpreter's explicit
  frame stack and resumes the generator with its result; ``return value`` ends it. Such a
  builtin is not snapshot data: a snapshot taken while one is active fails with an error
  naming the builtin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from harnpy.runtime.values import Builtin

F = TypeVar("F", bound=Callable[..., Any])

BUILTINS: dict[str, Builtin] = {}
METHODS: dict[str, dict[str, Builtin]] = {}

#: Harn type names accepted by ``@method``.
METHOD_TYPES = (
    "string",
    "list",
    "dict",
    "set",
    "range",
    "iter",
    "generator",
    "stream",
    "struct",
    "enum",
    "pair",
    "bytes",
    "channel",
    "atomic",
    "task_handle",
    "duration",
    "int",
    "float",
)


_CO_VARARGS = 0x04


def _max_args(fn: Callable[..., Any], skip: int) -> int | None:
    """Number of positional Harn arguments ``fn`` accepts, or None when it takes ``*args``.

    Read from the code object (``inspect.signature`` is too slow for start-up)."""
    code = fn.__code__
    if code.co_flags & _CO_VARARGS:
        return None
    return max(0, code.co_argcount - skip)


def _doc(fn: Callable[..., Any]) -> str:
    """The function's docstring, dedented lazily by readers (kept raw here)."""
    return fn.__doc__ or ""


def builtin(
    name: str | None = None,
    *,
    aliases: Iterable[str] = (),
    callback: bool = False,
    control: bool = False,
) -> Callable[[F], F]:
    """Register ``fn(thread, *args)`` as the global builtin ``name`` (default: the Python
    name without a trailing underscore). ``aliases`` registers extra names for it.
    ``control`` marks builtins that snapshot, block or reschedule the calling thread: the
    caller's resume point is saved before they run and they are never inlined."""

    def deco(fn: F) -> F:
        harn_name = name or fn.__name__.rstrip("_")
        b = Builtin(
            harn_name,
            fn,
            callback=callback,
            max_args=_max_args(fn, 1),
            doc=_doc(fn),
            control=control,
        )
        for n in (harn_name, *aliases):
            if n in BUILTINS:
                raise RuntimeError(f"builtin {n!r} registered twice")
            BUILTINS[n] = b if n == harn_name else _renamed(b, n)
        return fn

    return deco


def method(
    types: str | Iterable[str],
    name: str | None = None,
    *,
    aliases: Iterable[str] = (),
    callback: bool = False,
) -> Callable[[F], F]:
    """Register ``fn(thread, receiver, *args)`` as method ``name`` on each Harn type in
    ``types`` (``"list"``, ``("set", "list")``...)."""

    type_list = [types] if isinstance(types, str) else list(types)
    for t in type_list:
        if t not in METHOD_TYPES:
            raise RuntimeError(f"unknown method receiver type {t!r}")

    def deco(fn: F) -> F:
        harn_name = name or fn.__name__.split("__")[-1].rstrip("_")
        b = Builtin(harn_name, fn, callback=callback, max_args=_max_args(fn, 2), doc=_doc(fn))
        for t in type_list:
            table = METHODS.setdefault(t, {})
            for n in (harn_name, *aliases):
                if n in table:
                    raise RuntimeError(f"method {t}.{n} registered twice")
                table[n] = b
        return fn

    return deco


def _renamed(b: Builtin, name: str) -> Builtin:
    return Builtin(
        name, b.fn, callback=b.callback, max_args=b.max_args, doc=b.doc, control=b.control
    )


def lookup_method(type_name: str, name: str) -> Builtin | None:
    """The method ``name`` of Harn type ``type_name``, or None."""
    table = METHODS.get(type_name)
    return table.get(name) if table else None
