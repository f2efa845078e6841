"""Modules: loading, import resolution and the entry-point rules.

A :class:`ModuleInstance` is one loaded source file: its text, source hash, AST, globals
(top-level bindings and imported names) and compiled code. Spec language.md 2.1 (execution
model: script mode vs pipeline mode) and 3.18 (modules: ``std/...`` paths, relative paths,
wildcard and selective imports, ``pub``, load-once) are implemented here.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from harnpy.diagnostics import Diagnostic, DiagnosticError, did_you_mean
from harnpy.runtime.code import CodeObject
from harnpy.runtime.errors import plain_error
from harnpy.syntax import ast as A

STDLIB_DIRS = [
    Path(__file__).resolve().parent.parent / "_data" / "stdlib",
    Path(__file__).resolve().parent.parent.parent / "stdlib",
]


def stdlib_root() -> Path:
    """Directory holding ``std/**/*.harn`` (installed wheel or source checkout)."""
    for d in STDLIB_DIRS:
        if (d / "std").is_dir():
            return d
    return STDLIB_DIRS[-1]


def source_hash(source: str) -> str:
    """The content hash that snapshots use to recognise a module's source (sha256 hex)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


#: Largest module source read (bytes): far above any real program, far below what would
#: exhaust memory when an import or a snapshot names a huge file.
MAX_SOURCE_BYTES = 16 * 1024 * 1024


def read_source(path: str) -> str:
    """The text of source file ``path``, read with a cap (:data:`MAX_SOURCE_BYTES`; a FIFO,
    device or directory is refused without blocking, :func:`harnpy.security.read_capped`).

    Raises:
        OSError: unreadable, not a regular file, or over the cap
            (:class:`harnpy.security.ReadRefused`, whose message says which).
        UnicodeDecodeError: not UTF-8.
    """
    from harnpy.security import read_capped

    return read_capped(path, MAX_SOURCE_BYTES).decode("utf-8")


class ModuleInstance:
    """One loaded module.

    Attributes:
        path: absolute file path, or ``std/...`` for bundled modules, or ``<repl>``/``<-e>``.
        source / hash: the text and its sha256.
        ast: the parsed :class:`~harnpy.syntax.ast.Module`.
        globals: top-level bindings (and imported names) by name.
        global_kinds: ``"let"``/``"var"``/``"fn"`` per global (immutability checks).
        exports: names visible to importers (filled after initialisation).
        codes: every compiled :class:`CodeObject` by code id (snapshot references).
        type_aliases: ``type`` declarations (for ``schema_of``).
    """

    def __init__(self, path: str, source: str, tree: A.Module, repl: bool = False) -> None:
        self.path = path
        self.source = source
        self.hash = source_hash(source)
        self.ast = tree
        self.globals: dict[str, Any] = {}
        self.global_kinds: dict[str, str] = {}
        self.exports: dict[str, Any] = {}
        self.codes: dict[int, CodeObject] = {}
        self.type_aliases: dict[str, Any] = {}
        self.constants: dict[str, Any] = {}
        self.repl = repl
        self.pub_reexports: list[str] = []
        self.import_links: list[tuple[Any, str]] = []
        self.init_code: CodeObject | None = None

    @property
    def directory(self) -> str:
        """The directory relative imports resolve against: the file's folder, or the working
        directory for ``std/`` modules and ``<...>`` pseudo-paths."""
        if self.path.startswith("<") or self.path.startswith("std/"):
            return os.getcwd()
        return os.path.dirname(self.path)

    def __repr__(self) -> str:
        return f"<module {self.path}>"


def resolve_import(spec: str, importer: ModuleInstance) -> tuple[str, Path]:
    """Map an import string to ``(module key, file path)``.

    ``std/x`` -> bundled ``stdlib/std/x.harn``; otherwise relative to the importing file's
    directory, ``.harn`` added when missing, then ``<dir>/index.harn`` for a directory.
    Raises a runtime error ``Import error: cannot find module '<spec>'``.
    """
    if spec.startswith("std/"):
        root = stdlib_root()
        cand = root / (spec if spec.endswith(".harn") else spec + ".harn")
        if cand.is_file():
            return spec, cand
        idx = root / spec / "index.harn"
        if idx.is_file():
            return spec, idx
        raise _not_found(spec, _std_modules(root))
    base = Path(importer.directory)
    cands = [base / spec]
    if not spec.endswith(".harn"):
        cands.insert(0, base / (spec + ".harn"))
        cands.append(base / spec / "index.harn")
        cands.append(base / spec / "lib.harn")
    for c in cands:
        if c.is_file():
            p = c.resolve()
            return str(p), p
    raise _not_found(spec, _sibling_modules(base, spec))


def _not_found(spec: str, candidates: list[str]) -> Any:
    """The E306 ``cannot find module`` error, with a did-you-mean hint among ``candidates``
    (import strings that would resolve)."""
    hint = did_you_mean(spec, candidates)
    extra = f" (did you mean `{hint}`?)" if hint else ""
    return plain_error(f"Import error: cannot find module '{spec}'{extra}", "E306")


def _std_modules(root: Path) -> list[str]:
    """The import strings of the bundled ``std/`` modules (``std/math``, ``std/agent/loop``)."""
    out = []
    for f in root.rglob("*.harn"):
        rel = f.relative_to(root).as_posix()[: -len(".harn")]
        out.append(rel[: -len("/index")] if rel.endswith("/index") else rel)
    return out


def _sibling_modules(base: Path, spec: str) -> list[str]:
    """Import strings for the modules next to where ``spec`` points (same folder, written
    the way ``spec`` is: with or without ``.harn``)."""
    head, _, _tail = spec.rpartition("/")
    folder = base / head if head else base
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    prefix = head + "/" if head else ""
    out = []
    for e in entries:
        if e.name.endswith(".harn") and e.is_file():
            out.append(prefix + (e.name if spec.endswith(".harn") else e.name[: -len(".harn")]))
        elif e.is_dir() and not e.name.startswith(".") and (e / "index.harn").is_file():
            out.append(prefix + e.name)
    return out


def entry_pipeline(tree: A.Module, name: str | None = None) -> A.PipelineDecl | None:
    """The pipeline that runs: the one named ``default``, else the first (spec 2.1); with
    ``name`` (``harnpy test`` running ``test_*`` pipelines), the pipeline of that name, or
    None when there is none."""
    pipes = [_unwrap(s) for s in tree.body]
    pipes = [p for p in pipes if type(p) is A.PipelineDecl]
    if name is not None:
        for p in pipes:
            if p.name == name:  # type: ignore[union-attr]
                return p  # type: ignore[return-value]
        return None
    if not pipes:
        return None
    for p in pipes:
        if p.name == "default":  # type: ignore[union-attr]
            return p  # type: ignore[return-value]
    return pipes[0]  # type: ignore[return-value]


def _unwrap(s: A.Stmt) -> A.Stmt:
    while type(s) is A.AttributedDecl:
        s = s.decl  # type: ignore[union-attr]
    return s


def pipeline_chain(tree: A.Module, entry: A.PipelineDecl) -> list[A.PipelineDecl]:
    """``entry`` preceded by its ``extends`` ancestors, root first."""
    by_name: dict[str, A.PipelineDecl] = {}
    for s in tree.body:
        s = _unwrap(s)
        if type(s) is A.PipelineDecl:
            by_name.setdefault(s.name, s)
    chain = [entry]
    seen = {entry.name}
    cur = entry
    while cur.extends and cur.extends in by_name and cur.extends not in seen:
        cur = by_name[cur.extends]
        seen.add(cur.name)
        chain.append(cur)
    return list(reversed(chain))


def top_level_names(tree: A.Module) -> dict[str, str]:
    """Names bound at the module's top level with their kind (let/var/fn)."""
    out: dict[str, str] = {}
    for s in tree.body:
        s = _unwrap(s)
        t = type(s)
        if t is A.LetStmt:
            for n in A.pattern_names(s.pattern):  # type: ignore[union-attr]
                out[n] = "var" if s.mutable else "let"  # type: ignore[union-attr]
        elif t in (A.FnDecl, A.ToolDecl, A.StructDecl):
            out[s.name] = "fn"  # type: ignore[union-attr]
    return out


def collect_enums(tree: A.Module) -> dict[str, dict[str, int]]:
    """Every enum declared anywhere in the file: name -> {variant: field count}."""
    out: dict[str, dict[str, int]] = {}
    for n in A.walk(tree):
        if type(n) is A.EnumDecl:
            out[n.name] = {v.name: len(v.params) for v in n.variants}
    return out


def collect_types(tree: A.Module) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every ``type`` alias and ``struct`` declared anywhere in the file, by name."""
    aliases: dict[str, Any] = {}
    structs: dict[str, Any] = {}
    for n in A.walk(tree):
        if type(n) is A.TypeDecl:
            aliases[n.name] = n.type
        elif type(n) is A.StructDecl:
            structs[n.name] = n
    return aliases, structs


def syntax_error(path: str, source: str, message: str, span: A.Span, code: str) -> DiagnosticError:
    """A static error as a DiagnosticError with location and caret."""
    return DiagnosticError([Diagnostic(code, message, path, span.line, span.col, source=source)])
