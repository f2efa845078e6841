"""The compiler: AST -> code objects of flat instruction lists over frame slots.

The package's modules: :mod:`.core` (the :class:`Compiler` class: entry points and
expressions), :mod:`.statements` and :mod:`.control` (its statement and control-flow
halves), :mod:`.ir` (IR, function builder, module context, AST analyses) and :mod:`.evals`
(the evaluator closures and small instructions it emits). See dev/impl.md.
"""

from __future__ import annotations

from harnpy.runtime.compiler.core import Compiler
from harnpy.runtime.compiler.evals import type_checker
from harnpy.runtime.compiler.ir import CompileError, ModuleContext

__all__ = ["Compiler", "CompileError", "ModuleContext", "type_checker"]
