"""Imports run one way (style guide): syntax knows nothing of the runtime, the runtime and
the builtin library know nothing of the agents/lifecycle layer, and the shells (cli, repl,
resume_cli) are imported by nobody inside the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harnpy

#: the package under test: the repository's, or the installed wheel's (.ci/run)
PKG = Path(harnpy.__file__).resolve().parent

#: package -> harnpy subpackages/modules it may import statically
ALLOWED = {
    "syntax": {"syntax", "diagnostics"},
    "check": {"check", "syntax", "diagnostics", "stdlib"},
    "runtime": {
        "runtime",
        "syntax",
        "diagnostics",
        "check",
        "stdlib",
        "_lazy",
        "shapes",
        "security",
    },
    "stdlib": {"stdlib", "runtime", "syntax", "diagnostics", "_lazy", "security"},
    # bounded reads of mock files come from the trust primitives (the lowest layer)
    "llm": {"llm", "shapes", "security"},
    "lifecycle": {
        "lifecycle",
        "runtime",
        "stdlib",
        "syntax",
        "diagnostics",
        "llm",
        "_lazy",
        "shapes",
        "store",
        "security",
    },
    # the HTTP server: a shell over the lifecycle layer and the store (imported only by cli)
    "serve": {
        "serve",
        "runtime",
        "stdlib",
        "syntax",
        "diagnostics",
        "lifecycle",
        "llm",
        "store",
        "security",
        "client",
    },
    # the durable store knows nothing of the language or the agents
    "store": {"store", "security"},
    # trust primitives (sealing, keys, bounded reads, private files): import nothing else
    "security": {"security"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harnpy."):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("harnpy."):
                    out.add(alias.name.split(".")[1])
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_its_allowed_layers(package: str) -> None:
    bad = []
    for path in sorted((PKG / package).rglob("*.py")):
        for dep in _imports(path) - ALLOWED[package]:
            bad.append(f"{path.relative_to(PKG.parent)} imports harnpy.{dep}")
    assert not bad, "\n".join(bad)
