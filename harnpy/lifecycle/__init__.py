"""Agents, tools, transcripts, workers and the Harness capability object (lifecycle.md).

Stage job: give Harn programs the agent surface of lifecycle.md sections 2, 3, 7 and 12 on
top of the evaluator (:mod:`harnpy.runtime`) and the provider layer (:mod:`harnpy.llm`):
``llm_call``, tool registries, ``agent_loop``, background workers (``spawn_agent``,
``sub_agent_run``, ``wait_agent``...), transcripts as data and ``Harness``.

Invariants (dev/impl.md, "Agents, workers, suspension"):

* ``agent_loop`` is Harn code (``stdlib/std/agent/_loop.harn``) over the ``__agent_*``
  primitives registered here. All loop state lives in Harn values in the loop frame; tool
  handlers run as ordinary Harn calls from that code, never from Python.
* Model calls and waits are *control* builtins that block their thread with
  :func:`harnpy.runtime.scheduler.block_control`, so a thread waiting on a model, on a
  worker or at a turn boundary is plain data. No callback builtin is on the stack at a turn
  boundary.
* Per-run state (LLM host, worker registry, event logs, sessions) lives on the
  :class:`~harnpy.runtime.runtime.Runtime` (``runtime.agent_state``); nothing is global.

Modules: :mod:`._common` (shared helpers), :mod:`.services` (the per-runtime record),
:mod:`.llm_builtins`, :mod:`.tools`, :mod:`.transcript`, :mod:`.resume_conditions`,
:mod:`.agents` (loop primitives, ``agent_loop``, ``__turn_boundary``), :mod:`.workers`,
:mod:`.harness`.
"""
