"""API keys of ``harnpy serve``: who is calling.

Keys come from ``--api-keys FILE`` — TOML, one ``[[key]]`` table per key::

    [[key]]
    user = "alice"
    sha256 = "<hex SHA-256 of the key>"     # the key itself is never written down
    complete_waitpoints = true              # optional: may complete any waitpoint

— or, for development, from ``HARNPY_API_KEYS="alice:KEY1,bob:KEY2"``. A request sends
``Authorization: Bearer KEY``; the SHA-256 of the presented key is compared with every
configured digest in constant time (:func:`hmac.compare_digest`, and all keys are always
compared), so the answer time does not depend on how much of a key matched or which key it
was. With no key configured the server refuses to start unless ``--insecure-no-auth`` is
given, and then every request is user ``anonymous``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import tomllib
from typing import Any

import attrs

__all__ = ["API_KEYS_ENV", "AuthError", "KeyRing", "Principal"]

#: The development key list: ``user:KEY`` pairs separated by commas.
API_KEYS_ENV = "HARNPY_API_KEYS"

_USER = re.compile(r"^[A-Za-z0-9_.@-]{1,128}$")
_HEX = re.compile(r"^[0-9a-f]{64}$")


class AuthError(Exception):
    """The key configuration cannot be used; ``message`` says what to fix."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@attrs.frozen
class Principal:
    """An authenticated caller: ``user`` and whether the key may complete any waitpoint
    (``complete_waitpoints``; every user may complete the waitpoints of its own runs)."""

    user: str
    complete_waitpoints: bool = False


@attrs.frozen
class _Key:
    digest: bytes
    principal: Principal
    #: the key itself when it is known (``HARNPY_API_KEYS``), to keep it out of messages
    plain: str | None = None


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


class KeyRing:
    """The configured keys (module docstring); :meth:`authenticate` maps an
    ``Authorization`` header to a :class:`Principal`."""

    def __init__(self, keys: list[_Key], insecure: bool = False) -> None:
        self.keys = keys
        self.insecure = insecure

    @classmethod
    def load(cls, path: str | None, env: str | None = None, insecure: bool = False) -> KeyRing:
        """Keys from the TOML file ``path`` and the ``HARNPY_API_KEYS`` value ``env``.

        Raises:
            AuthError: an unreadable or malformed file or value, or no key at all without
                ``insecure``.
        """
        keys: list[_Key] = []
        if path is not None:
            keys.extend(_load_file(path))
        if env:
            keys.extend(_parse_env(env))
        if not keys and not insecure:
            raise AuthError(
                "no API keys configured: give --api-keys FILE (TOML [[key]] tables with user "
                f"and sha256) or set {API_KEYS_ENV}=user:KEY,...; --insecure-no-auth serves "
                "without authentication (development only)"
            )
        return cls(keys, insecure=insecure and not keys)

    def authenticate(self, header: str | None) -> Principal | None:
        """The principal of an ``Authorization: Bearer KEY`` header, or None (missing,
        malformed or unknown key). Without keys (``--insecure-no-auth``) everyone is
        ``anonymous``."""
        if self.insecure:
            return Principal("anonymous", complete_waitpoints=True)
        presented = b"\0" * 32
        if header is not None:
            scheme, _, value = header.strip().partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                presented = _digest(value.strip())
        found: Principal | None = None
        for key in self.keys:  # every key is compared: no early exit
            if hmac.compare_digest(presented, key.digest) and found is None:
                found = key.principal
        return found

    def secrets(self) -> tuple[str, ...]:
        """The keys known in clear (``HARNPY_API_KEYS``): never stored in a failure
        message."""
        return tuple(k.plain for k in self.keys if k.plain)


#: The largest API key file read (bytes): thousands of keys.
KEY_FILE_CAP = 1024 * 1024


def _load_file(path: str) -> list[_Key]:
    from harnpy.security import read_capped

    try:
        # a regular file of at most 1 MiB: a FIFO or a device is refused, not waited on
        data = tomllib.loads(read_capped(path, KEY_FILE_CAP).decode("utf-8"))
    except OSError as e:
        raise AuthError(f"cannot read the API key file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise AuthError(f"the API key file {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise AuthError(f"the API key file {path} is not valid TOML: {e}") from None
    tables = data.get("key")
    if not isinstance(tables, list) or not tables:
        raise AuthError(f"the API key file {path} has no [[key]] tables")
    out: list[_Key] = []
    for i, t in enumerate(tables, 1):
        where = f"{path}: [[key]] #{i}"
        if not isinstance(t, dict):
            raise AuthError(f"{where} is not a table")
        unknown = set(t) - {"user", "sha256", "complete_waitpoints"}
        if unknown:
            raise AuthError(f"{where}: unknown field {sorted(unknown)[0]!r}")
        user, digest = t.get("user"), t.get("sha256")
        if not isinstance(user, str) or not _USER.match(user):
            raise AuthError(f"{where}: user must be 1-128 letters, digits or _.@-")
        if not isinstance(digest, str) or not _HEX.match(digest.lower()):
            raise AuthError(
                f"{where}: sha256 must be the 64 hex digits of the key's SHA-256 "
                "(printf %s KEY | sha256sum)"
            )
        allowed: Any = t.get("complete_waitpoints", False)
        if type(allowed) is not bool:
            raise AuthError(f"{where}: complete_waitpoints must be true or false")
        out.append(_Key(bytes.fromhex(digest.lower()), Principal(user, allowed)))
    return out


def _parse_env(value: str) -> list[_Key]:
    out: list[_Key] = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        user, sep, key = part.partition(":")
        if not sep or not _USER.match(user) or not key:
            raise AuthError(
                f"{API_KEYS_ENV}: each entry must be user:KEY (user: letters, digits or _.@-); "
                f"got an entry for {user or '(empty)'!r}"
            )
        if len(key) < 8:
            raise AuthError(f"{API_KEYS_ENV}: the key of {user} is shorter than 8 characters")
        out.append(_Key(_digest(key), Principal(user), key))
    return out


def env_keys() -> str | None:
    """The ``HARNPY_API_KEYS`` value, or None."""
    return os.environ.get(API_KEYS_ENV) or None
