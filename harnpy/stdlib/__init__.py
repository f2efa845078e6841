"""Builtins and the bundled standard library.

:mod:`harnpy.stdlib.registry` holds the one builtin registry; each module below registers its
builtins at import time. :func:`load_all` imports them all.
"""


def load_all() -> None:
    """Import every builtin module so that its ``@builtin``/``@method`` registrations run.

    Idempotent (Python imports each module once).
    """
    import harnpy.lifecycle.agents  # noqa: F401
    import harnpy.lifecycle.harness  # noqa: F401
    import harnpy.lifecycle.hooks  # noqa: F401
    import harnpy.lifecycle.llm_builtins  # noqa: F401
    import harnpy.lifecycle.pipeline_lifecycle  # noqa: F401
    import harnpy.lifecycle.receipts  # noqa: F401
    import harnpy.lifecycle.resume_conditions  # noqa: F401
    import harnpy.lifecycle.sessions  # noqa: F401
    import harnpy.lifecycle.tools  # noqa: F401
    import harnpy.lifecycle.transcript  # noqa: F401
    import harnpy.lifecycle.trigger_variants  # noqa: F401

    # after the agents layer: it replaces the minimal ``parse_resume_conditions``
    import harnpy.lifecycle.triggers.builtins  # noqa: F401
    import harnpy.lifecycle.turns  # noqa: F401
    import harnpy.lifecycle.workers  # noqa: F401
    import harnpy.stdlib.concurrency  # noqa: F401
    import harnpy.stdlib.core  # noqa: F401
    import harnpy.stdlib.dicts  # noqa: F401
    import harnpy.stdlib.encoding  # noqa: F401
    import harnpy.stdlib.flow  # noqa: F401
    import harnpy.stdlib.formats  # noqa: F401
    import harnpy.stdlib.fs  # noqa: F401
    import harnpy.stdlib.iters  # noqa: F401
    import harnpy.stdlib.jq  # noqa: F401
    import harnpy.stdlib.jsonlib  # noqa: F401
    import harnpy.stdlib.lists  # noqa: F401
    import harnpy.stdlib.mathlib  # noqa: F401
    import harnpy.stdlib.regexlib  # noqa: F401
    import harnpy.stdlib.runtime_builtins  # noqa: F401
    import harnpy.stdlib.schema  # noqa: F401
    import harnpy.stdlib.sets  # noqa: F401
    import harnpy.stdlib.shared  # noqa: F401
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
