"""An output file is written whole or not at all: an interrupted write leaves the earlier file as it was."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from molp2s_stats import output
from molp2s_stats.cli.output import emit


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet", ".txt"])
def test_an_interrupted_write_leaves_the_previous_file_whole(tmp_path, monkeypatch, suffix):
    out = tmp_path / f"table{suffix}"
    emit(pl.DataFrame({"model": ["a", "b"], "estimate": [1.0, 2.0]}), None, out)
    before = out.read_bytes()

    def half_then_interrupt(self, *args, **kwargs):
        Path(self if isinstance(self, Path) else args[0]).write_bytes(b"half a fi")
        raise KeyboardInterrupt

    # every way emit writes: text, Parquet, and the table through an open handle
    monkeypatch.setattr(Path, "write_text", lambda self, *a, **k: half_then_interrupt(self))
    monkeypatch.setattr(pl.DataFrame, "write_parquet", lambda self, path, **k: half_then_interrupt(path))
    import rich.console

    monkeypatch.setattr(rich.console.Console, "print", lambda self, *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        emit(pl.DataFrame({"model": ["c"], "estimate": [3.0]}), None, out)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no partial file left behind


def test_a_command_interrupted_exits_130_and_says_so(tmp_path, monkeypatch):
    from molp2s_stats import store
    from molp2s_stats.cli import app
    from molp2s_stats.ingest import load
    from molp2s_stats.stats import metrics
    from tests.support.tiny_benchmark import write_benchmark, write_responses

    con = store.connect(tmp_path / "db.duckdb")
    load(con, benchmark=write_benchmark(tmp_path / "bench"), responses=write_responses(tmp_path / "responses"))
    con.close()
    out = tmp_path / "metrics.csv"
    out.write_text("an earlier table\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(metrics, "compute_metrics", interrupted)
    result = CliRunner().invoke(app, ["metrics", "--db", str(tmp_path / "db.duckdb"), "--out", str(out)])
    assert result.exit_code == 130
    assert "interrupted: metrics stopped; no output file was left half-written" in result.output
    assert out.read_text() == "an earlier table\n"


def _site(folder: Path, text: str) -> None:
    (folder / "tables").mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(text)
    (folder / "tables" / "accuracy.csv").write_text(text)


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fault", [KeyboardInterrupt, OSError])
def test_an_interrupted_folder_leaves_the_previous_one_whole(tmp_path, fault):
    site = tmp_path / "_site"
    _site(site, "the earlier site")
    with pytest.raises(fault):
        with output.replacing_folder(site) as partial:
            _site(partial, "half")
            raise fault
    assert _tree(site) == {"index.html": "the earlier site", "tables/accuracy.csv": "the earlier site"}
    assert [p.name for p in tmp_path.iterdir()] == ["_site"]  # no partial or set-aside folder left behind


@pytest.mark.parametrize("earlier", [True, False])
def test_a_complete_folder_takes_the_place_of_the_previous_one(tmp_path, earlier):
    site = tmp_path / "_site"
    if earlier:
        _site(site, "the earlier site")
        (site / "a page since removed.html").write_text("gone")
    with output.replacing_folder(site) as partial:
        assert partial.parent == site.parent and partial != site
        _site(partial, "the new site")
    # replaced, not merged: a page the new render does not make is not left over from the old one
    assert _tree(site) == {"index.html": "the new site", "tables/accuracy.csv": "the new site"}
    assert [p.name for p in tmp_path.iterdir()] == ["_site"]


@pytest.mark.parametrize(
    "fault, code, says",
    [
        (KeyboardInterrupt, 130, "interrupted: report stopped; no output file was left half-written"),
        ("render", 2, "a cell failed: ValueError: boom"),
    ],
)
def test_an_interrupted_report_leaves_the_previous_site(tmp_path, monkeypatch, fault, code, says):
    from molp2s_stats import store
    from molp2s_stats.cli import app
    from molp2s_stats.ingest import load
    from molp2s_stats.report import render
    from tests.support.tiny_benchmark import write_benchmark, write_responses

    con = store.connect(tmp_path / "db.duckdb")
    load(con, benchmark=write_benchmark(tmp_path / "bench"), responses=write_responses(tmp_path / "responses"))
    con.close()
    fit_file = tmp_path / "fit.nc"
    fit_file.write_text("never read: the render is replaced below")
    site = tmp_path / "site"
    _site(site, "the earlier site")
    seen = {}

    def half_a_site(project, out, env, **kwargs):
        seen["tables"] = env["MOLP2S_REPORT_TABLES"]
        _site(out, "half")
        if fault == "render":
            raise render.RenderError("index.qmd: a cell failed: ValueError: boom")
        raise fault

    monkeypatch.setattr(render, "render_site", half_a_site)
    result = CliRunner().invoke(
        app,
        [
            "report",
            "--db",
            str(tmp_path / "db.duckdb"),
            "--fit",
            str(fit_file),
            "--out",
            str(site),
            "--engine",
            "jupyter",
        ],
    )
    assert result.exit_code == code, result.output
    assert says in result.output
    assert _tree(site) == {"index.html": "the earlier site", "tables/accuracy.csv": "the earlier site"}
    # the pages wrote their tables into the site being rendered, not into the one in place
    assert not seen["tables"].startswith(str(site.resolve()) + "/")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".site")) == []
