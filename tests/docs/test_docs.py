"""The README and the documentation site run as written, and their links lead somewhere.

Every ```bash and ```python block of README.md and docs/*.qmd is executed in order, one
document at a time, on the default data: shell blocks in a fresh folder that holds the
repository's `data/` and `docs/` (as a reader's checkout does), with this environment's
`molp2s` first on PATH (served warm: each command forked from an interpreter that has
imported the package, tests/support/warm_cli.py); Python blocks in one namespace per
document; a page's executable cells (```{python}) in the docs folder, as Quarto runs them.
A ```text block right after a block is the output that block shows, and must still be what
it prints: lines are compared with their runs of spaces collapsed, and a line `...` stands
for any number of lines.

A block whose first line is `# not run by the docs test: <reason>` is skipped with that
reason (a block that needs the network, a GPU, a model provider's key, or that is the test
run itself). The command reference (docs/reference.qmd) is written from the commands' own
help by molp2s_stats.cli.reference; here it must equal a fresh copy, and its examples are run by
tests/cli/test_cli_help.py in the order they depend on one another.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from molp2s_stats.cli import reference
from molp2s_stats.report import render
from tests.support import ROOT
from tests.support.docs_blocks import DOCS, DOCUMENTS, Block, documents_run, read_blocks
from tests.support.warm_cli import warm_jupyter_path


def _normal(line: str) -> str:
    return " ".join(line.split())


def shows(expected: str, actual: str) -> bool:
    """Does ``actual`` print what ``expected`` shows? Lines compared with their spaces collapsed;
    a line ``...`` matches any number of lines, and ``...`` inside a line any text (a file name
    with a date in it, a count that depends on the file)."""
    want = [_normal(line) for line in expected.strip("\n").splitlines()]
    have = [_normal(line) for line in actual.strip("\n").splitlines()]

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(have)
        if want[i] == "...":
            return match(i + 1, j) or (j < len(have) and match(i, j + 1))
        return j < len(have) and same_line(want[i], have[j]) and match(i + 1, j + 1)

    def same_line(shown: str, printed: str) -> bool:
        if "..." not in shown:
            return shown == printed
        return re.fullmatch(".*".join(re.escape(part) for part in shown.split("...")), printed) is not None

    return match(0, 0)


def test_the_output_matcher():
    assert shows("a  b\n...\nz", "a b\nc\nd\nz\n")
    assert shows("a\n...\nz", "a\nz")
    assert not shows("a\n...\nz", "a\ny")
    assert not shows("a\nb", "a\nb\nc")
    assert shows("logs/..._x.eval: 5 rows", "logs/2026-12-04_x.eval: 5 rows")
    assert not shows("logs/..._x.eval: 5 rows", "logs/2026_x.eval: 6 rows")


def test_blocks_and_their_outputs_are_read(tmp_path):
    page = tmp_path / "page.qmd"
    page.write_text(
        "Text\n\n```bash\necho hi\n```\n\n```text\nhi\n```\n\n```{python}\n#| eval: false\nx = 1\n```\n"
        "\n````python\nprint('```')\n````\n"
    )
    blocks = read_blocks(page)
    assert [(b.language, b.output) for b in blocks] == [("bash", "hi"), ("cell", None), ("python", None)]
    assert blocks[0].line == 3 and blocks[2].text == "print('```')"


def _session(tmp_path: Path, commands: Path) -> tuple[Path, dict[str, str]]:
    """A fresh folder with the checkout's data/ and docs/, and an environment whose PATH starts with
    ``commands`` (the warm `molp2s`), then this environment's own commands."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    for name in ("data", "docs"):
        (folder / name).symlink_to(ROOT / name)
    path = os.pathsep.join([str(commands), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "JUPYTER_PATH": warm_jupyter_path(commands)}
    env.pop("MOLP2S_DB", None)
    env.pop("MOLP2S_FIT", None)
    return folder, env


# Nine documents begin the same way, the default data loaded into a fresh folder (about 10 s each).
# That load runs once a test run, typed as the documents type it, in a folder like theirs; a block
# that starts with it, in a folder without that database yet, gets a copy of the database it wrote
# and what it printed, and runs the rest of its lines itself. What a document shows of the load is
# still compared with what the command printed.
_DEFAULT_LOAD = re.compile(r"molp2s load --benchmark data/benchmark --responses data/responses(?: --db (\S+))?")


@pytest.fixture(scope="session")
def default_load(shared, warm_commands) -> tuple[Path, str]:
    """(the database, what the command printed) of the default data's load, run once a test run."""

    def build(root: Path) -> None:
        folder, env = _session(root, warm_commands)
        (root / "printed.txt").write_text(
            _run_bash(
                "molp2s load --benchmark data/benchmark --responses data/responses", folder, env, "the default load"
            )
        )

    root = shared("docs-default-load", build)
    return root / "checkout" / "molp2s.duckdb", (root / "printed.txt").read_text()


def _run_bash(text: str, folder: Path, env: dict[str, str], where: str) -> str:
    """What ``text`` printed (its output and errors, as a terminal shows them), run with bash -e in ``folder``."""
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", text],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{text}\n{done.stdout[-3000:]}"
    return done.stdout


def _shared_load(block: Block, folder: Path, request) -> tuple[str, str]:
    """(what the block's first line printed, the lines left to run) where that line is the default load
    into a database not there yet; ("", the whole block) otherwise."""
    first, _, rest = block.text.partition("\n")
    load = _DEFAULT_LOAD.fullmatch(first.split("#", 1)[0].strip())
    target = folder / (load.group(1) or "molp2s.duckdb") if load else None
    if target is None or target.exists():
        return "", block.text
    database, printed = request.getfixturevalue("default_load")
    shutil.copy(database, target)
    return printed, rest


def _cell_options(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#\|\s*([\w-]+):\s*(.+?)\s*$", text, flags=re.MULTILINE))


@pytest.mark.parametrize("document", documents_run(), ids=lambda d: str(d.relative_to(ROOT)))
def test_every_block_runs_and_shows_what_it_prints(document, tmp_path, monkeypatch, request, warm_commands):
    folder, env = _session(tmp_path, warm_commands)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.delenv("MOLP2S_DB", raising=False)
    monkeypatch.delenv("MOLP2S_FIT", raising=False)
    namespace: dict = {"__name__": "__docs__"}
    cells: dict = {"__name__": "__docs__"}
    for block in read_blocks(document):
        if block.language not in ("bash", "python", "cell") or block.skipped is not None:
            continue
        if block.language == "bash":
            printed, text = _shared_load(block, folder, request)
            if text.strip():
                printed += _run_bash(text, folder, env, block.where)
        else:
            if block.language == "cell" and _cell_options(block.text).get("eval") == "false":
                continue
            monkeypatch.chdir(DOCS if block.language == "cell" else folder)
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                try:
                    exec(compile(block.text, block.where, "exec"), cells if block.language == "cell" else namespace)
                except Exception as exc:
                    raise AssertionError(f"{block.where}: {type(exc).__name__}: {exc}\n{block.text}") from exc
            printed = buffer.getvalue()
        if block.output is not None:
            assert shows(block.output, printed), (
                f"{block.where}: the output shown is no longer what it prints\n"
                f"--- shown\n{block.output}\n--- printed\n{printed}"
            )


def _links(path: Path) -> list[tuple[int, str]]:
    found = []
    inside = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if not inside:
            found += [(number, target) for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line)]
    return found


def _anchors(path: Path) -> set[str]:
    ids = set()
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
        elif not inside and line.startswith("#"):
            text = line.lstrip("#").strip()
            explicit = re.search(r"\{#([\w-]+)\}\s*$", text)
            ids.add(explicit.group(1) if explicit else render.pandoc_identifier(text))
    return ids


@pytest.mark.parametrize("document", DOCUMENTS + [ROOT / "CHANGELOG.md"], ids=lambda d: str(d.relative_to(ROOT)))
def test_internal_links_lead_to_a_file_and_heading(document):
    broken = []
    for number, target in _links(document):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto: are not ours to check offline
            continue
        file, _, anchor = target.partition("#")
        resolved = (document.parent / file).resolve() if file else document
        if not resolved.exists():
            broken.append(f"{document.name}:{number}: {target} (no such file)")
        elif anchor and resolved.suffix in (".md", ".qmd") and anchor not in _anchors(resolved):
            broken.append(f"{document.name}:{number}: {target} (no heading #{anchor} in {resolved.name})")
    assert not broken, "\n".join(broken)


def _readme_section(heading: str) -> str:
    """The README's section under ``## heading``, up to the next section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_short_and_gives_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    section = _readme_section("Two commands")
    commands = [line.split("#")[0].strip() for line in section.split("```bash", 1)[1].split("```", 1)[0].splitlines()]
    assert [c for c in commands if c] == ["make report", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^report:", makefile, re.MULTILINE) and re.search(r"^test:", makefile, re.MULTILINE)
    ci = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert ci[-1].endswith("make test"), ci


def test_the_readme_leaves_measured_figures_to_the_performance_page():
    """The README says in words how large a leaderboard fits and links to the Performance page, which
    computes the figures from benchmarks/results/ (tests/docs/test_performance_page.py): no table of
    timings, no seconds, nothing to edit by hand after a benchmark run."""
    section = _readme_section("How large a leaderboard")
    assert "(docs/performance.qmd#" in section
    assert not re.search(r"^\|", section, re.MULTILINE), "a table of measured figures: link to the page instead"
    assert not re.search(r"\d s\b|cells\^|\d+ of \d+ (fits|sizes)", section), section


def test_the_command_reference_is_the_commands_own_help():
    committed = (DOCS / "reference.qmd").read_text(encoding="utf-8")
    assert committed == reference.reference(), (
        "docs/reference.qmd differs from the commands' help: run `python -m molp2s_stats.cli.reference docs/reference.qmd`"
    )


def test_the_docs_site_lists_every_page_in_its_navigation():
    config, pages = render.read_project(DOCS)
    sources = {page.source for page in pages}
    assert sources == {p.name for p in DOCS.glob("*.qmd")}
    assert {href for href, _ in render.navigation(DOCS, config)} == sources


SKIPPED = [
    b
    for d in DOCUMENTS
    if d.name != "reference.qmd"
    for b in read_blocks(d)
    if b.language in ("bash", "python") and b.skipped is not None
]


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: b.where)
def test_a_block_left_out_says_why(block):
    """Each block the docs test does not run is reported as skipped, with the reason its first line gives."""
    assert len(block.skipped) > 10, f"{block.where}: say why the block is not run"
    pytest.skip(f"{block.where}: {block.skipped}")


def test_the_citation_file_names_this_version_and_the_benchmark():
    """CITATION.cff (GitHub's "Cite this repository") holds the fields the Citation File Format 1.2
    requires, the version pyproject.toml declares, and the benchmark among its references."""
    import tomllib

    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert {"cff-version", "message", "title", "authors"} <= set(citation)
    assert citation["cff-version"] == "1.2.0"
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert str(citation["version"]) == version
    assert any(ref["title"] == "MolP2SBench" and ref["authors"] for ref in citation["references"])
