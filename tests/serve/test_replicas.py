"""Several ``harnpy serve`` replicas on one store are equal: each answers for every run, and
a killed replica's runs finish on another once its lease expires."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harnpy.store import open_store
from tests.serve.servers import auth, start_server, wait_status

APP = Path(__file__).resolve().parent / "apps" / "app.harn"


def test_a_killed_replicas_run_finishes_on_another(store_url: str) -> None:
    a = start_server(APP, store_url, "--lease-ms", "1500", "--replica-id", "replica-a")
    b = None
    try:
        rid = a.http.post(
            "/v1/responses",
            json={"entry": "slow", "input": {"steps": 30}, "background": True},
            headers=auth("alice"),
        ).json()["id"]
        store = open_store(store_url)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                rec = store.run_by_id(rid)
                if rec is not None and rec.lease_holder == "replica-a":
                    break
                time.sleep(0.05)
            else:
                pytest.fail("replica a never claimed the run")
            fence = rec.lease_fence
            a.kill()  # SIGKILL: no chance to hand the run back
            b = start_server(APP, store_url, "--lease-ms", "1500", "--replica-id", "replica-b")
            done = wait_status(b, rid, "alice", ("completed",), timeout=60)
            assert done["output"] == "slept 30"
            final = store.run_by_id(rid)
            assert final is not None and final.lease_fence > fence  # taken over, fenced
            kinds = [e.event_type for e in store.run_events(rid)]
            assert kinds.count("result") == 1  # committed exactly once
        finally:
            store.close()
    finally:
        a.kill()
        if b is not None:
            b.kill()


def test_three_replicas_answer_for_every_run(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 's.sqlite3'}"
    servers = [start_server(APP, store) for _ in range(3)]
    try:
        ids = []
        for i in range(9):
            s = servers[i % 3]
            r = s.http.post(
                "/v1/responses",
                json={"entry": "slow", "input": {"steps": 2}, "background": True},
                headers=auth("bob"),
            )
            assert r.status_code == 202
            ids.append(r.json()["id"])
        for i, rid in enumerate(ids):
            done = wait_status(servers[(i + 1) % 3], rid, "bob", ("completed",))
            assert done["output"] == "slept 2"
        st = open_store(store)
        try:
            for rid in ids:  # each ran once, wherever it ran
                assert [e.event_type for e in st.run_events(rid)] == ["result"]
        finally:
            st.close()
    finally:
        for s in servers:
            s.kill()
