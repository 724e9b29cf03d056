"""The command line sits on top, and only parses, calls and prints (issue 46).

Library errors speak in the library's words, never in the command line's flags: a Python user
calling ``metrics_from_db`` is not told about a ``--metric`` they never typed. The command line
reads and writes nothing through SQL of its own, calls no private function of another module, and
nothing below it imports it. Its help reflows to the terminal: a sentence is never broken where
the source line happened to end.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import molp2s_stats
from molp2s_stats.cli import app
from molp2s_stats.cli.core import reflowed

PACKAGE = Path(molp2s_stats.__file__).parent
CLI = PACKAGE / "cli"
LIBRARY = sorted(p for p in PACKAGE.rglob("*.py") if CLI not in p.parents)
COMMANDS = sorted(p for p in CLI.glob("*.py"))

# a flag: two dashes and a letter, not inside a word (`--metric`, not SQL's `a--b` or an em-rule)
FLAG = re.compile(r"(?<![\w-])--[a-z]")
# `molp2s load --benchmark …` in backticks is a command line to type, quoted whole: not a flag of this call
QUOTED = re.compile(r"`[^`]*`")


def _text(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's with ``{}`` where a value goes."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
    return None


def flags_in_raised_messages(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal inside a ``raise`` that names a command-line flag."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        inside = ast.walk(node.exc)
        parts = {
            id(part) for joined in ast.walk(node.exc) if isinstance(joined, ast.JoinedStr) for part in joined.values
        }  # an f-string is read whole, its literal parts with it
        for inner in inside:
            text = None if id(inner) in parts else _text(inner)
            if text is not None and FLAG.search(QUOTED.sub("", text)):
                found.append((inner.lineno, text))
    return found


def test_the_rule_finds_a_flag_and_lets_the_rest_be():
    assert flags_in_raised_messages('raise ValueError("give --fraction or --families")')
    assert flags_in_raised_messages('raise UsageError(unknown_name("model", "--model", [m], known))')
    assert flags_in_raised_messages('raise InputError(p, f"{n} models; give --model", where=w)')
    assert not flags_in_raised_messages('raise UsageError("give {fraction}", arguments={"fraction": "a fraction"})')
    assert not flags_in_raised_messages('raise StoreError(f"{p}: run `molp2s load --benchmark DIR --db {p}`")')
    assert not flags_in_raised_messages('raise ValueError("a -- b, 1--2")')
    assert not flags_in_raised_messages('message = "--metric"')  # not raised: advice, a docstring, argparse


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_library_error_names_a_command_line_flag(path):
    found = flags_in_raised_messages(path.read_text(encoding="utf-8"))
    assert not found, (
        f"{path.relative_to(PACKAGE)} raises errors in the command line's flags; say it in the "
        "library's words (an argument as a {field}, see errors.UsageError), the CLI maps them: "
        + "; ".join(f"line {line}: {text!r}" for line, text in found)
    )


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_below_the_command_line_imports_it(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = f"{base}.{node.module}" if node.level else node.module
            names = [module or base] + [f"{module or base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        assert not any(n == "molp2s_stats.cli" or n.startswith("molp2s_stats.cli.") for n in names), (
            f"{path.relative_to(PACKAGE)}:{node.lineno} imports the command line"
        )


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.name)
def test_the_command_line_runs_no_sql_and_calls_nothing_private(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            assert node.func.attr not in ("sql", "execute", "executemany"), (
                f"cli/{path.name}:{node.lineno}: a query in the command line; put it behind a function of the library"
            )
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            assert not private, f"cli/{path.name}:{node.lineno}: {node.value.id}.{node.attr} is private to its module"
        if isinstance(node, ast.ImportFrom) and node.level and node.module:  # from ..x import _y
            assert not any(a.name.startswith("_") for a in node.names), f"cli/{path.name}:{node.lineno}"


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.name)
def test_every_module_of_the_command_line_is_short(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 400, f"cli/{path.name}: split it by stage"


# --- help that reflows ---------------------------------------------------------------------------


def test_reflowed_joins_the_lines_of_a_paragraph_and_keeps_the_paragraphs():
    docstring = """First line
    goes on here.

        Second paragraph, indented in the source,
        on two lines.

    Example: molp2s ranks --metric pgr
    """
    assert reflowed(docstring) == (
        "First line goes on here.\n\nSecond paragraph, indented in the source, on two "
        "lines.\n\nExample: molp2s ranks --metric pgr"
    )


def test_ranks_help_reflows_to_an_80_column_terminal():
    width = 80
    result = CliRunner().invoke(app, ["ranks", "--help"], env={"COLUMNS": str(width), "TERMINAL_WIDTH": str(width)})
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.output.splitlines()]
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    # the description: after the usage line, up to the first box; paragraphs between blank lines
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("╭"))
    paragraphs = [p.splitlines() for p in "\n".join(lines[start:end]).strip().split("\n\n")]
    source = typer.main.get_command(app).commands["ranks"].help
    assert [" ".join(" ".join(p).split()) for p in paragraphs] == source.split("\n\n")
    for paragraph in paragraphs:
        for line, following in zip(paragraph, paragraph[1:]):
            # a line ends early only where the next word would not have fitted on it
            assert len(line) + 1 + len(following.split()[0]) > width - 4, (
                f"a sentence broken by a source line break:\n{line}\n{following}"
            )
    assert len(paragraphs) >= 3 and any(len(p) > 1 for p in paragraphs), textwrap.indent(result.output, "  ")


def test_a_library_argument_is_said_as_the_commands_flag():
    import sys

    from molp2s_stats.cli.core import flags, in_flags
    from molp2s_stats.errors import UsageError

    prompts_command = sys.modules["molp2s_stats.cli.load"].prompts_command
    assert flags(prompts_command)["fmt"] == "--format"
    error = UsageError("{max_tokens} must be at least 1", arguments={"max_tokens": "max_tokens"})
    assert str(error) == "max_tokens must be at least 1"
    assert in_flags(error, prompts_command) == "--max-tokens must be at least 1"
