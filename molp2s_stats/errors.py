"""The error a user can act on, as opposed to a bug.

``UsageError`` is a request the user can fix: a bad argument, an unknown name, nothing
to compute for what was asked, bad input data. The command line prints it as one line
(``error: …``, exit 2); any other exception is a bug and keeps its traceback. It is a
``ValueError``, so code that catches ``ValueError`` still does.

The library says what is wrong in its own words: the argument, not the command-line
flag a user of the command line would have typed. A message that names an argument
writes it as a field, ``{name}``, with the words that stand for it; a front end that
names its arguments otherwise (the command line's flags) says the same in its names.
"""

from __future__ import annotations

from collections.abc import Mapping


class UsageError(ValueError):
    """A request the user can fix; its message says what to change.

    ``arguments`` maps each ``{field}`` of the message to the words that name it here;
    ``naming`` says the message with other names for some of them.

    >>> error = UsageError("{max_tokens} must be at least 1", arguments={"max_tokens": "max_tokens"})
    >>> str(error)
    'max_tokens must be at least 1'
    >>> error.naming({"max_tokens": "--max-tokens"})
    '--max-tokens must be at least 1'
    """

    def __init__(self, message: str, *, arguments: Mapping[str, str] | None = None):
        self.template = message
        self.arguments = dict(arguments or {})
        super().__init__(self.naming({}))

    def naming(self, names: Mapping[str, str]) -> str:
        """The message, each argument named by ``names`` where it has a name there, else by its own words."""
        text = self.template
        for field, words in self.arguments.items():
            text = text.replace("{" + field + "}", names.get(field, words))
        return text


def unknown_name(kind: str, option: str | None, names: list[str], known: list[str]) -> str:
    """One line for names that are not among ``known``: the known ones they begin or are closest to,
    as ``option`` would be typed (the command line's flag) or, without one, quoted; then the list.

    >>> unknown_name("channel", "--channel", ["dipol"], ["dipole_norm", "dipole_vector", "gap"])
    "unknown channel 'dipol'; did you mean --channel dipole_norm or --channel dipole_vector? known: dipole_norm, dipole_vector, gap"
    >>> unknown_name("metric", None, ["pgrr"], ["pgr", "cfr"])
    "unknown metric 'pgrr'; did you mean 'pgr'? known: pgr, cfr"
    """
    import difflib

    close = dict.fromkeys(
        match
        for name in names
        for match in ([k for k in known if name and k.startswith(name)] + difflib.get_close_matches(name, known, n=2))[
            :3
        ]
    )
    what = f"unknown {kind} {names[0]!r}" if len(names) == 1 else f"unknown {kind}s {', '.join(map(repr, names))}"
    typed = (lambda c: f"{option} {c}") if option else repr
    hint = f"did you mean {' or '.join(typed(c) for c in close)}? " if close else ""
    return f"{what}; {hint}known: {', '.join(known)}"


def require_known(kind: str, option: str | None, names: list[str | None], known: list[str]) -> None:
    """Refuse the names (None: not given) that are not among ``known``, with ``unknown_name``'s line.

    >>> require_known("metric", None, ["pgr", None], ["pgr", "cfr"])
    """
    unknown = [name for name in names if name is not None and name not in known]
    if unknown:
        raise UsageError(unknown_name(kind, option, unknown, known))
