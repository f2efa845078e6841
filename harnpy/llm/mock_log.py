"""The mock provider's record of calls, in memory proportional to the calls, not their sizes.

An agent loop sends its whole transcript on every turn, so recording every request's
messages as a fresh list costs O(transcript) per call and O(calls x transcript) memory. The
log stores each call as the number of leading messages it shares with the previous call
plus its new messages; the full ``{messages, system, tools, thinking}`` dicts of
``llm_mock_calls()`` (and of a snapshot) are rebuilt when asked for.

The match text of the last call (every non-empty string inside the messages, depth-first,
joined by newlines; see :func:`harnpy.llm.mock.match_text`) is kept per message, so the text
of a call that extends the previous one costs only its new messages.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from harnpy.llm.types import Message


@attrs.define
class _Call:
    """One recorded call: ``keep`` leading messages of the previous call, then ``tail``."""

    keep: int
    tail: list[dict[str, Any]]
    system: str | None
    tools: list[dict[str, Any]] | None
    thinking: Any
    #: the compact record (:meth:`CallLog.compact_records`), made once: a call never changes
    record: dict[str, Any] | None = None

    def compact(self) -> dict[str, Any]:
        """``{keep, tail, system, tools, thinking}``, the same dict every time (shared with
        the log: read it, never change it)."""
        if self.record is None:
            self.record = {
                "keep": self.keep,
                "tail": self.tail,
                "system": self.system,
                "tools": self.tools,
                "thinking": self.thinking,
            }
        return self.record


def collect_strings(value: Any, out: list[str]) -> None:
    """Append the non-empty strings inside ``value`` (lists and dict values, depth-first)."""
    if isinstance(value, str):
        if value:
            out.append(value)
    elif isinstance(value, list):
        for item in value:
            collect_strings(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            collect_strings(item, out)


def message_text(wire: Mapping[str, Any]) -> str:
    """The non-empty strings inside one wire message, depth-first, joined by newlines."""
    parts: list[str] = []
    collect_strings(dict(wire), parts)
    return "\n".join(parts)


def _shared_prefix(new: Sequence[Any], old: Sequence[Any]) -> int:
    """How many leading items of ``new`` are the very objects of ``old``."""
    n = len(old)
    if n and len(new) >= n and new[:n] == old:  # C-speed when the items are identical
        return n
    k = 0
    for a, b in zip(new, old):
        if a is not b:
            break
        k += 1
    return k


class CallLog:
    """Recorded mock calls (not thread-safe by itself: the provider holds its lock)."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []
        self._last_messages: list[Any] = []  # the Message objects (or dicts) of the last call
        self._last_wire: list[dict[str, Any]] = []
        self._last_text: list[str] = []

    def __len__(self) -> int:
        return len(self._calls)

    def record(
        self,
        messages: Sequence[Message],
        system: str | None,
        tools: list[dict[str, Any]] | None,
        thinking: Any,
    ) -> tuple[list[dict[str, Any]], Callable[[], str]]:
        """Record one call; returns its wire messages and a function giving its match text
        (joined on demand from per-message texts; only the new messages' are computed)."""
        keep = _shared_prefix(messages, self._last_messages)
        if keep == 0 and not self._last_messages and self._last_wire:
            # the first call after a restore: the same leading messages by value
            for m, w in zip(messages, self._last_wire):
                if m.to_wire() != w:
                    break
                keep += 1
        tail = [m.to_wire() for m in messages[keep:]]
        wire = self._last_wire[:keep] + tail
        texts = self._last_text[:keep] + [message_text(w) for w in tail]
        self._calls.append(_Call(keep, tail, system, tools, thinking))
        self._last_messages = list(messages)
        self._last_wire = wire
        self._last_text = texts

        def text() -> str:
            return "\n".join(t for t in texts if t)

        return wire, text

    def clear(self) -> None:
        """Forget every call."""
        self.__init__()  # type: ignore[misc]

    def export(self) -> list[dict[str, Any]]:
        """Every call as ``{messages, system, tools, thinking}`` (new plain data)."""
        out: list[dict[str, Any]] = []
        current: list[dict[str, Any]] = []
        for call in self._calls:
            current = current[: call.keep] + call.tail
            out.append(
                copy.deepcopy(
                    {
                        "messages": current,
                        "system": call.system,
                        "tools": call.tools,
                        "thinking": call.thinking,
                    }
                )
            )
        return out

    def export_compact(self) -> list[dict[str, Any]]:
        """The log as stored: ``[{keep, tail, system, tools, thinking}]`` (copies), each
        call's ``keep`` leading messages being the previous call's (O(calls) size, not
        O(calls x transcript) like :meth:`export`)."""
        return [
            copy.deepcopy(
                {
                    "keep": c.keep,
                    "tail": c.tail,
                    "system": c.system,
                    "tools": c.tools,
                    "thinking": c.thinking,
                }
            )
            for c in self._calls
        ]

    def compact_records(self) -> list[dict[str, Any]]:
        """The log as :meth:`export_compact` gives it, without copying: a new list of the
        calls' own records, the same dict objects from one call of this method to the next
        (a park that stores the log incrementally recognises the calls it stored already
        by identity). The records are shared with the log: never change them."""
        return [c.compact() for c in self._calls]

    def load_compact(self, calls: Sequence[Mapping[str, Any]]) -> None:
        """Replace the log with what :meth:`export_compact` produced.

        Raises:
            ValueError: a record that is not ``{keep, tail, system, tools, thinking}`` with
                ``keep`` within the previous call's messages.
        """
        loaded: list[_Call] = []
        previous = 0
        for i, raw in enumerate(calls):
            if not isinstance(raw, Mapping) or set(raw) != {
                "keep",
                "tail",
                "system",
                "tools",
                "thinking",
            }:
                raise ValueError(
                    f"mock call #{i + 1}: expected {{keep, tail, system, tools, thinking}}"
                )
            keep, tail = raw["keep"], raw["tail"]
            if type(keep) is not int or not 0 <= keep <= previous:
                raise ValueError(f"mock call #{i + 1}: `keep` out of range")
            if not isinstance(tail, list) or not all(isinstance(m, dict) for m in tail):
                raise ValueError(f"mock call #{i + 1}: `tail` must be a list of messages")
            system = raw["system"]
            if system is not None and not isinstance(system, str):
                raise ValueError(f"mock call #{i + 1}: `system` must be a string or nil")
            tools = raw["tools"]
            if tools is not None and not isinstance(tools, list):
                raise ValueError(f"mock call #{i + 1}: `tools` must be a list or nil")
            loaded.append(
                _Call(
                    keep,
                    copy.deepcopy(tail),
                    system,
                    copy.deepcopy(tools),
                    copy.deepcopy(raw["thinking"]),
                )
            )
            previous = keep + len(tail)
        self.clear()
        self._calls = loaded
        self._restored_tail()

    def load(self, calls: Sequence[Mapping[str, Any]]) -> None:
        """Replace the log with exported calls (messages that repeat the previous call's
        leading messages are stored once)."""
        self.clear()
        previous: list[dict[str, Any]] = []
        for call in calls:
            messages = [dict(m) for m in copy.deepcopy(list(call.get("messages") or []))]
            keep = 0
            for a, b in zip(messages, previous):
                if a != b:
                    break
                keep += 1
            self._calls.append(
                _Call(
                    keep,
                    messages[keep:],
                    call.get("system"),
                    copy.deepcopy(call.get("tools")),
                    copy.deepcopy(call.get("thinking")),
                )
            )
            previous = messages
        self._restored_tail()

    def _restored_tail(self) -> None:
        """After a load: the last call's wire messages, so the next live call (whose
        Message objects are new) is matched against them by value (:meth:`record`) and
        stores only what is new, not the whole transcript again after every resume."""
        current: list[dict[str, Any]] = []
        for call in self._calls:
            del current[call.keep :]
            current.extend(call.tail)
        self._last_messages = []
        self._last_wire = current
        self._last_text = [message_text(w) for w in current]
