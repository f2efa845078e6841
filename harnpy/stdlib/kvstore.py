"""The persistent key-value store: ``store_get/set/delete/list/save/clear`` (Harn's
``builtins.md``, "Persistent store"; spec language.md 3.x names ``store_*`` for shared state).

The store is one JSON object in ``.harn/store.json`` beside the entry script (the working
directory for ``-e`` programs and the REPL); ``HARN_STORE_FILE`` names another file. The
file is created on the first ``store_set`` (its directory 0700, the file 0600), and every
change is written through at once, atomically (a reader or a crash sees the old or the new
object, never a part), under a file lock so that several processes sharing a store do not
lose each other's writes: each operation re-reads the file, so a value another process set
is seen by the next ``store_get``. Values are stored as JSON, encoded as ``json_stringify``
encodes them (structs become dicts, sets lists, closures nil); a NaN or infinite float is
refused with a catchable error naming the builtin. The file is capped at 16 MiB.

This store is the program's own data; it is not part of a snapshot (a resumed program reads
the file as it is then, on the machine it resumes on).
"""

from __future__ import annotations

import json
import os
from typing import Any

from harnpy.security.files import ReadRefused, private_dir, read_capped, write_private
from harnpy.stdlib._util import fail
from harnpy.stdlib.jsonlib import from_json_data, to_json_data
from harnpy.stdlib.registry import builtin

#: Largest store file accepted, in bytes.
MAX_STORE_BYTES = 16 * 1024 * 1024


def store_path(thread: Any) -> str:
    """The store file of ``thread``'s program: ``HARN_STORE_FILE``, else
    ``<entry script's directory>/.harn/store.json`` (the working directory when the program
    has no file)."""
    env = os.environ.get("HARN_STORE_FILE")
    if env:
        return os.path.abspath(env)
    main = getattr(thread.runtime, "main_module", None)
    path = getattr(main, "path", None)
    base = os.getcwd()
    if isinstance(path, str) and path and not path.startswith("<") and os.path.isfile(path):
        base = os.path.dirname(os.path.abspath(path))
    return os.path.join(base, ".harn", "store.json")


def _lock(path: str) -> Any:
    from filelock import FileLock

    private_dir(os.path.dirname(path))
    return FileLock(path + ".lock", mode=0o600)


def _read(name: str, path: str) -> dict[str, Any]:
    try:
        raw = read_capped(path, MAX_STORE_BYTES)
    except FileNotFoundError:
        return {}
    except ReadRefused as exc:
        raise fail(f"{name}: cannot read the store {path}: {exc.strerror}") from None
    except OSError as exc:
        raise fail(f"{name}: cannot read the store {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise fail(f"{name}: the store {path} is not valid JSON (fix or remove it)") from None
    if type(data) is not dict:
        raise fail(f"{name}: the store {path} must hold a JSON object (fix or remove it)")
    return data


def _write(name: str, path: str, data: dict[str, Any]) -> None:
    body = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2).encode("utf-8")
    if len(body) > MAX_STORE_BYTES:
        raise fail(f"{name}: the store would exceed {MAX_STORE_BYTES // (1024 * 1024)} MiB")
    try:
        write_private(path, body, tmp_prefix=".store-")
    except OSError as exc:
        raise fail(f"{name}: cannot write the store {path}: {exc.strerror or exc}") from None


def _key(name: str, key: Any) -> str:
    if type(key) is not str:
        raise fail(f"{name}: key must be a string")
    return key


def _data(name: str, value: Any) -> Any:
    try:
        out = to_json_data(value)
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError):
        raise fail(f"{name}: the value cannot be stored as JSON (NaN or infinite float)") from None
    return out


def _update(name: str, thread: Any, change: Any) -> None:
    path = store_path(thread)
    with _lock(path):
        data = _read(name, path)
        if change(data) is not False:
            _write(name, path, data)


@builtin()
def store_get(thread: Any, key: Any = None) -> Any:
    """``store_get(key)``: the value stored under ``key`` (a string), or nil."""
    k = _key("store_get", key)
    path = store_path(thread)
    if not os.path.exists(path):
        return None
    with _lock(path):
        data = _read("store_get", path)
    return from_json_data(data[k]) if k in data else None


@builtin()
def store_set(thread: Any, key: Any = None, value: Any = None) -> None:
    """``store_set(key, value)``: keep ``value`` (JSON data) under ``key``; written to
    ``.harn/store.json`` at once."""
    k = _key("store_set", key)
    v = _data("store_set", value)

    def change(data: dict[str, Any]) -> None:
        data[k] = v

    _update("store_set", thread, change)


@builtin()
def store_delete(thread: Any, key: Any = None) -> None:
    """``store_delete(key)``: remove ``key`` from the store (no error when it is absent)."""
    k = _key("store_delete", key)
    if not os.path.exists(store_path(thread)):
        return

    def change(data: dict[str, Any]) -> bool:
        return data.pop(k, _MISSING) is not _MISSING

    _update("store_delete", thread, change)


_MISSING = object()


@builtin()
def store_list(thread: Any) -> list[str]:
    """``store_list()``: every key in the store, sorted."""
    path = store_path(thread)
    if not os.path.exists(path):
        return []
    with _lock(path):
        return sorted(_read("store_list", path))


@builtin()
def store_save(thread: Any) -> None:
    """``store_save()``: flush the store to disk. Every change is already written through,
    so this only checks that the store file is readable."""
    path = store_path(thread)
    if os.path.exists(path):
        with _lock(path):
            _read("store_save", path)


@builtin()
def store_clear(thread: Any) -> None:
    """``store_clear()``: remove every key from the store."""
    if not os.path.exists(store_path(thread)):
        return

    def change(data: dict[str, Any]) -> None:
        data.clear()

    _update("store_clear", thread, change)
