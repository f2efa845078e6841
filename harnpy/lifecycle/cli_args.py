"""``argparse`` argument types shared by the lifecycle commands (``harnpy worker``,
``workers``, ``waitpoint``) and ``harnpy serve``."""

from __future__ import annotations

__all__ = ["MAX_POSITIVE_INT", "positive_int"]
#: The largest value :func:`positive_int` takes: 2**31 - 1 (as ms, about 24.8 days).
MAX_POSITIVE_INT = 2**31 - 1


def positive_int(text: str) -> int:
    """An ``argparse`` ``type=`` for counts and durations in milliseconds that must be
    between 1 and :data:`MAX_POSITIVE_INT` (``--lease-ms``, ``--poll-ms``...).

    Raises:
        argparse.ArgumentTypeError: ``text`` is not a whole number in that range (argparse
            reports ``harnpy COMMAND: error: argument --X: ...`` and exits with 2).
    """
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    if n > MAX_POSITIVE_INT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_POSITIVE_INT}, not {n}")
    return n
