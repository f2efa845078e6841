"""Snapshots: a thread's complete state as JSON, and its restoration.

``snapshot(thread) -> dict`` walks everything the thread can reach — its frames (code
reference, pc, slots), generators with their suspended frames, closures with their captured
values, module globals — and encodes it as JSON-safe data. ``restore(doc, runtime) ->
Thread`` rebuilds the same object graph against freshly compiled code and returns a thread
that continues exactly where the snapshot was taken.

Encoding (format version :data:`FORMAT_VERSION`):

* nil, bools, ints, finite floats and strings are JSON natives;
* a list is a JSON array and a dict a JSON object (a dict with a key starting with ``$`` is
  wrapped as ``{"$dict": [[k, v], ...]}``);
* every other value is a tagged object ``{"$t": tag, ...}``; the decoder only builds the
  allow-listed classes of :data:`_DECODERS`;
* objects reached more than once (shared or cyclic), and every frame, are written once in
  the ``heap`` table and referenced as ``{"$ref": n}``.

Code is never serialized: a frame or closure refers to its code as ``[module key, code id]``
and the document lists each module's source hash; restoring against a changed source, or a
snapshot of another codegen version, is refused with :class:`SnapshotError`.

State stdlib modules keep on the runtime (mock clock, log level, shared cells, held
permits...) is saved by the runtime-state providers registered in
:data:`harnpy.runtime.extensions.RUNTIME_STATE`, under the optional ``runtime_state`` field;
a seeded rng is a snapshot value (``{"$t": "rng", ...}``: Python's random state as ints).

What cannot be snapshotted (host objects, native frames of callback builtins, iterators
over Python generators) raises :class:`SnapshotError` naming the variable path that holds
it — nothing is silently dropped.

Two options serve the worker layer (lifecycle.md 3.6): *externals* (named values written
once under ``doc["externals"]`` and referenced as ``{"$ext": name}`` from the graph, so a
worker snapshot keeps its transcript once, at top level) and *live* objects (in-process
round trips keep reference-typed values — channels, atomics, tasks — by identity, as
``{"$live": n}``). :func:`snapshot_chain` snapshots only the frames from the top down to a
given frame (a root ``agent_loop`` parks without the script's frames below it).

Modules: :mod:`.base` (format constants, :class:`SnapshotError`), :mod:`.encode`
(:func:`snapshot` and the encoder), :mod:`.documents` (JSON bytes, seal, capped reads,
atomic writes) and :mod:`.decode` (record validation, the decoder, :func:`restore`).
"""

from __future__ import annotations

from harnpy.runtime.snapshot.base import (
    FORMAT_VERSION,
    MAX_SNAPSHOT_BYTES,
    SNAPSHOT_TYPE,
    SnapshotError,
)
from harnpy.runtime.snapshot.decode import (
    ITER_STAGE_FIELDS,
    _Decoder,
    restore,
)
from harnpy.runtime.snapshot.documents import (
    dumps,
    dumps_bytes,
    load_document,
    loads,
    open_document,
    read_snapshot_bytes,
    seal_document,
    validate_document,
    write_atomic,
)
from harnpy.runtime.snapshot.encode import (
    CHANNEL_GUARDS,
    NOT_STANDALONE,
    DetachedPrefix,
    SnapshotCache,
    _Encoder,
    chain_depth,
    encode_standalone,
    snapshot,
    snapshot_chain,
)

__all__ = [
    "FORMAT_VERSION",
    "SNAPSHOT_TYPE",
    "MAX_SNAPSHOT_BYTES",
    "SnapshotError",
    "CHANNEL_GUARDS",
    "SnapshotCache",
    "DetachedPrefix",
    "_Encoder",
    "snapshot",
    "chain_depth",
    "snapshot_chain",
    "encode_standalone",
    "NOT_STANDALONE",
    "dumps",
    "dumps_bytes",
    "loads",
    "seal_document",
    "open_document",
    "read_snapshot_bytes",
    "write_atomic",
    "load_document",
    "validate_document",
    "_Decoder",
    "ITER_STAGE_FIELDS",
    "restore",
]
