"""Resuming a snapshot on new code (``harnpy run --resume X --upgrade-code``).

A snapshot refers to code as ``[module key, code id]``, the code id being the start offset
of the function in the source the snapshot ran (:func:`harnpy.syntax.ast.node_id`), and
records each module's SHA-256. By default a resume runs exactly that source (the file, or
the stored copy: :mod:`harnpy.runtime.sources`). With the opt-in, modules whose file
changed are compiled from the new file and the document is translated to it, function by
function:

* **Identity.** A function is named by its place in the module: the chain of enclosing
  declarations (``fn step``, ``tool lookup``, ``pipeline default``, ``impl Point``,
  ``closure#2`` = the third closure directly inside its parent), so moving a function in
  the file or editing another one does not change it. ``<module>`` is the top level.
* **Fingerprint.** A function is unchanged when its syntax tree is (positions, comments and
  layout left out; a ``tool``'s ``description`` too, which is data, not code) *and* its
  compiled form has the same shape: parameters, captures, slots, the kind of every
  instruction and the handler table. Only then are a frame's ``pc`` and slots valid in the
  new code. The top level compares its statements with declarations reduced to their kind
  and name (editing a function's body does not change the top level; adding one does).
* **Frames** (the parked stack, suspended generators) must be on unchanged functions; a
  changed or removed one refuses the upgrade naming it (``function `step` (main.harn:12)``)
  and nothing is changed.
* **Function values** (closures: tool handlers, callbacks, module functions) of a changed
  function are bound to its new version when they capture the same names, or when every
  name it captures is a top-level binding of the module (rebuilt from the snapshot's
  module globals); a removed one, or one whose captures cannot be rebuilt, refuses.
* **New top-level functions** are bound (as the module's initialiser would); other new
  top-level bindings (``let``, ``tool``, ``struct``, ``impl`` methods) and newly imported
  modules refuse, since the parked run never ran their initialisers.

The translation is a new document (code references, hashes, rebuilt captures); the
snapshot itself is never modified. :func:`plan_upgrade` raises :class:`~harnpy.runtime.
snapshot.SnapshotError` ``E406`` for every refusal.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from harnpy.runtime.snapshot import SnapshotError
from harnpy.syntax import ast as A

#: Module-level identity of the top-level code (code id -1).
TOP = "<module>"

_CODE_NODES = (A.FnDecl, A.ClosureExpr, A.ToolDecl, A.PipelineDecl)


@dataclass
class FunctionInfo:
    """One function of a module: identity path, how messages name it (``function `step```,
    ``a closure in `make_tools```, ``the top level``), 1-based line, code id and the hash
    of its syntax tree (see the module docstring)."""

    ident: str
    name: str
    line: int
    code_id: int
    tree_hash: str


@dataclass
class ModuleFunctions:
    """The functions of one module source by identity and by code id."""

    by_ident: dict[str, FunctionInfo] = field(default_factory=dict)
    by_id: dict[int, FunctionInfo] = field(default_factory=dict)


def _label(node: Any) -> str:
    t = type(node)
    if t is A.FnDecl:
        return f"fn {node.name}"
    if t is A.ToolDecl:
        return f"tool {node.name}"
    if t is A.PipelineDecl:
        return f"pipeline {node.name}"
    return "closure"


def _tree_hash(node: Any) -> str:
    """SHA-256 of the node's syntax tree without positions (``repr`` of AST records leaves
    spans out); a tool's description is data and is left out too."""
    if type(node) is A.ToolDecl:
        node = A.ToolDecl(
            node.name, node.params, node.body, "", node.ret_type, node.is_pub, span=node.span
        )
    return hashlib.sha256(repr(node).encode("utf-8")).hexdigest()


def _stub(stmt: Any) -> Any:
    """A top-level statement as the module initialiser sees it: a declaration is its kind
    and name (its body is a function of its own), anything else the whole statement."""
    t = type(stmt)
    if t is A.AttributedDecl:
        return ("@", repr(stmt.attributes), _stub(stmt.decl))
    if t is A.FnDecl:
        return ("fn", stmt.name, stmt.is_pub, stmt.is_gen)
    if t is A.ToolDecl:
        return ("tool", stmt.name, repr(stmt.params), stmt.is_pub)
    if t is A.PipelineDecl:
        return ("pipeline", stmt.name, stmt.extends, repr(stmt.params))
    if t is A.ImplDecl:
        return ("impl", stmt.type_name, tuple(m.name for m in stmt.methods))
    return repr(stmt)


def module_functions(tree: A.Module) -> ModuleFunctions:
    """Every function of ``tree`` with its identity and fingerprint (module docstring)."""
    out = ModuleFunctions()
    top = FunctionInfo(
        TOP,
        "the top level",
        1,
        -1,
        hashlib.sha256(repr([_stub(s) for s in tree.body]).encode("utf-8")).hexdigest(),
    )
    out.by_ident[TOP] = top
    out.by_id[-1] = top

    def visit(node: Any, prefix: str, counts: dict[str, int], owner: str | None) -> None:
        for child in A.children(node):
            if isinstance(child, _CODE_NODES):
                label = _label(child)
                n = counts.get(label, 0)
                counts[label] = n + 1
                ident = f"{prefix}{label}#{n}" if n or label == "closure" else prefix + label
                name = getattr(child, "name", None)
                kind = label.split(" ", 1)[0]
                if name is None:
                    desc = f"a closure in `{owner}`" if owner else "a top-level closure"
                else:
                    desc = f"{'function' if kind == 'fn' else kind} `{name}`"
                info = FunctionInfo(
                    ident,
                    desc,
                    child.span.line,
                    A.node_id(child),
                    _tree_hash(child),
                )
                out.by_ident.setdefault(ident, info)
                out.by_id[info.code_id] = info
                visit(child, ident + "/", {}, name or owner)
            elif type(child) is A.ImplDecl:
                visit(child, f"{prefix}impl {child.type_name}/", {}, owner)
            else:
                visit(child, prefix, counts, owner)

    visit(tree, "", {}, None)
    return out


def _instr_key(instr: Any) -> Any:
    code = getattr(instr, "__code__", None)
    if code is not None:
        return (code.co_filename, code.co_firstlineno, code.co_name)
    func = getattr(instr, "func", None)  # functools.partial
    if func is not None:
        return ("partial", _instr_key(func))
    return type(instr).__qualname__


def code_shape(code: Any) -> tuple[Any, ...]:
    """What a frame's ``pc`` and slots depend on in a compiled :class:`~harnpy.runtime.code.
    CodeObject`: parameters, captures, slot layout, the kind of each instruction, the
    handler table and the generator / defer flags."""
    return (
        tuple(code.param_names),
        code.rest,
        code.has_defaults,
        tuple(code.capture_names),
        tuple(code.capture_from),
        code.nslots,
        tuple(code.slot_names),
        tuple(_instr_key(i) for i in code.instrs),
        tuple((h.start, h.end, h.target, h.kind, h.slot, h.catch_type) for h in code.handlers),
        code.is_generator,
        code.gen_kind,
        code.returns_last,
        code.defer_slot,
        code.defer_discard,
        code.defer_trampoline,
    )


@dataclass
class _ModulePlan:
    key: str
    path: str
    new_hash: str
    ids: dict[int, int]
    #: new code id -> the module globals its closures capture (rebuilt captures)
    rebuild: dict[int, list[str]]
    #: new top-level function name -> its new code id
    added: dict[str, int]


@dataclass
class UpgradePlan:
    """How to translate a snapshot document to the new code (:func:`translate`)."""

    modules: dict[str, _ModulePlan] = field(default_factory=dict)
    #: one line per function the new code changed that the resumed run will use
    notes: list[str] = field(default_factory=list)
    #: (module key, code id) -> old pc -> new pc, for a changed top level on the stack
    pc_maps: dict[tuple[str, int], dict[int, int]] = field(default_factory=dict)
    #: (module key, global name) of removed top-level functions, dropped with their global
    drops: set[tuple[str, str]] = field(default_factory=set)


def code_refs(doc: Any) -> list[tuple[str, str, int, Any]]:
    """``(kind, module key, code id, pc)`` of every frame and closure record in an encoded
    document (kind ``frame`` / ``closure``; ``pc`` None for a closure)."""
    out: list[tuple[str, str, int, Any]] = []
    stack = [doc]
    while stack:
        v = stack.pop()
        if type(v) is list:
            stack.extend(v)
        elif type(v) is dict:
            tag = v.get("$t")
            if tag in ("frame", "closure"):
                ref = v.get("code")
                if type(ref) is list and len(ref) == 2 and type(ref[0]) is str:
                    if type(ref[1]) is int:
                        out.append((tag, ref[0], ref[1], v.get("pc")))
            stack.extend(v.values())
    return out


#: Top-level statements that are declarations: one store instruction each in the module
#: initialiser (or none), whatever their body.
_DECLS = (
    A.FnDecl,
    A.ToolDecl,
    A.StructDecl,
    A.EnumDecl,
    A.TypeDecl,
    A.InterfaceDecl,
    A.ImportDecl,
    A.ImplDecl,
)


def _top_statements(tree: A.Module) -> str:
    """The top level without its declarations (what the initialiser computes)."""
    from harnpy.runtime.modules import _unwrap

    return repr([_stub(s) for s in tree.body if not isinstance(_unwrap(s), _DECLS)])


def top_level_pc_map(old: Any, new: Any) -> dict[int, int] | None:
    """For a module initialiser on the stack whose module gained, lost or moved
    declarations: old pc -> new pc of the instructions both versions share, or None when
    the statements it computes changed (or its slots or handlers did)."""
    import difflib

    oc, nc = old.codes.get(-1), new.codes.get(-1)
    if oc is None or nc is None or _top_statements(old.ast) != _top_statements(new.ast):
        return None
    if (oc.nslots, list(oc.slot_names)) != (nc.nslots, list(nc.slot_names)):
        return None
    if oc.handlers or nc.handlers:
        return None
    ok = [_instr_key(i) for i in oc.instrs]
    nk = [_instr_key(i) for i in nc.instrs]
    out: dict[int, int] = {}
    for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, ok, nk, autojunk=False).get_opcodes():
        if tag == "equal":
            for d in range(i2 - i1):
                out[i1 + d] = j1 + d
    return out


def _where(path: str, line: int) -> str:
    return f"{os.path.basename(path)}:{line}"


def _refuse(message: str) -> SnapshotError:
    return SnapshotError(
        f"--upgrade-code: {message}; resume without --upgrade-code to run the code the "
        "snapshot started with (the snapshot is left as it was)",
        "E406",
    )


def plan_upgrade(
    doc: dict[str, Any], runtime: Any, old_modules: dict[str, Any], changed: list[str]
) -> UpgradePlan:
    """Check that ``doc`` (an encoded snapshot, externals included) can continue on the new
    code of the ``changed`` module keys and say how (module docstring).

    ``runtime.modules[key]`` is the new compiled module, ``old_modules[key]`` the module
    compiled from the source the snapshot ran (same way: main or library).

    Raises:
        SnapshotError: ``E406`` naming the function on the stack that changed, the function
            value that cannot be bound to its new version, or the new declaration that
            cannot be bound.
    """
    from harnpy.runtime.modules import top_level_names

    plan = UpgradePlan()
    globals_doc: dict[str, Any] = doc["globals"] if isinstance(doc.get("globals"), dict) else {}
    found: dict[str, tuple[ModuleFunctions, ModuleFunctions, dict[int, int], dict[int, bool]]] = {}
    for key in changed:
        old, new = old_modules[key], runtime.modules[key]
        old_fns, new_fns = module_functions(old.ast), module_functions(new.ast)
        ids: dict[int, int] = {}
        unchanged: dict[int, bool] = {}
        for oid, info in old_fns.by_id.items():
            nfo = new_fns.by_ident.get(info.ident)
            oc = old.codes.get(oid)
            nc = new.codes.get(nfo.code_id) if nfo is not None else None
            if nfo is None or oc is None or nc is None:
                continue
            ids[oid] = nfo.code_id
            unchanged[oid] = info.tree_hash == nfo.tree_hash and code_shape(oc) == code_shape(nc)
        found[key] = (old_fns, new_fns, ids, unchanged)
        # a removed top-level function held only by its own global is dropped with it
        g = globals_doc.get(key)
        if isinstance(g, dict) and "$dict" not in g:
            names_now = set(top_level_names(new.ast))
            for name, v in g.items():
                if name in names_now or not isinstance(v, dict) or v.get("$t") != "closure":
                    continue
                ref = v.get("code")
                if type(ref) is list and len(ref) == 2 and ref[0] == key and ref[1] not in ids:
                    plan.drops.add((key, name))
    view = dict(doc)
    view["globals"] = {
        k: (
            {n: v for n, v in g.items() if (k, n) not in plan.drops}
            if isinstance(g, dict) and "$dict" not in g
            else g
        )
        for k, g in globals_doc.items()
    }
    refs = code_refs(view)
    for key in changed:
        old, new = old_modules[key], runtime.modules[key]
        old_fns, new_fns, ids, unchanged = found[key]
        rebuild: dict[int, list[str]] = {}
        pcs: dict[int, int] | None = None
        g = view["globals"].get(key)
        mod_globals: dict[str, Any] = g if isinstance(g, dict) else {}
        seen: set[tuple[str, int, Any]] = set()
        for kind, k, oid, pc in refs:
            if k != key or (kind, oid, pc) in seen:
                continue
            seen.add((kind, oid, pc))
            was = old_fns.by_id.get(oid)
            if was is None:
                raise SnapshotError(
                    f"snapshot refers to code {[k, oid]!r} that its own source does not have",
                    "E404",
                )
            what = f"{was.name} ({_where(old.path, was.line)})"
            if oid not in ids:
                raise _refuse(
                    f"{what} was removed from {os.path.basename(new.path)}, and the parked run "
                    + ("is inside it" if kind == "frame" else "holds it as a value")
                )
            nfo = new_fns.by_id[ids[oid]]
            now = f"{nfo.name} ({_where(new.path, nfo.line)})"
            if kind == "frame":
                if unchanged[oid]:
                    continue
                if oid == -1:
                    pcs = top_level_pc_map(old, new) if pcs is None else pcs
                    if pcs is not None and pc in pcs:
                        plan.pc_maps[(key, -1)] = pcs
                        continue
                raise _refuse(f"{now} is on the parked stack and changed since the snapshot")
            if unchanged[oid]:
                continue
            oc, nc = old.codes[oid], new.codes[ids[oid]]
            if list(oc.capture_names) != list(nc.capture_names):
                names = [s for s in nc.capture_from if type(s) is str]
                missing = [n for n in names if n not in mod_globals]
                if len(names) != len(nc.capture_from) or missing:
                    raise _refuse(
                        f"{now} changed what it captures"
                        + (f" (`{missing[0]}` is new)" if missing else "")
                        + " and the parked run holds it as a value"
                    )
                rebuild[ids[oid]] = names
            if oid != -1:
                plan.notes.append(f"{now} changed: the resumed run calls its new version")
        added = _added_functions(old, new, mod_globals, rebuild)
        plan.modules[key] = _ModulePlan(key, new.path, new.hash, ids, rebuild, added)
    return plan


def _added_functions(
    old: Any, new: Any, mod_globals: dict[str, Any], rebuild: dict[int, list[str]]
) -> dict[str, int]:
    """The top-level functions ``new`` declares that ``old`` did not (name -> code id), with
    their captures put in ``rebuild``.

    Raises:
        SnapshotError: a new top-level binding other than a function, a new ``impl``
            method, or a new function capturing a binding the parked run does not have.
    """
    from harnpy.runtime.modules import _unwrap, top_level_names

    old_top = set(top_level_names(old.ast))
    old_methods = {
        (u.type_name, m.name)
        for u in (_unwrap(s) for s in old.ast.body)
        if type(u) is A.ImplDecl
        for m in u.methods
    }
    added: dict[str, int] = {}
    for stmt in new.ast.body:
        u: Any = _unwrap(stmt)
        t = type(u)
        if t is A.ImplDecl:
            for m in u.methods:
                if (u.type_name, m.name) not in old_methods:
                    raise _refuse(
                        f"the new method `{u.type_name}.{m.name}` "
                        f"({_where(new.path, m.span.line)}) cannot be added to a parked run"
                    )
        elif t is A.FnDecl and u.name not in old_top:
            nid = A.node_id(u)
            nc = new.codes.get(nid)
            froms = list(nc.capture_from) if nc is not None else []
            names = [x for x in froms if type(x) is str]
            if nc is None or len(names) != len(froms) or any(n not in mod_globals for n in names):
                raise _refuse(
                    f"the new function `{u.name}` ({_where(new.path, u.span.line)}) uses "
                    "top-level bindings the parked run does not have"
                )
            added[u.name] = nid
            rebuild[nid] = names
    for name in top_level_names(new.ast):
        if name not in old_top and name not in added:
            raise _refuse(
                f"the new top-level binding `{name}` in {os.path.basename(new.path)} was "
                "never initialised in the parked run"
            )
    return added


def translate(doc: dict[str, Any], plan: UpgradePlan) -> dict[str, Any]:
    """A copy of the encoded document ``doc`` for the new code: code references mapped,
    module hashes replaced, captures rebuilt and new functions bound (see
    :func:`plan_upgrade`). ``doc`` is not modified."""
    mods = plan.modules
    pending: list[tuple[dict[str, Any], str, list[str]]] = []

    def walk(v: Any) -> Any:
        t = type(v)
        if t is list:
            return [walk(x) for x in v]
        if t is not dict:
            return v
        out = {k: walk(x) for k, x in v.items()}
        tag = v.get("$t")
        ref = v.get("code")
        if tag in ("frame", "closure") and type(ref) is list and len(ref) == 2:
            mp = mods.get(ref[0]) if type(ref[0]) is str else None
            if mp is not None and type(ref[1]) is int:
                nid = mp.ids.get(ref[1], ref[1])
                out["code"] = [ref[0], nid]
                pcs = plan.pc_maps.get((ref[0], ref[1]))
                if tag == "frame" and pcs is not None and out.get("pc") in pcs:
                    out["pc"] = pcs[out["pc"]]
                if tag == "closure" and nid in mp.rebuild:
                    pending.append((out, ref[0], mp.rebuild[nid]))
        return out

    out: dict[str, Any] = walk(doc)
    g_out: dict[str, Any] = out["globals"] if isinstance(out.get("globals"), dict) else {}
    for key, name in plan.drops:
        g = g_out.get(key)
        if isinstance(g, dict):
            g.pop(name, None)
    for rec in out.get("modules") or []:
        if isinstance(rec, dict) and rec.get("key") in mods:
            rec["hash"] = mods[rec["key"]].new_hash
    for key, mp in mods.items():
        g = g_out.get(key)
        if not isinstance(g, dict) or "$dict" in g:
            continue
        for name, nid in mp.added.items():
            rec = {"$t": "closure", "code": [key, nid], "captures": [], "bound_self": None}
            g[name] = rec
            pending.append((rec, key, mp.rebuild.get(nid, [])))
    for rec, key, names in pending:
        g = g_out.get(key) or {}
        rec["captures"] = [g.get(n) for n in names]
    return out
