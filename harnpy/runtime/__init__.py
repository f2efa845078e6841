"""Runtime stage: compile ASTs and run them on threads whose whole state is data.

Stage job: :mod:`compiler` turns a module's AST into :class:`~harnpy.runtime.code.CodeObject`
instruction lists over frame slots; :mod:`thread` runs a thread's explicit frame stack;
:mod:`scheduler` interleaves threads (tasks, agent workers) at blocking points; :mod:`runtime`
loads modules and owns the shared services; :mod:`snapshot` writes a thread as JSON and
restores it (``snapshot(thread) -> dict``, ``restore(doc, runtime) -> Thread``).

Invariants:

* between two instructions, a thread's state is exactly its frames (code reference, ``pc``,
  slots) and the values they reach — never the Python call stack — so any thread stopped at
  an instruction boundary can be snapshotted (native frames of callback builtins excepted,
  and refused by name);
* code is never serialized: frames refer to code by (module key, source hash, node offset);
* values are the small set of :mod:`values`; builtins receive the calling thread first.

The runtime knows the AST (:mod:`harnpy.syntax.ast`) and the builtin registry; it does not
know the lifecycle layer, which registers builtins like any other library.
"""
