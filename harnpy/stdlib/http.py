"""HTTP client builtins (over httpx) and the in-process ``http_mock`` registry.

Requests (Harn's ``builtins.md``, "HTTP"):

* ``http_get(url, options?)``, ``http_delete(url, options?)``;
* ``http_post(url, body, options?)``, ``http_put(url, body, options?)``,
  ``http_patch(url, body, options?)``;
* ``http_request(method, url, options?)`` (the body, if any, in ``options.body``).

Each returns ``{status: int, headers: dict, body: string, ok: bool}``: header names in lower
case (repeated headers joined with ``", "``), ``body`` decoded as UTF-8 (undecodable bytes
replaced), ``ok`` true for a 2xx status. A body that is a dict or a list is sent as JSON
(``content-type: application/json`` unless a header says otherwise); any other value is
sent as its string form. Options:

* ``headers`` (dict of strings), ``body`` (for ``http_request``);
* ``timeout``: milliseconds (or a duration) for the whole request, default 30 000;
* ``retries`` (int, default 0) and ``backoff`` (milliseconds, default 500, doubled after
  each attempt, capped at 30 s): a network error, a timeout or a status 429, 502, 503 or 504
  is tried again up to ``retries`` more times; a ``Retry-After`` header in seconds is
  honoured (capped at 30 s);
* ``auth``: a string (sent as ``authorization: Bearer <string>``), ``{bearer: TOKEN}`` or
  ``{basic: {user, password}}``;
* ``follow_redirects`` (bool, default true), ``max_redirects`` (int, default 20).

A network error, a timeout or an invalid URL throws ``"<builtin>: <what happened>"`` (a
string, catchable). The request runs off the scheduler thread: only the calling Harn thread
waits, other threads and agent workers keep running.

Mocks (for tests; no network is touched while one is registered):

* ``http_mock(method, url_pattern, response)`` registers a mock. ``method`` is an HTTP
  method or ``"*"``; ``url_pattern`` matches the whole URL, ``*`` standing for any run of
  characters (several are allowed). ``response`` is ``{status?, body?, headers?}`` (status
  200, body ``""`` by default; a dict or list body is sent as JSON text) or ``{responses:
  [...]}``, answered in order, the last one repeating (to script retries). Registering the
  same method and pattern again replaces the earlier mock; otherwise the most recently
  registered matching mock answers.
* While any mock is registered, a request no mock matches throws
  ``"<builtin>: no http_mock matches METHOD URL"``.
* ``http_mock_calls(options?)`` lists ``{method, url, headers, body}`` for every request a
  mock answered, in order. Sensitive request headers (``authorization``, ``cookie``,
  ``x-api-key``...) and query parameters (``token``, ``api_key``, ``secret``...) read
  ``"[REDACTED]"`` unless the options say ``{redact_sensitive: false}`` or
  ``{include_sensitive: true}``.
* ``http_mock_clear()`` removes every mock and the recorded calls.

The mocks and the recorded calls are runtime state that program snapshots carry (section
``http_mock``), so a resumed program keeps its mocks.
"""

from __future__ import annotations

import concurrent.futures
import re
import threading
from typing import Any

from harnpy._lazy import lazy_module
from harnpy.runtime.errors import HarnError
from harnpy.runtime.extensions import register_state
from harnpy.runtime.scheduler import block_control
from harnpy.stdlib._util import fail, millis, text
from harnpy.stdlib.jsonlib import dumps
from harnpy.stdlib.registry import builtin

_urlparse = lazy_module("urllib.parse")

DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_BACKOFF_MS = 500
MAX_BACKOFF_MS = 30_000
DEFAULT_MAX_REDIRECTS = 20
#: Statuses tried again when ``retries`` allows (rate limited, bad gateway, unavailable,
#: gateway timeout).
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: Concurrent real requests per process (more wait in the pool's queue).
MAX_CONCURRENT_REQUESTS = 32

SENSITIVE_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api-key",
        "x-auth-token",
        "x-access-token",
    }
)
SENSITIVE_QUERY = frozenset(
    {
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "api_key",
        "apikey",
        "key",
        "secret",
        "client_secret",
        "password",
        "signature",
        "sig",
    }
)
REDACTED = "[REDACTED]"

_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


# ------------------------------------------------------------------ request preparation


class _Prepared:
    """One request as the builtin was asked for it (plain Python data, no Harn values)."""

    __slots__ = (
        "name",
        "method",
        "url",
        "headers",
        "body",
        "timeout_s",
        "retries",
        "backoff_ms",
        "follow_redirects",
        "max_redirects",
    )

    def __init__(self, name: str, method: str, url: str) -> None:
        self.name = name
        self.method = method
        self.url = url
        self.headers: dict[str, str] = {}
        self.body: str | None = None
        self.timeout_s = DEFAULT_TIMEOUT_MS / 1000
        self.retries = 0
        self.backoff_ms: float = DEFAULT_BACKOFF_MS
        self.follow_redirects = True
        self.max_redirects = DEFAULT_MAX_REDIRECTS


def _body_text(value: Any, headers: dict[str, str]) -> str | None:
    if value is None:
        return None
    if type(value) is dict or type(value) is list:
        headers.setdefault("content-type", "application/json")
        return dumps(value)
    return text(value)


def _prepare(name: str, method: Any, url: Any, body: Any, options: Any) -> _Prepared:
    if type(method) is not str or method.upper() not in _METHODS:
        raise fail(f"{name}: method must be one of {', '.join(sorted(_METHODS))}, got {method!r}")
    if type(url) is not str or not url:
        raise fail(f"{name}: url must be a non-empty string")
    parsed = _urlparse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise fail(f"{name}: invalid URL '{url}' (expected http:// or https://)")
    if options is None:
        options = {}
    if type(options) is not dict:
        raise fail(f"{name}: options must be a dict")
    req = _Prepared(name, method.upper(), url)
    hdrs = options.get("headers")
    if hdrs is not None:
        if type(hdrs) is not dict:
            raise fail(f"{name}: option `headers` must be a dict")
        for k, v in hdrs.items():
            req.headers[str(k).lower()] = text(v)
    auth = options.get("auth")
    if auth is not None:
        req.headers["authorization"] = _auth_header(name, auth)
    if body is None:
        body = options.get("body")
    req.body = _body_text(body, req.headers)
    if "timeout" in options and options["timeout"] is not None:
        ms = millis(options["timeout"])
        if ms is None or ms <= 0:
            raise fail(f"{name}: option `timeout` must be a positive number of milliseconds")
        req.timeout_s = ms / 1000
    retries = options.get("retries")
    if retries is not None:
        if type(retries) is not int or retries < 0:
            raise fail(f"{name}: option `retries` must be a non-negative int")
        req.retries = min(retries, 100)
    backoff = options.get("backoff")
    if backoff is not None:
        ms = millis(backoff)
        if ms is None or ms < 0:
            raise fail(f"{name}: option `backoff` must be a non-negative number of milliseconds")
        req.backoff_ms = ms
    follow = options.get("follow_redirects")
    if follow is not None:
        if type(follow) is not bool:
            raise fail(f"{name}: option `follow_redirects` must be a bool")
        req.follow_redirects = follow
    maxr = options.get("max_redirects")
    if maxr is not None:
        if type(maxr) is not int or maxr < 0:
            raise fail(f"{name}: option `max_redirects` must be a non-negative int")
        req.max_redirects = maxr
    return req


def _auth_header(name: str, auth: Any) -> str:
    if type(auth) is str:
        return f"Bearer {auth}"
    if type(auth) is dict:
        if type(auth.get("bearer")) is str:
            return f"Bearer {auth['bearer']}"
        basic = auth.get("basic")
        if type(basic) is dict and type(basic.get("user")) is str:
            import base64

            pair = f"{basic['user']}:{text(basic.get('password'))}".encode()
            return "Basic " + base64.b64encode(pair).decode("ascii")
    raise fail(
        f"{name}: option `auth` must be a string, {{bearer}} or {{basic: {{user, password}}}}"
    )


# ------------------------------------------------------------------ responses


def _response(status: int, headers: dict[str, str], body: str) -> dict[str, Any]:
    return {"status": status, "headers": headers, "body": body, "ok": 200 <= status < 300}


def _retry_after_ms(headers: dict[str, str]) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if seconds < 0 or seconds != seconds:
        return None
    return min(seconds * 1000, MAX_BACKOFF_MS)


# ------------------------------------------------------------------ real transport

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_clients: dict[int, Any] = {}


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=MAX_CONCURRENT_REQUESTS, thread_name_prefix="harnpy-http"
            )
        return _pool


def _client(max_redirects: int) -> Any:
    import httpx

    with _pool_lock:
        c = _clients.get(max_redirects)
        if c is None:
            c = httpx.Client(max_redirects=max_redirects)
            _clients[max_redirects] = c
        return c


class _NetworkError(Exception):
    """A request that did not get a response (connection refused, DNS, timeout...)."""


def _send(req: _Prepared) -> tuple[int, dict[str, str], str]:
    """Send ``req`` once (on a pool thread); the response's status, lower-case headers and
    body text. Raises :class:`_NetworkError` when no response arrives."""
    import httpx

    try:
        r = _client(req.max_redirects).request(
            req.method,
            req.url,
            headers=req.headers,
            content=None if req.body is None else req.body.encode("utf-8"),
            timeout=req.timeout_s,
            follow_redirects=req.follow_redirects,
        )
    except httpx.TimeoutException:
        raise _NetworkError(f"request to {req.url} timed out after {req.timeout_s:g}s") from None
    except httpx.TooManyRedirects:
        raise _NetworkError(f"more than {req.max_redirects} redirects from {req.url}") from None
    except httpx.HTTPError as exc:
        raise _NetworkError(f"request to {req.url} failed: {exc}") from None
    headers: dict[str, str] = {}
    for k, v in r.headers.multi_items():
        k = k.lower()
        headers[k] = f"{headers[k]}, {v}" if k in headers else v
    return r.status_code, headers, r.content.decode("utf-8", errors="replace")


# ------------------------------------------------------------------ mocks


def _mocks(rt: Any) -> list[dict[str, Any]]:
    m = getattr(rt, "http_mocks", None)
    if m is None:
        m = rt.http_mocks = []
    return m  # type: ignore[no-any-return]


def _mock_calls(rt: Any) -> list[dict[str, Any]]:
    c = getattr(rt, "http_mock_log", None)
    if c is None:
        c = rt.http_mock_log = []
    return c  # type: ignore[no-any-return]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern)),
        re.S,
    )


def _mock_response(name: str, value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise fail(f"{name}: a mock response must be a dict {{status, body, headers}}")
    status = value.get("status", 200)
    if type(status) is not int or not 100 <= status <= 599:
        raise fail(f"{name}: a mock response's status must be an int from 100 to 599")
    headers = value.get("headers") or {}
    if type(headers) is not dict:
        raise fail(f"{name}: a mock response's headers must be a dict")
    body = value.get("body", "")
    body = dumps(body) if type(body) in (dict, list) else text(body)
    return {
        "status": status,
        "headers": {str(k).lower(): text(v) for k, v in headers.items()},
        "body": body,
    }


def _find_mock(rt: Any, method: str, url: str) -> dict[str, Any] | None:
    for m in reversed(_mocks(rt)):
        if m["method"] not in ("*", method):
            continue
        if _pattern_regex(m["pattern"]).fullmatch(url):
            return m
    return None


def _redact_url(url: str) -> str:
    parts = _urlparse.urlsplit(url)
    if not parts.query:
        return url
    pairs = _urlparse.parse_qsl(parts.query, keep_blank_values=True)
    if not any(k.lower() in SENSITIVE_QUERY for k, _ in pairs):
        return url
    query = _urlparse.urlencode(
        [(k, REDACTED if k.lower() in SENSITIVE_QUERY else v) for k, v in pairs], safe="[]"
    )
    return _urlparse.urlunsplit(parts._replace(query=query))


def _answer_from_mock(
    rt: Any, req: _Prepared, mock: dict[str, Any]
) -> tuple[int, dict[str, str], str]:
    _mock_calls(rt).append(
        {"method": req.method, "url": req.url, "headers": dict(req.headers), "body": req.body}
    )
    responses = mock["responses"]
    i = min(mock["next"], len(responses) - 1)
    mock["next"] = i + 1
    r = responses[i]
    return r["status"], dict(r["headers"]), r["body"]


# ------------------------------------------------------------------ the request state machine

_Outcome = tuple[int, dict[str, str], str] | Exception


def _retry_delay(req: _Prepared, attempt: int, outcome: _Outcome) -> float | None:
    """Milliseconds to wait before attempt ``attempt + 1``, or None when ``outcome`` is final."""
    if attempt >= req.retries:
        return None
    if isinstance(outcome, _NetworkError):
        return min(req.backoff_ms * (2**attempt), MAX_BACKOFF_MS)
    if isinstance(outcome, Exception) or outcome[0] not in RETRY_STATUSES:
        return None
    after = _retry_after_ms(outcome[1])
    return min(req.backoff_ms * (2**attempt) if after is None else after, MAX_BACKOFF_MS)


def _final(req: _Prepared, outcome: _Outcome) -> dict[str, Any]:
    """The Harn result of a final outcome, or raise its error."""
    if isinstance(outcome, HarnError):
        raise outcome
    if isinstance(outcome, Exception):
        raise fail(f"{req.name}: {outcome}")
    return _response(*outcome)


def _mock_attempt(rt: Any, req: _Prepared) -> _Outcome:
    mock = _find_mock(rt, req.method, req.url)
    if mock is None:
        return fail(f"{req.name}: no http_mock matches {req.method} {req.url}")
    return _answer_from_mock(rt, req, mock)


def _run(thread: Any, req: _Prepared) -> Any:
    """Answer ``req`` with its retries. A mocked answer that needs no retry is returned at
    once; otherwise ``thread`` blocks (the real request runs on the HTTP pool, waits between
    attempts on the scheduler's timers) and is woken with the result or the error."""
    rt = thread.runtime
    sched = rt.scheduler
    attempt = 0
    first: _Outcome | None = None
    if _mocks(rt):
        first = _mock_attempt(rt, req)
        delay = _retry_delay(req, 0, first)
        if delay is None:
            return _final(req, first)
    waker = block_control(thread, f"{req.name}({req.url})")

    def settle(outcome: _Outcome) -> None:
        nonlocal attempt
        if waker.done:
            return
        delay = _retry_delay(req, attempt, outcome)
        if delay is not None:
            attempt += 1
            sched.at(rt.clock.monotonic_ms() + delay, once)
            return
        try:
            value = _final(req, outcome)
        except HarnError as exc:
            waker.fail(exc)
        else:
            waker.wake(value)

    def done(fut: concurrent.futures.Future[Any]) -> None:
        try:
            outcome: _Outcome = fut.result()
        except _NetworkError as exc:
            outcome = exc
        except Exception as exc:  # noqa: BLE001 - never lose a waiting thread
            outcome = _NetworkError(f"request to {req.url} failed: {exc}")
        settle(outcome)

    def once() -> None:
        if waker.done:
            return
        if _mocks(rt):
            settle(_mock_attempt(rt, req))
        else:
            sched.on_future(_executor().submit(_send, req), done)

    if first is not None:
        settle(first)  # schedules the retry (a final outcome was returned above)
    else:
        once()
    return None


def _request(thread: Any, name: str, method: Any, url: Any, body: Any, options: Any) -> Any:
    return _run(thread, _prepare(name, method, url, body, options))


@builtin(control=True)
def http_get(thread: Any, url: Any = None, options: Any = None) -> Any:
    """``http_get(url, options?)``: a GET request; returns ``{status, headers, body, ok}``.

    Options ``headers``, ``timeout`` (ms), ``retries``, ``backoff`` (ms), ``auth``,
    ``follow_redirects``, ``max_redirects`` (see ``http_request``). Throws
    ``"http_get: ..."`` on a network error, a timeout or an invalid URL."""
    return _request(thread, "http_get", "GET", url, None, options)


@builtin(control=True)
def http_delete(thread: Any, url: Any = None, options: Any = None) -> Any:
    """``http_delete(url, options?)``: a DELETE request; returns ``{status, headers, body,
    ok}`` (options as for ``http_request``)."""
    return _request(thread, "http_delete", "DELETE", url, None, options)


@builtin(control=True)
def http_post(thread: Any, url: Any = None, body: Any = None, options: Any = None) -> Any:
    """``http_post(url, body, options?)``: a POST request with ``body`` (a string, or a dict /
    list sent as JSON); returns ``{status, headers, body, ok}`` (options as for
    ``http_request``)."""
    return _request(thread, "http_post", "POST", url, body, options)


@builtin(control=True)
def http_put(thread: Any, url: Any = None, body: Any = None, options: Any = None) -> Any:
    """``http_put(url, body, options?)``: a PUT request; returns ``{status, headers, body,
    ok}`` (body and options as for ``http_post``)."""
    return _request(thread, "http_put", "PUT", url, body, options)


@builtin(control=True)
def http_patch(thread: Any, url: Any = None, body: Any = None, options: Any = None) -> Any:
    """``http_patch(url, body, options?)``: a PATCH request; returns ``{status, headers,
    body, ok}`` (body and options as for ``http_post``)."""
    return _request(thread, "http_patch", "PATCH", url, body, options)


@builtin(control=True)
def http_request(thread: Any, method: Any = None, url: Any = None, options: Any = None) -> Any:
    """``http_request(method, url, options?)``: any request; returns ``{status: int, headers:
    dict (lower-case names), body: string, ok: bool}``.

    Options: ``headers`` (dict), ``body`` (string, or dict / list sent as JSON), ``timeout``
    (ms, default 30000), ``retries`` (default 0: a network error, a timeout or a 429 / 502 /
    503 / 504 is tried again that many times), ``backoff`` (ms before the first retry,
    default 500, doubled each time; ``Retry-After`` wins), ``auth`` (string bearer token,
    ``{bearer}`` or ``{basic: {user, password}}``), ``follow_redirects`` (default true),
    ``max_redirects`` (default 20). Throws ``"http_request: ..."`` on a network error, a
    timeout, an invalid URL or method, and when mocks are registered but none matches."""
    return _request(thread, "http_request", method, url, None, options)


@builtin()
def http_mock(
    thread: Any, method: Any = None, url_pattern: Any = None, response: Any = None
) -> None:
    """``http_mock(method, url_pattern, response)``: answer matching requests without the
    network. ``method``: an HTTP method or ``"*"``; ``url_pattern``: the whole URL with ``*``
    for any characters; ``response``: ``{status?, body?, headers?}`` or ``{responses:
    [...]}`` (in order, the last repeating). The same method and pattern again replaces the
    earlier mock; the latest matching mock answers."""
    if type(method) is not str or (method != "*" and method.upper() not in _METHODS):
        raise fail('http_mock: method must be an HTTP method or "*"')
    if type(url_pattern) is not str or not url_pattern:
        raise fail("http_mock: url_pattern must be a non-empty string")
    if type(response) is dict and "responses" in response:
        seq = response["responses"]
        if type(seq) is not list or not seq:
            raise fail("http_mock: `responses` must be a non-empty list of responses")
        responses = [_mock_response("http_mock", r) for r in seq]
    else:
        responses = [_mock_response("http_mock", response)]
    m = method if method == "*" else method.upper()
    mocks = _mocks(thread.runtime)
    mocks[:] = [x for x in mocks if (x["method"], x["pattern"]) != (m, url_pattern)]
    mocks.append({"method": m, "pattern": url_pattern, "responses": responses, "next": 0})


@builtin()
def http_mock_clear(thread: Any) -> None:
    """``http_mock_clear()``: remove every mock and the recorded calls (requests go to the
    network again)."""
    thread.runtime.http_mocks = []
    thread.runtime.http_mock_log = []


@builtin()
def http_mock_calls(thread: Any, options: Any = None) -> list[dict[str, Any]]:
    """``http_mock_calls(options?)``: the requests mocks answered, oldest first, as
    ``{method, url, headers, body}``. Sensitive headers and query parameters read
    ``"[REDACTED]"`` unless ``options`` is ``{redact_sensitive: false}`` or
    ``{include_sensitive: true}``."""
    if options is not None and type(options) is not dict:
        raise fail("http_mock_calls: options must be a dict")
    opts = options or {}
    raw = opts.get("redact_sensitive") is False or opts.get("include_sensitive") is True
    out = []
    for c in _mock_calls(thread.runtime):
        headers = dict(c["headers"])
        url = c["url"]
        if not raw:
            headers = {k: (REDACTED if k in SENSITIVE_HEADERS else v) for k, v in headers.items()}
            url = _redact_url(url)
        out.append({"method": c["method"], "url": url, "headers": headers, "body": c["body"]})
    return out


# ------------------------------------------------------------------ snapshot state


def _save_http_mock(thread: Any) -> dict[str, Any] | None:
    rt = thread.runtime
    mocks = getattr(rt, "http_mocks", None)
    calls = getattr(rt, "http_mock_log", None)
    if not mocks and not calls:
        return None
    return {"mocks": [dict(m) for m in mocks or []], "calls": list(calls or [])}


def _load_http_mock(thread: Any, data: Any) -> Any:
    mocks, calls = data["mocks"], data["calls"]
    if type(mocks) is not list or type(calls) is not list:
        raise TypeError("http_mock state must hold lists of mocks and calls")
    checked = []
    for m in mocks:
        if (
            type(m) is not dict
            or type(m.get("method")) is not str
            or type(m.get("pattern")) is not str
        ):
            raise TypeError("an http mock needs a method and a pattern")
        if type(m.get("next")) is not int or m["next"] < 0:
            raise TypeError("an http mock's position must be a non-negative int")
        responses = m.get("responses")
        if type(responses) is not list or not responses:
            raise TypeError("an http mock needs a non-empty list of responses")
        checked.append({**m, "responses": [_checked_response(r) for r in responses]})
    for c in calls:
        if type(c) is not dict or not {"method", "url", "headers", "body"} <= set(c):
            raise TypeError("a recorded http call needs method, url, headers and body")
    rt = thread.runtime

    def apply() -> None:
        rt.http_mocks = checked
        rt.http_mock_log = calls

    return apply


def _checked_response(r: Any) -> dict[str, Any]:
    if (
        type(r) is not dict
        or type(r.get("status")) is not int
        or type(r.get("headers")) is not dict
        or type(r.get("body")) is not str
    ):
        raise TypeError(
            "an http mock response needs an int status, a headers dict and a body string"
        )
    return r


register_state("http_mock", _save_http_mock, _load_http_mock)
