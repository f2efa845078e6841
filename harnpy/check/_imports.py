"""Static import resolution: which names an ``import`` brings into a file (spec 3.18).

Resolution mirrors the runtime's: ``std/x`` is looked up in the bundled library (installed
wheel data, then the source checkout's ``stdlib/``); other paths are relative to the importing
file, with ``.harn``, ``/index.harn`` and ``/lib.harn`` tried. The answer over-approximates
the runtime's exports (every name declared with ``fn``, ``tool``, ``struct`` or ``enum``
anywhere in the module, plus what ``pub import`` re-exports), because the checker only uses
it to avoid false "not defined" reports. Modules are scanned as text, not parsed: an import
must not cost a second parse of the imported file on every ``harnpy run``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from harnpy.syntax import ast as A

_STDLIB_DIRS = (
    Path(__file__).resolve().parent.parent / "_data" / "stdlib",
    Path(__file__).resolve().parents[2] / "stdlib",
)
_MAX_DEPTH = 16
_DECL = re.compile(r"\b(?:fn|tool|struct|enum)\s+([A-Za-z_]\w*)")
_PUB_IMPORT = re.compile(r'^[ \t]*pub[ \t]+import\s*(?:\{([^}]*)\}\s*from\s*)?"([^"]+)"', re.M)


def resolve(spec: str, importer: str) -> Path | None:
    """The file an import string names, or None when it cannot be found."""
    if spec.startswith("std/"):
        rel = spec if spec.endswith(".harn") else spec + ".harn"
        for root in _STDLIB_DIRS:
            for cand in (root / rel, root / spec / "index.harn"):
                if cand.is_file():
                    return cand
        return None
    base = (
        Path(os.path.dirname(importer)) if importer and not importer.startswith("<") else Path.cwd()
    )
    cands = [base / spec]
    if not spec.endswith(".harn"):
        cands = [
            base / (spec + ".harn"),
            base / spec,
            base / spec / "index.harn",
            base / spec / "lib.harn",
        ]
    for c in cands:
        if c.is_file():
            return c.resolve()
    return None


class ImportResolver:
    """Caches parsed modules across the imports of one check run."""

    def __init__(self) -> None:
        self._exports: dict[Path, set[str] | None] = {}

    def names(self, decl: A.ImportDecl, importer: str, depth: int = 0) -> set[str] | None:
        """Names ``decl`` binds in the importing file; None when the module is unknown."""
        if decl.names is not None:
            return set(decl.names)
        path = resolve(decl.path, importer)
        if path is None:
            return None
        return self.exports(path, depth)

    def exports(self, path: Path, depth: int = 0) -> set[str] | None:
        """The over-approximated export set of the module at ``path``."""
        if path in self._exports:
            return self._exports[path]
        if depth > _MAX_DEPTH:
            return None
        self._exports[path] = set()  # import cycles resolve to what is known so far
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            self._exports[path] = None
            return None
        out: set[str] = set(_DECL.findall(source))
        for m in _PUB_IMPORT.finditer(source):
            if m.group(1) is not None:
                out.update(n.strip() for n in m.group(1).split(",") if n.strip())
                continue
            sub_path = resolve(m.group(2), str(path))
            sub = self.exports(sub_path, depth + 1) if sub_path is not None else None
            if sub is None:
                self._exports[path] = None
                return None
            out.update(sub)
        self._exports[path] = out
        return out
