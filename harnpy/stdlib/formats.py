"""YAML and TOML builtins (spec language.md 4.10, "other formats").

``yaml_parse``/``yaml_stringify`` use PyYAML's safe loader/dumper; ``toml_parse`` uses the
standard :mod:`tomllib`, ``toml_stringify`` uses ``tomli-w``. Parsed values follow the JSON
conversion rules (:func:`harnpy.stdlib.jsonlib.from_json_data`); dates and times become
ISO 8601 strings; mapping keys become strings. Malformed input throws
``YAML parse error: ...`` / ``TOML parse error: ...``.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from harnpy._lazy import lazy_module
from harnpy.runtime.display import display
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.jsonlib import from_json_data, to_json_data
from harnpy.stdlib.registry import builtin

tomllib = lazy_module("tomllib")
tomli_w = lazy_module("tomli_w")
yaml = lazy_module("yaml")


def _plain(obj: Any) -> Any:
    """Loader output -> JSON-like data (dates as ISO strings, keys as strings)."""
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else display(_plain(k)): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_plain(x) for x in obj]
    if isinstance(obj, (_dt.datetime, _dt.date, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, bytes):
        return obj.decode("utf-8", errors="replace")
    return obj


@builtin()
def yaml_parse(thread: Any, s: Any = None) -> Any:
    """``yaml_parse(s)``: the first YAML document of ``s`` as Harn values."""
    try:
        return from_json_data(_plain(yaml.safe_load(text(s))))
    except yaml.YAMLError as e:
        raise fail(f"YAML parse error: {e}") from None


@builtin()
def yaml_stringify(thread: Any, v: Any = None) -> str:
    """``yaml_stringify(v)``: block-style YAML, keys sorted, Unicode kept raw."""
    return str(
        yaml.safe_dump(
            to_json_data(v), sort_keys=True, allow_unicode=True, default_flow_style=False
        )
    )


@builtin()
def toml_parse(thread: Any, s: Any = None) -> Any:
    """``toml_parse(s)``: a TOML document as a dict."""
    try:
        return from_json_data(_plain(tomllib.loads(text(s))))
    except tomllib.TOMLDecodeError as e:
        raise fail(f"TOML parse error: {e}") from None


def _drop_nils(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _drop_nils(v) for k, v in sorted(obj.items()) if v is not None}
    if isinstance(obj, list):
        return [_drop_nils(x) for x in obj if x is not None]
    return obj


@builtin()
def toml_stringify(thread: Any, v: Any = None) -> str:
    """``toml_stringify(dict)``: TOML text (keys sorted; nil values are left out, TOML has
    no null). Throws unless ``v`` is a dict."""
    data = to_json_data(v)
    if not isinstance(data, dict):
        raise fail("toml_stringify: expected a dict")
    return tomli_w.dumps(_drop_nils(data))
