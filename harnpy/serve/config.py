"""Settings of one ``harnpy serve`` replica."""

from __future__ import annotations

import os
import socket

import attrs

__all__ = ["ServeConfig", "default_replica_id"]


def default_replica_id() -> str:
    """``<hostname>-<pid>``: unique among live replicas."""
    return f"{socket.gethostname()}-{os.getpid()}"


@attrs.define
class ServeConfig:
    """What ``harnpy serve`` options set.

    Attributes:
        app_path: the application file.
        store_url: the store (a URL or ``default``).
        host / port: where to listen (``127.0.0.1:8080`` by default).
        replica_id: the lease holder name of this replica.
        concurrency: runs executed at once by this replica.
        wait_ms: how long ``POST /v1/responses`` waits for a run to finish before it
            answers ``202 in_progress``.
        lease_ms: the lease of a run claim (renewed every third of it; a replica that
            stops renewing loses its runs to another after this long).
        poll_ms: how often an idle replica looks for runnable runs.
        grace_ms: on SIGTERM, how long running runs may take to finish before they are
            put back for another replica.
        max_body_bytes: the largest request body accepted.
        keep_raw_model_metadata: keep raw model answers in completion snapshots.
    """

    app_path: str
    store_url: str = "default"
    host: str = "127.0.0.1"
    port: int = 8080
    replica_id: str = attrs.field(factory=default_replica_id)
    concurrency: int = 4
    wait_ms: int = 30_000
    lease_ms: int = 15_000
    poll_ms: int = 200
    grace_ms: int = 10_000
    max_body_bytes: int = 1024 * 1024
    keep_raw_model_metadata: bool = False
