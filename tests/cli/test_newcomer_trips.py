"""Newcomer trips of issue 14, end to end: resuming a worker prints one line in the
command's own prefix style; ``harnpy test`` shows a failing test's message once; a string
whose interpolation holds a string with a brace (``"${ "{" }"``) is the string it looks
like — in ``run`` and in the REPL, which reports an error's position once."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import harnpy

WORKER = """pipeline main() {
  const result = agent_loop("go", nil, {provider: "mock", max_iterations: 5})
  println("status: ${result.status}")
}
"""

REPLIES = (
    '{"tool_calls": [{"id": "p1", "name": "agent_await_resumption", '
    '"arguments": {"reason": "wait for me"}}]}\n'
    '{"text": "all done"}\n'
)


ENV = {"HARN_WORKER_STATE_DIR": ""}  # the default: .harn/workers in the working directory


def _parked_worker(tmp_path: Path) -> str:
    (tmp_path / "w.harn").write_text(WORKER)
    (tmp_path / "replies.jsonl").write_text(REPLIES)
    env = ENV
    r = harnpy("run", "--llm-mock", "replies.jsonl", "w.harn", cwd=tmp_path, env=env)
    assert r.returncode == 0 and "status: suspended" in r.stdout, r.stderr
    (snap,) = (tmp_path / ".harn" / "workers").glob("worker_*.json")
    return str(snap.relative_to(tmp_path))


def test_resuming_a_worker_says_each_outcome_in_one_line_of_one_prefix_style(
    tmp_path: Path,
) -> None:
    snap = _parked_worker(tmp_path)
    done = harnpy("run", "--resume", snap, cwd=tmp_path, env=ENV)
    assert (done.returncode, done.stdout) == (0, "all done\n"), done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("harnpy run --resume: worker ") and line.endswith(" completed")
    again = harnpy("run", "--resume", snap, cwd=tmp_path, env=ENV)
    assert again.returncode == 1 and again.stdout == ""
    (line,) = again.stderr.splitlines()
    assert line.startswith("harnpy run --resume: error[HARN-SUS-003]: worker ")
    assert "is not suspended (status=completed)" in line
    by_id = harnpy("run", "--resume", Path(snap).stem, cwd=tmp_path, env=ENV)
    assert by_id.returncode == 1
    (line,) = by_id.stderr.splitlines()
    assert line.startswith("harnpy run --resume: error[HARN-SUS-003]: ")


def test_harnpy_test_shows_a_failing_tests_message_once(tmp_path: Path) -> None:
    (tmp_path / "test_math.harn").write_text(
        "pipeline test_ok() {\n  assert(1 + 1 == 2)\n}\n"
        'pipeline test_bad() {\n  assert_eq(1 + 1, 3, "math is broken")\n}\n'
    )
    r = harnpy("test", str(tmp_path))
    assert r.returncode == 1
    assert r.stdout.count("math is broken") == 2  # the FAIL line and the caret line's source
    fail = [ln for ln in r.stdout.splitlines() if ln.startswith("FAIL")]
    assert len(fail) == 1 and fail[0].endswith("error[E310]: Thrown: math is broken")
    assert r.stdout.count("error[E310]") == 1
    assert "  5 |   assert_eq(1 + 1, 3" in r.stdout  # the rest of the diagnostic is kept
    assert r.stdout.rstrip().endswith("1 passed, 1 failed")


def test_a_string_inside_an_interpolation_may_hold_braces_and_quotes(tmp_path: Path) -> None:
    prog = tmp_path / "s.harn"
    prog.write_text(
        'let u = "${ "{" }"\nprintln(u)\nprintln("${ "}" }")\n'
        'println("a ${ "b ${ "}" } c" } d")\nlet d = {"}": 1}\nprintln("${d["}"]}")\n'
        'println("${r"{"}")\nprintln("""x ${ "{" } y""")\nprintln("${len([1, 2])}")\n'
    )
    r = harnpy("run", str(prog))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["{", "}", "a b } c d", "1", "{", "x { y", "2"]


def test_a_plain_string_still_ends_with_its_line(tmp_path: Path) -> None:
    prog = tmp_path / "bad.harn"
    prog.write_text('let v = "${ "a" \nprintln(v)\n')
    r = harnpy("run", str(prog))
    assert r.returncode == 2
    assert "error[E102]: Unterminated string at 1:9" in r.stderr  # Harn's message (spec 1.7)


def test_the_repl_evaluates_the_entry_and_says_an_errors_position_once() -> None:
    r = harnpy("repl", input='let u = "${ "{" }"\nu\n"${ "}" + "x" }"\nlet v = "abc\n"ok"\n')
    assert r.returncode == 0
    assert r.stdout == '"{"\n"}x"\n"ok"\n'
    assert r.stderr.splitlines()[0] == "<repl#4>:1:9: error[E102]: Unterminated string"
