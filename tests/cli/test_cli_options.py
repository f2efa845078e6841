"""``harnpy run`` option parsing end to end (issue 14 point 1): the program's own arguments
come only after ``--``; an option after the file is an option, an unknown one is refused
with exit status 2; ``--help`` shows defaults."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import harnpy

ARGV = "println(json_stringify(argv()))\n"


def _prog(tmp_path: Path, source: str = ARGV) -> Path:
    p = tmp_path / "prog.harn"
    p.write_text(source)
    return p


def test_arguments_after_double_dash_reach_the_program_verbatim(tmp_path: Path) -> None:
    prog = _prog(tmp_path)
    r = harnpy("run", str(prog), "--", "a", "--llm-mock", "x", "--", "-e")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == ["a", "--llm-mock", "x", "--", "-e"]
    r = harnpy("run", "-e", ARGV, "--", "1", "2")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == ["1", "2"]


def test_an_option_after_the_file_is_parsed_as_an_option(tmp_path: Path) -> None:
    """The issue's case: ``run approval.harn --llm-mock replies.jsonl`` must use the mock
    file, not hand the flag to the script."""
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps({"text": "from the mock file"}) + "\n")
    prog = _prog(
        tmp_path,
        'println(json_stringify(argv()))\nprintln(llm_call("hi", nil, {provider: "mock"}).text)\n',
    )
    r = harnpy("run", str(prog), "--llm-mock", str(replies))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[]", "from the mock file"]


def test_a_bad_option_value_after_the_file_is_checked_like_one_before_it(tmp_path: Path) -> None:
    prog = _prog(tmp_path)
    r = harnpy("run", str(prog), "--llm-mock", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2
    assert "--llm-mock" in r.stderr and "missing.jsonl" in r.stderr
    assert r.stdout == ""


def test_an_unknown_option_after_the_file_is_refused(tmp_path: Path) -> None:
    prog = _prog(tmp_path)
    r = harnpy("run", str(prog), "--no-such-flag")
    assert r.returncode == 2
    assert "harnpy run: error: unrecognized arguments: --no-such-flag" in r.stderr
    assert f"an option of the program goes after `--`: harnpy run {prog} -- --no-such-flag" in (
        r.stderr
    )
    assert r.stdout == ""  # the program did not run


def test_a_misspelled_option_gets_a_did_you_mean(tmp_path: Path) -> None:
    prog = _prog(tmp_path)
    r = harnpy("run", str(prog), "--llm-mok", "x.jsonl")
    assert r.returncode == 2 and r.stdout == ""
    assert "did you mean `--llm-mock` for `--llm-mok`?" in r.stderr


def test_a_harn_file_given_as_the_command_gets_the_run_hint(tmp_path: Path) -> None:
    prog = _prog(tmp_path)
    r = harnpy(str(prog))
    assert r.returncode == 2 and r.stdout == ""
    assert f"to run a program: harnpy run {prog}" in r.stderr


def test_bare_words_after_the_file_are_refused_with_the_double_dash_hint(tmp_path: Path) -> None:
    prog = _prog(tmp_path)
    r = harnpy("run", str(prog), "x", "y")
    assert r.returncode == 2
    assert "unrecognized arguments: x y" in r.stderr
    assert f"harnpy run {prog} -- x y" in r.stderr
    assert r.stdout == ""


def test_options_are_not_abbreviated(tmp_path: Path) -> None:
    prog = _prog(tmp_path)
    r = harnpy("run", str(prog), "--llm-m", "x.jsonl")
    assert r.returncode == 2 and "unrecognized arguments: --llm-m" in r.stderr


def test_code_and_file_together_are_refused(tmp_path: Path) -> None:
    prog = _prog(tmp_path)
    r = harnpy("run", "-e", "println(1)", str(prog))
    assert r.returncode == 2
    assert "give either FILE" in r.stderr and "-- " in r.stderr
    assert r.stdout == ""


def test_resume_refuses_script_arguments(tmp_path: Path) -> None:
    r = harnpy("run", "--resume", str(tmp_path / "s.json"), "--", "a")
    assert r.returncode == 2
    assert "remove `-- a`" in r.stderr


def test_help_shows_defaults() -> None:
    from harnpy.runtime.runtime import DEFAULT_MAX_DEPTH

    r = harnpy("run", "--help")
    assert r.returncode == 0
    assert f"(default: {DEFAULT_MAX_DEPTH})" in r.stdout
    assert "go after `--`" in " ".join(r.stdout.split())
    r = harnpy("worker", "--help")
    assert r.returncode == 0
    assert "(default: 1000)" in r.stdout  # --poll-ms
