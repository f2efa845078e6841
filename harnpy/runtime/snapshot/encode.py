"""Encoding a thread's reachable state as JSON-safe data: :func:`snapshot`,
:func:`snapshot_chain`, :func:`encode_standalone` and the encoder behind them (format in
:mod:`harnpy.runtime.snapshot`).
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from harnpy.runtime.code import (
    CODEGEN_VERSION,
    MISSING,
    UNBOUND,
    CodeObject,
    Frame,
    NativeFrame,
)
from harnpy.runtime.errors import HarnError, HarnThrow
from harnpy.runtime.snapshot.base import (
    _EMPTY_TUPLE_ITER,
    _LIST_ITER,
    _RANGE_ITER,
    FORMAT_VERSION,
    SNAPSHOT_TYPE,
    SnapshotError,
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
    # module globals before the frames: a value that is not data and is held by a global
    # (`let d = {client: ...}` at top level) as well as by a temporary slot of the module's
    # frame is then reported by the global's name, not by `$tmpN`
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
    top = enc.enc(thread.frame, "") if thread.frame is not None else None
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
