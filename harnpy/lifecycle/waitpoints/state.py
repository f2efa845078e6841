"""Per-runtime waitpoint state: the run id, submission-key counters, in-memory waitpoints,
the store (when one is configured) and the claim this process holds on its run's
checkpoint.

What survives a snapshot (runtime-state provider ``waitpoints``): ``run_id``, the
per-call-site counters behind submission keys and the in-memory waitpoints (their values
are Harn values, encoded with the program's heap). The store handle, the claim and the
in-memory waiters are process state and are not saved.

Submission keys (issue 10 point 3): :func:`site_key` derives ``<run id>:<site>:<n>`` from
the run, the Harn frames on the stack (module, function, resume point of each, bottom to
top) and how many times this site was reached in the run. The counters are snapshot data,
so a run resumed from its checkpoint — or retried from it after a crash — derives the same
keys in the same order, and ``waitpoint_create`` returns the waitpoint it created the
first time instead of creating another.
"""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harnpy.runtime.extensions import register_state

if TYPE_CHECKING:
    from harnpy.store import StoreURL
    from harnpy.store.sql import SqlStore

__all__ = [
    "CHECKPOINT_LEASE_MS",
    "RUN_ID_ENV",
    "LeaseKeeper",
    "WaitpointState",
    "checkpoint_lease_ms",
    "site_key",
    "state_of",
]

#: Environment variable naming the run id of ``harnpy run`` (a host such as ``harnpy
#: serve`` sets it so submission keys and the checkpoint id follow its run).
RUN_ID_ENV = "HARNPY_RUN_ID"

#: The lease of a claim on a store checkpoint (ms): a resume of a parked program or of a
#: parked worker. Renewed every third of it while the resume runs, so a resumer that dies
#: gives the park back within this long (``HARNPY_CHECKPOINT_LEASE_MS`` overrides it, at
#: least 300; ``harnpy worker --lease-ms`` sets it for the programs a replica resumes).
CHECKPOINT_LEASE_MS = 60_000


def checkpoint_lease_ms() -> int:
    """The lease of this process's claims on store checkpoints (ms,
    :data:`CHECKPOINT_LEASE_MS` unless ``HARNPY_CHECKPOINT_LEASE_MS`` is an integer; at
    least 300)."""
    raw = os.environ.get("HARNPY_CHECKPOINT_LEASE_MS", "")
    try:
        return max(300, int(raw)) if raw.strip() else CHECKPOINT_LEASE_MS
    except ValueError:
        return CHECKPOINT_LEASE_MS


class LeaseKeeper:
    """Renews a checkpoint claim's lease from a daemon thread every ``lease_ms / 3`` ms
    until :meth:`stop`; ``lost`` is set when a renewal found the claim gone (another
    process took the work over)."""

    def __init__(self, store: SqlStore, worker_id: str, fence: int, lease_ms: int) -> None:
        self.store = store
        self.worker_id = worker_id
        self.fence = fence
        self.lease_ms = lease_ms
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="harnpy-lease", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.lease_ms / 3000.0):
            try:
                if not self.store.renew_checkpoint_claim(self.worker_id, self.fence, self.lease_ms):
                    self.lost = True
                    return
            except Exception:  # noqa: BLE001 - a transient store error: try again next time
                continue

    def stop(self) -> None:
        """Stop renewing (the claim is committed or given back)."""
        self._stop.set()


class WaitpointState:
    """The waitpoint state of one runtime (module docstring)."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.run_id: str | None = None
        self.counters: dict[str, int] = {}
        #: in-memory waitpoints by id (script-side dicts, see model.record_value)
        self.memory: dict[str, dict[str, Any]] = {}
        self.by_key: dict[str, str] = {}
        #: in-memory waits blocked on each waitpoint id: callables re-checking readiness
        self.waiters: dict[str, list[Callable[[], None]]] = {}
        self._store: SqlStore | None = None
        self._store_url: StoreURL | None = None
        self._store_resolved = False
        #: the checkpoint of this run in the store (``prog-<run id>``) once it parked
        self.checkpoint_id: str | None = None
        #: the fence of the claim this process holds on that checkpoint (it resumed it)
        self.fence: int | None = None
        self.keeper: LeaseKeeper | None = None
        #: the lease fence of the served run executing this program (``harnpy serve``): a
        #: first park commits only while that claim is current (runtime-only, not saved)
        self.run_fence: int | None = None
        self.settled = False
        #: the "nothing can complete this wait" warning was written (once per process)
        self.hinted = False
        #: the transcript rows of that checkpoint this process committed or restored
        #: (:mod:`harnpy.lifecycle.waitpoints.park_rows`), or None
        self.rows: Any = None

    # ---- identity

    def ensure_run_id(self) -> str:
        """This run's id: restored from the snapshot, else ``HARNPY_RUN_ID``, else new."""
        if self.run_id is None:
            env = os.environ.get(RUN_ID_ENV, "").strip()
            self.run_id = env or uuid.uuid4().hex[:20]
        return self.run_id

    def worker_id(self) -> str:
        """The checkpoint id of this run in the store."""
        return self.checkpoint_id or f"prog-{self.ensure_run_id()}"

    # ---- the store

    def store_url(self) -> StoreURL | None:
        """The SQL store this runtime's waitpoints live in (``--store`` of the command,
        else ``HARNPY_STORE``), or None: in memory (no store, or a ``directory`` store).

        Raises:
            StoreError: an unknown URL scheme.
        """
        if not self._store_resolved:
            from harnpy.store import configured_store_url

            url = configured_store_url(getattr(self.runtime, "store_option", None))
            self._store_url = url if url is not None and url.kind != "directory" else None
            self._store_resolved = True
        return self._store_url

    def store(self) -> SqlStore | None:
        """The opened store (see :meth:`store_url`), or None.

        Raises:
            StoreError: the store cannot be opened (one line naming it).
        """
        if self._store is None:
            url = self.store_url()
            if url is None:
                return None
            from harnpy.lifecycle.waitpoints.stores import shared_store

            self._store = shared_store(url)
        return self._store

    def use_store(self, store: SqlStore) -> None:
        """Use ``store`` (a resumer that opened it already)."""
        self._store = store
        self._store_url = store.url
        self._store_resolved = True

    def release(self) -> None:
        """Stop the lease renewal (end of the run, or the claim was given back)."""
        if self.keeper is not None:
            self.keeper.stop()
            self.keeper = None


def state_of(runtime: Any) -> WaitpointState:
    """The :class:`WaitpointState` of ``runtime`` (created on first use)."""
    st = getattr(runtime, "waitpoint_state", None)
    if st is None:
        st = WaitpointState(runtime)
        runtime.waitpoint_state = st
    return st  # type: ignore[no-any-return]


def _frame_site(thread: Any) -> str:
    parts: list[str] = []
    fr = thread.frame
    while fr is not None:
        if not fr.native:
            code = fr.code
            mod = code.module
            parts.append(f"{os.path.basename(mod.path)}:{code.name}:{code.id}:{fr.pc}")
        fr = fr.parent
    parts.reverse()
    return hashlib.sha256("/".join(parts).encode("utf-8")).hexdigest()[:16]


def site_key(thread: Any, kind: str) -> str:
    """The replay-stable key of this call (module docstring): ``<run id>:<kind>:<site>:<n>``
    where ``site`` hashes the stack's frames and ``n`` counts the calls of this site."""
    st = state_of(thread.runtime)
    run = st.ensure_run_id()
    site = f"{kind}:{_frame_site(thread)}"
    n = st.counters.get(site, 0) + 1
    st.counters[site] = n
    return f"{run}:{site}:{n}"


# ---- the runtime-state provider


def _save(thread: Any) -> Any:
    st = getattr(thread.runtime, "waitpoint_state", None)
    if st is None or st.run_id is None:
        return None
    return {
        "run_id": st.run_id,
        "counters": dict(st.counters),
        "memory": [dict(v) for v in st.memory.values()],
    }


def _load(thread: Any, data: Any) -> Callable[[], None]:
    if type(data) is not dict or type(data.get("run_id")) is not str:
        raise ValueError("the waitpoints section has no run id")
    counters = data.get("counters")
    memory = data.get("memory")
    if type(counters) is not dict or not all(type(v) is int for v in counters.values()):
        raise ValueError("the waitpoint counters are not a dict of ints")
    if type(memory) is not list or not all(
        type(m) is dict and type(m.get("id")) is str for m in memory
    ):
        raise ValueError("the in-memory waitpoints are not a list of waitpoints")

    def apply() -> None:
        st = state_of(thread.runtime)
        st.run_id = data["run_id"]
        st.counters = {str(k): int(v) for k, v in counters.items()}
        st.memory = {m["id"]: m for m in memory}
        st.by_key = {m["key"]: m["id"] for m in memory if type(m.get("key")) is str}

    return apply


register_state("waitpoints", _save, _load)
