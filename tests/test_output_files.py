"""An output file is written whole or not at all: an interrupted write leaves the earlier file as it was."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from molp2s_stats import output


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet", ".txt"])
def test_an_interrupted_write_leaves_the_previous_file_whole(tmp_path, monkeypatch, suffix):
    out = tmp_path / f"table{suffix}"
    output.emit(pl.DataFrame({"model": ["a", "b"], "estimate": [1.0, 2.0]}), None, out)
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
        output.emit(pl.DataFrame({"model": ["c"], "estimate": [3.0]}), None, out)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no partial file left behind


def test_a_command_interrupted_exits_130_and_says_so(tmp_path, monkeypatch):
    from molp2s_stats import metrics, store
    from molp2s_stats.cli import app
    from molp2s_stats.ingest import load

    from tiny_benchmark import write_benchmark, write_responses

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
