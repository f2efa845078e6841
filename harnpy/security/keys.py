"""The snapshot key: the secret every sealed document is authenticated with.

Where it comes from, first match wins:

1. ``HARNPY_SNAPSHOT_KEY``: the key itself (at least :data:`MIN_KEY_CHARS` characters; its
   UTF-8 bytes are the secret). Use it to share one key between the machines (or the
   replicas of a store) that must read each other's snapshots, e.g. the content of one
   machine's key file.
2. The key file: ``HARNPY_SNAPSHOT_KEY_FILE`` when set, else
   ``$XDG_CONFIG_HOME/harnpy/snapshot.key`` (``~/.config/harnpy/snapshot.key``). When it
   does not exist it is created on first use: 32 random bytes as 64 hex characters, mode
   0600 (a missing directory is created 0700). Creation is race-free: the key is written to
   a temporary file (``O_EXCL``) and hard-linked into place, so of several processes
   creating it at once exactly one key wins and every process uses that one.

A key file is refused (:class:`~harnpy.security.errors.KeyUnavailable`) when it is not a
regular file, belongs to another user or can be read or written by group or others; its
directory when it belongs to another user.

The key's *id* (16 hex characters of a domain-separated SHA-256 of the secret) is written in
every seal so a document sealed with another key is reported as such; it reveals nothing
usable about the secret.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field

from harnpy.security.errors import KeyUnavailable
from harnpy.security.files import UnsafePath, fsync_dir, private_dir

__all__ = [
    "KEY_ENV",
    "KEY_FILE_ENV",
    "MIN_KEY_CHARS",
    "SnapshotKey",
    "key_file_path",
    "snapshot_key",
]

#: The environment variable holding the key itself.
KEY_ENV = "HARNPY_SNAPSHOT_KEY"
#: The environment variable naming the key file (default :func:`key_file_path`).
KEY_FILE_ENV = "HARNPY_SNAPSHOT_KEY_FILE"
#: Shortest key accepted, in characters (a new key file holds 64 hex characters).
MIN_KEY_CHARS = 32
#: Largest key file read, in bytes.
_MAX_KEY_FILE = 4096


@dataclass(frozen=True)
class SnapshotKey:
    """A loaded snapshot key.

    Attributes:
        key_id: 16 hex characters identifying the key (written in seals).
        source: where it came from, for messages: ``"HARNPY_SNAPSHOT_KEY"`` or
            ``"the key file /path"``.
        secret: the HMAC key (never shown).
    """

    key_id: str
    source: str
    secret: bytes = field(repr=False)


def key_id_of(secret: bytes) -> str:
    """The id of key ``secret``: 16 hex characters of SHA-256 over a fixed label and it."""
    return hashlib.sha256(b"harnpy snapshot key id\0" + secret).hexdigest()[:16]


def key_file_path() -> str:
    """The key file's path: ``HARNPY_SNAPSHOT_KEY_FILE``, else
    ``$XDG_CONFIG_HOME/harnpy/snapshot.key`` (an absolute ``XDG_CONFIG_HOME`` only), else
    ``~/.config/harnpy/snapshot.key``.

    Raises:
        KeyUnavailable: no home directory is known (and no variable names the file).
    """
    explicit = os.environ.get(KEY_FILE_ENV)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "harnpy", "snapshot.key")
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        raise KeyUnavailable(
            f"no home directory to keep the snapshot key in; set {KEY_ENV} (the key, at least "
            f"{MIN_KEY_CHARS} characters) or {KEY_FILE_ENV} (a file for it)"
        )
    return os.path.join(home, ".config", "harnpy", "snapshot.key")


_lock = threading.Lock()
_cache: dict[tuple[str | None, str], SnapshotKey] = {}


def snapshot_key() -> SnapshotKey:
    """The key to seal and check documents with (see the module docstring for where it comes
    from); loaded once per process for a given environment.

    Raises:
        KeyUnavailable: the variable's key is too short, or the key file cannot be used
            (the message names the file, the problem and the fix).
    """
    env = os.environ.get(KEY_ENV)
    if env is not None:
        cache_key: tuple[str | None, str] = (env, "")
    else:
        cache_key = (None, key_file_path())
    with _lock:
        hit = _cache.get(cache_key)
        if hit is not None:
            return hit
        key = _from_env(env) if env is not None else _from_file(cache_key[1])
        _cache[cache_key] = key
        return key


def _from_env(value: str) -> SnapshotKey:
    text = value.strip()
    if len(text) < MIN_KEY_CHARS:
        raise KeyUnavailable(
            f"{KEY_ENV} is too short ({len(text)} characters; at least {MIN_KEY_CHARS} are "
            "needed): use e.g. the 64 hex characters of `python3 -c 'import secrets; "
            "print(secrets.token_hex(32))'`, the same on every machine that shares snapshots"
        )
    secret = text.encode("utf-8")
    return SnapshotKey(key_id_of(secret), KEY_ENV, secret)


def _from_file(path: str) -> SnapshotKey:
    try:
        return _read_key_file(path)
    except FileNotFoundError:
        pass
    _create_key_file(path)
    return _read_key_file(path)


def _read_key_file(path: str) -> SnapshotKey:
    """Read and check the key file. Raises FileNotFoundError when it does not exist,
    KeyUnavailable when it cannot be used."""
    for attempt in range(50):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            raise
        except OSError as e:
            raise KeyUnavailable(
                f"cannot read the snapshot key file {path}: {e.strerror or e}; fix it, or set "
                f"{KEY_ENV}"
            ) from None
        try:
            st = os.fstat(fd)
            _check_key_file(path, st)
            data = os.read(fd, _MAX_KEY_FILE + 1)
        finally:
            os.close(fd)
        text = data.decode("utf-8", "replace").strip()
        if not text and attempt < 49 and time.time() - st.st_mtime < 5:
            time.sleep(0.02)  # another process is writing it (no-hard-link fallback)
            continue
        if len(data) > _MAX_KEY_FILE or len(text) < MIN_KEY_CHARS:
            raise KeyUnavailable(
                f"the snapshot key file {path} does not hold a key ({len(text)} characters; "
                f"at least {MIN_KEY_CHARS} are needed); delete it to make a new key (snapshots "
                "sealed with the old one can then no longer be loaded)"
            )
        secret = text.encode("utf-8")
        return SnapshotKey(key_id_of(secret), f"the key file {path}", secret)
    raise AssertionError("unreachable")  # pragma: no cover


def _check_key_file(path: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise KeyUnavailable(f"the snapshot key file {path} is not a regular file")
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is not None and st.st_uid != uid:
        raise KeyUnavailable(
            f"the snapshot key file {path} belongs to another user (uid {st.st_uid}, you are "
            f"uid {uid}); refusing to use it: remove it, or set {KEY_ENV}"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise KeyUnavailable(
            f"the snapshot key file {path} can be read or written by other users (mode "
            f"{mode:04o}); refusing to use it: run `chmod 600 {path}`"
        )


def _create_key_file(path: str) -> None:
    d = os.path.dirname(path)
    try:
        if not os.path.isdir(d):  # an existing directory is the user's: left as it is
            private_dir(d)
    except UnsafePath as e:
        raise KeyUnavailable(f"cannot keep the snapshot key in {d}: {e}") from None
    except OSError as e:
        raise KeyUnavailable(
            f"cannot create the directory {d} for the snapshot key: {e.strerror or e}; set "
            f"{KEY_ENV} or {KEY_FILE_ENV}"
        ) from None
    data = (secrets.token_hex(32) + "\n").encode("ascii")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".snapshot.key-", suffix=".tmp", dir=d)
    except OSError as e:
        raise KeyUnavailable(
            f"cannot create the snapshot key file {path}: {e.strerror or e}; set {KEY_ENV} or "
            f"{KEY_FILE_ENV}"
        ) from None
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # atomic, complete, and refuses to replace: first key wins
        except FileExistsError:
            pass
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            _create_exclusive(path, data)  # a file system without hard links
        fsync_dir(d)
    except OSError as e:
        raise KeyUnavailable(
            f"cannot create the snapshot key file {path}: {e.strerror or e}; set {KEY_ENV} or "
            f"{KEY_FILE_ENV}"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _create_exclusive(path: str, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def clear_cache() -> None:
    """Forget the keys loaded so far (tests that change the key or its file)."""
    with _lock:
        _cache.clear()
