"""``harnpy worker`` replicas for the chaos tests: started in their own process group (a
SIGKILL of the group takes a replica's resume child with it), logging to
``replica-<n>.log``, killed and stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def start_replica(
    cwd: Path, env: dict[str, str], n: int, lease_ms: int = 2000
) -> subprocess.Popen[bytes]:
    """Replica number ``n``: ``harnpy worker --poll-ms 200 --lease-ms LEASE_MS`` in ``cwd``."""
    log = open(cwd / f"replica-{n}.log", "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "harnpy", "worker", "--poll-ms", "200", "--lease-ms",
         str(lease_ms)],
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,  # killpg takes its resume child with it
    )  # fmt: skip


def sigkill(replica: subprocess.Popen[bytes]) -> None:
    """SIGKILL the replica's process group and reap it."""
    try:
        os.killpg(replica.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    replica.wait()


def stop_replicas(replicas: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every live replica; SIGKILL the group of one that has not ended in 30 s."""
    for r in replicas:
        if r.poll() is None:
            r.send_signal(signal.SIGTERM)
    for r in replicas:
        try:
            r.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sigkill(r)
