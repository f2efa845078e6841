"""Triggers, resume conditions and the durable wait store (lifecycle.md §4, §10, §13 Q4/Q5).

Modules:

* :mod:`.spec` — the one trigger-spec parser (``TriggerSpec``), shared by
  ``trigger_register(config)`` and ``ResumeConditions.trigger``;
* :mod:`.conditions` — ``parse_resume_conditions`` (§4.1, ``HARN-SUS-002``) and the raw
  suspend-path parser (§4.2, ``HARN-SUS-002/007/008``);
* :mod:`.cron` — cron schedules in IANA zones (DST rules, either-field rule, impossible
  schedules, missed-tick coalescing);
* :mod:`.dispatcher` — the in-process dispatcher of a runtime (bindings, resume waits,
  ``emit_event``, ``emit_channel``, clock-driven timeouts and ticks);
* :mod:`.store` — the durable wait store (``WaitStore`` protocol, ``SqliteWaitStore``),
  exclusive claims and resume receipts;
* :mod:`.runner` — ``harnpy worker``: polls the store, resumes due waits exactly once;
* :mod:`.cli` — ``harnpy worker`` and ``harnpy workers ls|show|resume|close``;
* :mod:`.builtins` — the Harn builtins.

API for the worker layer (suspend / resume)
-------------------------------------------

``d = get_dispatcher(runtime)`` — the runtime's :class:`~.dispatcher.TriggerDispatcher`
(``runtime.trigger_dispatcher``; clock = ``runtime.clock``; store from
``runtime.wait_store_path`` or ``HARNPY_STORE``).

``d.resume_handler = fn`` — install once. ``fn(req: ResumeRequest) -> Any`` is called when
a wait fires in-process: ``req.worker_id``, ``req.wait_id``, ``req.action`` (``"resume"``,
or ``"fail"`` = timeout with ``on_timeout: "fail"``: apply T10), ``req.initiator``
(``triggered`` / ``timeout``), ``req.input``, ``req.continue_transcript``,
``req.trigger_event``, ``req.timeout_action``, ``req.trigger_info()`` (the §8 ``trigger``
record). Raise a HarnError to report a failed resume (the trigger dispatch shows ``dlq``).

``d.register_resume_wait(worker_id, conditions, snapshot_path, now_ms=None, *,
deadline_ms=None, durable=False) -> {id, version, deadline_ms, next_fire_ms, durable} |
None`` — the raw suspend path (§4.2): registers the auto-resume binding (``id`` =
``auto_resume_<worker>_<uuidv7>``; store ``{id, version}`` as
``suspension.auto_resume_trigger``), arms the timeout at the absolute ``deadline_ms`` (keep
it in the snapshot and pass it back when re-registering after a cold load), schedules cron
ticks, listens on ``on_event``. None = open park. Raises HARN-SUS-002/007/008.
``durable=True`` (``ResumeBy.cloud_harness`` with a store) also records the wait in the
store so ``harnpy worker`` can resume it from ``snapshot_path`` after this process exits.

``d.cancel_resume_wait(id_or_handle)`` — call on every resume / close (a late timer or
trigger is then a no-op; durable waits are cancelled in the store too).

``d.due_waits(now_ms)`` — ``[(wait, cause, at_ms)]`` due now (inspection); ``d.poll(now_ms)``
fires them; ``d.fire_timeout(wait_id)`` fires one timeout at once.

``d.variant_executors["interrupt_and_suspend"] = fn(dispatcher, binding, event)`` — plug
in handler variants owned by the worker layer (may be a generator yielding CallRequests).

``cloud_session_id(runtime) -> str | None`` — ``"harnpy-store:<path>"`` when a store is
configured (``HARNPY_STORE`` or ``runtime.wait_store_path``), else None
(``cloud_harness`` declines with ``no_cloud_session``).

Environment given to a resume subprocess by ``harnpy worker``: ``HARNPY_RESUME_REQUEST``
(JSON of the ``ResumeRequest``), ``HARNPY_RESUME_INPUT`` (JSON of the input),
``HARNPY_RESUME_INITIATOR``, ``HARNPY_RESUME_CONTINUE_TRANSCRIPT`` (``true``/``false``),
``HARNPY_WAIT_ID``, ``HARNPY_WORKER_ID``, ``HARNPY_STORE``: the cold-resume path may read
them to apply the input and initiator.
"""

from __future__ import annotations

from typing import Any

__all__ = ["cloud_session_id", "get_dispatcher"]


def get_dispatcher(runtime: Any) -> Any:
    """The runtime's :class:`~harnpy.lifecycle.triggers.dispatcher.TriggerDispatcher`."""
    from harnpy.lifecycle.triggers.dispatcher import get_dispatcher as _get

    return _get(runtime)


def cloud_session_id(runtime: Any = None) -> str | None:
    """``harnpy-store:<path>`` when a durable wait store is configured, else None.

    Raises:
        harnpy.lifecycle.triggers.store.StoreError: ``HARNPY_STORE`` names an unsupported
            backend.
    """
    from harnpy.lifecycle.triggers.store import configured_store_path
    from harnpy.store.url import parse_store_url

    path = configured_store_path(getattr(runtime, "wait_store_path", None))
    if not path:
        return None
    url = parse_store_url(path)
    return f"harnpy-store:{url.display if url is not None else path}"
