"""The ``molp2s`` app: the root command, how a command is registered, and how an error is said.

A command is registered with ``command``: its help reflows to the terminal, and a user
error (``UsageError``, bad input included, and a database that cannot be used) prints as
one line, ``error: …``, naming the command's flags where the library named its arguments;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import typing
from typing import Annotated

import typer

from ..errors import UsageError
from ..lazy import lazy_import

store = lazy_import("molp2s_stats.store")

app = typer.Typer(
    help="MolP2SBench statistics: load responses, build cohorts, report metrics with family-level uncertainty.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DEBUG_ENV_VAR = "MOLP2S_DEBUG"
_debug_flag = False


@app.callback()
def _entry(
    debug: Annotated[
        bool,
        typer.Option("--debug", help=f"Show the Python traceback behind an error message (or set {DEBUG_ENV_VAR}=1)."),
    ] = False,
) -> None:
    """Before every command: third-party notices known to be harmless stay quiet, and Ctrl-C interrupts."""
    import signal

    global _debug_flag
    _debug_flag = debug  # set on every invocation, so one run's --debug does not outlive it in a test process

    from ..notices import silence_known_notices

    silence_known_notices()
    # A shell script's background job starts with SIGINT ignored, so `kill -INT` would not stop a load
    # there: this process asks for it explicitly (the command wrapper turns it into a message and 130).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def debugging() -> bool:
    return _debug_flag or os.environ.get(DEBUG_ENV_VAR, "") not in ("", "0")


def fail(message: str, code: int = 2) -> None:
    """Say ``error: message`` on stderr and exit with ``code`` (with --debug, the traceback behind it too)."""
    typer.echo(f"error: {message}", err=True)
    if debugging() and sys.exc_info()[0] is not None:
        raise  # the line above, then the traceback that led to it (--debug)
    raise typer.Exit(code)


def flags(function) -> dict[str, str]:
    """A command's parameters by their Python name, each as its flag (``fmt`` → ``--format``): how the
    names a library message gives its arguments become the flags a user typed."""
    function = inspect.unwrap(function)
    names = {}
    for name, hint in typing.get_type_hints(function, include_extras=True).items():
        for extra in getattr(hint, "__metadata__", ()):
            if isinstance(extra, typer.models.OptionInfo):
                # typer.Option("--format", …) in Annotated: the first flag arrives as the default
                first = [extra.default] if isinstance(extra.default, str) and extra.default.startswith("--") else []
                declared = [*first, *(extra.param_decls or ())]
                names[name] = declared[0] if declared else f"--{name.replace('_', '-')}"
    return names


def in_flags(error: UsageError, function) -> str:
    """A library's message in the command's words: each argument it names as the flag a user types."""
    return error.naming(flags(function))


def reflowed(text: str | None) -> str | None:
    """Help text as paragraphs that reflow to the terminal: the docstring's indentation gone and the
    lines of each paragraph joined, blank lines kept between paragraphs (a source line break is not
    a break in the sentence)."""
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.strip().splitlines()) for p in paragraphs if p.strip())


def command(name: str, **options):
    """Register a command whose user errors (``UsageError``, bad input included, and a
    database that cannot be used) print as one line; anything else is a bug and keeps
    its traceback. An interrupt is one line and exit 130."""

    def register(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except KeyboardInterrupt:
                # a load is one transaction, rolled back; other outputs are written whole or not at all
                # (output.replacing): say so, and exit as shells expect of an interrupt
                left = (
                    "nothing was loaded: the database is as it was"
                    if name == "load"
                    else "no output file was left half-written"
                )
                typer.echo(f"interrupted: {name} stopped; {left}", err=True)
                raise typer.Exit(130) from None
            except Exception as exc:  # StoreError is looked up only on failure: store is imported lazily
                if isinstance(exc, UsageError):
                    fail(in_flags(exc, function))
                if isinstance(exc, store.StoreError):
                    fail(str(exc))
                duckdb_module = sys.modules.get("duckdb")
                if duckdb_module is not None and isinstance(exc, duckdb_module.Error):
                    message = store.explain_failure(exc, kwargs.get("db"))
                    if message:
                        fail(message, code=1)
                raise

        options["help"] = reflowed(options.get("help", function.__doc__))
        return app.command(name, **options)(wrapper)

    return register


def main() -> None:  # pragma: no cover
    """The `molp2s` command: an interrupt before a command's own handling starts (while typer parses the
    arguments, say) is a line and status 130 too, not a traceback."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted before the command started; nothing was done\n")
        sys.exit(130)
