"""examples/serve/app.harn as the README runs it: a run parks inside a tool that waits on
a waitpoint, a second process completes the waitpoint, another replica finishes the run."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.serve.servers import auth, start_server, wait_status

# durable waitpoints (std/waitpoint) are what a run parks on
pytest.importorskip("harnpy.lifecycle.waitpoints")

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "examples" / "serve" / "app.harn"


def test_example_app_parks_in_its_tool_and_a_second_process_completes_it(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 's.sqlite3'}"
    a = start_server(APP, store)
    b = start_server(APP, store)
    try:
        quick = a.http.post(
            "/v1/responses", json={"entry": "summarize", "input": {"text": "a b c"}},
            headers=auth("alice"),
        ).json()  # fmt: skip
        assert quick["output"] == {"words": 3, "first": "a"}
        title = f"post-{uuid.uuid4().hex[:8]}"
        r = a.http.post(
            "/v1/responses", json={"entry": "publish", "input": {"title": title}},
            headers=auth("alice"),
        )  # fmt: skip
        assert r.status_code == 202 and r.json()["status"] == "in_progress"
        rid = r.json()["id"]
        done = subprocess.run(
            [sys.executable, "-m", "harnpy", "waitpoint", "complete", f"approve-{title}",
             '"ship it"', "--store", store],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        final = wait_status(b, rid, "alice", ("completed",))
        assert final["output"] == {"title": title, "decision": "editor says: ship it"}
        assert f"publishing {title}" in final["snapshot"]["result"]["stdout"]
    finally:
        a.kill()
        b.kill()
