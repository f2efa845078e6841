"""Runs that wait on a durable waitpoint: they park (``in_progress``), are completed from
outside (HTTP on any replica, or the Python API), and finish on any replica."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harnpy.store import open_store
from tests.serve.servers import Server, auth, start_server, wait_status

# durable waitpoints (std/waitpoint) are what a run parks on
pytest.importorskip("harnpy.lifecycle.waitpoints")

APP = Path(__file__).resolve().parent / "apps" / "approval.harn"


@pytest.fixture(scope="module")
def replicas(module_store: str) -> Iterator[list[Server]]:
    servers: list[Server] = []
    try:
        servers.append(start_server(APP, module_store, "--replica-id", "park-a"))
        servers.append(start_server(APP, module_store, "--replica-id", "park-b"))
        yield servers
    finally:
        for s in servers:
            s.kill()


def _park(s: Server, session: str = "s1") -> tuple[str, str]:
    wp = f"wp-{uuid.uuid4().hex[:12]}"
    r = s.http.post(
        "/v1/responses",
        json={"entry": "approve", "input": {"waitpoint": wp, "note": "n"}, "sessionId": session},
        headers=auth("alice"),
    )
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["status"] == "in_progress"
    return body["id"], wp


def test_park_poll_complete_over_http_finish_on_another_replica(replicas: list[Server]) -> None:
    a, b = replicas
    rid, wp = _park(a)
    polled = b.http.get(f"/v1/responses/{rid}", params={"sessionId": "s1"}, headers=auth("alice"))
    assert polled.json()["status"] == "in_progress"
    assert polled.json()["waitingOn"] == [wp]
    # another user may not complete it, and cannot tell it exists
    denied = b.http.post(f"/v1/waitpoints/{wp}/complete", json={"value": 1}, headers=auth("bob"))
    unknown = b.http.post("/v1/waitpoints/wp-nope/complete", json={"value": 1}, headers=auth("bob"))
    assert denied.status_code == unknown.status_code == 404
    assert denied.content == unknown.content
    ok = b.http.post(f"/v1/waitpoints/{wp}/complete", json={"value": "yes"}, headers=auth("alice"))
    assert ok.status_code == 200 and ok.json() == {
        "id": wp,
        "status": "completed",
        "completed": True,
    }
    again = a.http.post(
        f"/v1/waitpoints/{wp}/complete", json={"value": "no"}, headers=auth("alice")
    )
    assert again.status_code == 409 and again.json()["status"] == "completed"
    done = wait_status(a, rid, "alice", ("completed",), session="s1")
    assert done["output"] == {"approved": "yes", "note": "n"}
    with b.http.stream(
        "GET", f"/v1/responses/{rid}/events", params={"sessionId": "s1"}, headers=auth("alice")
    ) as r:
        events = [json.loads(x[6:])["data"] for x in r.iter_lines() if x.startswith("data: ")]
    printed = [e["payload"] for e in events if e["event_type"] == "stdout"]
    assert printed == [f"waiting for {wp}\n", "approved by the outside\n"]
    assert events[-1]["event_type"] == "result"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


def test_completion_from_outside_the_servers_and_a_killed_replica(
    replicas: list[Server], module_store: str
) -> None:
    from harnpy.lifecycle.waitpoints import complete_waitpoint

    a, b = replicas
    rid, wp = _park(b, session="s2")
    assert complete_waitpoint(module_store, wp, {"by": "job"}) is True
    done = wait_status(a, rid, "alice", ("completed",), session="s2")
    assert done["output"] == {"approved": {"by": "job"}, "note": "n"}
    st = open_store(module_store)
    try:
        assert [e.event_type for e in st.run_events(rid)].count("result") == 1
    finally:
        st.close()


def test_cancelled_waitpoint_fails_the_run(replicas: list[Server]) -> None:
    a, b = replicas
    rid, wp = _park(a, session="s3")
    r = b.http.post(f"/v1/waitpoints/{wp}/cancel", json={"reason": "denied"}, headers=auth("alice"))
    assert r.status_code == 200 and r.json()["cancelled"] is True
    done = wait_status(b, rid, "alice", ("failed",), session="s3")
    assert done["error"]["category"] == "runtime_error"
    assert "denied" in done["error"]["message"] or "cancel" in done["error"]["message"].lower()


def test_cancel_a_parked_run(replicas: list[Server]) -> None:
    a, _ = replicas
    rid, wp = _park(a, session="s4")
    r = a.http.post(
        f"/v1/responses/{rid}/cancel", params={"sessionId": "s4"}, headers=auth("alice")
    )
    assert r.json()["status"] == "cancelled"
    a.http.post(f"/v1/waitpoints/{wp}/complete", json={"value": 1}, headers=auth("alice"))
    time.sleep(1.5)
    again = a.http.get(f"/v1/responses/{rid}", params={"sessionId": "s4"}, headers=auth("alice"))
    assert again.json()["status"] == "cancelled"


def test_run_whose_park_was_not_recorded_and_not_ready_still_finishes(
    replicas: list[Server], module_store: str
) -> None:
    """A replica killed between committing a run's checkpoint and recording it on the run
    row leaves ``worker_id`` empty under an expired lease. The replica that claims the run
    next finds the checkpoint, sees that its wait is not over and hands the run back: it
    must hand it back *with* the checkpoint recorded, or nothing ever re-queues it when
    the waitpoint completes (found by the chaos test: one run in 300 never finished)."""
    from harnpy.lifecycle.waitpoints import complete_waitpoint

    a, _ = replicas
    rid, wp = _park(a, session="s5")
    st = open_store(module_store)
    try:
        deadline = time.monotonic() + 30
        while (run := st.run_by_id(rid)) is not None and run.worker_id is None:
            assert time.monotonic() < deadline, "the run never recorded its park"
            time.sleep(0.05)
        # the state a replica killed right after the checkpoint commit leaves behind
        with st.txn() as c:
            c.run(
                "UPDATE runs SET worker_id = NULL, lease_holder = 'killed-replica', "
                "lease_fence = lease_fence + 1, lease_expires_at_ms = ? WHERE id = ?",
                (c.now_ms() - 1, rid),
            )
        # a live replica claims it, finds the checkpoint not ready and hands it back
        deadline = time.monotonic() + 30
        while (run := st.run_by_id(rid)) is not None and run.lease_holder == "killed-replica":
            assert time.monotonic() < deadline, "no replica took the expired run over"
            time.sleep(0.05)
        time.sleep(0.3)  # its claim is given back
        assert complete_waitpoint(module_store, wp, "late") is True
        done = wait_status(a, rid, "alice", ("completed",), session="s5")
        assert done["output"] == {"approved": "late", "note": "n"}
        assert [e.event_type for e in st.run_events(rid)].count("result") == 1
    finally:
        st.close()


def test_the_timer_of_a_wait_is_refused_over_http(
    replicas: list[Server], module_store: str
) -> None:
    """A wait's own timer row fires by itself: completing or cancelling it over HTTP is a
    409 ``waitpoint_is_timer`` and the row stays open."""
    a, _ = replicas
    timer = f"wp-timer-{uuid.uuid4().hex[:8]}"
    st = open_store(module_store)
    try:
        st.create_waitpoint(
            waitpoint_id=timer,
            owner_user="alice",
            timeout_at_ms=st.now_ms() + 3_600_000,
            metadata={"kind": "timeout", "wait_id": "w", "timeout_ms": 3_600_000},
        )
        for verb, body in (("complete", {"value": 1}), ("cancel", {})):
            r = a.http.post(f"/v1/waitpoints/{timer}/{verb}", json=body, headers=auth("alice"))
            assert r.status_code == 409, r.text
            assert r.json()["error"]["type"] == "waitpoint_is_timer"
        got = st.get_waitpoint(timer)
        assert got is not None and got.status == "open"
    finally:
        st.close()
