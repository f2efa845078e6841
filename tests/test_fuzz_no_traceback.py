"""No input makes harnpy print a Python traceback or hang (issues: harnpy runs Harn
scripts; bad input never crashes).

Hypothesis feeds random and mutated programs (the samples below, the project's own
``examples/`` and ``stdlib/`` programs and part of the conformance corpus) to:

* ``run`` — the parser *and the evaluator*: every outcome must be a success or a Harn
  diagnostic (``HarnSyntaxError``/``DiagnosticError``, ``HarnError``), never another
  exception. Programs run in-process with a small frame limit and an instruction budget
  enforced by a watchdog (the interrupt flag), so loops cannot hang;
* ``check`` — the static checker and the compile-only pass ``harnpy check`` runs: only
  diagnostics, within :data:`FRONT_END_TIMEOUT` seconds (the front end is linear, so a
  mutated program of a few KB takes milliseconds; a super-linear path shows up as a hang);
* ``run --resume`` — program snapshots written by ``__snapshot_exit``, then damaged: bytes
  flipped, cut or inserted (the seal check refuses them), or the decoded document edited
  and sealed again with the session's key (what a bug or a key holder could write: every
  record goes through validation). The command's exit code and stderr are checked: an
  exit code, no traceback, within :data:`RESUME_TIMEOUT` seconds; the whole file is left
  in place when it is refused.

Each test has a bounded number of examples, so the module stays well under a minute.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import os
import tempfile
import threading
import types
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnpy.diagnostics import DiagnosticError
from harnpy.runtime.errors import HarnError, HarnInterrupt, SnapshotExit
from harnpy.runtime.runtime import Runtime
from tests.sealing import read_doc, sealed

REPO = Path(__file__).resolve().parent.parent
FRONT_END_TIMEOUT = 20.0
RESUME_TIMEOUT = 20.0

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
    base = data.draw(st.sampled_from(SAMPLES + _corpus_sample() + _project_programs()))
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


_RISKY = ("exec(", "shell(", "exec_at(", "delete_file(", "env(", "http_", "agent_loop(", "llm_")


@functools.cache
def _project_programs() -> list[str]:
    """The project's own example programs and Harn-written std modules (small ones, none
    that reach out of the process: shells, HTTP, models)."""
    out = []
    for root in (REPO / "examples", REPO / "stdlib"):
        for f in sorted(root.rglob("*.harn")):
            if any(part.startswith(".") for part in f.relative_to(root).parts):
                continue  # state directories a run left behind
            try:
                text = f.read_text(encoding="utf-8")
            except OSError:
                continue
            if len(text) < 6000 and not any(r in text for r in _RISKY):
                out.append(text)
    return out


def _in_thread(fn: Any, timeout: float) -> Any:
    """``fn()`` in a daemon thread; its result, re-raising what it raised. Fails the test
    when it has not finished after ``timeout`` seconds (a hang)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"still running after {timeout:g}s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _check(source: str) -> None:
    """What ``harnpy check`` runs: every static check, then the compile-only pass."""
    from harnpy.check import check_file
    from harnpy.cli import _compile_errors
    from harnpy.stdlib import load_all
    from harnpy.stdlib.registry import BUILTINS

    load_all()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fuzz.harn")
        diags = check_file(path, source, set(BUILTINS))
        if not any(d.severity == "error" for d in diags):
            _compile_errors(path, source)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_check_of_mutated_programs_gives_only_diagnostics_in_bounded_time(
    data: st.DataObject,
) -> None:
    base = data.draw(st.sampled_from(SAMPLES + _project_programs() + _corpus_sample()))
    source = _mutate(data, base)
    _in_thread(lambda: _check(source), FRONT_END_TIMEOUT)


# ---------------------------------------------------------------- run --resume

#: Programs that park themselves with ``__snapshot_exit`` and, resumed, do a bounded amount
#: of work whatever the restored values are (no loop bound or repetition count comes from
#: the snapshot).
PARKING = [
    'let xs = [1, "two", {a: [3, nil]}, 4.5]\nvar d = {k: xs, n: 2}\n'
    "fn f(v) { return type_of(v) }\n__snapshot_exit(SNAP)\n"
    "println(f(xs), f(d))\nprintln(json_stringify(d))\nd.n = 3\nprintln(len(xs))",
    "fn outer(a) {\n  let c = { x -> x + a }\n  __snapshot_exit(SNAP)\n  return c(1)\n}\n"
    'let v = outer(41)\nlet s = "done ${v + 1}"\nprintln(s)',
    "fn gen() { yield 1\n yield 2 }\nlet g = gen()\nprintln(g.next())\n"
    "__snapshot_exit(SNAP)\nprintln(g.next())\nprintln(g.next())",
    "var acc = []\nfor x in [1, 2, 3] {\n  acc = acc + [x]\n  if x == 2 { __snapshot_exit(SNAP) }\n}\n"
    'println(acc)\nlet r = try { throw "e" } catch (e) { e }\nprintln(r)',
]


@functools.cache
def _parked(index: int) -> tuple[str, bytes]:
    """(program source, sealed snapshot bytes) of :data:`PARKING` ``[index]``, parked once
    per session in a directory of its own."""
    d = tempfile.mkdtemp(prefix="harnpy-fuzz-park-")
    snap = os.path.join(d, "park.json")
    prog = os.path.join(d, "prog.harn")
    source = PARKING[index].replace("SNAP", json.dumps(snap))
    Path(prog).write_text(source, encoding="utf-8")
    rt = Runtime(stdout=io.StringIO().write, stderr=io.StringIO().write)
    try:
        rt.run_module(rt.load_main(prog, source))
    except SnapshotExit:
        pass
    data = Path(snap).read_bytes()
    assert read_doc(snap)  # a sealed document
    return prog, data


def _json_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _json_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _json_paths(v, (*prefix, i))
    return out


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**64) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _edit_document(data: st.DataObject, doc: Any) -> Any:
    """A copy of ``doc`` with one to three records replaced, deleted or retyped."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _json_paths(doc) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        op = data.draw(st.sampled_from(["replace", "delete", "wrap", "swap_type"]))
        if op == "delete":
            del parent[key]
        elif op == "wrap":
            parent[key] = [parent[key]]
        elif op == "swap_type":
            v = parent[key]
            parent[key] = (
                {"0": v}
                if isinstance(v, list)
                else list(v.values())
                if isinstance(v, dict)
                else str(v)
                if not isinstance(v, str)
                else len(v)
            )
        else:
            parent[key] = data.draw(_JSON_VALUES)
    return doc


def _damage_bytes(data: st.DataObject, raw: bytes) -> bytes:
    b = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        pos = data.draw(st.integers(0, max(0, len(b) - 1)))
        if op == "flip" and b:
            b[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "cut":
            del b[pos:]
        else:
            b[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
    return bytes(b)


def _resume_cli(snapshot: str) -> tuple[int, str]:
    """``harnpy run --resume SNAPSHOT`` in-process: (exit code, stderr)."""
    from harnpy.resume_cli import resume_main

    args = types.SimpleNamespace(
        resume=snapshot, json=False, quiet=False, llm_mock=None, llm_mock_record=None
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = resume_main(args)
    return code, err.getvalue()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_resume_of_damaged_snapshots_gives_only_diagnostics(data: st.DataObject) -> None:
    prog, raw = _parked(data.draw(st.integers(0, len(PARKING) - 1)))
    if data.draw(st.booleans()):
        damaged = _damage_bytes(data, raw)
    else:
        doc = json.loads(raw)
        damaged = sealed(_edit_document(data, doc))
    with tempfile.TemporaryDirectory() as tmp:
        snap = os.path.join(tmp, "park.json")
        Path(snap).write_bytes(damaged)
        old = os.getcwd()
        os.chdir(tmp)
        try:
            code, err = _in_thread(lambda: _resume_cli(snap), RESUME_TIMEOUT)
        finally:
            os.chdir(old)
        assert isinstance(code, int)
        assert "Traceback" not in err, err
        if code not in (0, 3) and os.path.exists(snap):
            # refused or failed: a program snapshot has no claim, the file is as it was
            assert Path(snap).read_bytes() == damaged
