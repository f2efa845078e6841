"""``harnpy serve`` end to end: real replicas on loopback, driven with httpx, on SQLite and
PostgreSQL stores."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harnpy.store import open_store
from tests.serve.servers import KEYS, KEYS_ENV, Server, auth, start_server, wait_status

APP = Path(__file__).resolve().parent / "apps" / "app.harn"
SECRET = "s3cr3t-value-123"


@pytest.fixture(scope="module")
def replicas(module_store: str) -> Iterator[list[Server]]:
    """Two replicas on one store."""
    servers: list[Server] = []
    try:
        servers.append(start_server(APP, module_store, env={"SERVE_TEST_SECRET_TOKEN": SECRET}))
        servers.append(start_server(APP, module_store))
        yield servers
    finally:
        for s in servers:
            s.kill()


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One replica on a SQLite store (for the tests that do not depend on the backend)."""
    path = tmp_path_factory.mktemp("serve-one") / "s.sqlite3"
    s = start_server(APP, f"sqlite://{path}", "--max-body-bytes", "4096",
                     env={"SERVE_TEST_SECRET_TOKEN": SECRET})  # fmt: skip
    try:
        yield s
    finally:
        s.kill()


def post(s: Server, body: object, user: str = "alice") -> httpx.Response:
    return s.http.post("/v1/responses", json=body, headers=auth(user))


def test_completed_response_carries_output_and_snapshot_and_any_replica_answers(
    replicas: list[Server],
) -> None:
    a, b = replicas
    r = post(a, {"entry": "greet", "input": {"name": "ada"}, "metadata": {"ticket": 7}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "completed"
    assert body["output"] == {"greeting": "hello, ada"}
    snap = body["snapshot"]
    assert snap["version"] == 1
    assert snap["output"] == body["output"]
    assert snap["metadata"] == {"ticket": 7}
    assert snap["result"]["stdout"] == "hello ada\n"
    assert snap["usage"]["model_calls"] == 0
    polled = b.http.get(f"/v1/responses/{body['id']}", headers=auth("alice"))
    assert polled.status_code == 200
    assert polled.json() == body


def test_pipeline_entry_gets_the_input(replicas: list[Server]) -> None:
    r = post(replicas[0], {"entry": "report", "input": {"items": [1, 2, 3]}})
    assert r.json()["output"] == {"items": [2, 4, 6]}


def test_model_calls_and_usage_are_in_the_snapshot(one: Server) -> None:
    r = post(one, {"entry": "ask", "input": {"q": "what?"}})
    snap = r.json()["snapshot"]
    assert r.json()["output"] == ["an answer", "a second answer"]
    assert [c["provider"] for c in snap["model_calls"]] == ["mock", "mock"]
    assert snap["usage"]["model_calls"] == 2
    total_in = sum(c["input_tokens"] for c in snap["model_calls"])
    assert snap["usage"]["input_tokens"] == total_in
    assert snap["usage"]["total_tokens"] == total_in + snap["usage"]["output_tokens"]
    assert all(c["raw"] is None for c in snap["model_calls"])  # raw metadata is opt-in


def test_background_answers_202_then_completes_on_a_replica(replicas: list[Server]) -> None:
    a, b = replicas
    r = post(a, {"entry": "slow", "input": {"steps": 4}, "background": True})
    assert r.status_code == 202
    assert r.json()["status"] == "in_progress"
    done = wait_status(b, r.json()["id"], "alice", ("completed",))
    assert done["output"] == "slept 4"


def test_same_idempotency_key_same_response_never_a_second_run(
    replicas: list[Server], module_store: str
) -> None:
    a, b = replicas
    key = f"order-{uuid.uuid4().hex}"
    body = {"entry": "greet", "input": {"name": "x"}, "idempotencyKey": key}
    first = post(a, body).json()
    again = post(b, body).json()
    assert again["id"] == first["id"] and again["status"] == "completed"
    other_user = post(a, body, user="bob").json()
    assert other_user["id"] != first["id"]
    store = open_store(module_store)
    try:
        alice_runs = store.list_runs(owner_user="alice", limit=10_000)
        assert [r.id for r in alice_runs if r.idempotency_key == key] == [first["id"]]
        # the program ran once: one `hello x` line, one result event
        kinds = [e.event_type for e in store.run_events(first["id"])]
        assert kinds == ["stdout", "result"]
    finally:
        store.close()


def test_other_user_other_session_unknown_id_get_identical_404(replicas: list[Server]) -> None:
    a, b = replicas
    r = post(a, {"entry": "greet", "input": {"name": "s"}, "sessionId": "sess-1"}).json()
    rid = r["id"]
    mine = a.http.get(f"/v1/responses/{rid}", params={"sessionId": "sess-1"}, headers=auth("alice"))
    assert mine.status_code == 200
    answers = []
    for path in (f"/v1/responses/{rid}", f"/v1/responses/{rid}/events"):
        answers.append(b.http.get(path, params={"sessionId": "sess-1"}, headers=auth("bob")))
        answers.append(a.http.get(path, params={"sessionId": "sess-2"}, headers=auth("alice")))
        answers.append(a.http.get(path, headers=auth("alice")))  # no session: not this run
        unknown = path.replace(rid, "run_" + "0" * 32)
        answers.append(a.http.get(unknown, params={"sessionId": "sess-1"}, headers=auth("alice")))
    answers.append(
        b.http.post(
            f"/v1/responses/{rid}/cancel", params={"sessionId": "sess-1"}, headers=auth("bob")
        )
    )
    assert {x.status_code for x in answers} == {404}
    assert len({x.content for x in answers}) == 1
    assert json.loads(answers[0].content)["error"]["type"] == "not_found"
    # bob cannot start a run in alice's session either, and learns nothing more
    stolen = post(a, {"entry": "greet", "input": {"name": "s"}, "sessionId": "sess-1"}, "bob")
    assert stolen.status_code == 404 and stolen.content == answers[0].content


@pytest.mark.parametrize(
    ("send", "status", "kind"),
    [
        ({"content": b"{not json"}, 400, "invalid_json"),
        ({"json": {"entry": "nope"}}, 400, "unknown_entry"),
        ({"json": {"input": 1}}, 400, "unknown_entry"),  # several entries, none named
        ({"json": {"entry": "greet", "surprise": 1}}, 400, "invalid_request"),
        ({"json": {"entry": "greet", "background": "yes"}}, 400, "invalid_request"),
        ({"json": [1, 2]}, 400, "invalid_request"),
        ({"json": {"entry": "greet", "input": "x" * 5000}}, 413, "body_too_large"),
    ],
)
def test_bad_input_is_a_clear_4xx(
    one: Server, send: dict[str, object], status: int, kind: str
) -> None:
    r = one.http.post("/v1/responses", headers=auth("alice"), **send)  # type: ignore[arg-type]
    assert r.status_code == status, r.text
    assert r.json()["error"]["type"] == kind
    assert r.json()["error"]["message"]


@pytest.mark.parametrize("header", [None, "Bearer wrong-key-000", "Basic abc", "Bearer"])
def test_missing_or_wrong_key_is_401(one: Server, header: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    for method, path in (("POST", "/v1/responses"), ("GET", "/v1/responses/x")):
        r = one.http.request(method, path, headers=headers, json={"entry": "greet"})
        assert r.status_code == 401
        assert r.json()["error"]["type"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"


def test_failure_is_sanitized(one: Server) -> None:
    r = post(one, {"entry": "boom"})
    body = r.json()
    assert body["status"] == "failed"
    err = body["error"]
    assert err["category"] == "runtime_error"
    assert "it broke near" in err["message"]
    assert SECRET not in r.text
    assert "[redacted]" in err["message"]
    assert "Traceback" not in r.text and "app.harn:" not in r.text and "\n" not in err["message"]


def test_snapshot_over_4_mib_fails_cleanly(one: Server) -> None:
    body = post(one, {"entry": "big", "input": {"n": 5 * 1024 * 1024}}).json()
    assert body["status"] == "failed"
    assert body["error"]["category"] == "output_too_large"


def test_events_stream_and_last_event_id_resume(replicas: list[Server]) -> None:
    a, b = replicas
    rid = post(a, {"entry": "lines", "input": {"n": 3}}).json()["id"]

    def read(server: Server, headers: dict[str, str]) -> list[tuple[str, str, dict[str, object]]]:
        out = []
        with server.http.stream("GET", f"/v1/responses/{rid}/events", headers=headers) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            ev: dict[str, str] = {}
            for line in r.iter_lines():
                if not line:
                    if ev:
                        out.append((ev["id"], ev["event"], json.loads(ev["data"])))
                    ev = {}
                elif not line.startswith(":"):
                    k, _, v = line.partition(": ")
                    ev[k] = v
        return out

    full = read(a, auth("alice"))
    assert [e[0] for e in full] == ["1", "2", "3", "4"]
    assert [e[1] for e in full] == ["stdout", "stdout", "stdout", "result"]
    first = full[0][2]
    assert first == {
        "schemaVersion": 1,
        "command": "run",
        "data": {"seq": 1, "event_type": "stdout", "payload": "line 0\n"},
    }
    assert full[3][2]["data"]["value"] == 3  # type: ignore[index]
    resumed = read(b, {**auth("alice"), "Last-Event-ID": "2"})
    assert resumed == full[2:]
    bad = b.http.get(f"/v1/responses/{rid}/events", headers={**auth("alice"), "Last-Event-ID": "x"})
    assert bad.status_code == 400


def test_events_are_live_while_the_run_goes_on(one: Server) -> None:
    rid = post(one, {"entry": "slow", "input": {"steps": 10}, "background": True}).json()["id"]
    with one.http.stream("GET", f"/v1/responses/{rid}/events", headers=auth("alice")) as r:
        kinds = [
            json.loads(line[6:])["data"]["event_type"]
            for line in r.iter_lines()
            if line.startswith("data: ")
        ]
    assert kinds == ["result"]
    assert wait_status(one, rid, "alice", ("completed",))["output"] == "slept 10"


def test_cancel_a_running_run(one: Server) -> None:
    rid = post(one, {"entry": "slow", "input": {"steps": 2000}, "background": True}).json()["id"]
    wait_status(one, rid, "alice", ("in_progress",))
    time.sleep(0.3)
    r = one.http.post(f"/v1/responses/{rid}/cancel", headers=auth("alice"))
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    deadline = time.monotonic() + 15  # the run itself would take 100 s
    while one.http.get("/healthz").json()["running"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert one.http.get("/healthz").json()["running"] == 0  # the run was interrupted
    final = one.http.get(f"/v1/responses/{rid}", headers=auth("alice")).json()
    assert final["status"] == "cancelled"
    assert final["error"]["category"] == "cancelled"


def test_sigterm_stops_gracefully_and_another_replica_finishes_the_run(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 's.sqlite3'}"
    a = start_server(APP, store, "--grace-ms", "300")
    try:
        rid = post(a, {"entry": "slow", "input": {"steps": 60}, "background": True}).json()["id"]
        wait_status(a, rid, "alice", ("in_progress",))
        time.sleep(0.3)
        assert a.terminate(timeout=30) == 0
        assert "stopped" in a.stderr()
        st = open_store(store)
        try:
            rec = st.run_by_id(rid)
            assert rec is not None and rec.status == "queued" and rec.lease_holder is None
        finally:
            st.close()
        b = start_server(APP, store)
        try:
            assert wait_status(b, rid, "alice", ("completed",))["output"] == "slept 60"
        finally:
            b.kill()
    finally:
        a.kill()


def test_sigterm_hands_a_running_run_over_mid_function(tmp_path: Path) -> None:
    """SIGTERM parks a running run at its next instruction boundary: another replica goes
    on from there (every step printed once: the run was not started again)."""
    store = f"sqlite://{tmp_path / 's.sqlite3'}"
    a = start_server(APP, store, "--grace-ms", "5000")
    try:
        rid = post(a, {"entry": "steps", "input": {"steps": 40}, "background": True}).json()["id"]
        st = open_store(store)
        try:
            deadline = time.monotonic() + 30
            while sum(e.event_type == "stdout" for e in st.run_events(rid)) < 3:
                assert time.monotonic() < deadline, "the run never started"
                time.sleep(0.05)
            assert a.terminate(timeout=30) == 0
            rec = st.run_by_id(rid)
            assert rec is not None and rec.status == "queued" and rec.lease_holder is None
            assert rec.worker_id == f"prog-{rid}"
            info = st.checkpoint_info(rec.worker_id)
            assert info is not None and info.status == "suspended"
            assert info.reason == "shutdown"
            printed_before = sum(e.event_type == "stdout" for e in st.run_events(rid))
            assert 3 <= printed_before < 40
            b = start_server(APP, store)
            try:
                done = wait_status(b, rid, "alice", ("completed",))
            finally:
                b.kill()
            assert done["output"] == "did 40"
            printed = [e.data["payload"] for e in st.run_events(rid) if e.event_type == "stdout"]
            assert printed == [f"step {i}\n" for i in range(40)]
        finally:
            st.close()
    finally:
        a.kill()


def test_health_metrics_openapi(one: Server) -> None:
    post(one, {"entry": "greet", "input": {"name": "m"}})
    h = one.http.get("/healthz").json()
    assert h["status"] == "ok" and {e["name"] for e in h["entries"]} >= {"greet", "report"}
    m = one.http.get("/metrics")
    assert m.status_code == 200
    values = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in m.text.splitlines()
        if line and not line.startswith("#")
    }
    assert values['harnpy_runs{status="completed"}'] >= 1
    assert values["harnpy_run_claims_total"] >= 1
    assert values["harnpy_checkpoint_bytes_count"] >= 1
    doc = one.http.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert {"/v1/responses", "/v1/responses/{id}", "/v1/responses/{id}/events"} <= set(doc["paths"])
    assert "CompletionSnapshot" in doc["components"]["schemas"]
    assert one.http.get("/nowhere").json()["error"]["type"] == "not_found"
    assert one.http.delete("/v1/responses").status_code == 405


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    e = {k: v for k, v in os.environ.items() if k != "HARNPY_API_KEYS"}
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harnpy", "serve", *args],
        capture_output=True,
        text=True,
        env=e,
        timeout=60,
    )


def test_refuses_to_start_without_keys_or_with_a_broken_app(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 's.sqlite3'}"
    r = _serve(str(APP), "--store", store, "--bind", "127.0.0.1:0")
    assert r.returncode == 2
    assert "no API keys configured" in r.stderr and "--insecure-no-auth" in r.stderr
    broken = tmp_path / "broken.harn"
    broken.write_text("pub fn f( {\n")
    r = _serve(
        str(broken), "--store", store, "--bind", "127.0.0.1:0", env={"HARNPY_API_KEYS": KEYS_ENV}
    )
    assert r.returncode == 2 and "broken.harn:1" in r.stderr and "Traceback" not in r.stderr
    none = tmp_path / "none.harn"
    none.write_text("fn private() { return 1 }\n")
    r = _serve(str(none), "--store", store, "--insecure-no-auth")
    assert r.returncode == 2 and "no entry point" in r.stderr
    r = _serve(str(APP), "--store", store, "--bind", "localhost", "--insecure-no-auth")
    assert r.returncode == 2 and "HOST:PORT" in r.stderr


def test_insecure_no_auth_serves_anonymous(tmp_path: Path) -> None:
    s = start_server(APP, f"sqlite://{tmp_path / 's.sqlite3'}", "--insecure-no-auth", keys=False)
    try:
        r = s.http.post("/v1/responses", json={"entry": "greet", "input": {"name": "a"}})
        assert r.json()["status"] == "completed"
    finally:
        s.kill()


def test_runs_cli_and_client(one: Server) -> None:
    base = [sys.executable, "-m", "harnpy", "runs"]
    common = ["--url", one.url, "--key", KEYS["alice"]]
    r = subprocess.run(
        [*base, "start", "greet", "--input", '{"name": "cli"}', "--session", "c1", *common],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    started = json.loads(r.stdout)
    assert started["output"] == {"greeting": "hello, cli"}
    got = subprocess.run(
        [*base, "get", started["id"], "--session", "c1", *common],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(got.stdout)["id"] == started["id"]
    ev = subprocess.run(
        [*base, "events", started["id"], "--session", "c1", *common],
        capture_output=True,
        text=True,
        timeout=60,
    )
    kinds = [json.loads(line)["data"]["event_type"] for line in ev.stdout.splitlines()]
    assert kinds == ["stdout", "result"]
    missing = subprocess.run(
        [*base, "get", started["id"], *common], capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 1 and "404 not_found" in missing.stderr
    from harnpy.client import Client

    with Client(one.url, KEYS["bob"]) as c:
        bg = c.start({"steps": 2}, entry="slow", background=True)
        assert bg["status"] == "in_progress"
        assert c.wait(bg["id"], timeout_s=30)["output"] == "slept 2"
