"""A Python client of ``harnpy serve`` (httpx).

    from harnpy.client import Client

    with Client("http://127.0.0.1:8080", api_key="KEY") as c:
        r = c.start({"topic": "x"}, entry="report", session_id="s1")
        if r["status"] == "in_progress":
            r = c.wait(r["id"], session_id="s1", timeout_s=60)
        print(r["output"])
        for event in c.events(r["id"], session_id="s1"):
            print(event["data"]["event_type"])

Every method returns the server's JSON; an error answer raises :class:`ClientError` with
the HTTP status and the server's ``{type, message}``. ``HARNPY_SERVE_URL`` and
``HARNPY_API_KEY`` are the defaults of ``url`` and ``api_key``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import httpx

__all__ = ["API_KEY_ENV", "URL_ENV", "Client", "ClientError"]

URL_ENV = "HARNPY_SERVE_URL"
API_KEY_ENV = "HARNPY_API_KEY"
FINAL = ("completed", "failed", "cancelled")


class ClientError(Exception):
    """An error answer: ``status`` (HTTP; 0 when the server could not be reached), ``type``
    and ``message``."""

    def __init__(self, status: int, type_: str, message: str) -> None:
        super().__init__(f"{status} {type_}: {message}" if status else message)
        self.status = status
        self.type = type_
        self.message = message


class Client:
    """A connection to one server (any replica answers for every run).

    Args:
        url: the server, e.g. ``http://127.0.0.1:8080`` (default ``HARNPY_SERVE_URL``).
        api_key: sent as ``Authorization: Bearer`` (default ``HARNPY_API_KEY``).
        timeout_s: per-request timeout in seconds.
        transport: an httpx transport (tests).

    Raises:
        ClientError: no URL given or configured.
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        transport: Any = None,
    ) -> None:
        url = url or os.environ.get(URL_ENV)
        if not url:
            raise ClientError(0, "config", f"no server URL: give --url or set {URL_ENV}")
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.url = url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout_s, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def _call(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as e:
            raise ClientError(0, "unreachable", f"cannot reach {self.url}: {e}") from None
        return _answer(r)

    def start(
        self,
        input: Any = None,
        *,
        entry: str | None = None,
        session_id: str | None = None,
        background: bool = False,
        idempotency_key: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/responses``: the response (completed, failed or in_progress)."""
        body: dict[str, Any] = {"input": input, "background": background}
        if entry is not None:
            body["entry"] = entry
        if session_id is not None:
            body["sessionId"] = session_id
        if idempotency_key is not None:
            body["idempotencyKey"] = idempotency_key
        if metadata is not None:
            body["metadata"] = metadata
        return self._call("POST", "/v1/responses", json=body)

    def get(self, response_id: str, session_id: str | None = None) -> dict[str, Any]:
        """``GET /v1/responses/{id}``."""
        return self._call("GET", f"/v1/responses/{response_id}", params=_session(session_id))

    def wait(
        self,
        response_id: str,
        session_id: str | None = None,
        timeout_s: float = 60.0,
        poll_s: float = 0.2,
    ) -> dict[str, Any]:
        """Poll until the response is final; the last answer when ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while True:
            r = self.get(response_id, session_id)
            if r.get("status") in FINAL or time.monotonic() >= deadline:
                return r
            time.sleep(poll_s)

    def cancel(self, response_id: str, session_id: str | None = None) -> dict[str, Any]:
        """``POST /v1/responses/{id}/cancel``."""
        return self._call(
            "POST", f"/v1/responses/{response_id}/cancel", params=_session(session_id)
        )

    def events(
        self, response_id: str, session_id: str | None = None, after: int = 0
    ) -> Iterator[dict[str, Any]]:
        """The run's events (each the NDJSON envelope of ``run --resume --json``) from
        ``seq`` ``after + 1`` until the run is final; reconnects with ``Last-Event-ID``
        when the stream breaks."""
        last = after
        while True:
            headers = {"Last-Event-ID": str(last)} if last else {}
            try:
                with self.http.stream(
                    "GET",
                    f"/v1/responses/{response_id}/events",
                    params=_session(session_id),
                    headers=headers,
                    timeout=httpx.Timeout(10.0, read=None),
                ) as r:
                    if r.status_code != 200:
                        r.read()
                        _answer(r)
                    for ev in _parse_sse(r.iter_lines()):
                        last = int(ev["data"]["seq"])
                        yield ev
                return
            except (httpx.RemoteProtocolError, httpx.ReadError):
                time.sleep(0.2)  # the replica went away: resume from the last seq
            except httpx.HTTPError as e:
                raise ClientError(0, "unreachable", f"cannot reach {self.url}: {e}") from None

    def complete_waitpoint(self, waitpoint_id: str, value: Any = None) -> dict[str, Any]:
        """``POST /v1/waitpoints/{id}/complete``."""
        return self._call("POST", f"/v1/waitpoints/{waitpoint_id}/complete", json={"value": value})

    def cancel_waitpoint(self, waitpoint_id: str) -> dict[str, Any]:
        """``POST /v1/waitpoints/{id}/cancel``."""
        return self._call("POST", f"/v1/waitpoints/{waitpoint_id}/cancel", json={})


def _session(session_id: str | None) -> dict[str, str]:
    return {"sessionId": session_id} if session_id else {}


def _answer(r: httpx.Response) -> dict[str, Any]:
    try:
        data = r.json()
    except ValueError:
        data = None
    if r.status_code >= 400:
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict):
            raise ClientError(r.status_code, str(err.get("type")), str(err.get("message")))
        raise ClientError(r.status_code, "http", r.text[:200])
    if not isinstance(data, dict):
        raise ClientError(r.status_code, "bad_answer", "the server did not answer JSON")
    return data


def _parse_sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield json.loads("\n".join(data))
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
