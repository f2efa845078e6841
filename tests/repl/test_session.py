"""The REPL session (harnpy.runtime.session): incremental evaluation, errors that keep the
session alive, Ctrl-C interrupts that run ``finally`` blocks once and cannot be caught, and
``save``/``restore`` of a whole session (here and in a fresh process)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harnpy.diagnostics import DiagnosticError
from harnpy.runtime.errors import HarnError, HarnInterrupt
from harnpy.runtime.session import Session
from harnpy.runtime.snapshot import SnapshotError

REPO = Path(__file__).resolve().parents[2]


class Out:
    """Collects what the program prints."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, text: str) -> None:
        self.parts.append(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def take(self) -> str:
        t = self.text
        self.parts.clear()
        return t


@pytest.fixture
def out() -> Out:
    return Out()


@pytest.fixture
def session(out: Out) -> Session:
    return Session(stdout=out, stderr=out)


def later(seconds: float, fn: object) -> threading.Timer:
    t = threading.Timer(seconds, fn)  # type: ignore[arg-type]
    t.daemon = True
    t.start()
    return t


# ------------------------------------------------------------ incremental evaluation


def test_bindings_functions_and_imports_persist_between_entries(session: Session) -> None:
    assert session.eval("let x = 20").show is False
    session.eval("fn add(a, b) {\n  return a + b\n}")
    session.eval('import { mean } from "std/math"')
    r = session.eval("add(x, 22)")
    assert (r.value, r.show) == (42, True)
    assert session.eval("mean([1, 2, 3])").value == 2


def test_earlier_entries_are_never_run_again(session: Session, out: Out) -> None:
    session.eval('println("once")')
    session.eval("var n = 1")
    session.eval("n = n + 1")
    session.eval("n")
    assert out.text == "once\n"
    assert session.eval("n").value == 2


def test_nil_is_not_echoed_but_other_values_are(session: Session) -> None:
    assert session.eval("nil").show is False
    assert session.eval('println("x")').show is False
    assert session.eval("let y = 3").show is False
    r = session.eval("if true { 1 } else { 2 }")
    assert (r.value, r.show) == (1, True)
    assert session.eval('"text"').value == "text"


def test_let_may_be_redeclared_in_a_later_entry_but_not_assigned(session: Session) -> None:
    session.eval("let x = 1")
    session.eval("let x = 2")
    assert session.eval("x").value == 2
    with pytest.raises(HarnError, match="Cannot assign to immutable binding: x"):
        session.eval("x = 3")
    session.eval("var x = 4")
    session.eval("x = 5")
    assert session.eval("x").value == 5


def test_enums_structs_impls_and_type_aliases_carry_over(session: Session) -> None:
    session.eval("enum Color { Red, Green }")
    session.eval("struct Point { x: int, y: int }")
    session.eval("impl Point { fn sum(self) { return self.x + self.y } }")
    assert session.eval("Point { x: 2, y: 3 }.sum()").value == 5
    r = session.eval("match Color.Green {\n  Color.Red -> { 1 }\n  Color.Green -> { 2 }\n}")
    assert r.value == 2
    session.eval("type Id = int")
    assert session.eval("schema_is(3, Id)").value is True


def test_functions_may_call_functions_defined_in_later_entries(session: Session) -> None:
    session.eval("fn outer() { return inner() * 2 }")
    session.eval("fn inner() { return 21 }")
    assert session.eval("outer()").value == 42


# ------------------------------------------------------------------------ errors


def test_syntax_errors_render_with_the_entry_line_and_caret(session: Session) -> None:
    session.eval("let ok = 1")
    with pytest.raises(DiagnosticError) as ei:
        session.eval("let a = 1\nlet = 2")
    text = session.render_error(ei.value)
    assert text.startswith("<repl#2>:2:5: error[E104]")
    assert "  2 | let = 2" in text
    assert text.splitlines()[-1].endswith("^")
    assert session.eval("ok").value == 1


def test_runtime_errors_keep_the_session_and_earlier_bindings(session: Session) -> None:
    with pytest.raises(HarnError) as ei:
        session.eval("let before = 7\nlet bad = 1 / 0")
    text = session.render_error(ei.value)
    assert "error[E303]: Division by zero" in text
    assert "  2 | let bad = 1 / 0" in text
    assert session.eval("before").value == 7
    assert session.eval("before + 1").value == 8


def test_errors_inside_calls_show_the_harn_stack(session: Session) -> None:
    session.eval('fn boom() {\n  throw "bad"\n}')
    with pytest.raises(HarnError) as ei:
        session.eval("boom()")
    text = session.render_error(ei.value)
    assert text.startswith("<repl#1>:2:3: error[E310]: Thrown: bad")
    assert "at boom (<repl#1>:2:3)" in text
    assert "at <repl> (<repl#2>:1:1)" in text


def test_each_submitted_entry_gets_its_own_number(session: Session) -> None:
    with pytest.raises(DiagnosticError) as e1:
        session.eval("let = 1")
    with pytest.raises(HarnError) as e2:
        session.eval("nope")
    assert "<repl#1>" in session.render_error(e1.value)
    assert "<repl#2>" in session.render_error(e2.value)


# -------------------------------------------------------------------- interrupts

# Functions capture top-level bindings by value (spec 3.10), so the trail of what ran is
# kept in an atomic (the one shared mutable cell).
LOOP_WITH_HANDLERS = """
let log = atomic([])
fn note(s) { atomic_set(log, atomic_get(log) + [s]) }
fn work() {
  try {
    var i = 0
    while true { i = i + 1 }
  } catch (e) {
    note("caught")
  } finally {
    note("inner finally")
  }
}
"""


def test_interrupt_runs_finally_once_and_is_not_caught(session: Session) -> None:
    session.eval(LOOP_WITH_HANDLERS)
    later(0.3, session.interrupt)
    start = time.monotonic()
    with pytest.raises(HarnInterrupt):
        session.eval(
            'try {\n  try { work() } finally { note("outer finally") }\n'
            '} catch (e) { note("outer catch") }'
        )
    assert time.monotonic() - start < 5
    assert session.eval("atomic_get(log)").value == ["inner finally", "outer finally"]
    assert session.eval("1 + 1").value == 2


def test_errors_thrown_by_finally_during_an_interrupt_do_not_replace_it(
    session: Session,
) -> None:
    session.eval("var seen = []")
    later(0.3, session.interrupt)
    with pytest.raises(HarnInterrupt):
        session.eval(
            "try {\n"
            "  try { while true { } } finally {\n"
            '    try { throw "inner" } catch (e) { seen = seen + [e] }\n'
            '    throw "from finally"\n'
            "  }\n"
            '} catch (e) { seen = seen + ["outer caught " + e] }'
        )
    # the catch nested inside the finally block works; the outer catch never runs
    assert session.eval("seen").value == ["inner"]


def test_return_inside_finally_does_not_end_an_interrupt(session: Session) -> None:
    session.eval("let trail = atomic([])")
    session.eval("fn note(s) { atomic_set(trail, atomic_get(trail) + [s]) }")
    session.eval(
        'fn f() {\n  try { while true { } } finally {\n    note("f finally")\n    return 1\n  }\n}'
    )
    later(0.3, session.interrupt)
    with pytest.raises(HarnInterrupt):
        session.eval('try { f(); note("after f") } finally { note("top") }')
    assert session.eval("atomic_get(trail)").value == ["f finally", "top"]


def test_interrupt_reaches_deep_recursion_without_loops(session: Session) -> None:
    session.eval("fn fib(n) { if n < 2 { return n }\n return fib(n - 1) + fib(n - 2) }")
    later(0.3, session.interrupt)
    start = time.monotonic()
    with pytest.raises(HarnInterrupt):
        session.eval("fib(60)")
    assert time.monotonic() - start < 5
    assert session.eval("fib(10)").value == 55


def _sigint_later(seconds: float) -> threading.Timer:
    return later(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_during_sleep_interrupts_at_once_and_runs_finally(session: Session) -> None:
    session.eval("var cleaned = false")
    _sigint_later(0.3)
    start = time.monotonic()
    with pytest.raises(HarnInterrupt):
        session.eval("try { sleep(30s) } finally { cleaned = true }")
    assert time.monotonic() - start < 5
    assert session.eval("cleaned").value is True


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_inside_a_blocking_host_call_interrupts_it(session: Session) -> None:
    session.eval("var cleaned = false")
    _sigint_later(0.5)
    start = time.monotonic()
    with pytest.raises(HarnInterrupt):
        session.eval('try { exec("sleep", "20") } finally { cleaned = true }')
    assert time.monotonic() - start < 8
    assert session.eval("cleaned").value is True


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_while_a_builtin_blocks_on_stdin_interrupts_it(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    r, w = os.pipe()
    with os.fdopen(r) as blocked_stdin:
        monkeypatch.setattr(sys, "stdin", blocked_stdin)
        _sigint_later(0.3)
        start = time.monotonic()
        with pytest.raises(HarnInterrupt):
            session.eval("let line = read_line()")
        assert time.monotonic() - start < 5
    os.close(w)
    assert session.eval("1").value == 1


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_during_a_loop_is_a_graceful_interrupt(session: Session) -> None:
    session.eval("var n = 0")
    _sigint_later(0.3)
    with pytest.raises(HarnInterrupt):
        session.eval("while true { n = n + 1 }")
    assert session.eval("n > 0").value is True
    # the REPL's handler is removed again once the entry ends
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_interrupt_also_stops_spawned_tasks(session: Session) -> None:
    later(0.3, session.interrupt)
    with pytest.raises(HarnInterrupt):
        session.eval("let t = spawn { while true { } }\nawait(t)")
    assert session.eval("2 * 21").value == 42


# --------------------------------------------------------------- save / restore

SETUP = [
    "let base = 40",
    "var counter = 1",
    "fn add(a, b) {\n  return a + b\n}",
    "let twice = { x -> x * 2 }",
    "enum Shape { Circle(r), Square(s) }",
    "struct Point { x: int, y: int }",
    "impl Point { fn norm1(self) { return self.x + self.y } }",
    'import "std/math"',
    "fn mean(xs) { return -1 }",  # shadows the imported mean
    "let p = Point { x: 3, y: 4 }",
    "let shape = Shape.Square(5)",
    "counter = counter + 1",
]


def _setup(session: Session) -> None:
    for entry in SETUP:
        session.eval(entry)


CHECKS = {
    "add(base, 2)": 42,
    "twice(21)": 42,
    "p.norm1()": 7,
    "counter": 2,
    "mean([1, 2, 3])": -1,
    "clamp(15, 0, 10)": 10,
    "match shape {\n  Shape.Square(s) -> { s }\n  Shape.Circle(r) -> { 0 }\n}": 5,
}


def test_save_and_restore_in_the_same_process(session: Session, tmp_path: Path) -> None:
    _setup(session)
    snap = tmp_path / "s.json"
    assert session.save(str(snap)) > 0
    other = Session()
    other.restore(str(snap))
    for src, want in CHECKS.items():
        assert other.eval(src).value == want, src
    with pytest.raises(HarnError, match="Cannot assign to immutable binding: base"):
        other.eval("base = 1")
    other.eval("counter = counter + 1")
    assert other.eval("counter").value == 3
    # entries typed after the restore are numbered after the restored ones
    keys = [e.key for e in other.entries]
    assert keys[: len(SETUP)] == [f"<repl#{i}>" for i in range(1, len(SETUP) + 1)]
    assert len(set(keys)) == len(keys)


def test_restore_replaces_the_session_and_never_reruns_entries(
    session: Session, out: Out, tmp_path: Path
) -> None:
    session.eval('println("side effect")')
    session.eval("let kept = 1")
    snap = tmp_path / "s.json"
    session.save(str(snap))
    session.eval("let extra = 2")
    out.take()
    session.restore(str(snap))
    assert out.text == ""
    assert session.eval("kept").value == 1
    with pytest.raises(HarnError, match="Undefined variable: extra"):
        session.eval("extra")


def test_restore_in_a_new_process(session: Session, tmp_path: Path) -> None:
    _setup(session)
    snap = tmp_path / "s.json"
    session.save(str(snap))
    lines = "; ".join(f"print(repr(s.eval({src!r}).value))" for src in CHECKS)
    code = (
        "from harnpy.runtime.session import Session\n"
        f"s = Session()\ns.restore({str(snap)!r})\n{lines}\n"
    )
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [repr(v) for v in CHECKS.values()]


def test_saving_a_host_object_fails_cleanly_and_the_session_goes_on(
    session: Session, tmp_path: Path
) -> None:
    session.eval("let t = spawn { sleep(10s) }")
    with pytest.raises(SnapshotError, match="running task"):
        session.save(str(tmp_path / "s.json"))
    assert not (tmp_path / "s.json").exists()
    assert session.eval("1 + 1").value == 2


def test_restoring_a_program_snapshot_is_refused(tmp_path: Path) -> None:
    from harnpy.runtime.runtime import Runtime
    from harnpy.runtime.snapshot import seal_document, snapshot, write_atomic

    rt = Runtime()
    mod = rt.load_main("<-e>", "let a = 1")
    rt.run_module(mod)
    assert rt.main_thread is not None
    path = tmp_path / "prog.json"
    write_atomic(str(path), seal_document(snapshot(rt.main_thread)))
    s = Session()
    s.eval("let mine = 5")
    with pytest.raises(SnapshotError, match="not a REPL session snapshot"):
        s.restore(str(path))
    assert s.eval("mine").value == 5


def test_a_changed_library_restores_its_saved_code_or_refuses_and_keeps_the_session(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    lib = tmp_path / "lib.harn"
    lib.write_text("fn helper() { return 1 }\n")
    monkeypatch.chdir(tmp_path)
    session.eval('import "lib"')
    assert session.eval("helper()").value == 1
    snap = tmp_path / "s.json"
    session.save(str(snap))
    lib.write_text("fn helper() { return 2 }\n")
    # :save stored the library's source beside the snapshot: the saved code runs
    back = Session()
    back.restore(str(snap))
    assert back.eval("helper()").value == 1
    # without the stored copy the changed library refuses the restore
    shutil.rmtree(tmp_path / ".harn" / "sources")
    other = Session()
    other.eval("let still = 3")
    with pytest.raises(SnapshotError, match="changed"):
        other.restore(str(snap))
    assert other.eval("still").value == 3


def test_load_file_runs_it_in_the_session_with_relative_imports(
    session: Session, out: Out, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "util.harn").write_text("pub fn triple(x) { return x * 3 }\n")
    script = tmp_path / "sub" / "main.harn"
    script.write_text('import "util"\nfn nine() { return triple(3) }\nprintln("loaded")\n')
    session.load_file(str(script))
    assert out.text == "loaded\n"
    assert session.eval("nine()").value == 9


def test_errors_in_loaded_files_name_the_file(session: Session, tmp_path: Path) -> None:
    bad = tmp_path / "bad.harn"
    bad.write_text("let fine = 1\nlet z = 1 / 0\n")
    with pytest.raises(HarnError) as ei:
        session.load_file(str(bad))
    text = session.render_error(ei.value)
    assert re.match(rf"{re.escape(str(bad))}:2:\d+: error\[E303\]: Division by zero", text)
    assert "  2 | let z = 1 / 0" in text
    assert session.eval("fine").value == 1
