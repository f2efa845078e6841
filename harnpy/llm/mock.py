"""The scripted ``mock`` provider (lifecycle.md 2.15) and its JSONL fixture/recording format.

Selection for each call, exactly as Harn's ``crates/harn-vm/src/llm/mock.rs``:

1. Record the call ``{messages, system, tools, thinking}`` (returned by ``calls()``, i.e.
   ``llm_mock_calls()``). ``messages`` are compact dicts (``Message.to_wire``); ``tools`` is
   the list of natively offered tools ``{name, description, parameters}`` or None.
2. If a ``--llm-mock`` fixture is loaded, select from it first (same rules 3-4), then from the
   ``llm_mock`` queue; if neither answers, the call fails with category ``mock_unmatched``
   (``No --llm-mock fixture matched prompt: "..."``) instead of using the defaults.
3. If any queued entry **without** ``match`` exists, remove and use the first one (FIFO
   entries win over patterns, whatever the text).
4. Else scan pattern entries in declaration order against the match text (every non-empty
   string inside the messages, depth-first, joined by ``\\n``): the first glob hit wins and
   is removed only when ``consume_match`` is true. Globs know only ``*``: ``*`` alone matches
   everything, no ``*`` means equality, otherwise the first segment is a prefix, the last a
   suffix and the middle ones must appear in order.
5. Else the documented default:

   * tools offered natively (``tool_format`` not ``"text"``): call the **first** tool, id
     ``mock_call_1``, with placeholder arguments for its required parameters by JSON type
     (string ``""``, integer ``0``, number ``0.0``, boolean ``false``, array ``[]``, object
     ``{}``; unknown types ``""``); text ``""``, output tokens 20.
   * otherwise the text ``Mock response to <N>-word prompt: <first 100 chars of the last
     prompt>`` (``Mock LLM response`` when there is no prompt text), where the last prompt is
     the text of the last message with non-blank content and N its whitespace-separated word
     count; wrapped as ``<assistant_prose>…</assistant_prose>\\n<done>##DONE##</done>`` only
     when the system prompt contains ``<done>``; output tokens 30.
   * input tokens: the UTF-8 byte length of the last prompt text.
   * an ``llm_completion`` request (``request.completion``): the text ``Mock completion
     after <len(prefix)> chars before <len(suffix)> chars``.

An entry with ``error: {category?, message, status?, retry_after_ms?, kind?, reason?}``
raises ``LlmError(category, message, status)`` instead of answering (see
:class:`MockError`). A scripted entry's defaults: input tokens = UTF-8 byte length of the match
text, output tokens 30, tool call ids ``mock_call_<k>`` (k = position in the entry) unless
given, model = entry model, else the request model, else ``"mock"``.

Fixture files (``--llm-mock FILE.jsonl``) hold one entry per line with the same fields as
``llm_mock``; blank lines are skipped. ``--llm-mock-record FILE`` writes each real response
(or final error) in that format through :class:`RecordingProvider`.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal

import attrs

from harnpy.llm.errors import (
    CONFIG,
    DISABLED,
    GENERIC,
    MOCK_UNMATCHED,
    LlmError,
    category_for_status,
    type_name,
)
from harnpy.llm.mock_log import CallLog, collect_strings
from harnpy.llm.types import (
    LlmRequest,
    LlmResponse,
    ToolCall,
    ToolSpec,
    Usage,
    validation_message,
)
from harnpy.security.files import ReadRefused, read_capped
from harnpy.shapes import ShapeError, shape, structure, unstructure

DEFAULT_TOOL_CALL_ID = "mock_call_1"
DONE_WRAP = "<assistant_prose>{body}</assistant_prose>\n<done>##DONE##</done>"
_PLACEHOLDERS: dict[str, Any] = {
    "integer": 0,
    "number": 0.0,
    "boolean": False,
    "array": [],
    "object": {},
}


@shape(forbid_extra=True)
@attrs.define
class MockError:
    """``error`` of a mock entry: the categorized failure to raise (``status``: the HTTP
    status a recorded provider failure came with; ``kind`` / ``reason``: the envelope's,
    when scripted — Harn's ``{status: 503, kind: "transient", reason: "..."}`` form).

    Without ``category`` the category comes from ``status`` (429 ``rate_limit``, 503
    ``overloaded``...), else ``generic``."""

    category: str | None = None
    message: str = "mock error"
    retry_after_ms: int | None = None
    status: int | None = None
    kind: Literal["transient", "terminal"] | None = None
    reason: str | None = None

    def to_llm_error(self) -> LlmError:
        """The :class:`LlmError` this entry raises."""
        category = self.category
        if category is None:
            category = category_for_status(self.status) if self.status is not None else GENERIC
        retry = self.retry_after_ms
        return LlmError(
            category,
            self.message,
            self.status,
            retry_after_s=None if retry is None else retry / 1000.0,
            kind=self.kind,
            reason=self.reason,
        )


@shape(forbid_extra=True)
@attrs.define(kw_only=True)
class MockToolCall:
    """A scripted tool call ``{id?, name, arguments}``."""

    id: str | None = None
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)


@shape(forbid_extra=True)
@attrs.define
class MockEntry:
    """One ``llm_mock`` entry / one JSONL fixture line (lifecycle.md 2.15 fields).

    ``cache_read_tokens``, ``cache_write_tokens``, ``provider`` and ``blocks`` are accepted
    for compatibility with Harn recordings; ``blocks`` is ignored.
    """

    text: str = ""
    tool_calls: list[MockToolCall] = attrs.field(factory=list)
    match: str | None = None
    consume_match: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    thinking: str | None = None
    thinking_summary: str | None = None
    stop_reason: str | None = None
    model: str | None = None
    provider: str | None = None
    error: MockError | None = None
    blocks: list[Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain data, only the fields that differ from their defaults."""
        return unstructure(self, exclude_defaults=True)  # type: ignore[no-any-return]

    def to_jsonl(self) -> str:
        """One JSON line with only the fields that differ from their defaults."""
        return json.dumps(self.to_dict(), ensure_ascii=False)


def parse_mock_entry(value: Any, where: str = "llm_mock") -> MockEntry:
    """Validate an ``llm_mock`` argument (a dict) into a MockEntry.

    ``None`` values are treated as absent (Harn ``nil``).

    Raises:
        LlmError: ``config`` with a one-line reason (unknown field, wrong type).
    """
    if isinstance(value, MockEntry):
        return value
    if not isinstance(value, Mapping):
        raise LlmError(CONFIG, f"{where}: expected a dict, got {type_name(value)}")
    cleaned = {k: v for k, v in value.items() if v is not None}
    try:
        return structure(cleaned, MockEntry)
    except ShapeError as exc:
        raise LlmError(CONFIG, validation_message(exc, where)) from None


#: Largest ``--llm-mock`` file read (bytes): a fixture is read whole, so a device or a huge
#: file is refused before it is read instead of filling memory.
MAX_MOCK_FILE_BYTES = 64 * 1024 * 1024


def load_mock_jsonl(path: str | Path) -> list[MockEntry]:
    """Read a ``--llm-mock`` fixture file: one entry per line, blank lines skipped.

    Raises:
        LlmError: ``config`` naming ``<path>:<line>`` for unreadable or non-UTF-8 files
            (a UTF-8 byte order mark is skipped), invalid JSON or invalid entries.
    """
    p = Path(path)
    try:
        # utf-8-sig: a leading byte order mark (editors on Windows) is not part of line 1
        lines = read_capped(str(p), MAX_MOCK_FILE_BYTES).decode("utf-8-sig").splitlines()
    except ReadRefused as exc:  # a FIFO, a device, a directory, over the cap: nothing read
        raise LlmError(CONFIG, f"--llm-mock: {exc.message}") from None
    except OSError as exc:
        raise LlmError(CONFIG, f"--llm-mock: cannot read {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise LlmError(
            CONFIG, f"--llm-mock: {p} is not UTF-8 text (invalid byte at offset {exc.start})"
        ) from None
    entries = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LlmError(CONFIG, f"{p}:{lineno}: invalid JSON ({exc.msg})") from None
        entries.append(parse_mock_entry(value, f"{p}:{lineno}"))
    return entries


def glob_match(pattern: str, text: str) -> bool:
    """Harn's mock glob: only ``*`` is special (see module docstring)."""
    if pattern == "*":
        return True
    if "*" not in pattern:
        return pattern == text
    parts = pattern.split("*")
    remaining = text
    last = len(parts) - 1
    for i, part in enumerate(parts):
        if not part:
            continue
        if i == 0:
            if not remaining.startswith(part):
                return False
            remaining = remaining[len(part) :]
        elif i == last:
            if not remaining.endswith(part):
                return False
            remaining = ""
        else:
            pos = remaining.find(part)
            if pos < 0:
                return False
            remaining = remaining[pos + len(part) :]
    return True


def match_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """All non-empty strings inside the messages (depth-first), joined by newlines."""
    parts: list[str] = []
    for message in messages:
        collect_strings(dict(message), parts)
    return "\n".join(parts)


def last_prompt_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The content text of the last message whose content is not blank (else ``""``)."""
    for message in reversed(messages):
        if "content" not in message:
            continue
        parts: list[str] = []
        collect_strings(message["content"], parts)
        text = "\n".join(parts)
        if text.strip():
            return text
    return ""


def placeholder_args(tool: ToolSpec) -> dict[str, Any]:
    """Placeholder values for the tool's required parameters, by JSON type."""
    schema = tool.parameters
    required = schema.get("required") or []
    props = schema.get("properties") or {}
    args: dict[str, Any] = {}
    if not isinstance(props, dict):
        return args
    for name, prop in props.items():
        if name not in required:
            continue
        kind = prop.get("type", "string") if isinstance(prop, dict) else "string"
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        args[name] = copy.copy(_PLACEHOLDERS.get(kind, ""))
    return args


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


class MockProvider:
    """The ``mock`` provider: FIFO/pattern queues, an optional CLI fixture, call recording.

    Thread-safe (one lock around each call), so it can serve pool workers. State is
    per instance: the interpreter keeps one per run (no module globals).
    """

    name = "mock"

    def __init__(self) -> None:
        self._queue: list[MockEntry] = []
        self._fixture: list[MockEntry] | None = None
        self._calls = CallLog()
        self._lock = threading.Lock()

    # -- llm_mock / llm_mock_calls / llm_mock_clear ----------------------------------------
    def push(self, entry: MockEntry | Mapping[str, Any]) -> MockEntry:
        """Queue one reply (``llm_mock(response)``); returns the validated entry.

        Raises:
            LlmError: ``config`` for an invalid entry (see :func:`parse_mock_entry`).
        """
        parsed = parse_mock_entry(entry)
        with self._lock:
            self._queue.append(parsed)
        return parsed

    def calls(self) -> list[dict[str, Any]]:
        """Recorded calls, oldest first: ``[{messages, system, tools, thinking}]`` (copies)."""
        with self._lock:
            return self._calls.export()

    def clear(self) -> None:
        """``llm_mock_clear()``: drop queued entries and recorded calls.

        A loaded ``--llm-mock`` fixture is an outer harness and stays (as in Harn's scoped
        mocks); use :meth:`load_fixture` with None to remove it.
        """
        with self._lock:
            self._queue.clear()
            self._calls.clear()

    def pending(self) -> int:
        """Number of queued ``llm_mock`` entries not consumed yet."""
        with self._lock:
            return len(self._queue)

    def load_fixture(self, entries: Iterable[MockEntry] | None) -> None:
        """Install ``--llm-mock`` entries (replacing any previous fixture), or remove with None."""
        with self._lock:
            self._fixture = None if entries is None else list(entries)

    # -- snapshots ------------------------------------------------------------------------
    def export_state(self) -> dict[str, Any]:
        """JSON-friendly state (queue, fixture, calls) for snapshots."""
        with self._lock:
            return {
                "queue": [e.to_dict() for e in self._queue],
                "fixture": None if self._fixture is None else [e.to_dict() for e in self._fixture],
                "calls": self._calls.export(),
            }

    def import_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`export_state` produced.

        Raises:
            LlmError: ``config`` when an entry is invalid.
        """
        queue = [parse_mock_entry(e, "mock state") for e in state.get("queue") or []]
        raw_fixture = state.get("fixture")
        fixture = (
            None
            if raw_fixture is None
            else [parse_mock_entry(e, "mock state") for e in raw_fixture]
        )
        with self._lock:
            self._queue = queue
            self._fixture = fixture
            self._calls.load(list(state.get("calls") or []))

    def snapshot_state(self, calls: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
        """The queue and the call log (compact, see
        :meth:`~harnpy.llm.mock_log.CallLog.export_compact`) as plain data for a program
        snapshot, or None when both are empty. The ``--llm-mock`` fixture is not included:
        it is part of the command line, given again to ``run --resume``. ``calls``: the
        log as :meth:`snapshot_calls` gave it just before (a park that stores it apart
        from the snapshot passes the very list it detaches)."""
        with self._lock:
            if calls is None:
                calls = self._calls.export_compact()
            if not self._queue and not calls:
                return None
            return {"queue": [e.to_dict() for e in self._queue], "calls": calls}

    def snapshot_calls(self) -> list[dict[str, Any]]:
        """The call log's compact records without copying them
        (:meth:`~harnpy.llm.mock_log.CallLog.compact_records`: read-only)."""
        with self._lock:
            return self._calls.compact_records()

    def check_snapshot_state(self, state: Any) -> Callable[[], None]:
        """Validate what :meth:`snapshot_state` produced; returns the function that
        installs it (replacing the queue and the log).

        Raises:
            ValueError: a malformed state or entry.
        """
        if not isinstance(state, Mapping) or set(state) != {"queue", "calls"}:
            raise ValueError("llm_mock state must be {queue, calls}")
        if not isinstance(state["queue"], list) or not isinstance(state["calls"], list):
            raise ValueError("llm_mock state: `queue` and `calls` must be lists")
        try:
            queue = [parse_mock_entry(e, "llm_mock state") for e in state["queue"]]
        except LlmError as exc:
            raise ValueError(exc.message) from None
        log = CallLog()
        log.load_compact(state["calls"])

        def apply() -> None:
            with self._lock:
                self._queue = queue
                self._calls = log

        return apply

    # -- the call -------------------------------------------------------------------------
    def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer ``request`` by the selection rules in the module docstring.

        Raises:
            LlmError: the category of a scripted ``error`` entry, or ``mock_unmatched`` when
                a ``--llm-mock`` fixture is loaded and nothing matched.
        """
        response = self._complete(request, intercept=False)
        assert response is not None
        return response

    def stream(self, request: LlmRequest, on_delta: Callable[[str], None]) -> LlmResponse:
        """:meth:`complete`, with the answer's text handed to ``on_delta`` chunk by chunk
        (:func:`harnpy.llm.streaming.chunks`: each word with the whitespace after it)
        before the response is returned. Raises as :meth:`complete` (before any chunk)."""
        response = self.complete(request)
        emit_chunks(response.text, on_delta)
        return response

    def intercept(self, request: LlmRequest) -> LlmResponse | None:
        """Answer a call meant for a real provider when a queued ``llm_mock`` entry answers
        it (Harn's mock intercepts every provider while entries are queued): a FIFO entry,
        or a pattern entry whose glob matches. Returns None — recording nothing — when no
        entry answers; the real provider then serves the call. The answer's ``provider`` is
        the entry's, else the request's.

        Raises:
            LlmError: the category of a scripted ``error`` entry.
        """
        return self._complete(request, intercept=True)

    def _answers(self, request: LlmRequest) -> bool:
        """Whether a queued entry would answer ``request`` (the lock is held)."""
        if not self._queue:
            return False
        if any(e.match is None for e in self._queue):
            return True
        text = match_text([m.to_wire() for m in request.messages])
        return any(e.match is not None and glob_match(e.match, text) for e in self._queue)

    def _complete(self, request: LlmRequest, *, intercept: bool) -> LlmResponse | None:
        tools = request.native_tools()
        with self._lock:
            if intercept and not self._answers(request):
                return None
            messages, texts = self._calls.record(
                request.messages,
                request.system,
                copy.deepcopy(request.tool_payload)
                if request.tool_payload is not None
                else ([t.to_dict() for t in tools] if tools else None),
                copy.deepcopy(request.thinking),
            )
            cached: list[str] = []

            def match() -> str:
                if not cached:
                    cached.append(texts())
                return cached[0]

            entry = None
            if self._fixture is not None:
                entry = _take(self._fixture, match)
            if entry is None:
                entry = _take(self._queue, match)
            fixture_active = self._fixture is not None
        if entry is not None:
            return _scripted(entry, request, match)
        text = match() if fixture_active else ""
        if fixture_active:
            snippet = text[:200] + ("..." if len(text) > 200 else "")
            raise LlmError(
                MOCK_UNMATCHED, f"No --llm-mock fixture matched prompt: {json.dumps(snippet)}"
            )
        return _default(request, messages, tools)


def _take(entries: list[MockEntry], text: Callable[[], str]) -> MockEntry | None:
    for i, entry in enumerate(entries):
        if entry.match is None:
            return entries.pop(i)
    for i, entry in enumerate(entries):
        if entry.match is not None and glob_match(entry.match, text()):
            return entries.pop(i) if entry.consume_match else entry
    return None


def _scripted(entry: MockEntry, request: LlmRequest, text: Callable[[], str]) -> LlmResponse:
    if entry.error is not None:
        # a recorded failure names the provider and model it came from
        raise entry.error.to_llm_error().tag(entry.provider, entry.model)
    calls = [
        ToolCall(
            id=tc.id if tc.id and tc.id.strip() else f"mock_call_{k}",
            name=tc.name,
            arguments=copy.deepcopy(tc.arguments),
        )
        for k, tc in enumerate(entry.tool_calls, start=1)
    ]
    return LlmResponse(
        text=entry.text,
        tool_calls=calls,
        usage=Usage(
            input_tokens=entry.input_tokens
            if entry.input_tokens is not None
            else _utf8_len(text()),
            output_tokens=entry.output_tokens if entry.output_tokens is not None else 30,
            cache_read_tokens=entry.cache_read_tokens or 0,
            cache_write_tokens=entry.cache_write_tokens or 0,
        ),
        stop_reason=entry.stop_reason,
        model=entry.model or request.model or "mock",
        provider=entry.provider or request.provider or "mock",
        raw_thinking=entry.thinking,
        thinking_summary=entry.thinking_summary,
    )


def _default(
    request: LlmRequest, messages: list[dict[str, Any]], tools: list[ToolSpec]
) -> LlmResponse:
    prompt = last_prompt_text(messages)
    model = request.model or "mock"
    if request.completion is not None:
        prefix, suffix = request.completion.get("prefix", ""), request.completion.get("suffix", "")
        return LlmResponse(
            text=f"Mock completion after {len(prefix)} chars before {len(suffix)} chars",
            usage=Usage(input_tokens=_utf8_len(prefix + suffix), output_tokens=30),
            model=model,
            provider="mock",
        )
    if tools:
        first = tools[0]
        return LlmResponse(
            text="",
            tool_calls=[
                ToolCall(
                    id=DEFAULT_TOOL_CALL_ID, name=first.name, arguments=placeholder_args(first)
                )
            ],
            usage=Usage(input_tokens=_utf8_len(prompt), output_tokens=20),
            model=model,
            provider="mock",
        )
    if prompt:
        body = f"Mock response to {len(prompt.split())}-word prompt: {prompt[:100]}"
    else:
        body = "Mock LLM response"
    if request.system and "<done>" in request.system:
        body = DONE_WRAP.format(body=body)
    return LlmResponse(
        text=body,
        usage=Usage(input_tokens=_utf8_len(prompt), output_tokens=30),
        model=model,
        provider="mock",
    )


# -- recording (--llm-mock-record) ------------------------------------------------------------
def entry_from_response(response: LlmResponse) -> MockEntry:
    """The fixture entry that replays ``response`` (text, tool calls, tokens, model, ...)."""
    return MockEntry(
        text=response.text,
        tool_calls=[
            MockToolCall(id=tc.id, name=tc.name, arguments=tc.arguments)
            for tc in response.tool_calls
        ],
        input_tokens=response.usage.input_tokens,
        output_tokens=response.usage.output_tokens,
        cache_read_tokens=response.usage.cache_read_tokens or None,
        cache_write_tokens=response.usage.cache_write_tokens or None,
        thinking=response.raw_thinking,
        thinking_summary=response.thinking_summary,
        stop_reason=response.stop_reason,
        model=response.model or None,
        provider=response.provider or None,
    )


def entry_from_error(error: LlmError) -> MockEntry:
    """The fixture entry that replays a provider failure as ``error: {category, message,
    status?, retry_after_ms?}``."""
    kind = error.kind if error.kind in ("transient", "terminal") else None
    return MockEntry(
        error=MockError(
            category=error.category,
            message=error.message,
            retry_after_ms=error.retry_after_ms,
            status=error.status,
            kind=kind,  # type: ignore[arg-type]
            reason=error.reason,
        ),
        provider=error.provider,
        model=error.model,
    )


class MockRecorder:
    """Writes fixture lines to a file (truncated on open), flushing after every line.

    Thread-safe; use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._fh: IO[str] | None = self.path.open("w", encoding="utf-8")
        except OSError as exc:
            raise LlmError(
                CONFIG, f"--llm-mock-record: cannot write {self.path}: {exc.strerror or exc}"
            ) from None
        self._lock = threading.Lock()
        self.count = 0

    def write(self, entry: MockEntry) -> None:
        """Append one entry as a JSON line."""
        with self._lock:
            if self._fh is None:
                raise LlmError(CONFIG, f"--llm-mock-record: {self.path} is closed")
            self._fh.write(entry.to_jsonl() + "\n")
            self._fh.flush()
            self.count += 1

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> MockRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordingProvider:
    """Wraps a real provider and records each answer (and each final network error).

    ``config`` and ``disabled`` errors happen before any request and are not recorded.
    """

    def __init__(self, inner: Any, recorder: MockRecorder) -> None:
        self.inner = inner
        self.recorder = recorder
        self.name = getattr(inner, "name", "recorded")

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Delegate to the wrapped provider, then write the fixture line."""
        try:
            response: LlmResponse = self.inner.complete(request)
        except LlmError as err:
            if err.category not in (CONFIG, DISABLED):
                err.tag(request.provider, request.model)
                self.recorder.write(entry_from_error(err))
            raise
        self.recorder.write(entry_from_response(response))
        return response

    def stream(self, request: LlmRequest, on_delta: Callable[[str], None]) -> LlmResponse:
        """Delegate to the wrapped provider's ``stream`` (its ``complete`` when it has none,
        the text then handed over in chunks), then write the fixture line."""
        try:
            if hasattr(self.inner, "stream"):
                response: LlmResponse = self.inner.stream(request, on_delta)
            else:
                response = self.inner.complete(request)
                emit_chunks(response.text, on_delta)
        except LlmError as err:
            if err.category not in (CONFIG, DISABLED):
                err.tag(request.provider, request.model)
                self.recorder.write(entry_from_error(err))
            raise
        self.recorder.write(entry_from_response(response))
        return response


def emit_chunks(text: str, on_delta: Callable[[str], None]) -> None:
    """Hand ``text`` to ``on_delta`` in stream chunks (:func:`harnpy.llm.streaming.chunks`)."""
    from harnpy.llm.streaming import chunks

    for part in chunks(text):
        on_delta(part)
