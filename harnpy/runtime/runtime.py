"""The Runtime: interpreter services shared by all threads of one program run.

It owns the module cache, the builtin universe, ``impl`` method tables, output sinks, the
clock and the per-run mock state builtins keep (stdin mocks, LLM mocks...). A thread reaches
it as ``thread.runtime``. Loading and running a program:

    rt = Runtime()
    module = rt.load_main(path, source)     # parse, resolve imports, compile
    value = rt.run_module(module)           # run the entry point on the main thread
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from harnpy.runtime import modules as M
from harnpy.runtime.code import CodeObject
from harnpy.runtime.compiler import CompileError, Compiler, ModuleContext
from harnpy.runtime.errors import HarnError, plain_error
from harnpy.runtime.modules import ModuleInstance
from harnpy.runtime.thread import DEFAULT_MAX_DEPTH, Thread
from harnpy.runtime.values import Builtin, Closure, EnumValue, StructValue
from harnpy.syntax import ast as A

#: Builtins that must run as instructions (never inlined into expressions): they need the
#: calling frame's pc to be saved (snapshots, blocking, scheduling).
CONTROL_BUILTINS = frozenset(
    {
        "__snapshot_exit",
        "__turn_boundary",
        "sleep",
        "sleep_ms",
        "await",
        "receive",
        "exit",
    }
)


class Constants(dict[str, Any]):
    """The global constants of one runtime (``pi``, ``e``, ``harness``...): a dict that also
    holds the names of :data:`harnpy.runtime.extensions.LAZY_CONSTANTS`, whose values are
    computed (``fn(runtime)``) and kept when first read. Keys and ``in`` include them."""

    def __init__(self, runtime: Any) -> None:
        super().__init__()
        self._runtime = runtime

    def __missing__(self, name: str) -> Any:
        from harnpy.runtime.extensions import LAZY_CONSTANTS

        make = LAZY_CONSTANTS.get(name)
        if make is None:
            raise KeyError(name)
        value = self[name] = make(self._runtime)
        return value

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        """``self[name]`` (computing a lazy constant), or ``default``."""
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        from harnpy.runtime.extensions import LAZY_CONSTANTS

        return dict.__contains__(self, name) or name in LAZY_CONSTANTS

    def __iter__(self) -> Iterator[str]:
        from harnpy.runtime.extensions import LAZY_CONSTANTS

        return iter(
            [*dict.keys(self), *(n for n in LAZY_CONSTANTS if not dict.__contains__(self, n))]
        )


class Runtime:
    """Shared services of one interpreter session (see module docstring).

    Args:
        argv: script arguments (``argv`` builtin).
        stdout / stderr: text sinks (default: sys.stdout / sys.stderr writes).
        max_depth: Harn frame limit (default 10,000).
    """

    def __init__(
        self,
        argv: list[str] | None = None,
        stdout: Callable[[str], Any] | None = None,
        stderr: Callable[[str], Any] | None = None,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        from harnpy.stdlib import load_core
        from harnpy.stdlib.registry import BUILTINS

        load_core()
        #: Every builtin; the lazy registry imports a module on first lookup of one of its
        #: builtins (:class:`harnpy.stdlib.registry.BuiltinTable`).
        self.builtins: dict[str, Builtin] = BUILTINS
        self.constants: dict[str, Any] = Constants(self)
        try:
            from harnpy.stdlib.mathlib import GLOBAL_CONSTANTS

            self.constants.update(GLOBAL_CONSTANTS)
        except ImportError:
            import math

            self.constants.update({"pi": math.pi, "e": math.e})
        self.pure_builtins = {
            n for n in BUILTINS if n not in CONTROL_BUILTINS and BUILTINS.is_pure(n)
        }
        from harnpy.stdlib.fs import clean_text

        self.argv = [clean_text(a) for a in argv or []]
        self._stdout = stdout or _stdout_writer()
        self._stderr = stderr or _stderr_writer()
        self.max_depth = max_depth
        self.modules: dict[str, ModuleInstance] = {}
        self.loading: set[str] = set()
        self.impls: dict[str, dict[str, Any]] = {}
        self.main_module: ModuleInstance | None = None
        self.main_thread: Thread | None = None
        #: The thread whose run loop ran last (set by ``Thread.run``; interrupts target it).
        self.current_thread: Thread | None = None
        self.restoring = False
        #: While restoring: module key -> the source a snapshot ran (its stored copy when the
        #: file changed or is gone); imports of those keys use it (harnpy.runtime.sources).
        self.source_pins: dict[str, str] = {}
        #: A resume opted into the current code (``run --resume --upgrade-code``).
        self.upgrade_code = False
        from harnpy.runtime.scheduler import Scheduler

        self.scheduler = Scheduler(self)
        try:
            from harnpy.runtime.clock import Clock

            self.clock: Any = Clock()
        except ImportError:  # pragma: no cover - clock module lands with the time builtins
            self.clock = None
        self.stdout_isatty = False
        #: Failed root agent-loop results the program has not checked yet
        #: (:mod:`harnpy.runtime.outcomes`; ``harnpy run`` exits 1 if any is left).
        self.unchecked_outcomes: dict[int, Any] = {}
        #: Set by hosts whose programs cannot be resumed from a ``__snapshot_exit`` file (the
        #: REPL): the builtin refuses with this text instead of writing one.
        self.snapshot_exit_refusal: str | None = None
        #: ``--store URL`` of ``harnpy run`` (durable waitpoints; None: ``HARNPY_STORE``).
        self.store_option: str | None = None
        #: ``--llm-mock`` / ``--llm-mock-record`` files (set by the CLI).
        self.llm_cli_options: dict[str, Any] | None = None
        #: Agent services (LLM host, worker registry, events), created on first use by
        #: :func:`harnpy.lifecycle.services.services`.
        self.agent_state: Any = None
        from harnpy.runtime import extensions

        for init in extensions.RUNTIME_INIT:
            init(self)

    # ---- output

    def write_out(self, text: str) -> None:
        """Write program output to the runtime's stdout sink."""
        self._stdout(text)

    def write_err(self, text: str) -> None:
        """Write text to the runtime's stderr sink."""
        self._stderr(text)

    # ---- pipeline parameters

    def pipeline_argument(self, name: str) -> Any:
        """The value of entry-pipeline parameter ``name``: the ``Harness`` for a parameter
        named ``harness`` (any case), nil for any other (lifecycle.md 0); supplied by the
        lifecycle layer through :mod:`harnpy.runtime.extensions`."""
        from harnpy.runtime import extensions

        for provide in extensions.PIPELINE_ARGUMENT:
            return provide(self, name)
        return None

    # ---- impl methods and tools

    def register_impl(self, type_name: str, name: str, fn: Any) -> None:
        """Register method ``name`` of ``impl type_name`` (spec 3.14); a later registration
        replaces an earlier one."""
        self.impls.setdefault(type_name, {})[name] = fn

    def find_impl(self, obj: Any, name: str) -> Any:
        """The ``impl`` method ``name`` of a struct or enum value's type, or None (other values
        have no impl methods)."""
        if type(obj) is StructValue:
            t = self.impls.get(obj.name)
        elif type(obj) is EnumValue:
            t = self.impls.get(obj.enum)
        else:
            t = None
        return t.get(name) if t else None

    def make_tool(self, spec: dict[str, Any], handler: Closure) -> Any:
        """Value bound to a ``tool`` declaration: the one-tool registry that the agents
        layer's ``__tool_declaration(spec, handler)`` builtin builds (``spec``: ``{name,
        description, params: [{name, type, required, schema, default?}], returns?}`` from
        the compiler); the handler closure itself when that layer is not loaded."""
        make = self.builtins.get("__tool_declaration")
        return handler if make is None else make.fn(None, spec, handler)

    # ---- modules

    def parse(self, path: str, source: str) -> A.Module:
        """Parse ``source`` (``path`` for diagnostics) into a module AST.

        Raises:
            HarnSyntaxError: the source is not well formed.
        """
        from harnpy.syntax import parse

        return parse(source, path)

    def load_main(self, path: str, source: str, entry: str | None = None) -> ModuleInstance:
        """Parse and compile the main program (script or pipeline mode). ``entry`` names the
        pipeline to run instead of the default one (``harnpy test``); a name no pipeline has
        raises ``KeyError``."""
        tree = self.parse(path, source)
        if not self.restoring:
            self.check_static(tree, path, source)
        mod = ModuleInstance(path, source, tree)
        self.main_module = mod
        self.modules[path] = mod
        self._link_imports(mod)
        pipe = M.entry_pipeline(tree, entry)
        if entry is not None and pipe is None:
            raise KeyError(entry)
        if pipe is None:
            stmts = [s for s in tree.body if type(s) is not A.ImportDecl]
            mod.init_code = self._compile_body(mod, stmts, "<module>")
        else:
            mod.init_code = self._compile_pipeline_mode(mod, pipe)
        return mod

    def check_static(self, tree: A.Module, path: str, source: str) -> None:
        """Reject the program before it runs when the static checks the reference performs
        find errors (spec 3.19); raises DiagnosticError with every error found."""
        from harnpy.check import static_errors
        from harnpy.diagnostics import DiagnosticError

        diags = static_errors(tree, path, source, set(self.builtins) | set(self.constants))
        errors = [d for d in diags if d.severity == "error"]
        if errors:
            raise DiagnosticError(errors)

    def _context(self, mod: ModuleInstance) -> ModuleContext:
        names = M.top_level_names(mod.ast)
        mod.global_kinds.update({k: v for k, v in names.items() if k not in mod.global_kinds})
        ctx = ModuleContext(
            module=mod,
            # imported names count through global_kinds: while restoring a snapshot they are
            # declared but not bound yet, and the code must compile exactly as it did
            global_names=set(names) | set(mod.globals) | set(mod.global_kinds),
            enums=M.collect_enums(mod.ast),
            builtins=self.builtins,
            pure_builtins=self.pure_builtins,
        )
        ctx.type_aliases, ctx.structs_decl = M.collect_types(mod.ast)
        ctx.let_mutable = any(type(n) is A.LetStmt and n.is_const for n in A.walk(mod.ast))
        ctx.capture_globals = mod is self.main_module and not mod.repl
        mod.constants = self.constants
        return ctx

    def _compile_body(
        self, mod: ModuleInstance, stmts: list[Any], name: str, returns_last: bool = False
    ) -> CodeObject:
        ctx = self._context(mod)
        comp = Compiler(ctx)
        try:
            code = comp.compile_module_body(stmts, -1, name, returns_last)
        except CompileError as e:
            raise M.syntax_error(mod.path, mod.source, e.message, e.span, e.code) from None
        self._register_codes(mod, code, ctx)
        return code

    def _compile_pipeline_mode(self, mod: ModuleInstance, entry: A.PipelineDecl) -> CodeObject:
        tree = mod.ast
        body: list[Any] = []
        decls: list[Any] = []
        for s in tree.body:
            u = M._unwrap(s)
            if type(u) is A.LetStmt:
                body.append(s)
            elif type(u) in (
                A.FnDecl,
                A.ToolDecl,
                A.StructDecl,
                A.EnumDecl,
                A.ImplDecl,
                A.InterfaceDecl,
                A.TypeDecl,
                A.SkillDecl,
            ):
                decls.append(s)
        chain = M.pipeline_chain(tree, entry)
        ctx = self._context(mod)
        comp = Compiler(ctx)
        try:
            code = comp.compile_module_body(
                body + decls, -1, "<module>", returns_last=False, pipelines=chain
            )
        except CompileError as e:
            raise M.syntax_error(mod.path, mod.source, e.message, e.span, e.code) from None
        self._register_codes(mod, code, ctx)
        return code

    def _register_codes(self, mod: ModuleInstance, code: CodeObject, ctx: ModuleContext) -> None:
        mod.codes[code.id] = code
        for c in ctx.codes:
            mod.codes[c.id] = c

    def _link_imports(self, mod: ModuleInstance) -> None:
        """Load the modules ``mod`` imports and bind the imported names into its globals.

        While restoring a snapshot (``self.restoring``) modules are compiled but not run, so
        only the names are declared here; :meth:`relink_imports` binds the values later.
        """
        for s in mod.ast.body:
            if type(s) is not A.ImportDecl:
                continue
            try:
                pinned = self._pinned_import(s.path, mod) if self.source_pins else None
                key, path = pinned or M.resolve_import(s.path, mod)
            except HarnError as e:
                raise M.syntax_error(mod.path, mod.source, e.message, s.span, "E206") from None
            if key in self.loading:
                # a static error at the import that closes the cycle (exit status 2)
                raise M.syntax_error(
                    mod.path,
                    mod.source,
                    f"Import error: circular import of '{s.path}'",
                    s.span,
                    "E306",
                )
            lib = self.import_module(key, path)
            mod.import_links.append((s, key))
            names = export_names(lib) if s.names is None else list(s.names)
            if s.names is not None:
                known = set(export_names(lib)) | {
                    n for n, k in M.top_level_names(lib.ast).items() if k == "fn"
                }
                for name in names:
                    if name not in known:
                        from harnpy.diagnostics import did_you_mean

                        hint = did_you_mean(name, known)
                        extra = f" (did you mean `{hint}`?)" if hint else ""
                        raise M.syntax_error(
                            mod.path,
                            mod.source,
                            f"Import error: '{name}' is not defined in {s.path}{extra}",
                            s.span,
                            "E206",
                        )
            for name in names:
                mod.global_kinds[name] = "fn"
                if s.is_pub:
                    mod.pub_reexports.append(name)
            if not self.restoring:
                self._bind_names(mod, lib, names, s)

    def _pinned_import(self, spec: str, importer: ModuleInstance) -> tuple[str, Path] | None:
        """While restoring: the pinned module (:attr:`source_pins`) an import of ``spec``
        from ``importer`` named when the snapshot was taken, even if its file is gone."""
        if spec.startswith("std/") or not self.restoring:
            return None
        base = Path(importer.directory)
        cands = [base / spec]
        if not spec.endswith(".harn"):  # the order of modules.resolve_import
            cands = [base / (spec + ".harn"), *cands, base / spec / "index.harn"]
            cands.append(base / spec / "lib.harn")
        for c in cands:
            key = str(c.resolve())
            if key in self.source_pins:
                return key, Path(key)
        return None

    def _bind_names(
        self, mod: ModuleInstance, lib: ModuleInstance, names: list[str], s: Any
    ) -> None:
        for name in names:
            value = lib.exports.get(name, lib.globals.get(name))
            existing = mod.globals.get(name)
            if existing is not None and existing is not value and type(existing) is Closure:
                raise M.syntax_error(
                    mod.path,
                    mod.source,
                    f"Import collision: '{name}' is already defined (imported from {s.path})",
                    s.span,
                    "E206",
                )
            mod.globals[name] = value

    def relink_imports(self, restored: Collection[ModuleInstance] = ()) -> None:
        """After a restore: bind every module's imported names and recompute the libraries'
        exports, libraries before the modules that import them (a library is registered
        after the ones it imports), so names a facade re-exports (``pub import``) are bound
        before anyone reads them. ``restored`` modules (REPL entries) keep the bindings the
        snapshot gave them."""
        skip = {id(m) for m in restored}
        done: set[int] = set()
        order = [m for m in self.modules.values() if m is not self.main_module]
        if self.main_module is not None:
            order.append(self.main_module)
        for mod in order:
            if id(mod) in done:  # the same module under a second key (a moved project)
                continue
            done.add(id(mod))
            if id(mod) not in skip:
                for s, key in mod.import_links:
                    lib = self.modules[key]
                    names = export_names(lib) if s.names is None else list(s.names)
                    for name in names:
                        mod.globals[name] = lib.exports.get(name, lib.globals.get(name))
            if mod is not self.main_module and id(mod) not in skip:
                mod.exports = {n: mod.globals.get(n) for n in export_names(mod)}

    def import_module(self, key: str, path: Path) -> ModuleInstance:
        """Load a library module once: its imports, top-level let/var, declarations."""
        mod = self.modules.get(key)
        if mod is not None:
            return mod
        if key in self.loading:
            raise plain_error(f"Import error: circular import of '{key}'", "E306")
        self.loading.add(key)
        try:
            try:
                pin = self.source_pins.get(key) if self.restoring else None
                source = pin if pin is not None else M.read_source(str(path))
            except (OSError, UnicodeDecodeError) as e:
                why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                raise plain_error(
                    f"Import error: cannot read module '{key}': {why}", "E306"
                ) from None
            tree = self.parse(str(path) if not key.startswith("std/") else key, source)
            mod = ModuleInstance(key, source, tree)
            self._link_imports(mod)
            stmts: list[Any] = []
            for s in tree.body:
                u = M._unwrap(s)
                if type(u) in (
                    A.LetStmt,
                    A.FnDecl,
                    A.ToolDecl,
                    A.StructDecl,
                    A.EnumDecl,
                    A.ImplDecl,
                    A.TypeDecl,
                    A.InterfaceDecl,
                ):
                    stmts.append(s)
            mod.init_code = self._compile_body(mod, stmts, "<module>")
            self.modules[key] = mod
            if not self.restoring:
                self.run_code_sync(mod.init_code)
                mod.exports = {n: mod.globals.get(n) for n in export_names(mod)}
            return mod
        finally:
            self.loading.discard(key)

    # ---- running

    def new_thread(self, name: str = "main") -> Thread:
        """A new :class:`Thread` of this runtime: no frames, not scheduled."""
        return Thread(self, name)

    def run_code_sync(self, code: CodeObject, args: list[Any] | None = None) -> Any:
        """Run a code object to completion on a fresh thread (module initialisers)."""
        th = Thread(self, "init")
        slots = list(args or []) + [None] * (code.nslots - len(args or []))
        th.start(code, slots)
        from harnpy.runtime.scheduler import Scheduler

        return Scheduler(self).run_until(th)

    def run_module(self, mod: ModuleInstance) -> Any:
        """Run the main module's entry point on the main thread; returns its value."""
        assert mod.init_code is not None
        th = Thread(self, "main")
        self.main_thread = th
        th.start(mod.init_code, [None] * mod.init_code.nslots)
        value = self.scheduler.run_until(th)
        # e.g. pipeline_on_finish callbacks and finish hooks (lifecycle.md 6.1)
        from harnpy.runtime import extensions

        for finish in extensions.PROGRAM_FINISH:
            value = finish(self, value)
        return value


def export_names(lib: ModuleInstance) -> list[str]:
    """Names a wildcard import of ``lib`` exposes (spec 3.18): its ``pub fn``s, or all its
    fns when it has none, plus names it re-exports with ``pub import``."""
    fns: list[str] = []
    pub: list[str] = []
    for s in lib.ast.body:
        u = M._unwrap(s)
        if type(u) in (A.FnDecl, A.ToolDecl):
            fns.append(u.name)  # type: ignore[union-attr]
            if u.is_pub:  # type: ignore[union-attr]
                pub.append(u.name)  # type: ignore[union-attr]
    names = pub if pub else fns
    return names + [n for n in lib.pub_reexports if n not in names]


def _stdout_writer() -> Callable[[str], Any]:
    w = sys.stdout.write
    return w


def _stderr_writer() -> Callable[[str], None]:
    def w(text: str) -> None:
        sys.stderr.write(text)

    return w
