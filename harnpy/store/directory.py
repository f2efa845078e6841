"""The ``directory`` backend of :class:`~harnpy.store.checkpoint_api.CheckpointStore`:
worker checkpoints as files in one snapshot directory (``.harn/workers`` by default; the
store of a run with no ``HARNPY_STORE``, or ``directory:PATH``).

Layout (what harnpy has always written, every file 0600 in a 0700 directory):

* ``<key>.json``: the checkpoint (the sealed worker document), replaced atomically
  (temporary file, fsync, rename, fsync of the directory);
* ``<key>.json.park``: while a resume holds the claim, the park it claimed (the document
  before the claim), removed when the resume commits its next state or gives the claim
  back;
* ``<key>.json.claim``: the claim itself, ``{fence, holder, owner: {pid, host}, park_id,
  lease_expires_at_ms}`` (small JSON), next to the ``running`` document the claim wrote;
* ``<key>.transcript-<generation>.jsonl``: transcript entries, one ``[stream, entry]`` line
  each, appended (and fsynced) before the checkpoint that needs them is renamed into place.

Every read-check-write runs under an exclusive lock of the directory (the ``filelock``
library on ``<dir>/.harnpy-dir.lock``, 0600: ``flock`` on POSIX, ``msvcrt`` locking on
Windows; released by the OS when its holder dies), so claims are atomic across the
processes (and threads) sharing it. A directory has no clock its users agree on: a
claim holds while its owner process lives; one whose owner is known to be gone (its pid is
dead on this host) is put back — the kept park replaces the document — by the next claim,
read or listing (issue 13 point 6: a resume killed mid-run leaves the park resumable once).
An owner on another host is never presumed dead. A ``<key>.json`` that is a symbolic link
out of the directory is refused, never followed.

Versions are tokens derived from the file's inode, mtime and size (every atomic rewrite
changes them); compare them for equality only.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from harnpy.store._common import MAX_DOCUMENT_BYTES, owner_gone, owner_record
from harnpy.store.errors import (
    CheckpointTooLarge,
    ClaimRefused,
    CorruptRecord,
    Fenced,
    StoreError,
)
from harnpy.store.records import CheckpointClaim, CheckpointInfo, CheckpointMeta, TranscriptAppend

__all__ = ["CLAIM_SUFFIX", "PARK_SUFFIX", "DirectoryStore", "dir_lock"]

PARK_SUFFIX = ".park"
CLAIM_SUFFIX = ".claim"
_KEY_RE = re.compile(r"^[^/\\\x00.][^/\\\x00]*$")
_CLAIM_CAP = 64 * 1024


#: The lock file of a checkpoint directory (:func:`dir_lock`).
LOCK_NAME = ".harnpy-dir.lock"


@contextlib.contextmanager
def dir_lock(path: str) -> Iterator[None]:
    """An exclusive lock of the directory holding ``path`` (every read-check-write of a
    checkpoint runs under it, so they are atomic with respect to each other across
    processes and threads): a ``filelock.FileLock`` on :data:`LOCK_NAME` in that directory,
    created 0600 on first use. Not reentrant: never nest two ``dir_lock`` of one directory.

    Raises:
        OSError: the directory is missing or the lock file cannot be created or opened.
    """
    from filelock import FileLock

    d = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(d):
        raise FileNotFoundError(2, f"{d} is not a directory", d)
    with FileLock(os.path.join(d, LOCK_NAME), mode=0o600, poll_interval=0.005):
        yield


def _version_of(st: os.stat_result) -> int:
    token = f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}:{st.st_size}".encode()
    return int.from_bytes(hashlib.sha256(token).digest()[:7], "big") or 1


def _default_open(body: bytes, what: str) -> Any:
    """Check the seal of ``body`` (:func:`harnpy.security.unseal`), then parse it."""
    from harnpy.security import unseal

    return json.loads(unseal(body, what))


def _default_seal(doc: dict[str, Any]) -> bytes:
    """``doc`` as compact JSON, sealed (:func:`harnpy.security.seal`)."""
    from harnpy.security import seal

    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return seal(text.encode("utf-8"))


class DirectoryStore:
    """Worker checkpoints in directory ``path`` (module docstring); implements
    :class:`~harnpy.store.checkpoint_api.CheckpointStore`. Keys are file stems (a worker's
    id, or ``daemon`` for a daemon's ``daemon.json``): no ``/``, no leading ``.``.

    ``open_body(bytes, what) -> dict`` checks a body's seal and parses it, ``seal(dict) ->
    bytes`` seals a document (defaults: the seal of :mod:`harnpy.security` over plain JSON;
    the worker layer passes the snapshot module's ``open_document`` / ``seal_document``, so
    its documents read and write exactly as every snapshot does); the backend reads a document's
    ``status``, ``park_id`` and ``owner`` and writes the ``running`` document of a claim.

    Raises (constructor):
        StoreError: ``path`` exists and is not a directory (``kind="config"``).
    """

    def __init__(
        self,
        path: str,
        *,
        open_body: Callable[[bytes, str], Any] | None = None,
        seal: Callable[[dict[str, Any]], bytes] | None = None,
    ) -> None:
        self.path = os.path.abspath(path)
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise StoreError(f"store directory:{self.path}: not a directory", "config")
        self._open = open_body or _default_open
        self._seal = seal or _default_seal
        #: key -> (version, info) of documents this object parsed (a file is parsed again
        #: only when its version changed)
        self._infos: dict[str, tuple[int, CheckpointInfo]] = {}
        #: key -> file name, for files not named ``<key>.json`` (:meth:`key_for`)
        self._names: dict[str, str] = {}

    @property
    def display(self) -> str:
        """``directory:<path>``."""
        return f"directory:{self.path}"

    # ---- paths

    def file_of(self, key: str) -> str:
        """The checkpoint file of ``key``.

        Raises:
            StoreError: ``key`` cannot name a file here (``kind="config"``).
        """
        if not _KEY_RE.match(key):
            raise StoreError(f"store {self.display}: `{key}` cannot name a checkpoint", "config")
        return os.path.join(self.path, self._names.get(key, key + ".json"))

    def key_for(self, name: str) -> str:
        """The key of the file ``name`` in this directory: its stem for ``<key>.json``;
        any other name (a snapshot a user named ``state.snap``) is its own key from then
        on, in this object.

        Raises:
            StoreError: ``name`` cannot be a checkpoint file here (``kind="config"``).
        """
        key = name[:-5] if name.endswith(".json") else name
        if not _KEY_RE.match(key) or not key:
            raise StoreError(f"store {self.display}: `{name}` cannot name a checkpoint", "config")
        if not name.endswith(".json"):
            self._names[key] = name
        return key

    def version(self, worker_id: str) -> int | None:
        """The current version of ``worker_id``'s checkpoint from the file's metadata alone
        (no read, no lock: a cheap "did it change" check), or None when there is none."""
        try:
            return _version_of(os.stat(self.file_of(worker_id)))
        except OSError:
            return None

    def checkpoint_ref(self, worker_id: str) -> str:
        """The checkpoint file's path (what ``harnpy run --resume`` accepts)."""
        return self.file_of(worker_id)

    def _ensure_dir(self) -> None:
        if not os.path.isdir(self.path):
            from harnpy.security import private_dir

            private_dir(self.path)

    # ---- low-level reads (under the lock or not)

    def _read(self, path: str) -> bytes | None:
        """The bytes of ``path`` (None when missing); a link out of the directory, a file
        that is not regular or over the cap is refused (CorruptRecord)."""
        from harnpy.security import FileTooLarge, read_capped

        if os.path.islink(path):
            real = os.path.realpath(path)
            if os.path.dirname(real) != os.path.realpath(self.path):
                raise CorruptRecord(
                    f"store {self.display}: `{path}` is a link out of the directory to "
                    f"`{real}`; refusing to follow it"
                )
        try:
            return read_capped(path, MAX_DOCUMENT_BYTES)
        except FileNotFoundError:
            return None
        except FileTooLarge as e:
            raise CorruptRecord(
                f"store {self.display}: `{path}` is {e.size} bytes, over the "
                f"{MAX_DOCUMENT_BYTES}-byte limit; it was left as it is"
            ) from None
        except OSError as e:
            raise StoreError(
                f"store {self.display}: cannot read `{path}`: {e.strerror or e}", "io"
            ) from None

    def _doc(self, key: str, body: bytes) -> dict[str, Any]:
        try:
            doc = self._open(body, f"the checkpoint {self.file_of(key)}")
        except Exception as e:  # noqa: BLE001 - SnapshotError from the seal check, or JSON
            msg = getattr(e, "message", str(e))
            raise CorruptRecord(
                f"store {self.display}: the checkpoint {key} is unreadable ({msg}); it was "
                "left as it is"
            ) from None
        if not isinstance(doc, dict):
            raise CorruptRecord(
                f"store {self.display}: the checkpoint {key} is not a JSON object; it was "
                "left as it is"
            )
        return doc

    def _claim_rec(self, key: str) -> dict[str, Any] | None:
        from harnpy.security import read_capped

        path = self.file_of(key) + CLAIM_SUFFIX
        try:
            # a regular file of at most 64 KiB: a FIFO or a device is never waited on
            rec = json.loads(read_capped(path, _CLAIM_CAP))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {"fence": -1, "holder": "?", "owner": None}  # unreadable: treat as held
        return rec if isinstance(rec, dict) else {"fence": -1, "holder": "?", "owner": None}

    @staticmethod
    def _live(claim: dict[str, Any] | None) -> bool:
        return claim is not None and not owner_gone(claim.get("owner"))

    def _write(self, path: str, data: bytes, durable: bool = True) -> None:
        from harnpy.security import write_private

        write_private(path, data, durable=durable, tmp_prefix=".snapshot-")

    def _drop(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def _recover_locked(self, key: str) -> bool:
        """Under the lock: put the kept park back when the claim's owner is gone (or, for
        a claim written before ``.claim`` files, when the document says ``running`` with
        an owner that is gone). Returns whether it did."""
        path = self.file_of(key)
        park_path = path + PARK_SUFFIX
        claim = self._claim_rec(key)
        if claim is not None and self._live(claim):
            return False
        if not os.path.isfile(park_path):
            if claim is not None and owner_gone(claim.get("owner")):
                self._drop(path + CLAIM_SUFFIX)  # nothing to put back: the claim ends
            return False
        try:
            park_raw = self._read(park_path)
            raw = self._read(path)
            if park_raw is None or raw is None:
                return False
            park = self._doc(key, park_raw)
            doc = self._doc(key, raw)
        except StoreError:
            return False
        if claim is None and not (doc.get("status") == "running" and owner_gone(doc.get("owner"))):
            return False
        if doc.get("status") != "running":
            return False
        if park.get("id") != doc.get("id") or park.get("status") != "suspended":
            return False
        self._write(path, park_raw)
        self._drop(park_path)
        self._drop(path + CLAIM_SUFFIX)
        return True

    def recover(self, worker_id: str) -> bool:
        """Put back the park of a resume whose owner died mid-run (module docstring);
        returns whether it did. Problems change nothing."""
        path = self.file_of(worker_id)
        if not os.path.isfile(path + PARK_SUFFIX) and not os.path.isfile(path + CLAIM_SUFFIX):
            return False
        try:
            with dir_lock(path):
                return self._recover_locked(worker_id)
        except OSError:
            return False

    # ---- info

    def _info_of(
        self, key: str, st: os.stat_result, body: bytes | None, claim: dict[str, Any] | None
    ) -> CheckpointInfo:
        version = _version_of(st)
        hit = self._infos.get(key)
        if hit is not None and hit[0] == version:
            info = CheckpointInfo(**hit[1].to_json())
        else:
            if body is None:
                body = self._read(self.file_of(key))
                if body is None:
                    raise CorruptRecord(f"store {self.display}: {key} vanished while read")
            doc = self._doc(key, body)
            sus = doc.get("suspension")
            cfg = doc.get("config")
            wait = doc.get("resume_wait")
            wake: list[str] = []
            if isinstance(wait, dict) and isinstance(wait.get("conditions"), dict):
                wake = [str(k) for k, v in wait["conditions"].items() if v is not None]
            info = CheckpointInfo(
                worker_id=key,
                ref=self.file_of(key),
                status=str(doc.get("status") or "interrupted"),
                version=version,
                park_id=doc.get("park_id") if type(doc.get("park_id")) is str else None,
                name=doc.get("name") if type(doc.get("name")) is str else None,
                mode=(cfg.get("mode") if isinstance(cfg, dict) else None) or doc.get("mode"),
                reason=sus.get("reason") if isinstance(sus, dict) else None,
                run_id=doc.get("run_id") if type(doc.get("run_id")) is str else None,
                size=st.st_size,
                updated_at_ms=st.st_mtime_ns // 1_000_000,
                wake=wake,
            )
            self._infos[key] = (version, CheckpointInfo(**info.to_json()))
        if claim is not None:
            info.claim_holder = str(claim.get("holder"))
            owner = claim.get("owner")
            info.claim_owner = owner if isinstance(owner, dict) else None
            if self._live(claim):
                info.status = "running"
        return info

    def checkpoint_info(self, worker_id: str) -> CheckpointInfo | None:
        """The listing columns of one checkpoint (``running`` while a live claim holds it;
        a claim of a dead owner is put back first), or None.

        Raises:
            CorruptRecord: the file is unreadable (left as it is).
        """
        self.recover(worker_id)
        path = self.file_of(worker_id)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StoreError(f"store {self.display}: cannot read `{path}`: {e}", "io") from None
        return self._info_of(worker_id, st, None, self._claim_rec(worker_id))

    def get_checkpoint(self, worker_id: str) -> tuple[CheckpointInfo, bytes] | None:
        """The checkpoint's info and body — the kept park while a live claim holds it —
        or None.

        Raises:
            CorruptRecord: the file is unreadable (left as it is).
        """
        self.recover(worker_id)
        path = self.file_of(worker_id)
        with dir_lock(path) if os.path.isdir(self.path) else contextlib.nullcontext():
            body = self._read(path)
            if body is None:
                return None
            st = os.stat(path)
            claim = self._claim_rec(worker_id)
            info = self._info_of(worker_id, st, body, claim)
            if claim is not None and self._live(claim):
                park = self._read(path + PARK_SUFFIX)
                if park is not None:
                    body = park
        return info, body

    def list_checkpoints(self, statuses: tuple[str, ...] | None = None) -> list[CheckpointInfo]:
        """The checkpoints of the directory, newest first; unreadable files are skipped
        (``harnpy workers ls`` reports them itself)."""
        out: list[CheckpointInfo] = []
        for key in self._keys():
            try:
                info = self.checkpoint_info(key)
            except StoreError:
                continue
            if info is not None and (statuses is None or info.status in statuses):
                out.append(info)
        out.sort(key=lambda i: i.updated_at_ms, reverse=True)
        return out

    def _keys(self) -> list[str]:
        names = glob.glob(os.path.join(glob.escape(self.path), "*.json"))
        keys = [os.path.basename(n)[:-5] for n in names]
        return sorted(k for k in keys if _KEY_RE.match(k))

    def find_checkpoints(self, prefix: str) -> list[str]:
        """Keys equal to ``prefix`` (then only it) or starting with it."""
        keys = self._keys()
        if prefix in keys:
            return [prefix]
        return [k for k in keys if k.startswith(prefix)]

    # ---- writes

    def _check_body(self, key: str, body: bytes) -> None:
        if len(body) > MAX_DOCUMENT_BYTES:
            raise CheckpointTooLarge(
                f"store {self.display}: the checkpoint of {key} is {len(body)} bytes, over "
                f"the {MAX_DOCUMENT_BYTES}-byte (4 MiB) limit; nothing was written",
                len(body),
                MAX_DOCUMENT_BYTES,
            )
        if not body.lstrip()[:1] == b"{" or not body.rstrip()[-1:] == b"}":
            raise StoreError(
                f"store {self.display}: the checkpoint of {key} is not a JSON object; "
                "nothing was written",
                "config",
            )

    def put_checkpoint(
        self,
        worker_id: str,
        body: bytes,
        meta: CheckpointMeta,
        *,
        fence: int | None = None,
        expect_version: int | None = None,
        transcript: TranscriptAppend | None = None,
        waiters: Sequence[str] = (),
        durable: bool = True,
    ) -> int:
        """Commit ``body`` as ``<key>.json`` (see
        :meth:`~harnpy.store.checkpoint_api.CheckpointStore.put_checkpoint`). A fenced
        commit whose ``meta.status`` is not ``running`` ends the claim (the kept park and
        the claim file are removed). ``durable=False`` skips the fsyncs (advisory
        metadata writes; the rename stays atomic). Only the cheap JSON-object check is made
        (the body's first and last bytes): the seal covers the rest.

        Raises:
            CheckpointTooLarge, StoreError, Fenced: as the interface says; ``StoreError``
                ``kind="config"`` for ``waiters`` (a directory holds no waitpoints) and
                ``kind="io"`` when the file cannot be written (nothing changed).
        """
        self._check_body(worker_id, body)
        if waiters:
            raise StoreError(
                f"store {self.display}: a directory holds no waitpoints; use an SQL store",
                "config",
            )
        path = self.file_of(worker_id)
        try:
            self._ensure_dir()
            with dir_lock(path):
                claim = self._claim_rec(worker_id)
                try:
                    cur: os.stat_result | None = os.stat(path)
                except FileNotFoundError:
                    cur = None
                if fence is not None:
                    if claim is None or claim.get("fence") != fence or cur is None:
                        raise Fenced(
                            f"store {self.display}: the claim on worker {worker_id} was lost "
                            "(another process put its park back or took the work over); this "
                            "commit was refused and nothing was written"
                        )
                elif expect_version is None:
                    if cur is not None:
                        raise StoreError(
                            f"store {self.display}: a checkpoint of worker {worker_id} exists "
                            "already",
                            "conflict",
                        )
                elif cur is None or _version_of(cur) != expect_version or self._live(claim):
                    raise StoreError(
                        f"store {self.display}: the checkpoint of worker {worker_id} changed "
                        "since this process wrote it (another process resumed or closed it)",
                        "conflict",
                    )
                if transcript is not None:
                    self._append_transcript(worker_id, transcript, durable)
                self._write(path, body, durable)
                if meta.status != "running" or fence is None:
                    self._drop(path + PARK_SUFFIX)
                    self._drop(path + CLAIM_SUFFIX)
                version = _version_of(os.stat(path))
            if transcript is not None and transcript.drop_others:
                self._sweep_transcripts(worker_id, transcript.generation)
            return version
        except OSError as e:
            raise StoreError(
                f"store {self.display}: cannot write the checkpoint of {worker_id}: "
                f"{e.strerror or e}",
                "io",
            ) from None

    def claim_checkpoint(
        self,
        worker_id: str,
        holder: str,
        *,
        park_id: str | None = None,
        lease_ms: int = 60_000,
        owner: dict[str, Any] | None = None,
    ) -> CheckpointClaim:
        """Claim a parked checkpoint for one resume: under the directory lock, put back a
        dead owner's park, re-read the file, require ``suspended`` (at ``park_id``), keep
        it as ``<key>.json.park``, write the claim file and the ``running`` document (its
        ``owner`` is ``owner``, default this process). ``lease_ms`` is recorded; the claim
        holds while its owner lives (module docstring).

        Raises:
            ClaimRefused: ``missing`` / ``changed`` / ``busy``.
            CorruptRecord: the file is unreadable (nothing claimed).
            StoreError: ``kind="io"`` when the files cannot be written (nothing claimed).
        """
        path = self.file_of(worker_id)
        if not os.path.isdir(self.path):
            raise ClaimRefused(f"store {self.display}: no checkpoint of {worker_id}", "missing")
        who = owner or owner_record()
        with dir_lock(path):
            self._recover_locked(worker_id)
            raw = self._read(path)
            if raw is None:
                raise ClaimRefused(
                    f"store {self.display}: no checkpoint of worker {worker_id}", "missing"
                )
            cur = self._claim_rec(worker_id)
            if cur is not None and self._live(cur):
                raise ClaimRefused(
                    f"store {self.display}: worker {worker_id} is being resumed by "
                    f"{cur.get('holder')}",
                    "busy",
                    "running",
                    cur.get("owner") if isinstance(cur.get("owner"), dict) else None,
                )
            doc = self._doc(worker_id, raw)
            status = doc.get("status")
            if status != "suspended" or (park_id is not None and doc.get("park_id") != park_id):
                shown = status if status != "suspended" else "suspended again elsewhere"
                raise ClaimRefused(
                    f"store {self.display}: worker {worker_id} is not parked at that park "
                    f"(status={shown})",
                    "changed",
                    str(status),
                )
            version = _version_of(os.stat(path))
            prev = doc.get("owner")
            prev_fence = prev.get("fence") if isinstance(prev, dict) else None
            fence = max(
                time.time_ns() // 1000, (prev_fence or 0) + 1 if type(prev_fence) is int else 0
            )
            running = dict(doc)
            running["status"] = "running"
            running["suspension"] = None
            running["owner"] = dict(who)
            rec = {
                "fence": fence,
                "holder": holder,
                "owner": who,
                "park_id": doc.get("park_id"),
                "lease_expires_at_ms": time.time_ns() // 1_000_000 + lease_ms,
            }
            try:
                self._write(path + PARK_SUFFIX, raw)
                self._write(path + CLAIM_SUFFIX, json.dumps(rec).encode())
                self._write(path, self._seal(running))
            except OSError as e:
                with contextlib.suppress(OSError):
                    self._write(path, raw)
                self._drop(path + CLAIM_SUFFIX)
                self._drop(path + PARK_SUFFIX)
                raise StoreError(
                    f"store {self.display}: cannot claim {worker_id}: {e.strerror or e}", "io"
                ) from None
            park = doc.get("park_id")
            return CheckpointClaim(
                worker_id, fence, holder, raw, version, park if type(park) is str else None
            )

    def renew_checkpoint_claim(self, worker_id: str, fence: int, lease_ms: int) -> bool:
        """Whether claim ``fence`` is still current (a directory claim needs no renewal)."""
        cur = self._claim_rec(worker_id)
        return cur is not None and cur.get("fence") == fence

    def release_checkpoint_claim(self, worker_id: str, fence: int) -> bool:
        """Give claim ``fence`` back: the kept park replaces the ``running`` document (the
        resume did not take effect). False when the claim is not current."""
        path = self.file_of(worker_id)
        with dir_lock(path):
            cur = self._claim_rec(worker_id)
            if cur is None or cur.get("fence") != fence:
                return False
            park = self._read(path + PARK_SUFFIX)
            if park is not None:
                self._write(path, park)
            self._drop(path + PARK_SUFFIX)
            self._drop(path + CLAIM_SUFFIX)
            return True

    def update_checkpoint_if(
        self,
        worker_id: str,
        transform: Callable[[bytes], tuple[bytes, CheckpointMeta] | None],
        *,
        expect_status: str | None = None,
        expect_park_id: str | None = None,
    ) -> bool:
        """Rewrite ``<key>.json`` with ``transform(body)`` while it has ``expect_status`` /
        ``expect_park_id`` and no live claim (under the directory lock)."""
        path = self.file_of(worker_id)
        if not os.path.isdir(self.path):
            return False
        with dir_lock(path):
            self._recover_locked(worker_id)
            if self._live(self._claim_rec(worker_id)):
                return False
            raw = self._read(path)
            if raw is None:
                return False
            doc = self._doc(worker_id, raw)
            if expect_status is not None and doc.get("status") != expect_status:
                return False
            if expect_park_id is not None and doc.get("park_id") != expect_park_id:
                return False
            out = transform(raw)
            if out is None:
                return False
            new_body, _meta = out
            self._check_body(worker_id, new_body)
            self._write(path, new_body)
            return True

    def delete_checkpoint(self, worker_id: str) -> bool:
        """Remove ``<key>.json``, its park, claim and transcript files."""
        path = self.file_of(worker_id)
        if not os.path.isdir(self.path):
            return False
        with dir_lock(path):
            existed = os.path.lexists(path)
            for p in (path, path + PARK_SUFFIX, path + CLAIM_SUFFIX):
                self._drop(p)
            for p in self._transcript_files(worker_id):
                self._drop(p)
            self._infos.pop(worker_id, None)
            return existed

    # ---- transcripts

    def _transcript_path(self, key: str, generation: str) -> str:
        if not re.fullmatch(r"[0-9A-Za-z_-]{1,64}", generation):
            raise StoreError(f"store {self.display}: bad transcript generation", "config")
        return os.path.join(self.path, f"{key}.transcript-{generation}.jsonl")

    def _transcript_files(self, key: str) -> list[str]:
        return glob.glob(
            os.path.join(glob.escape(self.path), glob.escape(key) + ".transcript-*.jsonl")
        )

    @staticmethod
    def _split(line: bytes) -> tuple[str, bytes] | None:
        if not (line.startswith(b'["') and line.endswith(b"]")):
            return None
        end = line.find(b'",', 2)
        if end < 0:
            return None
        return line[2:end].decode("utf-8", "replace"), line[end + 2 : -1]

    def _lines(self, path: str) -> list[bytes]:
        try:
            with open(path, "rb") as fh:
                return [ln.rstrip(b"\n") for ln in fh if ln.strip()]
        except FileNotFoundError:
            return []

    def _append_transcript(self, key: str, t: TranscriptAppend, durable: bool) -> None:
        path = self._transcript_path(key, t.generation)
        firsts: dict[str, int] = {}
        for stream, seq, _ in t.rows:
            firsts[stream] = min(seq, firsts.get(stream, seq))
        lines = self._lines(path)
        counts: dict[str, int] = {}
        keep: list[bytes] = []
        rewrite = False
        for ln in lines:
            part = self._split(ln)
            if part is None:
                rewrite = True
                continue
            i = counts.get(part[0], 0)
            counts[part[0]] = i + 1
            if part[0] in firsts and i >= firsts[part[0]]:
                rewrite = True  # a re-append after a takeover replaces these entries
                continue
            keep.append(ln)
        new = [b'["' + s.encode() + b'",' + body + b"]" for s, _, body in t.rows]
        if rewrite:
            self._write(path, b"".join(ln + b"\n" for ln in [*keep, *new]), durable)
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, b"".join(ln + b"\n" for ln in new))
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _sweep_transcripts(self, key: str, keep: str) -> None:
        wanted = self._transcript_path(key, keep)
        for p in self._transcript_files(key):
            if p != wanted:
                self._drop(p)

    def read_transcript(
        self, worker_id: str, generation: str, stream: str, upto: int
    ) -> list[bytes]:
        """Entries ``0 .. upto-1`` of ``stream`` in ``<key>.transcript-<generation>.jsonl``.

        Raises:
            CorruptRecord: fewer entries are stored.
        """
        out: list[bytes] = []
        for ln in self._lines(self._transcript_path(worker_id, generation)):
            if len(out) >= upto:
                break
            part = self._split(ln)
            if part is not None and part[0] == stream:
                out.append(part[1])
        if len(out) != upto:
            raise CorruptRecord(
                f"store {self.display}: the transcript of {worker_id} is incomplete ({len(out)} "
                f"of {upto} entries of stream {stream}); it was left as it is"
            )
        return out
