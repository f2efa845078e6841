"""The user reference generated from the one builtin registry (issue 14 §4).

Three readers share this text:

* ``harnpy doc NAME`` and the REPL's ``:doc NAME`` / ``NAME?`` print :func:`builtin_doc`
  (a builtin, a method ``type.method`` or a bare method name, a ``std/`` module function);
* the docs site (MkDocs, ``dev/mkdocs_hooks.py``) renders :func:`reference_pages`: every
  registered builtin (``BUILTINS``), every method (``METHODS``) and every public function
  of the bundled ``std/`` modules, with its signature and its docstring or doc comment.

A signature comes from the Python function behind the builtin (the ``thread`` parameter
left out; for a method, the receiver too): ``name(a, b?, ...rest)``, ``?`` marking an
optional argument. Docstrings are written in reStructuredText for the contributors;
:func:`clean_doc` turns them into Markdown-ish text (````x```` -> ```x```, Sphinx roles
such as ``:func:`x``` -> ```x```).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any

_ROLE = re.compile(r":(?:mod|class|func|meth|data|attr|exc|obj|py:\w+):`~?([^`]+)`")


def clean_doc(doc: str) -> str:
    """A docstring as user text: dedented, double backquotes made single, Sphinx roles
    (``:func:`harnpy.x.y```) reduced to the last part of the name in backquotes."""
    text = inspect.cleandoc(doc or "")
    text = _ROLE.sub(lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", text)
    return text.replace("``", "`")


def signature(b: Any, *, method: bool = False) -> str:
    """``name(a, b?, ...rest)`` for the builtin ``b`` (``method``: the receiver is left out).

    The docstring's own call form wins when its text starts with one (``name(prompt,
    system?, options?)``, or ``xs.name(f)`` for a method): the Python parameters all default
    to None (the registry's calling convention), so they cannot tell an optional argument
    from a required one. Otherwise the parameters are listed by name (``...rest`` for a
    variadic one); ``name(...)`` when the function cannot be inspected."""
    name = b.name.rsplit(".", 1)[-1] if method else b.name
    own = _doc_signature(name, b.doc or "")
    if own is not None:
        return own
    try:
        params = list(inspect.signature(b.fn).parameters.values())
    except (TypeError, ValueError):
        return f"{name}(...)"
    if getattr(b, "thread_arg", True) and params:
        params = params[1:]
    if method and params:
        params = params[1:]
    out = []
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            out.append(f"...{p.name}")
        elif p.kind is not inspect.Parameter.VAR_KEYWORD:
            out.append(p.name)
    return f"{name}({', '.join(out)})"


def _doc_signature(name: str, doc: str) -> str | None:
    """The call form a docstring opens with (````name(...)````, or ````recv.name(...)````
    for a method: then ``name(...)``), or None."""
    m = re.match(r"\s*``(?:[A-Za-z_][A-Za-z0-9_]*\.)?(" + re.escape(name) + r"\([^`]*\))``", doc)
    return m.group(1) if m else None


def _indent(text: str) -> str:
    return "\n".join(("  " + line) if line else "" for line in text.split("\n"))


@dataclass(frozen=True)
class StdFunction:
    """A public function of a bundled ``std/`` module: ``module`` (``std/agent/loop``),
    ``name``, ``signature`` (``fn name(a, b = …)``) and its doc comment (may be "")."""

    module: str
    name: str
    signature: str
    doc: str


def std_functions() -> list[StdFunction]:
    """Every ``pub fn`` of the bundled ``std/`` modules (internal modules, whose path has a
    part starting with ``_``, and functions named ``_...`` are left out), sorted by module
    then name. A module that does not parse is skipped (its own tests report it)."""
    from harnpy.runtime.modules import stdlib_root
    from harnpy.runtime.session import doc_comment
    from harnpy.syntax import HarnSyntaxError, parse
    from harnpy.syntax import ast as A

    root = stdlib_root() / "std"
    out: list[StdFunction] = []
    if not root.is_dir():
        return out
    for path in sorted(root.rglob("*.harn")):
        rel = path.relative_to(root)
        if any(part.startswith("_") for part in rel.parts):
            continue
        parts = rel.parts[:-1] if rel.name == "index.harn" else (*rel.parts[:-1], rel.stem)
        module = "std/" + "/".join(parts)
        source = path.read_text(encoding="utf-8")
        try:
            tree = parse(source, module)
        except HarnSyntaxError:
            continue
        for node in tree.body:
            if type(node) is not A.FnDecl or not node.is_pub:
                continue
            if node.name.startswith("_"):
                continue
            params = [
                ("..." if p.rest else "") + p.name + (" = …" if p.default else "")
                for p in node.params
            ]
            sig = f"fn {node.name}({', '.join(params)})"
            out.append(StdFunction(module, node.name, sig, doc_comment(source, node) or ""))
    return sorted(out, key=lambda f: (f.module, f.name))


def builtin_doc(name: str) -> str | None:
    """The ``harnpy doc NAME`` / ``:doc NAME`` text of a builtin, a method (``type.method``,
    or a bare name: every type's method of that name) or a ``std/`` function (``name`` or
    ``std/module.name``); None when nothing of that name is registered or bundled."""
    from harnpy.stdlib import load_all
    from harnpy.stdlib.registry import BUILTINS, METHODS

    load_all()
    name = name.strip()
    if "." in name and not name.startswith("std/"):
        tname, _, mname = name.partition(".")
        m = METHODS.get(tname, {}).get(mname)
        if m is not None:
            return _entry(f"{tname}.{signature(m, method=True)}", "method", m.doc)
    b = BUILTINS.get(name)
    if b is not None:
        return _entry(signature(b), "builtin", b.doc)
    hits = [(t, table[name]) for t, table in METHODS.items() if name in table]
    if hits:
        seen: set[int] = set()
        parts = []
        for t, m in hits:
            if id(m) in seen:
                continue
            seen.add(id(m))
            parts.append(_entry(f"{t}.{signature(m, method=True)}", "method", m.doc))
        return "\n".join(parts)
    module, _, fname = name.rpartition(".") if name.startswith("std/") else ("", "", name)
    found = [f for f in std_functions() if f.name == fname and (not module or f.module == module)]
    if found:
        return "\n".join(
            _entry(f.signature, f'import {{ {f.name} }} from "{f.module}"', f.doc) for f in found
        )
    return None


def _entry(head: str, kind: str, doc: str) -> str:
    return f"{head}  ({kind})\n" + _indent(clean_doc(doc) or "(no docstring)")


def known_names() -> set[str]:
    """Every name :func:`builtin_doc` answers for (did-you-mean candidates)."""
    from harnpy.stdlib import load_all
    from harnpy.stdlib.registry import BUILTINS, METHODS

    load_all()
    names = set(BUILTINS)
    for t, table in METHODS.items():
        names.update(table)
        names.update(f"{t}.{m}" for m in table)
    names.update(f.name for f in std_functions())
    return names


# ------------------------------------------------------------------ the docs site


def _md_doc(doc: str) -> str:
    text = clean_doc(doc)
    return text if text else "*(no docstring)*"


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-")


def builtins_page() -> str:
    """The Markdown of ``reference/builtins.md``: every registered builtin, user-facing
    ones first, then the internal ``__`` ones the bundled modules run on."""
    from harnpy.stdlib import load_all
    from harnpy.stdlib.registry import BUILTINS

    load_all()
    names = sorted(BUILTINS)
    public = [n for n in names if not n.startswith("_")]
    internal = [n for n in names if n.startswith("_")]
    lines = [
        "# Builtins",
        "",
        "Generated from harnpy's builtin registry: every function a program can call "
        f"without an import ({len(public)} builtins, plus {len(internal)} internal ones "
        "listed at the end). `harnpy doc NAME` and the REPL's `:doc NAME` print the same "
        "text. In a signature, `x?` is an optional argument and `...xs` takes the rest.",
        "",
    ]
    for section, group in (("", public), ("Internal builtins", internal)):
        if section:
            lines += [
                f"## {section}",
                "",
                "Names starting with `_` are the primitives the bundled `std/` modules "
                "(the agent loop, workers) are written on, and a few harnpy extensions "
                "such as `__snapshot_exit`. Programs rarely need them.",
                "",
            ]
        for n in group:
            b = BUILTINS[n]
            lines += [f"### `{n}`", "", f"`{signature(b)}`", "", _md_doc(b.doc), ""]
    return "\n".join(lines)


def methods_page() -> str:
    """The Markdown of ``reference/methods.md``: every method of every type."""
    from harnpy.stdlib import load_all
    from harnpy.stdlib.registry import METHODS

    load_all()
    lines = [
        "# Methods",
        "",
        "Generated from harnpy's method tables: `value.name(args)` for each type. "
        "`harnpy doc TYPE.NAME` prints the same text.",
        "",
    ]
    for t in sorted(METHODS):
        table = METHODS[t]
        if not table:
            continue
        lines += [f"## {t}", ""]
        for m in sorted(table):
            b = table[m]
            lines += [
                f"### `{t}.{m}`",
                "",
                f"`{t}.{signature(b, method=True)}`",
                "",
                _md_doc(b.doc),
                "",
            ]
    return "\n".join(lines)


def std_modules_page() -> str:
    """The Markdown of ``reference/std-modules.md``: every public function of the bundled
    ``std/`` modules with its doc comment."""
    funcs = std_functions()
    lines = [
        "# Standard modules",
        "",
        "Generated from the bundled `std/` modules (Harn source shipped with harnpy): "
        'import a function with `import { name } from "std/module"`. Doc comments '
        "(`///` lines or a `/** */` block above a function) are shown as written.",
        "",
    ]
    module = None
    for f in funcs:
        if f.module != module:
            module = f.module
            lines += [f"## `{module}`", ""]
        lines += [
            f"### `{f.name}`",
            "",
            f'`{f.signature}` — `import {{ {f.name} }} from "{f.module}"`',
            "",
            f.doc.strip() or "*(no doc comment)*",
            "",
        ]
    return "\n".join(lines)


def reference_pages() -> dict[str, str]:
    """The generated pages of the docs site: path under ``docs/`` -> Markdown."""
    return {
        "reference/builtins.md": builtins_page(),
        "reference/methods.md": methods_page(),
        "reference/std-modules.md": std_modules_page(),
    }


__all__ = [
    "StdFunction",
    "builtin_doc",
    "builtins_page",
    "clean_doc",
    "known_names",
    "methods_page",
    "reference_pages",
    "signature",
    "std_functions",
    "std_modules_page",
]
