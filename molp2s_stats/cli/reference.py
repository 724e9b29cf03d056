"""The command-line reference page (docs/reference.qmd), written from the commands' own help.

Nothing here is typed twice: each command's text is its docstring as ``molp2s CMD --help``
shows it, each option's line is click's own help record (name, type, help, default,
environment variable). The test run writes the page again and compares it with the
committed one, so a changed option or example cannot leave the page behind.

    python -m molp2s_stats.cli.reference docs/reference.qmd
"""

from __future__ import annotations

import sys
from pathlib import Path

HEADER = """---
title: "Command reference"
---

<!-- Written by `python -m molp2s_stats.cli.reference docs/reference.qmd` from each command's --help;
     the tests compare it with a fresh copy, so edit the commands, not this page. -->

Every command of `molp2s`, as its `--help` describes it, and every column its tables can
have. The [command line](cli.qmd) page says what they share (the database, formats, errors,
exit codes).
"""


def _cell(text: str) -> str:
    from ..defaults import DATA

    # a default under the package's own folders reads as the path from the checkout's root, not this machine's
    text = text.replace(f"{DATA.parent}/", "")
    return " ".join(text.split()).replace("|", "\\|")


def _help_paragraphs(text: str) -> list[str]:
    """Docstring paragraphs; an ``Example:`` paragraph becomes a shell block."""
    out = []
    for paragraph in (p.strip() for p in (text or "").split("\n\n")):
        if not paragraph:
            continue
        if paragraph.startswith("Example:"):
            command = " ".join(paragraph[len("Example:") :].split())
            out.append(f"```bash\n{command}\n```")
        else:
            out.append(" ".join(paragraph.split()))
    return out


def reference() -> str:
    import click
    import typer

    from . import app

    group = typer.main.get_command(app)
    root = click.Context(group, info_name="molp2s")
    parts = [HEADER]
    options = [p.get_help_record(root) for p in group.get_params(root)]
    parts.append("## Options of every command\n\n" + _table([o for o in options if o]) + "\n")
    for name, command in group.commands.items():
        context = click.Context(command, info_name=name, parent=root)
        parts.append(f"## molp2s {name}\n")
        parts.append("\n\n".join(_help_paragraphs(command.help)) + "\n")
        parts.append(f"```text\n{command.get_usage(context).strip()}\n```\n")
        records = [p.get_help_record(context) for p in command.get_params(context)]
        parts.append(_table([r for r in records if r and not r[0].startswith("--help")]) + "\n")
    parts.append(_columns())
    return "\n".join(parts)


def _columns() -> str:
    """Every output column and its meaning, from the glossary the tests hold every output to."""
    from ..glossary import COLUMNS

    rows = [
        "## Output columns\n",
        "Every column a command's table can have, in the glossary's words.\n",
        "| column | meaning |",
        "|---|---|",
    ]
    rows += [f"| `{name}` | {_cell(text)} |" for name, text in COLUMNS.items()]
    return "\n".join(rows) + "\n"


def _table(records: list[tuple[str, str]]) -> str:
    if not records:
        return "No options."
    rows = ["| option | what it does |", "|---|---|"]
    rows += [f"| `{_cell(name)}` | {_cell(text)} |" for name, text in records]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = reference()
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
