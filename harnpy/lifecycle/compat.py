"""Small builtins of later Harn revisions that the lifecycle conformance corpus uses
(``../shared/conformance/lifecycle``): ``xs.appending(x)`` and ``path_is_absolute(p)``.

They belong with the list and path builtins of :mod:`harnpy.stdlib`; they live here until
that module takes them (one registration each, no behaviour elsewhere depends on the
location).
"""

from __future__ import annotations

import os
from typing import Any

from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin, method


@method("list")
def list__appending(thread: Any, xs: list[Any], value: Any = None) -> list[Any]:
    """``xs.appending(x)``: a new list with ``x`` added at the end (``xs`` is unchanged;
    lists are values, language.md 3.8)."""
    return [*xs, value]


@method("list")
def list__prepending(thread: Any, xs: list[Any], value: Any = None) -> list[Any]:
    """``xs.prepending(x)``: a new list with ``x`` added at the front."""
    return [value, *xs]


@builtin()
def path_is_absolute(thread: Any, path: Any = None) -> bool:
    """``path_is_absolute(p)``: true when ``p`` starts at the file-system root."""
    text = path if type(path) is str else display(path)
    return os.path.isabs(text)
