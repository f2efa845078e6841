"""The one trigger-spec parser shared by ``trigger_register(config)`` and resume conditions.

Spec: lifecycle.md §4.3 (TriggerSpec fields; same parser for ``trigger_register`` and
``ResumeConditions.trigger``), §4.2 (resume triggers get an injected handler). Error texts
follow the reference's ``parse_trigger_config`` (``trigger_register: missing string field
`kind```...); callers wrap them in the code their path needs (plain runtime error,
``HARN-SUS-002`` or ``HARN-SUS-007``).

Accepted config keys: ``id``, ``kind`` (required), ``provider`` (required), ``handler``
(required unless a default is injected: a closure/builtin, an ``a2a://``/``worker://`` URI,
or a handler-variant dict), ``match: {events?, path?}`` or ``events``, ``autonomy_tier`` /
``tier``, ``when`` (closure), ``when_budget``, ``retry: {max, backoff}``, ``dedupe_key``,
``filter``, ``allow_cleartext``, ``budget``, ``manifest_path``, ``package_name``, ``batch``
(stored) and — harnpy, from the cron connector's manifest form — ``schedule``, ``timezone``,
``catchup_mode``. Any config with a ``schedule`` is a cron source: the schedule is validated
(5/6-field or alias; IANA zone; never-firing schedules rejected) and ticks are fired from the
runtime clock (§13 Q5). Unknown keys are ignored, as in the reference.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from harnpy.lifecycle.triggers._util import callable_name as _callable_name
from harnpy.lifecycle.triggers._util import is_callable as _is_callable
from harnpy.lifecycle.triggers._util import jsonable as _jsonable
from harnpy.lifecycle.triggers._util import jsonable as jsonable  # re-exported
from harnpy.lifecycle.triggers.cron import (
    CATCHUP_MODES,
    DEFAULT_CATCHUP,
    CronError,
    CronSchedule,
    parse_schedule,
)
from harnpy.shapes import unstructure

AUTONOMY_TIERS = ("shadow", "suggest", "act_with_approval", "act_auto")
DEFAULT_MAX_ATTEMPTS = 7
HANDLER_VARIANTS = ("spawn_to_pool", "reminder_inject", "interrupt_and_suspend")
#: Handler URI injected into resume triggers (the reference uses the same string).
RESUME_HANDLER_URI = "worker://__resume_auto_resume__"

_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]+$")


class TriggerSpecError(ValueError):
    """A trigger config the parser rejects; ``str(e)`` is the reference-style message."""


@attrs.define(kw_only=True)
class HandlerSpec:
    """What a binding runs when it fires.

    ``kind`` is ``local`` (a Harn closure/builtin in ``callable``), ``a2a`` / ``worker``
    (URI ``target``), ``auto_resume`` (resume worker ``target``), or a handler variant
    (``spawn_to_pool``, ``reminder_inject``, ``interrupt_and_suspend``) whose JSON-able
    settings are in ``config`` and live values (closures) in ``live``.
    """

    kind: str
    target: str | None = None
    raw: str | None = None
    allow_cleartext: bool = False
    config: dict[str, Any] = attrs.field(factory=dict)
    callable: Any = attrs.field(default=None, metadata={"dump": False})
    live: dict[str, Any] = attrs.field(factory=dict, metadata={"dump": False})

    def descriptor(self) -> dict[str, Any]:
        """The JSON descriptor stored with the binding (closures by name only)."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.target is not None:
            out["target"] = self.target
        if self.raw is not None:
            out["raw"] = self.raw
        if self.kind == "a2a":
            out["allow_cleartext"] = self.allow_cleartext
        out.update(self.config)
        return out


@attrs.define(kw_only=True)
class RetrySpec:
    """``retry: {max, backoff}``: attempts (>= 1) and ``svix`` or ``immediate`` backoff."""

    max: int = DEFAULT_MAX_ATTEMPTS
    backoff: str = "svix"


@attrs.define(kw_only=True)
class CronSpec:
    """Cron source settings: ``schedule`` (validated), IANA ``timezone``, ``catchup_mode``."""

    schedule: str
    timezone: str = "UTC"
    catchup_mode: str = DEFAULT_CATCHUP
    semantics: str = "wall_clock"

    def compile(self) -> CronSchedule:
        """The validated :class:`CronSchedule` (cheap; croniter expansions are cached)."""
        return parse_schedule(self.schedule, self.timezone)


@attrs.define(kw_only=True)
class TriggerSpec:
    """A parsed trigger binding spec (lifecycle.md §4.3).

    ``match_events`` is what the binding listens to (``events()`` falls back to ``[kind]``);
    ``when`` holds the predicate closure (not serialized). :meth:`to_json` gives the
    persisted form (the durable wait store keeps it).
    """

    id: str = ""
    kind: str
    provider: str
    handler: HandlerSpec | None = None
    match_events: list[str] = attrs.field(factory=list)
    match_path: str | None = None
    autonomy_tier: str = "act_auto"
    when: Any = attrs.field(default=None, metadata={"dump": False})
    when_raw: str | None = None
    when_budget: dict[str, Any] | None = None
    retry: RetrySpec = attrs.field(factory=RetrySpec)
    dedupe_key: str | None = None
    filter: str | None = None
    allow_cleartext: bool = False
    budget: dict[str, Any] | None = None
    manifest_path: str | None = None
    package_name: str | None = None
    cron: CronSpec | None = None

    def events(self) -> list[str]:
        """The event kinds this binding matches: ``match_events`` or ``[kind]``."""
        return list(self.match_events) if self.match_events else [self.kind]

    def matches(self, provider: str, kind: str) -> bool:
        """True when an event from ``provider`` of kind ``kind`` is for this binding."""
        return provider == self.provider and kind in self.events()

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict of the spec (live closures reduced to their names)."""
        data: dict[str, Any] = unstructure(self)
        data["handler"] = self.handler.descriptor() if self.handler is not None else None
        return data


# ---------------------------------------------------------------- the parser


def parse_trigger_spec(
    config: Any,
    *,
    builtin: str = "trigger_register",
    default_handler: Any = None,
) -> TriggerSpec:
    """Parse a ``trigger_register``-style config dict into a :class:`TriggerSpec`.

    ``default_handler`` is used when the config has no ``handler`` (resume triggers inject
    :data:`RESUME_HANDLER_URI`). Raises :class:`TriggerSpecError` with the reference message.
    """
    if type(config) is not dict:
        raise TriggerSpecError(
            f"{builtin}: expected dict argument at position 1, got {_tn(config)}"
        )
    kind = _required_string(config, "kind", builtin)
    provider = _required_string(config, "provider", builtin)
    allow_cleartext = _optional_bool(config, "allow_cleartext", builtin) or False
    handler_value = config.get("handler", default_handler)
    if handler_value is None:
        handler_value = default_handler
    if handler_value is None:
        raise TriggerSpecError(f"{builtin}: missing `handler`")
    handler = parse_handler(handler_value, builtin, "handler", allow_cleartext)
    when = config.get("when")
    when_raw = None
    if when is not None:
        if not _is_callable(when):
            raise TriggerSpecError(f"{builtin}: `when` must be a closure")
        when_raw = _callable_name(when)
    match = config.get("match")
    events_value = match.get("events") if type(match) is dict else None
    if events_value is None:
        events_value = config.get("events")
    match_events = _string_list(events_value, builtin) if events_value is not None else []
    match_path = match.get("path") if type(match) is dict else None
    if match_path is not None and type(match_path) is not str:
        raise TriggerSpecError(f"{builtin}: `match.path` must be a string")
    tier_value = config.get("autonomy_tier")
    if tier_value is None:
        tier_value = config.get("tier")
    tier = "act_auto"
    if tier_value is not None:
        if type(tier_value) is not str:
            raise TriggerSpecError(
                f"{builtin}: `autonomy_tier` must be a string, got {_tn(tier_value)}"
            )
        if tier_value not in AUTONOMY_TIERS:
            raise TriggerSpecError(
                f"{builtin}: unsupported autonomy_tier '{tier_value}', expected "
                "shadow|suggest|act_with_approval|act_auto"
            )
        tier = tier_value
    budget = config.get("budget") if type(config.get("budget")) is dict else None
    when_budget = config.get("when_budget") if type(config.get("when_budget")) is dict else None
    if budget is not None:
        for key in ("max_autonomous_decisions_per_hour", "max_autonomous_decisions_per_day"):
            if _is_int(budget.get(key)) and budget[key] <= 0:
                raise TriggerSpecError(
                    f"{builtin}: budget.{key} must be greater than or equal to 1"
                )
        exhausted = budget.get("on_budget_exhausted")
        if exhausted is not None:
            if type(exhausted) is not str:
                raise TriggerSpecError(f"{builtin}: budget.on_budget_exhausted must be a string")
            if exhausted not in ("false", "retry_later", "fail", "warn"):
                raise TriggerSpecError(
                    f"{builtin}: unsupported budget.on_budget_exhausted '{exhausted}'"
                )
    if when_budget is not None and when is None:
        raise TriggerSpecError(f"{builtin}: when_budget requires a when predicate")
    retry = _parse_retry(config.get("retry"), builtin)
    if provider == "channel":
        if not match_events:
            raise TriggerSpecError(
                f'{builtin}: provider="channel" requires `match.events: ["channel:<scope>:<name>"]`'
            )
        for selector in match_events:
            try:
                parse_channel_selector(selector)
            except TriggerSpecError as e:
                raise TriggerSpecError(f"{builtin}: invalid channel selector: {e}") from None
    cron = _parse_cron(config, builtin)
    tid = config.get("id")
    return TriggerSpec(
        id=tid if type(tid) is str else "",
        kind=kind,
        provider=provider,
        handler=handler,
        match_events=match_events,
        match_path=match_path,
        autonomy_tier=tier,
        when=when,
        when_raw=when_raw,
        when_budget=_jsonable(when_budget) if when_budget is not None else None,
        retry=retry,
        dedupe_key=_optional_string(config, "dedupe_key"),
        filter=_optional_string(config, "filter"),
        allow_cleartext=allow_cleartext,
        budget=_jsonable(budget) if budget is not None else None,
        manifest_path=_optional_string(config, "manifest_path"),
        package_name=_optional_string(config, "package_name"),
        cron=cron,
    )


def parse_handler(value: Any, builtin: str, field_name: str, allow_cleartext: bool) -> HandlerSpec:
    """Parse a ``handler`` value: closure/builtin, ``a2a://``/``worker://`` URI, or a variant
    dict (``{kind: "spawn_to_pool" | "reminder_inject" | "interrupt_and_suspend", ...}``)."""
    if _is_callable(value):
        return HandlerSpec(kind="local", raw=_callable_name(value), callable=value)
    if type(value) is str:
        if value.startswith("a2a://"):
            return HandlerSpec(
                kind="a2a", target=value[len("a2a://") :], allow_cleartext=allow_cleartext
            )
        if value.startswith("worker://"):
            return HandlerSpec(kind="worker", target=value[len("worker://") :])
        raise TriggerSpecError(
            f"{builtin}: `{field_name}` string must use `a2a://` or `worker://` URI syntax"
        )
    if type(value) is dict:
        return _parse_handler_dict(value, builtin, field_name)
    raise TriggerSpecError(
        f"{builtin}: `{field_name}` must be a closure, handler URI string, or handler-variant "
        f"dict, got {_tn(value)}"
    )


def _parse_handler_dict(m: dict[str, Any], builtin: str, field_name: str) -> HandlerSpec:
    kind = m.get("kind", m.get("_kind"))
    if not kind:
        raise TriggerSpecError(f"{builtin}: `{field_name}` handler dict missing `kind`")
    kind = str(kind)
    if kind == "spawn_to_pool":
        pool = m.get("pool")
        if not pool:
            raise TriggerSpecError(f"{builtin}: SpawnToPool handler requires `pool` (string)")
        factory = m.get("task_factory")
        if factory is None:
            raise TriggerSpecError(
                f"{builtin}: SpawnToPool handler requires `task_factory` closure"
            )
        if not _is_callable(factory):
            raise TriggerSpecError(
                f"{builtin}: SpawnToPool.task_factory must be a closure, got {_tn(factory)}"
            )
        return HandlerSpec(
            kind=kind,
            config={
                "pool": str(pool),
                "priority_from": _path_string(m, "priority_from", "SpawnToPool"),
                "key_from": _path_string(m, "key_from", "SpawnToPool"),
                "task_factory": _callable_name(factory),
            },
            live={"task_factory": factory},
        )
    if kind == "reminder_inject":
        body = m.get("body")
        if body is None:
            raise TriggerSpecError(
                f"{builtin}: ReminderInject handler requires `body` (string template)"
            )
        if type(body) is not str:
            raise TriggerSpecError(
                f"{builtin}: ReminderInject `body` must be a string, got {_tn(body)}"
            )
        target = m.get("target", m.get("target_session_id"))
        reminder_live = {"target": target} if _is_callable(target) else {}
        cfg = {k: _jsonable(v) for k, v in m.items() if k not in ("kind", "_kind")}
        return HandlerSpec(kind=kind, config=cfg, live=reminder_live)
    if kind == "interrupt_and_suspend":
        target = m.get("target_agents", m.get("target"))
        live: dict[str, Any] = {}
        if target is None:
            scope_kind, concrete = "all", None
        elif type(target) is str:
            if target in ("all", "all_in_scope"):
                scope_kind, concrete = "all", None
            elif target:
                scope_kind, concrete = "concrete", [target]
            else:
                raise TriggerSpecError(
                    f"{builtin}: InterruptAndSuspend `target_agents` string must be 'all' or a "
                    "non-empty worker id"
                )
        elif type(target) is list:
            ids = []
            for item in target:
                if type(item) is not str:
                    raise TriggerSpecError(
                        f"{builtin}: InterruptAndSuspend `target_agents` list entries must be "
                        f"strings, got {_tn(item)}"
                    )
                if not item.strip():
                    raise TriggerSpecError(
                        f"{builtin}: InterruptAndSuspend `target_agents` list entries must be "
                        "non-empty strings"
                    )
                ids.append(item.strip())
            scope_kind, concrete = "concrete", ids
        elif _is_callable(target):
            scope_kind, concrete = "closure", None
            live["target_agents"] = target
        else:
            raise TriggerSpecError(
                f"{builtin}: InterruptAndSuspend `target_agents` must be the string 'all', a list "
                f"of worker-id strings, or a closure returning a list, got {_tn(target)}"
            )
        reason = m.get("reason")
        if reason is None:
            reason = "panic"
        elif type(reason) is not str:
            raise TriggerSpecError(
                f"{builtin}: InterruptAndSuspend `reason` must be a string, got {_tn(reason)}"
            )
        return HandlerSpec(
            kind=kind,
            config={
                "scope_kind": scope_kind,
                "targets": concrete,
                "concrete_count": len(concrete) if concrete is not None else None,
                "reason": reason,
            },
            live=live,
        )
    raise TriggerSpecError(
        f"{builtin}: unsupported handler variant '{kind}'; expected 'spawn_to_pool', "
        "'reminder_inject', or 'interrupt_and_suspend'"
    )


def _parse_retry(value: Any, builtin: str) -> RetrySpec:
    if type(value) is not dict:
        return RetrySpec()
    mx = value.get("max")
    attempts: int = max(1, int(mx)) if type(mx) is int else DEFAULT_MAX_ATTEMPTS
    backoff = value.get("backoff")
    if backoff is None or backoff == "svix":
        return RetrySpec(max=attempts, backoff="svix")
    if backoff == "immediate":
        return RetrySpec(max=attempts, backoff="immediate")
    raise TriggerSpecError(
        f"{builtin}: unsupported retry.backoff '{backoff}', expected 'svix' or 'immediate'"
    )


def _parse_cron(config: dict[str, Any], builtin: str) -> CronSpec | None:
    schedule = config.get("schedule")
    if schedule is None:
        return None
    tz = config.get("timezone")
    mode = config.get("catchup_mode")
    if mode is None:
        mode = DEFAULT_CATCHUP
    if type(mode) is not str or mode not in CATCHUP_MODES:
        raise TriggerSpecError(
            f"{builtin}: unsupported catchup_mode `{mode}`; expected one of: "
            + ", ".join(CATCHUP_MODES)
        )
    try:
        sched = parse_schedule(schedule, tz)
    except CronError as e:
        raise TriggerSpecError(f"{builtin}: invalid cron trigger: {e}") from None
    return CronSpec(
        schedule=sched.expression,
        timezone=sched.tz_name,
        catchup_mode=mode,
        semantics="periodic" if sched.periodic else "wall_clock",
    )


# ---------------------------------------------------------------- topics and channels


def validate_topic(name: str) -> str | None:
    """The reason an EventLog topic name is invalid, or None when it is valid.

    Topics are non-empty and use ASCII letters, digits, ``.``, ``_``, ``-`` (reference
    ``event_log::Topic::new``)."""
    if name == "":
        return "topic cannot be empty"
    if not _TOPIC_RE.match(name):
        return f"topic '{name}' contains unsupported characters"
    return None


_SCOPES = ("session", "pipeline", "tenant", "org")


def parse_channel_name(raw: str) -> tuple[str | None, str | None, str]:
    """Split a channel name into ``(scope, scope_id, name)``.

    Forms: ``name``, ``session:name``, ``pipeline:name``, ``tenant:name``,
    ``tenant:<id>:name``, ``org:<id>:name``. Raises :class:`TriggerSpecError` (HARN-CHN-003
    texts) for malformed names.
    """
    raw = raw.strip()
    if not raw:
        raise TriggerSpecError("HARN-CHN-003 channel name cannot be empty")
    if ":" not in raw:
        _check_channel_name(raw)
        return None, None, raw
    prefix, rest = raw.split(":", 1)
    scope = prefix.strip()
    if scope not in _SCOPES:
        raise TriggerSpecError(f"HARN-CHN-003 malformed channel scope '{scope}'")
    scope_id: str | None = None
    if scope in ("session", "pipeline"):
        if not rest or ":" in rest:
            raise TriggerSpecError(f"HARN-CHN-003 malformed {scope} channel name '{raw}'")
        name = rest
    elif scope == "tenant":
        if not rest:
            raise TriggerSpecError("HARN-CHN-003 tenant channel name cannot be empty")
        if ":" in rest:
            tid, name = rest.split(":", 1)
            if not tid or not name:
                raise TriggerSpecError(f"HARN-CHN-003 malformed tenant channel name '{raw}'")
            scope_id = tid
        else:
            name = rest
    else:
        if ":" not in rest:
            raise TriggerSpecError(
                f"HARN-CHN-003 org channel names must be org:<org_id>:<name>, got '{raw}'"
            )
        oid, name = rest.split(":", 1)
        if not oid or not name:
            raise TriggerSpecError(f"HARN-CHN-003 malformed org channel name '{raw}'")
        scope_id = oid
    _check_channel_name(name)
    return scope, scope_id, name


def parse_channel_selector(selector: Any) -> tuple[str | None, str | None, str]:
    """Parse a channel trigger selector ``channel:<name>`` (any :func:`parse_channel_name`
    form after the prefix) into ``(scope, scope_id, name)``."""
    if type(selector) is not str or not selector.startswith("channel:"):
        raise TriggerSpecError(f"selector '{selector}' must start with 'channel:'")
    return parse_channel_name(selector[len("channel:") :])


def _check_channel_name(name: str) -> None:
    if not name.strip() or ":" in name or any(c.isspace() or not c.isprintable() for c in name):
        raise TriggerSpecError(f"HARN-CHN-003 malformed channel name '{name}'")


# ---------------------------------------------------------------- small helpers


def _tn(v: Any) -> str:
    from harnpy.runtime.values import type_name

    return type_name(v)


def _is_int(v: Any) -> bool:
    return type(v) is int


def _required_string(config: dict[str, Any], key: str, builtin: str) -> str:
    v = config.get(key)
    if type(v) is not str:
        raise TriggerSpecError(f"{builtin}: missing string field `{key}`")
    return v


def _optional_string(config: dict[str, Any], key: str) -> str | None:
    v = config.get(key)
    return v if type(v) is str else None


def _optional_bool(config: dict[str, Any], key: str, builtin: str) -> bool | None:
    v = config.get(key)
    if v is None:
        return None
    if type(v) is not bool:
        raise TriggerSpecError(f"{builtin}: field `{key}` must be a bool")
    return v


def _path_string(m: dict[str, Any], key: str, variant: str) -> str | None:
    v = m.get(key)
    if v is None:
        return None
    if type(v) is not str:
        raise TriggerSpecError(f"{variant}: `{key}` must be a string path or nil, got {_tn(v)}")
    return v.strip() or None


def _string_list(value: Any, builtin: str) -> list[str]:
    if type(value) is not list:
        raise TriggerSpecError(f"{builtin}: `events` must be a list of strings")
    out = []
    for item in value:
        if type(item) is not str:
            raise TriggerSpecError(f"{builtin}: `events` entries must be strings, got {_tn(item)}")
        out.append(item)
    return out
