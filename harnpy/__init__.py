"""harnpy: a Python interpreter for a Harn-like scripting language for orchestrating agents.

Stages (one subpackage each, imports run one way): ``syntax`` (parser, AST, spans) ->
``check`` (static pass) -> ``runtime`` (values, compiler, threads, snapshots) ->
``stdlib`` (builtin registry and Python builtins) -> ``lifecycle`` (agents, workers,
suspension) ; ``cli`` and ``repl`` are thin shells over them.
"""

__version__ = "0.1.0"
