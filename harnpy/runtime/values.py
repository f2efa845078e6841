"""The Harn value set: which Python object represents each Harn type.

| Harn type            | Python representation                                  |
|----------------------|--------------------------------------------------------|
| int / float / string | ``int`` / ``float`` / ``str`` (ints kept in i64 range)   |
| bool / nil           | ``bool`` / ``None``                                     |
| list / dict          | ``list`` / ``dict`` with ``str`` keys (value semantics)  |
| bytes                | ``bytes``                                              |
| set                  | :class:`HSet`                                          |
| duration             | :class:`Duration`                                      |
| enum (incl. Result)  | :class:`EnumValue`                                     |
| struct               | :class:`StructValue`                                   |
| struct constructor   | :class:`StructType` (``type_of`` closure)              |
| bare enum name       | :class:`EnumNamespace` (``type_of`` enum)              |
| closure              | :class:`Closure` (code reference + captured values)    |
| builtin              | :class:`Builtin`                                       |
| range / pair         | :class:`RangeValue` / :class:`Pair`                    |
| iter                 | :class:`IterValue`                                     |
| generator / stream   | :class:`Generator`                                     |

Invariants: no Python object outside this table is ever stored as a Harn value; ``bool`` is
always tested with ``type(x) is bool`` before any ``int`` test because Python's ``bool``
subclasses ``int``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from harnpy.runtime.errors import MAX_BUILD_SIZE, too_large

if TYPE_CHECKING:
    from harnpy.runtime.code import CodeObject, Frame

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1


def wrap_i64(n: int) -> int:
    """Wrap a Python int into the signed 64-bit range (two's complement)."""
    n &= 0xFFFFFFFFFFFFFFFF
    return n - 0x10000000000000000 if n > I64_MAX else n


class Duration:
    """A duration value (``5s``); ``ms`` is an int number of milliseconds.

    Spec language.md 1.6: durations are a distinct runtime type ``duration``.
    """

    __slots__ = ("ms",)

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __repr__(self) -> str:
        return f"Duration({self.ms})"


class EnumValue:
    """An enum variant value, e.g. ``Color.Red`` or ``Result.Ok(42)``.

    ``enum`` is the enum's name, ``variant`` the variant name and ``fields`` a list of the
    variant's positional field values (empty for unit variants).
    """

    __slots__ = ("enum", "variant", "fields")

    def __init__(self, enum: str, variant: str, fields: list[Any] | None = None) -> None:
        self.enum = enum
        self.variant = variant
        self.fields = fields if fields is not None else []

    def __repr__(self) -> str:
        return f"EnumValue({self.enum}.{self.variant}, {self.fields!r})"


def ok(value: Any) -> EnumValue:
    """Build ``Result.Ok(value)``."""
    return EnumValue("Result", "Ok", [value])


def err(value: Any) -> EnumValue:
    """Build ``Result.Err(value)``."""
    return EnumValue("Result", "Err", [value])


def is_result(v: Any) -> bool:
    """True when ``v`` is a ``Result`` enum value."""
    return type(v) is EnumValue and v.enum == "Result"


class StructValue:
    """A struct instance: ``name`` is the struct's declared name, ``fields`` a dict."""

    __slots__ = ("name", "fields")

    def __init__(self, name: str, fields: dict[str, Any]) -> None:
        self.name = name
        self.fields = fields

    def __repr__(self) -> str:
        return f"StructValue({self.name}, {self.fields!r})"


class StructType:
    """The constructor bound to a struct's name: ``P({x: 1})`` or ``P {x: 1}``.

    The declaration registers a constructor function (spec 3.14), so a struct name used as
    a value is a function: ``type_of`` gives ``closure`` and it displays like the
    reference's constructor closure, ``<fn(__fields)>``. ``fields`` lists declared field
    names (``optional`` ones may be absent).
    """

    __slots__ = ("name", "fields", "optional")

    def __init__(self, name: str, fields: list[str], optional: set[str]) -> None:
        self.name = name
        self.fields = fields
        self.optional = optional

    def construct(self, args: list[Any]) -> StructValue:
        """Build an instance from a dict argument (or positional field values)."""
        if len(args) == 1 and type(args[0]) is dict:
            return StructValue(self.name, dict(args[0]))
        return StructValue(self.name, {k: v for k, v in zip(self.fields, args)})

    def __repr__(self) -> str:
        return f"<struct {self.name}>"


class EnumNamespace:
    """Value of a bare enum name (``Color``); only its variants are reachable through it.

    ``type_of`` gives ``enum`` and it displays as ``<enum Color>``.
    """

    __slots__ = ("name", "variants")

    def __init__(self, name: str, variants: dict[str, int]) -> None:
        self.name = name
        self.variants = variants

    def __repr__(self) -> str:
        return f"<enum {self.name}>"


class HSet:
    """An insertion-ordered set deduplicated by Harn ``==`` (spec 3.1).

    ``items`` is the list of members in insertion order. Sets never mutate once built;
    every operation returns a new ``HSet``.
    """

    __slots__ = ("items",)

    def __init__(self, items: list[Any] | None = None) -> None:
        self.items: list[Any] = []
        if items:
            from harnpy.runtime.ops import values_equal

            for it in items:
                if not any(values_equal(it, x) for x in self.items):
                    self.items.append(it)

    @classmethod
    def from_unique(cls, items: list[Any]) -> HSet:
        """Wrap a list that is already deduplicated (no copy, no check)."""
        s = cls()
        s.items = items
        return s

    def contains(self, v: Any) -> bool:
        """Whether some member equals ``v`` by Harn ``==`` (spec 3.5); a linear scan."""
        from harnpy.runtime.ops import values_equal

        return any(values_equal(v, x) for x in self.items)

    def __repr__(self) -> str:
        return f"HSet({self.items!r})"


class RangeValue:
    """A lazy integer range ``start to end`` (inclusive) or ``start to end exclusive``."""

    __slots__ = ("start", "end", "inclusive")

    def __init__(self, start: int, end: int, inclusive: bool) -> None:
        self.start = start
        self.end = end
        self.inclusive = inclusive

    def py_range(self) -> range:
        """The equivalent Python ``range`` (empty when ``end < start``)."""
        return range(self.start, self.end + 1 if self.inclusive else self.end)

    def __len__(self) -> int:
        return self.length()

    def length(self) -> int:
        """Number of ints in the range, exact (may exceed ``sys.maxsize`` and the i64 range,
        unlike ``len()``); Harn sees :meth:`len_i64`."""
        n = self.end - self.start + (1 if self.inclusive else 0)
        return n if n > 0 else 0

    def len_i64(self) -> int:
        """The Harn length (``len(r)``, ``r.len()``): the count saturated at i64 max, as
        the reference does (``0 to 9223372036854775807`` has one int more than that)."""
        n = self.length()
        return n if n <= I64_MAX else I64_MAX

    def to_list(self, what: str = "range") -> list[int]:
        """The ints as a list; a range longer than ``MAX_BUILD_SIZE`` is a catchable
        ``E323`` error (``what`` names the operation) raised before allocating."""
        n = self.length()
        if n > MAX_BUILD_SIZE:
            raise too_large(what, n)
        return list(self.py_range())

    def __repr__(self) -> str:
        return f"RangeValue({self.start}, {self.end}, {self.inclusive})"


class Pair:
    """A pair ``(first, second)`` as produced by ``pair(a, b)`` and dict iteration."""

    __slots__ = ("first", "second")

    def __init__(self, first: Any, second: Any) -> None:
        self.first = first
        self.second = second

    def __repr__(self) -> str:
        return f"Pair({self.first!r}, {self.second!r})"


class Builtin:
    """A builtin function used as a value (``xs.map(to_string)``).

    ``fn(thread, *args)`` is the Python implementation; ``name`` the Harn name. When
    ``callback`` is true, calling ``fn`` returns a Python generator that yields
    :class:`CallRequest` objects (see :mod:`harnpy.stdlib.registry`). A ``control`` builtin
    is always called from an instruction that has saved the caller's resume point first
    (snapshots, blocking, scheduling), so it may capture or suspend the thread.
    """

    __slots__ = ("name", "fn", "callback", "max_args", "doc", "thread_arg", "control")

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        callback: bool = False,
        max_args: int | None = None,
        doc: str = "",
        thread_arg: bool = True,
        control: bool = False,
    ) -> None:
        self.name = name
        self.fn = fn
        self.callback = callback
        self.max_args = max_args
        self.doc = doc
        self.thread_arg = thread_arg
        self.control = control

    def __repr__(self) -> str:
        return f"<builtin {self.name}>"


class BoundMethod:
    """A method looked up on a receiver and not called yet (``let f = xs.map``)."""

    __slots__ = ("receiver", "name")

    def __init__(self, receiver: Any, name: str) -> None:
        self.receiver = receiver
        self.name = name


class Closure:
    """A function value: compiled ``code`` plus the values it captured at creation.

    ``captures`` is a list aligned with ``code.capture_names``; spec language.md 3.10
    (closures capture by value). ``module`` is the :class:`ModuleInstance` whose globals
    the body reads. ``bound_self`` is set for ``impl`` methods fetched from an instance.
    """

    __slots__ = ("code", "captures", "module", "bound_self", "fast")

    def __init__(self, code: CodeObject, captures: list[Any], module: Any, bound_self: Any = None):
        self.code = code
        self.captures = captures
        self.module = module
        self.bound_self = bound_self
        #: Cached direct-call function for pure expression closures (not snapshot data).
        self.fast: Any = None

    @property
    def name(self) -> str:
        """The function's name (``<closure>`` for an anonymous closure)."""
        return self.code.name

    def __repr__(self) -> str:
        return f"<closure {self.code.name}>"


class CallRequest:
    """Yielded by callback builtins: "call ``fn`` with ``args`` and send me the result"."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: Any, args: list[Any]) -> None:
        self.fn = fn
        self.args = args


class IterValue:
    """A lazy, single-pass iterator (spec 3.17), or a memoizing lazy sequence (``memo``).

    ``source`` is a Python iterator of already-computed Harn values, or ``None`` when the
    iterator is driven by ``stages`` over a Harn generator. ``exhausted`` becomes true once
    it has been drained (iterators are fused).
    """

    __slots__ = ("source", "exhausted", "stages", "origin", "memo")

    def __init__(self, source: Iterator[Any] | None, origin: Any = None) -> None:
        self.source = source
        self.exhausted = False
        self.stages: list[tuple[str, Any]] = []
        self.origin = origin
        #: Not None for a *lazy sequence* (combinators over a range): the items computed
        #: so far. Such a value is re-iterable: each use reads through a fresh cursor and
        #: items are computed once, on demand (``origin`` is the single-pass pipeline).
        self.memo: list[Any] | None = None


class Generator:
    """A generator (``fn`` with ``yield``) or stream (``gen fn`` with ``emit``).

    ``frame`` is the suspended :class:`Frame` of its body (not on any thread's stack while
    suspended); ``done`` turns true when the body finishes; ``kind`` is ``"generator"`` or
    ``"stream"``. ``running`` guards against re-entrant ``next()``.
    """

    __slots__ = ("frame", "done", "kind", "running")

    def __init__(self, frame: Frame | None, kind: str) -> None:
        self.frame = frame
        self.done = False
        self.kind = kind
        self.running = False


class TaskHandle:
    """Handle of a ``spawn``ed task; ``id`` is a small int, ``thread`` the task's thread."""

    __slots__ = ("id", "thread", "result", "error", "done", "cancelled", "output")

    def __init__(self, id: int, thread: Any) -> None:
        self.id = id
        self.thread = thread
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False
        self.cancelled = False
        self.output = ""


class Channel:
    """A FIFO channel; ``items`` holds queued messages, ``closed`` once closed."""

    __slots__ = ("name", "capacity", "items", "closed")

    def __init__(self, name: str, capacity: int | None) -> None:
        self.name = name
        self.capacity = capacity
        self.items: list[Any] = []
        self.closed = False


class Atomic:
    """A shared mutable cell (``atomic(init)``); the one escape from value semantics."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class HostObject:
    """Wraps a Python object that is *not* snapshot data (an open handle, an SDK client).

    Holding one in a variable is allowed, but a snapshot that reaches it fails with the
    path of the variable (spec lifecycle issue: values that cannot be snapshotted).
    """

    __slots__ = ("kind", "obj")

    def __init__(self, kind: str, obj: Any) -> None:
        self.kind = kind
        self.obj = obj


def type_name(v: Any) -> str:
    """The Harn ``type_of`` name of a value (spec language.md 3.1)."""
    t = type(v)
    name = _TYPE_NAMES.get(t)
    if name is not None:
        return name
    if t is Generator:
        return v.kind
    if t is HostObject:
        return v.kind
    return "unknown"


_TYPE_NAMES: dict[type, str] = {
    int: "int",
    float: "float",
    str: "string",
    bool: "bool",
    type(None): "nil",
    list: "list",
    dict: "dict",
    bytes: "bytes",
    HSet: "set",
    Duration: "duration",
    EnumValue: "enum",
    StructValue: "struct",
    StructType: "closure",
    EnumNamespace: "enum",
    Closure: "closure",
    Builtin: "builtin",
    BoundMethod: "closure",
    RangeValue: "range",
    Pair: "pair",
    IterValue: "iter",
    TaskHandle: "task_handle",
    Channel: "channel",
    Atomic: "atomic",
}
