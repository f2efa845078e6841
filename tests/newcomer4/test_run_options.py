"""``harnpy run`` option values that cannot work are usage errors before anything runs
(found as a new user): a mistyped ``--store`` / ``HARNPY_STORE`` URL was accepted and the
program ran and exited 0 (or failed later with a runtime ``E411`` and a stack trace at its
first waitpoint), and ``--max-depth 0`` / ``-1`` were taken silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import harnpy

UNKNOWN = (
    "store URL `bogus://x`: unknown scheme `bogus` (use sqlite:///PATH, postgresql://..., "
    "or directory:PATH)"
)


def test_a_store_url_of_an_unknown_scheme_is_refused_before_the_program_runs(
    tmp_path: Path,
) -> None:
    (tmp_path / "one.harn").write_text('println("ran")\n')
    r = harnpy("run", "--store", "bogus://x", "one.harn", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr == f"harnpy run: error: {UNKNOWN}\n"
    r = harnpy("run", "one.harn", cwd=tmp_path, env={"HARNPY_STORE": "bogus://x"})
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == f"harnpy run: error: HARNPY_STORE: {UNKNOWN}\n"
    r = harnpy("run", "--store", "sqlite:", "one.harn", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (
        2,
        "harnpy run: error: store URL `sqlite:` names no database file\n",
    )


def test_a_bad_store_url_is_refused_for_a_resume_too_and_the_snapshot_is_untouched(
    tmp_path: Path,
) -> None:
    (tmp_path / "p.harn").write_text('__snapshot_exit("s.json")\nprintln("resumed")\n')
    assert harnpy("run", "p.harn", cwd=tmp_path).returncode == 3
    before = (tmp_path / "s.json").read_bytes()
    r = harnpy("run", "--resume", "s.json", "--store", "bogus://x", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"harnpy run: error: {UNKNOWN}\n")
    assert (tmp_path / "s.json").read_bytes() == before
    assert harnpy("run", "--resume", "s.json", cwd=tmp_path).stdout == "resumed\n"


def test_good_store_urls_and_an_empty_one_still_run(tmp_path: Path) -> None:
    (tmp_path / "one.harn").write_text('println("ran")\n')
    for store in (f"sqlite://{tmp_path / 's.sqlite3'}", ""):
        r = harnpy("run", "--store", store, "one.harn", cwd=tmp_path)
        assert (r.returncode, r.stdout) == (0, "ran\n"), r.stderr


@pytest.mark.parametrize(
    ("value", "why"), [("0", "must be at least 1, not 0"), ("-1", "must be at least 1, not -1"),
                       ("ten", "not a whole number: 'ten'")],
)  # fmt: skip
def test_max_depth_must_be_a_positive_whole_number(tmp_path: Path, value: str, why: str) -> None:
    (tmp_path / "one.harn").write_text('println("ran")\n')
    r = harnpy("run", f"--max-depth={value}", "one.harn", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.splitlines()[-1] == f"harnpy run: error: argument --max-depth: {why}"


def test_max_depth_still_limits_the_frames(tmp_path: Path) -> None:
    (tmp_path / "deep.harn").write_text(
        "fn down(n) {\n  if n == 0 { return 0 }\n  return 1 + down(n - 1)\n}\nprintln(down(50))\n"
    )
    assert harnpy("run", "--max-depth", "200", "deep.harn", cwd=tmp_path).stdout == "50\n"
    r = harnpy("run", "--max-depth", "10", "deep.harn", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
