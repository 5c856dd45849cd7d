"""User-facing errors.

Every error a person can cause (bad file, missing index, empty claim) is a `PerspectError`; the CLI
prints it as one line plus an optional hint and exits 2, instead of a traceback. Anything else is a bug.
"""

from __future__ import annotations


class PerspectError(Exception):
    """An error the user can fix; `hint` says how."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class InputError(PerspectError):
    """A source file (or one record in it) cannot be read; carries file and line for the report."""

    def __init__(
        self,
        path: str,
        reason: str,
        line: int | None = None,
        hint: str | None = None,
        unit: str = "line",
    ):
        if line is None:
            where = str(path)
        elif unit == "line":
            where = f"{path}:{line}"
        else:
            where = f"{path}: {unit} {line}"
        super().__init__(f"{where}: {reason}", hint)
        self.path = str(path)
        self.line = line
        self.reason = reason


class ClaimError(PerspectError):
    """A query the engine refuses (empty or absurdly long)."""


class IndexNotFound(PerspectError):
    """No index of that name in the chosen home."""


class NotInIndex(PerspectError):
    """The index has no such pool, or no such retriever over it."""


class IndexBusy(PerspectError):
    """Another process is writing the same index."""


class IndexDamaged(PerspectError):
    """An index file does not match what its version recorded (or is in a format that could run
    code): refused before any library reads it."""


class ModelError(PerspectError):
    """A model folder is missing, incomplete or incompatible."""


class Cancelled(PerspectError):
    """The caller cancelled the search (the TUI's worker, on a newer claim)."""


class EnvironmentFailure(PerspectError):
    """The machine refused a write: full disk, read-only media, no permission."""


_NO_SPACE = ("no space left", "disk is full", "disk quota")
_READ_ONLY = ("read-only file system", "readonly database", "permission denied")


def environment_error(exc: BaseException, where: object) -> EnvironmentFailure | None:
    """The one-line error for an exception that says the disk is full or cannot be written, from
    whichever library raised it (OSError, sqlite3, shutil.Error, tantivy's ValueError); None for
    anything else (a bug: let it show its traceback)."""
    import errno

    code = getattr(exc, "errno", None)
    text = str(exc).lower()
    if code in (errno.ENOSPC, errno.EDQUOT) or any(s in text for s in _NO_SPACE):
        return EnvironmentFailure(
            f"no space left on the device holding {where}; nothing was changed",
            hint="free some space, or pass --home DIR on a larger disk",
        )
    if code in (errno.EROFS, errno.EACCES, errno.EPERM) or any(s in text for s in _READ_ONLY):
        return EnvironmentFailure(
            f"cannot write to {where} (read-only or no permission); nothing was changed",
            hint="pass --home DIR in a folder you can write (searching a read-only index works)",
        )
    return None
