"""A scripted OpenAI/Anthropic-compatible HTTP server on 127.0.0.1 for provider tests.

The server runs stdlib ``http.server`` in a daemon thread on a random local port. Tests queue
replies per path (``/v1/chat/completions``, ``/v1/messages``); each reply has a status, a body
(a dict sent as JSON or a raw string sent verbatim), extra headers and an optional delay in
seconds before answering. Every request is recorded (path, headers, parsed JSON body). When a
path's queue is empty the server answers ``default_reply`` if one is set, else 599 with a
message naming the path, so a test that under-scripts fails loudly instead of hanging.

Nothing here touches the network beyond the loopback interface.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"
MESSAGES_PATH = "/v1/messages"


@dataclass
class Reply:
    """One scripted HTTP answer: ``body`` is JSON-encoded unless it is already a str."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    content_type: str = "application/json"
    #: A streamed answer: the Server-Sent Events to send, one by one, each flushed at once
    #: (``(event_name | None, data)``; a dict ``data`` is JSON-encoded); ``body`` is
    #: ignored. The connection closes after the last event.
    events: list[tuple[str | None, Any]] | None = None
    #: With ``events``: before sending event number ``hold_at`` (default: the last), wait
    #: up to ``hold_timeout_s`` for ``hold`` to be set; the server logs ``"held event
    #: sent"`` after sending it.
    hold: threading.Event | None = None
    hold_at: int = -1
    hold_timeout_s: float = 30.0
    #: Set once this reply has been sent (the server logs ``"served <label>"`` first).
    sets: threading.Event | None = None
    label: str = ""


@dataclass
class RecordedRequest:
    """What the server received: path, lower-cased headers and the decoded JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


class _Server(ThreadingHTTPServer):
    """A threading server whose listen backlog takes hundreds of simultaneous connections
    (the default of 5 makes a burst of concurrent calls wait for TCP retransmits)."""

    request_queue_size = 1024
    daemon_threads = True


class FakeLlmServer:
    """Scripted HTTP server; use as a context manager or call ``start``/``stop``."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[Reply]] = {}
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.default_reply: Reply | None = None
        #: What the server did, in order (``"served <label>"``, ``"held event sent"``).
        self.log: list[str] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------
    def queue(self, path: str, *replies: Reply) -> None:
        """Append replies for ``path`` (served in FIFO order)."""
        with self._lock:
            self._queues.setdefault(path, deque()).extend(replies)

    def _next_reply(self, path: str) -> Reply:
        with self._lock:
            q = self._queues.get(path)
            if q:
                return q.popleft()
        if self.default_reply is not None:
            return self.default_reply
        return Reply(status=599, body={"error": {"message": f"no scripted reply for {path}"}})

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """Recorded requests for one path, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (the OpenAI-style base URL)."""
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>`` (the Anthropic-style base URL)."""
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> FakeLlmServer:
        """Bind a random port on 127.0.0.1 and serve in a daemon thread."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.requests.append(
                        RecordedRequest(
                            path=path,
                            headers={k.lower(): v for k, v in self.headers.items()},
                            body=body,
                        )
                    )
                reply = server._next_reply(path)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.events is not None:
                    self._stream(reply)
                    return
                payload = (
                    reply.body
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body if reply.body is not None else {})
                ).encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("content-length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                    self._served(reply)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up (timeout test); nothing to answer.
                    pass

            def _stream(self, reply: Reply) -> None:
                events = reply.events or []
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.send_header("connection", "close")
                    self.end_headers()
                    self.wfile.flush()
                    held = reply.hold_at % len(events) if events else -1
                    for i, (name, data) in enumerate(events):
                        if i == held and reply.hold is not None:
                            reply.hold.wait(reply.hold_timeout_s)
                        text = data if isinstance(data, str) else json.dumps(data)
                        frame = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
                        self.wfile.write(frame.encode("utf-8"))
                        self.wfile.flush()
                        if i == held:
                            with server._lock:
                                server.log.append("held event sent")
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def _served(self, reply: Reply) -> None:
                if reply.sets is not None or reply.label:
                    with server._lock:
                        server.log.append(f"served {reply.label}")
                if reply.sets is not None:
                    reply.sets.set()

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeLlmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- canned bodies ---------------------------------------------------------------------------
def openai_text(text: str, *, model: str = "gpt-4o", prompt_tokens: int = 7) -> dict[str, Any]:
    """A chat.completion body whose single choice answers ``text``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 3,
            "total_tokens": prompt_tokens + 3,
        },
    }


def openai_tool_call(
    name: str, arguments: str, *, call_id: str = "call_1", content: str | None = None
) -> dict[str, Any]:
    """A chat.completion body with one native tool call (``arguments`` is a JSON string)."""
    return {
        "id": "chatcmpl-tool",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }


def anthropic_text(text: str, *, model: str = "claude-sonnet-5") -> dict[str, Any]:
    """A Messages API body with one text block."""
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 4},
    }


def anthropic_tool_use(
    name: str, input_: dict[str, Any], *, call_id: str = "toolu_1", text: str | None = None
) -> dict[str, Any]:
    """A Messages API body with an optional text block then one ``tool_use`` block."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    content.append({"type": "tool_use", "id": call_id, "name": name, "input": input_})
    return {
        "id": "msg_tool",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 8},
    }


def error_body(message: str, type_: str = "error") -> dict[str, Any]:
    """An error body shaped like both APIs' error envelopes."""
    return {"type": "error", "error": {"type": type_, "message": message}}


def openai_stream_events(
    parts: list[str], *, model: str = "gpt-4o", finish: str = "stop"
) -> list[tuple[str | None, Any]]:
    """The ``chat.completion.chunk`` events of an answer made of ``parts`` (one content
    delta each), then the finish reason, a usage-only chunk and ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-stream",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant"}))]
    events += [(None, chunk({"content": p})) for p in parts]
    events.append((None, chunk({}, finish)))
    usage = {"prompt_tokens": 5, "completion_tokens": len(parts), "total_tokens": 5 + len(parts)}
    events.append((None, {"id": "chatcmpl-stream", "model": model, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return events


def anthropic_stream_events(
    parts: list[str], *, model: str = "claude-sonnet-5"
) -> list[tuple[str | None, Any]]:
    """The Messages API events of an answer whose one text block is made of ``parts``."""
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_stream",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 9, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
        )
        for p in parts
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": len(parts)},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events
