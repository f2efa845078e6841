"""Sealed documents: JSON objects authenticated with HMAC-SHA256 under the snapshot key.

Format (``hs1``): a sealed document is the original JSON object text with one member put in
front, ``"_seal": "hs1:<key id>:<mac>"``::

    {"_seal":"hs1:0123456789abcdef:<64 hex>",<the original members, byte for byte>}

so a sealed file is still valid JSON (readable by ``jq``, by tests, by older tools). The MAC
is HMAC-SHA256 (key: :func:`~harnpy.security.keys.snapshot_key`) over a fixed label and the
*original* bytes (the document without the seal member). :func:`unseal` finds the seal by a
fixed-length prefix match, rebuilds the original bytes and compares MACs in constant time
**before anything in the document is decoded**: a JSON parser never sees unauthenticated
input.

What a seal proves: the bytes were written by a process holding the key (this user on this
machine, or every machine sharing ``HARNPY_SNAPSHOT_KEY``) and were not changed since. It
does not say *which* document they were (a sealed snapshot can be copied or renamed: the
document's own fields say what it is) nor that it is the latest one.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from harnpy.security.errors import SealError
from harnpy.security.keys import KEY_ENV, snapshot_key

__all__ = ["SEAL_FIELD", "is_sealed", "seal", "unseal"]

#: The member name of the seal (always the document's first member).
SEAL_FIELD = "_seal"
_PREFIX = b'{"_seal":"hs1:'
_LABEL = b"harnpy sealed document v1\0"
# prefix, 16 hex key id, ":", 64 hex MAC, closing quote
_SEAL_RE = re.compile(rb'\{"_seal":"hs1:([0-9a-f]{16}):([0-9a-f]{64})"')
_SEAL_LEN = len(_PREFIX) + 16 + 1 + 64 + 1


def _mac(secret: bytes, body: bytes) -> str:
    return hmac.new(secret, _LABEL + body, hashlib.sha256).hexdigest()


def seal(body: bytes) -> bytes:
    """Seal JSON object text ``body`` (bytes starting with ``{``, e.g. from ``orjson.dumps``
    of a dict): returns ``{"_seal":"hs1:<key id>:<mac>",`` + the rest of ``body``.

    ``body`` must not already have a ``_seal`` member (sealing twice is a bug).

    Raises:
        ValueError: ``body`` is not the text of a JSON object, or is already sealed.
        KeyUnavailable: the snapshot key cannot be loaded (a :class:`SealError`).
    """
    if not body.startswith(b"{"):
        raise ValueError("seal(): the body must be the text of a JSON object")
    if body.startswith(_PREFIX):
        raise ValueError("seal(): the document is already sealed")
    key = snapshot_key()
    head = b'{"_seal":"hs1:%s:%s"' % (key.key_id.encode("ascii"), _mac(key.secret, body).encode())
    rest = body[1:]
    if rest.lstrip().startswith(b"}"):
        return head + rest  # an empty object: no member follows the seal
    return head + b"," + rest


def is_sealed(data: bytes) -> bool:
    """Whether ``data`` starts like a sealed document (a cheap test; proves nothing)."""
    return data.startswith(_PREFIX)


def unseal(data: bytes, what: str) -> bytes:
    """Check the seal of ``data`` and return the original document bytes (without the seal
    member), ready to be parsed.

    Nothing in ``data`` is parsed before the MAC matched: the seal is found by a fixed
    prefix, the MAC compared with :func:`hmac.compare_digest`.

    Args:
        data: the sealed document's bytes (e.g. from :func:`~harnpy.security.read_capped`).
        what: how messages name the document (``"snapshot `state.json`"``).

    Raises:
        SealError: one line naming ``what``: ``reason`` ``"unsealed"`` (no seal: written by
            an older harnpy, by hand or by another program), ``"malformed"``, ``"other_key"``
            (sealed with another key: the message names both key ids and the variable to set)
            or ``"changed"`` (edited or damaged after it was written).
        KeyUnavailable: the snapshot key cannot be loaded (a :class:`SealError`).
    """
    if not data.startswith(_PREFIX):
        raise SealError(
            f"{what} is not sealed: harnpy only loads snapshots it wrote and sealed itself "
            "(this one was written by an older harnpy, by hand or by another program, or is "
            "not a snapshot)",
            "unsealed",
        )
    m = _SEAL_RE.match(data, 0, _SEAL_LEN)
    if m is None:
        raise SealError(f"{what} has a malformed seal; refusing to load it", "malformed")
    key_id = m.group(1).decode("ascii")
    mac = m.group(2)
    after = data[_SEAL_LEN:]
    body = b"{" + (after[1:] if after.startswith(b",") else after)
    key = snapshot_key()
    if key_id != key.key_id:
        raise SealError(
            f"{what} was sealed with another key (key id {key_id}; this harnpy uses key "
            f"{key.key_id} from {key.source}): it was written on another machine or by "
            f"another user; set {KEY_ENV} to the key it was written with to load it",
            "other_key",
        )
    if not hmac.compare_digest(mac, _mac(key.secret, body).encode("ascii")):
        raise SealError(
            f"{what} was changed after it was written (its content does not match its seal, "
            f"key id {key_id}): it was edited or damaged; refusing to load it",
            "changed",
        )
    return body
