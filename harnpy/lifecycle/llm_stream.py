"""``llm_completion`` (fill-in-the-middle text) and ``llm_stream`` (a channel of chunks).

Both are model calls at the level of ``llm_call`` (Harn ``llm/llm_call.md``,
``llm/streaming.md``) and take the same options (provider, model, ``model_tier``,
``max_tokens``, ``budget``...). They block only the calling thread while the model answers,
like ``llm_call``.

``llm_completion(prefix, suffix, system?, options?)`` asks for the text between ``prefix``
and ``suffix``: chat models get the two parts in one user message and an instruction to
answer with the missing text only (:data:`COMPLETION_SYSTEM`, after the caller's system
prompt); the request carries ``completion: {prefix, suffix}`` so that the mock provider
answers deterministically. The result is ``llm_call``'s result dict.

``llm_stream(prompt, system?, options?)`` returns a channel of the answer's text chunks
(strings: the words of the answer, each with the whitespace that follows it), closed after
the last one. The provider layer has no incremental transport, so every chunk is known
when the answer is complete: the call blocks until then and the channel it returns is
already filled and closed (a channel is plain data, so a snapshot taken later carries it).
A failed call does not throw: the channel's only item is the error envelope
``llm_call`` would have thrown, as in Harn. The builtin checks the options (a malformed
option throws at the call), then pushes ``__llm_stream`` (``std/llm/_stream``), which makes
the call as an ordinary ``llm_call`` and turns its ``Result`` into the channel.
"""

from __future__ import annotations

import re
from typing import Any

from harnpy.lifecycle._common import arg, require_instruction_call, strip_harness, thrown
from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.runtime.values import Channel, EnumValue
from harnpy.stdlib.registry import builtin

STREAM_MODULE = "std/llm/_stream"

#: The instruction a chat model gets for ``llm_completion``.
COMPLETION_SYSTEM = (
    "You fill in missing text. The user gives the text before the gap (PREFIX) and the "
    "text after it (SUFFIX). Reply with only the text that belongs in the gap: no "
    "explanations, no repetition of the prefix or suffix, no code fences."
)

_CHUNK = re.compile(r"\S+\s*|\s+")


def completion_prompt(prefix: str, suffix: str) -> str:
    """The user message of a completion request."""
    return f"PREFIX:\n{prefix}\n\nSUFFIX:\n{suffix}\n\nThe text of the gap:"


def chunks(text: str) -> list[str]:
    """``text`` split into stream chunks: each word with the whitespace after it (leading
    whitespace is a chunk of its own); joined they give ``text`` back."""
    return _CHUNK.findall(text)


@builtin("llm_completion", control=True)
def llm_completion(thread: Any, *args: Any) -> Any:
    """``llm_completion(prefix, suffix?, system?, options?)``: ask the model for the text
    between ``prefix`` and ``suffix`` (fill in the middle; ``suffix`` nil or "" continues
    ``prefix``). Options as ``llm_call`` (``model_tier: "small"`` picks the tier's model).
    Returns ``llm_call``'s result dict (``text``: the missing text). Throws the error
    envelope of a failed call, and for a non-string prefix or suffix."""
    from harnpy.lifecycle.llm_builtins import build, message_cache, result_dict, submit_blocking

    require_instruction_call(thread, "llm_completion")
    args = strip_harness(args)
    prefix, suffix, system, options = arg(args, 0), arg(args, 1), arg(args, 2), arg(args, 3)
    if type(prefix) is not str:
        raise thrown(f"llm_completion: prefix must be a string, got {display(prefix)}")
    if suffix is None:
        suffix = ""
    if type(suffix) is not str:
        raise thrown(f"llm_completion: suffix must be a string or nil, got {display(suffix)}")
    if system is not None and type(system) is not str:
        raise thrown("llm_completion: system must be a string or nil")
    instruction = COMPLETION_SYSTEM if system is None else f"{system}\n\n{COMPLETION_SYSTEM}"
    opts = {k: v for k, v in (options or {}).items() if k != "messages"} if options else None
    request = build(
        completion_prompt(prefix, suffix),
        instruction,
        opts,
        where="llm_completion",
        cache=message_cache(thread.runtime),
    )
    import attrs

    request = attrs.evolve(request, completion={"prefix": prefix, "suffix": suffix})
    submit_blocking(thread, request, lambda resp: result_dict(resp, request), "llm completion")
    return None


def _filled(values: list[Any]) -> Channel:
    ch = Channel("llm_stream", None)
    ch.items.extend(values)
    ch.closed = True
    return ch


@builtin("llm_stream", control=True)
def llm_stream(thread: Any, *args: Any) -> Any:
    """``llm_stream(prompt, system?, options?) -> channel``: the model's answer as a
    channel of text chunks (strings: each word with the whitespace after it; joined they
    are the answer's ``text``), closed after the last. Options as ``llm_call``. A failed
    call (provider error, exceeded budget) gives a channel whose only item is the error
    value ``llm_call`` would have thrown, instead of throwing; a malformed option throws.
    The channel is complete when it is returned (module docstring)."""
    from harnpy.lifecycle._common import push_call
    from harnpy.lifecycle.compaction import std_function
    from harnpy.lifecycle.llm_builtins import build

    require_instruction_call(thread, "llm_stream")
    args = strip_harness(args)
    prompt, system, options = arg(args, 0), arg(args, 1), arg(args, 2)
    build(prompt, system, options, where="llm_stream")  # malformed options throw here
    push_call(
        thread,
        std_function(thread.runtime, STREAM_MODULE, "__llm_stream"),
        [prompt, system, options],
    )
    return None


@builtin("__llm_stream_channel")
def llm_stream_channel(thread: Any, result: Any = None) -> Channel:
    """``__llm_stream_channel(result)``: the closed channel of an ``llm_call`` Result —
    ``Ok(r)``: the chunks of ``r.text``; ``Err(e)``: ``e`` alone."""
    if type(result) is not EnumValue or result.enum != "Result" or not result.fields:
        raise runtime_error("internal: __llm_stream_channel needs a Result")
    value = result.fields[0]
    if result.variant == "Ok":
        text = value.get("text") if type(value) is dict else None
        return _filled(chunks(text if type(text) is str else ""))
    return _filled([value])
