"""Encoding, hashing, UUID and bytes builtins (spec language.md 4.12).

Text arguments are encoded as UTF-8; ``bytes`` arguments are used as they are. Decoders that
produce text decode UTF-8 and replace invalid sequences with U+FFFD. Malformed input to a
decoder throws ``<builtin>: <reason>``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from typing import Any

from harnpy._lazy import lazy_module
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.registry import builtin

_urlparse = lazy_module("urllib.parse")
_uuid = lazy_module("uuid")


def as_bytes(v: Any) -> bytes:
    """``bytes`` unchanged; anything else as the UTF-8 encoding of its text."""
    if type(v) is bytes:
        return v
    return text(v).encode("utf-8")


def _decode_text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


# ------------------------------------------------------------------ base64 / base32 / hex


@builtin()
def base64_encode(thread: Any, s: Any = None) -> str:
    """``base64_encode(s)``: standard alphabet with ``=`` padding."""
    return base64.b64encode(as_bytes(s)).decode("ascii")


@builtin()
def base64_decode(thread: Any, s: Any = None) -> str:
    """``base64_decode(s)``: decoded text; throws on malformed input."""
    try:
        return _decode_text(base64.b64decode(text(s).strip(), validate=True))
    except (binascii.Error, ValueError) as e:
        raise fail(f"base64_decode: invalid base64: {e}") from None


def _unpadded(s: str) -> bytes:
    s = s.strip().rstrip("=")
    return (s + "=" * (-len(s) % 4)).encode("ascii")


@builtin()
def base64url_encode(thread: Any, s: Any = None) -> str:
    """``base64url_encode(s)``: URL-safe alphabet, no padding."""
    return base64.urlsafe_b64encode(as_bytes(s)).decode("ascii").rstrip("=")


@builtin()
def base64url_decode(thread: Any, s: Any = None) -> str:
    """``base64url_decode(s)``: decodes URL-safe base64 with or without padding."""
    try:
        raw = text(s)
        if any(c in raw for c in "+/"):
            raise ValueError("characters outside the URL-safe alphabet")
        return _decode_text(base64.urlsafe_b64decode(_unpadded(raw)))
    except (binascii.Error, ValueError) as e:
        raise fail(f"base64url_decode: invalid base64url: {e}") from None


@builtin()
def base32_encode(thread: Any, s: Any = None) -> str:
    """``base32_encode(s)``: RFC 4648 base32 with padding."""
    return base64.b32encode(as_bytes(s)).decode("ascii")


@builtin()
def base32_decode(thread: Any, s: Any = None) -> str:
    """``base32_decode(s)``: decoded text (padding optional, case-insensitive)."""
    try:
        raw = text(s).strip().rstrip("=").upper()
        return _decode_text(base64.b32decode(raw + "=" * (-len(raw) % 8)))
    except (binascii.Error, ValueError) as e:
        raise fail(f"base32_decode: invalid base32: {e}") from None


@builtin()
def hex_encode(thread: Any, s: Any = None) -> str:
    """``hex_encode(s)``: lowercase hex of the UTF-8 bytes (or of a bytes value)."""
    return as_bytes(s).hex()


@builtin()
def hex_decode(thread: Any, s: Any = None) -> str:
    """``hex_decode(h)``: the text whose bytes are spelled by ``h``; throws on bad hex."""
    try:
        return _decode_text(bytes.fromhex(text(s).strip()))
    except ValueError as e:
        raise fail(f"hex_decode: invalid hex: {e}") from None


# ------------------------------------------------------------------ URLs


@builtin()
def url_encode(thread: Any, s: Any = None) -> str:
    """``url_encode(s)``: percent-encode everything but ``A-Z a-z 0-9 - _ . ~``
    (spaces become ``%20``)."""
    return _urlparse.quote(text(s), safe="")


@builtin()
def url_decode(thread: Any, s: Any = None) -> str:
    """``url_decode(s)``: decode ``%XX`` escapes; ``+`` decodes to a space."""
    return _urlparse.unquote_plus(text(s))


# ------------------------------------------------------------------ hashing


def _digest(name: str) -> Any:
    def fn(thread: Any, s: Any = None) -> str:
        return hashlib.new(name, as_bytes(s)).hexdigest()

    fn.__doc__ = f"``{name}(s)``: lowercase hex {name.upper()} digest of ``s``."
    return fn


for _name in ("sha256", "md5", "sha1", "sha512"):
    builtin(_name)(_digest(_name))


@builtin()
def hmac_sha256(thread: Any, key: Any = None, msg: Any = None) -> str:
    """``hmac_sha256(key, msg)``: lowercase hex HMAC-SHA256."""
    return hmac.new(as_bytes(key), as_bytes(msg), hashlib.sha256).hexdigest()


@builtin()
def hmac_sha256_base64(thread: Any, key: Any = None, msg: Any = None) -> str:
    """``hmac_sha256_base64(key, msg)``: HMAC-SHA256 as standard base64."""
    mac = hmac.new(as_bytes(key), as_bytes(msg), hashlib.sha256).digest()
    return base64.b64encode(mac).decode("ascii")


@builtin()
def constant_time_eq(thread: Any, a: Any = None, b: Any = None) -> bool:
    """``constant_time_eq(a, b)``: equality of two strings/bytes in constant time."""
    return hmac.compare_digest(as_bytes(a), as_bytes(b))


# ------------------------------------------------------------------ UUIDs

_NAMESPACES = {
    "dns": _uuid.NAMESPACE_DNS,
    "url": _uuid.NAMESPACE_URL,
    "oid": _uuid.NAMESPACE_OID,
    "x500": _uuid.NAMESPACE_X500,
}


@builtin(aliases=("uuid_v4",))
def uuid(thread: Any) -> str:
    """``uuid()``: a random (version 4) UUID, lowercase hyphenated."""
    return str(_uuid.uuid4())


@builtin()
def uuid_v5(thread: Any, namespace: Any = None, name: Any = None) -> str:
    """``uuid_v5(ns, name)``: name-based SHA-1 UUID; ``ns`` is ``"dns"``, ``"url"``,
    ``"oid"``, ``"x500"`` or a UUID string. Throws on an unknown namespace."""
    ns_text = text(namespace)
    ns = _NAMESPACES.get(ns_text.lower())
    if ns is None:
        try:
            ns = _uuid.UUID(ns_text)
        except ValueError:
            raise fail(f"uuid_v5: invalid namespace '{ns_text}'") from None
    return str(_uuid.uuid5(ns, text(name)))


@builtin()
def uuid_v7(thread: Any) -> str:
    """``uuid_v7()``: time-ordered UUID (48-bit Unix ms from the runtime clock + random)."""
    ms = thread.runtime.clock.now_ms() & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a = rand >> 68  # 12 bits
    rand_b = rand & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return str(_uuid.UUID(int=value))


@builtin()
def uuid_nil(thread: Any) -> str:
    """``uuid_nil()``: the all-zero UUID."""
    return str(_uuid.UUID(int=0))


@builtin()
def uuid_parse(thread: Any, s: Any = None) -> Any:
    """``uuid_parse(s)``: the canonical lowercase hyphenated form of ``s``, or nil when
    ``s`` is not a UUID."""
    raw = text(s).strip()
    if len(raw) not in (32, 36, 38, 45):
        return None
    try:
        return str(_uuid.UUID(raw))
    except ValueError:
        return None


# ------------------------------------------------------------------ bytes


@builtin()
def bytes_from_string(thread: Any, s: Any = None) -> bytes:
    """``bytes_from_string(s)``: the UTF-8 bytes of ``s``."""
    return as_bytes(s)


@builtin()
def bytes_to_string(thread: Any, b: Any = None) -> str:
    """``bytes_to_string(b)``: UTF-8 decoding (invalid sequences become U+FFFD)."""
    return _decode_text(as_bytes(b))


@builtin()
def bytes_to_hex(thread: Any, b: Any = None) -> str:
    """``bytes_to_hex(b)``: lowercase hex."""
    return as_bytes(b).hex()


@builtin()
def bytes_from_hex(thread: Any, s: Any = None) -> bytes:
    """``bytes_from_hex(h)``: bytes spelled by hex ``h``; throws on bad hex."""
    try:
        return bytes.fromhex(text(s).strip())
    except ValueError as e:
        raise fail(f"bytes_from_hex: invalid hex: {e}") from None


@builtin()
def bytes_len(thread: Any, b: Any = None) -> int:
    """``bytes_len(b)``: number of bytes (UTF-8 length for a string)."""
    return len(as_bytes(b))


@builtin()
def bytes_to_base64(thread: Any, b: Any = None) -> str:
    """``bytes_to_base64(b)``: standard base64 with padding."""
    return base64.b64encode(as_bytes(b)).decode("ascii")


@builtin()
def bytes_from_base64(thread: Any, s: Any = None) -> bytes:
    """``bytes_from_base64(s)``: decoded bytes; throws on malformed input."""
    try:
        return base64.b64decode(text(s).strip(), validate=True)
    except (binascii.Error, ValueError) as e:
        raise fail(f"bytes_from_base64: invalid base64: {e}") from None


@builtin()
def bytes_concat(thread: Any, *parts: Any) -> bytes:
    """``bytes_concat(a, b, ...)``: the bytes of every argument joined."""
    return b"".join(as_bytes(p) for p in parts)


@builtin()
def bytes_slice(thread: Any, b: Any = None, start: Any = None, end: Any = None) -> bytes:
    """``bytes_slice(b, start, end?)``: bytes ``start`` to ``end`` (exclusive), clamped."""
    data = as_bytes(b)
    s = start if type(start) is int else 0
    e = end if type(end) is int else None
    return data[s:e]
