"""Builtins and the bundled standard library.

:mod:`harnpy.stdlib.registry` holds the one builtin registry; each module below registers its
builtins at import time. :func:`load_all` imports them all, then the builtin *providers* of
the layers above (agents, lifecycle, triggers), which are named in :data:`PROVIDERS` rather
than imported statically, so that imports keep running one way (stdlib never depends on
the lifecycle layer's code).
"""

import importlib

#: Modules of outer layers that register builtins, imported in this order.
PROVIDERS = (
    "harnpy.lifecycle.agents",
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
    "harnpy.lifecycle.waitpoints.builtins",
)


def load_all() -> None:
    """Import every builtin module so that its ``@builtin``/``@method`` registrations run.

    Idempotent (Python imports each module once).
    """
    import harnpy.stdlib.concurrency  # noqa: F401
    import harnpy.stdlib.core  # noqa: F401
    import harnpy.stdlib.dicts  # noqa: F401
    import harnpy.stdlib.encoding  # noqa: F401
    import harnpy.stdlib.flow  # noqa: F401
    import harnpy.stdlib.formats  # noqa: F401
    import harnpy.stdlib.fs  # noqa: F401
    import harnpy.stdlib.http  # noqa: F401
    import harnpy.stdlib.iters  # noqa: F401
    import harnpy.stdlib.jq  # noqa: F401
    import harnpy.stdlib.jsonlib  # noqa: F401
    import harnpy.stdlib.kvstore  # noqa: F401
    import harnpy.stdlib.lists  # noqa: F401
    import harnpy.stdlib.mathlib  # noqa: F401
    import harnpy.stdlib.regexlib  # noqa: F401
    import harnpy.stdlib.runtime_builtins  # noqa: F401
    import harnpy.stdlib.schema  # noqa: F401
    import harnpy.stdlib.sets  # noqa: F401
    import harnpy.stdlib.shared  # noqa: F401
    import harnpy.stdlib.skills  # noqa: F401
    import harnpy.stdlib.stdmodules  # noqa: F401
    import harnpy.stdlib.streams  # noqa: F401
    import harnpy.stdlib.strings  # noqa: F401
    import harnpy.stdlib.supervisors  # noqa: F401
    import harnpy.stdlib.sync  # noqa: F401
    import harnpy.stdlib.task_context  # noqa: F401
    import harnpy.stdlib.templates  # noqa: F401
    import harnpy.stdlib.timelib  # noqa: F401
    import harnpy.stdlib.tracing  # noqa: F401
    import harnpy.stdlib.web  # noqa: F401

    for name in PROVIDERS:
        importlib.import_module(name)
