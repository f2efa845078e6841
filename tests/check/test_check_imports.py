"""The check stage's import rule: ``harnpy.check`` uses only ``harnpy.syntax`` and
``harnpy.diagnostics`` (style guide "Layout and boundaries"), never ``harnpy.runtime``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import harnpy.check

PACKAGE = Path(harnpy.check.__file__).resolve().parent
ALLOWED = ("harnpy.syntax", "harnpy.diagnostics", "harnpy.check")


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            out.append("harnpy.check")  # relative imports stay inside the package
    return out


def test_source_imports_only_syntax_and_diagnostics() -> None:
    files = sorted(PACKAGE.glob("*.py"))
    assert files
    for f in files:
        for mod in _imported_modules(f):
            if mod == "harnpy" or mod.startswith("harnpy."):
                assert mod.startswith(ALLOWED), f"{f.name} imports {mod}"


def test_checking_a_program_loads_no_runtime_module(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text('import "lib"\nlet x: int = "s"\nlog(true + 1)\n', encoding="utf-8")
    code = (
        "import sys\n"
        "from harnpy.check import check_file, static_errors\n"
        "from harnpy.syntax import parse\n"
        f"path = {str(prog)!r}\n"
        "src = open(path).read()\n"
        "d = check_file(path, src, {'log'})\n"
        "d += static_errors(parse(src, path), path, src, {'log'})\n"
        "assert len(d) == 4, d\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('harnpy.runtime', 'harnpy.stdlib')))\n"
        "print(bad)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
