"""The errors of :mod:`harnpy.security` (importable without the rest of the package)."""

from __future__ import annotations

__all__ = ["KeyUnavailable", "SealError"]


class SealError(Exception):
    """A sealed document failed its check, or a document could not be sealed.

    ``str(e)`` / ``e.message`` is one line: which document (the ``what`` given to
    :func:`~harnpy.security.unseal`), which key, and what to do. ``reason`` is one of
    ``"unsealed"`` (no seal), ``"malformed"`` (a seal that cannot be parsed), ``"other_key"``
    (sealed with another key), ``"changed"`` (the content does not match the seal) or
    ``"no_key"`` (:class:`KeyUnavailable`).
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


class KeyUnavailable(SealError):
    """The snapshot key cannot be used: ``HARNPY_SNAPSHOT_KEY`` is too short, or the key
    file cannot be created or read, belongs to another user or can be read by others.
    ``str(e)`` names the file (or the variable) and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "no_key")
