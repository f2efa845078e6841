"""The provider catalog: providers, model aliases, model metadata, pricing, capabilities.

Data comes from the bundled ``catalog.toml`` next to this module (one table of providers,
aliases, ``[[models]]`` rows with tier and pricing, and the ``[[capabilities.<family>]]``
matrix). Everything here is pure: functions take the catalog (and the environment when
credentials matter) and return plain dicts ready to become Harn values.

Capability lookup (:func:`capabilities`): the provider's ``family`` names the rows to try
(``openrouter``, ``together``... inherit ``openai``; ``vertex`` inherits ``gemini``); the
``mock`` provider routes by model name (``claude*`` -> anthropic rows, ``gpt*``/``o1``/
``o3``/``o4`` -> openai rows). Rows are tried in order: the first whose ``model`` regex
matches the lowercased model id (vendor prefix ``vendor/`` dropped) and whose
``min_version`` the captured ``major``/``minor`` reach wins; its fields overlay
``[capability_defaults]``. Extra rows installed at run time
(:func:`parse_capability_rows`) are tried before the bundled ones.
"""

from __future__ import annotations

import copy
import functools
import re
import tomllib
from collections.abc import Mapping
from importlib import resources
from typing import Any

#: The model-tier names (``llm_model_tier``).
TIERS = ("small", "mid", "frontier")


class CatalogError(ValueError):
    """A catalog document (bundled or installed) that does not have the catalog's shape."""


@functools.cache
def bundled() -> dict[str, Any]:
    """The parsed bundled catalog (read once; callers must not mutate it)."""
    text = resources.files("harnpy.llm").joinpath("catalog.toml").read_text("utf-8")
    data = tomllib.loads(text)
    _check_rows(data.get("capabilities", {}))
    return data


def _check_rows(table: Any) -> None:
    if not isinstance(table, dict):
        raise CatalogError("`capabilities` must be a table of row lists")
    for family, rows in table.items():
        if not isinstance(rows, list):
            raise CatalogError(f"capabilities.{family} must be an array of tables")
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("model"), str):
                raise CatalogError(f"capabilities.{family}: every row needs a `model` regex")
            try:
                re.compile(row["model"])
            except re.error as exc:
                raise CatalogError(
                    f"capabilities.{family}: bad model regex {row['model']!r}: {exc}"
                ) from None
            mv = row.get("min_version")
            if mv is not None and not (
                isinstance(mv, list) and 1 <= len(mv) <= 2 and all(type(x) is int for x in mv)
            ):
                raise CatalogError(f"capabilities.{family}: min_version must be [major, minor]")


def parse_capability_rows(text: str) -> dict[str, list[dict[str, Any]]]:
    """Capability rows from a user TOML document: ``[[capabilities.<family>]]`` tables, or
    ``[[<family>]]`` at the top level (same fields as the bundled matrix).

    Raises:
        CatalogError: not TOML, or rows without a valid ``model`` regex / ``min_version``.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"invalid TOML: {exc}") from None
    table = data.get("capabilities", data)
    _check_rows(table)
    return table  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- providers


def provider_names(cat: Mapping[str, Any] | None = None) -> list[str]:
    """Every provider the catalog knows, in catalog order."""
    return list((cat or bundled())["providers"])


def provider_config(name: str, cat: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """A copy of the provider's catalog entry plus ``name``, or None when unknown."""
    entry = (cat or bundled())["providers"].get(name)
    if entry is None:
        return None
    return {"name": name, **copy.deepcopy(entry)}


def auth_available(name: str, env: Mapping[str, str], cat: Mapping[str, Any] | None = None) -> bool:
    """True when the provider needs no key (``auth_style = "none"``) or one of its
    ``auth_env`` variables is set (non-empty)."""
    entry = (cat or bundled())["providers"].get(name)
    if entry is None:
        return False
    if entry.get("auth_style") == "none":
        return True
    return any((env.get(var) or "").strip() for var in entry.get("auth_env", []))


def available_providers(env: Mapping[str, str], cat: Mapping[str, Any] | None = None) -> list[str]:
    """The providers usable now: keyless ones and those whose key variable is set."""
    return [p for p in provider_names(cat) if auth_available(p, env, cat)]


# ----------------------------------------------------------------------------- models


def infer_provider(model: str, cat: Mapping[str, Any] | None = None) -> str:
    """The provider a bare model name implies: a ``<provider>:`` prefix or an alias first,
    then ``claude*`` anthropic, ``gpt*``/``o1``/``o3``/``o4``/``chatgpt*`` openai,
    ``gemini*`` gemini, ``deepseek*`` deepseek, ``vendor/model`` openrouter, ``name:tag``
    ollama, ``mock`` mock; anything else anthropic (the default provider)."""
    cat = cat or bundled()
    m = model.strip()
    head, sep, rest = m.partition(":")
    prefixes = cat.get("model_prefixes", {})
    if sep and rest and head.lower() in prefixes:
        return str(prefixes[head.lower()])
    alias = cat.get("aliases", {}).get(m)
    if alias is not None:
        return str(alias["provider"])
    low = m.lower()
    if low == "mock":
        return "mock"
    if low.startswith("claude"):
        return "anthropic"
    if low.startswith(("gpt", "chatgpt")) or re.match(r"o[134](?:-|$)", low):
        return "openai"
    if low.startswith("gemini"):
        return "gemini"
    if low.startswith("deepseek"):
        return "deepseek"
    if "/" in low:
        return "openrouter"
    if ":" in low:
        return "ollama"
    return "anthropic"


def resolve_model(model: str, cat: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{id, provider, alias}`` for a model name, alias (``mid``) or ``<provider>:<id>``
    (``local:`` means a locally served model, i.e. Ollama); ``alias`` is nil when the name
    was not an alias."""
    cat = cat or bundled()
    m = model.strip()
    alias = cat.get("aliases", {}).get(m)
    if alias is not None:
        return {"id": alias["id"], "provider": alias["provider"], "alias": m}
    head, sep, rest = m.partition(":")
    prefixes = cat.get("model_prefixes", {})
    if sep and rest and head.lower() in prefixes:
        return {"id": rest, "provider": prefixes[head.lower()], "alias": None}
    return {"id": m, "provider": infer_provider(m, cat), "alias": None}


def model_entry(model_id: str, cat: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The ``[[models]]`` row for ``model_id``: exact id, else the longest id that is a
    prefix of it followed by ``-``, ``:``, ``.`` or ``@`` (dated ids such as
    ``claude-sonnet-4-20250514``). None when no row matches."""
    rows = (cat or bundled()).get("models", [])
    low = model_id.lower()
    best: dict[str, Any] | None = None
    for row in rows:
        rid = str(row["id"]).lower()
        if rid == low:
            return copy.deepcopy(row)
        if low.startswith(rid) and low[len(rid)] in "-:.@":
            if best is None or len(rid) > len(str(best["id"])):
                best = row
    return copy.deepcopy(best) if best is not None else None


_PARAMS = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)b(?![a-z])")


def model_tier(model: str, cat: Mapping[str, Any] | None = None) -> str:
    """``small``, ``mid`` or ``frontier`` for a model: its catalog row's ``tier``, else the
    parameter count in its name (<= 14B small, <= 80B mid, larger frontier), else family
    heuristics (Opus/Sonnet, GPT-4o/4.1/5, o1/o3, Gemini Pro: frontier; mini, Haiku,
    Flash: mid); anything else mid."""
    cat = cat or bundled()
    resolved = resolve_model(model, cat)
    entry = model_entry(resolved["id"], cat)
    if entry is not None and entry.get("tier") in TIERS:
        return str(entry["tier"])
    low = resolved["id"].lower()
    size = _PARAMS.search(low.split(":", 1)[-1]) or _PARAMS.search(low)
    if size is not None:
        billions = float(size.group(1))
        return "small" if billions <= 14 else "mid" if billions <= 80 else "frontier"
    if re.search(r"mini|haiku|flash|nano|small", low):
        return "mid"
    if re.match(
        r"claude-(opus|sonnet)|claude-3-[57]-sonnet|gpt-4o|gpt-4\.1|gpt-5|o[13](?:-|$)", low
    ):
        return "frontier"
    if re.match(r"gemini-[\d.]+-pro", low):
        return "frontier"
    return "mid"


def pricing(model: str, cat: Mapping[str, Any] | None = None) -> dict[str, float] | None:
    """The ``pricing`` table of the model's catalog row (USD per million tokens:
    ``input_per_mtok``, ``output_per_mtok``, maybe ``cached_input_per_mtok``,
    ``cache_write_per_mtok``), or None for a model without prices."""
    resolved = resolve_model(model, cat)
    entry = model_entry(resolved["id"], cat)
    if entry is None or not isinstance(entry.get("pricing"), dict):
        return None
    return {k: float(v) for k, v in entry["pricing"].items()}


def cost_usd(
    model: str,
    input_tokens: int,
    output_tokens: int,
    cat: Mapping[str, Any] | None = None,
    *,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float:
    """Estimated cost in USD of one call; 0.0 for a model without prices. Cache reads are
    priced at ``cached_input_per_mtok`` and cache writes at ``cache_write_per_mtok`` when
    the row has them (else at the input price)."""
    p = pricing(model, cat)
    if p is None:
        return 0.0
    inp = p.get("input_per_mtok", 0.0)
    total = input_tokens * inp + output_tokens * p.get("output_per_mtok", 0.0)
    total += cache_read_tokens * p.get("cached_input_per_mtok", inp)
    total += cache_write_tokens * p.get("cache_write_per_mtok", inp)
    return total / 1_000_000


def known_models(cat: Mapping[str, Any] | None = None) -> list[str]:
    """Alias names followed by every catalog model id (no duplicates, catalog order)."""
    cat = cat or bundled()
    out: list[str] = list(cat.get("aliases", {}))
    for row in cat.get("models", []):
        if row["id"] not in out:
            out.append(row["id"])
    return out


# ----------------------------------------------------------------------------- capabilities


def _family_for(provider: str, model: str, cat: Mapping[str, Any]) -> str | None:
    if provider == "mock":
        low = model.lower()
        if low.startswith("claude"):
            return "anthropic"
        if low.startswith(("gpt", "chatgpt")) or re.match(r"o[134](?:-|$)", low):
            return "openai"
        return None
    entry = cat["providers"].get(provider)
    return None if entry is None else entry.get("family")


def _version(m: re.Match[str]) -> tuple[int, int] | None:
    groups = m.groupdict()
    if groups.get("major") is None:
        return None
    return int(groups["major"]), int(groups.get("minor") or 0)


def _row_for(rows: list[dict[str, Any]], model: str) -> dict[str, Any] | None:
    for row in rows:
        m = re.search(row["model"], model)
        if m is None:
            continue
        need = row.get("min_version")
        if need is not None:
            have = _version(m)
            want = (need[0], need[1] if len(need) > 1 else 0)
            if have is None or have < want:
                continue
        return row
    return None


def capabilities(
    provider: str,
    model: str | None,
    cat: Mapping[str, Any] | None = None,
    extra: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The capability dict of a (provider, model) pair (see the module docstring):
    ``{provider, model, native_tools, defer_loading, tool_search: [variant], max_tools:
    int|nil, prompt_caching, thinking, thinking_modes: [mode], vision_supported,
    audio_supported, pdf_supported, requires_completion_tokens,
    reasoning_effort_supported, structured_output}``. Unknown pairs get the defaults (all
    false / empty, ``max_tools`` nil). ``extra`` rows (by family or provider name) are tried
    before the bundled ones."""
    cat = cat or bundled()
    prov = provider.strip().lower()
    raw = (model or "").strip()
    bare = raw.rsplit("/", 1)[-1].lower()
    family = _family_for(prov, bare, cat)
    out: dict[str, Any] = {"provider": provider, "model": model}
    out.update(copy.deepcopy(cat.get("capability_defaults", {})))
    row = None
    for key in dict.fromkeys(k for k in (prov, family) if k):
        if extra and key in extra:
            row = _row_for(list(extra[key]), bare)
            if row is not None:
                break
    if row is None and family is not None:
        row = _row_for(cat.get("capabilities", {}).get(family, []), bare)
    if row is not None:
        for k, v in row.items():
            if k not in ("model", "min_version"):
                out[k] = copy.deepcopy(v)
    if out.get("max_tools") is False:
        out["max_tools"] = None
    out["family"] = family
    return out
