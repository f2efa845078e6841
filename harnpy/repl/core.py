"""The REPL core shared by the terminal and piped front ends: running entries and
``:commands``, echoing values, reporting errors."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from harnpy.repl.echo import echo, flat
from harnpy.runtime.session import EvalResult, Session, doc_comment

HELP = """\
Enter Harn statements or expressions; an expression's value is printed (nil is not;
strings are shown quoted, nested values over several lines when they are wide) and bound
to the next of _1, _2, ... and to _ (the last value) so later entries can use it.
An entry continues over several lines while brackets or a triple-quoted string are open
or a line ends with an operator; an empty line ends it. Alt-Enter submits as it is.

Commands:
  :help             this text
  :quit             leave the REPL (also :q, :exit, or Ctrl-D on an empty line)
  :reset            forget every binding and start a fresh session
  :load FILE        run a .harn file in this session (its definitions stay)
  :type EXPR        evaluate EXPR and show the type of its value
  :doc NAME         documentation of a builtin (NAME or type.method) or of your fn
                    (NAME? does the same)
  :time EXPR        evaluate EXPR, show its value and how long it took
  :edit [FILE]      edit the last entry (or FILE) in $VISUAL / $EDITOR, then run it
  :vars             list the bindings of this session
  :save FILE        write the whole session to a snapshot file
  :restore FILE     replace this session with one saved by :save (any process)

Keys: Tab completes, Ctrl-C discards the entry or interrupts a running one,
Ctrl-D on an empty line exits. History is kept in ~/.harnpy/repl_history."""


def describe_type(value: Any) -> str:
    """The ``:type`` text of a value: its ``type_of`` name, with the struct or enum name,
    or a closure's parameters."""
    from harnpy.runtime.values import (
        Closure,
        EnumNamespace,
        EnumValue,
        StructType,
        StructValue,
        type_name,
    )

    if type(value) is Closure:
        return "closure fn(" + ", ".join(value.code.param_names) + ")"
    if type(value) is StructValue:
        return f"struct {value.name}"
    if type(value) is EnumValue:
        return f"enum {value.enum}"
    if type(value) is StructType:
        return f"struct type {value.name}"
    if type(value) is EnumNamespace:
        return f"enum type {value.name}"
    return type_name(value)


def doc_text(session: Session, name: str) -> str | None:
    """``:doc NAME``: the signature and ``///`` or ``/** */`` doc comment of a function,
    struct or enum defined in the session or imported, else the reference text of a
    builtin, method or ``std/`` function — the same as ``harnpy doc NAME``
    (:func:`harnpy.docgen.builtin_doc`). None when nothing is known by that name."""
    from harnpy.docgen import builtin_doc, clean_doc
    from harnpy.runtime.values import Builtin, Closure

    name = name.strip()
    value = session.globals.get(name)
    if "." not in name and (type(value) is Closure or name in session.enums or value is not None):
        found = session.find_definition(name)
        if found is not None:
            mod, node = found
            head = _signature(node)
            where = getattr(mod, "key", mod.path)
            text = doc_comment(mod.source, node)
            body = (
                _indent(text)
                if text
                else "  (no doc comment: write /// lines or a /** ... */ block above it)"
            )
            return f"{head}  (defined in {where})\n{body}"
    ref = builtin_doc(name)
    if ref is None and type(value) is Builtin:
        ref = f"{name}  (builtin)\n" + _indent(clean_doc(value.doc) or "(no docstring)")
    return ref


def _signature(node: Any) -> str:
    from harnpy.syntax import ast as A

    t = type(node)
    if t in (A.FnDecl, A.ToolDecl):
        params = []
        for p in node.params:
            params.append(("..." if p.rest else "") + p.name + (" = …" if p.default else ""))
        kw = "tool" if t is A.ToolDecl else "fn"
        return f"{kw} {node.name}({', '.join(params)})"
    if t is A.StructDecl:
        return f"struct {node.name} {{{', '.join(f.name for f in node.fields)}}}"
    if t is A.EnumDecl:
        return f"enum {node.name} {{{', '.join(v.name for v in node.variants)}}}"
    return f"type {getattr(node, 'name', '?')}"


def _indent(text: str) -> str:
    return "\n".join(("  " + line) if line else "" for line in text.split("\n"))


class ReplExit(Exception):
    """Leave the REPL with ``code`` (``:quit``, or the program called ``exit``)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Colors:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def error(self, text: str) -> str:
        """``text`` in red when colours are on."""
        return self._wrap("31", text)

    def dim(self, text: str) -> str:
        """``text`` dimmed when colours are on."""
        return self._wrap("2", text)

    def value(self, text: str) -> str:
        """An echoed value: never coloured."""
        return text


class ReplCore:
    """Runs entries and commands against one session and reports the outcome.

    ``out``/``err`` receive text for stdout/stderr (``err`` after flushing ``out``);
    ``color`` adds ANSI colours to diagnostics; ``failed`` turns True when any entry or
    command fails (for ``--strict``). ``cmd_<name>(arg)`` implement the ``:name`` commands
    (see :meth:`command`): True on success, False after reporting a failure with
    :meth:`error`.
    """

    def __init__(
        self,
        out: Callable[[str], Any],
        err: Callable[[str], Any],
        color: bool = False,
        flush: Callable[[], Any] | None = None,
        session: Session | None = None,
        width: Callable[[], int] | None = None,
    ) -> None:
        self._out = out
        self._err = err
        self._flush = flush or (lambda: None)
        self.colors = _Colors(color)
        self.failed = False
        #: ``--strict``: a failed entry makes the final exit status 1.
        self.strict = False
        self.last_char = "\n"
        #: Columns an echoed value may take before it is broken over lines.
        self.width = width or (lambda: 100)
        #: The last entry run (what ``:edit`` opens).
        self.last_entry = ""
        self.session = session or Session(stdout=self.program_out, stderr=self.program_err)

    # ---- output

    def program_out(self, text: str) -> None:
        """The session's stdout sink (remembers whether output ended with a newline)."""
        if text:
            self.last_char = text[-1]
            self._out(text)

    def program_err(self, text: str) -> None:
        """The session's stderr sink: flushes stdout first so the two streams appear in order."""
        self._flush()
        self._err(text)

    def say(self, text: str) -> None:
        """Write a line of REPL output to stdout."""
        self.program_out(text + "\n")

    def error(self, text: str) -> None:
        """Report a failure (stderr) and remember it for ``--strict``."""
        self.failed = True
        self.end_line()
        self._flush()
        lines = text.split("\n")
        lines[0] = self.colors.error(lines[0])
        self._err("\n".join(lines) + "\n")

    def end_line(self) -> None:
        """Finish a line the program left open, so the next prompt or message starts on a
        line of its own."""
        if self.last_char != "\n":
            self.program_out("\n")
        self._flush()

    # ---- entries

    def handle(self, text: str) -> bool:
        """Run one entry or ``:command``; True when it succeeded. Raises :class:`ReplExit`."""
        stripped = text.strip()
        if not stripped:
            return True
        if stripped.startswith(":"):
            return self.command(stripped)
        if _DOC_QUERY.match(stripped):  # `name?` asks for the documentation (`:doc name`)
            return self.cmd_doc(stripped[:-1])
        self.last_entry = text
        return self.run_entry(text)

    def run_entry(self, text: str, *, show: Callable[[Any], str] | None = None) -> bool:
        """Evaluate one Harn entry in the session and echo its value: ``show(value)`` when given,
        else its echo (:func:`harnpy.repl.echo.echo`) unless the value is nil. True on success; False after reporting an
        error, an interrupt or an internal error (:meth:`_evaluate`).

        Raises:
            ReplExit: the program called ``exit``.
        """

        result = self._evaluate(lambda: self.session.eval(text))
        if result is None:
            return False
        if show is not None:
            self.end_line()
            self.say(show(result.value))
        elif result.show:
            self.session.bind_result(result.value)
            self.end_line()
            self.say(self.colors.value(echo(result.value, self.width())))
        return True

    def _evaluate(self, run: Callable[[], EvalResult]) -> EvalResult | None:
        """Run an entry or a loaded file (``run()``); None after reporting how it failed.

        Every way a program can stop short is reported and leaves the session usable: a
        syntax or runtime error (rendered as ``harnpy run`` does; ``__snapshot_exit`` is one,
        the session refuses it), an interrupt, Python's recursion limit (a program nested too
        deeply to compile) and an internal error (``error[E999]``; ``HARNPY_DEBUG`` adds the
        Python traceback).

        Raises:
            ReplExit: the program called ``exit``.
        """
        from harnpy.diagnostics import RECURSION_LIMIT_MESSAGE, DiagnosticError, internal_error_text
        from harnpy.runtime.errors import HarnError, HarnExit, HarnInterrupt

        try:
            return run()
        except (DiagnosticError, HarnError) as e:
            self.error(once_located(self.session.render_error(e)))
        except (HarnInterrupt, KeyboardInterrupt):
            self.error("interrupted")
        except HarnExit as e:
            self.end_line()
            raise ReplExit(int(e.code)) from None
        except RecursionError:
            self.error(RECURSION_LIMIT_MESSAGE)
        except BrokenPipeError:
            raise  # stdout was closed: the shell ends quietly (cli.main)
        except Exception as e:  # noqa: BLE001 - a harnpy bug is reported, the session goes on
            if os.environ.get("HARNPY_DEBUG"):
                import traceback

                self.end_line()
                self._err("".join(traceback.format_exception(e)))
            self.error(internal_error_text(e))
        return None

    # ---- commands

    def command(self, text: str) -> bool:
        """Run a ``:command`` line (``:name arg``; aliases ``:h``/``:?``, ``:q``/``:exit``,
        ``:t``); True when it succeeded, False after reporting a failure or an unknown command.

        Raises:
            ReplExit: ``:quit``, or the program called ``exit`` (``:load``, ``:type``).
        """
        cmd, _, arg = text.partition(" ")
        arg = arg.strip()
        handler = {
            ":help": self.cmd_help,
            ":h": self.cmd_help,
            ":?": self.cmd_help,
            ":quit": self.cmd_quit,
            ":q": self.cmd_quit,
            ":exit": self.cmd_quit,
            ":reset": self.cmd_reset,
            ":load": self.cmd_load,
            ":type": self.cmd_type,
            ":t": self.cmd_type,
            ":doc": self.cmd_doc,
            ":time": self.cmd_time,
            ":edit": self.cmd_edit,
            ":vars": self.cmd_vars,
            ":save": self.cmd_save,
            ":restore": self.cmd_restore,
        }.get(cmd)
        if handler is None:
            self.error(f"unknown command {cmd} (type :help for the list)")
            return False
        return handler(arg)

    def _need(self, arg: str, what: str, cmd: str) -> bool:
        if not arg:
            self.error(f"{cmd} needs {what}")
            return False
        return True

    def cmd_help(self, arg: str) -> bool:
        """``:help``: print :data:`HELP`; True."""
        self.say(HELP)
        return True

    def cmd_quit(self, arg: str) -> bool:
        """``:quit``: raises :class:`ReplExit` with :meth:`exit_status`."""
        raise ReplExit(self.exit_status())

    def cmd_reset(self, arg: str) -> bool:
        """``:reset``: replace the session with a fresh one; True."""
        self.session.reset()
        self.say(self.colors.dim("session reset"))
        return True

    def cmd_load(self, arg: str) -> bool:
        """``:load FILE``: run a ``.harn`` file in this session (its definitions stay); False
        after reporting an unreadable file or a failure of the program (as :meth:`run_entry`:
        an error, an interrupt, an internal error). Raises :class:`ReplExit`
        when the file calls ``exit``."""

        path = _unquote(arg)
        if not self._need(path, "a file name", ":load"):
            return False
        full = os.path.abspath(os.path.expanduser(path))
        from harnpy.runtime.modules import read_source
        from harnpy.security import ReadRefused

        try:
            source = read_source(full)  # capped, regular files only (a device is not read)
        except ReadRefused as e:
            self.error(e.message.replace(full, path, 1))
            return False
        except OSError as e:
            self.error(f"cannot read {path}: {e.strerror or e}")
            return False
        except UnicodeDecodeError:
            self.error(f"{path} is not UTF-8 text")
            return False
        # Session.load_file(path) is read + eval; reading here keeps an OSError raised while
        # the program runs (an internal error) from being reported as an unreadable file.
        result = self._evaluate(lambda: self.session.eval(source, full))
        if result is None:
            return False
        self.end_line()
        if result.show:
            self.say(echo(result.value, self.width()))
        self.say(self.colors.dim(f"loaded {path}"))
        return True

    def cmd_type(self, arg: str) -> bool:
        """``:type EXPR``: check that EXPR parses as one expression, evaluate it (side effects
        included) and print the type of its value (:func:`describe_type`); False after reporting
        a syntax error or a failure (as :meth:`run_entry`)."""
        from harnpy.syntax import HarnSyntaxError, parse_expression

        if not self._need(arg, "an expression", ":type"):
            return False
        try:
            parse_expression(arg, "<repl>")
        except HarnSyntaxError as e:
            self.error(e.render())
            return False
        return self.run_entry(arg, show=describe_type)

    def cmd_doc(self, arg: str) -> bool:
        """``:doc NAME``: print the documentation of a builtin, a method (``type.method``) or a
        session definition (:func:`doc_text`); an unknown name is reported, with a did-you-mean
        hint, and returns False."""
        if not self._need(arg, "a name", ":doc"):
            return False
        text = doc_text(self.session, arg)
        if text is None:
            from harnpy.diagnostics import did_you_mean
            from harnpy.docgen import known_names

            # the same candidates as `harnpy doc NAME` (builtins, methods, std functions),
            # plus the session's own definitions
            own = set(self.session.names())
            hint = did_you_mean(arg, known_names() | own, own)
            extra = f" (did you mean `{hint}`?)" if hint else ""
            self.error(f"no builtin, method or definition named {arg}{extra}")
            return False
        self.say(text)
        return True

    def cmd_time(self, arg: str) -> bool:
        """``:time EXPR``: run EXPR as an entry (its value echoed and bound as usual), then
        print the wall-clock time it took (``time: 12.3 ms``); False when it failed (the
        time is printed all the same)."""
        import time

        if not self._need(arg, "an expression", ":time"):
            return False
        self.last_entry = arg
        start = time.perf_counter()
        ok = self.run_entry(arg)
        elapsed_ms = (time.perf_counter() - start) * 1000
        self.end_line()
        self.say(self.colors.dim(f"time: {_format_ms(elapsed_ms)}"))
        return ok

    def cmd_edit(self, arg: str) -> bool:
        """``:edit [FILE]``: open ``$VISUAL`` or ``$EDITOR`` on FILE (then ``:load`` it) or,
        without FILE, on a temporary ``.harn`` file holding the last entry (then run what
        was saved as an entry). False when no editor is set, it cannot be started or exits
        non-zero (nothing runs), or the code fails."""
        import shlex
        import subprocess
        import tempfile

        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.error(":edit needs an editor: set $EDITOR (or $VISUAL), e.g. EDITOR=nano")
            return False
        path = _unquote(arg)
        temp = None
        if not path:
            fd, temp = tempfile.mkstemp(prefix="harnpy-edit-", suffix=".harn")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(self.last_entry + ("\n" if self.last_entry else ""))
        target = path or temp or ""
        try:
            self.end_line()
            try:
                rc = subprocess.call([*shlex.split(editor), target])
            except OSError as e:
                self.error(f":edit: cannot start {editor}: {e.strerror or e}")
                return False
            if rc != 0:
                self.error(f":edit: {editor} exited with status {rc}; nothing was run")
                return False
            if path:
                return self.cmd_load(path)
            from harnpy.runtime.modules import read_source

            try:
                # capped and regular files only, as :load (the editor may have replaced
                # the file with anything)
                text = read_source(target).strip("\n")
            except (OSError, UnicodeDecodeError) as e:
                why = getattr(e, "strerror", None) or str(e)
                self.error(f":edit: cannot read what was saved: {why}")
                return False
        finally:
            if temp is not None:
                os.unlink(temp)
        if not text.strip():
            self.say(self.colors.dim("(empty: nothing to run)"))
            return True
        self.say(text)
        self.last_entry = text
        return self.run_entry(text)

    def cmd_vars(self, arg: str) -> bool:
        """``:vars``: list the session's bindings as ``kind name: type = value`` (values cut to
        70 characters); functions that came from imports are only counted. True."""
        from harnpy.runtime.values import Closure

        entries = {id(e) for e in self.session.entries}
        rows = []
        imported = 0
        for name in sorted(self.session.globals):
            if name == "_":  # the last value: the highest _N shows it
                continue
            value = self.session.globals[name]
            if type(value) is Closure and id(value.code.module) not in entries:
                imported += 1
                continue
            kind = self.session.global_kinds.get(name, "let")
            shown = flat(value)
            if len(shown) > 70:
                shown = shown[:67] + "..."
            rows.append(f"{kind} {name}: {describe_type(value)} = {shown}")
        for line in rows:
            self.say(line)
        if imported:
            self.say(self.colors.dim(f"({imported} imported functions not shown)"))
        if not rows and not imported:
            self.say(self.colors.dim("(no bindings)"))
        return True

    def cmd_save(self, arg: str) -> bool:
        """``:save FILE``: write the whole session to a snapshot file; False after reporting a
        value that cannot be saved or an unwritable file."""
        from harnpy.runtime.snapshot import SnapshotError

        path = _unquote(arg)
        if not self._need(path, "a file name", ":save"):
            return False
        try:
            size = self.session.save(path)
        except SnapshotError as e:
            self.error(f"error[{e.code}]: cannot save the session: {e.message}")
            return False
        except OSError as e:
            self.error(f"cannot write {path}: {e.strerror or e}")
            return False
        n = len(self.session.entries)
        noun = "entry" if n == 1 else "entries"
        self.say(self.colors.dim(f"saved {n} {noun} to {path} ({size} bytes)"))
        return True

    def cmd_restore(self, arg: str) -> bool:
        """``:restore FILE``: replace the session with one written by ``:save``; False after
        reporting a bad snapshot (the current session is kept)."""
        from harnpy.diagnostics import DiagnosticError
        from harnpy.runtime.snapshot import SnapshotError

        path = _unquote(arg)
        if not self._need(path, "a file name", ":restore"):
            return False
        try:
            self.session.restore(path)
        except SnapshotError as e:
            self.error(f"error[{e.code}]: {e.message}")
            return False
        except DiagnosticError as e:
            self.error(e.render())
            return False
        n = len(self.session.entries)
        noun = "entry" if n == 1 else "entries"
        self.say(self.colors.dim(f"restored {n} {noun} from {path}"))
        return True

    def exit_status(self) -> int:
        """The status for a normal end: 1 when ``strict`` and some entry failed, else 0."""
        return 1 if self.strict and self.failed else 0


#: An entry that asks for documentation: ``name?`` or ``type.method?``.
#: A diagnostic header whose message ends with the position the header starts with
#: (``<repl#1>:1:9: error[E102]: Unterminated string at 1:9``: Harn's message text).
_REPEATED_AT = re.compile(r"^(\S*?:(\d+):(\d+): .*?) at \2:\3$", re.MULTILINE)


def once_located(text: str) -> str:
    """Diagnostic ``text`` with a message's trailing `` at L:C`` dropped where its header
    already names that position, so the REPL says where once."""
    return _REPEATED_AT.sub(r"\1", text)


_DOC_QUERY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?\?\Z")


def _format_ms(ms: float) -> str:
    if ms < 1:
        return f"{ms * 1000:.0f} µs"
    if ms < 1000:
        return f"{ms:.1f} ms"
    return f"{ms / 1000:.2f} s"


def _unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s
