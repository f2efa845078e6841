"""Bounded reads and private files: the file primitives for state read from or written to disk.

* :func:`read_capped` reads a file a snapshot, a session or a user named, refusing anything
  that is not a regular file (a FIFO, a device, a directory) without blocking, and anything
  bigger than the cap before reading it.
* :func:`read_limited` / :func:`read_text_limited` are :func:`read_capped` under the user
  read limit (:func:`read_limit`: ``HARNPY_MAX_READ_BYTES``, default 64 MiB), what the file
  builtins, templates, ``:load`` and harnpy's own small state files use;
  :func:`read_stream_limited` is the same limit for a text stream (stdin).
* :func:`read_part` (a head or a tail) and :func:`file_digest` (a hash, streamed) read a
  file of any size in bounded memory, with the same refusal of FIFOs and devices.
* :func:`private_dir` creates directories only the current user can enter (0700, whatever
  the umask) and refuses an existing one that belongs to someone else.
* :func:`write_private` writes a file only the current user can read (0600) atomically: a
  temporary file in the same directory, fsync, rename, fsync of the directory. Temporary
  files are named ``<prefix><host tag>-<pid>-*.tmp``; the first write into a directory in a
  process removes the ones a killed writer left there (:func:`sweep_stale_temp_files`).

POSIX semantics (modes, owners, ``O_NONBLOCK``); on a platform without ``os.getuid`` the
owner checks are skipped.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from typing import Any

__all__ = [
    "DEFAULT_READ_LIMIT",
    "READ_LIMIT_ENV",
    "FileTooLarge",
    "NotRegularFile",
    "ReadRefused",
    "StreamTooLarge",
    "UnsafePath",
    "file_digest",
    "private_dir",
    "read_capped",
    "read_limit",
    "read_limited",
    "read_part",
    "read_stream_limited",
    "read_text_limited",
    "sweep_stale_temp_files",
    "write_private",
]

#: A temporary file a writer left without a pid in its name (older harnpy) is stale after
#: this long (seconds): no write takes that long.
LEGACY_TEMP_AGE_S = 3600
_swept: set[tuple[str, str]] = set()


def _host_tag() -> str:
    import hashlib

    return hashlib.sha256(os.uname().nodename.encode()).hexdigest()[:8]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def sweep_stale_temp_files(d: str, tmp_prefix: str) -> int:
    """Remove the temporary files of :func:`write_private` a killed writer left in ``d``:
    ``<tmp_prefix><host tag>-<pid>-*.tmp`` of this host whose pid is gone, and ones without a pid older than :data:`LEGACY_TEMP_AGE_S`.
    Only regular files owned by the current user are removed. Returns how many."""
    import re
    import time

    mine = re.compile(re.escape(tmp_prefix) + r"([0-9a-f]{8})-(\d+)-.*\.tmp$")
    tag = _host_tag()
    uid = os.getuid() if hasattr(os, "getuid") else None
    removed = 0
    try:
        entries = list(os.scandir(d))
    except OSError:
        return 0
    for e in entries:
        name = e.name
        if not name.startswith(tmp_prefix) or not name.endswith(".tmp"):
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or (uid is not None and st.st_uid != uid):
            continue
        m = mine.match(name)
        if m is not None:
            if m.group(1) != tag:
                continue  # another machine's writer (a shared directory)
            pid = int(m.group(2))
            if _pid_alive(pid):
                continue
        elif time.time() - st.st_mtime < LEGACY_TEMP_AGE_S:
            continue
        with contextlib.suppress(OSError):
            os.unlink(e.path)
            removed += 1
    return removed


class ReadRefused(OSError):
    """:func:`read_capped` refused a file before reading it (base class).

    ``str(e)`` / ``e.strerror`` is one line naming the file and why, ``e.filename`` the path.
    """

    def __init__(self, err: int, message: str, path: str) -> None:
        super().__init__(err, message, path)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotRegularFile(ReadRefused):
    """The path names a FIFO, a device, a socket or a directory, not a regular file."""


class FileTooLarge(ReadRefused):
    """The file is bigger than the cap. ``size`` and ``cap`` are in bytes; ``size`` is the
    size seen by ``fstat`` (or ``cap + 1`` when the file grew while it was read)."""

    def __init__(self, path: str, size: int, cap: int) -> None:
        super().__init__(errno.EFBIG, f"{path} is {size} bytes, over the {cap}-byte limit", path)
        self.size = size
        self.cap = cap


class StreamTooLarge(ReadRefused):
    """A stream (stdin) holds more than the cap allows. ``cap`` is the limit; the stream's
    size is not known (only ``cap + 1`` characters of it were read)."""

    def __init__(self, what: str, cap: int) -> None:
        super().__init__(
            errno.EFBIG, f"{what} has more than {cap} bytes, over the {cap}-byte limit", what
        )
        self.cap = cap


class UnsafePath(OSError):
    """A directory or file that should be private belongs to another user or can be written
    (or read) by others. ``str(e)`` says which path, what is wrong and what to do."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(errno.EPERM, message, path)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _open_regular(path: str) -> tuple[int, os.stat_result]:
    """An open read-only descriptor of regular file ``path`` and its ``fstat``: opened with
    ``O_NONBLOCK`` (a FIFO does not wait for a writer) and checked on the descriptor (no
    race with a rename). The caller closes the descriptor.

    Raises:
        NotRegularFile: a FIFO, device, socket or directory.
        OSError: as ``os.open`` reports it.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise NotRegularFile(errno.EISDIR, f"{path} is a directory, not a file", path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(
                errno.EINVAL, f"{path} is {_kind(st.st_mode)}, not a regular file", path
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_upto(fd: int, n: int) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_capped(path: str, cap: int) -> bytes:
    """The bytes of regular file ``path``, at most ``cap`` of them.

    The file is opened with ``O_NONBLOCK`` (opening a FIFO does not wait for a writer) and
    checked with ``fstat`` on the open descriptor (no race with a rename): it must be a
    regular file of at most ``cap`` bytes. Then at most ``cap + 1`` bytes are read, so a file
    that grows while it is read (or lies about its size, like a ``/proc`` file) is refused
    too, and memory use stays within ``cap + 1`` bytes whatever the file is.

    Args:
        path: the file (symlinks are followed; the check applies to the target).
        cap: the largest size accepted, in bytes (``>= 0``).

    Returns:
        The file's content (``len <= cap``).

    Raises:
        NotRegularFile: a FIFO, device, socket or directory (nothing is read).
        FileTooLarge: more than ``cap`` bytes (nothing, or at most ``cap + 1`` bytes, read).
        OSError: the file cannot be opened or read (``FileNotFoundError``,
            ``PermissionError``...), as the OS reports it.
    """
    fd, st = _open_regular(path)
    try:
        if st.st_size > cap:
            raise FileTooLarge(path, st.st_size, cap)
        data = _read_upto(fd, cap + 1)
        if len(data) > cap:
            raise FileTooLarge(path, max(st.st_size, len(data)), cap)
        return data
    finally:
        os.close(fd)


def read_part(path: str, n: int, *, start: int = 0, last: bool = False) -> bytes:
    """At most ``n`` bytes of regular file ``path`` (the checks of :func:`read_capped`,
    without its refusal of a big file): from offset ``start`` or, with ``last``, the last
    ``n`` bytes of the file not before ``start`` (the tail of a log).

    Raises:
        NotRegularFile: a FIFO, device, socket or directory (nothing is read).
        OSError: the file cannot be opened or read.
    """
    fd, st = _open_regular(path)
    try:
        offset = max(start, st.st_size - n) if last else start
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        return _read_upto(fd, n)
    finally:
        os.close(fd)


def file_digest(path: str, algorithm: str = "sha256") -> str:
    """The hex digest of regular file ``path`` (the checks of :func:`read_capped`), read in
    1 MiB chunks, so any size is hashed in bounded memory.

    Raises:
        NotRegularFile: a FIFO, device, socket or directory (nothing is read).
        OSError: the file cannot be opened or read.
    """
    import hashlib

    h = hashlib.new(algorithm)
    fd, _ = _open_regular(path)
    try:
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


#: The variable that sets :func:`read_limit`.
READ_LIMIT_ENV = "HARNPY_MAX_READ_BYTES"
#: :func:`read_limit` when :data:`READ_LIMIT_ENV` is unset: 64 MiB.
DEFAULT_READ_LIMIT = 64 * 1024 * 1024


def read_limit() -> int:
    """The largest file (or stream) a user-facing read accepts, in bytes:
    ``HARNPY_MAX_READ_BYTES`` (a whole number ``>= 0``, read at each call) or
    :data:`DEFAULT_READ_LIMIT`.

    Raises:
        ReadRefused: the variable is set to something that is not a whole number ``>= 0``
            (the message names the variable and the value).
    """
    raw = os.environ.get(READ_LIMIT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_READ_LIMIT
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise ReadRefused(
            errno.EINVAL,
            f"{READ_LIMIT_ENV} must be a whole number of bytes (e.g. 67108864), got {raw!r}",
            READ_LIMIT_ENV,
        )
    return value


def _with_hint(e: ReadRefused) -> ReadRefused:
    if isinstance(e, (FileTooLarge, StreamTooLarge)):
        raw = os.environ.get(READ_LIMIT_ENV)
        e.message += (
            f" (set {READ_LIMIT_ENV} to raise it)" if raw is None else f" ({READ_LIMIT_ENV}={raw})"
        )
        e.strerror = e.message
    return e


def read_limited(path: str, cap: int | None = None) -> bytes:
    """:func:`read_capped` of ``path`` under ``cap`` (default :func:`read_limit`); a refusal
    for size says how to raise the limit.

    Raises:
        NotRegularFile, FileTooLarge, ReadRefused (a bad ``HARNPY_MAX_READ_BYTES``), or
        OSError as :func:`read_capped`.
    """
    limit = read_limit() if cap is None else cap
    try:
        return read_capped(path, limit)
    except ReadRefused as e:
        raise _with_hint(e) from None


def _decode(data: bytes, errors: str, newline: str | None) -> str:
    text = data.decode("utf-8", errors)
    if newline is None and "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def read_text_limited(
    path: str, cap: int | None = None, *, errors: str = "strict", newline: str | None = None
) -> str:
    """The UTF-8 text of regular file ``path`` (:func:`read_limited`).

    Args:
        path: the file.
        cap: the limit in bytes (default :func:`read_limit`).
        errors: the decoding error handler (``"strict"`` or ``"replace"``).
        newline: ``None`` translates ``\\r\\n`` and ``\\r`` to ``\\n`` (as ``open()`` does),
            ``""`` keeps the text as it is.

    Raises:
        OSError as :func:`read_limited`; UnicodeDecodeError with ``errors="strict"``.
    """
    return _decode(read_limited(path, cap), errors, newline)


def read_stream_limited(
    stream: Any, what: str, *, line: bool = False, cap: int | None = None
) -> str:
    """Read a text stream (``sys.stdin``, a ``StringIO``) under the read limit: the rest of it
    or, with ``line``, its next line (with its newline), reading at most ``cap + 1``
    characters (each at least one byte), so memory stays bounded whatever is piped in.

    Args:
        stream: an object with ``read(n)`` and ``readline(n)`` returning ``str``.
        what: the stream's name in the error (``"stdin"``).
        line: read one line instead of everything left.
        cap: the limit (default :func:`read_limit`).

    Returns:
        What was read (``""`` at end of input).

    Raises:
        StreamTooLarge: more than ``cap`` characters (the rest, or the line without its
            newline); what was read is dropped.
        ReadRefused: a bad ``HARNPY_MAX_READ_BYTES``.
    """
    limit = read_limit() if cap is None else cap
    data = stream.readline(limit + 1) if line else stream.read(limit + 1)
    if len(data) > limit and not (line and data.endswith("\n")):
        raise _with_hint(StreamTooLarge(what, limit))
    return data


def _uid() -> int | None:
    getuid = getattr(os, "geteuid", None)
    return getuid() if getuid is not None else None


def _check_owned_dir(path: str, st: os.stat_result) -> None:
    uid = _uid()
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{path} exists and is not a directory", path)
    if uid is not None and st.st_uid != uid:
        raise UnsafePath(
            f"{path} belongs to another user (uid {st.st_uid}, you are uid {uid}); refusing to "
            "keep private state in it (remove it or choose another directory)",
            path,
        )


def private_dir(path: str) -> str:
    """Make ``path`` a directory only the current user can use, and return it.

    Missing directories (``path`` and its missing parents) are created with mode 0700
    whatever the umask. An existing ``path`` must be a directory owned by the current
    user; its mode is then tightened to 0700 (group and other bits removed). Existing
    parents are left as they are.

    Raises:
        UnsafePath: ``path`` exists but is not a directory, or belongs to another user.
        OSError: a directory cannot be created or its mode changed.
    """
    path = os.path.abspath(path)
    missing: list[str] = []
    p = path
    while True:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            missing.append(p)
            parent = os.path.dirname(p)
            if parent == p:
                break
            p = parent
            continue
        if p != path and not stat.S_ISDIR(st.st_mode):
            raise UnsafePath(f"{p} exists and is not a directory", p)
        break
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass  # created meantime by another process: checked below like any existing one
        else:
            os.chmod(d, 0o700)  # the umask may have removed bits; never adds any: exact mode
    st = os.stat(path)
    _check_owned_dir(path, st)
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def fsync_dir(path: str) -> None:
    """fsync directory ``path`` (makes a rename in it durable); errors are ignored (some
    file systems cannot fsync a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_private(
    path: str, data: bytes, *, durable: bool = True, tmp_prefix: str = ".harnpy-"
) -> None:
    """Replace ``path`` with ``data`` atomically, as a file only its owner can read (0600).

    A temporary file ``<tmp_prefix>*.tmp`` is created in the same directory (mode 0600 from
    the start, whatever the umask), written, fsynced, renamed over ``path``, and the
    directory is fsynced. A reader sees either the old file or the new one, never a part;
    a crash (SIGKILL, power loss after the fsyncs) leaves one of the two. On any error the
    temporary file is removed and ``path`` is unchanged. With ``durable=False`` the fsyncs
    are skipped (the rename is still atomic for readers; a power loss may lose the new
    version).

    The directory must exist (create it with :func:`private_dir`).

    Raises:
        OSError: the file cannot be written (the directory is missing, not writable, the
            disk is full...).
    """
    d = os.path.dirname(os.path.abspath(path)) or "."
    if (d, tmp_prefix) not in _swept:
        sweep_stale_temp_files(d, tmp_prefix)
        _swept.add((d, tmp_prefix))
    fd, tmp = tempfile.mkstemp(
        prefix=f"{tmp_prefix}{_host_tag()}-{os.getpid()}-", suffix=".tmp", dir=d
    )
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(d)
