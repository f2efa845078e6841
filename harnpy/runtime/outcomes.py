"""Failed outcomes the program has not looked at (the "loud failures" rule of ``harnpy run``).

A root ``agent_loop`` (one not running as an agent worker) that ends in a failure —
``provider_error``, ``budget_exhausted``, ``stuck``, ``watchdog`` or ``failed`` — returns
its result dict to the script, as lifecycle.md 2.13 says. The lifecycle layer then
registers that dict here (:func:`register`) and prints one line on stderr. The result
counts as **checked** as soon as code of the program (not of the bundled ``std/``
modules) reads one of the fields that tell how the loop went — ``status``, ``error``,
``ok``, ``budget_exceeded`` (a ``sub_agent_run`` envelope), ``tools`` (which calls ran or
were refused) or ``transcript`` (the conversation itself) — ``r.status``, ``r?.tools``,
``r["error"]`` — anywhere, in any function: the compiler gives those reads
(:data:`WATCHED_KEYS`) a variant that calls :func:`checked`. Reading only the answer
(``text``, ``visible_text``) does not count. When the program ends,
``harnpy run`` exits with status 1 if a registered result was never checked
(:func:`unchecked`), naming where the loop was called; a program that looks at the status
has taken charge of the failure and exits as it chooses.

The table lives on the runtime (``runtime.unchecked_outcomes``: ``id(result) ->``
:class:`Unchecked`, holding the dict so the id stays valid). It is process state, not
snapshot data: a program resumed with ``harnpy run --resume`` starts with an empty table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Fields whose read marks a registered result as checked.
WATCHED_KEYS = frozenset({"status", "error", "ok", "budget_exceeded", "tools", "transcript"})


@dataclass
class Unchecked:
    """One failed result the program has not checked yet: the ``result`` dict itself, its
    ``status``, the call site ``where`` (``path:line``, or "" when unknown) and the one-line
    ``message`` already printed on stderr."""

    result: dict[str, Any]
    status: str
    where: str
    message: str


def register(runtime: Any, result: dict[str, Any], status: str, where: str, message: str) -> None:
    """Remember ``result`` (a failed root loop's result dict) until the program reads its
    ``status`` or ``error`` (:func:`checked`)."""
    runtime.unchecked_outcomes[id(result)] = Unchecked(result, status, where, message)


def checked(runtime: Any, obj: Any) -> None:
    """The program read a watched field of ``obj``: forget it if it was registered."""
    pending = runtime.unchecked_outcomes
    if pending:
        pending.pop(id(obj), None)


def transfer(runtime: Any, old: Any, new: dict[str, Any]) -> None:
    """``new`` (a dict built from the registered result ``old``, e.g. the ``sub_agent_run``
    envelope around a loop result) takes over ``old``'s registration: the program checks
    the value it was given."""
    pending = getattr(runtime, "unchecked_outcomes", None)
    if pending and id(old) in pending:
        rec = pending.pop(id(old))
        pending[id(new)] = Unchecked(new, rec.status, rec.where, rec.message)


def unchecked(runtime: Any) -> list[Unchecked]:
    """The registered results the program never checked, oldest first."""
    return list(getattr(runtime, "unchecked_outcomes", {}).values())


__all__ = ["WATCHED_KEYS", "Unchecked", "checked", "register", "transfer", "unchecked"]
