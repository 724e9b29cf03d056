"""From `pip install` to a report, as a user of the released package meets it: the wheel built from
this checkout, installed into a fresh virtual environment outside the repository, and run in an
empty folder. It must carry everything it reads (the SQL, the example study, the report's pages and
their scripts), print no path into site-packages as a command to type, and write nothing into its
own installed folder.

The user's three commands are `pip install`, `molp2s load --example` and `molp2s report --db
molp2s.duckdb` (which renders into `molp2s-report/_site` in the working folder). Here the report is
given a short one-channel fit made in the same environment (`molp2s fit --channel dipole_norm --draws
100 --tune 100 --chains 2 --budget 0`: one attempt, which misses its gate on purpose and says so on the
Posterior page; without `--budget 0` its retries sampled 3,200 draws more, 15 of the fixture's 80 s,
for nothing this test reads): the report's own default fit samples every
channel until it passes (minutes), which `make report` exercises; this test is about what the
wheel carries. The same site is where the pages' tables are checked on a study of eight models
and fifteen channels: none outside a folded section passes 40 rows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.support import ROOT

UV = Path(sys.executable).parent / "uv"

SITE = "molp2s-report/_site"  # the report's default folder outside a checkout


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(command)}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The wheel installed in a new virtual environment: its bin folder and an environment whose PATH
    starts there (no MOLP2S_* variables, as on a new machine)."""
    assert UV.exists(), "uv is installed with the package's test extras"
    base = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOLP2S_") and k != "VIRTUAL_ENV"}
    # uv reads its cache: the dependencies `make setup` installed are linked, not downloaded again
    _run([str(UV), "build", "--wheel", "--out-dir", str(base / "dist"), str(ROOT)], base, env)
    (wheel,) = (base / "dist").glob("molp2s_stats-*.whl")
    _run([str(UV), "venv", "--python", sys.executable, str(base / "venv")], base, env)
    python = base / "venv" / "bin" / "python"
    _run([str(UV), "pip", "install", "--python", str(python), str(wheel)], base, env)
    _link_compiled_bytecode(Path(sysconfig.get_paths()["purelib"]), base / "venv" / "lib" / PYTHON / "site-packages")
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    return python.parent, env


PYTHON = f"python{sys.version_info.major}.{sys.version_info.minor}"


def _link_compiled_bytecode(ours: Path, theirs: Path) -> None:
    """The dependencies' bytecode, compiled when this environment was set up, hard-linked into the new
    one, as `pip install` would have compiled it there (uv does not, and the user's first commands
    would compile JAX, PyMC, ArviZ … again: this fixture took 76 s without, 64 s with, medians of
    4 alternated runs on 2 cores). Python checks a .pyc against its
    source's modification time and size; uv links both environments' files from its cache, so
    a shared file passes and any other is compiled afresh. The package under test is not ours to
    lend (this checkout's is an editable install), so its own bytecode is the new environment's."""
    for cache in ours.rglob("__pycache__"):
        target = theirs / cache.relative_to(ours)
        if not target.parent.is_dir() or target.relative_to(theirs).parts[0] == "molp2s_stats":
            continue
        target.mkdir(exist_ok=True)
        for compiled in cache.iterdir():
            if not (target / compiled.name).exists():
                try:
                    os.link(compiled, target / compiled.name)
                except OSError:  # another file system (a temporary folder elsewhere): a copy is as good
                    shutil.copy2(compiled, target / compiled.name)


def _package_folder(bin_folder: Path, env: dict[str, str]) -> Path:
    code = "import molp2s_stats, pathlib; print(pathlib.Path(molp2s_stats.__file__).parent)"
    return Path(_run([str(bin_folder / "python"), "-c", code], bin_folder, env).stdout.strip())


@pytest.fixture(scope="module")
def run(installed, tmp_path_factory) -> dict:
    """The user's path in an empty folder, with what each step printed and the installed package's
    files before and after."""
    bin_folder, env = installed
    package = _package_folder(bin_folder, env)
    files = lambda: {p.relative_to(package) for p in package.rglob("*") if "__pycache__" not in p.parts}  # noqa: E731
    before = files()
    folder = tmp_path_factory.mktemp("empty")
    molp2s = str(bin_folder / "molp2s")
    said = {"load": _run([molp2s, "load", "--example"], folder, env)}
    said["metrics"] = _run([molp2s, "metrics", "--metric", "pgr", "--bootstrap", "0", "--format", "csv"], folder, env)
    said["fit"] = _run(
        [molp2s, "fit", "--channel", "dipole_norm", "--draws", "100", "--tune", "100", "--chains", "2"]
        + ["--budget", "0", "--seed", "1", "--allow-unconverged", "--out", "fit.nc"],
        folder,
        env,
    )
    said["report"] = _run(
        # no --out: an installed package renders into molp2s-report/_site here, not into its own folder
        [molp2s, "report", "--db", "molp2s.duckdb", "--fit", "fit.nc", "--bootstrap", "20"] + ["--engine", "jupyter"],
        folder,
        env,
    )
    return {"package": package, "folder": folder, "said": said, "before": before, "after": files()}


def test_the_wheel_loads_the_example_and_renders_its_report_in_an_empty_folder(run):
    package, folder = run["package"], run["folder"]
    assert ROOT not in package.parents, f"the installed package is the checkout's: {package}"
    assert (folder / "molp2s.duckdb").exists()
    metrics = run["said"]["metrics"]
    assert metrics.stdout.startswith("model,channel,metric") and "sim-generalist" in metrics.stdout
    pages = {p.name for p in (folder / SITE).glob("*.html")}
    assert {f"{name}.html" for name in PAGES} <= pages, pages
    assert (folder / SITE / "tables" / "table2_pgr.csv").exists()
    # the short fit missed its gate, and the Posterior page says so before any estimate
    assert '<p class="gate-failed">THE FIT FAILED ITS HEALTH GATE' in (folder / SITE / "posterior.html").read_text()
    # every hint printed along the way is a command to type, not a path into the installed package
    for step, said in run["said"].items():
        assert "site-packages" not in said.stdout + said.stderr, (step, said.stderr[-2000:])
    written = sorted(run["after"] - run["before"])
    assert not written, f"the run wrote into the installed package: {written[:5]}"


# --- tables a reader can scan, on the example study's eight models and fifteen channels -----------

PAGES = ["index", "leaderboard", "reliance", "comparisons", "stability", "posterior", "health", "data"]
MAX_ROWS = 40


def rows_outside_folds(page: str) -> list[tuple[str, int]]:
    """(table id, body rows) of each table of a page's HTML that is not inside a <details>."""
    outside = re.sub(r"<details.*?</details>", "", page, flags=re.S)
    found = []
    for table in re.findall(r"<table.*?</table>", outside, flags=re.S):
        body = re.search(r"<tbody.*?</tbody>", table, flags=re.S)
        ident = re.search(r'id="([^"]+)"', table)
        found.append((ident.group(1) if ident else "?", (body.group(0) if body else table).count("<tr")))
    return found


def test_rows_are_counted_outside_the_folds_only():
    table = "<table id='x'><tbody>" + "<tr><td>1</td></tr>" * 50 + "</tbody></table>"
    assert rows_outside_folds(f"<p>a</p>{table}") == [("?", 50)]
    assert rows_outside_folds(f"<details class='collapsed'><summary>s</summary>{table}</details>") == []


@pytest.mark.parametrize("name", PAGES)
def test_no_table_outside_a_fold_passes_40_rows(run, name):
    """A table of every model on every channel (120 rows here) goes in a folded section under a
    sentence that says what it holds."""
    page = (run["folder"] / SITE / f"{name}.html").read_text()
    long = [(ident, rows) for ident, rows in rows_outside_folds(page) if rows > MAX_ROWS]
    assert not long, f"{name}: fold these, with a sentence that says what they hold: {long}"


def test_a_hint_outside_a_checkout_names_the_example_not_a_path(installed, tmp_path):
    bin_folder, env = installed
    done = subprocess.run(
        [str(bin_folder / "molp2s"), "cohort"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert "molp2s load --example" in done.stderr and "site-packages" not in done.stderr, done.stderr


def test_every_package_of_the_source_is_in_the_wheels_list():
    """A subpackage missing from pyproject.toml's list installs without its modules: the console script
    then fails at import. Cheaper than the install above, and it names the one left out."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    source = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "molp2s_stats").rglob("__init__.py")}
    assert source <= listed, f"add to [tool.setuptools] packages: {sorted(source - listed)}"
