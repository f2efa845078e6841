"""Chaos: three replicas on PostgreSQL behind a round-robin client; runs that park on a
waitpoint and are completed from outside, while a random replica is SIGKILLed about every
two seconds and restarted. Every run must reach ``completed`` exactly once, every poll must
be answered by some live replica, no response may be lost or duplicated.

Runs only when ``HARNPY_CHAOS_RUNS`` sets the number of runs (40 takes about a minute on an
idle machine): restarting replicas every two seconds is too heavy for the default suite.
``.ci/run`` runs it once at the issue's full scale, 300 runs. Prints the counts and the
p50 / p99 poll latency.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from harnpy.store import open_store
from tests.serve.servers import Server, auth, start_server

# durable waitpoints (std/waitpoint) are what a run parks on
pytest.importorskip("harnpy.lifecycle.waitpoints")

APP = Path(__file__).resolve().parent / "apps" / "approval.harn"


class Fleet:
    """The live replicas; ``call`` retries on the next one when a replica is gone."""

    def __init__(self, store: str, n: int) -> None:
        self.store = store
        self.lock = threading.Lock()
        self.retired: list[Server] = []  # killed replicas, kept for their logs
        self.servers = [self._start(i) for i in range(n)]
        self.turn = 0
        self.kills = 0
        self.failovers = 0

    def _start(self, i: int) -> Server:
        return start_server(
            APP,
            self.store,
            "--lease-ms",
            "1500",
            "--log-level",
            "info",
            "--replica-id",
            f"chaos-{i}-{uuid.uuid4().hex[:4]}",
        )

    def call(self, method: str, path: str, **kw: object) -> httpx.Response:
        deadline = time.monotonic() + 60
        while True:
            with self.lock:
                self.turn += 1
                s = self.servers[self.turn % len(self.servers)]
            try:
                with httpx.Client(base_url=s.url, timeout=20) as c:
                    r = c.request(method, path, **kw)  # type: ignore[arg-type]
                if r.status_code < 500:
                    return r
            except httpx.HTTPError:
                pass
            with self.lock:
                self.failovers += 1
            if time.monotonic() > deadline:
                raise AssertionError(f"no live replica answered {method} {path}")
            time.sleep(0.05)

    def kill_one(self) -> None:
        with self.lock:
            i = random.randrange(len(self.servers))
            victim = self.servers[i]
        victim.kill()
        self.retired.append(victim)
        fresh = self._start(i)
        with self.lock:
            self.servers[i] = fresh
            self.kills += 1

    def logs_about(self, needle: str) -> str:
        """Every replica's stderr lines (killed ones too) that mention ``needle``."""
        return "".join(
            line for s in [*self.retired, *self.servers] for line in list(s.lines) if needle in line
        )

    def stop(self) -> None:
        for s in self.servers:
            s.kill()


def stuck_state(store_url: str, run_id: str, fleet: Fleet) -> str:
    """What the store and the replicas' logs say about a run that never completed."""
    st = open_store(store_url)
    try:
        run = st.run_by_id(run_id)
        out = [f"run {run_id}: {run!r}"]
        wid = run.worker_id if run is not None else None
        wid = wid or f"prog-{run_id}"
        out.append(f"checkpoint {wid}: {st.checkpoint_info(wid)!r}")
        out.append(f"waitpoints: {st.waitpoints_of(wid)!r}")
        out.append(f"events: {[e.event_type for e in st.run_events(run_id, 0, 1000)]}")
    finally:
        st.close()
    out.append("logs:\n" + fleet.logs_about(run_id))
    return "\n".join(out)


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("HARNPY_CHAOS_RUNS"), reason="set HARNPY_CHAOS_RUNS=N to run the chaos test"
)
def test_chaos_replicas_killed_while_runs_park_and_complete(pg_url: str) -> None:
    from harnpy.lifecycle.waitpoints import complete_waitpoint

    n = int(os.environ["HARNPY_CHAOS_RUNS"])
    fleet = Fleet(pg_url, 3)
    stop = threading.Event()

    def killer() -> None:
        while not stop.wait(2.0):
            try:
                fleet.kill_one()
            except RuntimeError:  # a replica that did not come back: the test reports it
                if not stop.is_set():
                    raise

    k = threading.Thread(target=killer, daemon=True)
    try:
        k.start()
        runs: list[tuple[str, str, int]] = []
        for i in range(n):
            wp = f"chaos-{uuid.uuid4().hex[:10]}"
            r = fleet.call(
                "POST",
                "/v1/responses",
                json={"entry": "approve", "input": {"waitpoint": wp, "note": i},
                      "idempotencyKey": f"chaos-{wp}", "background": True},
                headers=auth("alice"),
            )  # fmt: skip
            assert r.status_code in (200, 202), r.text
            runs.append((r.json()["id"], wp, i))
        for _rid, wp, i in runs:  # completed from outside: half over HTTP, half directly
            if i % 2:
                r = fleet.call("POST", f"/v1/waitpoints/{wp}/complete", json={"value": i},
                               headers=auth("alice"))  # fmt: skip
                assert r.status_code in (200, 404, 409), r.text
                if r.status_code == 404:  # the run has not created its waitpoint yet
                    while not complete_waitpoint(pg_url, wp, i):
                        time.sleep(0.1)
            else:
                deadline = time.monotonic() + 60
                while not complete_waitpoint(pg_url, wp, i):
                    assert time.monotonic() < deadline, f"waitpoint {wp} never opened"
                    time.sleep(0.1)
        latencies: list[float] = []
        pending = {rid: i for rid, _, i in runs}
        deadline = time.monotonic() + 240 + 2 * n  # about a run a second when replicas die
        while pending and time.monotonic() < deadline:
            for rid in list(pending):
                t0 = time.perf_counter()
                r = fleet.call("GET", f"/v1/responses/{rid}", headers=auth("alice"))
                latencies.append(time.perf_counter() - t0)
                assert r.status_code == 200, r.text
                body = r.json()
                assert body["status"] in ("in_progress", "completed"), (
                    f"{body}\n{stuck_state(pg_url, rid, fleet)}"
                )
                if body["status"] == "completed":
                    assert body["output"] == {"approved": pending[rid], "note": pending[rid]}
                    del pending[rid]
            time.sleep(0.2)
        stop.set()
        assert not pending, f"{len(pending)} runs never completed:\n" + "\n".join(
            stuck_state(pg_url, rid, fleet) for rid in pending
        )
        st = open_store(pg_url)
        try:
            mine = [r for r in st.list_runs(owner_user="alice", limit=100_000)
                    if (r.idempotency_key or "").startswith("chaos-")]  # fmt: skip
            assert len(mine) == n  # no duplicate response
            for rid, _, _ in runs:
                kinds = [e.event_type for e in st.run_events(rid, 0, 100_000)]
                assert kinds.count("result") == 1, (rid, kinds)
        finally:
            st.close()
        lat = sorted(latencies)
        p50 = lat[len(lat) // 2] * 1000
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
        print(
            f"\nchaos: {n} runs completed exactly once, {fleet.kills} replica kills, "
            f"{fleet.failovers} failed-over requests, {len(lat)} polls, "
            f"poll p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        )
    finally:
        stop.set()
        k.join(60)
        fleet.stop()
