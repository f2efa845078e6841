"""What makes a worker snapshot big: sizes attributed to named places (lifecycle.md 10, the
4 MiB cap; dev/impl.md "Agents, workers, suspension").

A worker snapshot is JSON: the worker record's fields, and (for a parked worker) the
evaluator snapshot of its frames in ``harnpy_thread``, where every object reached twice —
frames, closures, shared lists and dicts — lives once in a ``heap`` table and is referenced
as ``{"$ref": n}``. The bytes of a heap object are attributed to the first place the walk
reaches it from, in this order: the frames' variables (top frame first), the module
globals, then the record's own fields (``transcript``, ``config``...). So a 4 MB list held
by a tool closure is reported as that list, not as the few bytes of the ``$ref`` in the
loop variable that leads to it.

:func:`largest_parts` names the biggest *specific* places: a place whose size is mostly
(≥ 90 %) one of its parts is replaced by that part, so the answer is "the list `big`
captured by the closure at __agent_step.st.tools[0].handler", not "the variable `st`".
Descriptions never contain ``,`` or ``(`` (the error message lists them as
``<description> (<n> bytes), ...``).
"""

from __future__ import annotations

import re
from typing import Any

#: A place whose size is at least this share of its parent's explains the parent.
DOMINANT_SHARE = 0.9
#: Strings shorter than this are never reported on their own.
MIN_STRING_PART = 1024

_UNSAFE = re.compile(r"[,()\s]+")


def _dumps_len(v: Any) -> int:
    from harnpy.runtime.snapshot import dumps_bytes

    return len(dumps_bytes(v))


def _safe(text: str) -> str:
    """A name fit for the error message (no commas, parentheses or blanks)."""
    return _UNSAFE.sub("_", text)[:80]


def _kind(v: Any) -> str:
    t = type(v)
    if t is list:
        return "list"
    if t is str:
        return "string"
    if t is dict:
        if "$t" in v:
            return str(v["$t"])
        if "$dict" in v:
            return "dict"
        if "$ref" in v:
            return "value"
        return "dict"
    return "value"


class _Place:
    __slots__ = ("desc", "size", "parent", "depth")

    def __init__(self, desc: str, parent: _Place | None) -> None:
        self.desc = desc
        self.size = 0
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1


class _Walker:
    def __init__(self, tdoc: dict[str, Any] | None, runtime: Any) -> None:
        heap = tdoc.get("heap") if isinstance(tdoc, dict) else None
        self.heap: list[Any] = heap if isinstance(heap, list) else []
        self.seen: set[int] = set()
        self.places: list[_Place] = []
        self.modules: dict[str, Any] = dict(getattr(runtime, "modules", None) or {})

    # ---- code names

    def _code(self, ref: Any) -> Any:
        try:
            key, cid = ref
            return self.modules[key].codes[cid]
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None

    # ---- the walk

    def place(self, desc: str, parent: _Place | None) -> _Place:
        p = _Place(desc, parent)
        self.places.append(p)
        return p

    def walk(self, v: Any, path: str, desc: str | None, parent: _Place | None) -> int:
        """JSON bytes of ``v`` plus the heap objects it reaches first; records places."""
        t = type(v)
        if t is not dict and t is not list:
            n = _dumps_len(v)
            if t is str and n >= MIN_STRING_PART:
                p = self.place(desc or f"the string at {path}", parent)
                p.size = n
            return n
        if t is dict and len(v) == 1 and "$ref" in v:
            n = _dumps_len(v)
            hid = v["$ref"]
            if isinstance(hid, int) and 0 <= hid < len(self.heap) and hid not in self.seen:
                self.seen.add(hid)
                n += self.walk(self.heap[hid], path, desc, parent)
            return n
        here = self.place(desc or f"the {_kind(v)} at {path}", parent)
        if t is list:
            total = 2 + max(0, len(v) - 1)
            for i, x in enumerate(v):
                total += self.walk(x, f"{path}[{i}]", None, here)
        else:
            total = 2 + max(0, len(v) - 1)
            tag = v.get("$t")
            for k, x in v.items():
                total += _dumps_len(k) + 1
                if tag == "closure" and k == "captures" and type(x) is list:
                    total += self._captures(v, x, path, here)
                elif tag == "frame" and k == "slots" and type(x) is list:
                    total += self._slots(v, x, here)
                elif tag is not None and k in ("code", "$t", "pc", "ret_slot"):
                    total += _dumps_len(x)
                elif k == "$dict" and type(x) is list:
                    total += self._pairs(x, path, here)
                elif tag == "frame" and k == "parent":
                    total += self.walk(x, path, None, None)
                else:
                    total += self.walk(x, f"{path}.{_safe(k)}" if path else _safe(k), None, here)
        here.size = total
        return total

    def _captures(self, clo: dict[str, Any], caps: list[Any], path: str, here: _Place) -> int:
        code = self._code(clo.get("code"))
        names = list(getattr(code, "capture_names", None) or [])
        where = path or "a closure"
        total = 2 + max(0, len(caps) - 1)
        for i, x in enumerate(caps):
            name = _safe(str(names[i])) if i < len(names) and names[i] else f"#{i}"
            desc = f"the {_kind(x)} `{name}` captured by the closure at {where}"
            total += self.walk(x, f"{path}.{name}", desc, here)
        return total

    def _slots(self, fr: dict[str, Any], slots: list[Any], here: _Place) -> int:
        code = self._code(fr.get("code"))
        names = list(getattr(code, "slot_names", None) or [])
        fname = _safe(str(getattr(code, "name", "?")))
        here.desc = f"the frame of {fname}"
        total = 2 + max(0, len(slots) - 1)
        for i, x in enumerate(slots):
            name = _safe(str(names[i])) if i < len(names) and names[i] else f"$tmp{i}"
            desc = f"the {_kind(x)} in variable `{name}` of {fname}"
            total += self.walk(x, f"{fname}.{name}", desc, here)
        return total

    def _pairs(self, pairs: list[Any], path: str, here: _Place) -> int:
        total = 2 + max(0, len(pairs) - 1)
        for pair in pairs:
            if type(pair) is list and len(pair) == 2:
                k = _safe(str(pair[0]))
                total += 4 + _dumps_len(pair[0])
                total += self.walk(pair[1], f"{path}.{k}" if path else k, None, here)
            else:
                total += self.walk(pair, path, None, here)
        return total


def attributed_parts(doc: dict[str, Any], runtime: Any = None) -> list[tuple[int, str]]:
    """``(bytes, description)`` of every specific big place of a worker snapshot document,
    largest first (see the module docstring)."""
    tdoc = doc.get("harnpy_thread")
    w = _Walker(tdoc if isinstance(tdoc, dict) else None, runtime)
    if isinstance(tdoc, dict):
        thread = tdoc.get("thread")
        top = thread.get("top") if isinstance(thread, dict) else None
        if top is not None:
            w.walk(top, "", None, None)
        globs = tdoc.get("globals")
        if isinstance(globs, dict):
            for key, table in globs.items():
                mod = _safe(str(key).rsplit("/", 1)[-1])
                if isinstance(table, dict) and "$t" not in table and "$ref" not in table:
                    for name, v in table.items():
                        n = _safe(str(name))
                        desc = f"the {_kind(v)} in global `{n}` of {mod}"
                        w.walk(v, f"{mod}.{n}", desc, None)
                else:
                    w.walk(table, mod, f"the globals of {mod}", None)
        for i, rec in enumerate(w.heap):  # anything not reached from a root
            if i not in w.seen:
                w.seen.add(i)
                w.walk(rec, f"heap[{i}]", None, None)
    for key, v in doc.items():
        if key == "harnpy_thread" or v is None:
            continue
        k = _safe(str(key))
        desc = "the transcript" if key == "transcript" else f"the snapshot field `{k}`"
        w.walk(v, k, desc, None)
    explained: set[int] = set()
    for p in w.places:
        if p.parent is not None and p.parent.size and p.size >= DOMINANT_SHARE * p.parent.size:
            explained.add(id(p.parent))
    keep = [p for p in w.places if id(p) not in explained and p.size > 0]
    keep.sort(key=lambda p: (-p.size, p.depth))
    out: list[tuple[int, str]] = []
    chosen: list[_Place] = []
    for p in keep:
        anc = p.parent
        covered = False
        while anc is not None:
            if any(anc is c for c in chosen):
                covered = True
                break
            anc = anc.parent
        if covered:
            continue
        chosen.append(p)
        out.append((p.size, p.desc))
    return out


def largest_parts(doc: dict[str, Any], runtime: Any = None, limit: int = 3) -> list[str]:
    """``"<description> (<n> bytes)"`` for the ``limit`` biggest specific places of a worker
    snapshot (see :func:`attributed_parts`)."""
    return [f"{desc} ({n} bytes)" for n, desc in attributed_parts(doc, runtime)[:limit]]


__all__ = ["attributed_parts", "largest_parts"]
