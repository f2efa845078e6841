"""Provider selection: which provider serves a call, from its options and the environment.

Providers: ``mock`` (alias ``fake``), ``openai``, ``anthropic``, and the OpenAI-compatible
presets ``ollama`` and ``local``. :func:`select_provider` applies these rules in order (the
first that answers wins):

1. ``options.provider``, unless empty or ``"auto"``. Unknown names are a ``config`` error.
2. The effective model (``options.model``, else ``HARNPY_MODEL``, else ``HARN_LLM_MODEL``)
   written ``<provider>:<model>`` with a known provider prefix (``ollama:qwen3:8b``).
3. ``HARN_LLM_PROVIDER`` from the environment, unless empty or ``"auto"`` (an explicit
   choice for the whole run; e.g. ``HARN_LLM_PROVIDER=mock`` runs offline).
4. The model name: ``mock`` -> mock; ``claude*`` -> anthropic; ``gpt*``, ``chatgpt*``,
   ``o1*``, ``o3*``, ``o4*`` -> openai (case-insensitive). Harn's own table
   (``crates/harn-vm/src/llm_config.rs``: ``claude-*`` anthropic, ``gpt-*``/``o1*``/``o3*``
   openai, ``:`` ollama, default anthropic).
5. ``OPENAI_BASE_URL`` is set -> openai (any model name, for local OpenAI-compatible servers).
6. A model name containing ``:`` (an Ollama tag such as ``qwen2.5:7b``) -> ollama.
7. A model was given but matched nothing -> ``config`` error asking for ``provider``.
8. No model at all: ``ANTHROPIC_API_KEY`` set -> anthropic; ``OPENAI_API_KEY`` set -> openai;
   else anthropic (Harn's default provider; its missing-key error names the variable).

Deviation from Harn, on purpose: Harn lets a model-name rule beat ``HARN_LLM_PROVIDER``;
harnpy ranks the environment choice above name heuristics (rule 3) so that e.g.
``HARN_LLM_PROVIDER=ollama`` with ``model: "gpt-oss:20b"`` stays local.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harnpy.llm.errors import CONFIG, LlmError, type_name

PROVIDERS = ("mock", "openai", "anthropic", "ollama", "local")
_ALIASES = {"fake": "mock"}

PROVIDER_ENV = "HARN_LLM_PROVIDER"
MODEL_ENVS = ("HARNPY_MODEL", "HARN_LLM_MODEL")


@dataclass(frozen=True)
class Route:
    """The outcome of selection: provider name and model (None: the provider's default)."""

    provider: str
    model: str | None


def canonical_provider(name: str) -> str:
    """Validate and canonicalize a provider name (case-insensitive, ``fake`` -> ``mock``).

    Raises:
        LlmError: ``config`` for an unknown name, listing the known ones.
    """
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in PROVIDERS:
        raise LlmError(
            CONFIG, f"unknown LLM provider {name!r} (known: {', '.join(PROVIDERS)}, auto)"
        )
    return key


def env_model(env: Mapping[str, str]) -> str | None:
    """The model named by ``HARNPY_MODEL`` or ``HARN_LLM_MODEL`` (first non-empty), or None."""
    for var in MODEL_ENVS:
        value = (env.get(var) or "").strip()
        if value:
            return value
    return None


def _split_prefix(model: str) -> tuple[str | None, str]:
    head, sep, rest = model.partition(":")
    if sep and rest:
        key = _ALIASES.get(head.strip().lower(), head.strip().lower())
        if key in PROVIDERS:
            return key, rest
    return None, model


def _explicit(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise LlmError(CONFIG, f"option `provider` must be a string, got {type_name(value)}")
    value = value.strip()
    return None if not value or value.lower() == "auto" else value


def _by_model_name(model: str) -> str | None:
    lowered = model.lower()
    if lowered == "mock":
        return "mock"
    if lowered.startswith("claude"):
        return "anthropic"
    if lowered.startswith(("gpt", "chatgpt", "o1", "o3", "o4")):
        return "openai"
    return None


def resolve_route(options: Mapping[str, Any], env: Mapping[str, str]) -> Route:
    """Select the provider (rules in the module docstring) and the model to send.

    The returned model has any ``<provider>:`` prefix stripped; it is None when neither the
    options nor the environment name a model (the provider then uses its default).

    Raises:
        LlmError: ``config`` for an unknown provider, a non-string option, or a model name
            no rule recognizes.
    """
    raw_model = options.get("model")
    if raw_model is not None and not isinstance(raw_model, str):
        raise LlmError(CONFIG, f"option `model` must be a string, got {type_name(raw_model)}")
    model = (raw_model or "").strip() or env_model(env)
    prefixed, bare = _split_prefix(model) if model else (None, None)

    explicit = _explicit(options.get("provider"))
    if explicit is not None:
        return Route(canonical_provider(explicit), bare)
    if prefixed is not None:
        return Route(prefixed, bare)
    from_env = _explicit(env.get(PROVIDER_ENV))
    if from_env is not None:
        return Route(canonical_provider(from_env), bare)
    if bare:
        by_name = _by_model_name(bare)
        if by_name is not None:
            return Route(by_name, bare)
        if env.get("OPENAI_BASE_URL"):
            return Route("openai", bare)
        if ":" in bare:
            return Route("ollama", bare)
        raise LlmError(
            CONFIG,
            f"cannot infer the provider for model {bare!r}; pass `provider` "
            f"({', '.join(PROVIDERS)}) or set OPENAI_BASE_URL for an OpenAI-compatible server",
        )
    if env.get("OPENAI_BASE_URL"):
        return Route("openai", None)
    if env.get("ANTHROPIC_API_KEY"):
        return Route("anthropic", None)
    if env.get("OPENAI_API_KEY"):
        return Route("openai", None)
    return Route("anthropic", None)


def select_provider(options: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """The provider name for a call with these options (see module docstring for the rules).

    Raises:
        LlmError: ``config`` as :func:`resolve_route`.
    """
    return resolve_route(options, env).provider
