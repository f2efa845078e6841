"""Structured LLM calls: JSON extraction, schema retries, the repair pass, ``agent_trace``.

Harn ``docs/src/llm/llm_call.md`` (``llm_call_structured`` and its variants) over the
``llm_call`` machinery of :mod:`harnpy.lifecycle.llm_builtins`:

* **Output options** (:func:`normalize_output_options`, :func:`output_spec`): ``output_format``
  (``"text"``, ``"json_object"``, or ``{kind: "json_schema", schema, strict?}``) is lowered to
  ``response_format`` / ``output_schema``; a schema may be a JSON Schema / canonical Harn
  schema dict (``schema_of(T)``, a ``type`` alias used as a value) or a ``struct`` (its
  declared fields; the validated data is then built as an instance of the struct).
  ``schema_retries`` (default 1 for ``llm_call``, 3 for the structured helpers; ``retries``
  is its alias there), ``schema_retry_nudge`` (default true) and ``output_validation``
  (``"error"`` | ``"warn"`` | ``"off"``) steer the schema loop.
* **The schema loop** (:class:`SchemaLoop`): each answer's JSON is taken from the whole text,
  a fenced block, or the first balanced ``{...}`` / ``[...]`` in prose
  (:func:`extract_json_value`), then validated. An invalid answer is asked again with the
  *original* messages plus one corrective user message (the nudge; with
  ``schema_retry_nudge: false`` the original messages exactly) -- the invalid answer is not
  replayed. Every retry records a ``schema_retry`` trace event.
* **The repair pass** (``llm_call_structured_result`` with ``repair: {enabled: true, ...}``):
  once the main call ended with malformed or schema-invalid JSON (never after a transport
  failure), one more call with the repair overrides asks the model to fix the raw text.
* **agent_trace()**: the run's trace events, oldest first -- ``{type: "llm_call", ...}`` for
  every model answer and ``{type: "schema_retry", ...}`` for every schema retry; the
  events of ``agent_loop`` turns come from :mod:`harnpy.lifecycle.loop_trace`. Kept on the
  runtime as snapshot data (runtime-state section ``agent_trace``), stored as rows apart
  from a park's checkpoint body.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harnpy.lifecycle._common import arg, require_instruction_call, strip_harness
from harnpy.lifecycle.llm_builtins import (
    Again,
    build,
    message_cache,
    schema_issues,
    submit_blocking,
    visible_text,
)
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.extensions import register_state
from harnpy.runtime.values import StructType, StructValue
from harnpy.stdlib.registry import builtin

#: ``schema_retries`` of the structured helpers when the caller gives none (Harn's default).
STRUCTURED_SCHEMA_RETRIES = 3
#: At most this many trace events are kept (the oldest are dropped first).
MAX_TRACE_EVENTS = 10_000
#: Events kept beyond :data:`MAX_TRACE_EVENTS` before the oldest are dropped (at once).
TRACE_SLACK = 1_000
#: Runtime attribute holding the trace events (a list of Harn dicts).
TRACE_ATTR = "structured_agent_trace"
#: Runtime attribute holding the trace list a park is snapshotting (:func:`pin_trace`).
TRACE_PIN_ATTR = "structured_agent_trace_pinned"
#: Problem reported for an answer without any JSON value in it.
NO_JSON = "the answer contains no parseable JSON"

_VALIDATIONS = ("error", "warn", "off")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)
# Canonical Harn type names that JSON Schema spells differently (a schema using them is
# converted to JSON Schema before it goes to a provider).
_HARN_TYPES = frozenset({"dict", "int", "float", "bool", "list", "nil", "any", "set"})
# At most this many `{` / `[` positions are tried when JSON is searched for in prose.
_MAX_CANDIDATES = 64


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


# ------------------------------------------------------------------ errors


def _error(category: str, message: str, request: Any = None, **extra: Any) -> dict[str, Any]:
    """The error value of a structured-call failure: the ``llm_call`` error envelope when
    the LLM layer provides one (``{kind, reason, category, message, provider, model}``),
    else ``{category, message}``; ``extra`` fields (``errors``, ``text``) are added."""
    from harnpy.lifecycle import llm_builtins

    make = getattr(llm_builtins, "error_envelope", None)
    if make is not None:
        return make(category, message, request, **extra)  # type: ignore[no-any-return]
    return {"category": category, "message": message, **extra}


def _config(where: str, message: str) -> HarnThrow:
    return HarnThrow(_error("config", f"{where}: {message}"))


def _value_error(value: Any) -> dict[str, Any]:
    """A thrown Harn value as an error dict (``{category: "generic", message}`` for a
    non-dict)."""
    if type(value) is dict:
        return value
    from harnpy.runtime.display import display

    return _error("generic", display(value))


# ------------------------------------------------------------------ JSON extraction


def _loads(text: str) -> Any:
    value, end = _DECODER.raw_decode(text)
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def extract_json_value(text: str) -> tuple[bool, Any, bool, str]:
    """Find the JSON value of a model answer: ``(found, value, extracted, problem)``.

    Tried in order: the whole (visible) text; each fenced code block (```json or plain);
    the first ``{``/``[`` in the text from which one JSON object or array decodes (balanced
    brackets, prose after it ignored). ``extracted`` is true when the JSON had to be lifted
    from fences or prose. ``NaN`` / ``Infinity`` are not JSON. ``problem`` (when not found)
    is :data:`NO_JSON` or says the JSON is nested too deeply.
    """
    body = visible_text(text) or text.strip()
    problem = NO_JSON
    try:
        return True, _loads(body), False, ""
    except ValueError:
        pass
    except RecursionError:
        return False, None, False, "the answer's JSON is nested too deeply"
    try:
        for block in _FENCE.findall(body):
            try:
                return True, _loads(block.strip()), True, ""
            except ValueError:
                continue
        tried = 0
        for m in re.finditer(r"[\[{]", body):
            tried += 1
            if tried > _MAX_CANDIDATES:
                break
            try:
                value, _ = _DECODER.raw_decode(body, m.start())
            except ValueError:
                continue
            if type(value) in (dict, list):
                return True, value, True, ""
    except RecursionError:
        problem = "the answer's JSON is nested too deeply"
    return False, None, False, problem


# ------------------------------------------------------------------ schemas and options


def struct_schema(thread: Any, st: StructType) -> dict[str, Any]:
    """The canonical schema of struct ``st`` from its declaration in the calling module
    (fields with their declared types; optional fields not required). Falls back to the
    field names with type ``any`` when the declaration cannot be found."""
    from harnpy.runtime.modules import collect_types
    from harnpy.stdlib.schema import type_to_schema
    from harnpy.syntax import ast as A

    frame = thread.current_frame()
    module = getattr(getattr(frame, "code", None), "module", None)
    aliases: dict[str, Any] = {}
    structs: dict[str, Any] = {}
    if module is not None:
        aliases, structs = collect_types(module.ast)
    seen: set[str] = set()

    def resolve(name: str) -> Any:
        if name in seen:
            return None
        seen.add(name)
        try:
            if name in aliases:
                return type_to_schema(aliases[name], resolve)
            decl = structs.get(name)
            if decl is None:
                return None
            shape = A.TypeShape(
                tuple(
                    A.ShapeField(f.name, f.type or A.TypeName("any"), f.optional)
                    for f in decl.fields
                )
            )
            return type_to_schema(shape, resolve)
        finally:
            seen.discard(name)

    schema = resolve(st.name)
    if schema is None:
        schema = {
            "type": "dict",
            "properties": {f: {"type": "any"} for f in st.fields},
            "required": [f for f in st.fields if f not in st.optional],
        }
    return schema  # type: ignore[no-any-return]


def _wire_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as a provider gets it: canonical Harn schemas (``type: "dict"``...) are
    converted to JSON Schema; JSON Schema dicts pass unchanged."""
    if schema.get("type") not in _HARN_TYPES:
        return schema
    from harnpy.stdlib.schema import canonicalize, to_json_schema

    try:
        return to_json_schema(canonicalize(schema))
    except ValueError:
        return schema


def resolve_schema(thread: Any, schema: Any, where: str) -> tuple[dict[str, Any], Any]:
    """``(schema dict, struct or None)`` for a schema argument: a dict as given, a struct's
    declared shape (see :func:`struct_schema`).

    Raises:
        HarnThrow: ``config`` envelope for anything else.
    """
    if type(schema) is dict:
        return schema, None
    if isinstance(schema, StructType):
        return struct_schema(thread, schema), schema
    from harnpy.runtime.values import type_name

    raise _config(where, f"schema must be a schema dict or a type, got {type_name(schema)}")


_SCHEMA_KEYS = ("output_schema", "schema", "json_schema")


def normalize_output_options(thread: Any, options: Any, where: str) -> Any:
    """``options`` with the output shape spelled the way the request builder reads it.

    ``output_format`` -- ``"text"``, ``"json_object"`` (or ``"json"``), or a dict ``{kind:
    "text" | "json_object" | "json_schema", schema?, strict?}`` -- sets ``response_format:
    "json"`` and, for ``json_schema``, ``output_schema``; a struct given as the schema is
    replaced by its schema dict. Returns ``options`` itself when nothing changes (and
    anything that is not a dict as is: the builder reports it).

    Raises:
        HarnThrow: ``config`` envelope for a malformed ``output_format`` or schema.
    """
    if type(options) is not dict:
        return options
    fmt = options.get("output_format")
    struct_keys = [k for k in _SCHEMA_KEYS if isinstance(options.get(k), StructType)]
    if fmt is None and not struct_keys:
        return options
    out = dict(options)
    for key in struct_keys:
        out[key] = struct_schema(thread, options[key])
    if fmt is None:
        return out
    kind = fmt.get("kind") if type(fmt) is dict else fmt
    if kind in ("json_object", "json"):
        out.setdefault("response_format", "json")
    elif kind == "json_schema":
        schema = fmt.get("schema") if type(fmt) is dict else None
        if schema is None:
            raise _config(where, "`output_format` of kind `json_schema` needs a `schema`")
        schema, _ = resolve_schema(thread, schema, where)
        out["output_schema"] = schema
        out.setdefault("response_format", "json")
    elif kind != "text":
        raise _config(
            where,
            'option `output_format` must be "text", "json_object" or '
            '{kind: "json_schema", schema, strict?}',
        )
    del out["output_format"]
    return out


class OutputSpec:
    """What the caller asked the answer to be (read from the call options by
    :func:`output_spec`).

    Attributes:
        wants_json: the answer must hold a JSON value.
        schema: the schema the value must satisfy, or None.
        retries: how many times an invalid answer is asked again (``schema_retries``).
        nudge: whether a retry adds the corrective user message (``schema_retry_nudge``).
        validation: ``"error"`` (throw after the last retry), ``"warn"`` (warn and return
            the result with ``data: nil`` and ``validation_errors``) or ``"off"`` (the same
            without the warning).
        struct: the struct the valid data is built as, or None.
    """

    __slots__ = ("wants_json", "schema", "retries", "nudge", "validation", "struct")

    def __init__(
        self,
        wants_json: bool,
        schema: dict[str, Any] | None,
        retries: int,
        nudge: bool,
        validation: str,
        struct: Any = None,
    ) -> None:
        self.wants_json = wants_json
        self.schema = schema
        self.retries = retries
        self.nudge = nudge
        self.validation = validation
        self.struct = struct


def output_spec(options: Any, where: str, default_retries: int) -> OutputSpec:
    """The :class:`OutputSpec` of normalized call options (see
    :func:`normalize_output_options`). ``output_validation`` defaults to ``"error"``
    (harnpy's ``llm_call`` throws on an answer that stays invalid).

    Raises:
        HarnThrow: ``config`` envelope for a negative or non-int ``schema_retries``, a
            non-bool ``schema_retry_nudge`` or an unknown ``output_validation``.
    """
    opts = options if type(options) is dict else {}
    schema = None
    for key in _SCHEMA_KEYS:
        if opts.get(key) is not None:
            schema = opts[key]
            break
    if schema is not None and type(schema) is not dict:
        from harnpy.runtime.values import type_name

        raise _config(
            where, f"option `output_schema` must be a schema dict, got {type_name(schema)}"
        )
    retries = opts.get("schema_retries")
    if retries is None:
        retries = default_retries
    elif type(retries) is not int or retries < 0:
        raise _config(where, "option `schema_retries` must be a non-negative int")
    nudge = opts.get("schema_retry_nudge")
    if nudge is None:
        nudge = True
    elif type(nudge) is not bool:
        raise _config(where, "option `schema_retry_nudge` must be a bool")
    validation = opts.get("output_validation")
    if validation is None:
        validation = "error"
    elif validation not in _VALIDATIONS:
        raise _config(where, 'option `output_validation` must be "error", "warn" or "off"')
    wants_json = opts.get("response_format") == "json" or schema is not None
    return OutputSpec(wants_json, schema, retries, nudge, validation)


# ------------------------------------------------------------------ trace


def _trace(runtime: Any) -> list[dict[str, Any]]:
    events = getattr(runtime, TRACE_ATTR, None)
    if events is None:
        events = []
        setattr(runtime, TRACE_ATTR, events)
    return events  # type: ignore[no-any-return]


def trace_events(runtime: Any) -> list[dict[str, Any]]:
    """The run's trace as kept (the runtime's own list, oldest first: read it, never change
    it; up to :data:`TRACE_SLACK` more events than ``agent_trace()`` shows). Its entries are
    never changed once appended, so a park that stores the trace as rows recognises the
    events it stored already by identity (:mod:`harnpy.lifecycle.waitpoints.park_rows`,
    :mod:`harnpy.lifecycle.transcript_store`)."""
    return _trace(runtime)


def trace_event(runtime: Any, event: dict[str, Any]) -> None:
    """Append ``event`` (a Harn dict with a ``type``; never changed afterwards) to the run's
    trace. Past ``MAX_TRACE_EVENTS + TRACE_SLACK`` events the oldest are dropped down to
    :data:`MAX_TRACE_EVENTS` at once, so a trace stored as rows is rewritten once per
    :data:`TRACE_SLACK` events, not at every park."""
    events = _trace(runtime)
    events.append(event)
    if len(events) > MAX_TRACE_EVENTS + TRACE_SLACK:
        del events[: len(events) - MAX_TRACE_EVENTS]


def install_trace(runtime: Any, events: list[dict[str, Any]]) -> None:
    """Make ``events`` (checked trace events, e.g. restored from a worker checkpoint's
    rows) the run's trace."""
    setattr(runtime, TRACE_ATTR, events)


def pin_trace(runtime: Any, events: list[dict[str, Any]] | None) -> None:
    """While a park snapshots the program: the runtime-state section ``agent_trace`` is
    the very list ``events`` (the copy the park stores as rows and detaches from the
    snapshot), not a new copy; None unpins."""
    setattr(runtime, TRACE_PIN_ATTR, events)


def record_llm_call(runtime: Any, resp: Any, where: str) -> None:
    """Trace one model answer: ``{type: "llm_call", call, provider, model, input_tokens,
    output_tokens, stop_reason, tool_calls}`` (``call``: the builtin that made it)."""
    trace_event(
        runtime,
        {
            "type": "llm_call",
            "call": where,
            "provider": resp.provider,
            "model": resp.model,
            "input_tokens": resp.usage.input_tokens,
            "output_tokens": resp.usage.output_tokens,
            "stop_reason": resp.stop_reason,
            "tool_calls": len(resp.tool_calls),
        },
    )


@builtin("agent_trace")
def agent_trace(thread: Any) -> list[dict[str, Any]]:
    """``agent_trace()``: the run's trace events, oldest first (the last 10,000 kept).

    ``{type: "llm_call", call, provider, model, input_tokens, output_tokens, stop_reason,
    tool_calls}`` for each model answer of the structured helpers (and of ``llm_call``
    where it runs its answers through this module's schema loop);
    ``{type: "schema_retry", call, attempt, errors, correction_prompt, nudge_used}`` for
    each schema retry (``attempt``: 1 for the first retry; ``errors``: the validation
    messages that caused it; ``correction_prompt``: the corrective user message, sent only
    when ``nudge_used``). ``agent_loop`` turns add, each with the loop's ``session_id``:
    ``llm_call`` (``call: "agent_loop"``, ``call_id``, ``iteration``, ``duration_ms``,
    ``cache_read_tokens``, ``cache_write_tokens``), ``tool_execution {tool_name,
    tool_use_id, status, duration_ms, iteration}``, ``tool_rejected {tool_name,
    tool_use_id, reason, iteration}``, ``context_compaction {archived_messages,
    new_summary_len, iteration}`` and, when the loop finishes, ``loop_complete {status,
    iterations, total_duration_ms, tools_used, successful_tools}``
    (:mod:`harnpy.lifecycle.loop_trace`).

    The trace is snapshot data (runtime-state section ``agent_trace``); a waitpoint park
    or a worker checkpoint stores it as rows appended per park, outside the checkpoint's
    body, so a run resumed in a new process keeps the events from before its park.
    """
    events = _trace(thread.runtime)
    return [dict(e) for e in events[-MAX_TRACE_EVENTS:]]


def _save_trace(thread: Any) -> Any:
    rt = thread.runtime
    pinned = getattr(rt, TRACE_PIN_ATTR, None)
    if pinned is not None:
        return pinned or None
    items = getattr(rt, TRACE_ATTR, None)
    return list(items) if items else None


def _load_trace(thread: Any, data: Any) -> Any:
    if type(data) is not list or any(
        type(d) is not dict or type(d.get("type")) is not str for d in data
    ):
        raise TypeError("the agent trace must be a list of events with a `type`")
    rt = thread.runtime
    return lambda: install_trace(rt, list(data))


register_state("agent_trace", _save_trace, _load_trace)


# ------------------------------------------------------------------ the schema loop


def correction_prompt(problems: list[str], schema: dict[str, Any] | None) -> str:
    """The corrective user message of a schema retry: the problems (at most 5) and, when
    there is a schema of at most 4,000 characters of JSON, the schema itself."""
    text = (
        "Your previous answer was not valid for the requested output: "
        + "; ".join(problems[:5])
        + ". Reply again with only a JSON value that satisfies the schema."
    )
    if schema is not None:
        try:
            shown = json.dumps(schema, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            shown = ""
        if shown and len(shown) <= 4000:
            text += "\nThe JSON schema:\n" + shown
    return text


class SchemaLoop:
    """The answers of one call that must satisfy an :class:`OutputSpec`.

    Feed each answer to :meth:`step`; it says whether the call is done, must ask again
    (with which request) or failed. State after the last step: ``attempts`` (answers
    seen), ``text`` (the last answer's text), ``extracted`` (its JSON came from fences or
    prose), ``found`` (it held JSON at all), ``problems`` (its validation messages),
    ``data``, ``last`` (the last response), ``current`` (the request that was answered
    last, for the transcript of the result).
    """

    def __init__(self, spec: OutputSpec, request: Any, runtime: Any, where: str) -> None:
        self.spec = spec
        self.base = request
        self.runtime = runtime
        self.where = where
        self.left = spec.retries
        self.attempts = 0
        self.text = ""
        self.extracted = False
        self.found = False
        self.problems: list[str] = []
        self.data: Any = None
        self.last: Any = None
        self.current = request

    def step(self, resp: Any) -> tuple[str, Any]:
        """Judge one answer: ``("ok", data)`` (data None when no JSON was wanted),
        ``("again", request)`` for a schema retry, or ``("invalid", problems)`` once the
        retries are used up."""
        self.attempts += 1
        self.last = resp
        self.text = resp.text
        record_llm_call(self.runtime, resp, self.where)
        if not self.spec.wants_json:
            return "ok", None
        found, data, extracted, problem = extract_json_value(resp.text)
        self.extracted = extracted
        self.found = found
        problems = [] if found else [problem]
        if found and self.spec.schema is not None:
            problems = schema_issues(data, self.spec.schema)
        self.problems = problems
        if not problems:
            if self.spec.struct is not None and type(data) is dict:
                data = StructValue(self.spec.struct.name, data)
            self.data = data
            return "ok", data
        if self.left > 0:
            self.left -= 1
            return "again", self._retry_request(problems)
        return "invalid", problems

    def answer(self, thread: Any, resp: Any, out: dict[str, Any]) -> Any:
        """The ``llm_call`` value for answer ``resp`` (``out``: its result dict): ``out``
        with ``data`` when JSON was wanted, an :class:`Again` for a schema retry. After the
        last retry an invalid answer throws (``output_validation: "error"``, the default)
        or, with ``"warn"`` (a warning on stderr) / ``"off"``, gives ``out`` with ``data:
        nil`` and ``validation_errors``.

        Raises:
            HarnThrow: the ``schema_validation`` envelope (:meth:`failure`).
        """
        verdict, value = self.step(resp)
        if verdict == "again":
            self.current = value
            return Again(value)
        if verdict == "ok":
            if self.spec.wants_json:
                out["data"] = value
            return out
        if self.spec.validation == "error":
            raise HarnThrow(self.failure())
        if self.spec.validation == "warn":
            thread.write_err(f"warning: {self.failure()['message']}\n")
        out["data"] = None
        out["validation_errors"] = list(self.problems)
        return out

    def _retry_request(self, problems: list[str]) -> Any:
        import attrs  # the LLM layer's shapes are attrs classes

        from harnpy.llm import Message

        prompt = correction_prompt(problems, self.spec.schema)
        trace_event(
            self.runtime,
            {
                "type": "schema_retry",
                "call": self.where,
                "attempt": self.attempts,
                "errors": list(problems),
                "correction_prompt": prompt,
                "nudge_used": self.spec.nudge,
            },
        )
        if not self.spec.nudge:
            return self.base
        messages = [*self.base.messages, Message(role="user", content=prompt)]
        return attrs.evolve(self.base, messages=messages)

    def failure(self) -> dict[str, Any]:
        """The ``schema_validation`` error of the last answer: ``{..., category, message,
        errors, text}`` (the message names the schema and, for prose, that it holds no
        parseable JSON)."""
        n = self.attempts
        message = (
            f"{self.where}: the model's answer does not match the requested output schema "
            f"after {n} attempt{'s' if n != 1 else ''}: " + "; ".join(self.problems[:5])
        )
        return _error(
            "schema_validation",
            message,
            self.last if self.last is not None else self.base,
            errors=list(self.problems),
            text=self.text,
        )


def schema_loop(
    thread: Any, options: Any, request: Any, where: str, default_retries: int
) -> SchemaLoop:
    """The :class:`SchemaLoop` of an ``llm_call`` with normalized ``options`` (see
    :func:`normalize_output_options`) and its first ``request``.

    Raises:
        HarnThrow: ``config`` envelope for a malformed schema-loop option
            (:func:`output_spec`).
    """
    return SchemaLoop(output_spec(options, where, default_retries), request, thread.runtime, where)


# ------------------------------------------------------------------ submitting


# ------------------------------------------------------------------ the helpers


def _structured_options(thread: Any, options: Any, where: str) -> dict[str, Any]:
    """The ``llm_call`` options of a structured helper: ``retries`` becomes
    ``schema_retries``, ``repair`` is taken out, ``output_format`` lowered."""
    if options is None:
        options = {}
    if type(options) is not dict:
        raise _config(where, "options must be a dict")
    out = dict(options)
    if "retries" in out:
        retries = out.pop("retries")
        if out.get("schema_retries") is None:
            out["schema_retries"] = retries
    out.pop("repair", None)
    return normalize_output_options(thread, out, where)  # type: ignore[no-any-return]


class _Call:
    """One structured call in flight: its options, request and schema loop."""

    def __init__(self, thread: Any, args: tuple[Any, ...], where: str) -> None:
        prompt, schema_arg, options = arg(args, 0), arg(args, 1), arg(args, 2)
        self.where = where
        self.options = options if type(options) is dict else None
        schema, struct = resolve_schema(thread, schema_arg, where)
        opts = _structured_options(thread, options, where)
        opts["output_schema"] = _wire_schema(schema)
        opts["response_format"] = "json"
        opts.pop("schema", None)
        opts.pop("json_schema", None)
        self.opts = opts
        spec = output_spec(opts, where, STRUCTURED_SCHEMA_RETRIES)
        spec.schema = schema
        spec.struct = struct
        spec.validation = "error"
        self.spec = spec
        system = opts.pop("system", None)
        self.prompt, self.system = prompt, system
        self.request = build(prompt, system, opts, where=where, cache=message_cache(thread.runtime))
        self.loop = SchemaLoop(spec, self.request, thread.runtime, where)


def _structured_start(thread: Any, args: tuple[Any, ...], where: str) -> _Call:
    require_instruction_call(thread, where)
    return _Call(thread, strip_harness(args), where)


@builtin("llm_call_structured", control=True)
def llm_call_structured(thread: Any, *args: Any) -> Any:
    """``llm_call_structured(prompt, schema, options?)``: ask for JSON satisfying
    ``schema`` and return just the validated data (Harn ``llm/llm_call.md``).

    ``schema``: a JSON Schema / Harn schema dict (``schema_of(T)``, a ``type`` alias) or a
    ``struct`` (the data is then an instance of it). ``options``: anything ``llm_call``
    takes, plus ``system`` and ``retries`` (alias of ``schema_retries``, default 3);
    ``response_format: "json"`` and ``output_validation: "error"`` are forced. An invalid
    answer is asked again (see ``llm_call``'s ``schema_retries``).

    Throws the ``llm_call`` error envelope: category ``schema_validation`` (with ``errors``
    and ``text``) when the answer stays invalid, the provider's category for a transport
    failure, ``config`` for a bad argument.
    """
    call = _structured_start(thread, args, "llm_call_structured")

    def finish(resp: Any) -> Any:
        verdict, value = call.loop.step(resp)
        if verdict == "again":
            return Again(value)
        if verdict == "invalid":
            raise HarnThrow(call.loop.failure())
        return value

    submit_blocking(thread, call.request, finish, "llm_call_structured")
    return None


@builtin("llm_call_structured_safe", control=True)
def llm_call_structured_safe(thread: Any, *args: Any) -> Any:
    """``llm_call_structured_safe(prompt, schema, options?)``: ``llm_call_structured``
    that never throws. Returns ``{ok: true, data, error: nil}`` or ``{ok: false, data:
    nil, error}`` where ``error`` is what ``llm_call_structured`` would have thrown (the
    envelope ``{kind, reason, category, message, provider, model, ...}``; match on
    ``error.category``: ``schema_validation``, ``rate_limit``, ``config``...)."""
    where = "llm_call_structured_safe"
    try:
        call = _structured_start(thread, args, where)
    except HarnThrow as exc:
        return {"ok": False, "data": None, "error": _value_error(exc.value)}

    def finish(resp: Any) -> Any:
        verdict, value = call.loop.step(resp)
        if verdict == "again":
            return Again(value)
        if verdict == "invalid":
            return {"ok": False, "data": None, "error": call.loop.failure()}
        return {"ok": True, "data": value, "error": None}

    def on_error(err: dict[str, Any]) -> Any:
        return {"ok": False, "data": None, "error": err}

    try:
        submit_blocking(thread, call.request, finish, where, on_error=on_error)
    except HarnThrow as exc:  # refused before sending (a budget)
        return on_error(_value_error(exc.value))
    return None


def _usage(resp: Any) -> dict[str, Any]:
    from harnpy.lifecycle.llm_builtins import usage_dict

    if resp is None:
        return {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "total_tokens": 0,
        }
    return usage_dict(resp)


def _repair_config(options: Any, where: str) -> dict[str, Any] | None:
    """The ``repair`` option: None (no repair pass) or its override dict (``enabled``
    removed). A dict without ``enabled: false`` opts in; ``true`` is ``{}``.

    Raises:
        HarnThrow: ``config`` envelope for another value.
    """
    rep = options.get("repair") if type(options) is dict else None
    if rep is None or rep is False:
        return None
    if rep is True:
        return {}
    if type(rep) is not dict:
        raise _config(where, "option `repair` must be a dict or a bool")
    if rep.get("enabled") is False:
        return None
    return {k: v for k, v in rep.items() if k != "enabled"}


REPAIR_SYSTEM = (
    "You repair the output of another model. Reply with exactly one JSON value that "
    "satisfies the given JSON schema and keeps the information of the original output. "
    "No prose, no code fence."
)


def repair_prompt(raw: str, problems: list[str], schema: dict[str, Any]) -> str:
    """The user message of the repair pass: the schema, what was wrong, the raw output."""
    try:
        shown = json.dumps(schema, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        shown = "{}"
    return (
        "JSON schema:\n"
        + shown
        + "\n\nProblems with the output: "
        + "; ".join(problems[:5])
        + "\n\nOutput to repair:\n"
        + raw
    )


@builtin("llm_call_structured_result", control=True)
def llm_call_structured_result(thread: Any, *args: Any) -> Any:
    """``llm_call_structured_result(prompt, schema, options?)``: a structured call that
    never throws and reports how it went (Harn ``llm/llm_call.md``, diagnostic envelope).

    Returns ``{ok, data, raw_text, error, error_category, attempts, repaired,
    extracted_json, usage, model, provider}``: ``data`` the validated payload (nil on
    failure); ``raw_text`` the last main-call answer (kept on failure; "" when no answer
    came); ``error`` a message ("" on success); ``error_category`` nil, a transport
    category (``rate_limit``, ``timeout``...), ``schema_validation``, ``config`` or
    ``repair_failed``; ``attempts`` the answers received (retries included, the repair pass
    not); ``repaired`` true when the repair pass produced the data; ``extracted_json`` true
    when the JSON was lifted from prose or a code fence. Options as
    ``llm_call_structured``, plus ``repair: {enabled?, model?, provider?, max_tokens?,
    system?, ...}``: after the last schema retry fails, one repair call (its keys merged
    over the call's options, ``schema_retries: 0``) asks the model to fix the raw answer;
    skipped after a transport failure.
    """
    where = "llm_call_structured_result"
    try:
        call = _structured_start(thread, args, where)
        repair = _repair_config(arg(strip_harness(args), 2), where)
    except HarnThrow as exc:
        err = _value_error(exc.value)
        return _envelope(None, err, 0)
    loop = call.loop
    state = {"phase": "main"}

    def envelope(ok: bool, **fields: Any) -> dict[str, Any]:
        resp = loop.last
        out: dict[str, Any] = {
            "ok": ok,
            "data": None,
            "raw_text": loop.text,
            "error": "",
            "error_category": None,
            "attempts": loop.attempts,
            "repaired": False,
            "extracted_json": loop.extracted,
            "usage": _usage(resp),
            "model": resp.model if resp is not None else call.request.model,
            "provider": resp.provider if resp is not None else call.request.provider,
        }
        out.update(fields)
        return out

    def start_repair() -> Any:
        opts = {
            k: v
            for k, v in call.opts.items()
            if k not in ("messages", "transcript", "system", "schema_retries")
        }
        opts.update(repair or {})
        system = opts.pop("system", None) or REPAIR_SYSTEM
        prompt = repair_prompt(loop.text, loop.problems, loop.spec.schema or {})
        req = build(prompt, system, opts, where=where)
        state["phase"] = "repair"
        return Again(req)

    def finish(resp: Any) -> Any:
        if state["phase"] == "repair":
            record_llm_call(thread.runtime, resp, where)
            found, data, _, problem = extract_json_value(resp.text)
            problems = [problem] if not found else schema_issues(data, loop.spec.schema)
            if not problems:
                if loop.spec.struct is not None and type(data) is dict:
                    data = StructValue(loop.spec.struct.name, data)
                return envelope(True, data=data, repaired=True)
            return envelope(
                False,
                error=f"{where}: the repair pass did not produce valid output: "
                + "; ".join(problems[:5]),
                error_category="repair_failed",
            )
        verdict, value = loop.step(resp)
        if verdict == "again":
            return Again(value)
        if verdict == "ok":
            return envelope(True, data=value)
        if repair is not None:
            return start_repair()
        category = "schema_validation" if loop.found else "missing_json"
        return envelope(False, error=loop.failure()["message"], error_category=category)

    def on_error(err: dict[str, Any]) -> Any:
        if state["phase"] == "repair":
            return envelope(
                False,
                error=f"{where}: the repair pass failed: {err.get('message', '')}",
                error_category="repair_failed",
            )
        return envelope(
            False, error=str(err.get("message", "")), error_category=err.get("category")
        )

    try:
        submit_blocking(thread, call.request, finish, where, on_error=on_error)
    except HarnThrow as exc:  # refused before sending (a budget)
        return on_error(_value_error(exc.value))
    return None


def _envelope(resp: Any, err: dict[str, Any], attempts: int) -> dict[str, Any]:
    return {
        "ok": False,
        "data": None,
        "raw_text": "",
        "error": str(err.get("message", "")),
        "error_category": err.get("category"),
        "attempts": attempts,
        "repaired": False,
        "extracted_json": False,
        "usage": _usage(resp),
        "model": err.get("model"),
        "provider": err.get("provider"),
    }
