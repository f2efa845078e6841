"""``harnpy workers --help`` said ``ls`` "list waits" and ``show`` "show one wait", while
both list parked workers found in the snapshot directory even without any store (a new
user looking for a parked snapshot skipped them)."""

from __future__ import annotations

from tests.conftest import harnpy


def test_workers_help_says_ls_and_show_are_about_parked_workers() -> None:
    r = harnpy("workers", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())  # argparse wraps the help column
    assert "ls list parked workers (the snapshot directory's, and the store's waits)" in text
    assert "show show one parked worker: reason, wake conditions, snapshot" in text
    assert "list waits" not in text and "show one wait" not in text
    show = " ".join(harnpy("workers", "show", "--help").stdout.split())
    assert "id a worker id, or a prefix of it `workers ls` shows" in show
