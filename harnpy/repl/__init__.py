"""``harnpy repl``: the interactive Harn REPL (a harnpy extension of lifecycle.md 9.2).

One live :class:`~harnpy.runtime.session.Session` runs every entry once, incrementally;
an expression's value is echoed with the display rules (``println`` format) and bound to
the next of ``_1``, ``_2``, ... (lifecycle.md 9.2); ``nil`` is not echoed. The terminal
front end opens with ``Harn REPL v<version>`` and says ``Goodbye!`` on Ctrl-D. Errors are
rendered like ``harnpy run`` renders them and never end the session.

Two front ends share :class:`ReplCore` (entry splitting, ``:commands``, echo, errors):

* **terminal** (stdin and stdout are TTYs): a prompt-toolkit prompt with Harn syntax
  highlighting (:class:`harnpy.highlight.HarnLexer`), multi-line entry that stays open
  while brackets, braces, a triple-quoted string or a block comment are open or the line
  ends with an operator, auto-indent, Tab completion (keywords, builtins, names in scope,
  ``std/`` modules, methods after ``.``, commands and file names), history in
  ``~/.harnpy/repl_history``; Ctrl-C discards the entry or interrupts a running one,
  Ctrl-D on an empty line exits with status 0, Alt-Enter submits an entry as it is;
* **piped** (anything else): entries are read from stdin without prompts, colours or
  escape codes; results go to stdout, diagnostics to stderr; the exit status is 0 at end
  of input, or 1 when ``--strict`` is given and some entry failed. This path never
  imports prompt-toolkit.

Commands: ``:help``, ``:quit``, ``:reset``, ``:load FILE``, ``:type EXPR``, ``:doc NAME``,
``:vars``, ``:save FILE``, ``:restore FILE`` (see :data:`HELP`).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from harnpy.runtime.session import EvalResult, Session, doc_comment

HISTORY_LIMIT = 1000
INDENT = "    "
PROMPT = "harn> "
CONTINUATION = "  ... "

HELP = """\
Enter Harn statements or expressions; an expression's value is printed (nil is not)
and bound to the next of _1, _2, ... so later entries can use it.
An entry continues over several lines while brackets or a triple-quoted string are open
or a line ends with an operator; an empty line ends it. Alt-Enter submits as it is.

Commands:
  :help             this text
  :quit             leave the REPL (also :q, :exit, or Ctrl-D on an empty line)
  :reset            forget every binding and start a fresh session
  :load FILE        run a .harn file in this session (its definitions stay)
  :type EXPR        evaluate EXPR and show the type of its value
  :doc NAME         documentation of a builtin (NAME or type.method) or of your fn
  :vars             list the bindings of this session
  :save FILE        write the whole session to a snapshot file
  :restore FILE     replace this session with one saved by :save (any process)

Keys: Tab completes, Ctrl-C discards the entry or interrupts a running one,
Ctrl-D on an empty line exits. History is kept in ~/.harnpy/repl_history."""

# ----------------------------------------------------------------- scanning


#: Tokens that cannot end an expression: a line ending with one continues (spec 1.9).
_CONTINUING = tuple(
    "|> || && == != <= >= ?? ** -> ?. += -= *= /= %= + - * / % = < > ! . , : |".split()
)
_CONTINUING_WORDS = frozenset({"in", "to", "not", "else", "catch", "finally", "throw"})

_CLOSERS = {")": "(", "]": "[", "}": "{"}


@dataclass
class Scan:
    """What a quick scan of (possibly partial) Harn text found.

    ``brackets`` is the stack of open ``(``/``[``/``{`` outside strings and comments;
    ``open_string`` is ``'\"\"\"'`` inside an unterminated triple-quoted string and
    ``"${"`` inside an unclosed interpolation (plain and raw strings otherwise end at the
    line end, spec 1.7); ``open_comment`` counts
    unclosed nested
    block comments; ``line_join`` is True when the text ends with a backslash;
    ``mismatch`` when a closer did not match (the parser will report it); ``last`` is the
    last token-ish text of the last line (operators, words, punctuation).
    """

    brackets: list[str] = field(default_factory=list)
    open_string: str | None = None
    open_comment: int = 0
    line_join: bool = False
    mismatch: bool = False
    last: str = ""

    @property
    def depth(self) -> int:
        """Number of open brackets."""
        return len(self.brackets)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?[A-Za-z]*")


def scan(text: str) -> Scan:
    """Scan ``text`` for open brackets, strings and comments (lexical rules of spec 1.2,
    1.7): strings with ``\\`` escapes and ``${...}`` interpolation (brace counting), raw
    strings, triple-quoted strings, ``//`` and nested ``/* */`` comments."""
    st = Scan()
    i = 0
    n = len(text)
    last = ""
    while i < n:
        c = text[i]
        if c == "\n":
            last = ""
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth = 0
            while i < n:
                if text.startswith("/*", i):
                    depth += 1
                    i += 2
                elif text.startswith("*/", i):
                    depth -= 1
                    i += 2
                    if depth == 0:
                        break
                else:
                    i += 1
            if depth > 0:
                st.open_comment = depth
                st.last = ""
                return st
            continue
        if text.startswith('r"', i) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            j = i + 2
            while j < n and text[j] not in '"\n':
                j += 1
            i = j + 1 if j < n and text[j] == '"' else j
            last = "str"
            continue
        if text.startswith('"""', i):
            end = _scan_string(text, i + 3, triple=True)
            if end < 0:
                st.open_string = '"""'
                st.last = ""
                return st
            i = end
            last = "str"
            continue
        if c == '"':
            end = _scan_string(text, i + 1, triple=False)
            if end == -2:
                st.open_string = "${"
                st.last = ""
                return st
            i = n if end < 0 else end
            last = "str"
            continue
        if c == "\\" and (i + 1 == n or text[i + 1] == "\n"):
            if i + 1 == n:
                st.line_join = True
            i += 2
            continue
        if c in "([{":
            st.brackets.append(c)
            last = c
            i += 1
            continue
        if c in ")]}":
            if st.brackets and st.brackets[-1] == _CLOSERS[c]:
                st.brackets.pop()
            else:
                st.mismatch = True
            last = c
            i += 1
            continue
        m = _WORD.match(text, i)
        if m:
            last = m.group()
            i = m.end()
            continue
        for op in _CONTINUING:
            if text.startswith(op, i):
                last = op
                i += len(op)
                break
        else:
            last = c
            i += 1
    st.last = last
    return st


def _scan_string(text: str, i: int, triple: bool) -> int:
    """Index after the closing quote of a string whose body starts at ``i``; for a plain
    string ending at a line end, the index of that newline (the parser reports it); -1
    when the text ends inside the string, -2 when it ends inside a ``${...}``."""
    n = len(text)
    while i < n:
        c = text[i]
        if triple:
            if text.startswith('"""', i):
                return i + 3
        else:
            if c == '"':
                return i + 1
            if c == "\n":
                return i
            if c == "\\":
                i += 2
                continue
        if text.startswith("${", i):
            depth = 0
            while i < n:
                if text[i] == "{":
                    depth += 1
                elif text[i] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            if i >= n:
                return -2
        i += 1
    return -1


def _ends_with_doc_comment(text: str) -> bool:
    """Whether ``text`` ends with a doc comment on lines of its own: a ``///`` line or a
    closed ``/** ... */`` block (``////``, ``/***`` and ``/**/`` are not doc comments)."""
    stripped = text.rstrip()
    last = stripped.rsplit("\n", 1)[-1].lstrip()
    if last.startswith("///"):
        return not last.startswith("////")
    if not stripped.endswith("*/"):
        return False
    start = stripped.rfind("/**")
    if start < 0 or stripped.startswith(("/***", "/**/"), start):
        return False
    line_start = stripped.rfind("\n", 0, start) + 1
    return not stripped[line_start:start].strip()


def is_complete(text: str) -> bool:
    """Whether ``text`` is a whole entry (Enter submits it) or needs more lines.

    More lines are needed while a bracket, a triple-quoted string or a block comment is
    open, after a trailing backslash or continuing operator (``+``, ``=``, ``|>``, ``,``,
    ``.``...), after a doc comment (it documents the declaration typed next), or while the
    parser only complains about the end of input (``fn f()``) — an empty last line then
    submits anyway, so the error can be seen.
    """
    if text.lstrip().startswith(":"):
        return True
    st = scan(text)
    if st.open_string or st.open_comment or st.line_join:
        return False
    if st.brackets and not st.mismatch:
        return False
    if st.last in _CONTINUING or st.last in _CONTINUING_WORDS:
        return False
    last_line = text.rsplit("\n", 1)[-1]
    if "\n" in text and not last_line.strip():
        return True
    if _ends_with_doc_comment(text):
        return False  # a doc comment belongs to the declaration typed next (spec 1.2)
    from harnpy.syntax import HarnSyntaxError, parse

    try:
        parse(text, "<repl>")
    except HarnSyntaxError as e:
        return not any(d.code == "E105" for d in e.diagnostics)
    return True


def indent_for(text_before_cursor: str) -> str:
    """Indentation for a new line at the cursor: four spaces per open bracket."""
    return INDENT * scan(text_before_cursor).depth


# ----------------------------------------------------------------- describing


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


def _clean_doc(doc: str) -> str:
    return inspect.cleandoc(doc).replace("``", "`")


def doc_text(session: Session, name: str) -> str | None:
    """``:doc NAME``: a builtin's docstring (``NAME`` or ``type.method``), or the signature
    and ``///`` or ``/** */`` doc comment of a function, struct or enum defined in the
    session or imported. None when nothing is known by that name."""
    from harnpy.runtime.values import Builtin, Closure
    from harnpy.stdlib.registry import BUILTINS, METHODS

    name = name.strip()
    if "." in name:
        tname, _, mname = name.partition(".")
        b = METHODS.get(tname, {}).get(mname)
        if b is not None:
            return f"{tname}.{mname}  (method)\n" + _indent(_clean_doc(b.doc) or "(no docstring)")
    value = session.globals.get(name)
    if type(value) is Closure or name in session.enums or value is not None:
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
    b = BUILTINS.get(name)
    if b is None and type(value) is Builtin:
        b = value
    if b is not None:
        return f"{name}  (builtin)\n" + _indent(_clean_doc(b.doc) or "(no docstring)")
    hits = [(t, table[name]) for t, table in METHODS.items() if name in table]
    if hits:
        seen: set[int] = set()
        parts = []
        for t, m in hits:
            if id(m) in seen:
                continue
            seen.add(id(m))
            parts.append(f"{t}.{name}  (method)\n" + _indent(_clean_doc(m.doc) or "(no docstring)"))
        return "\n".join(parts)
    return None


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


# ----------------------------------------------------------------- completion


def stdlib_modules() -> list[str]:
    """Importable ``std/...`` module paths (internal ``_`` files excluded)."""
    from harnpy.runtime.modules import stdlib_root

    root = stdlib_root() / "std"
    out: list[str] = []
    if not root.is_dir():
        return out
    for p in sorted(root.rglob("*.harn")):
        rel = p.relative_to(root)
        if any(part.startswith("_") for part in rel.parts):
            continue
        if rel.name == "index.harn":
            mod = "/".join(rel.parts[:-1])
        else:
            mod = "/".join((*rel.parts[:-1], rel.stem))
        if mod:
            out.append("std/" + mod)
    return out


@dataclass(frozen=True)
class Candidate:
    """One completion: the replacement ``text``, ``start`` (negative offset from the
    cursor where the replaced word begins) and a short ``meta`` label."""

    text: str
    start: int
    meta: str = ""


_COMMANDS = {
    ":help": "show help",
    ":quit": "leave the REPL",
    ":reset": "fresh session",
    ":load": "run a file",
    ":type": "type of a value",
    ":doc": "documentation",
    ":vars": "list bindings",
    ":save": "save the session",
    ":restore": "restore a session",
}
_FILE_COMMANDS = (":load", ":save", ":restore")


def complete(session: Session, text_before_cursor: str) -> list[Candidate]:
    """Completions at the cursor: commands and file names after ``:load``/``:save``/
    ``:restore``; ``std/`` module paths inside an import string; methods (and dict keys,
    struct fields, enum variants) after ``.``; otherwise keywords, builtins and the names
    in scope."""
    from harnpy.highlight import KEYWORDS

    text = text_before_cursor
    stripped = text.lstrip()
    if stripped.startswith(":") and "\n" not in text:
        cmd, sep, arg = stripped.partition(" ")
        if not sep:
            return [Candidate(c, -len(cmd), d) for c, d in _COMMANDS.items() if c.startswith(cmd)]
        if cmd in _FILE_COMMANDS:
            return _complete_path(arg.lstrip())
        if cmd == ":doc":
            m = re.search(r"[A-Za-z_][A-Za-z0-9_.]*$", arg)
            word = m.group() if m else ""
            return _complete_names(session, word, include_keywords=False)
        text = arg
    m = re.search(r'"(std/[A-Za-z0-9_/]*)$', text)
    if m:
        partial = m.group(1)
        return [
            Candidate(p, -len(partial), "module") for p in stdlib_modules() if p.startswith(partial)
        ]
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*|\"|\]|\))\s*(\?\.|\.)([A-Za-z_][A-Za-z0-9_]*)?$", text)
    if m and not re.search(r"\d\.$", text):
        return _complete_member(session, m.group(1), m.group(3) or "")
    m = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", text)
    word = m.group() if m else ""
    if not word:
        return []
    out = [Candidate(k, -len(word), "keyword") for k in KEYWORDS if k.startswith(word)]
    names = _complete_names(session, word, include_keywords=False)
    # names declared earlier in the entry being typed (not yet known to the session)
    known = {c.text for c in names}
    head = text[: len(text) - len(word)]
    local: dict[str, str] = {}
    for m in _LOCAL_DECL.finditer(head):
        kind, name = m.group(1), m.group(2)
        if name.startswith(word) and name not in known:
            local.setdefault(name, kind)
    out += [Candidate(n, -len(word), k) for n, k in sorted(local.items())]
    return out + names


_LOCAL_DECL = re.compile(r"\b(let|var|fn|struct|enum|for)\s+([A-Za-z_][A-Za-z0-9_]*)")


def _complete_names(session: Session, word: str, include_keywords: bool) -> list[Candidate]:
    from harnpy.stdlib.registry import BUILTINS, METHODS

    seen: set[str] = set()
    out: list[Candidate] = []
    if "." in word:
        tname, _, mname = word.partition(".")
        for m in sorted(METHODS.get(tname, {})):
            if m.startswith(mname):
                out.append(Candidate(f"{tname}.{m}", -len(word), "method"))
        for name in sorted(BUILTINS):
            if name.startswith(word):
                out.append(Candidate(name, -len(word), "builtin"))
        return out
    for name, kind in sorted(session.names().items()):
        if name.startswith(word) and name not in seen:
            seen.add(name)
            out.append(Candidate(name, -len(word), kind))
    for name in sorted(BUILTINS):
        if name.startswith(word) and name not in seen and not name.startswith("_"):
            if "." in name:
                name = name.split(".", 1)[0]  # a builtin namespace (``stream``)
                if name in seen:
                    continue
            seen.add(name)
            out.append(Candidate(name, -len(word), "builtin"))
    for name in sorted(session.runtime.constants):
        if name.startswith(word) and name not in seen:
            seen.add(name)
            out.append(Candidate(name, -len(word), "constant"))
    return out


def _complete_member(session: Session, receiver: str, partial: str) -> list[Candidate]:
    from harnpy.runtime.values import StructValue, type_name
    from harnpy.stdlib.registry import BUILTINS, METHODS

    members: dict[str, str] = {}
    prefix = receiver + "."
    dotted = [n[len(prefix) :] for n in BUILTINS if n.startswith(prefix)]
    if dotted and receiver not in session.globals:  # builtin namespaces (``stream.map``)
        return [
            Candidate(n, -len(partial), "builtin") for n in sorted(dotted) if n.startswith(partial)
        ]
    if receiver == '"':
        tables = ["string"]
    elif receiver == "]":
        tables = ["list"]
    elif receiver == ")":
        tables = list(METHODS)
    elif receiver in session.enums:
        for v in session.enums[receiver]:
            members[v] = "variant"
        tables = []
    elif receiver in session.globals:
        value = session.globals[receiver]
        t = type_name(value)
        tables = [t] if t in METHODS else []
        if type(value) is dict:
            for k in value:
                members.setdefault(k, "key")
        if type(value) is StructValue:
            for k in value.fields:
                members.setdefault(k, "field")
            for k in session.runtime.impls.get(value.name, {}):
                members.setdefault(k, "method")
    else:
        tables = list(METHODS)
    for t in tables:
        for name in METHODS[t]:
            members.setdefault(name, f"{t} method" if len(tables) > 1 else "method")
    return [
        Candidate(name, -len(partial), meta)
        for name, meta in sorted(members.items())
        if name.startswith(partial)
    ]


def _complete_path(partial: str) -> list[Candidate]:
    partial_exp = os.path.expanduser(partial)
    directory, _, prefix = partial_exp.rpartition("/")
    base = directory if partial_exp.startswith("/") or directory else "."
    if partial_exp.startswith("/") and not directory:
        base = "/"
    try:
        names = sorted(os.listdir(base or "/"))
    except OSError:
        return []
    out = []
    for name in names:
        if not name.startswith(prefix) or (name.startswith(".") and not prefix.startswith(".")):
            continue
        full = os.path.join(base, name)
        suffix = "/" if os.path.isdir(full) else ""
        if suffix or name.endswith((".harn", ".json", ".snap")) or prefix:
            out.append(Candidate(name + suffix, -len(prefix), "dir" if suffix else "file"))
    return out


# ----------------------------------------------------------------- history


class HistoryFile:
    """The REPL history file (prompt-toolkit's ``FileHistory`` format: ``# time`` lines,
    then the entry's lines each prefixed with ``+``).

    Problems never stop the REPL: a file that cannot be read or decoded, or a folder that
    cannot be written, produce one warning through ``warn`` and the history then lives
    in memory only. At most :data:`HISTORY_LIMIT` entries are loaded.
    """

    def __init__(self, path: str | None, warn: Callable[[str], None]) -> None:
        self.path = path
        self.warn = warn
        self.writable = path is not None

    def load(self) -> list[str]:
        """Entries, oldest first (empty when there is no usable file)."""
        if self.path is None or not os.path.exists(self.path):
            return []
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            self.warn(
                f"cannot read the history file {self.path} ({_reason(e)}); history will not be saved"
            )
            self.writable = False
            return []
        entries: list[str] = []
        lines: list[str] = []
        bad = 0
        for line in text.split("\n"):
            if line.startswith("+"):
                lines.append(line[1:])
                continue
            if lines:
                entries.append("\n".join(lines))
                lines = []
            if line and not line.startswith("#"):
                bad += 1
        if lines:
            entries.append("\n".join(lines))
        if bad:
            self.warn(
                f"the history file {self.path} looks damaged ({bad} unreadable lines skipped)"
            )
        return entries[-HISTORY_LIMIT:]

    def store(self, entry: str) -> None:
        """Append one entry (creating the folder); a failure warns once."""
        if not self.writable or self.path is None:
            return
        import datetime

        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(f"\n# {datetime.datetime.now()}\n")
                for line in entry.split("\n"):
                    fh.write(f"+{line}\n")
        except OSError as e:
            self.writable = False
            self.warn(
                f"cannot write the history file {self.path} ({_reason(e)}); history is kept in memory only"
            )


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError):
        return e.strerror or type(e).__name__
    if isinstance(e, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(e)


def default_history_path() -> str | None:
    """``~/.harnpy/repl_history`` (``$HARNPY_HISTORY`` overrides; None when no home)."""
    env = os.environ.get("HARNPY_HISTORY")
    if env:
        return env
    home = os.path.expanduser("~")
    if not home or home == "~":
        return None
    return os.path.join(home, ".harnpy", "repl_history")


# ----------------------------------------------------------------- the core


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
    ) -> None:
        self._out = out
        self._err = err
        self._flush = flush or (lambda: None)
        self.colors = _Colors(color)
        self.failed = False
        #: ``--strict``: a failed entry makes the final exit status 1.
        self.strict = False
        self.last_char = "\n"
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
        return self.run_entry(text)

    def run_entry(self, text: str, *, show: Callable[[Any], str] | None = None) -> bool:
        """Evaluate one Harn entry in the session and echo its value: ``show(value)`` when given,
        else the display form unless the value is nil. True on success; False after reporting an
        error, an interrupt or an internal error (:meth:`_evaluate`).

        Raises:
            ReplExit: the program called ``exit``.
        """
        from harnpy.runtime.display import display

        result = self._evaluate(lambda: self.session.eval(text))
        if result is None:
            return False
        if show is not None:
            self.end_line()
            self.say(show(result.value))
        elif result.show:
            self.session.bind_result(result.value)
            self.end_line()
            self.say(self.colors.value(display(result.value)))
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
            self.error(self.session.render_error(e))
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
        from harnpy.runtime.display import display

        path = _unquote(arg)
        if not self._need(path, "a file name", ":load"):
            return False
        full = os.path.abspath(os.path.expanduser(path))
        try:
            with open(full, encoding="utf-8") as fh:
                source = fh.read()
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
            self.say(display(result.value))
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
            from harnpy.stdlib.registry import BUILTINS

            own = set(self.session.names())
            hint = did_you_mean(arg, set(BUILTINS) | own, own)
            extra = f" (did you mean `{hint}`?)" if hint else ""
            self.error(f"no builtin, method or definition named {arg}{extra}")
            return False
        self.say(text)
        return True

    def cmd_vars(self, arg: str) -> bool:
        """``:vars``: list the session's bindings as ``kind name: type = value`` (values cut to
        70 characters); functions that came from imports are only counted. True."""
        from harnpy.runtime.display import display
        from harnpy.runtime.values import Closure

        entries = {id(e) for e in self.session.entries}
        rows = []
        imported = 0
        for name in sorted(self.session.globals):
            value = self.session.globals[name]
            if type(value) is Closure and id(value.code.module) not in entries:
                imported += 1
                continue
            kind = self.session.global_kinds.get(name, "let")
            shown = display(value).replace("\n", "\\n")
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


def _unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


# ----------------------------------------------------------------- piped mode


def read_entries(lines: Iterable[str]) -> Iterator[str]:
    """Split input lines into entries with the terminal's rules (:func:`is_complete`);
    blank lines between entries are skipped and the rest is submitted at end of input."""
    buf: list[str] = []
    for raw in lines:
        line = raw[:-1] if raw.endswith("\n") else raw
        if line.endswith("\r"):
            line = line[:-1]
        if not buf and not line.strip():
            continue
        buf.append(line)
        text = "\n".join(buf)
        if is_complete(text):
            yield text.rstrip("\n")
            buf = []
    if buf:
        text = "\n".join(buf).strip("\n")
        if text.strip():
            yield text


def _lines(stream: TextIO) -> Iterator[str]:
    # readline (not iteration): builtins such as read_line() share the stream.
    while True:
        line = stream.readline()
        if not line:
            return
        yield line


def run_piped(core: ReplCore, stdin: TextIO) -> int:
    """The non-terminal REPL: entries from ``stdin``, no prompts or escape codes."""
    try:
        for entry in read_entries(_lines(stdin)):
            try:
                core.handle(entry)
            except KeyboardInterrupt:
                core.error("interrupted")
    except ReplExit as e:
        core.end_line()
        return e.code
    core.end_line()
    return core.exit_status()


# ----------------------------------------------------------------- terminal mode


def run_interactive(
    core: ReplCore,
    *,
    input: Any = None,
    output: Any = None,
    history_path: str | None = None,
    banner: bool = True,
) -> int:
    """The prompt-toolkit REPL (``input``/``output`` let tests drive it with a pipe input
    and a dummy output)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.filters import completion_is_selected
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.history import History
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.lexers import PygmentsLexer
    from prompt_toolkit.output import ColorDepth
    from prompt_toolkit.styles import Style

    from harnpy.highlight import HarnLexer

    warnings: list[str] = []
    hist_file = HistoryFile(history_path, warnings.append)

    class _History(History):
        def __init__(self) -> None:
            super().__init__()
            # Loaded now (not in prompt-toolkit's background task): warnings about the
            # file come before the first prompt, and Up works from the first key press.
            self._loaded_strings = list(reversed(hist_file.load()))
            self._loaded = True

        def load_history_strings(self) -> Iterable[str]:
            return list(self._loaded_strings)

        def store_string(self, string: str) -> None:
            hist_file.store(string)

    class _Completer(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterator[Any]:
            for c in complete(core.session, document.text_before_cursor):
                yield Completion(c.text, start_position=c.start, display_meta=c.meta)

    kb = KeyBindings()
    has_selected = completion_is_selected

    @kb.add("enter", filter=has_selected)
    def _accept_completion(event: Any) -> None:
        buf = event.current_buffer
        buf.apply_completion(buf.complete_state.current_completion)

    @kb.add("enter", filter=~has_selected)
    def _enter(event: Any) -> None:
        buf = event.current_buffer
        text = buf.text
        if not text.strip() or is_complete(text):
            buf.validate_and_handle()
        else:
            buf.insert_text("\n" + indent_for(buf.document.text_before_cursor))

    def _closer(ch: str) -> Callable[[Any], None]:
        def handler(event: Any) -> None:
            buf = event.current_buffer
            before = buf.document.current_line_before_cursor
            if before and not before.strip():
                depth = scan(buf.document.text_before_cursor).depth
                buf.delete_before_cursor(len(before))
                buf.insert_text(INDENT * max(0, depth - 1))
            buf.insert_text(ch)

        return handler

    for ch in "})]":
        kb.add(ch)(_closer(ch))

    @kb.add("tab")
    def _tab(event: Any) -> None:
        buf = event.current_buffer
        before = buf.document.current_line_before_cursor
        if not before.strip():
            buf.insert_text(INDENT)
            return
        if buf.complete_state:
            buf.complete_next()
            return
        # Like readline: a single candidate is inserted at once, several insert their
        # common prefix and open the menu.
        cands = complete(core.session, buf.document.text_before_cursor)
        if not cands:
            return
        start = cands[0].start
        common = os.path.commonprefix([c.text for c in cands])
        if all(c.start == start for c in cands) and len(common) > -start:
            buf.delete_before_cursor(-start)
            buf.insert_text(common)
        if len(cands) > 1:
            buf.start_completion(select_first=False)

    style = Style.from_dict(
        {
            "prompt": "ansigreen bold",
            "continuation": "ansibrightblack",
        }
    )

    def continuation(width: int, line_number: int, is_soft_wrap: int) -> Any:
        return FormattedText([("class:continuation", CONTINUATION.rjust(width))])

    color_depth = ColorDepth.MONOCHROME if os.environ.get("NO_COLOR") else None
    prompt: PromptSession[str] = PromptSession(
        message=FormattedText([("class:prompt", PROMPT)]),
        multiline=True,
        prompt_continuation=continuation,
        lexer=PygmentsLexer(HarnLexer),
        completer=_Completer(),
        complete_while_typing=False,
        history=_History(),
        auto_suggest=AutoSuggestFromHistory(),
        key_bindings=kb,
        style=style,
        include_default_pygments_style=True,
        color_depth=color_depth,
        input=input,
        output=output,
        enable_open_in_editor=True,
    )
    if banner:
        from harnpy import __version__

        core.say(f"Harn REPL v{__version__} (harnpy)")
        core.say(
            "Enter expressions or statements; :help lists the commands. Ctrl-C discards an "
            "entry, Ctrl-D exits."
        )
    while True:
        core.end_line()
        for w in warnings:
            core._err(f"warning: {w}\n")
        warnings.clear()
        try:
            text = prompt.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:
            if banner:
                core.say("Goodbye!")
            break
        core.last_char = "\n"
        try:
            with _quiet_ctrl_c(input):
                core.handle(text)
        except KeyboardInterrupt:
            core.error("interrupted")
        except ReplExit as e:
            return e.code
    core.end_line()
    return core.exit_status()


@contextlib.contextmanager
def _quiet_ctrl_c(input: Any) -> Iterator[None]:
    """While an entry runs on a real terminal, keep the terminal from echoing ``^C`` (the
    program's ``finally`` output and the ``interrupted`` notice then start their lines)."""
    try:
        import termios
    except ImportError:  # not a POSIX terminal
        yield
        return
    saved = None
    fd = -1
    if input is None:
        try:
            if sys.stdin.isatty():
                fd = sys.stdin.fileno()
                saved = termios.tcgetattr(fd)
                quiet = list(saved)
                quiet[3] &= ~termios.ECHOCTL
                termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except (AttributeError, ValueError, OSError, termios.error):
            saved = None
    try:
        yield
    finally:
        if saved is not None:
            try:
                termios.tcsetattr(fd, termios.TCSANOW, saved)
            except (OSError, termios.error):
                pass


# ----------------------------------------------------------------- entry point


def run_repl(
    strict: bool = False,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    interactive: bool | None = None,
) -> int:
    """``harnpy repl``: the terminal REPL when stdin and stdout are terminals, the piped
    REPL otherwise. Returns the exit status (0; 1 with ``strict`` after a failure; the
    program's ``exit`` code)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if interactive is None:
        interactive = _isatty(stdin) and _isatty(stdout)

    def flush() -> None:
        try:
            stdout.flush()
        except Exception:  # noqa: BLE001
            pass

    def write_out(text: str) -> None:
        stdout.write(text)
        if interactive:
            flush()

    def write_err(text: str) -> None:
        stderr.write(text)
        try:
            stderr.flush()
        except Exception:  # noqa: BLE001
            pass

    color = bool(interactive) and not os.environ.get("NO_COLOR")
    core = ReplCore(write_out, write_err, color=color, flush=flush)
    core.strict = strict
    core.session.stdout_isatty = bool(interactive)
    if interactive:
        return run_interactive(core, history_path=default_history_path())
    return run_piped(core, stdin)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


__all__ = [
    "run_repl",
    "run_piped",
    "run_interactive",
    "ReplCore",
    "ReplExit",
    "HistoryFile",
    "is_complete",
    "scan",
    "indent_for",
    "complete",
    "describe_type",
    "doc_text",
    "read_entries",
    "stdlib_modules",
]
