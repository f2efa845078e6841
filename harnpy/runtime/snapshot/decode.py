"""Decoding a snapshot document: validation of every record, the decoder of the allow-listed
value classes and :func:`restore`, which rebuilds a thread against freshly compiled code.
"""

from __future__ import annotations

import math
import random
from typing import Any

from harnpy.runtime.code import (
    MISSING,
    RET_THREAD,
    UNBOUND,
    CodeObject,
    Frame,
    NativeFrame,
)
from harnpy.runtime.errors import HarnError, HarnRuntimeError, HarnThrow
from harnpy.runtime.snapshot.base import (
    SnapshotError,
)
from harnpy.runtime.snapshot.documents import (
    validate_document,
)
from harnpy.runtime.snapshot.encode import (
    _ITER_TYPES,
    _NATIVE_TYPES,
)
from harnpy.runtime.values import (
    Atomic,
    BoundMethod,
    Builtin,
    Channel,
    Closure,
    Duration,
    EnumNamespace,
    EnumValue,
    Generator,
    HostObject,
    HSet,
    IterValue,
    Pair,
    RangeValue,
    StructType,
    StructValue,
    TaskHandle,
)


class _Decoder:
    def __init__(
        self,
        doc: dict[str, Any],
        modules: dict[str, Any],
        thread: Any,
        live: list[Any] | None = None,
    ) -> None:
        self.heap_raw: list[Any] = doc["heap"]
        self.heap: list[Any] = [_UNSET] * len(self.heap_raw)
        self.modules = modules
        self.thread = thread
        self.runtime = thread.runtime
        self.ext_raw: dict[str, Any] = doc.get("externals") or {}
        self.ext: dict[str, Any] = {}
        self.live = live

    def external(self, name: str) -> Any:
        """The decoded external value ``name`` (decoded once, shared by every reference)."""
        if name in self.ext:
            return self.ext[name]
        if name not in self.ext_raw:
            raise SnapshotError(f"snapshot refers to a missing external value {name!r}", "E404")
        raw = self.ext_raw[name]
        if type(raw) in (list, dict) and not (type(raw) is dict and ("$t" in raw or "$ref" in raw)):
            shell = self.shell(raw)
            self.ext[name] = shell
            self.fill(shell, raw)
            return shell
        value = self.dec(raw)
        self.ext[name] = value
        return value

    def external_prefix(self, name: str, n: Any) -> Any:
        """A new list of the first ``n`` entries of the decoded external list ``name``
        (:class:`DetachedPrefix`; one list per ``(name, n)``, shared by its references)."""
        key = f"{name}\x00{n}"
        if key in self.ext:
            return self.ext[key]
        whole = self.external(name)
        if type(whole) is not list or type(n) is not int or not 0 <= n <= len(whole):
            raise SnapshotError(
                f"snapshot refers to {n!r} entries of the external list {name!r}", "E404"
            )
        out = whole[:n]
        self.ext[key] = out
        return out

    def dec(self, v: Any) -> Any:
        t = type(v)
        if t is str or t is int or t is bool or t is float or v is None:
            return v
        if t is list:
            return [self.dec(x) for x in v]
        if t is dict:
            if "$ref" in v and len(v) == 1:
                return self.ref(v["$ref"])
            if "$ext" in v and len(v) == 1:
                return self.external(v["$ext"])
            if "$ext" in v and "$len" in v and len(v) == 2:
                return self.external_prefix(v["$ext"], v["$len"])
            if "$live" in v and len(v) == 1:
                n = v["$live"]
                if self.live is None or not isinstance(n, int) or not 0 <= n < len(self.live):
                    raise SnapshotError("snapshot refers to a live object of another run", "E404")
                return self.live[n]
            if "$t" in v:
                return self.dec_tagged(v, None)
            if "$dict" in v and len(v) == 1:
                return {k: self.dec(x) for k, x in _dict_items(v["$dict"])}
            _check_plain_keys(v)
            return {k: self.dec(x) for k, x in v.items()}
        raise SnapshotError(f"unexpected JSON value in snapshot: {type(v).__name__}", "E404")

    def ref(self, n: int) -> Any:
        if type(n) is not int or not 0 <= n < len(self.heap):
            raise SnapshotError(
                f"snapshot heap reference {n!r} is not an index of the heap", "E404"
            )
        cur = self.heap[n]
        if cur is not _UNSET:
            return cur
        raw = self.heap_raw[n]
        # Create a shell first so cycles resolve to the same object.
        shell = self.shell(raw)
        self.heap[n] = shell
        self.fill(shell, raw)
        return shell

    def shell(self, raw: Any) -> Any:
        t = type(raw)
        if t is list:
            return []
        if t is dict:
            tag = raw.get("$t")
            if tag is None:
                return {}
            _check_record(raw)
            if tag == "set":
                return HSet()
            if tag == "struct":
                return StructValue(raw["name"], {})
            if tag == "enum":
                return EnumValue(raw["enum"], raw["variant"], [])
            if tag == "pair":
                return Pair(None, None)
            if tag == "closure":
                return Closure(self.code(raw["code"]), [], None)
            if tag == "generator":
                if raw["kind"] not in ("generator", "stream"):
                    raise SnapshotError(f"unknown generator kind {raw['kind']!r}", "E404")
                return Generator(None, raw["kind"])
            if tag == "frame":
                return Frame(self.code(raw["code"]), [], self.thread)
            if tag == "atomic":
                return Atomic(None)
            if tag == "channel":
                return Channel(raw["name"], raw["capacity"])
            if tag == "task":
                return TaskHandle(raw["id"], None)
            if tag == "iter":
                return IterValue(None)
            if tag == "rng":
                return HostObject("rng", random.Random())
            return _Deferred()
        raise SnapshotError("malformed heap record in snapshot", "E404")

    def fill(self, obj: Any, raw: Any) -> None:
        t = type(obj)
        if t is list:
            obj.extend(self.dec(x) for x in raw)
        elif t is dict:
            if "$dict" in raw and len(raw) == 1:
                src = _dict_items(raw["$dict"])
            else:
                _check_plain_keys(raw)
                src = raw.items()
            for k, x in src:
                obj[k] = self.dec(x)
        elif t is HSet:
            obj.items = [self.dec(x) for x in raw["items"]]
        elif t is StructValue:
            obj.fields = self.dec(raw["fields"])
            if type(obj.fields) is not dict:
                raise _damaged(f"the fields of struct {obj.name} are not a dict")
        elif t is EnumValue:
            obj.fields = [self.dec(x) for x in raw["fields"]]
        elif t is Pair:
            obj.first = self.dec(raw["first"])
            obj.second = self.dec(raw["second"])
        elif t is Closure:
            obj.module = obj.code.module
            obj.captures = [self.dec(x) for x in raw["captures"]]
            if len(obj.captures) != len(obj.code.capture_names):
                raise _damaged(
                    f"a closure of {obj.code.name} has {len(obj.captures)} captured values, "
                    f"its code captures {len(obj.code.capture_names)}"
                )
            obj.bound_self = self.dec(raw.get("bound_self"))
        elif t is Generator:
            obj.done = raw["done"]
            obj.running = raw.get("running", False)
            obj.frame = self.dec(raw["frame"]) if raw["frame"] is not None else None
            if (
                type(obj.done) is not bool
                or type(obj.running) is not bool
                or (obj.frame is not None and type(obj.frame) is not Frame)
            ):
                raise SnapshotError("a generator in the snapshot is malformed", "E404")
        elif t is Frame:
            obj.pc = raw["pc"]
            obj.ret_slot = raw["ret_slot"]
            if type(obj.pc) is not int or type(obj.ret_slot) is not int:
                raise SnapshotError(
                    f"frame of {obj.code.name} has a non-integer pc or ret_slot", "E404"
                )
            obj.slots = [self.dec(x) for x in raw["slots"]]
            if len(obj.slots) != obj.code.nslots:
                raise SnapshotError(
                    f"frame of {obj.code.name} has {len(obj.slots)} slots, code expects "
                    f"{obj.code.nslots}",
                    "E404",
                )
            if not 0 <= obj.pc < len(obj.code.instrs):
                raise SnapshotError(f"frame pc {obj.pc} out of range for {obj.code.name}", "E404")
            obj.parent = self.dec(raw["parent"]) if raw["parent"] is not None else None
            if obj.parent is not None and type(obj.parent) not in (Frame, NativeFrame):
                raise SnapshotError(
                    f"frame of {obj.code.name} has a parent that is not a frame", "E404"
                )
            caller = obj.parent.code.nslots if type(obj.parent) is Frame else None
            if obj.ret_slot < RET_THREAD or (caller is not None and obj.ret_slot >= caller):
                raise SnapshotError(
                    f"frame of {obj.code.name} returns into slot {obj.ret_slot}, which its "
                    "caller does not have",
                    "E404",
                )
            obj.generator = self.dec(raw["generator"]) if raw.get("generator") else None
            if obj.generator is not None and type(obj.generator) is not Generator:
                raise SnapshotError(
                    f"frame of {obj.code.name} has a generator that is not one", "E404"
                )
            obj.defers = [self.dec(d) for d in raw["defers"]] if raw.get("defers") else None
            if obj.defers is not None and any(type(d) is not Closure for d in obj.defers):
                raise SnapshotError(
                    f"frame of {obj.code.name} has a deferred block that is not a closure",
                    "E404",
                )
        elif t is Atomic:
            obj.value = self.dec(raw["value"])
        elif t is Channel:
            obj.closed = raw["closed"]
            obj.items = [self.dec(x) for x in raw["items"]]
        elif t is TaskHandle:
            obj.done = True
            obj.result = self.dec(raw["result"])
            obj.cancelled = raw["cancelled"]
            obj.output = raw["output"]
            obj.error = self.dec(raw["error"]) if raw["error"] is not None else None
            if obj.error is not None and not isinstance(obj.error, HarnError):
                raise _damaged(f"task {obj.id} has an error that is not one")
        elif t is IterValue:
            obj.exhausted = raw["exhausted"]
            obj.source = self.dec(raw["source"]) if raw["source"] is not None else None
            obj.stages = [(kind, self.dec(state)) for kind, state in raw.get("stages", [])]
            obj.origin = self.dec(raw.get("origin"))
            memo = raw.get("memo")
            obj.memo = self.dec(memo) if memo is not None else None
            _check_iter(obj)
        elif t is HostObject:
            gauss = raw.get("gauss")
            if not (gauss is None or type(gauss) is float) or any(
                type(x) is not int or not 0 <= x < 2**32 for x in raw["state"]
            ):
                raise SnapshotError("an rng in the snapshot has a malformed state", "E404")
            try:
                obj.obj.setstate((raw["version"], tuple(raw["state"]), gauss))
            except (ValueError, TypeError, OverflowError):
                raise SnapshotError(
                    "an rng in the snapshot has a malformed state", "E404"
                ) from None
        elif t is _Deferred:
            obj.value = self.dec_tagged(raw, None)

    def dec_tagged(self, v: dict[str, Any], _: Any) -> Any:
        tag = v["$t"]
        dec = _SCALAR_DECODERS.get(tag)
        if dec is not None:
            _check_record(v)
            return dec(self, v)
        if tag in _HEAP_TAGS:
            shell = self.shell(v)
            self.fill(shell, v)
            return shell
        raise SnapshotError(f"unknown value tag {tag!r} in snapshot", "E404")

    def code(self, ref: Any) -> CodeObject:
        try:
            key, cid = ref
            mod = self.modules[key]
            return mod.codes[cid]  # type: ignore[no-any-return]
        except (KeyError, TypeError, ValueError):
            raise SnapshotError(
                f"snapshot refers to code {ref!r} that the current source does not have", "E406"
            ) from None


def _check_library_globals(m: Any, g: dict[str, Any]) -> None:
    """Every global library module ``m`` declares is in its restored globals ``g``, and
    each function (``fn``, ``tool``, ``struct`` constructor) is one. Raises SnapshotError
    E404."""
    own_fns = {c.name for c in m.codes.values()}
    for name, kind in m.global_kinds.items():
        if kind == "fn" and name not in own_fns:
            continue  # an imported name (bound again after the restore) or a struct type
        if name not in g:
            raise _damaged(f"the globals of library {m.path} lack `{name}`")
        v = g[name]
        if kind == "fn" and (
            v is None
            or type(v) in _NATIVE_TYPES
            or type(v) is list
            or (type(v) is dict and v.get("_type") != "tool_registry")
        ):
            # a function, struct type or tool declaration (a tool registry): never a plain
            # scalar, list or dict
            raise _damaged(f"`{name}` of library {m.path} is not a function")
        if kind == "fn" and type(g[name]) is Closure and g[name].bound_self is not None:
            raise _damaged(f"function `{name}` of library {m.path} is bound to a value")


def _check_frame_chains(heap: list[Any]) -> None:
    """Refuse a snapshot whose frames' ``parent`` links form a cycle (a damaged file: the
    thread would return into itself forever). Raises SnapshotError E404."""
    finished: set[int] = set()
    for obj in heap:
        if type(obj) is not Frame:
            continue
        seen: set[int] = set()
        f: Any = obj
        while f is not None and id(f) not in finished:
            if id(f) in seen:
                raise SnapshotError("the frames in the snapshot call each other in a cycle", "E404")
            seen.add(id(f))
            f = f.parent
        finished |= seen


class _Deferred:
    __slots__ = ("value",)


# ------------------------------------------------------------ record validation
#
# Every tagged record is checked against its model before anything is built from it, and
# every decoded object against the invariants the evaluator relies on, so an authentic but
# wrong record (a harnpy bug, a version skew) is E404 at load time, never a KeyError or
# AttributeError later (issue 13 point 8). JSON kinds of the raw fields:
#   s: str, i: int (not bool), b: bool, l: list, d: dict, c: code reference [key, id],
#   a: any value (decoded and checked after), and a trailing "?" for "or null".
# Fields marked optional (second set) may be absent; every other field is required.

_RECORD_FIELDS: dict[str, tuple[dict[str, str], frozenset[str]]] = {
    "set": ({"items": "l"}, frozenset()),
    "struct": ({"name": "s", "fields": "a"}, frozenset()),
    "enum": ({"enum": "s", "variant": "s", "fields": "l"}, frozenset()),
    "pair": ({"first": "a", "second": "a"}, frozenset()),
    "closure": ({"code": "c", "captures": "l", "bound_self": "a"}, frozenset({"bound_self"})),
    "generator": (
        {"kind": "s", "done": "b", "running": "b", "frame": "a"},
        frozenset({"running"}),
    ),
    "frame": (
        {
            "code": "c",
            "pc": "i",
            "ret_slot": "i",
            "slots": "l",
            "parent": "a",
            "generator": "a",
            "defers": "l?",
        },
        frozenset({"generator", "defers"}),
    ),
    "atomic": ({"value": "a"}, frozenset()),
    "channel": ({"name": "s", "capacity": "i?", "closed": "b", "items": "l"}, frozenset()),
    "task": (
        {"id": "i", "result": "a", "error": "a", "cancelled": "b", "output": "s"},
        frozenset(),
    ),
    "iter": (
        {"exhausted": "b", "source": "a", "stages": "l", "origin": "a", "memo": "a"},
        frozenset({"stages", "origin", "memo"}),
    ),
    "rng": ({"version": "i", "state": "l", "gauss": "a"}, frozenset({"gauss"})),
    "float": ({"v": "s"}, frozenset()),
    "duration": ({"ms": "i"}, frozenset()),
    "range": ({"start": "i", "end": "i", "inclusive": "b"}, frozenset()),
    "bytes": ({"hex": "s"}, frozenset()),
    "builtin": ({"name": "s"}, frozenset()),
    "bound_method": ({"receiver": "a", "name": "s"}, frozenset()),
    "struct_type": ({"name": "s", "fields": "l", "optional": "l"}, frozenset()),
    "list_iter": ({"items": "a", "pos": "i", "n": "i"}, frozenset({"pos", "n"})),
    "range_iter": ({"start": "i", "stop": "i", "step": "i", "pos": "i"}, frozenset()),
    "missing": ({}, frozenset()),
    "unbound": ({}, frozenset()),
    "tuple": ({"items": "l"}, frozenset()),
    "error": (
        {"kind": "s", "value": "a", "message": "s", "code": "s?"},
        frozenset({"value", "message", "code"}),
    ),
    "enum_ns": ({"name": "s", "variants": "d"}, frozenset()),
}

#: The keys a record of each tag may have (its fields and ``$t``).
_RECORD_KEYS = {tag: frozenset({"$t", *fields}) for tag, (fields, _) in _RECORD_FIELDS.items()}

_KIND_TYPES: dict[str, tuple[type, ...]] = {
    "s": (str,),
    "i": (int,),
    "b": (bool,),
    "l": (list,),
    "d": (dict,),
    "c": (list,),
}
_KIND_NAMES = {"s": "a string", "i": "an integer", "b": "a boolean", "l": "a list", "d": "a dict"}


def _damaged(why: str) -> SnapshotError:
    return SnapshotError(f"the snapshot is damaged: {why}; refusing to resume", "E404")


def _check_record(raw: dict[str, Any]) -> None:
    """Check tagged record ``raw`` against :data:`_RECORD_FIELDS` (its tag is known to be
    present): every required field there with its type, and no field the encoder does not
    write (a record with an extra field was not written by harnpy: edited or damaged).
    Raises SnapshotError E404 naming the tag and the field."""
    tag = raw["$t"]
    model = _RECORD_FIELDS.get(tag) if type(tag) is str else None
    if model is None:
        raise SnapshotError(f"unknown value tag {tag!r} in snapshot", "E404")
    fields, optional = model
    if not _RECORD_KEYS[tag].issuperset(raw):
        extra = sorted(k for k in raw if k != "$t" and k not in fields)
        raise _damaged(f"a {tag!r} record has a field harnpy does not write: {extra[0]!r}")
    for name, kind in fields.items():
        if name not in raw:
            if name in optional:
                continue
            raise _damaged(f"a {tag!r} record lacks its field {name!r}")
        if kind == "a":
            continue
        v = raw[name]
        if kind.endswith("?"):
            if v is None:
                continue
            kind = kind[0]
        if type(v) not in _KIND_TYPES[kind]:
            raise _damaged(
                f"field {name!r} of a {tag!r} record is not "
                f"{_KIND_NAMES.get(kind, 'a code reference')}"
            )
        if kind == "c" and not (len(v) == 2 and type(v[0]) is str and type(v[1]) is int):
            raise _damaged(f"field {name!r} of a {tag!r} record is not a code reference")
    if tag == "error" and raw["kind"] not in ("throw", "runtime"):
        raise _damaged(f"an error record has an unknown kind {raw['kind']!r}")
    if tag == "error" and raw["kind"] == "runtime" and type(raw.get("message")) is not str:
        raise _damaged("a runtime error record lacks its message")
    if tag in ("struct_type",) and not all(
        type(x) is str for x in (*raw["fields"], *raw["optional"])
    ):
        raise _damaged("a struct type's field names are not strings")


def _check_plain_keys(raw: dict[str, Any]) -> None:
    """A plain JSON object decodes to a dict; the encoder wraps every dict with a key
    starting with ``$`` as ``{"$dict": ...}``, so such a key here is a damaged reference
    or tag (``$ref`` with a flipped bit), not data. Raises SnapshotError E404."""
    if raw and min(raw) < "%":
        for k in raw:
            if k.startswith("$"):
                raise _damaged(f"an object has the key {k!r}, which is neither a tag nor data")


def _dict_items(raw: Any) -> list[Any]:
    """The ``[[key, value], ...]`` list of a ``$dict`` record, checked."""
    if type(raw) is not list or not all(
        type(kv) is list and len(kv) == 2 and type(kv[0]) is str for kv in raw
    ):
        raise _damaged("a $dict record is not a list of [string key, value] pairs")
    return raw


_CALLABLE_TYPES = (Closure, Builtin, BoundMethod, StructType)

#: The lazy stage kinds of :mod:`harnpy.stdlib.iters` and their state fields: "f" a
#: callable, "i" an int, "b" a bool, "l" a list, "it" an iter, "it?" an iter or nil
#: (tests check this table against the stage pullers).
ITER_STAGE_FIELDS: dict[str, dict[str, str]] = {
    "map": {"f": "f"},
    "filter": {"f": "f"},
    "flat_map": {"f": "f", "cur": "it?"},
    "take": {"n": "i"},
    "skip": {"n": "i"},
    "take_while": {"f": "f", "stopped": "b"},
    "skip_while": {"f": "f", "primed": "b"},
    "zip": {"other": "it"},
    "enumerate": {"i": "i"},
    "chain": {"other": "it", "on_first": "b"},
    "chunks": {"n": "i"},
    "windows": {"n": "i", "buf": "l", "started": "b"},
    "memo": {"pos": "i"},
}


def _stage_value_ok(kind: str, v: Any) -> bool:
    if kind == "f":
        return type(v) in _CALLABLE_TYPES
    if kind == "i":
        return type(v) is int
    if kind == "b":
        return type(v) is bool
    if kind == "l":
        return type(v) is list
    if kind == "it?" and v is None:
        return True
    return type(v) is IterValue


def _check_iter(it: IterValue) -> None:
    """The invariants :mod:`harnpy.stdlib.iters` relies on (see its module docstring): a
    pure iter has a list/range iterator source; a staged one exactly one known stage with
    its state over an upstream iter; a lazy sequence a memo list over its pipeline; a
    generator-backed one a generator origin. Raises SnapshotError E404."""
    if type(it.exhausted) is not bool:
        raise _damaged("an iterator's `exhausted` flag is not a boolean")
    if it.source is not None and type(it.source) not in _ITER_TYPES:
        raise _damaged("an iterator's source is not a list or range iterator")
    if it.memo is not None and type(it.memo) is not list:
        raise _damaged("a lazy sequence's computed items are not a list")
    if len(it.stages) > 1:
        raise _damaged("an iterator has more than one stage")
    for kind, state in it.stages:
        fields = ITER_STAGE_FIELDS.get(kind) if type(kind) is str else None
        if fields is None:
            raise _damaged(f"an iterator has an unknown stage {kind!r}")
        if type(state) is not dict:
            raise _damaged(f"the state of an iterator's {kind} stage is not a dict")
        for name, want in fields.items():
            if name not in state or not _stage_value_ok(want, state[name]):
                raise _damaged(f"the {kind} stage of an iterator has a bad or missing {name!r}")
        if type(it.origin) is not IterValue:
            raise _damaged(f"the {kind} stage of an iterator has no upstream iterator")
        if kind == "memo" and type(it.origin.memo) is not list:
            raise _damaged("a lazy sequence cursor does not read a lazy sequence")
    if it.memo is not None and not it.stages and type(it.origin) is not IterValue:
        raise _damaged("a lazy sequence has no pipeline")
    if (
        it.source is None
        and not it.stages
        and it.memo is None
        and it.origin is not None
        and type(it.origin) is not Generator
    ):
        raise _damaged("a generator-backed iterator's origin is not a generator")


_UNSET = object()

_HEAP_TAGS = {
    "set",
    "struct",
    "enum",
    "pair",
    "closure",
    "generator",
    "frame",
    "atomic",
    "channel",
    "task",
    "iter",
    "rng",
}


def _dec_float(d: _Decoder, v: dict[str, Any]) -> float:
    f = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(v["v"])
    if f is None:
        raise _damaged(f"a float record holds {v['v']!r}, not nan, inf or -inf")
    return f


def _dec_list_iter(d: _Decoder, v: dict[str, Any]) -> Any:
    items = d.dec(v["items"])
    if type(items) is not list:
        raise _damaged("the items of a list iterator are not a list")
    it: Any = iter(items)
    pos = v.get("pos", 0)
    if pos:
        it.__setstate__(pos)
    return it


def _dec_range_iter(d: _Decoder, v: dict[str, Any]) -> Any:
    it: Any = iter(range(v["start"], v["stop"], v["step"]))
    if v["pos"]:
        it.__setstate__(v["pos"])
    return it


def _dec_error(d: _Decoder, v: dict[str, Any]) -> HarnError:
    if v["kind"] == "throw":
        return HarnThrow(d.dec(v["value"]))
    return HarnRuntimeError(v["message"], v.get("code"))


def _dec_builtin(d: _Decoder, v: dict[str, Any]) -> Any:
    b = d.runtime.builtins.get(v["name"])
    if b is None:
        raise SnapshotError(f"snapshot refers to unknown builtin {v['name']!r}", "E406")
    return b


def _dec_enum_ns(d: _Decoder, v: dict[str, Any]) -> Any:
    if not all(type(n) is int for n in v["variants"].values()):
        raise _damaged(f"the variants of enum {v['name']} are not numbered")
    return EnumNamespace(v["name"], dict(v["variants"]))


_SCALAR_DECODERS: dict[str, Any] = {
    "float": _dec_float,
    "duration": lambda d, v: Duration(int(v["ms"])),
    "range": lambda d, v: RangeValue(int(v["start"]), int(v["end"]), bool(v["inclusive"])),
    "bytes": lambda d, v: bytes.fromhex(v["hex"]),
    "builtin": _dec_builtin,
    "bound_method": lambda d, v: BoundMethod(d.dec(v["receiver"]), v["name"]),
    "struct_type": lambda d, v: StructType(v["name"], list(v["fields"]), set(v["optional"])),
    "list_iter": _dec_list_iter,
    "range_iter": _dec_range_iter,
    "missing": lambda d, v: MISSING,
    "unbound": lambda d, v: UNBOUND,
    "tuple": lambda d, v: tuple(d.dec(x) for x in v["items"]),
    "error": _dec_error,
    "enum_ns": _dec_enum_ns,
}


def _load_runtime_state(doc: dict[str, Any], thread: Any, d: _Decoder) -> list[Any]:
    """Decode and check every runtime-state section of ``doc``; returns the providers'
    ``apply`` callables (nothing is applied here). Raises SnapshotError: E404 for a damaged
    section, E406 for a section no provider of this harnpy owns."""
    from harnpy.runtime.extensions import state_provider

    sections = doc.get("runtime_state") or {}
    if type(sections) is not dict:
        raise SnapshotError("the runtime state in the snapshot is not a dict", "E404")
    applies = []
    for name, raw in sections.items():
        provider = state_provider(name)
        if provider is None:
            raise SnapshotError(
                f"the snapshot carries runtime state {name!r} that this harnpy does not know; "
                "refusing to resume without it",
                "E406",
            )
        try:
            applies.append(provider.load(thread, d.dec(raw)))
        except SnapshotError as e:
            raise SnapshotError(
                f"the runtime state {name!r} in the snapshot is damaged: {e.message}", "E404"
            ) from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
            raise SnapshotError(
                f"the runtime state {name!r} in the snapshot is damaged: {type(e).__name__}: {e}",
                "E404",
            ) from None
    return applies


def restore(
    doc: dict[str, Any],
    runtime: Any,
    *,
    globals_for: set[str] | None = None,
    live: list[Any] | None = None,
    decoder_out: list[Any] | None = None,
) -> Any:
    """Rebuild the snapshotted thread on ``runtime``, whose modules must already be loaded
    (compiled; not initialised unless their globals are skipped) from sources with the
    hashes the snapshot records.

    ``globals_for``: the module keys whose globals are restored from the snapshot (None:
    all of them; a live runtime passes only the modules it has just compiled, so running
    modules keep their state). ``live``: the list filled by :func:`snapshot` in the same
    process. ``decoder_out``: receives the decoder (to decode ``externals`` sharing the
    same objects).

    The document's runtime state (``doc["runtime_state"]``, see :func:`snapshot`) is applied
    only when every module's globals are restored (``globals_for`` None: a fresh runtime); a
    live runtime keeps its own.

    Returns the :class:`~harnpy.runtime.thread.Thread`, ready to ``run()``. Raises
    :class:`SnapshotError` on any mismatch (E404 for a damaged section, E406 for runtime
    state this harnpy does not know); nothing is applied then. The document is never
    modified.
    """
    from harnpy.runtime.thread import Thread

    validate_document(doc)
    modules = runtime.modules
    for rec in doc["modules"]:
        m = modules.get(rec["key"])
        if m is None:
            raise SnapshotError(f"snapshot needs module {rec['key']} which is not loaded", "E406")
        if m.hash != rec["hash"]:
            raise SnapshotError(
                f"the source of {rec['key']} changed since the snapshot was taken "
                f"(hash {rec['hash'][:12]}… != {m.hash[:12]}…); refusing to resume",
                "E406",
            )
    # a library module ran to its end before anything used it: all its globals exist
    libraries_by_key = {
        rec["key"]: modules[rec["key"]]
        for rec in doc["modules"]
        if rec.get("role") == "library" and not modules[rec["key"]].repl
    }
    libraries = list(libraries_by_key.values())
    th = Thread(runtime, doc["thread"]["name"])
    d = _Decoder(doc, modules, th, live)
    if decoder_out is not None:
        decoder_out.append(d)
    # Decode everything first, then apply: a damaged document changes nothing.
    try:
        new_globals = [
            (modules[key], d.dec(g))
            for key, g in doc["globals"].items()
            if globals_for is None or key in globals_for
        ]
        new_impls = [
            (t, n, d.dec(fn))
            for t, table in doc.get("impls", {}).items()
            for n, fn in table.items()
            if globals_for is None or runtime.impls.get(t, {}).get(n) is None
        ]
        top = doc["thread"]["top"]
        frame = d.dec(top) if top is not None else None
        depth = int(doc["thread"]["depth"])
        if frame is not None and type(frame) is not Frame:
            raise SnapshotError("the thread's top frame in the snapshot is not a frame", "E404")
        _check_frame_chains(d.heap)
        applies = _load_runtime_state(doc, th, d) if globals_for is None else []
        for m, g in new_globals:
            if type(g) is not dict:
                raise SnapshotError(
                    f"the globals of {m.path} in the snapshot are not a dict", "E404"
                )
            if not m.repl:
                # the module's code declares every global it can have (a REPL session's
                # entries share one dict, checked by the session)
                unknown = [k for k in g if k not in m.global_kinds]
                if unknown:
                    raise _damaged(
                        f"the globals of {m.path} name `{unknown[0]}`, which the module "
                        "does not declare"
                    )
                if m in libraries:
                    _check_library_globals(m, g)
        for key in libraries_by_key:
            if key not in doc["globals"] and (globals_for is None or key in globals_for):
                raise _damaged(f"the snapshot lacks the globals of library {key}")
    except SnapshotError:
        raise
    except RecursionError:
        raise SnapshotError(
            "snapshot is damaged: values nested too deeply to decode; refusing to resume", "E404"
        ) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
        raise SnapshotError(
            f"snapshot is damaged: {type(e).__name__}: {e}; refusing to resume", "E404"
        ) from None
    for m, g in new_globals:
        m.globals.update(g)
    for t, n, fn in new_impls:
        runtime.register_impl(t, n, fn)
    for apply in applies:
        apply()
    th.frame = frame
    th.depth = depth
    for obj in d.heap:
        if type(obj) is Frame:
            obj.thread = th
    return th
