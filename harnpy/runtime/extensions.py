"""Extension points through which outer layers (agents, lifecycle) plug into the runtime.

The runtime knows nothing of the layers above it (imports run one way: syntax -> runtime
-> stdlib -> lifecycle); a layer registers callables here when it is imported, like a
builtin registers itself in the registry. Filled once at import time, never changed later.

* ``RUNTIME_INIT``: ``fn(runtime)`` called at the end of ``Runtime.__init__``;
* ``PIPELINE_ARGUMENT``: at most one ``fn(runtime, name) -> value`` giving the value of an
  entry-pipeline parameter (default: nil);
* ``PROGRAM_FINISH``: ``fn(runtime, value) -> value`` run after the main program's entry
  point returned (e.g. ``pipeline_on_finish`` callbacks), in registration order;
* ``RUNTIME_STATE``: named runtime-state providers (:class:`StateProvider`, registered with
  :func:`register_state`): state a stdlib module keeps on the runtime (mock clock, log
  level, shared cells...) that program snapshots carry under ``doc["runtime_state"]``;
* ``LAZY_STATE``: provider name -> the module that registers it, for modules not imported
  yet (builtin modules load on first use): :func:`state_provider` imports it on demand;
* ``LAZY_CONSTANTS``: global constants computed on first use, ``name -> fn(runtime)``
  (``harness``): the runtime's constant table binds the value when a program first reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

RUNTIME_INIT: list[Callable[[Any], None]] = []
PIPELINE_ARGUMENT: list[Callable[[Any, str], Any]] = []
PROGRAM_FINISH: list[Callable[[Any, Any], Any]] = []


class StateProvider(NamedTuple):
    """One named piece of runtime state that program snapshots carry.

    * ``save(thread) -> data | None``: called by :func:`~harnpy.runtime.snapshot.snapshot`
      with the thread being snapshotted (its runtime is ``thread.runtime``). ``data`` is a
      graph of snapshot values (JSON natives, lists, dicts, Harn values such as closures or
      channels), encoded with the thread's values (shared references are kept). None: no
      state worth saving (the section is left out; a restore keeps the fresh default).
      Raises :class:`~harnpy.runtime.snapshot.SnapshotError` (E402) when the state cannot
      be snapshotted (e.g. a live task holds it), naming what holds it.
    * ``load(thread, data) -> apply``: called by :func:`~harnpy.runtime.snapshot.restore`
      with the restored thread and the decoded ``data``. It only checks ``data`` and
      returns a zero-argument ``apply`` that installs it; nothing may change before every
      section was checked. A malformed section raises ``KeyError`` / ``TypeError`` /
      ``ValueError`` / ``SnapshotError`` (restore reports E404 naming the section).
    """

    name: str
    save: Callable[[Any], Any]
    load: Callable[[Any, Any], Callable[[], None]]


#: Runtime-state providers by name, in registration order.
RUNTIME_STATE: dict[str, StateProvider] = {}

#: Providers of modules not imported yet: name -> module (declared by the builtin registry).
LAZY_STATE: dict[str, str] = {}

#: Global constants computed on first use: name -> ``fn(runtime) -> value``.
LAZY_CONSTANTS: dict[str, Callable[[Any], Any]] = {}


def state_provider(name: str) -> StateProvider | None:
    """The runtime-state provider ``name``, importing the module that registers it when it
    is declared in :data:`LAZY_STATE` and not loaded yet; None when no module provides it.
    Only the providers of imported modules save state: a module never imported keeps none."""
    provider = RUNTIME_STATE.get(name)
    if provider is None and name in LAZY_STATE:
        import importlib

        importlib.import_module(LAZY_STATE[name])
        provider = RUNTIME_STATE.get(name)
    return provider


def register_state(
    name: str,
    save: Callable[[Any], Any],
    load: Callable[[Any, Any], Callable[[], None]],
) -> None:
    """Register the runtime-state provider ``name`` (see :class:`StateProvider`).

    Raises:
        ValueError: ``name`` is already registered (two modules would fight over one
            snapshot section).
    """
    if name in RUNTIME_STATE:
        raise ValueError(f"runtime state {name!r} is already registered")
    RUNTIME_STATE[name] = StateProvider(name, save, load)


def register_dict_list_state(name: str, attr: str, key: str, refusal: str) -> None:
    """Register the runtime-state provider ``name`` for the common shape: a list of dicts
    kept on the runtime as attribute ``attr`` (absent or empty: nothing saved), each dict
    holding a string under ``key``. A section of another shape is refused with
    ``TypeError(refusal)`` (restore reports E404 naming the section); applying it installs
    a copy of the list.

    Raises:
        ValueError: ``name`` is already registered.
    """

    def save(thread: Any) -> Any:
        items = getattr(thread.runtime, attr, None)
        return list(items) if items else None

    def load(thread: Any, data: Any) -> Callable[[], None]:
        if type(data) is not list or any(
            type(d) is not dict or type(d.get(key)) is not str for d in data
        ):
            raise TypeError(refusal)
        rt = thread.runtime
        return lambda: setattr(rt, attr, list(data))

    register_state(name, save, load)
