"""The errors of :mod:`harnpy.store` (one line each, naming the store and what to do)."""

from __future__ import annotations

__all__ = [
    "CheckpointTooLarge",
    "ClaimRefused",
    "CorruptRecord",
    "Fenced",
    "SchemaTooNew",
    "StoreError",
    "StoreUnavailable",
    "TimerWaitpoint",
]


class StoreError(Exception):
    """The store cannot do what was asked; ``str(e)`` / ``e.message`` is one line naming the
    store (its URL with any password masked) and what to do.

    ``kind`` classifies it: ``config`` (a URL harnpy cannot use), ``unreachable``, ``auth``,
    ``newer_schema``, ``corrupt`` (a stored row that fails validation), ``too_large`` (a
    document over the cap), ``io`` (an I/O or database error), ``conflict`` (an id or key
    already taken), ``claim`` / ``fenced`` (see the subclasses).
    """

    def __init__(self, message: str, kind: str = "io") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


class StoreUnavailable(StoreError):
    """The store cannot be reached or refused our credentials (``kind`` ``unreachable`` /
    ``auth``)."""


class SchemaTooNew(StoreError):
    """The database was migrated by a newer harnpy (its schema version is above the one this
    harnpy knows); nothing is changed. ``found`` / ``known`` are the two versions."""

    def __init__(self, message: str, found: int, known: int) -> None:
        super().__init__(message, "newer_schema")
        self.found = found
        self.known = known


class CorruptRecord(StoreError):
    """A stored row failed validation when it was read (not JSON, not an object, a seal or
    hash that does not match...). The row is left as it is."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "corrupt")


class CheckpointTooLarge(StoreError):
    """A document is over the store's cap (4 MiB for checkpoints and completion snapshots);
    nothing was written. ``size`` / ``cap`` in bytes."""

    def __init__(self, message: str, size: int, cap: int) -> None:
        super().__init__(message, "too_large")
        self.size = size
        self.cap = cap


class ClaimRefused(StoreError):
    """A checkpoint could not be claimed: it is not parked at the expected park (``reason``
    ``changed``; ``status`` is what it is now), another live process holds it (``busy``;
    ``owner`` describes the holder), or there is no such checkpoint (``missing``)."""

    def __init__(
        self, message: str, reason: str, status: str | None = None, owner: object = None
    ) -> None:
        super().__init__(message, "claim")
        self.reason = reason
        self.status = status
        self.owner = owner


class Fenced(StoreError):
    """A commit was refused because the claim it was made under is no longer the current one
    (its lease expired and another process took the work over): nothing was written."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "fenced")


class TimerWaitpoint(StoreError):
    """A wait's own timer waitpoint (metadata ``kind: "timeout"``) was to be completed or
    cancelled by hand: it fires by itself on the store clock, and finishing it would leave
    the wait without its timeout. Nothing changed (``kind`` ``timer``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "timer")
