"""Extension points through which outer layers (agents, lifecycle) plug into the runtime.

The runtime knows nothing of the layers above it (imports run one way: syntax -> runtime
-> stdlib -> lifecycle); a layer registers callables here when it is imported, like a
builtin registers itself in the registry. Filled once at import time, never changed later.

* ``RUNTIME_INIT``: ``fn(runtime)`` called at the end of ``Runtime.__init__``;
* ``PIPELINE_ARGUMENT``: at most one ``fn(runtime, name) -> value`` giving the value of an
  entry-pipeline parameter (default: nil);
* ``PROGRAM_FINISH``: ``fn(runtime, value) -> value`` run after the main program's entry
  point returned (e.g. ``pipeline_on_finish`` callbacks), in registration order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RUNTIME_INIT: list[Callable[[Any], None]] = []
PIPELINE_ARGUMENT: list[Callable[[Any, str], Any]] = []
PROGRAM_FINISH: list[Callable[[Any, Any], Any]] = []
