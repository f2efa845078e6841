"""A live interpreter session for the REPL: one runtime that grows entry by entry.

Each accepted entry (a line or block typed at the prompt, or a file given to ``:load``) is
parsed, linked and compiled **once** into a pseudo-module keyed ``<repl#N>`` and then run;
earlier entries are never re-run. All entry modules share one globals dict (plus the
compile-time tables: binding kinds, enums, ``type`` aliases, struct declarations), so
bindings, functions, impls and imports persist from one entry to the next. Every entry is
a module-level code object with a unique ``(module key, code id)`` pair, which is what
snapshots use to refer to code.

Saving (``:save``) writes an ordinary snapshot document (``harnpy.runtime.snapshot``) of an
idle thread: the source of every entry is embedded, the session's globals and ``impl``
tables are encoded as data, and ``extra["repl_session"]`` lists the entries in order.
Restoring (``:restore``) — in the same or another process — recompiles the entries in order
*without running them* (identical code ids), loads the libraries they import without
initialising them, then decodes the saved globals against the recompiled code.

Interrupts: while an entry runs, SIGINT (Ctrl-C) requests an interrupt of the running
threads (:meth:`Session.interrupt`); the run loop unwinds running only ``finally`` blocks
(see :mod:`harnpy.runtime.thread`) and :meth:`Session.eval` raises
:class:`~harnpy.runtime.errors.HarnInterrupt` with the session intact. A second Ctrl-C, or
one that arrives while the program waits (``sleep``, ``await``) or inside a blocking host
call, raises ``KeyboardInterrupt`` at once, which the run loop converts the same way.

This module never imports prompt-toolkit (the piped REPL uses it too).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harnpy.diagnostics import DiagnosticError
from harnpy.runtime import modules as M
from harnpy.runtime.code import CodeObject
from harnpy.runtime.compiler import CompileError, Compiler, ModuleContext
from harnpy.runtime.errors import HarnError, HarnInterrupt, render_error
from harnpy.runtime.modules import ModuleInstance
from harnpy.syntax import ast as A

#: Key of the session record inside a snapshot's ``extra`` table.
SESSION_KEY = "repl_session"
#: Version of that record's layout.
SESSION_FORMAT = 1
#: Name of the code object of every entry (shown in stack traces).
ENTRY_CODE_NAME = "<repl>"

_DECL_TYPES = (
    A.FnDecl,
    A.ToolDecl,
    A.StructDecl,
    A.EnumDecl,
    A.ImplDecl,
    A.InterfaceDecl,
    A.TypeDecl,
    A.SkillDecl,
)


@dataclass(frozen=True, slots=True)
class EvalResult:
    """What :meth:`Session.eval` returns: the entry's value and whether a REPL should echo
    it (``show`` is False for ``nil``, i.e. statements, declarations and nil values)."""

    value: Any
    show: bool


class EntryModule(ModuleInstance):
    """One REPL entry (or ``:load``-ed file) as a pseudo-module.

    ``key`` is ``<repl#N>`` (its name in ``runtime.modules`` and in snapshots); ``path`` is
    the key for typed entries and the file's absolute path for loaded files (diagnostics
    and stack traces show it). ``base_dir`` is the directory relative imports resolve
    against: the working directory when the entry was typed, or the loaded file's folder.
    """

    def __init__(self, key: str, path: str, source: str, tree: A.Module, base_dir: str) -> None:
        super().__init__(path, source, tree, repl=True)
        self.key = key
        self.base_dir = base_dir

    @property
    def directory(self) -> str:
        """``base_dir``: where the entry's relative imports resolve."""
        return self.base_dir


class Session:
    """One persistent interpreter session (see the module docstring).

    Args:
        stdout / stderr: text sinks for the program's output (default: sys streams).
        argv: script arguments visible to the ``argv`` builtin.
        max_depth: Harn frame limit (default: the runtime's).
        handle_sigint: install a SIGINT handler while an entry runs (only possible on the
            main Python thread; ignored elsewhere).

    Attributes:
        runtime: the :class:`~harnpy.runtime.runtime.Runtime` (replaced by ``reset`` and
            ``restore``).
        entries: the accepted entry modules, oldest first.
        globals: the bindings shared by all entries (name -> Harn value).
    """

    def __init__(
        self,
        stdout: Callable[[str], Any] | None = None,
        stderr: Callable[[str], Any] | None = None,
        argv: list[str] | None = None,
        max_depth: int | None = None,
        handle_sigint: bool = True,
    ) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self._argv = list(argv or [])
        self._max_depth = max_depth
        self.handle_sigint = handle_sigint
        self._thread: Any = None
        self._sigints = 0
        self._hint_timer: threading.Timer | None = None
        self._stdout_isatty = False
        self._init_state()

    @property
    def stdout_isatty(self) -> bool:
        """What ``is_stdout_tty()`` reports to programs in this session (kept across
        ``reset``/``restore``)."""
        return self._stdout_isatty

    @stdout_isatty.setter
    def stdout_isatty(self, flag: bool) -> None:
        """Set the flag on the session and on its current runtime."""
        self._stdout_isatty = flag
        self.runtime.stdout_isatty = flag

    # ------------------------------------------------------------------ state

    def _init_state(self) -> None:
        from harnpy.runtime.runtime import Runtime

        kwargs: dict[str, Any] = {}
        if self._max_depth:
            kwargs["max_depth"] = self._max_depth
        self.runtime = Runtime(argv=self._argv, stdout=self._stdout, stderr=self._stderr, **kwargs)
        self.runtime.stdout_isatty = self._stdout_isatty
        # A REPL entry is not a program `harnpy run --resume` could continue.
        self.runtime.snapshot_exit_refusal = (
            "__snapshot_exit is not available in the REPL (nothing could resume its "
            "snapshot); `:save FILE` saves the whole session"
        )
        self.globals: dict[str, Any] = {}
        self.global_kinds: dict[str, str] = {}
        self.type_aliases: dict[str, Any] = {}
        self.enums: dict[str, dict[str, int]] = {}
        self.alias_decls: dict[str, Any] = {}
        self.struct_decls: dict[str, Any] = {}
        self.entries: list[EntryModule] = []
        self.counter = 0

    def _adopt(self, other: Session) -> None:
        for name in (
            "runtime",
            "globals",
            "global_kinds",
            "type_aliases",
            "enums",
            "alias_decls",
            "struct_decls",
            "entries",
            "counter",
        ):
            setattr(self, name, getattr(other, name))

    def reset(self) -> None:
        """Forget everything: a fresh runtime with no bindings (``:reset``)."""
        self._init_state()

    # ------------------------------------------------------------- compiling

    def compile_entry(
        self,
        source: str,
        path: str | None = None,
        key: str | None = None,
        base_dir: str | None = None,
    ) -> EntryModule:
        """Parse, link and compile one entry and register it (without running it).

        ``path`` defaults to the new key ``<repl#N>``; ``key`` is only given when
        restoring. Raises :class:`DiagnosticError` for syntax, import and compile errors;
        the session is unchanged then (except for imported libraries that were loaded).
        """
        from harnpy.syntax import parse

        rt = self.runtime
        if key is None:
            # Every submitted entry takes a number, even one that fails to compile, so a
            # diagnostic's ``<repl#N>`` names exactly one entry.
            self.counter += 1
            key = f"<repl#{self.counter}>"
        if path is None:
            path = key
        if base_dir is None:
            base_dir = os.path.dirname(path) if not path.startswith("<") else os.getcwd()
        tree = parse(source, path)
        mod = EntryModule(key, path, source, tree, base_dir)
        mod.globals = self.globals
        mod.global_kinds = self.global_kinds
        mod.type_aliases = self.type_aliases
        mod.constants = rt.constants
        kinds_before = dict(self.global_kinds)
        try:
            rt._link_imports(mod)
            mod.init_code = self._compile(mod)
        except BaseException:
            # Keep the kinds of names an import did bind; forget the rest of this entry.
            self.global_kinds.clear()
            self.global_kinds.update(kinds_before)
            for name in mod.globals.keys() - kinds_before.keys():
                self.global_kinds[name] = "fn"
            raise
        rt.modules[key] = mod
        self.entries.append(mod)
        n = _entry_number(key)
        if n is not None:
            self.counter = max(self.counter, n)
        return mod

    def _compile(self, mod: EntryModule) -> CodeObject:
        """Compile ``mod`` against everything the session has declared so far.

        The context depends only on the sequence of compiled entries (never on run-time
        values), so recompiling the same entries on restore yields the same code.
        """
        rt = self.runtime
        tree = mod.ast
        names = M.top_level_names(tree)
        self.global_kinds.update(names)
        aliases, structs = M.collect_types(tree)
        ctx = ModuleContext(
            module=mod,
            global_names=set(self.global_kinds),
            enums={**self.enums, **M.collect_enums(tree)},
            builtins=rt.builtins,
            pure_builtins=rt.pure_builtins,
        )
        ctx.type_aliases = {**self.alias_decls, **aliases}
        ctx.structs_decl = {**self.struct_decls, **structs}
        # closures capture top-level bindings by value, as in `harnpy run` (spec 3.10)
        ctx.capture_globals = True
        comp = Compiler(ctx)
        entry = M.entry_pipeline(tree)
        try:
            if entry is None:
                stmts = [s for s in tree.body if type(s) is not A.ImportDecl]
                code = comp.compile_module_body(stmts, -1, ENTRY_CODE_NAME, returns_last=True)
            else:
                # A file (or entry) with a pipeline runs like ``harnpy run``: top-level
                # bindings, then declarations, then the entry pipeline (spec 2.1).
                body: list[Any] = []
                decls: list[Any] = []
                for s in tree.body:
                    u = M._unwrap(s)
                    if type(u) is A.LetStmt:
                        body.append(s)
                    elif type(u) in _DECL_TYPES:
                        decls.append(s)
                chain = M.pipeline_chain(tree, entry)
                code = comp.compile_module_body(
                    body + decls, -1, ENTRY_CODE_NAME, returns_last=False, pipelines=chain
                )
        except CompileError as e:
            raise M.syntax_error(mod.path, mod.source, e.message, e.span, e.code) from None
        mod.codes[code.id] = code
        for c in ctx.codes:
            mod.codes[c.id] = c
        # Only a compiled entry adds to the session's compile-time tables.
        self.enums = ctx.enums
        self.alias_decls = ctx.type_aliases
        self.struct_decls = ctx.structs_decl
        return code

    # --------------------------------------------------------------- running

    def eval(self, source: str, path: str | None = None) -> EvalResult:
        """Parse, compile and run one entry; return its value.

        Raises :class:`DiagnosticError` (nothing ran), :class:`HarnError` (an uncaught
        runtime error; bindings made before it stay), :class:`HarnInterrupt` (Ctrl-C; the
        ``finally`` blocks ran) — the session stays usable after each of them.
        ``harnpy.stdlib.fs.HarnExit`` (the ``exit`` builtin) propagates as well.
        """
        mod = self.compile_entry(source, path)
        assert mod.init_code is not None
        value = self.run_code(mod.init_code)
        return EvalResult(value, value is not None)

    def bind_result(self, value: Any) -> str:
        """Bind an echoed entry value to the next free ``_N`` (``_1``, ``_2``, ...; lifecycle.md
        9.2) and to ``_`` as top-level ``let`` bindings; returns the ``_N`` name. The number follows the highest ``_N``
        bound so far, so a session brought back by :meth:`restore` goes on counting."""
        taken = [int(n[1:]) for n in self.globals if n[:1] == "_" and n[1:].isdigit()]
        name = f"_{max(taken, default=0) + 1}"
        self.globals[name] = value
        self.global_kinds[name] = "let"
        # `_` is the last echoed value (read outside a pipe; the compiler resolves it to
        # this global in REPL entries only)
        self.globals["_"] = value
        self.global_kinds["_"] = "let"
        return name

    def load_file(self, path: str) -> EvalResult:
        """Run a file in the session (``:load``): like an entry whose text is the file's.

        The file is read as every module source is (:func:`harnpy.runtime.modules.read_source`:
        a regular file of at most 16 MiB, read with :func:`harnpy.security.read_capped`), so a
        FIFO or a device is refused instead of blocking the session.

        Raises OSError / UnicodeDecodeError when the file cannot be read (a FIFO, a device
        or a file over the limit is :class:`harnpy.security.ReadRefused`, its message saying
        which), and whatever :meth:`eval` raises.
        """
        from harnpy.runtime.modules import read_source

        full = os.path.abspath(os.path.expanduser(path))
        source = read_source(full)
        return self.eval(source, full)

    def run_code(self, code: CodeObject) -> Any:
        """Run a module-level code object on a new main thread through the scheduler."""
        from harnpy.runtime.thread import Thread

        rt = self.runtime
        th = Thread(rt, "main")
        th.start(code, [None] * code.nslots)
        rt.main_thread = th
        self._thread = th
        self._sigints = 0
        restore_handler = self._install_sigint()
        try:
            try:
                return rt.scheduler.run_until(th)
            except (HarnInterrupt, KeyboardInterrupt):
                self._finish_interrupted(th)
                raise HarnInterrupt() from None
        finally:
            self._thread = None
            if self._hint_timer is not None:
                self._hint_timer.cancel()
                self._hint_timer = None
            restore_handler()

    def _finish_interrupted(self, main: Any) -> None:
        """After an interrupt escaped the scheduler: drop other tasks and timers, and let the
        main thread (if it was waiting rather than running) run its ``finally`` blocks."""
        rt = self.runtime
        self._clear_scheduler()
        if main.frame is not None and main.status not in ("done", "failed", "interrupted"):
            main.interrupt_requested = True
            try:
                rt.scheduler.run_until(main)
            except (HarnInterrupt, KeyboardInterrupt, HarnError):
                pass
            self._clear_scheduler()
        main.interrupt_requested = False

    def _clear_scheduler(self) -> None:
        sched = self.runtime.scheduler
        sched.ready.clear()
        sched.blocked.clear()
        sched.timers.clear()
        for fut in list(sched.futures):
            fut.cancel()
        sched.futures.clear()

    # ------------------------------------------------------------ interrupts

    def interrupt(self) -> None:
        """Ask the running entry to stop (thread-safe; a no-op when nothing runs).

        Flags the main thread, the thread running right now and every queued or blocked
        thread; each stops at its next loop back-edge, call or return.
        """
        th = self._thread
        if th is None:
            return
        rt = self.runtime
        sched = rt.scheduler
        targets = [th, getattr(rt, "current_thread", None)]
        try:
            targets.extend(list(sched.ready))
            targets.extend(list(sched.blocked))
        except RuntimeError:  # mutated while we looked (called from another thread)
            pass
        for t in targets:
            if t is not None:
                t.interrupt_requested = True

    def _install_sigint(self) -> Callable[[], None]:
        if not self.handle_sigint or threading.current_thread() is not threading.main_thread():
            return lambda: None
        try:
            previous = signal.signal(signal.SIGINT, self._on_sigint)
        except (ValueError, OSError):
            return lambda: None

        def restore() -> None:
            signal.signal(signal.SIGINT, previous)

        return restore

    def _on_sigint(self, signum: int, pyframe: Any) -> None:
        self._sigints += 1
        if self._sigints > 1 or _waiting_or_blocked(pyframe):
            raise KeyboardInterrupt
        self.interrupt()
        t = threading.Timer(2.0, self._hint)
        t.daemon = True
        self._hint_timer = t
        t.start()

    def _hint(self) -> None:
        if self._thread is not None and self._sigints == 1:
            self.runtime.write_err("(still stopping; press Ctrl-C again to interrupt at once)\n")

    # ------------------------------------------------------------- snapshots

    def session_record(self) -> dict[str, Any]:
        """The ``extra["repl_session"]`` record: entry order, paths and base folders."""
        return {
            "format": SESSION_FORMAT,
            "counter": self.counter,
            "entries": [
                {"key": e.key, "path": e.path, "base_dir": e.base_dir} for e in self.entries
            ],
        }

    def save(self, path: str) -> int:
        """Write the whole session to a snapshot file (atomically); returns its size in
        bytes. Raises :class:`~harnpy.runtime.snapshot.SnapshotError` when a binding holds
        something that is not data (an open handle, a running task...)."""
        from harnpy.runtime.snapshot import seal_document, snapshot, write_atomic
        from harnpy.runtime.sources import persist_sources
        from harnpy.runtime.thread import Thread

        th = Thread(self.runtime, "repl")
        doc = snapshot(th, extra={SESSION_KEY: self.session_record()})
        data = seal_document(doc)
        target = os.path.expanduser(path)
        write_atomic(target, data, make_dirs=False)
        # the sources of the modules the session imported, content-addressed beside the
        # snapshot (entries carry theirs inline), so :restore after an edit runs them
        for problem in persist_sources(self.runtime, doc, snapshot_path=target):
            self.runtime.write_err(f"warning: {problem}\n")
        return len(data)

    def restore(self, path: str) -> None:
        """Replace this session with the one saved in ``path`` (see the module docstring).

        Raises :class:`~harnpy.runtime.snapshot.SnapshotError` (not a session snapshot,
        changed library source, other codegen version...) or :class:`DiagnosticError`; the
        current session is kept unchanged when restoring fails.
        """
        from harnpy.runtime.snapshot import SnapshotError, load_document, restore
        from harnpy.runtime.snapshot_model import SessionRecord
        from harnpy.shapes import ShapeError, structure

        doc = load_document(os.path.expanduser(path))
        raw = doc.get("extra", {}).get(SESSION_KEY)
        if raw is None:
            raise SnapshotError(
                f"{path} is not a REPL session snapshot (resume program snapshots with "
                "`harnpy run --resume`)",
                "E404",
            )
        try:
            meta = structure(raw, SessionRecord)
        except ShapeError as problem:
            raise SnapshotError(
                f"{path}: the saved session record is damaged: {problem.describe()}", "E404"
            ) from None
        from harnpy.runtime.resume import source_pins
        from harnpy.runtime.sources import SourceLookup

        records = {r["key"]: r for r in doc["modules"]}
        target = os.path.expanduser(path)
        # each imported library as it was when the session was saved: its file when that
        # still has the recorded hash, else the stored copy (E406 when neither is there)
        pins = source_pins(list(records.values()), target, SourceLookup(target), upgrade=False)
        fresh = Session(
            stdout=self._stdout,
            stderr=self._stderr,
            argv=self._argv,
            max_depth=self._max_depth,
            handle_sigint=self.handle_sigint,
        )
        fresh.stdout_isatty = self._stdout_isatty
        rt = fresh.runtime
        rt.restoring = True
        rt.source_pins = pins
        try:
            for e in meta.entries:
                rec = records.get(e.key)
                if rec is None or rec.get("source") is None:
                    raise SnapshotError(
                        f"snapshot lacks the source of REPL entry {e.key!r}", "E404"
                    )
                fresh.compile_entry(rec["source"], path=e.path, key=e.key, base_dir=e.base_dir)
            # std modules loaded on first use (e.g. by agent_loop) are named by the
            # snapshot but imported by no entry: compile them too
            from harnpy.runtime.resume import load_std_modules

            load_std_modules(doc, rt)
            restore(doc, rt)
        finally:
            rt.restoring = False
            rt.source_pins = {}
        fresh._relink_libraries()
        fresh.counter = max(fresh.counter, meta.counter)
        self._adopt(fresh)

    def _relink_libraries(self) -> None:
        """After a restore: recompute library exports and bind the names libraries import
        from each other (:meth:`Runtime.relink_imports`). Entry bindings, imported ones
        included, come from the snapshot."""
        self.runtime.relink_imports(restored=self.entries)

    # ---------------------------------------------------------------- errors

    def render_error(self, exc: BaseException) -> str:
        """The diagnostic text for an error raised by :meth:`eval`, in the format of
        ``harnpy run`` (``path:line:col: error[CODE]: message``, the source line with a
        caret, and the Harn stack trace when the error came from inside a call)."""
        if isinstance(exc, DiagnosticError):
            return exc.render()
        if isinstance(exc, HarnError):
            # a trace naming only the entry itself adds nothing to the caret line
            return render_error(exc, self._source, min_trace=2)
        code = getattr(exc, "code", None)
        message = getattr(exc, "message", None) or str(exc)
        return f"error[{code}]: {message}" if isinstance(code, str) else f"error: {message}"

    def _source(self, path: str) -> str | None:
        for m in self.runtime.modules.values():
            if m.path == path:
                return m.source
        return None

    # ------------------------------------------------------------ inspection

    def names(self) -> dict[str, str]:
        """Names in scope at the prompt with their kind (``let``/``var``/``fn``/``enum``)."""
        out = dict(self.global_kinds)
        for n in self.enums:
            out.setdefault(n, "enum")
        return out

    def find_definition(self, name: str) -> tuple[ModuleInstance, Any] | None:
        """The module and declaration node (``fn``/``tool``/``struct``/``enum``) that
        defines ``name``, searching the latest entry first, then imported libraries."""
        value = self.globals.get(name)
        code = getattr(value, "code", None)
        if code is not None and code.module is not None:
            node = _find_decl(code.module.ast, name)
            if node is not None:
                return code.module, node
        for mod in reversed(self.entries):
            node = _find_decl(mod.ast, name)
            if node is not None:
                return mod, node
        return None


def _find_decl(tree: A.Module, name: str) -> Any:
    for s in tree.body:
        u = M._unwrap(s)
        if type(u) in (A.FnDecl, A.ToolDecl, A.StructDecl, A.EnumDecl, A.TypeDecl):
            if getattr(u, "name", None) == name:
                return u
    return None


def doc_comment(source: str, node: Any) -> str:
    """The doc comment right above a declaration (spec 1.2), without its markers: the
    ``///`` lines, or a ``/** ... */`` block (leading ``*`` of its lines dropped)."""
    lines = source.split("\n")
    i = node.span.line - 2
    while i >= 0 and lines[i].strip().startswith("@"):
        i -= 1  # attributes between the comment and the declaration
    if i >= 0 and lines[i].rstrip().endswith("*/"):
        return _block_doc_comment(lines[: i + 1])
    out: list[str] = []
    while i >= 0:
        text = lines[i].strip()
        if text.startswith("@"):
            i -= 1
            continue
        if not text.startswith("///") or text.startswith("////"):
            break
        out.append(text[3:].strip())
        i -= 1
    return "\n".join(reversed(out))


def _block_doc_comment(lines: list[str]) -> str:
    """The text of the ``/** ... */`` comment ending ``lines`` ("" when that block comment is
    not a doc comment: ``/* */``, ``/***``, ``/**/``, or code before it on its line)."""
    text = "\n".join(lines).rstrip()
    depth = 0
    i = len(text)
    start = -1
    while i >= 2:  # find the opener, block comments nest (spec 1.2)
        pair = text[i - 2 : i]
        if pair == "*/":
            depth += 1
            i -= 2
        elif pair == "/*":
            depth -= 1
            i -= 2
            if depth == 0:
                start = i
                break
        else:
            i -= 1
    if start < 0:
        return ""
    body = text[start:]
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip() or not body.startswith("/**"):
        return ""
    if body.startswith("/***") or body == "/**/":
        return ""
    out: list[str] = []
    for raw in body[3:-2].split("\n"):
        s = raw.strip()
        if s.startswith("*"):
            s = s[1:].strip()
        out.append(s)
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def _entry_number(key: str) -> int | None:
    if key.startswith("<repl#") and key.endswith(">"):
        try:
            return int(key[6:-1])
        except ValueError:
            return None
    return None


def _waiting_or_blocked(pyframe: Any) -> bool:
    """True when Ctrl-C arrived while the scheduler waits for a timer or a host future,
    or while a builtin or host library runs (code outside the evaluator core
    ``harnpy.runtime``, e.g. blocked reading stdin or waiting for a subprocess): the
    interrupt must then be raised right away rather than at the next safe point (the run
    loop turns the ``KeyboardInterrupt`` into an interrupt at the current instruction)."""
    if pyframe is None:
        return False
    from harnpy.runtime.scheduler import Scheduler

    wait_code = Scheduler._wait_for_event.__code__
    name = pyframe.f_globals.get("__name__", "")
    if not name.startswith("harnpy.runtime."):
        return True
    f = pyframe
    while f is not None:
        if f.f_code is wait_code:
            return True
        f = f.f_back
    return False


__all__ = ["Session", "EvalResult", "EntryModule", "SESSION_KEY", "doc_comment"]
