"""Provider catalog, capability and cost builtins over :mod:`harnpy.llm.catalog`.

``llm_providers``, ``llm_config``, ``llm_healthcheck``, ``llm_model_tier``,
``llm_infer_provider``, ``llm_resolve_model``, ``llm_model_info``, ``llm_known_models``,
``llm_available_providers``, ``llm_provider_catalog``, ``provider_capabilities``,
``provider_capabilities_install`` / ``provider_capabilities_clear``, ``llm_pick_model``.
(The cost builtins, ``llm_cost`` / ``llm_budget`` / ``llm_session_cost``, are in
:mod:`harnpy.lifecycle.llm_session`, ``llm_completion`` and ``llm_stream`` in
:mod:`harnpy.lifecycle.llm_stream`; both are imported from here so that they register with
these.)

State (capability rows installed at run time) lives on the runtime as
``runtime.llm_catalog_state`` — plain JSON data — and program snapshots carry it
(runtime-state section ``llm_catalog``).
"""

from __future__ import annotations

import os
from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.llm import catalog
from harnpy.runtime.display import display
from harnpy.runtime.extensions import register_state
from harnpy.stdlib.registry import builtin

STATE_ATTR = "llm_catalog_state"


def _fresh() -> dict[str, Any]:
    return {"capabilities": {}}


def state(runtime: Any) -> dict[str, Any]:
    """The runtime's catalog state ``{capabilities: {family: [row]}}`` (created on first
    use)."""
    st = getattr(runtime, STATE_ATTR, None)
    if st is None:
        st = _fresh()
        setattr(runtime, STATE_ATTR, st)
    return st  # type: ignore[no-any-return]


def _env(thread: Any) -> Any:
    from harnpy.lifecycle.services import services

    try:
        return services(thread.runtime).llm.env
    except Exception:  # noqa: BLE001 - a broken mock fixture must not hide the env
        return os.environ


def _str_arg(v: Any, where: str, what: str) -> str:
    if type(v) is not str or not v.strip():
        raise thrown(f"{where}: {what} must be a non-empty string, got {display(v)}")
    return v


# ----------------------------------------------------------------------------- catalog


@builtin("llm_providers")
def llm_providers(thread: Any) -> list[str]:
    """``llm_providers() -> [string]``: every provider name of the bundled catalog
    (anthropic, openai, openrouter, together, groq, deepseek, fireworks, huggingface,
    gemini, azure_openai, bedrock, vertex, ollama, local, mock)."""
    return catalog.provider_names()


@builtin("llm_config")
def llm_config(thread: Any, provider: Any = None) -> Any:
    """``llm_config(provider?) -> dict | nil``: the catalog entry of ``provider`` —
    ``{name, display_name, base_url, base_url_env?, auth_style ("header" | "bearer" |
    "none" | "aws_sigv4" | "oauth"), auth_header?, auth_env: [var], chat_endpoint,
    healthcheck_path?, tool_format, family, auth_available}`` — or nil for an unknown
    provider. Without an argument: ``{provider: entry}`` for every provider."""
    env = _env(thread)
    if provider is None:
        out: dict[str, Any] = {}
        for name in catalog.provider_names():
            entry = catalog.provider_config(name) or {}
            entry["auth_available"] = catalog.auth_available(name, env)
            out[name] = entry
        return out
    name = _str_arg(provider, "llm_config", "provider")
    found = catalog.provider_config(name)
    if found is None:
        return None
    found["auth_available"] = catalog.auth_available(name, env)
    return found


def _health(provider: str, valid: bool, status: str, message: str, **meta: Any) -> dict[str, Any]:
    return {
        "provider": provider,
        "valid": valid,
        "status": status,
        "message": message,
        "metadata": meta,
    }


@builtin("llm_healthcheck")
def llm_healthcheck(thread: Any, target: Any = None, options: Any = None) -> dict[str, Any]:
    """``llm_healthcheck(provider | {provider, api_key?, model?, base_url?}, options?) ->
    {provider, valid, status, message, metadata}``: check that a provider can be used.

    ``status`` is ``"ok"``, ``"unknown_provider"``, ``"missing_credentials"``,
    ``"invalid_request"`` (``warm: true`` without a model for a provider that needs one),
    ``"disabled"`` (``HARN_LLM_CALLS_DISABLED``) or ``"unreachable"``; ``metadata.reason``
    repeats it. With ``options.probe: true`` (or ``warm: true`` and a model) a real
    provider's ``healthcheck_path`` is fetched over HTTP (timeout ``options.timeout_ms``,
    default 5000); otherwise only the configuration and credentials are checked. Never
    throws for a bad provider: the answer says what is wrong."""
    opts = options if type(options) is dict else {}
    if type(target) is dict:
        opts = {**target, **opts}
        target = target.get("provider")
    if type(target) is not str or not target.strip():
        raise thrown(f"llm_healthcheck: provider must be a string or dict, got {display(target)}")
    name = target.strip()
    entry = catalog.provider_config(name)
    if entry is None:
        return _health(
            name,
            False,
            "unknown_provider",
            f"Unknown provider {name!r} (known: {', '.join(catalog.provider_names())})",
            reason="unknown_provider",
        )
    env = _env(thread)
    model = opts.get("model")
    if opts.get("warm") is True and not model and entry.get("requires_model_for_warm"):
        return _health(
            name,
            False,
            "invalid_request",
            f"{name}: a warm healthcheck loads a model; pass `model`",
            reason="invalid_request",
        )
    if name == "mock":
        return _health(name, True, "ok", "mock provider is always available", reason="ok")
    key = opts.get("api_key")
    has_key = (type(key) is str and bool(key)) or catalog.auth_available(name, env)
    if not has_key:
        wanted = " or ".join(entry.get("auth_env", [])) or "credentials"
        return _health(
            name,
            False,
            "missing_credentials",
            f"{name}: no API key (set {wanted})",
            reason="missing_credentials",
        )
    if not (opts.get("probe") is True or (opts.get("warm") is True and model)):
        return _health(name, True, "ok", f"{name}: configured", reason="configured")
    from harnpy.llm._remote import calls_disabled

    if calls_disabled(env):
        return _health(
            name, False, "disabled", f"{name}: real LLM calls are disabled", reason="disabled"
        )
    return _probe(name, entry, env, opts, key if type(key) is str else None)


def _probe(
    name: str, entry: dict[str, Any], env: Any, opts: dict[str, Any], key: str | None
) -> dict[str, Any]:
    try:
        import httpx
    except ImportError:  # a dependency of the LLM extras; a bare install may lack it
        return _health(
            name,
            False,
            "unreachable",
            f"{name}: probing needs httpx (pip install httpx)",
            reason="unreachable",
        )

    base = opts.get("base_url") or env.get(entry.get("base_url_env") or "", "") or entry["base_url"]
    path = entry.get("healthcheck_path")
    if not base or not path:
        return _health(name, True, "ok", f"{name}: configured (no probe endpoint)", reason="ok")
    url = str(base).rstrip("/") + path
    headers: dict[str, str] = {}
    if key is None:
        key = next((env.get(v) for v in entry.get("auth_env", []) if env.get(v)), None)
    if key and entry.get("auth_style") == "bearer":
        headers["Authorization"] = f"Bearer {key}"
    elif key and entry.get("auth_style") == "header" and entry.get("auth_header"):
        headers[str(entry["auth_header"])] = key
        if name == "anthropic":
            headers["anthropic-version"] = "2023-06-01"
    timeout = float(opts.get("timeout_ms") or 5000) / 1000.0
    try:
        resp = httpx.get(url, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        return _health(name, False, "unreachable", f"{name}: {exc}", reason="unreachable", url=url)
    if resp.status_code in (401, 403):
        return _health(
            name,
            False,
            "invalid_credentials",
            f"{name}: HTTP {resp.status_code}",
            reason="invalid_credentials",
            http_status=resp.status_code,
        )
    if resp.status_code >= 400:
        return _health(
            name,
            False,
            "http_error",
            f"{name}: HTTP {resp.status_code}",
            reason="http_error",
            http_status=resp.status_code,
        )
    return _health(
        name, True, "ok", f"{name}: reachable", reason="ok", http_status=resp.status_code
    )


@builtin("llm_model_tier")
def llm_model_tier(thread: Any, model: Any = None) -> str:
    """``llm_model_tier(model) -> "small" | "mid" | "frontier"``: the model's catalog
    tier, else a guess from its name (parameter count, family)."""
    return catalog.model_tier(_str_arg(model, "llm_model_tier", "model"))


@builtin("llm_infer_provider")
def llm_infer_provider(thread: Any, model: Any = None) -> str:
    """``llm_infer_provider(model) -> string``: the provider a model name implies
    (``claude*`` anthropic, ``gpt*``/``o3`` openai, ``vendor/model`` openrouter,
    ``name:tag`` ollama, a ``<provider>:`` prefix or alias; default anthropic)."""
    return catalog.infer_provider(_str_arg(model, "llm_infer_provider", "model"))


@builtin("llm_resolve_model")
def llm_resolve_model(thread: Any, model: Any = None) -> dict[str, Any]:
    """``llm_resolve_model(model) -> {id, provider, alias}``: resolve an alias (``mid``)
    or a ``<provider>:<id>`` name (``local:`` = a model served by Ollama)."""
    return catalog.resolve_model(_str_arg(model, "llm_resolve_model", "model"))


def _model_info(thread: Any, model: str) -> dict[str, Any]:
    resolved = catalog.resolve_model(model)
    entry = catalog.model_entry(resolved["id"])
    provider = resolved["provider"]
    cfg = catalog.provider_config(provider) or {}
    extra = state(thread.runtime)["capabilities"]
    return {
        "id": resolved["id"],
        "provider": provider,
        "alias": resolved["alias"],
        "tier": catalog.model_tier(model),
        "tool_format": cfg.get("tool_format", "native"),
        "auth_available": catalog.auth_available(provider, _env(thread)),
        "catalog": entry,
        "capabilities": catalog.capabilities(provider, resolved["id"], extra=extra),
    }


@builtin("llm_model_info")
def llm_model_info(thread: Any, model: Any = None) -> dict[str, Any]:
    """``llm_model_info(model) -> {id, provider, alias, tier, tool_format, auth_available,
    catalog: {id, provider, tier, context_window, pricing: {input_per_mtok,
    output_per_mtok, ...}} | nil, capabilities}``: everything the catalog knows about a
    model name or alias."""
    return _model_info(thread, _str_arg(model, "llm_model_info", "model"))


@builtin("llm_pick_model")
def llm_pick_model(thread: Any, tier: Any = None, options: Any = None) -> dict[str, Any]:
    """``llm_pick_model(tier, options?) -> {id, model, provider, tier, alias}``: the model
    for a tier (``small``, ``mid``, ``frontier``; other catalog aliases such as ``fast``
    or ``reasoning`` work too): the catalog alias of that name. With ``options.provider``,
    the first catalog model of that tier served by that provider instead (the alias when
    none is). ``tier`` is the picked model's tier. Throws for an unknown tier."""
    cat = catalog.bundled()
    aliases = cat.get("aliases", {})
    name = _str_arg(tier, "llm_pick_model", "tier")
    if name not in aliases:
        raise thrown(
            f"llm_pick_model: unknown tier {name!r} (expected one of {', '.join(aliases)})"
        )
    if options is not None and type(options) is not dict:
        raise thrown(f"llm_pick_model: options must be a dict, got {display(options)}")
    entry = aliases[name]
    model_id, provider = str(entry["id"]), str(entry["provider"])
    want = (options or {}).get("provider")
    if type(want) is str and want != provider:
        for row in cat.get("models", []):
            if row.get("provider") == want and row.get("tier") == name:
                model_id, provider = str(row["id"]), want
                break
    return {
        "id": model_id,
        "model": model_id,
        "provider": provider,
        "tier": catalog.model_tier(model_id),
        "alias": name,
    }


@builtin("llm_known_models")
def llm_known_models(thread: Any) -> list[str]:
    """``llm_known_models() -> [string]``: alias names (``frontier``, ``mid``, ``small``...)
    then every model id of the catalog."""
    return catalog.known_models()


@builtin("llm_available_providers")
def llm_available_providers(thread: Any) -> list[str]:
    """``llm_available_providers() -> [string]``: providers usable now (keyless ones such
    as ollama, local and mock, plus those whose API-key variable is set)."""
    return catalog.available_providers(_env(thread))


@builtin("llm_provider_catalog")
def llm_provider_catalog(thread: Any) -> dict[str, Any]:
    """``llm_provider_catalog() -> {providers: [entry], aliases: {alias: {id, provider}},
    models: [row], qc_defaults: {provider: {model?, max_tokens, timeout_ms}}}``: the whole
    bundled catalog as data."""
    import copy

    cat = catalog.bundled()
    env = _env(thread)
    providers = []
    for name in catalog.provider_names():
        entry = catalog.provider_config(name) or {}
        entry["auth_available"] = catalog.auth_available(name, env)
        providers.append(entry)
    return {
        "providers": providers,
        "aliases": copy.deepcopy(cat.get("aliases", {})),
        "models": copy.deepcopy(cat.get("models", [])),
        "qc_defaults": copy.deepcopy(cat.get("qc_defaults", {})),
    }


# ----------------------------------------------------------------------------- capabilities


@builtin("provider_capabilities")
def provider_capabilities(thread: Any, provider: Any = None, model: Any = None) -> dict[str, Any]:
    """``provider_capabilities(provider, model?) -> dict``: what the capability matrix
    knows about a (provider, model) pair: ``{provider, model, family, native_tools,
    defer_loading, tool_search: ["bm25", "regex"] | ["hosted", "client"] | [], max_tools:
    int | nil, prompt_caching, thinking, thinking_modes: ["adaptive" | "enabled" |
    "effort"], vision_supported, audio_supported, pdf_supported,
    requires_completion_tokens, reasoning_effort_supported, structured_output}``. Unknown
    pairs get all-false defaults. Rows installed with ``provider_capabilities_install``
    are tried first."""
    name = _str_arg(provider, "provider_capabilities", "provider")
    if model is not None and type(model) is not str:
        raise thrown(f"provider_capabilities: model must be a string, got {display(model)}")
    return catalog.capabilities(name, model, extra=state(thread.runtime)["capabilities"])


@builtin("provider_capabilities_install")
def provider_capabilities_install(thread: Any, toml_text: Any = None) -> int:
    """``provider_capabilities_install(toml) -> int``: add capability rows for this run
    from a TOML document (``[[capabilities.<provider-or-family>]]`` tables with a ``model``
    regex, optional ``min_version = [major, minor]`` and capability fields; the
    ``capabilities.`` prefix may be left out). They take precedence over the bundled
    matrix. Returns the number of rows installed. Throws on invalid TOML or rows."""
    text = _str_arg(toml_text, "provider_capabilities_install", "toml")
    try:
        rows = catalog.parse_capability_rows(text)
    except catalog.CatalogError as exc:
        raise thrown(f"provider_capabilities_install: {exc}") from None
    installed = state(thread.runtime)["capabilities"]
    count = 0
    for family, new in rows.items():
        installed[family] = [*new, *installed.get(family, [])]
        count += len(new)
    return count


@builtin("provider_capabilities_clear")
def provider_capabilities_clear(thread: Any) -> None:
    """``provider_capabilities_clear()``: drop every row installed with
    ``provider_capabilities_install`` (the bundled matrix stays)."""
    state(thread.runtime)["capabilities"] = {}


# ----------------------------------------------------------------------------- snapshots


def _save(thread: Any) -> Any:
    st = getattr(thread.runtime, STATE_ATTR, None)
    if st is None or st == _fresh():
        return None
    return st


def _load(thread: Any, data: Any) -> Any:
    if type(data) is not dict or set(data) != {"capabilities"}:
        raise TypeError("llm_catalog state must be {capabilities}")
    caps = data["capabilities"]
    if type(caps) is not dict or any(type(v) is not list for v in caps.values()):
        raise TypeError("installed capabilities must be {family: [row]}")
    catalog._check_rows(caps)
    rt = thread.runtime
    return lambda: setattr(rt, STATE_ATTR, data)


register_state("llm_catalog", _save, _load)


# The cost and budget builtins, llm_completion and llm_stream register with the catalog's
# (see the module docstring).
from harnpy.lifecycle import llm_session as _llm_session  # noqa: E402, F401
from harnpy.lifecycle import llm_stream as _llm_stream  # noqa: E402, F401
