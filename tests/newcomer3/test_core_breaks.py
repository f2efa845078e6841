"""Core language, CLI and REPL bugs found by a newcomer probing harnpy (xfail until fixed).

Each test asserts the behaviour the spec (``../shared/spec/language.md``) or a reasonable
user expects; it is marked ``xfail(strict=True)`` while harnpy still gets it wrong.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from harnpy.runtime.runtime import Runtime

REPO = Path(__file__).resolve().parent.parent.parent


def run(source: str) -> str:
    """Run ``source`` in-process; return what it printed."""
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)  # type: ignore[arg-type]
    rt.run_module(rt.load_main("<test>", source))
    return out.getvalue()


def cli(*args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harnpy", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=20,
        cwd=cwd or REPO,
    )


# ------------------------------------------------------------------ values leaking Python names


def test_struct_type_value_does_not_leak_python_class_name() -> None:
    out = run("struct Pt { x: int }\nprintln(Pt)\nprintln(type_of(Pt))\n")
    shown, kind = out.splitlines()
    assert "StructType" not in shown
    # the declaration registers a constructor function (spec 3.14): it is shown and typed
    # like the reference's constructor closure (`fn Pt(__fields)`), not as a struct name
    assert shown == "<fn(__fields)>"
    assert kind == "closure"


def test_enum_type_value_does_not_leak_python_class_name() -> None:
    out = run("enum Col { R, G(v) }\nprintln(Col)\nprintln(type_of(Col))\n")
    shown, kind = out.splitlines()
    assert "_EnumNamespace" not in shown
    assert shown == "<enum Col>"
    assert kind == "enum"


# ------------------------------------------------------------------ callables


def test_struct_constructor_works_as_map_callback() -> None:
    src = (
        "struct Pt { x: int }\nlet f = Pt\nprintln(f({x: 1}))\nprintln([{x: 1}, {x: 2}].map(Pt))\n"
    )
    assert run(src) == "Pt {x: 1}\n[Pt {x: 1}, Pt {x: 2}]\n"


def test_struct_constructor_works_as_iter_map_callback() -> None:
    src = "struct Pt { x: int }\nprintln(iter([{x: 1}]).map(Pt).to_list())\n"
    assert run(src) == "[Pt {x: 1}]\n"


# ------------------------------------------------------------------ typed parameters


def test_int_parameter_rejects_float_at_run_time() -> None:
    # the static checker rejects f(1.5); a float that only shows up at run time slips through
    src = (
        "fn f(a: int) { return a }\n"
        'fn runtime_value() { return json_parse("1.5") }\n'
        "println(try { f(runtime_value()) })\n"
    )
    out = run(src)
    assert out.startswith("Result.Err(")
    assert "parameter 'a' expected int, got float" in out


# ------------------------------------------------------------------ resource limits


def test_huge_string_repeat_is_a_catchable_harn_error() -> None:
    proc = cli("run", "-e", 'println(try { "ab" * 100000000000 })\nprintln("survived")')
    assert "E999" not in proc.stderr
    assert "internal error" not in proc.stderr
    assert proc.stdout.startswith("Result.Err(")
    assert proc.stdout.endswith("survived\n")
    assert proc.returncode == 0


def test_huge_range_to_list_is_a_catchable_harn_error() -> None:
    proc = cli("run", "-e", "println(try { (1 to 100000000000).to_list() })")
    assert "E999" not in proc.stderr
    assert proc.stdout.startswith("Result.Err(")


def test_overlong_repeat_is_a_catchable_harn_error() -> None:
    proc = cli("run", "-e", 'println(try { "ab".repeat(9223372036854775807) })')
    assert "OverflowError" not in proc.stderr
    assert "E999" not in proc.stderr
    assert proc.stdout.startswith("Result.Err(")
    assert proc.returncode == 0


def test_range_length_stays_within_i64() -> None:
    out = run("let n = len(0 to 9223372036854775807)\nprintln(n)\n")
    n = int(out.strip())
    assert -(2**63) <= n < 2**63


# ------------------------------------------------------------------ snapshots


def test_snapshot_in_callback_error_names_a_location(tmp_path: Path) -> None:
    snap = tmp_path / "s.json"
    src = f'let xs = [1, 2].map({{ x -> __snapshot_exit("{snap}") }})\n'
    proc = cli("run", "-e", src)
    assert proc.returncode == 1
    assert "cannot snapshot inside the builtin `map`" in proc.stderr
    assert "(at )" not in proc.stderr
    assert "(called at <-e>:1:10)" in proc.stderr  # where the builtin was called


def test_repl_snapshot_exit_is_usable_or_refused(tmp_path: Path) -> None:
    snap = tmp_path / "r.json"
    cli("repl", stdin=f'let x = 1\n__snapshot_exit("{snap}")\n')
    if not snap.exists():
        return  # refusing to snapshot in the REPL is fine
    resumed = cli("run", "--resume", str(snap))
    restored = cli("repl", "--strict", stdin=f":restore {snap}\nx\n")
    assert resumed.returncode == 0 or (restored.returncode == 0 and restored.stdout == "1\n")


# ------------------------------------------------------------------ harnpy test conformance


def test_conformance_runner_handles_exit_builtin(tmp_path: Path) -> None:
    (tmp_path / "ex.harn").write_text('pipeline main() {\n  println("x")\n  exit(0)\n}\n')
    (tmp_path / "ex.expected").write_text("x\n")
    assert cli("run", str(tmp_path / "ex.harn")).stdout == "x\n"  # plain run is fine
    proc = cli("test", "conformance", str(tmp_path), "-v")
    assert "internal error" not in proc.stdout + proc.stderr
    assert "HarnExit" not in proc.stdout + proc.stderr
    assert proc.returncode == 0


# ------------------------------------------------------------------ REPL


def test_repl_doc_shows_block_doc_comment(tmp_path: Path) -> None:
    f = tmp_path / "d.harn"
    f.write_text("/** Triples a number. */\nfn tri(x) { return x * 3 }\n")
    proc = cli("repl", stdin=f":load {f}\n:doc tri\n")
    assert "Triples a number." in proc.stdout
