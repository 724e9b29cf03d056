"""The error a user can act on, as opposed to a bug.

``UsageError`` is a request the user can fix: a bad option value, an unknown name,
nothing to compute for what was asked, bad input data. The command line prints it as
one line (``error: …``, exit 2); any other exception is a bug and keeps its traceback.
It is a ``ValueError``, so code that catches ``ValueError`` still does.
"""

from __future__ import annotations


class UsageError(ValueError):
    """A request the user can fix; its message says what to change."""
