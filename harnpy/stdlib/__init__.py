"""Builtins and the bundled standard library.

:mod:`harnpy.stdlib.registry` holds the one builtin registry; each module below registers its
builtins at import time. :func:`load_core` imports the few that register methods (every run
does); the rest load when one of their builtins is first looked up (the registry's index,
:mod:`harnpy.stdlib._index`). :func:`load_all` imports them all, including the builtin
*providers* of the layers above (agents, lifecycle, triggers), which are named in
:data:`PROVIDERS` rather than imported statically, so that imports keep running one way
(stdlib never depends on the lifecycle layer's code).
"""

import importlib
from typing import Any

#: Modules of outer layers that register builtins, imported in this order.
PROVIDERS = (
    "harnpy.lifecycle.agents",
    "harnpy.lifecycle.loop_turn",
    "harnpy.lifecycle.compaction",
    "harnpy.lifecycle.envelopes",
    "harnpy.lifecycle.harness",
    "harnpy.lifecycle.hitl",
    "harnpy.lifecycle.hooks",
    "harnpy.lifecycle.llm_builtins",
    "harnpy.lifecycle.structured_calls",
    "harnpy.lifecycle.pipeline_lifecycle",
    "harnpy.lifecycle.permissions",
    "harnpy.lifecycle.post_turn",
    "harnpy.lifecycle.rate_limits",
    "harnpy.lifecycle.receipts",
    "harnpy.lifecycle.agent_values",
    "harnpy.lifecycle.catalog_builtins",
    "harnpy.lifecycle.context_assembly",
    "harnpy.lifecycle.experiments",
    "harnpy.lifecycle.friction",
    "harnpy.lifecycle.resume_conditions",
    "harnpy.lifecycle.sessions",
    "harnpy.lifecycle.tools",
    "harnpy.lifecycle.tool_binding",
    "harnpy.lifecycle.tool_hooks",
    "harnpy.lifecycle.tool_text",
    "harnpy.lifecycle.tool_surface",
    "harnpy.lifecycle.tool_search",
    "harnpy.lifecycle.transcript",
    "harnpy.lifecycle.workflows.artifacts",
    "harnpy.lifecycle.workflows.execute",
    "harnpy.lifecycle.workflows.graph",
    "harnpy.lifecycle.workflows.records",
    "harnpy.lifecycle.trigger_variants",
    "harnpy.lifecycle.triggers.builtins",
    "harnpy.lifecycle.turns",
    "harnpy.lifecycle.workers",
    "harnpy.lifecycle.suspend",
    "harnpy.lifecycle.waitpoints.builtins",
)


#: Builtin modules imported on every run (:func:`load_core`): the ones that register
#: methods (method lookup goes straight to ``METHODS``), in this order.
CORE = (
    "harnpy.stdlib.concurrency",
    "harnpy.stdlib.dicts",
    "harnpy.stdlib.iters",
    "harnpy.stdlib.lists",
    "harnpy.stdlib.sets",
    "harnpy.stdlib.strings",
    "harnpy.lifecycle.compat",
)

#: The other builtin modules, imported when one of their builtins is first looked up
#: (:class:`harnpy.stdlib.registry.BuiltinTable`), in the order :func:`load_all` uses.
LAZY = (
    "harnpy.stdlib.core",
    "harnpy.stdlib.encoding",
    "harnpy.stdlib.flow",
    "harnpy.stdlib.formats",
    "harnpy.stdlib.fs",
    "harnpy.stdlib.http",
    "harnpy.stdlib.jq",
    "harnpy.stdlib.jsonlib",
    "harnpy.stdlib.kvstore",
    "harnpy.stdlib.mathlib",
    "harnpy.stdlib.regexlib",
    "harnpy.stdlib.runtime_builtins",
    "harnpy.stdlib.schema",
    "harnpy.stdlib.shared",
    "harnpy.stdlib.skills",
    "harnpy.stdlib.stdmodules",
    "harnpy.stdlib.streams",
    "harnpy.stdlib.supervisors",
    "harnpy.stdlib.sync",
    "harnpy.stdlib.task_context",
    "harnpy.stdlib.templates",
    "harnpy.stdlib.timelib",
    "harnpy.stdlib.tracing",
    "harnpy.stdlib.web",
    *PROVIDERS,
)

_core_loaded = False


def _harness(runtime: Any) -> Any:
    return importlib.import_module("harnpy.lifecycle.harness").harness_value(runtime)


def _pipeline_argument(runtime: Any, name: str) -> Any:
    """A pipeline parameter named ``harness`` (any case) gets the Harness, any other nil
    (lifecycle.md 0)."""
    return _harness(runtime) if name.lower() == "harness" else None


def load_core() -> None:
    """Import the :data:`CORE` builtin modules and declare the lazy ones to the runtime:
    their runtime-state providers (restoring a snapshot section imports its module) and
    the global ``harness`` (the lifecycle layer's Harness, built when first used).

    Idempotent. Every other builtin is imported on first lookup.
    """
    global _core_loaded
    if _core_loaded:
        return
    from harnpy.runtime import extensions
    from harnpy.stdlib import _index

    for name in CORE:
        importlib.import_module(name)
    for state, number in _index.STATES.items():
        extensions.LAZY_STATE.setdefault(state, _index.MODULES[number])
    extensions.LAZY_CONSTANTS.setdefault("harness", _harness)
    if _pipeline_argument not in extensions.PIPELINE_ARGUMENT:
        extensions.PIPELINE_ARGUMENT.append(_pipeline_argument)
    _core_loaded = True


def load_all() -> None:
    """Import every builtin module so that its ``@builtin``/``@method`` registrations run
    (:func:`load_core` first).

    Idempotent (Python imports each module once).
    """
    load_core()
    for name in LAZY:
        importlib.import_module(name)
