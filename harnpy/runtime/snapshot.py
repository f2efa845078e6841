"""Snapshots: a thread's complete state as JSON, and its restoration.

``snapshot(thread) -> dict`` walks everything the thread can reach — its frames (code
reference, pc, slots), generators with their suspended frames, closures with their captured
values, module globals — and encodes it as JSON-safe data. ``restore(doc, runtime) ->
Thread`` rebuilds the same object graph against freshly compiled code and returns a thread
that continues exactly where the snapshot was taken.

Encoding (format version :data:`FORMAT_VERSION`):

* nil, bools, ints, finite floats and strings are JSON natives;
* a list is a JSON array and a dict a JSON object (a dict with a key starting with ``$`` is
  wrapped as ``{"$dict": [[k, v], ...]}``);
* every other value is a tagged object ``{"$t": tag, ...}``; the decoder only builds the
  allow-listed classes of :data:`_DECODERS`;
* objects reached more than once (shared or cyclic), and every frame, are written once in
  the ``heap`` table and referenced as ``{"$ref": n}``.

Code is never serialized: a frame or closure refers to its code as ``[module key, code id]``
and the document lists each module's source hash; restoring against a changed source, or a
snapshot of another codegen version, is refused with :class:`SnapshotError`.

State stdlib modules keep on the runtime (mock clock, log level, shared cells, held
permits...) is saved by the runtime-state providers registered in
:data:`harnpy.runtime.extensions.RUNTIME_STATE`, under the optional ``runtime_state`` field;
a seeded rng is a snapshot value (``{"$t": "rng", ...}``: Python's random state as ints).

What cannot be snapshotted (host objects, native frames of callback builtins, iterators
over Python generators) raises :class:`SnapshotError` naming the variable path that holds
it — nothing is silently dropped.

Two options serve the worker layer (lifecycle.md 3.6): *externals* (named values written
once under ``doc["externals"]`` and referenced as ``{"$ext": name}`` from the graph, so a
worker snapshot keeps its transcript once, at top level) and *live* objects (in-process
round trips keep reference-typed values — channels, atomics, tasks — by identity, as
``{"$live": n}``). :func:`snapshot_chain` snapshots only the frames from the top down to a
given frame (a root ``agent_loop`` parks without the script's frames below it).
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from harnpy.runtime.code import (
    CODEGEN_VERSION,
    MISSING,
    RET_THREAD,
    UNBOUND,
    CodeObject,
    Frame,
    NativeFrame,
)
from harnpy.runtime.errors import HarnError, HarnRuntimeError, HarnThrow
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

FORMAT_VERSION = 1
SNAPSHOT_TYPE = "harnpy_snapshot"
#: Default cap on a snapshot file (lifecycle spec: snapshots are limited to 4 MiB).
MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024

_LIST_ITER: type = type(iter([]))
_RANGE_ITER = type(iter(range(0)))
_EMPTY_TUPLE_ITER = type(iter(()))


class SnapshotError(Exception):
    """A snapshot cannot be taken or restored; ``code`` is a diagnostic code (E4xx)."""

    def __init__(self, message: str, code: str = "E401") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# ===================================================================== encoding


def _is_container(v: Any) -> bool:
    return type(v) in _CONTAINER_TYPES


_CONTAINER_TYPES = {
    list,
    dict,
    HSet,
    StructValue,
    EnumValue,
    Closure,
    Generator,
    Frame,
    Atomic,
    Channel,
    TaskHandle,
    IterValue,
    Pair,
    NativeFrame,
    HostObject,
}


#: Reference-typed values kept by identity in in-process round trips (``live``); a seeded
#: rng (a ``HostObject`` of kind ``"rng"``) is kept the same way.
_LIVE_TYPES = {Channel, Atomic, TaskHandle}

#: ``guard(channel) -> reason | None``: a guard returning a reason refuses to snapshot that
#: channel (``E402``, in every mode, in-process round trips included). ``llm_stream``
#: registers one for the channels its in-flight calls are filling
#: (harnpy/lifecycle/llm_stream.py).
CHANNEL_GUARDS: list[Callable[[Channel], str | None]] = []


def _guard_channel(ch: Channel, path: Any) -> None:
    for guard in CHANNEL_GUARDS:
        reason = guard(ch)
        if reason is not None:
            raise SnapshotError(f"cannot snapshot the channel held at {path}: {reason}", "E402")


class _Path:
    """A variable path built lazily (``parent`` + list index or dict key): encoding never
    formats paths; an error message does (``str(path)``)."""

    __slots__ = ("parent", "seg")

    def __init__(self, parent: Any, seg: Any) -> None:
        self.parent = parent
        self.seg = seg

    def __str__(self) -> str:
        segs: list[str] = []
        p: Any = self
        while type(p) is _Path:
            seg = p.seg
            segs.append(f"[{seg}]" if type(seg) is int else f".{seg}")
            p = p.parent
        segs.append(str(p))
        return "".join(reversed(segs))


class SnapshotCache:
    """Encodings of plain, unshared lists and dicts from the previous snapshot of one thread,
    reused by the next (:func:`snapshot` with ``cache=``): a turn boundary re-encodes only
    what changed since the last one (the transcript's old messages are not walked again).

    Sound because Harn values are never mutated in place while shared (language.md 3.8:
    the evaluator copies a container unless it is unshared, and the cache's reference makes
    it shared), and builtins build new containers. Only the entries used by the latest
    snapshot are kept (``entries``: ``id -> (object, encoding)``).
    """

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[int, tuple[Any, Any]] = {}


class DetachedPrefix:
    """A value of :func:`snapshot`'s ``detached``: the list ``value`` holds exactly the first
    ``n`` entries of the detached list ``name`` (an older copy of a transcript a frame still
    holds); referenced as ``{"$ext": name, "$len": n}``, decoded as a new list of those
    first ``n`` decoded entries."""

    __slots__ = ("value", "name", "n")

    def __init__(self, value: list[Any], name: str, n: int) -> None:
        self.value = value
        self.name = name
        self.n = n


class _Encoder:
    def __init__(
        self,
        module_keys: dict[int, str],
        externals: dict[str, Any] | None = None,
        live: list[Any] | None = None,
        cache: SnapshotCache | None = None,
        detached: dict[str, Any] | None = None,
    ) -> None:
        self.counts: dict[int, int] = {}
        self.objs: dict[int, Any] = {}
        self.heap_ids: dict[int, int] = {}
        self.heap: list[Any] = []
        self.module_keys = module_keys
        self.modules_used: set[str] = set()
        self.ext_ids: dict[int, str] = {id(v): n for n, v in (externals or {}).items()}
        self.ext_len: dict[int, int] = {}
        for n, v in (detached or {}).items():
            # referenced as $ext but neither walked nor written: the caller stores them
            if type(v) is DetachedPrefix:
                self.ext_len[id(v.value)] = v.n
                n, v = v.name, v.value
            self.ext_ids[id(v)] = n
            self.counts[id(v)] = 1
            self.objs[id(v)] = v
        self.live = live
        self.live_ids: dict[int, int] = {}
        self.cache = cache.entries if cache is not None else None
        self.new_cache: dict[int, tuple[Any, Any]] = {}
        #: counts encodings that are not plain JSON copies (refs, tags...): a subtree whose
        #: encoding did not raise it is plain and may be cached
        self.impure = 0

    # ---- pass 1: count references

    def count(self, roots: list[Any]) -> None:
        counts = self.counts
        objs = self.objs
        stack = list(roots)
        pop = stack.pop
        extend = stack.extend
        cache = self.cache or {}
        while stack:
            v = pop()
            t = type(v)
            if t is dict or t is list:  # the bulk of any snapshot: a tight path
                k = id(v)
                c = counts.get(k)
                if c is not None:
                    counts[k] = c + 1
                    continue
                counts[k] = 1
                objs[k] = v
                hit = cache.get(k)
                if hit is not None and hit[0] is v:
                    continue  # encoded last time as a plain subtree: not walked again
                extend(v.values() if t is dict else v)
                continue
            if t in _NATIVE_TYPES:
                continue
            if t not in _CONTAINER_TYPES:
                if t in _ITER_TYPES:
                    stack.extend(_iter_children(v))
                elif t is tuple:
                    stack.extend(v)
                elif isinstance(v, HarnError):
                    stack.append(getattr(v, "value", None))
                continue
            k = id(v)
            c = counts.get(k)
            if c is not None:
                counts[k] = c + 1
                continue
            counts[k] = 1
            objs[k] = v
            stack.extend(_children(v))

    # ---- pass 2: encode

    def enc(self, v: Any, path: Any) -> Any:
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            return v
        if t is dict or t is list:
            k = id(v)
            if not (self.ext_ids and k in self.ext_ids) and (
                self.counts.get(k, 1) == 1 or (self.cache is not None and _small_tree(v))
            ):
                # unshared, or (incremental snapshots) shared but small and plain — tool-call
                # arguments: written in place, so its parents stay plain JSON (cacheable);
                # sharing a value is invisible in Harn (language.md 3.8)
                return self.enc_plain(v, path)
        if t is float and math.isfinite(v):
            return v
        self.impure += 1
        if t is float:
            return {"$t": "float", "v": "nan" if v != v else ("inf" if v > 0 else "-inf")}
        if t in _CONTAINER_TYPES:
            k = id(v)
            if self.ext_ids and k in self.ext_ids:
                if k in self.ext_len:
                    return {"$ext": self.ext_ids[k], "$len": self.ext_len[k]}
                return {"$ext": self.ext_ids[k]}
            if t is Channel and CHANNEL_GUARDS:
                _guard_channel(v, path)
            if self.live is not None and (
                t in _LIVE_TYPES or (t is HostObject and v.kind == "rng")
            ):
                n = self.live_ids.get(k)
                if n is None:
                    n = len(self.live)
                    self.live_ids[k] = n
                    self.live.append(v)
                return {"$live": n}
            if t is Frame or t is NativeFrame or self.counts.get(k, 1) > 1:
                hid = self.heap_ids.get(k)
                if hid is None:
                    hid = len(self.heap)
                    self.heap_ids[k] = hid
                    self.heap.append(None)
                    self.heap[hid] = self.enc_obj(v, path)
                return {"$ref": hid}
            return self.enc_obj(v, path)
        return self.enc_other(v, path)

    def enc_plain(self, v: Any, path: Any) -> Any:
        """A list or dict: native values are copied as they are (no call per leaf), other
        values encoded with their lazily built path. With a cache, a subtree whose encoding
        is plain JSON is remembered (and reused while the same object is reached)."""
        cache = self.cache
        if cache is not None:
            k = id(v)
            hit = cache.get(k)
            if hit is not None and hit[0] is v:
                self.new_cache[k] = hit
                return hit[1]
            before = self.impure
        out = self._enc_items(v, path)
        if cache is not None and self.impure == before:
            self.new_cache[k] = (v, out)
        return out

    def _enc_items(self, v: Any, path: Any) -> Any:
        enc = self.enc
        if type(v) is list:
            out_l: list[Any] = []
            append = out_l.append
            for i, x in enumerate(v):
                tx = type(x)
                if tx is str or tx is int or tx is bool or x is None:
                    append(x)
                else:
                    append(enc(x, _Path(path, i)))
            return out_l
        # keys are strings; one starting with "$" sorts before "%" (C-level min)
        if v and min(v) < "%" and any(k.startswith("$") for k in v):
            self.impure += 1
            return {"$dict": [[k, enc(x, _Path(path, k))] for k, x in v.items()]}
        out: dict[str, Any] = {}
        for k, x in v.items():
            tx = type(x)
            if tx is str or tx is int or tx is bool or x is None:
                out[k] = x
            else:
                out[k] = enc(x, _Path(path, k))
        return out

    def enc_obj(self, v: Any, path: Any) -> Any:
        t = type(v)
        if t is list or t is dict:
            return self.enc_plain(v, path)
        if t is HSet:
            return {"$t": "set", "items": [self.enc(x, f"{path}<set>") for x in v.items]}
        if t is StructValue:
            return {
                "$t": "struct",
                "name": v.name,
                "fields": self.enc(dict(v.fields), f"{path}.{v.name}"),
            }
        if t is EnumValue:
            return {
                "$t": "enum",
                "enum": v.enum,
                "variant": v.variant,
                "fields": [self.enc(x, f"{path}.{v.variant}[{i}]") for i, x in enumerate(v.fields)],
            }
        if t is Pair:
            return {
                "$t": "pair",
                "first": self.enc(v.first, f"{path}.first"),
                "second": self.enc(v.second, f"{path}.second"),
            }
        if t is Closure:
            return {
                "$t": "closure",
                "code": self.code_ref(v.code),
                "captures": [
                    self.enc(x, f"{path}<{v.code.name}>.{n}")
                    for x, n in zip(v.captures, v.code.capture_names)
                ],
                "bound_self": self.enc(v.bound_self, f"{path}.self"),
            }
        if t is Generator:
            return {
                "$t": "generator",
                "kind": v.kind,
                "done": v.done,
                "running": v.running,
                "frame": self.enc(v.frame, f"{path}<generator>") if v.frame is not None else None,
            }
        if t is Frame:
            return self.enc_frame(v, path)
        if t is NativeFrame:
            caller = v.parent
            where = path
            if isinstance(caller, Frame):
                line, col = caller.code.line_at(caller.pc - 1)
                where = f"called at {caller.code.module.path}:{line}:{col}"
            raise SnapshotError(
                f"cannot snapshot inside the builtin `{v.builtin}`: it is running a callback "
                f"({where or 'at the top of the stack'}); take the snapshot outside the callback",
                "E402",
            )
        if t is Atomic:
            return {"$t": "atomic", "value": self.enc(v.value, f"{path}.value")}
        if t is Channel:
            return {
                "$t": "channel",
                "name": v.name,
                "capacity": v.capacity,
                "closed": v.closed,
                "items": [self.enc(x, f"{path}<item>") for x in v.items],
            }
        if t is TaskHandle:
            if not v.done:
                raise SnapshotError(f"cannot snapshot a running task (at {path})", "E402")
            return {
                "$t": "task",
                "id": v.id,
                "result": self.enc(v.result, f"{path}.result"),
                "error": self.enc_error(v.error, path) if v.error is not None else None,
                "cancelled": v.cancelled,
                "output": v.output,
            }
        if t is HostObject:
            if v.kind == "rng" and type(v.obj) is random.Random:
                version, internal, gauss = v.obj.getstate()
                return {"$t": "rng", "version": version, "state": list(internal), "gauss": gauss}
            raise SnapshotError(
                f"cannot snapshot {v.kind} held at {path}: it is a host object (open handle "
                "or client), not data",
                "E402",
            )
        if t is IterValue:
            src = v.source
            if src is not None and type(src) not in _ITER_TYPES:
                raise SnapshotError(
                    f"cannot snapshot an iterator over a host stream (at {path}); "
                    "materialise it with .to_list() before the snapshot",
                    "E402",
                )
            return {
                "$t": "iter",
                "exhausted": v.exhausted,
                "source": self.enc(src, f"{path}<iter>") if src is not None else None,
                "stages": [
                    [kind, self.enc(dict(state), f"{path}<{kind}>")] for kind, state in v.stages
                ],
                "origin": self.enc(v.origin, f"{path}<origin>"),
                "memo": self.enc(v.memo, f"{path}<memo>") if v.memo is not None else None,
            }
        raise SnapshotError(f"cannot snapshot value at {path}", "E402")

    def enc_other(self, v: Any, path: Any) -> Any:
        t = type(v)
        if t is Duration:
            return {"$t": "duration", "ms": v.ms}
        if t is RangeValue:
            return {"$t": "range", "start": v.start, "end": v.end, "inclusive": v.inclusive}
        if t is bytes:
            return {"$t": "bytes", "hex": v.hex()}
        if t is Builtin:
            return {"$t": "builtin", "name": v.name}
        if t is BoundMethod:
            return {
                "$t": "bound_method",
                "receiver": self.enc(v.receiver, f"{path}<receiver>"),
                "name": v.name,
            }
        if t is StructType:
            return {
                "$t": "struct_type",
                "name": v.name,
                "fields": list(v.fields),
                "optional": sorted(v.optional),
            }
        if t is _LIST_ITER or t is _EMPTY_TUPLE_ITER:
            red = v.__reduce__()
            items = list(red[1][0]) if red[1] else []
            pos = red[2] if len(red) > 2 else 0
            return {
                "$t": "list_iter",
                "items": self.enc(red[1][0] if red[1] else [], path),
                "pos": pos,
                "n": len(items),
            }
        if t is _RANGE_ITER:
            red = v.__reduce__()
            r = red[1][0]
            return {
                "$t": "range_iter",
                "start": r.start,
                "stop": r.stop,
                "step": r.step,
                "pos": red[2],
            }
        if v is MISSING:
            return {"$t": "missing"}
        if v is UNBOUND:
            return {"$t": "unbound"}
        if t is tuple:
            return {"$t": "tuple", "items": [self.enc(x, path) for x in v]}
        if isinstance(v, HarnError):
            return self.enc_error(v, path)
        if t is EnumNamespace:
            return {"$t": "enum_ns", "name": v.name, "variants": v.variants}
        raise SnapshotError(
            f"cannot snapshot a value of Python type {t.__name__} held at {path}", "E402"
        )

    def enc_error(self, e: BaseException, path: Any) -> Any:
        if isinstance(e, HarnThrow):
            return {
                "$t": "error",
                "kind": "throw",
                "value": self.enc(e.value, path),
                "code": e.code,
            }
        if isinstance(e, HarnError):
            return {"$t": "error", "kind": "runtime", "message": e.message, "code": e.code}
        raise SnapshotError(f"cannot snapshot a pending Python exception at {path}", "E402")

    def enc_frame(self, fr: Frame, path: Any) -> Any:
        code = fr.code
        where = f"{path}<{code.name}>" if path else f"<{code.name}>"
        names = code.slot_names
        # Named slots first: a value that is not data and is held by a variable as well as by
        # a temporary (a loop's iterable, a destructured value, a spilled argument) is then
        # reported by the variable's name. Heap records are looked up by index, so the order
        # of encoding does not matter to the document.
        order = sorted(range(len(fr.slots)), key=lambda i: not (i < len(names) and names[i]))
        slots: list[Any] = [None] * len(fr.slots)
        for i in order:
            name = names[i] if i < len(names) else None
            slots[i] = self.enc(fr.slots[i], f"{where}.{name}" if name else f"{where}.$tmp{i}")
        return {
            "$t": "frame",
            "code": self.code_ref(code),
            "pc": fr.pc,
            "ret_slot": fr.ret_slot,
            "slots": slots,
            "parent": self.enc(fr.parent, path) if fr.parent is not None else None,
            "generator": self.enc(fr.generator, where) if fr.generator is not None else None,
            "defers": [self.enc(d, f"{where}<defer>") for d in fr.defers] if fr.defers else None,
        }

    def code_ref(self, code: CodeObject) -> list[Any]:
        key = self.module_keys.get(id(code.module))
        if key is None:
            key = code.module.path
        self.modules_used.add(key)
        return [key, code.id]


_ITER_TYPES = {_LIST_ITER, _RANGE_ITER, _EMPTY_TUPLE_ITER}
_NATIVE_TYPES = {str, int, bool, float, type(None)}
#: Incremental snapshots write a shared list/dict in place when its whole tree holds at
#: most this many lists, dicts and native values.
_SMALL_TREE = 64


def _small_tree(v: Any) -> bool:
    """True when ``v``'s tree is only lists, dicts and natives, with at most
    :data:`_SMALL_TREE` nodes."""
    budget = _SMALL_TREE
    stack = [v]
    natives = _NATIVE_TYPES
    while stack:
        x = stack.pop()
        budget -= 1
        if budget < 0:
            return False
        t = type(x)
        if t is dict:
            stack.extend(x.values())
        elif t is list:
            stack.extend(x)
        elif t not in natives:
            return False
    return True


def _iter_children(v: Any) -> list[Any]:
    if type(v) is _LIST_ITER:
        red = v.__reduce__()
        return [red[1][0]] if red[1] else []
    return []


def _children(v: Any) -> Iterator[Any]:
    t = type(v)
    if t is list:
        return iter(v)
    if t is dict:
        return iter(v.values())
    if t is HSet:
        return iter(v.items)
    if t is StructValue:
        return iter(v.fields.values())
    if t is EnumValue:
        return iter(v.fields)
    if t is Pair:
        return iter((v.first, v.second))
    if t is Closure:
        return iter([*v.captures, v.bound_self])
    if t is Generator:
        return iter([v.frame])
    if t is Frame:
        return iter([*v.slots, v.parent, v.generator, *(v.defers or [])])
    if t is Atomic:
        return iter([v.value])
    if t is Channel:
        return iter(v.items)
    if t is TaskHandle:
        return iter([v.result])
    if t is IterValue:
        return iter([v.source, v.origin, v.memo, *(st for _, st in v.stages)])
    if t is NativeFrame:
        return iter([v.parent])
    return iter(())


# ===================================================================== public API


def snapshot(
    thread: Any,
    extra: dict[str, Any] | None = None,
    *,
    externals: dict[str, Any] | None = None,
    live: list[Any] | None = None,
    cache: SnapshotCache | None = None,
    runtime_state: bool = True,
    detached: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Encode ``thread`` (its frame stack and everything reachable) as a JSON-safe dict.

    Module globals of every loaded module are included, so module-level state survives.
    With ``runtime_state`` (default) the state stdlib modules keep on the runtime is
    included too: every registered provider (:data:`~harnpy.runtime.extensions.
    RUNTIME_STATE`) saves its data, written under ``doc["runtime_state"][name]`` with the
    same encoder (Harn values inside share the heap).
    ``externals`` (name -> list/dict value) are written once under ``doc["externals"]``
    and referenced from the graph as ``{"$ext": name}``; with ``live`` (a list, filled
    here) channels, atomics and task handles are kept by identity as ``{"$live": n}``
    (only for decoding in the same process, see :func:`restore`). ``cache`` (a
    :class:`SnapshotCache` kept by the caller for one thread) makes successive snapshots
    re-encode only what changed; it is updated when the snapshot succeeds.
    ``detached`` (name -> list/dict value) are referenced as ``{"$ext": name}`` like
    externals but neither walked nor written: the caller stores them itself (a worker's
    transcript lists, appended to a file beside the snapshot) and puts them under
    ``doc["externals"]`` before restoring; a :class:`DetachedPrefix` value stands for a
    list that holds the first entries of another detached list.
    Raises :class:`SnapshotError` for values that are not snapshot data.
    """
    rt = thread.runtime
    module_keys = {id(m): key for key, m in rt.modules.items()}
    enc = _Encoder(module_keys, externals, live, cache, detached)
    roots: list[Any] = [thread.frame]
    mods = list(rt.modules.items())
    for _, m in mods:
        roots.append(m.globals)
    impl_roots = [rt.impls]
    ext_roots = list((externals or {}).values())
    state: dict[str, Any] = {}
    if runtime_state:
        from harnpy.runtime.extensions import RUNTIME_STATE

        for provider in RUNTIME_STATE.values():
            data = provider.save(thread)
            if data is not None:
                state[provider.name] = data
    try:
        return _encode_document(
            thread, extra, enc, roots, impl_roots, ext_roots, state, externals, cache
        )
    except RecursionError:
        raise SnapshotError(
            "a value is nested too deeply to snapshot (Python's recursion limit)", "E402"
        ) from None


def _encode_document(
    thread: Any,
    extra: dict[str, Any] | None,
    enc: _Encoder,
    roots: list[Any],
    impl_roots: list[Any],
    ext_roots: list[Any],
    state: dict[str, Any],
    externals: dict[str, Any] | None,
    cache: SnapshotCache | None,
) -> dict[str, Any]:
    rt = thread.runtime
    mods = list(rt.modules.items())
    enc.count(roots + impl_roots + ext_roots + list(state.values()))
    ext_out: dict[str, Any] = {}
    for name, value in (externals or {}).items():
        # the value's own contents are written here; references to it elsewhere are $ext
        ext_out[name] = enc.enc_obj(value, name) if _is_container(value) else enc.enc(value, name)
    top = enc.enc(thread.frame, "") if thread.frame is not None else None
    globals_out = {}
    written: set[int] = set()
    for key, m in mods:
        if id(m.globals) in written:
            continue  # REPL entry modules share one globals dict: written once
        written.add(id(m.globals))
        globals_out[key] = enc.enc(
            {k: v for k, v in m.globals.items() if not _is_import_of(m, k, v, rt)},
            f"{_short(key)}",
        )
    impls = {
        t: {n: enc.enc(fn, f"impl {t}.{n}") for n, fn in table.items()}
        for t, table in rt.impls.items()
    }
    state_out = {name: enc.enc(data, f"<runtime {name}>") for name, data in state.items()}
    modules = []
    main = rt.main_module
    for key, m in mods:
        rec: dict[str, Any] = {
            "key": key,
            "path": m.path,
            "hash": m.hash,
            "role": "main" if m is main else "library",
        }
        if m.path.startswith("<") or getattr(m, "repl", False):
            rec["source"] = m.source
        modules.append(rec)
    from harnpy import __version__

    doc: dict[str, Any] = {
        "_type": SNAPSHOT_TYPE,
        "harnpy_snapshot_version": FORMAT_VERSION,
        "codegen_version": CODEGEN_VERSION,
        "harnpy_version": __version__,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "modules": modules,
        "globals": globals_out,
        "impls": impls,
        "heap": enc.heap,
        "thread": {
            "name": thread.name,
            "top": top,
            "depth": thread.depth,
            "argv": list(getattr(rt, "argv", [])),
        },
        "extra": extra or {},
    }
    if state_out:
        doc["runtime_state"] = state_out
    if externals:
        doc["externals"] = ext_out
    if cache is not None:
        cache.entries = enc.new_cache
    return doc


class _ThreadView:
    """The part of a thread :func:`snapshot` reads (runtime, top frame, name, depth)."""

    __slots__ = ("runtime", "frame", "name", "depth")

    def __init__(self, runtime: Any, frame: Any, name: str, depth: int) -> None:
        self.runtime = runtime
        self.frame = frame
        self.name = name
        self.depth = depth


def chain_depth(top: Any, bottom: Any) -> int:
    """Number of frames from ``top`` down to ``bottom`` (both included).

    Raises:
        SnapshotError: ``bottom`` is not below ``top``.
    """
    n = 0
    fr = top
    while fr is not None:
        n += 1
        if fr is bottom:
            return n
        fr = fr.parent
    raise SnapshotError("internal: the cut frame is not on the thread's stack", "E401")


def snapshot_chain(
    thread: Any,
    bottom: Any,
    extra: dict[str, Any] | None = None,
    *,
    externals: dict[str, Any] | None = None,
    live: list[Any] | None = None,
    cache: SnapshotCache | None = None,
    detached: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Snapshot only the frames of ``thread`` from its top frame down to ``bottom`` (whose
    caller link is cut while encoding): restoring gives a thread whose bottom frame is
    ``bottom``'s copy, returning its value as the thread's result. Module globals are
    included as in :func:`snapshot`; runtime state is not (a worker's snapshot resumes
    inside a running process, whose runtime state stays the truth). Raises
    :class:`SnapshotError` like it.
    """
    depth = chain_depth(thread.frame, bottom)
    saved = bottom.parent
    bottom.parent = None
    try:
        view = _ThreadView(thread.runtime, thread.frame, thread.name, depth)
        return snapshot(
            view,
            extra,
            externals=externals,
            live=live,
            cache=cache,
            runtime_state=False,
            detached=detached,
        )
    finally:
        bottom.parent = saved


def encode_standalone(runtime: Any, value: Any) -> Any:
    """``value`` in the snapshot encoding as a self-contained tree (no heap, no externals,
    no live objects), decodable anywhere in a document of ``runtime``'s modules; plain
    JSON data comes back as it is. Returns :data:`NOT_STANDALONE` when the value needs the
    heap (sharing or cycles inside it, frames) or is not snapshot data.
    """
    enc = _Encoder({id(m): key for key, m in runtime.modules.items()})
    try:
        enc.count([value])
        out = enc.enc(value, "")
    except (SnapshotError, RecursionError):
        return NOT_STANDALONE
    return NOT_STANDALONE if enc.heap else out


#: What :func:`encode_standalone` returns for a value that cannot stand alone.
NOT_STANDALONE: Any = object()


def _short(key: str) -> str:
    return os.path.basename(key) if "/" in key and not key.startswith("std/") else key


def _is_import_of(m: Any, name: str, value: Any, rt: Any) -> bool:
    """Imported names are re-linked on restore, not stored (except in REPL sessions,
    whose bindings are all stored: a later entry may rebind an imported name)."""
    if getattr(m, "repl", False):
        return False
    if type(value) is Closure and value.code.module is not m:
        return True
    return False


def dumps(doc: dict[str, Any]) -> str:
    """Serialize a snapshot document to JSON text (compact, UTF-8 kept)."""
    return dumps_bytes(doc).decode("utf-8")


def dumps_bytes(doc: Any) -> bytes:
    """Serialize a snapshot document to compact UTF-8 JSON bytes (orjson when installed,
    else the standard library; both refuse NaN/Infinity, which the encoder tags)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        pass
    else:
        try:
            return orjson.dumps(doc)
        except (TypeError, orjson.JSONEncodeError):
            pass  # e.g. an int beyond 64 bits: the standard encoder handles it
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


def loads(data: str | bytes) -> Any:
    """Parse JSON text or bytes (orjson when installed).

    Raises:
        ValueError: invalid JSON (``json.JSONDecodeError`` / ``orjson.JSONDecodeError``), or
            arrays/objects nested too deeply to parse (``ValueError``, never
            ``RecursionError``).
    """
    try:
        import orjson
    except ImportError:  # pragma: no cover
        return _std_loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # same verdict, with the standard library's message (or: nested past orjson's limit)
        return _std_loads(data)


def _std_loads(data: str | bytes) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def seal_document(doc: dict[str, Any]) -> bytes:
    """``doc`` as compact JSON bytes sealed with the snapshot key (:func:`harnpy.security.seal`):
    what every snapshot file harnpy writes holds.

    Raises:
        SnapshotError: ``E402`` when the document is nested too deeply to serialize;
            ``E401`` when the snapshot key cannot be used (the message says how to fix it).
    """
    from harnpy.security import SealError, seal

    try:
        body = dumps_bytes(doc)
    except RecursionError:
        raise SnapshotError("a value is nested too deeply to snapshot", "E402") from None
    try:
        return seal(body)
    except SealError as e:
        raise SnapshotError(f"cannot seal the snapshot: {e.message}", "E401") from None


def open_document(data: bytes, what: str) -> Any:
    """Check the seal of a snapshot file's bytes, then parse them (nothing is decoded before
    the seal matched).

    Args:
        data: the file's bytes (read with :func:`read_snapshot_bytes`).
        what: how messages name it (``"snapshot state.json"``).

    Raises:
        SnapshotError: ``E404``: not sealed, sealed with another key, changed after it was
            written (the :class:`~harnpy.security.SealError` message), or not JSON.
    """
    from harnpy.security import SealError, unseal

    try:
        body = unseal(data, what)
    except SealError as e:
        raise SnapshotError(e.message, "E404") from None
    try:
        return loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{what} is not valid JSON: {e}", "E404") from None


def read_snapshot_bytes(path: str, max_bytes: int = MAX_SNAPSHOT_BYTES) -> bytes:
    """The bytes of snapshot file ``path``: a regular file of at most ``max_bytes`` (its type
    and size are checked before anything is read; at most ``max_bytes + 1`` bytes are read,
    :func:`harnpy.security.read_capped`).

    Raises:
        SnapshotError: ``E403`` over the limit; ``E404`` not a regular file (a FIFO, a
            device, a directory) or unreadable.
    """
    from harnpy.security import FileTooLarge, read_capped

    try:
        return read_capped(path, max_bytes)
    except FileTooLarge as e:
        raise SnapshotError(
            f"snapshot {path} is {e.size} bytes, over the {max_bytes}-byte limit", "E403"
        ) from None
    except OSError as e:
        raise SnapshotError(f"cannot read snapshot {path}: {e.strerror or e}", "E404") from None


def write_atomic(
    path: str,
    text: str | bytes,
    max_bytes: int | None = MAX_SNAPSHOT_BYTES,
    *,
    fsync: bool = True,
    make_dirs: bool = True,
) -> None:
    """Write ``text`` to ``path`` atomically (:func:`harnpy.security.write_private`: temp file
    ``.snapshot-*.tmp`` in the same directory, fsync, rename, fsync of the directory, mode
    0600 whatever the umask). A crash mid-write leaves the previous file readable. With
    ``fsync=False`` the rename is still atomic for readers, but a power loss may lose the
    new version (used for advisory metadata writes). ``make_dirs=False`` (paths a user
    typed) does not create a missing directory; with it, missing directories are created
    0700. The bytes are written as given: seal documents first (:func:`seal_document`).

    Raises SnapshotError when the encoded size exceeds ``max_bytes``; OSError when the file
    cannot be written (FileNotFoundError for a missing directory with ``make_dirs=False``).
    """
    from harnpy.security import private_dir, write_private

    data = text if isinstance(text, bytes) else text.encode("utf-8")
    if max_bytes is not None and len(data) > max_bytes:
        raise SnapshotError(
            f"snapshot is {len(data)} bytes, over the {max_bytes}-byte limit", "E403"
        )
    d = os.path.dirname(os.path.abspath(path)) or "."
    if make_dirs and not os.path.isdir(d):
        private_dir(d)
    write_private(path, data, durable=fsync, tmp_prefix=".snapshot-")


def load_document(path: str, max_bytes: int = MAX_SNAPSHOT_BYTES) -> dict[str, Any]:
    """Read, unseal and validate a program snapshot file (type and size first, then the
    seal, then JSON and the envelope). Never modifies it.

    Raises:
        SnapshotError: E403 (too big), E404 (unreadable, not a regular file, not sealed or
            changed since it was written, not JSON, not a snapshot), E405 (other format).
    """
    data = read_snapshot_bytes(path, max_bytes)
    doc = open_document(data, f"snapshot {path}")
    validate_document(doc, path)
    return doc  # type: ignore[no-any-return]


def validate_document(doc: Any, where: str = "snapshot") -> None:
    """Check the envelope (:class:`~harnpy.runtime.snapshot_model.SnapshotEnvelope`).

    Raises:
        SnapshotError: E404 when ``doc`` is not a harnpy snapshot (the message names the
            first bad field), E405 when its format or codegen version differs from ours.
    """
    from harnpy.runtime.snapshot_model import SnapshotEnvelope
    from harnpy.shapes import ShapeError, structure

    try:
        env = structure(doc, SnapshotEnvelope)
    except ShapeError as e:
        raise SnapshotError(f"{where} is not a harnpy snapshot: {e}", "E404") from None
    if env.harnpy_snapshot_version != FORMAT_VERSION:
        raise SnapshotError(
            f"{where} has snapshot format version {env.harnpy_snapshot_version}; this harnpy "
            f"reads version {FORMAT_VERSION}",
            "E405",
        )
    if env.codegen_version != CODEGEN_VERSION:
        raise SnapshotError(
            f"{where} was written by a harnpy with codegen version {env.codegen_version}; "
            f"this harnpy uses {CODEGEN_VERSION} and cannot continue it",
            "E405",
        )


# ===================================================================== decoding


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
    present). Raises SnapshotError E404 naming the tag and the field."""
    tag = raw["$t"]
    model = _RECORD_FIELDS.get(tag) if type(tag) is str else None
    if model is None:
        raise SnapshotError(f"unknown value tag {tag!r} in snapshot", "E404")
    fields, optional = model
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
