"""``harnpy fmt``, ``harnpy lint`` and ``check`` over several paths (issue: what a new user
trips on, point 5).

``fmt``: formatting every ``.harn`` file of ``examples/``, ``stdlib/`` and the conformance
corpus twice gives the same bytes, keeps every token and comment (the AST is the same,
spans aside) and, for the corpus cases it changes, the same output; the command rewrites
files, ``--check`` reports and exits 1. ``lint``: each rule's finding with its code, the
JSON form, the exit codes and the allow comment. ``check``: several files and directories,
``--format json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harnpy.conformance import execute
from harnpy.syntax import HarnSyntaxError, parse
from harnpy.syntax.fmt import format_source
from tests.conftest import harnpy

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS = REPO.parent / "shared" / "conformance"


def corpus_files() -> list[Path]:
    roots = [REPO / "examples", REPO / "stdlib", CORPUS]
    out: list[Path] = []
    for root in roots:
        out += sorted(
            p
            for p in root.rglob("*.harn")
            if not any(part.startswith(".") for part in p.relative_to(root).parts)
        )
    return out


@pytest.fixture(autouse=True)
def _deep() -> object:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 30_000))
    yield
    sys.setrecursionlimit(old)


def test_formatting_the_corpus_twice_gives_the_same_bytes_and_the_same_program() -> None:
    files = corpus_files()
    assert len(files) > 300
    formatted = 0
    changed: list[tuple[Path, str]] = []
    for f in files:
        source = f.read_text(encoding="utf-8")
        try:
            once = format_source(source, str(f))
        except HarnSyntaxError:
            # a lexing error case of the corpus: not formatted; anything that parses must
            # format (before, every string with a `${}` part was refused)
            with pytest.raises((HarnSyntaxError, RecursionError)):
                parse(source, "<fmt>")
            continue
        formatted += 1
        assert format_source(once, str(f)) == once, f"not idempotent: {f}"
        assert once.endswith("\n") and not once.endswith("\n\n")
        assert all(line == line.rstrip() or '"""' in once for line in once.split("\n")), f
        try:
            before = parse(source, "<fmt>")
        except (HarnSyntaxError, RecursionError):
            continue
        assert parse(once, "<fmt>") == before, f"the program changed: {f}"
        if once != source:
            changed.append((f, once))
    assert formatted > 300
    assert changed  # the corpus has files whose layout fmt changes
    # the same output when run (the formatted text in the case's own directory)
    ran = 0
    for f, once in changed:
        expected = f.with_suffix(".expected")
        if not expected.is_file() or f.stat().st_size > 20_000:
            continue
        a = execute(str(f), f.read_text(encoding="utf-8"), 10.0)
        b = execute(str(f), once, 10.0)
        assert (a.out, a.failed) == (b.out, b.failed), f
        ran += 1
    assert ran > 0


LAYOUT = """\
// a comment stays
fn f(xs) {
      let ys = xs.map({ x ->
   x + 1<SP>
})
  /* a block
        comment, kept as it is */
  let s = \"\"\"
      a triple-quoted string,<SP>
    kept as it is
  \"\"\"



  return ys
    |> len(_)
}
println(f([1, 2]))
"""

FORMATTED = """\
// a comment stays
fn f(xs) {
  let ys = xs.map({ x ->
    x + 1
  })
  /* a block
        comment, kept as it is */
  let s = \"\"\"
      a triple-quoted string,<SP>
    kept as it is
  \"\"\"

  return ys
    |> len(_)
}
println(f([1, 2]))
"""

# trailing spaces: removed from code lines, kept inside the triple-quoted string
LAYOUT = LAYOUT.replace("<SP>", "   ")
FORMATTED = FORMATTED.replace("<SP>", "   ")


def test_fmt_lays_out_lines_and_keeps_comments_and_strings(tmp_path: Path) -> None:
    assert format_source(LAYOUT) == FORMATTED
    prog = tmp_path / "p.harn"
    prog.write_text(LAYOUT, encoding="utf-8")
    prog.chmod(0o640)
    proc = harnpy("fmt", "--check", str(tmp_path))
    assert proc.returncode == 1
    assert proc.stdout == f"would reformat {prog}\n"
    assert prog.read_text(encoding="utf-8") == LAYOUT  # --check changes nothing
    proc = harnpy("fmt", str(prog))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"reformatted {prog}\n"
    assert prog.read_text(encoding="utf-8") == FORMATTED
    assert prog.stat().st_mode & 0o777 == 0o640
    assert harnpy("fmt", "--check", str(prog)).returncode == 0
    assert harnpy("run", str(prog)).stdout == "2\n"


def test_fmt_formats_interpolated_strings_and_keeps_them(tmp_path: Path) -> None:
    f = tmp_path / "i.harn"
    f.write_text('fn f(n) {\nreturn "n=${n + 1} and ${ {a: 1}.a }"\n}\nprintln(f(1))\n')
    p = harnpy("fmt", str(f))
    assert p.returncode == 0, p.stderr
    assert f.read_text() == 'fn f(n) {\n  return "n=${n + 1} and ${ {a: 1}.a }"\n}\nprintln(f(1))\n'
    assert harnpy("fmt", "--check", str(f)).returncode == 0


def test_a_crlf_file_stays_crlf_and_its_triple_quoted_text_unchanged(tmp_path: Path) -> None:
    src = 'fn f() {\r\nlet s = """\r\n  a\r\n"""\r\nreturn s  \r\n}\r\nprintln(f())\r\n'
    once = format_source(src, "c.harn")
    assert once == (
        'fn f() {\r\n  let s = """\r\n  a\r\n"""\r\n  return s\r\n}\r\nprintln(f())\r\n'
    )
    assert format_source(once, "c.harn") == once
    f = tmp_path / "c.harn"
    f.write_bytes(src.encode())
    before = harnpy("run", str(f)).stdout
    f.write_bytes(once.encode())
    assert harnpy("run", str(f)).stdout == before


def test_fmt_refuses_a_file_that_does_not_parse_and_leaves_it_alone(tmp_path: Path) -> None:
    # it lexes, but `)` has no opener: a layout from its brackets moved `log(y)` out of the
    # block (and the command said `reformatted`, exit 0)
    f = tmp_path / "bad.harn"
    src = "pipeline default() {\n  let y = 42\n  let z = )\n  log(y)\n}\n"
    f.write_text(src)
    p = harnpy("fmt", str(f))
    assert p.returncode == 2 and "error[E1" in p.stderr and "reformatted" not in p.stdout
    assert f.read_text() == src


def test_fmt_leaves_a_file_it_cannot_lex(tmp_path: Path) -> None:
    bad = tmp_path / "bad.harn"
    bad.write_text('let s = "open\n   println(1)\n', encoding="utf-8")
    proc = harnpy("fmt", str(bad))
    assert proc.returncode == 2
    assert "error[E102]" in proc.stderr
    assert bad.read_text(encoding="utf-8") == 'let s = "open\n   println(1)\n'
    assert harnpy("fmt", str(tmp_path / "missing.harn")).returncode == 2


LINTED = """\
fn f(a) {
  let unused = 1
  let used = 2
  if used > 1 {
    let a = 3
    println(a)
  }
  return used
  println("never")
}
pipeline main() {
  sleep(5m)
  try { sleep(2h) } finally { println("cleanup") }
  let _fine = 1
  let allowed = 1 // lint: allow L001
  println(f(1))
}
"""


def test_lint_reports_each_rule_with_its_code(tmp_path: Path) -> None:
    prog = tmp_path / "l.harn"
    prog.write_text(LINTED, encoding="utf-8")
    proc = harnpy("lint", str(prog))
    assert proc.returncode == 1
    found = [
        line.split(": warning[")[1].split("]")[0] + "@" + line.split(":")[1]
        for line in proc.stderr.splitlines()
        if ": warning[" in line
    ]
    assert found == ["L001@2", "L003@5", "L002@9", "L004@12"], proc.stderr
    assert "= hint: " in proc.stderr
    proc = harnpy("lint", "--format", "json", str(prog))
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    diags = doc["files"][0]["diagnostics"]
    assert [(d["code"], d["line"], d["severity"]) for d in diags] == [
        ("L001", 2, "warning"),
        ("L003", 5, "warning"),
        ("L002", 9, "warning"),
        ("L004", 12, "warning"),
    ]
    assert doc["warnings"] == 4 and doc["errors"] == 0
    clean = tmp_path / "clean.harn"
    clean.write_text("fn g(x) {\n  let y = x + 1\n  return y\n}\nprintln(g(1))\n")
    proc = harnpy("lint", str(clean))
    assert proc.returncode == 0 and not proc.stderr, proc.stderr


def test_the_project_examples_lint_clean() -> None:
    proc = harnpy("lint", str(REPO / "examples"))
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_project_examples_and_stdlib_are_formatted() -> None:
    proc = harnpy("fmt", "--check", str(REPO / "examples"), str(REPO / "stdlib"))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_check_takes_several_paths_and_json(tmp_path: Path) -> None:
    (tmp_path / "ok.harn").write_text("println(1)\n", encoding="utf-8")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "bad.harn").write_text("println(nope)\n", encoding="utf-8")
    state = tmp_path / ".harn"
    state.mkdir()
    (state / "ignored.harn").write_text("this is not harn {", encoding="utf-8")
    proc = harnpy("check", str(tmp_path / "ok.harn"), str(sub))
    assert proc.returncode == 2
    assert f"{tmp_path / 'ok.harn'}: ok" in proc.stdout
    assert "error[E210]" in proc.stderr and "nope" in proc.stderr
    proc = harnpy("check", "--format", "json", str(tmp_path))
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    files = {Path(f["path"]).name: f for f in doc["files"]}
    assert set(files) == {"ok.harn", "bad.harn"}  # the .harn/ state directory is skipped
    assert files["ok.harn"]["ok"] and not files["ok.harn"]["diagnostics"]
    assert not files["bad.harn"]["ok"]
    assert files["bad.harn"]["diagnostics"][0]["code"] == "E210"
    assert doc["errors"] == 1
    proc = harnpy("check", str(tmp_path / "ok.harn"))
    assert proc.returncode == 0 and proc.stdout == f"{tmp_path / 'ok.harn'}: ok\n"
