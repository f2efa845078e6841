"""No input makes harnpy print a Python traceback (issue: harnpy runs Harn scripts).

Hypothesis feeds random and mutated programs to the parser *and the evaluator*; every
outcome must be a success or a Harn diagnostic (``HarnSyntaxError``/``DiagnosticError``,
``HarnError``), never another exception. Programs run in-process with a small frame limit
and an instruction budget enforced by a watchdog (the interrupt flag), so loops cannot hang.
"""

from __future__ import annotations

import io
import os
import tempfile
import threading
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnpy.diagnostics import DiagnosticError
from harnpy.runtime.errors import HarnError, HarnInterrupt, SnapshotExit
from harnpy.runtime.runtime import Runtime

SAMPLES = [
    "let x = 1 + 2\nprintln(x)",
    'fn f(a, b = 2) { return a * b }\nprintln(f(3))\nprintln(f("x", 2))',
    "var xs = [1, 2, 3]\nxs[0] = 9\nfor x in xs { println(x) }",
    'let d = {a: 1, "b": [1, 2]}\nprintln(d.b[1] ?? 0)\nd.c = 1',
    "fn g(n) { if n < 2 { return n } return g(n - 1) + g(n - 2) }\nprintln(g(10))",
    'let r = try { throw "boom" } catch (e) { e } finally { println(1) }\nprintln(r)',
    "enum E { A, B(x) }\nmatch E.B(3) { E.A -> { println(0) } E.B(v) -> { println(v) } }",
    'fn gen() { yield 1\n yield 2 }\nfor v in gen() { println(v) }\nprintln("${gen().next()}")',
    "let c = { x -> x + 1 }\nprintln([1, 2].map(c).filter({ v -> v > 2 }))",
    'pipeline main(task) {\n  let s = "a,b" |> split(_, ",")\n  println(s)\n}',
    "struct P { x: int }\nlet p = P { x: 1 }\nprintln(p.x)\nprintln(p?.y ?? 3)",
    "let n = 0\nwhile n < 3 { n = n + 1 }",
    'import "std/math"\nprintln(clamp(5, 0, 3))',
    "println(1 to 5 exclusive)\nprintln((1 to 4).map({ x -> x * 2 }).to_list())",
    "let t = spawn { 1 + 1 }\nprintln(await(t))\nprintln(json_stringify({a: [1, 2.5, nil]}))",
]

TOKENS = [
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    ";",
    "\n",
    "->",
    "=>",
    "|>",
    "??",
    "?.",
    "?",
    "...",
    ".",
    "=",
    "==",
    "+",
    "-",
    "*",
    "/",
    "%",
    "**",
    "!",
    "&&",
    "||",
    "<",
    ">",
    "in",
    "let",
    "var",
    "fn",
    "return",
    "if",
    "else",
    "for",
    "while",
    "match",
    "try",
    "catch",
    "throw",
    "yield",
    "break",
    "continue",
    "pipeline",
    "import",
    "nil",
    "true",
    "false",
    "x",
    "y",
    "_",
    "0",
    "1",
    "3.5",
    "10s",
    '"s"',
    '"${x}"',
    '"""\n  t\n  """',
    'r"\\d"',
    "//c\n",
    "/* c */",
    "println(",
    "len(",
    "map(",
    "spawn",
    "await(",
]


def _run(source: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        old = os.getcwd()
        os.chdir(tmp)  # programs that write files do it in a scratch directory
        try:
            _run_here(source)
        finally:
            os.chdir(old)


def _run_here(source: str) -> None:
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write, max_depth=200)
    th_holder: dict[str, object] = {}
    stop = threading.Event()

    def watchdog() -> None:
        if not stop.wait(2.0):
            th = rt.main_thread
            if th is not None:
                th.interrupt_requested = True
            th_holder["interrupted"] = True

    w = threading.Thread(target=watchdog, daemon=True)
    w.start()
    try:
        mod = rt.load_main("<fuzz>", source)
        rt.run_module(mod)
    except (DiagnosticError, HarnError, HarnInterrupt, SnapshotExit):
        pass
    finally:
        stop.set()


def _mutate(data: st.DataObject, text: str) -> str:
    chars = list(text)
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["delete", "insert", "swap", "token"]))
        pos = data.draw(st.integers(0, max(0, len(chars))))
        if op == "delete" and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op == "insert":
            chars.insert(pos, data.draw(st.sampled_from(list("{}()[]\"'$\\.,;:=+-*/<>!?|&#`\n "))))
        elif op == "swap" and len(chars) > 1:
            i = min(pos, len(chars) - 2)
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        else:
            chars.insert(pos, " " + data.draw(st.sampled_from(TOKENS)) + " ")
    return "".join(chars)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_programs_give_only_harn_diagnostics(data: st.DataObject) -> None:
    base = data.draw(st.sampled_from(SAMPLES + _corpus_sample()))
    _run(_mutate(data, base))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_random_token_soup_gives_only_harn_diagnostics(tokens: list[str]) -> None:
    _run(" ".join(tokens))


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_random_text_gives_only_harn_diagnostics(text: str) -> None:
    _run(text)


def _corpus_sample() -> list[str]:
    root = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance" / "cases"
    if not root.is_dir():
        return []
    files = sorted(root.rglob("*.harn"))[::12]
    out = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except OSError:
            continue
        risky = ("exec(", "shell(", "exec_at(", "delete_file(", "env(")
        if len(text) < 3000 and not any(r in text for r in risky):
            out.append(text)
    return out
