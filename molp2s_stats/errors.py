"""The error a user can act on, as opposed to a bug.

``UsageError`` is a request the user can fix: a bad option value, an unknown name,
nothing to compute for what was asked, bad input data. The command line prints it as
one line (``error: …``, exit 2); any other exception is a bug and keeps its traceback.
It is a ``ValueError``, so code that catches ``ValueError`` still does.
"""

from __future__ import annotations


class UsageError(ValueError):
    """A request the user can fix; its message says what to change."""


def unknown_name(kind: str, option: str, names: list[str], known: list[str]) -> str:
    """One line for names that are not among ``known``: the known ones they begin or are closest to,
    as the option to type, then the list.

    >>> unknown_name("channel", "--channel", ["dipol"], ["dipole_norm", "dipole_vector", "gap"])
    "unknown channel 'dipol'; did you mean --channel dipole_norm or --channel dipole_vector? known: dipole_norm, dipole_vector, gap"
    """
    import difflib

    close = dict.fromkeys(match for name in names
                          for match in ([k for k in known if name and k.startswith(name)]
                                        + difflib.get_close_matches(name, known, n=2))[:3])
    what = f"unknown {kind} {names[0]!r}" if len(names) == 1 else f"unknown {kind}s {', '.join(map(repr, names))}"
    hint = f"did you mean {' or '.join(f'{option} {c}' for c in close)}? " if close else ""
    return f"{what}; {hint}known: {', '.join(known)}"


def require_known(kind: str, option: str, names: list[str | None], known: list[str]) -> None:
    """Refuse the names (None: not given) that are not among ``known``, with ``unknown_name``'s line.

    >>> require_known("metric", "--metric", ["pgr", None], ["pgr", "cfr"])
    """
    unknown = [name for name in names if name is not None and name not in known]
    if unknown:
        raise UsageError(unknown_name(kind, option, unknown, known))
