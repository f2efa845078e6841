"""Real ``harnpy serve`` processes on loopback for the serve tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

KEYS = {"alice": "alice-key-0001", "bob": "bob-key-00002"}
KEYS_ENV = ",".join(f"{u}:{k}" for u, k in KEYS.items())

_LISTEN = re.compile(r"listening on (http://\S+)")


def auth(user: str) -> dict[str, str]:
    """The Authorization header of ``user``."""
    return {"Authorization": f"Bearer {KEYS[user]}"}


class Server:
    """One ``harnpy serve`` process: ``url``, ``proc``, its stderr lines so far."""

    def __init__(self, proc: subprocess.Popen[str], url: str, lines: list[str]) -> None:
        self.proc = proc
        self.url = url
        self.lines = lines
        self.http = httpx.Client(base_url=url, timeout=30)

    def stderr(self) -> str:
        return "".join(self.lines)

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM, then wait for the exit status."""
        self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        self.http.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def start_server(
    app: Path, store: str, *extra: str, env: dict[str, str] | None = None, keys: bool = True
) -> Server:
    """Start a replica on a free loopback port and wait until it listens."""
    e = dict(os.environ)
    if keys:
        e["HARNPY_API_KEYS"] = KEYS_ENV
    else:
        e.pop("HARNPY_API_KEYS", None)
    e.update(env or {})
    cmd = [sys.executable, "-m", "harnpy", "serve", str(app), "--store", store]
    cmd += ["--bind", "127.0.0.1:0", "--poll-ms", "50", *extra]
    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=e, cwd=app.parent
    )
    lines: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            m = _LISTEN.search(line)
            if m and not found:
                found.append(m.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(60)
    if not found:
        proc.kill()
        raise RuntimeError("harnpy serve did not start:\n" + "".join(lines))
    server = Server(proc, found[0], lines)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if server.http.get("/healthz").status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    server.kill()
    raise RuntimeError("harnpy serve never became healthy:\n" + server.stderr())


def wait_status(
    server: Server, rid: str, user: str, statuses: tuple[str, ...], session: str | None = None,
    timeout: float = 30,
) -> dict[str, Any]:  # fmt: skip
    """Poll until the response has one of ``statuses``; returns it."""
    params = {"sessionId": session} if session else {}
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        r = server.http.get(f"/v1/responses/{rid}", headers=auth(user), params=params)
        last = r.json()
        if last.get("status") in statuses:
            return last  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"response {rid} never reached {statuses}: {last}")
