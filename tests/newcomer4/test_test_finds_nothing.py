"""``harnpy test`` in a directory without tests printed ``0 passed, 0 failed`` and nothing
else (found as a new user: a misplaced ``.expected`` file looks like a green run); it now
warns on stderr what a test looks like. The exit status is unchanged (0: nothing failed)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import harnpy


def test_no_tests_found_is_a_warning_naming_what_a_test_is(tmp_path: Path) -> None:
    (tmp_path / "helper.harn").write_text('println("not a test")\n')
    r = harnpy("test", ".", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "0 passed, 0 failed\n")
    assert r.stderr == (
        "harnpy test: warning: no tests found under .: a test is NAME.harn with NAME.expected "
        "or NAME.error beside it, or a `pipeline test_*()`\n"
    )
    r = harnpy("test", "conformance", ".", cwd=tmp_path)
    assert r.returncode == 0
    assert r.stderr.startswith("harnpy test: warning: no conformance cases found under .: ")


def test_a_directory_with_a_test_says_nothing_more(tmp_path: Path) -> None:
    (tmp_path / "a.harn").write_text('println("hi")\n')
    (tmp_path / "a.expected").write_text("hi\n")
    r = harnpy("test", ".", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "1 passed, 0 failed\n", "")
