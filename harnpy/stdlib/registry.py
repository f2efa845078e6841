"""The one registry of builtins and methods.

``@builtin`` adds a function to the global universe (``BUILTINS``); ``@method`` adds it to a
per-type method table (``METHODS[type_name][method_name]``). Both tables are filled at
import time of the ``harnpy.stdlib`` modules (and the lifecycle layer's builtin providers).

Builtins load lazily (start-up, issue 15): ``BUILTINS`` knows every builtin's name from the
generated index :mod:`harnpy.stdlib._index` (name -> the module whose import registers it,
with its call flags), so ``name in BUILTINS``, iteration and ``len`` see every builtin, but
a module is imported only when one of its builtins is looked up (``BUILTINS[name]``,
``BUILTINS.get(name)``: the compiler does so when it compiles a reference to the name, a
restore when it decodes one) or when everything is asked for (``items()``, ``values()``).
The modules that register methods or runtime hooks are imported eagerly
(:func:`harnpy.stdlib.load_core`). ``python -m harnpy.stdlib.indexgen`` rewrites the index;
``tests/stdlib/test_lazy_index.py`` checks it against the real registrations.

Calling convention (all builtins):

* the Python function receives the calling :class:`~harnpy.runtime.thread.Thread` first,
  then the Harn arguments positionally (for methods: the receiver, then the arguments);
* missing arguments arrive as the Python default (every parameter has one: declare
  ``=None`` for optional ones); a surplus argument (more than the function's positional
  parameters, unless it takes ``*args``) is a catchable ``E324`` error naming the builtin
  and how many it takes (:func:`fit_args` / :func:`surplus_error` — every path that calls
  a builtin or method applies it; a compiled fast path that would drop one falls back to
  the path that raises it);
* it returns a Harn value (see :mod:`harnpy.runtime.values`) or raises a
  :class:`~harnpy.runtime.errors.HarnError`;
* a ``TypeError``, ``ValueError`` or ``OverflowError`` raised while a builtin runs (a value
  a user can write that the builtin did not anticipate: a huge number, an out-of-range
  offset) becomes a catchable Harn error naming the builtin (``E324``,
  :func:`argument_error`, applied by the evaluator's run loop), never an internal error;
* a builtin that calls back into Harn code (``map``, ``sort_by``, tool handlers) is
  registered with ``callback=True`` and written as a Python generator: each
  ``result = yield CallRequest(fn, args)`` runs a Harn call on the interpreter's explicit
  frame stack and resumes the generator with its result; ``return value`` ends it. Such a
  builtin is not snapshot data: a snapshot taken while one is active fails with an error
  naming the builtin.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from types import CodeType
from typing import TYPE_CHECKING, Any, TypeVar

from harnpy.runtime.errors import HarnRuntimeError, plain_error, runtime_error
from harnpy.runtime.values import Builtin

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

F = TypeVar("F", bound=Callable[..., Any])

#: ``flags`` bits of an index entry.
CALLBACK = 1
CONTROL = 2


class BuiltinTable(dict[str, Builtin]):
    """The global builtin universe: a dict of the builtins registered so far, which also
    answers for the builtins of modules not imported yet (see the module docstring).

    The dict itself holds the loaded builtins (``@builtin`` and item assignment write it);
    a lookup of a name it lacks imports the module the index names and reads again. Keys,
    ``in`` and ``len`` cover the index too; ``keys()``, ``items()`` and ``values()`` import
    every indexed module first.
    """

    def __init__(self) -> None:
        super().__init__()
        self._index: dict[str, tuple[int, int]] | None = None
        self._modules: tuple[str, ...] = ()

    def index(self) -> dict[str, tuple[int, int]]:
        """The generated index: name -> ``(module number, flags)`` (a position in
        ``_index.MODULES``; flags :data:`CALLBACK`, :data:`CONTROL`), loaded on first use."""
        idx = self._index
        if idx is None:
            from harnpy.stdlib import _index

            self._modules = _index.MODULES
            idx = self._index = _index.BUILTINS
        return idx

    def module_of(self, name: str) -> str | None:
        """The module whose import registers builtin ``name``, or None when the index does
        not know the name."""
        entry = self.index().get(name)
        return self._modules[entry[0]] if entry is not None else None

    def __missing__(self, name: str) -> Builtin:
        module = self.module_of(name)
        if module is None:
            raise KeyError(name)
        importlib.import_module(module)
        try:
            return dict.__getitem__(self, name)
        except KeyError:
            raise RuntimeError(
                f"builtin {name!r}: the index names {module}, which does not register it "
                "(run `python -m harnpy.stdlib.indexgen`)"
            ) from None

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        """``self[name]`` (importing its module when needed), or ``default``."""
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self.index()

    def __iter__(self) -> Iterator[str]:
        names = list(self.index())
        names += [n for n in dict.keys(self) if n not in self._index]  # type: ignore[operator]
        return iter(names)

    def __len__(self) -> int:
        idx = self.index()
        return len(idx) + sum(1 for n in dict.keys(self) if n not in idx)

    def load_everything(self) -> None:
        """Import every module the index names (what ``keys()``, ``items()`` and
        ``values()`` do first)."""
        self.index()
        for module in self._modules:
            importlib.import_module(module)

    def keys(self) -> dict_keys[str, Builtin]:
        """Every builtin name (every indexed module imported first)."""
        self.load_everything()
        return dict.keys(self)

    def items(self) -> dict_items[str, Builtin]:
        """Every ``(name, Builtin)`` (every indexed module imported first)."""
        self.load_everything()
        return dict.items(self)

    def values(self) -> dict_values[str, Builtin]:
        """Every Builtin (every indexed module imported first)."""
        self.load_everything()
        return dict.values(self)

    def registered(self, name: str) -> Builtin | None:
        """The builtin ``name`` if its module is imported already (never imports)."""
        return dict.get(self, name)

    def is_pure(self, name: str) -> bool:
        """Whether builtin ``name`` is neither a callback nor a control builtin, read from
        the loaded builtin or else from the index (never imports)."""
        b = dict.get(self, name)
        if b is not None:
            return not b.callback and not b.control
        entry = self.index().get(name)
        return entry is not None and not entry[1] & (CALLBACK | CONTROL)


BUILTINS: BuiltinTable = BuiltinTable()
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
    A ``*args`` wrapper with ``__wrapped__`` (a decorator that passes the arguments on)
    takes what the wrapped function takes.

    Read from the code object (``inspect.signature`` is too slow for start-up)."""
    code = fn.__code__
    if code.co_flags & _CO_VARARGS:
        wrapped = getattr(fn, "__wrapped__", None)
        return _max_args(wrapped, skip) if wrapped is not None else None
    return max(0, code.co_argcount - skip)


class _Auto:
    """The default of ``max_args=`` in :func:`builtin` / :func:`method`: read the
    function's signature."""


_AUTO = _Auto()


#: The code object of every registered builtin and method function -> the Harn name it is
#: called by (for :func:`argument_error`).
_CODES: dict[CodeType, str] = {}


def _remember(fn: Callable[..., Any], name: str) -> None:
    code = getattr(fn, "__code__", None)
    if code is not None and not name.startswith(("__", ".__")):
        # internal primitives (``__agent_*``...) are called by harnpy's own Harn code with
        # values it made: an error there is harnpy's bug, reported as such
        _CODES.setdefault(code, name)


def surplus_error(
    b: Builtin, got: int, *, method: bool = False, called: str | None = None
) -> HarnRuntimeError:
    """The catchable error for calling ``b`` with ``got`` arguments, more than its
    ``max_args``: ``Runtime error: <name>: takes at most <n> argument(s), got <got>``
    (``E324``, the code of the other argument errors). ``called`` is the name the program
    used (an alias), default ``b.name``; a method is named ``.<name>()``. Builtins taking
    any number of arguments (``max_args`` None) never get here."""
    m = b.max_args or 0
    base = called or b.name
    name = f".{base}()" if method else base
    what = f"at most {m} argument{'s' if m != 1 else ''}" if m else "no arguments"
    return runtime_error(f"{name}: takes {what}, got {got}", "E324")


def fit_args(
    b: Builtin, args: list[Any], *, method: bool = False, called: str | None = None
) -> list[Any]:
    """The arguments builtin (or method, ``method=True``) ``b`` receives for the Harn
    arguments ``args``: as they are (missing ones then take the Python defaults);
    ``called`` as for :func:`surplus_error`.

    Raises:
        HarnRuntimeError: ``E324`` (:func:`surplus_error`) when there are more than
            ``b.max_args``.
    """
    m = b.max_args
    if m is not None and len(args) > m:
        raise surplus_error(b, len(args), method=method, called=called)
    return args


#: Exception types that, raised inside a builtin, mean "an argument it cannot handle".
ARGUMENT_ERRORS = (TypeError, ValueError, OverflowError)


def argument_error(exc: BaseException) -> HarnRuntimeError | None:
    """The catchable Harn error for ``exc`` (one of :data:`ARGUMENT_ERRORS`) when it was
    raised while a builtin or method ran: ``Runtime error: <name>: invalid argument
    (<why>)``, code ``E324``, naming the outermost builtin on the traceback (the one the
    Harn code called). None when no builtin is on the traceback: the error is the
    evaluator's own (an internal error, reported as such)."""
    tb = exc.__traceback__
    while tb is not None:
        name = _CODES.get(tb.tb_frame.f_code)
        if name is not None:
            why = str(exc) or type(exc).__name__
            return plain_error(f"Runtime error: {name}: invalid argument ({why})", "E324")
        tb = tb.tb_next
    return None


def _doc(fn: Callable[..., Any]) -> str:
    """The function's docstring, dedented lazily by readers (kept raw here)."""
    return fn.__doc__ or ""


def builtin(
    name: str | None = None,
    *,
    aliases: Iterable[str] = (),
    callback: bool = False,
    control: bool = False,
    max_args: int | None | _Auto = _AUTO,
) -> Callable[[F], F]:
    """Register ``fn(thread, *args)`` as the global builtin ``name`` (default: the Python
    name without a trailing underscore). ``aliases`` registers extra names for it.
    ``control`` marks builtins that snapshot, block or reschedule the calling thread: the
    caller's resume point is saved before they run and they are never inlined.
    ``max_args`` overrides the arity read from the signature (a ``*args`` function that
    still takes at most N: more is the registry's ``E324``; None: any number)."""

    def deco(fn: F) -> F:
        harn_name = name or fn.__name__.rstrip("_")
        b = Builtin(
            harn_name,
            fn,
            callback=callback,
            max_args=_max_args(fn, 1) if isinstance(max_args, _Auto) else max_args,
            doc=_doc(fn),
            control=control,
        )
        for n in (harn_name, *aliases):
            if dict.__contains__(BUILTINS, n):
                raise RuntimeError(f"builtin {n!r} registered twice")
            BUILTINS[n] = b if n == harn_name else _renamed(b, n)
        _remember(fn, harn_name)
        return fn

    return deco


def method(
    types: str | Iterable[str],
    name: str | None = None,
    *,
    aliases: Iterable[str] = (),
    callback: bool = False,
    max_args: int | None | _Auto = _AUTO,
) -> Callable[[F], F]:
    """Register ``fn(thread, receiver, *args)`` as method ``name`` on each Harn type in
    ``types`` (``"list"``, ``("set", "list")``...); ``max_args`` as for :func:`builtin`."""

    type_list = [types] if isinstance(types, str) else list(types)
    for t in type_list:
        if t not in METHOD_TYPES:
            raise RuntimeError(f"unknown method receiver type {t!r}")

    def deco(fn: F) -> F:
        harn_name = name or fn.__name__.split("__")[-1].rstrip("_")
        mx = _max_args(fn, 2) if isinstance(max_args, _Auto) else max_args
        b = Builtin(harn_name, fn, callback=callback, max_args=mx, doc=_doc(fn))
        for t in type_list:
            table = METHODS.setdefault(t, {})
            for n in (harn_name, *aliases):
                if n in table:
                    raise RuntimeError(f"method {t}.{n} registered twice")
                table[n] = b
        _remember(fn, f".{harn_name}()")
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
