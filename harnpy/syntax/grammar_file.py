"""Where ``harn.lark`` lives (kept apart from the parser so finding it does not import Lark)."""

from __future__ import annotations

from pathlib import Path

_GRAMMAR_CANDIDATES = (
    Path(__file__).resolve().parent.parent / "_data" / "grammar" / "harn.lark",  # wheel
    Path(__file__).resolve().parents[2] / "grammar" / "harn.lark",  # source checkout
)


def grammar_path() -> Path:
    """Location of ``harn.lark`` (installed wheel first, then the source checkout).

    Raises:
        FileNotFoundError: neither location holds the grammar.
    """
    for path in _GRAMMAR_CANDIDATES:
        if path.is_file():
            return path
    raise FileNotFoundError("harn.lark not found in " + ", ".join(map(str, _GRAMMAR_CANDIDATES)))
