"""http_* builtins against a real loopback server and through http_mock; the store_* builtins
on their file (Harn builtins.md "HTTP", "Mock HTTP", "Persistent store")."""

from __future__ import annotations

import http.server
import io
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harnpy.runtime.runtime import Runtime
from tests.conftest import harnpy


def run(source: str, path: str = "<test>") -> str:
    out = io.StringIO()
    rt = Runtime(stdout=out.write, stderr=out.write)
    rt.run_module(rt.load_main(path, source))
    return out.getvalue()


class _Handler(http.server.BaseHTTPRequestHandler):
    hits: dict[str, int] = {}

    def log_message(self, *args: object) -> None:
        pass

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        n = self.hits[self.path] = self.hits.get(self.path, 0) + 1
        if self.path == "/flaky" and n < 3:
            self._reply(503, b"busy", {"Retry-After": "0"})
        elif self.path == "/slow":
            threading.Event().wait(0.4)
            self._reply(200, b"slow")
        elif self.path == "/redirect":
            self._reply(302, b"", {"Location": "/echo"})
        else:
            info = {"path": self.path, "auth": self.headers.get("Authorization")}
            self._reply(200, json.dumps(info).encode(), {"X-Seen": "yes"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        info = {"body": body, "type": self.headers.get("Content-Type")}
        self._reply(201, json.dumps(info).encode())


@pytest.fixture()
def server() -> Iterator[str]:
    _Handler.hits = {}
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_get_returns_status_lowercase_headers_body_and_ok(server: str) -> None:
    out = run(
        f'let r = http_get("{server}/echo", {{auth: {{bearer: "t0k"}}}})\n'
        'println(r.status)\nprintln(r.ok)\nprintln(r.headers["x-seen"])\n'
        "let d = json_parse(r.body)\nprintln(d.path)\nprintln(d.auth)\n"
    )
    assert out == "200\ntrue\nyes\n/echo\nBearer t0k\n"


def test_post_of_a_dict_sends_json(server: str) -> None:
    out = run(
        f'let r = http_post("{server}/p", {{a: [1, 2]}})\nprintln(r.status)\nprintln(r.body)\n'
    )
    status, body = out.splitlines()
    assert status == "201"
    assert json.loads(body) == {"body": '{"a":[1,2]}', "type": "application/json"}


def test_retries_a_503_until_it_succeeds(server: str) -> None:
    out = run(
        f'let r = http_get("{server}/flaky", {{retries: 3, backoff: 1}})\nprintln(r.status)\n'
    )
    assert out == "200\n"
    assert _Handler.hits["/flaky"] == 3


def test_without_retries_a_503_is_the_answer(server: str) -> None:
    out = run(f'let r = http_get("{server}/flaky")\nprintln("${{r.status}} ${{r.ok}}")\n')
    assert out == "503 false\n"
    assert _Handler.hits["/flaky"] == 1


def test_redirects_are_followed_unless_disabled(server: str) -> None:
    out = run(
        f'println(http_get("{server}/redirect").status)\n'
        f'println(http_get("{server}/redirect", {{follow_redirects: false}}).status)\n'
    )
    assert out == "200\n302\n"


def test_a_timeout_and_a_refused_connection_are_catchable_errors(server: str) -> None:
    out = run(
        f'let a = try {{ http_get("{server}/slow", {{timeout: 50}}) }}\nprintln(a)\n'
        'let b = try { http_get("http://127.0.0.1:9/") }\nprintln(b)\n'
        'let c = try { http_request("BREW", "http://x/") }\nprintln(c)\n'
    )
    a, b, c = out.splitlines()
    assert a.startswith("Result.Err(http_get: request to ") and "timed out" in a
    assert b.startswith("Result.Err(http_get: request to http://127.0.0.1:9/ failed")
    assert c.startswith("Result.Err(http_request: method must be one of")


def test_a_waiting_request_does_not_block_other_threads(server: str) -> None:
    out = run(
        f'let t = spawn {{ http_get("{server}/slow").body }}\n'
        'println("before")\n'
        "println(await(t))\n"
    )
    assert out == "before\nslow\n"


def test_mock_glob_sequence_and_recorded_calls_with_redaction() -> None:
    out = run(
        'http_mock("GET", "https://api.example.com/*/items/*", {responses: [{status: 429}, {status: 200, body: {n: 1}}]})\n'
        'let r = http_get("https://api.example.com/u1/items/9?api_key=s3cret&x=1", {retries: 1, backoff: 1, headers: {"X-Api-Key": "k"}})\n'
        'println("${r.status} ${r.body}")\n'
        "let calls = http_mock_calls()\n"
        "println(len(calls))\n"
        "println(calls[0].url)\n"
        'println(calls[0].headers["x-api-key"])\n'
        'println(http_mock_calls({include_sensitive: true})[0].headers["x-api-key"])\n'
        'let miss = try { http_get("https://other.example.com/") }\n'
        "println(miss)\n"
        "http_mock_clear()\n"
        "println(len(http_mock_calls()))\n"
    )
    assert out.splitlines() == [
        '200 {"n":1}',
        "2",
        "https://api.example.com/u1/items/9?api_key=[REDACTED]&x=1",
        "[REDACTED]",
        "k",
        "Result.Err(http_get: no http_mock matches GET https://other.example.com/)",
        "0",
    ]


def test_registering_the_same_mock_again_replaces_it() -> None:
    out = run(
        'http_mock("GET", "https://a.test/x", {body: "one"})\n'
        'http_mock("get", "https://a.test/x", {body: "two"})\n'
        'http_mock("*", "https://a.test/*", {body: "any"})\n'
        'println(http_get("https://a.test/x").body)\n'
        'println(http_post("https://a.test/y", "").body)\n'
    )
    # the latest matching mock answers: the "*" one registered last
    assert out == "any\nany\n"


def test_bad_mock_arguments_are_catchable() -> None:
    out = run(
        'println(try { http_mock("GET", "https://a/", {status: 99}) })\n'
        'println(try { http_mock("GET", "https://a/", {responses: []}) })\n'
    )
    assert "status must be an int from 100 to 599" in out
    assert "`responses` must be a non-empty list" in out


def test_mocks_survive_a_snapshot_and_resume(tmp_path: Path) -> None:
    snap = tmp_path / "s.json"
    prog = tmp_path / "m.harn"
    prog.write_text(
        'http_mock("GET", "https://a.test/*", {responses: [{body: "first"}, {body: "second"}]})\n'
        'println(http_get("https://a.test/1").body)\n'
        f'__snapshot_exit("{snap}")\n'
        'println(http_get("https://a.test/2").body)\n'
        "println(len(http_mock_calls()))\n"
    )
    p = harnpy("run", str(prog))
    assert p.returncode == 3, p.stderr
    assert p.stdout == "first\n"
    r = harnpy("run", "--resume", str(snap))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "second\n2\n"


def test_store_round_trip_private_file_and_sharing_between_processes(tmp_path: Path) -> None:
    prog = tmp_path / "a.harn"
    prog.write_text(
        'store_set("count", 1)\nstore_set("cfg", {name: "x", tags: ["a"]})\n'
        'println(store_get("cfg").tags)\nprintln(store_list())\nprintln(store_get("missing"))\n'
    )
    p = harnpy("run", str(prog), cwd=str(Path("/")))
    assert p.returncode == 0, p.stderr
    assert p.stdout == "[a]\n[cfg, count]\nnil\n"
    f = tmp_path / ".harn" / "store.json"
    assert json.loads(f.read_text()) == {"count": 1, "cfg": {"name": "x", "tags": ["a"]}}
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert stat.S_IMODE(f.parent.stat().st_mode) == 0o700
    # another program beside it sees and changes the same store
    other = tmp_path / "b.harn"
    other.write_text(
        'store_set("count", store_get("count") + 1)\nstore_delete("cfg")\nprintln(store_list())\n'
    )
    q = harnpy("run", str(other))
    assert q.stdout == "[count]\n", q.stderr
    assert json.loads(f.read_text()) == {"count": 2}


def test_concurrent_writers_lose_no_update(tmp_path: Path) -> None:
    prog = tmp_path / "inc.harn"
    prog.write_text('for i in 0 to 10 {\n  store_set("k${i}_" + argv()[0], i)\n}\n')
    import subprocess
    import sys

    procs = [
        subprocess.Popen([sys.executable, "-m", "harnpy", "run", str(prog), "--", str(n)])
        for n in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    data = json.loads((tmp_path / ".harn" / "store.json").read_text())
    assert len(data) == 4 * 11


def test_a_damaged_store_is_a_clear_error_and_is_left_alone(tmp_path: Path) -> None:
    d = tmp_path / ".harn"
    d.mkdir()
    (d / "store.json").write_text("[1, 2")
    prog = tmp_path / "p.harn"
    prog.write_text('println(try { store_get("a") })\nprintln(try { store_set("a", 1) })\n')
    p = harnpy("run", str(prog))
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("is not valid JSON (fix or remove it)") == 2
    assert (d / "store.json").read_text() == "[1, 2"


def test_harn_store_file_names_another_store(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "kv.json"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    p = harnpy(
        "run",
        "-e",
        'store_set("a", true)\nprintln(store_get("a"))',
        env={"HARN_STORE_FILE": str(target)},
        cwd=cwd,
    )
    assert p.stdout == "true\n", p.stderr
    assert json.loads(target.read_text()) == {"a": True}
    assert not os.path.exists(cwd / ".harn")
