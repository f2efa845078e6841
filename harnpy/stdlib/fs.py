"""Host builtins: files, paths, environment, processes, stdin/TTY and ``exit``
(spec language.md 4.1 input half, 4.14).

Relative paths resolve against the process working directory (``render`` is the exception,
see :mod:`harnpy.stdlib.templates`). Failures throw ``<builtin>: <reason>`` strings.

Runtime attributes used (all optional; created on first use):

* ``runtime.stdin_mock`` - :class:`io.StringIO` that replaces stdin while set
  (``mock_stdin``/``unmock_stdin``); ``read_line``/``read_stdin`` read it first.
* ``runtime.tty_mock`` - dict ``{"stdin"|"stdout"|"stderr": bool}`` consulted by
  ``is_stdin_tty``/``is_stdout_tty``; ``mock_tty("stdout", b)`` also sets
  ``runtime.stdout_isatty`` (what ``color`` checks in ``auto`` mode) and ``unmock_tty``
  restores it.
* ``runtime.stdout_isatty`` - the real stdout TTY flag (set by the CLI).

``exit(code)`` raises :class:`HarnExit`, a ``BaseException`` that ``try``/``catch`` never
sees: the CLI must catch it, flush output and end the process with ``code``.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

from harnpy._lazy import lazy_module
from harnpy.runtime.errors import HarnExit
from harnpy.runtime.values import HSet, err, ok
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.registry import builtin

shutil = lazy_module("shutil")
subprocess = lazy_module("subprocess")
tempfile = lazy_module("tempfile")


def _path(name: str, p: Any) -> str:
    if p is None:
        raise fail(f"{name}: path is required")
    return text(p)


def _os_reason(e: OSError) -> str:
    return e.strerror or str(e)


# ------------------------------------------------------------------ files


def _read_error(name: str, p: str, e: OSError) -> str:
    """``<name>: <why>`` for a failed read: a refusal of :mod:`harnpy.security` already names
    the file (too large, a FIFO or device), an OS error gets it prefixed."""
    from harnpy.security import ReadRefused

    if isinstance(e, ReadRefused):
        return f"{name}: {e}"
    return f"{name}: {p}: {_os_reason(e)}"


@builtin()
def read_file(thread: Any, path: Any = None) -> str:
    """``read_file(p)``: the file's text (UTF-8, invalid bytes replaced, newlines kept).

    Only a regular file of at most ``HARNPY_MAX_READ_BYTES`` (default 64 MiB) is read; a
    bigger one, a FIFO or a device is refused before it is read (at most the limit + 1 bytes
    are ever read). Throws ``read_file: <p>: <reason>`` or ``read_file: <p> is <n> bytes,
    over the <limit>-byte limit ...``."""
    from harnpy.security import read_text_limited

    p = _path("read_file", path)
    try:
        return read_text_limited(p, errors="replace", newline="")
    except OSError as e:
        raise fail(_read_error("read_file", p, e)) from None


@builtin()
def read_file_result(thread: Any, path: Any = None) -> Any:
    """``read_file_result(p)``: ``Ok(text)`` or ``Err(message)``, the message ``read_file``
    would throw (the same limit and file-type checks)."""
    from harnpy.security import read_text_limited

    p = text(path)
    try:
        return ok(read_text_limited(p, errors="replace", newline=""))
    except OSError as e:
        return err(_read_error("read_file", p, e))


@builtin()
def read_file_bytes(thread: Any, path: Any = None) -> bytes:
    """``read_file_bytes(p)``: the file's raw bytes (the limit and file-type checks of
    ``read_file``); throws ``read_file_bytes: ...``."""
    from harnpy.security import read_limited

    p = _path("read_file_bytes", path)
    try:
        return read_limited(p)
    except OSError as e:
        raise fail(_read_error("read_file_bytes", p, e)) from None


def _write(name: str, path: Any, content: Any, mode: str) -> None:
    p = _path(name, path)
    data = content if type(content) is bytes else text(content).encode("utf-8")
    try:
        with open(p, mode + "b") as f:
            f.write(data)
    except OSError as e:
        raise fail(f"{name}: {p}: {_os_reason(e)}") from None


@builtin()
def write_file(thread: Any, path: Any = None, content: Any = None) -> None:
    """``write_file(p, s)``: replace the file's content with ``s`` (text or bytes)."""
    _write("write_file", path, content, "w")


@builtin()
def append_file(thread: Any, path: Any = None, content: Any = None) -> None:
    """``append_file(p, s)``: append ``s`` to the file (created when missing)."""
    _write("append_file", path, content, "a")


@builtin()
def copy_file(thread: Any, src: Any = None, dst: Any = None) -> None:
    """``copy_file(src, dst)``: copy a file's content."""
    s, d = _path("copy_file", src), _path("copy_file", dst)
    try:
        shutil.copyfile(s, d)
    except OSError as e:
        raise fail(f"copy_file: {s} -> {d}: {_os_reason(e)}") from None


@builtin()
def delete_file(thread: Any, path: Any = None) -> None:
    """``delete_file(p)``: remove a file, or a directory with its content; a missing path
    is not an error."""
    p = _path("delete_file", path)
    try:
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.remove(p)
    except OSError as e:
        raise fail(f"delete_file: {p}: {_os_reason(e)}") from None


@builtin()
def file_exists(thread: Any, path: Any = None) -> bool:
    """``file_exists(p)``: whether a file or directory exists at ``p``."""
    return path is not None and os.path.exists(text(path))


@builtin()
def mkdir(thread: Any, path: Any = None) -> None:
    """``mkdir(p)``: create the directory and any missing parents (no error if present)."""
    p = _path("mkdir", path)
    try:
        os.makedirs(p, exist_ok=True)
    except OSError as e:
        raise fail(f"mkdir: {p}: {_os_reason(e)}") from None


@builtin()
def list_dir(thread: Any, path: Any = None) -> list[str]:
    """``list_dir(p?)``: sorted entry names of directory ``p`` (default ``.``)."""
    p = "." if path is None else text(path)
    try:
        return sorted(os.listdir(p))
    except OSError as e:
        raise fail(f"list_dir: {p}: {_os_reason(e)}") from None


@builtin()
def stat(thread: Any, path: Any = None) -> dict[str, Any]:
    """``stat(p)``: ``{size, is_file, is_dir, is_symlink, modified (Unix seconds), mode,
    readonly}``; throws when ``p`` does not exist."""
    p = _path("stat", path)
    try:
        st = os.stat(p)
    except OSError as e:
        raise fail(f"stat: {p}: {_os_reason(e)}") from None
    return {
        "size": st.st_size,
        "is_file": os.path.isfile(p),
        "is_dir": os.path.isdir(p),
        "is_symlink": os.path.islink(p),
        "modified": int(st.st_mtime),
        "mode": st.st_mode & 0o7777,
        "readonly": not os.access(p, os.W_OK),
    }


@builtin()
def temp_dir(thread: Any) -> str:
    """``temp_dir()``: the system temporary directory."""
    return tempfile.gettempdir()


# ------------------------------------------------------------------ paths


@builtin()
def path_join(thread: Any, *parts: Any) -> str:
    """``path_join(a, b, ...)`` (or one list): join with ``/``; an absolute part restarts
    the path."""
    items: list[Any] = list(parts)
    if len(items) == 1 and type(items[0]) in (list, HSet):
        items = items[0].items if type(items[0]) is HSet else items[0]
    strs = [text(p) for p in items if p is not None]
    if not strs:
        return ""
    return os.path.join(*strs)


@builtin()
def dirname(thread: Any, path: Any = None) -> str:
    """``dirname(p)``: everything before the last path component (``""`` for a bare name)."""
    p = text(path).rstrip("/") or text(path)
    return os.path.dirname(p)


@builtin()
def basename(thread: Any, path: Any = None) -> str:
    """``basename(p)``: the last path component."""
    p = text(path)
    return os.path.basename(p.rstrip("/")) if p.strip("/") else p


@builtin()
def extname(thread: Any, path: Any = None) -> str:
    """``extname(p)``: the extension with its dot (``.txt``), or ``""``."""
    return os.path.splitext(os.path.basename(text(path)))[1]


@builtin()
def cwd(thread: Any) -> str:
    """``cwd()``: the process working directory."""
    return os.getcwd()


def source_directory(thread: Any) -> str:
    """Absolute directory of the calling Harn file (the working directory when unknown)."""
    src = thread.source_path()
    if not src:
        return os.getcwd()
    return os.path.dirname(os.path.abspath(src))


@builtin()
def source_dir(thread: Any) -> str:
    """``source_dir()``: directory of the calling source file."""
    return source_directory(thread)


@builtin()
def project_root(thread: Any) -> Any:
    """``project_root()``: nearest directory at or above the source directory holding a
    ``harn.toml``, or nil."""
    d = Path(source_directory(thread))
    for candidate in (d, *d.parents):
        if (candidate / "harn.toml").is_file():
            return str(candidate)
    return None


# ------------------------------------------------------------------ environment, processes


def clean_text(s: str) -> str:
    """Host text (argv, environment, stdin) as valid Unicode: bytes that were not UTF-8
    (kept by Python as lone surrogates) become U+FFFD, as ``read_file`` does."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


@builtin()
def env(thread: Any, name: Any = None) -> Any:
    """``env(name)``: the environment variable's value, or nil when unset."""
    value = os.environ.get(text(name))
    return None if value is None else clean_text(value)


@builtin()
def env_or(thread: Any, name: Any = None, default: Any = None) -> Any:
    """``env_or(name, default)``: the variable's value, or ``default`` (any value)."""
    value = os.environ.get(text(name))
    return default if value is None else clean_text(value)


def _completed(proc: Any) -> dict[str, Any]:
    return {
        "stdout": proc.stdout.decode("utf-8", errors="replace"),
        "stderr": proc.stderr.decode("utf-8", errors="replace"),
        "status": proc.returncode,
        "success": proc.returncode == 0,
    }


def _run(argv: list[str] | str, shell: bool) -> dict[str, Any]:
    try:
        proc = subprocess.run(argv, shell=shell, capture_output=True, stdin=subprocess.DEVNULL)
    except OSError as e:
        return {"stdout": "", "stderr": _os_reason(e), "status": 127, "success": False}
    return _completed(proc)


@builtin("exec")
def exec_(thread: Any, cmd: Any = None, *args: Any) -> dict[str, Any]:
    """``exec(cmd, ...args)``: run a program without a shell; ``{stdout, stderr, status,
    success}`` (status 127 when it cannot be started). A single list argument holds the
    whole command line."""
    if type(cmd) is list and not args:
        argv = [text(a) for a in cmd]
    else:
        argv = [text(cmd), *(text(a) for a in args)]
    if not argv or not argv[0]:
        raise fail("exec: command is required")
    return _run(argv, shell=False)


@builtin()
def shell(thread: Any, cmd: Any = None) -> dict[str, Any]:
    """``shell(cmd)``: run ``cmd`` with ``/bin/sh -c``; same result dict as ``exec``."""
    return _run(text(cmd), shell=True)


@builtin()
def platform(thread: Any) -> str:
    """``platform()``: ``"linux"``, ``"macos"``, ``"windows"`` or the raw platform name."""
    p = sys.platform
    if p.startswith("linux"):
        return "linux"
    if p == "darwin":
        return "macos"
    if p in ("win32", "cygwin"):
        return "windows"
    return p


@builtin("exit")
def exit_(thread: Any, code: Any = None) -> None:
    """``exit(code?)``: end the program with status ``code`` (default 0) by raising
    :class:`HarnExit`."""
    raise HarnExit(code if type(code) is int else 0)


# ------------------------------------------------------------------ stdin and TTYs


def _stdin(thread: Any) -> Any:
    mock = getattr(thread.runtime, "stdin_mock", None)
    if mock is not None:
        return mock
    return sys.stdin if sys.stdin is not None else io.StringIO("")


def _read_stdin(thread: Any, name: str, line: bool) -> str:
    from harnpy.security import read_stream_limited

    try:
        return read_stream_limited(_stdin(thread), "stdin", line=line)
    except OSError as e:
        raise fail(f"{name}: {e}") from None


@builtin()
def read_line(thread: Any) -> Any:
    """``read_line()``: next stdin line without its newline, or nil at end of input. A line
    longer than ``HARNPY_MAX_READ_BYTES`` (default 64 MiB) throws ``read_line: stdin has
    more than <n> bytes ...`` (at most the limit + 1 characters are read)."""
    line = clean_text(_read_stdin(thread, "read_line", True))
    if line == "":
        return None
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    return line


@builtin()
def read_stdin(thread: Any) -> Any:
    """``read_stdin()``: the rest of stdin, or nil when nothing is left. More than
    ``HARNPY_MAX_READ_BYTES`` (default 64 MiB) throws ``read_stdin: stdin has more than <n>
    bytes ...`` (at most the limit + 1 characters are read)."""
    data = clean_text(_read_stdin(thread, "read_stdin", False))
    return data if data else None


@builtin()
def mock_stdin(thread: Any, content: Any = None) -> None:
    """``mock_stdin(s)``: make ``read_line``/``read_stdin`` read from ``s``."""
    thread.runtime.stdin_mock = io.StringIO(text(content))


@builtin()
def unmock_stdin(thread: Any) -> None:
    """``unmock_stdin()``: read the real stdin again."""
    thread.runtime.stdin_mock = None


def _is_tty(thread: Any, stream: str) -> bool:
    mock = getattr(thread.runtime, "tty_mock", None)
    if mock and stream in mock:
        return bool(mock[stream])
    if stream == "stdout":
        flag = getattr(thread.runtime, "stdout_isatty", None)
        if type(flag) is bool and flag:
            return True
    handle = {"stdin": sys.stdin, "stdout": sys.stdout, "stderr": sys.stderr}[stream]
    try:
        return bool(handle.isatty())
    except (AttributeError, ValueError):
        return False


@builtin()
def is_stdin_tty(thread: Any) -> bool:
    """``is_stdin_tty()``: whether stdin is a terminal (honours ``mock_tty``)."""
    return _is_tty(thread, "stdin")


@builtin()
def is_stdout_tty(thread: Any) -> bool:
    """``is_stdout_tty()``: whether stdout is a terminal (honours ``mock_tty``)."""
    return _is_tty(thread, "stdout")


@builtin()
def is_stderr_tty(thread: Any) -> bool:
    """``is_stderr_tty()``: whether stderr is a terminal (honours ``mock_tty``)."""
    return _is_tty(thread, "stderr")


@builtin()
def mock_tty(thread: Any, stream: Any = None, value: Any = None) -> None:
    """``mock_tty(stream, is_tty)``: pretend ``stream`` (``stdin``, ``stdout``,
    ``stderr``) is or is not a terminal until ``unmock_tty()``."""
    name = text(stream)
    if name not in ("stdin", "stdout", "stderr"):
        raise fail(f"mock_tty: unknown stream '{name}' (expected stdin, stdout or stderr)")
    rt = thread.runtime
    mock = getattr(rt, "tty_mock", None)
    if mock is None:
        mock = {}
        rt.tty_mock = mock
    mock[name] = value is True
    if name == "stdout":
        if not hasattr(rt, "tty_saved_stdout_isatty"):
            rt.tty_saved_stdout_isatty = getattr(rt, "stdout_isatty", False)
        rt.stdout_isatty = value is True


@builtin()
def unmock_tty(thread: Any) -> None:
    """``unmock_tty()``: drop every ``mock_tty`` override."""
    rt = thread.runtime
    rt.tty_mock = None
    if hasattr(rt, "tty_saved_stdout_isatty"):
        rt.stdout_isatty = rt.tty_saved_stdout_isatty
        del rt.tty_saved_stdout_isatty
