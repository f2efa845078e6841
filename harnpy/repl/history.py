"""The REPL history file (``~/.harnpy/repl_history``)."""

from __future__ import annotations

import os
from collections.abc import Callable

HISTORY_LIMIT = 1000


class HistoryFile:
    """The REPL history file (prompt-toolkit's ``FileHistory`` format: ``# time`` lines,
    then the entry's lines each prefixed with ``+``).

    Problems never stop the REPL: a file that cannot be read or decoded, or a folder that
    cannot be written, produce one warning through ``warn`` and the history then lives
    in memory only. At most :data:`HISTORY_LIMIT` entries are loaded.
    """

    def __init__(self, path: str | None, warn: Callable[[str], None]) -> None:
        self.path = path
        self.warn = warn
        self.writable = path is not None

    def load(self) -> list[str]:
        """Entries, oldest first (empty when there is no usable file: missing, not a
        regular file, over ``HARNPY_MAX_READ_BYTES`` or not UTF-8, the last three with a
        warning; :func:`harnpy.security.read_limited`)."""
        if self.path is None or not os.path.exists(self.path):
            return []
        from harnpy.security import ReadRefused, read_limited

        try:
            text = read_limited(self.path).decode("utf-8")
        except ReadRefused as e:
            self.warn(f"cannot read the history file ({e}); history will not be saved")
            self.writable = False
            return []
        except (OSError, UnicodeDecodeError) as e:
            self.warn(
                f"cannot read the history file {self.path} ({_reason(e)}); history will not be saved"
            )
            self.writable = False
            return []
        entries: list[str] = []
        lines: list[str] = []
        bad = 0
        for line in text.split("\n"):
            if line.startswith("+"):
                lines.append(line[1:])
                continue
            if lines:
                entries.append("\n".join(lines))
                lines = []
            if line and not line.startswith("#"):
                bad += 1
        if lines:
            entries.append("\n".join(lines))
        if bad:
            self.warn(
                f"the history file {self.path} looks damaged ({bad} unreadable lines skipped)"
            )
        return entries[-HISTORY_LIMIT:]

    def store(self, entry: str) -> None:
        """Append one entry (creating the folder); a failure warns once."""
        if not self.writable or self.path is None:
            return
        import datetime

        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(f"\n# {datetime.datetime.now()}\n")
                for line in entry.split("\n"):
                    fh.write(f"+{line}\n")
        except OSError as e:
            self.writable = False
            self.warn(
                f"cannot write the history file {self.path} ({_reason(e)}); history is kept in memory only"
            )


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError):
        return e.strerror or type(e).__name__
    if isinstance(e, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(e)


def default_history_path() -> str | None:
    """``~/.harnpy/repl_history`` (``$HARNPY_HISTORY`` overrides; None when no home)."""
    env = os.environ.get("HARNPY_HISTORY")
    if env:
        return env
    home = os.path.expanduser("~")
    if not home or home == "~":
        return None
    return os.path.join(home, ".harnpy", "repl_history")
