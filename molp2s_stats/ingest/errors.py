"""The one error type every loader raises for bad input."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError


class InputError(UsageError):
    """Bad input: names the file, the line or row, and what is wrong.

    >>> str(InputError("runs/a.jsonl", "unknown task_id 't9'", where="line 3"))
    "runs/a.jsonl: line 3: unknown task_id 't9'"
    """

    def __init__(
        self, path: str | Path, message: str, *, where: str | None = None, arguments: dict[str, str] | None = None
    ):
        self.path = str(path)
        self.where = where
        super().__init__(
            f"{self.path}: {where}: {message}" if where else f"{self.path}: {message}", arguments=arguments
        )
        self.message = UsageError(message, arguments=arguments).naming({})


class InterruptedAfterCommit(KeyboardInterrupt):
    """Ctrl-C that came after the load's commit: the load is in the database whole.

    A ``KeyboardInterrupt``, so code that stops on Ctrl-C still does; the difference is
    what the database holds (the load, not the database as it was).
    """


def more(count: int) -> str:
    """Suffix telling how many further rows share the same problem."""
    return f" (and {count} more row{'s' if count != 1 else ''})" if count > 0 else ""
