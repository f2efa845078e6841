"""Tab completion of the REPL: keywords, builtins, names in scope, ``std/`` module paths,
methods after ``.``, ``:commands`` and file names."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from harnpy.runtime.session import Session


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
    ":time": "time an expression",
    ":edit": "edit in $EDITOR",
    ":vars": "list bindings",
    ":save": "save the session",
    ":restore": "restore a session",
}
_FILE_COMMANDS = (":load", ":save", ":restore", ":edit")


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
