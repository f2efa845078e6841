"""The directory backend's lock (issue 14 point 9): ``harnpy.store.directory`` imports without
``fcntl`` (non-POSIX platforms; the lock is the ``filelock`` library), and ``dir_lock`` still
excludes other processes and threads, with a lock file only its owner can read."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harnpy.store.directory import LOCK_NAME, dir_lock

REPO = Path(__file__).resolve().parents[2]


def test_the_directory_store_imports_without_fcntl() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["fcntl"] = None  # as on Windows: `import fcntl` raises ImportError
        import harnpy.store.directory
        import harnpy.lifecycle.triggers._util
        print("imported")
        """
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert p.returncode == 0 and p.stdout.strip() == "imported", p.stderr[-2000:]


def test_the_lock_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        with dir_lock(str(tmp_path / "w.json")):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / LOCK_NAME).stat().st_mode) == 0o600


def test_the_lock_excludes_another_process(tmp_path: Path) -> None:
    held = tmp_path / "held"
    code = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from harnpy.store.directory import dir_lock
        with dir_lock({str(tmp_path / "w.json")!r}):
            Path({str(held)!r}).write_text("1")
            time.sleep(1.0)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while not held.exists():
            assert time.monotonic() < deadline, "the child never took the lock"
            time.sleep(0.01)
        t0 = time.monotonic()
        with dir_lock(str(tmp_path / "other.json")):  # same directory: same lock
            waited = time.monotonic() - t0
    finally:
        child.wait(timeout=30)
    assert waited > 0.5, f"took the lock after {waited:.2f} s while another process held it"


def test_the_lock_excludes_another_thread(tmp_path: Path) -> None:
    inside = 0
    worst = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, worst
        for _ in range(20):
            with dir_lock(str(tmp_path / "w.json")):
                with guard:
                    inside += 1
                    worst = max(worst, inside)
                time.sleep(0.001)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert worst == 1


def test_a_missing_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        with dir_lock(str(tmp_path / "nope" / "w.json")):
            pass


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_claim_file_that_is_a_fifo_counts_as_held_instead_of_blocking(tmp_path: Path) -> None:
    from harnpy.store import ClaimRefused
    from harnpy.store.directory import CLAIM_SUFFIX, DirectoryStore
    from tests.store.test_checkpoint_store import body, meta

    d = tmp_path / "workers"
    s = DirectoryStore(str(d))
    s.put_checkpoint("w1", body(), meta())
    os.mkfifo(d / f"w1.json{CLAIM_SUFFIX}")
    result: dict[str, object] = {}

    def claim() -> None:
        try:
            s.claim_checkpoint("w1", "A")
            result["got"] = "claimed"
        except ClaimRefused as e:
            result["got"] = e.reason

    t = threading.Thread(target=claim, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "reading the claim file blocked on a FIFO"
    assert result["got"] == "busy"
