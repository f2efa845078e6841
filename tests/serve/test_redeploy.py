"""A served app that was redeployed (issue 10 point 5): runs parked on the old code resume
on the code they started with, unless the server opts in with ``--upgrade-code``; then an
edit off the parked stack is taken and one on it fails the run (``resume_refused``)
naming the function. Real ``harnpy serve`` processes on one SQLite store."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.serve.servers import Server, auth, start_server, wait_status

pytest.importorskip("harnpy.lifecycle.waitpoints")

APP = """import { create, wait } from "std/waitpoint"

fn label(note) {
  return "v1:" + note
}

pub fn approve(input) {
  let wp = create(input.waitpoint)
  let done = wait(wp)
  return {approved: done.value, note: label(input.note)}
}
"""


def _park(s: Server) -> tuple[str, str]:
    wp = f"wp-{uuid.uuid4().hex[:12]}"
    r = s.http.post(
        "/v1/responses",
        json={"entry": "approve", "input": {"waitpoint": wp, "note": "n"}, "sessionId": "s"},
        headers=auth("alice"),
    )
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "in_progress"
    return r.json()["id"], wp


def _finish(s: Server, rid: str, wp: str, statuses: tuple[str, ...]) -> dict:  # type: ignore[type-arg]
    ok = s.http.post(f"/v1/waitpoints/{wp}/complete", json={"value": 1}, headers=auth("alice"))
    assert ok.status_code == 200, ok.text
    return wait_status(s, rid, "alice", statuses, session="s", timeout=60)


def test_redeployed_app_resumes_parked_runs_on_their_code_unless_upgraded(
    tmp_path: Path,
) -> None:
    app = tmp_path / "app.harn"
    app.write_text(APP, encoding="utf-8")
    store = f"sqlite://{tmp_path / 'store.sqlite3'}"
    old = start_server(app, store, "--replica-id", "old")
    try:
        runs = [_park(old), _park(old), _park(old)]
    finally:
        assert old.terminate() == 0
    app.write_text(APP.replace('"v1:"', '"v2:"'), encoding="utf-8")  # label: off the stack
    plain = start_server(app, store, "--replica-id", "plain")
    try:
        done = _finish(plain, *runs[0], ("completed",))
        assert done["output"] == {"approved": 1, "note": "v1:n"}  # the code it started with
    finally:
        assert plain.terminate() == 0
    upgraded = start_server(app, store, "--replica-id", "up", "--upgrade-code")
    try:
        done = _finish(upgraded, *runs[1], ("completed",))
        assert done["output"] == {"approved": 1, "note": "v2:n"}
    finally:
        assert upgraded.terminate() == 0
    # approve is on the parked stack: changing it refuses the upgrade, naming it
    app.write_text(APP.replace("approved: done.value", "approved: done"), encoding="utf-8")
    refusing = start_server(app, store, "--replica-id", "up2", "--upgrade-code")
    try:
        failed = _finish(refusing, *runs[2], ("failed",))
        assert failed["error"]["category"] == "resume_refused"
        assert (
            "function `approve` (app.harn:7) is on the parked stack and changed"
            in (failed["error"]["message"])
        )
    finally:
        assert refusing.terminate() == 0
