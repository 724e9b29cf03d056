"""The fenced blocks of the README and the docs pages, as the docs test runs them
(tests/docs/test_docs.py) and the help test looks them up (tests/cli/test_cli_help.py)."""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

from tests.support import ROOT

DOCS = ROOT / "docs"
DOCUMENTS = [ROOT / "README.md", *sorted(DOCS.glob("*.qmd"))]
SKIP = "# not run by the docs test:"
_FENCE = re.compile(r"^(`{3,})\s*(\{?[\w.-]*\}?)[^\n]*$")


@dataclasses.dataclass
class Block:
    document: Path
    line: int  # 1-based line of the opening fence
    language: str  # bash | python | cell (a page's ```{python}) | text | other
    text: str
    output: str | None = None  # the ```text block shown right after it

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"

    @property
    def skipped(self) -> str | None:
        first = self.text.lstrip().splitlines()[0] if self.text.strip() else ""
        return first[len(SKIP) :].strip() if first.startswith(SKIP) else None


def read_blocks(path: Path) -> list[Block]:
    """Fenced blocks in order; a ```text block directly after another block is that block's output."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index, last_end = 0, -10
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, info = match.group(1), match.group(2).strip("{}").lower()
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = "\n".join(lines[index + 1 : end])
        language = {"bash": "bash", "sh": "bash", "shell": "bash", "text": "text"}.get(info, "other")
        if info == "python":
            language = "cell" if match.group(2).startswith("{") else "python"
        only_blank_between = all(not line.strip() for line in lines[last_end + 1 : index])
        if language == "text" and blocks and only_blank_between and blocks[-1].language in ("bash", "python"):
            blocks[-1].output = body
        else:
            blocks.append(Block(path, index + 1, language, body))
        last_end = end
        index = end + 1
    return blocks


def typed_commands(block: Block) -> list[list[str]]:
    """The commands a ``bash`` block types, as the shell splits them into words (comments left out; a
    line ending in a backslash goes on on the next). A line the shell's quoting rules cannot split
    alone (part of a quoted text over several lines) is left out."""
    commands, pending = [], ""
    for line in block.text.splitlines():
        line = pending + line
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        if words:
            commands.append(words)
    return commands


def documents_run() -> list[Path]:
    """The documents whose blocks the docs test runs: all but the command reference, whose examples
    the help test runs."""
    return [d for d in DOCUMENTS if d.name != "reference.qmd"]
