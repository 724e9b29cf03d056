"""From `pip install` to a report, as a user of the released package meets it: the wheel built from
this checkout, installed into a fresh virtual environment outside the repository, and run in an
empty folder. It must carry everything it reads (the SQL, the example study, the report's pages and
their scripts), print no path into site-packages as a command to type, and write nothing into its
own installed folder.

The user's three commands are `pip install`, `molp2s load --example` and `molp2s report --db
molp2s.duckdb --out site`. Here the report is given a short one-channel fit made in the same
environment (`molp2s fit --channel dipole_norm --draws 100 --tune 100 --chains 2`, which misses its
gate on purpose and says so on the Posterior page): the report's own default fit samples every
channel until it passes (minutes), which `make report` exercises; this test is about what the
wheel carries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

UV = Path(sys.executable).parent / "uv"


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
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    return python.parent, env


def _package_folder(bin_folder: Path, env: dict[str, str]) -> Path:
    code = "import molp2s_stats, pathlib; print(pathlib.Path(molp2s_stats.__file__).parent)"
    return Path(_run([str(bin_folder / "python"), "-c", code], bin_folder, env).stdout.strip())


def test_the_wheel_loads_the_example_and_renders_its_report_in_an_empty_folder(installed, tmp_path):
    bin_folder, env = installed
    package = _package_folder(bin_folder, env)
    assert ROOT not in package.parents, f"the installed package is the checkout's: {package}"
    before = {p.relative_to(package) for p in package.rglob("*") if "__pycache__" not in p.parts}

    folder = tmp_path / "empty"
    folder.mkdir()
    molp2s = str(bin_folder / "molp2s")
    loaded = _run([molp2s, "load", "--example"], folder, env)
    assert (folder / "molp2s.duckdb").exists()
    metrics = _run([molp2s, "metrics", "--metric", "pgr", "--bootstrap", "0", "--format", "csv"], folder, env)
    assert metrics.stdout.startswith("model,channel,metric") and "sim-generalist" in metrics.stdout
    _run(
        [molp2s, "fit", "--channel", "dipole_norm", "--draws", "100", "--tune", "100", "--chains", "2"]
        + ["--seed", "1", "--allow-unconverged", "--out", "fit.nc"],
        folder,
        env,
    )
    report = _run(
        [molp2s, "report", "--db", "molp2s.duckdb", "--fit", "fit.nc", "--out", "site", "--bootstrap", "20"]
        + ["--engine", "jupyter"],
        folder,
        env,
    )
    pages = {p.name for p in (folder / "site").glob("*.html")}
    assert {"index.html", "leaderboard.html", "posterior.html", "data.html"} <= pages, pages
    assert (folder / "site" / "tables" / "table2_pgr.csv").exists()
    # every hint printed along the way is a command to type, not a path into the installed package
    for said in (loaded, metrics, report):
        assert "site-packages" not in said.stdout + said.stderr, said.stderr[-2000:]
    after = {p.relative_to(package) for p in package.rglob("*") if "__pycache__" not in p.parts}
    assert after == before, f"the run wrote into the installed package: {sorted(after - before)[:5]}"


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
