"""The served program: ``APP.harn``'s entry points, and running one of them on an input.

An application exports its entry points as ``pub fn`` declarations and ``pipeline``
declarations. A request names one (``entry``), or the only one is used.

* A ``pub fn NAME(input)`` is called with the request's ``input`` (JSON turned into a Harn
  value; a function without parameters is called without it). The call runs inside a small
  driver program (pseudo-path ``<serve:NAME>``, its source kept inline in any snapshot) that
  imports ``NAME`` from the application file by its absolute path.
* A ``pipeline NAME(...)`` runs as ``harnpy run`` would run it: a parameter called
  ``harness`` gets the Harness, the first other parameter gets the input, the rest nil.

The entry point's return value, turned into JSON, is the run's output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, Literal

import attrs

from harnpy.syntax import ast as A

__all__ = ["AppError", "AppProgram", "Entry"]


class AppError(Exception):
    """The application cannot be served (unreadable, syntax or static errors, no entry
    point); ``message`` is the rendered diagnostic text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@attrs.frozen
class Entry:
    """One entry point: ``name``, ``kind`` (``fn`` or ``pipeline``), its parameter names."""

    name: str
    kind: Literal["fn", "pipeline"]
    params: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """``{name, kind, params}``."""
        return {"name": self.name, "kind": self.kind, "params": list(self.params)}


def _unwrap(s: Any) -> Any:
    while type(s) is A.AttributedDecl:
        s = s.decl
    return s


class AppProgram:
    """An application file loaded once at start-up: source, entry points.

    Args:
        path: the ``.harn`` file.

    Raises:
        AppError: the file cannot be read, does not parse, fails the static checks, or has
            no ``pub fn`` / ``pipeline``.
    """

    def __init__(self, path: str) -> None:
        from harnpy.diagnostics import DiagnosticError
        from harnpy.runtime.modules import read_source
        from harnpy.runtime.runtime import Runtime

        self.path = os.path.abspath(path)
        try:
            self.source = read_source(self.path)
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise AppError(f"cannot read {path}: {why}") from None
        rt = Runtime()
        try:
            tree = rt.parse(self.path, self.source)
            rt.check_static(tree, self.path, self.source)
        except DiagnosticError as e:
            raise AppError(e.render()) from None
        except Exception as e:  # noqa: BLE001 - a syntax error carries its own render()
            render = getattr(e, "render", None)
            raise AppError(render() if callable(render) else str(e)) from None
        entries: list[Entry] = []
        for s in tree.body:
            u = _unwrap(s)
            if type(u) is A.FnDecl and u.is_pub:
                entries.append(Entry(u.name, "fn", tuple(p.name for p in u.params)))
            elif type(u) is A.PipelineDecl:
                entries.append(Entry(u.name, "pipeline", tuple(p.name for p in u.params)))
        if not entries:
            raise AppError(
                f"{path}: no entry point (export one with `pub fn NAME(input)` or declare a "
                "`pipeline`)"
            )
        self.entries = {e.name: e for e in entries}

    def resolve(self, name: str | None) -> Entry | None:
        """The entry point ``name`` names, or with None the only one (None when the app has
        several and none is named, or no entry point has that name)."""
        if name is None:
            return next(iter(self.entries.values())) if len(self.entries) == 1 else None
        return self.entries.get(name)

    def driver_source(self, entry: Entry) -> str:
        """The driver program that calls a ``pub fn`` entry with the run's input."""
        args = "input" if entry.params else ""
        target = json.dumps(self.path)
        return (
            f"import {{ {entry.name} }} from {target}\n"
            f"pipeline serve_entry(input) {{\n  return {entry.name}({args})\n}}\n"
        )

    def load(self, rt: Any, entry: Entry, value: Any) -> Any:
        """Load ``entry`` into the fresh Runtime ``rt`` with the Harn value ``value`` as its
        input; returns the main module to pass to ``rt.run_module``.

        Raises:
            DiagnosticError, HarnError: the program cannot be loaded (as ``harnpy run``).
        """
        install_input(rt, entry, value)
        if entry.kind == "pipeline":
            return rt.load_main(self.path, self.source, entry=entry.name)
        return rt.load_main(f"<serve:{entry.name}>", self.driver_source(entry))


def install_input(rt: Any, entry: Entry, value: Any) -> None:
    """Make pipeline parameters of ``rt`` receive the run's input: ``harness`` the Harness,
    the first other parameter of the entry pipeline ``value``, any other nil."""
    fallback: Callable[[str], Any] = rt.pipeline_argument
    params = entry.params if entry.kind == "pipeline" else ("input",)
    first = next((p for p in params if p.lower() != "harness"), None)

    def argument(name: str) -> Any:
        if name == first:
            return value
        return fallback(name)

    rt.pipeline_argument = argument
