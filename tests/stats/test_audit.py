"""The benchmark audit on a hand-built benchmark whose defects are known.

Twelve families of three candidates (A, B, C; the key A) in one channel, answered by six
models of skill 3 to 8 in 10, three samples a task, the right answers decided by a fixed
pattern and the wrong ones alternating between the two other labels. Then, one defect
each:

- F02: B and C are one molecule (ethylbenzene, written two ways);
- F03: C's dipole equals the source A's (0.0 D both): the dipole cannot tell them apart;
- F04: every model answers C on every P0, source and shuffled task: the key should be C;
- F05: every model right on every source, shuffled and cf answer.

A clean copy (no defect) raises no finding at all.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from molp2s_stats import store
from molp2s_stats.chem import complete
from molp2s_stats.glossary import check_columns
from molp2s_stats.ingest import load
from molp2s_stats.stats import audit

SCAFFOLD = "c1ccc(cc1)[*]"
FRAGMENTS = {"A": "[*]C", "B": "[*]CC", "C": "[*]O"}
FAMILIES = [f"F{i:02d}" for i in range(1, 13)]
SKILLS = (3, 4, 5, 6, 7, 8)  # right answers in 10, per model
SAMPLES = 3


def _benchmark(folder, *, defects: bool):
    folder.mkdir()
    families, candidates, properties, tasks = [], [], [], []
    for i, family in enumerate(FAMILIES):
        families.append((family, SCAFFOLD, "A"))
        for j, (label, fragment) in enumerate(FRAGMENTS.items()):
            molecule = complete(SCAFFOLD, fragment)
            if defects and family == "F02" and label == "C":
                fragment, molecule = "[*]C(C)", "c1ccc(CC)cc1"  # B's ethylbenzene, written otherwise
            dipole = 0.0 if defects and family == "F03" and label == "C" else float(j)
            candidates.append((family, label, fragment, molecule))
            properties.append((family, label, "dipole_norm", str(dipole)))
        other = FAMILIES[(i + 1) % len(FAMILIES)]
        tasks += [
            (f"{family}-p0", family, "none", "none", "A", None, None),
            (f"{family}-s", family, "dipole_norm", "source", "A", family, "A"),
            (f"{family}-sh", family, "dipole_norm", "shuffled", "A", other, "A"),
        ]
        tasks += [(f"{family}-cf-{k}", family, "dipole_norm", "cf", k, family, k) for k in "BC"]
    for name, rows, columns in (
        ("families", families, ["family_id", "scaffold", "source"]),
        ("candidates", candidates, ["family_id", "label", "fragment", "molecule"]),
        ("properties", properties, ["family_id", "label", "channel", "value"]),
        ("tasks", tasks, ["task_id", "family_id", "channel", "condition", "target", "shown_family", "shown_label"]),
    ):
        pl.DataFrame(rows, schema=columns, orient="row").write_csv(folder / f"{name}.csv")
    return folder, tasks


def _responses(folder, tasks, *, defects: bool):
    folder.mkdir()
    rows = []
    for m, skill in enumerate(SKILLS):
        for n, (task, family, _, condition, target, _, _) in enumerate(tasks):
            for sample in range(SAMPLES):
                right = (7 * n + 3 * m + 5 * sample) % 10 < skill
                if defects and family == "F04" and condition in ("none", "source", "shuffled"):
                    choice = "C"
                elif defects and family == "F05" and condition != "none":
                    choice = target
                else:
                    wrong = [label for label in FRAGMENTS if label != target]
                    choice = target if right else wrong[(n + sample + m) % 2]
                rows.append((f"model-{m}", task, sample, choice))
    path = folder / "answers.csv"
    pl.DataFrame(rows, schema=["model", "task_id", "sample", "choice"], orient="row").write_csv(path)
    return [path]


def _database(root, *, defects: bool):
    bench, tasks = _benchmark(root / "bench", defects=defects)
    con = store.connect(root / "db.duckdb")
    load(con, benchmark=bench, responses=_responses(root / "responses", tasks, defects=defects))
    return con


@pytest.fixture(scope="module")
def findings(tmp_path_factory):
    con = _database(tmp_path_factory.mktemp("audit"), defects=True)
    return audit.audit(con, seed=1)


def test_every_defect_is_found_and_nothing_else(findings):
    check_columns(findings.columns)
    assert findings.columns == ["family_id", "channel", "flag", "score", "evidence"]
    found = set(findings.select("family_id", "channel", "flag").iter_rows())
    assert found == {
        ("F02", "all", "duplicate_candidates"),
        ("F03", "dipole_norm", "indistinguishable"),
        ("F04", "all", "wrong_key"),
        ("F05", "dipole_norm", "no_signal"),
    }


def test_each_finding_says_what_was_seen(findings):
    evidence = dict(zip(findings["flag"], findings["evidence"]))
    assert evidence["duplicate_candidates"] == "labels B and C are the same molecule (CCc1ccccc1)"
    # 0.0 D against 0.0 D: distance 0, under the dipole's cutoff of 0.3 D; score 1 − 0 / 0.3 = 1
    assert evidence["indistinguishable"].startswith("the source A and the distractor C are 0 apart, under the cutoff")
    assert evidence["indistinguishable"].endswith("(already out of the cohort)")  # input validation dropped it
    assert findings.filter(pl.col("flag") == "indistinguishable")["score"].item() == 1.0
    # 6 models × 3 samples × 3 conditions = 54 answers, every one C
    assert evidence["wrong_key"].startswith("54 of 54 answers chose C, 0 the key A")
    # 6 models × 3 samples × (source, shuffled, 2 cf) = 72 answers, every one right
    assert evidence["no_signal"] == "all 6 models right on all 72 answers under source, shuffled and cf"
    assert findings.filter(pl.col("flag") == "no_signal")["score"].item() == 72.0


def test_a_clean_benchmark_raises_no_finding(tmp_path):
    con = _database(tmp_path, defects=False)
    assert audit.audit(con, seed=1).height == 0


def test_the_key_swap_statistic_by_hand():
    import numpy as np

    # two models of ability 0 (P right = σ(0 − d)), three labels, the key 0; all 10 answers on label 2.
    # Under "label 2 is the key" the best difficulty is the grid's lowest (every answer right):
    # log σ(12) × 10 ≈ −6e-5; under the key, every answer wrong: 10 × log((1 − σ(−d)) / 2), best at the
    # grid's highest difficulty: 10 × (log σ(12) − log 2) ≈ −6.93. The ratio: 10 × log 2 = 6.93.
    counts = np.zeros((1, 2, 3))
    counts[0, :, 2] = 5
    statistic, best, _ = audit._key_swap_statistic(counts, np.zeros(2), 0)
    assert best[0] == 2 and statistic[0] == pytest.approx(10 * np.log(2), abs=1e-3)


@settings(max_examples=60, deadline=None)
@given(
    models=st.integers(1, 12),
    labels=st.integers(2, 6),
    seed=st.integers(0, 2**32 - 1),
    spread=st.sampled_from([0.0, 2.0, 6.0]),
)
def test_the_null_statistic_found_by_bisection_is_the_full_grids(models, labels, seed, spread):
    """The null's statistic (bisection on the difficulty grid) against the full grid's maxima, on answer
    sets that reach both ends: labels nobody chose, every answer on one label, models far from chance."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ability = rng.normal(0.0, spread, models)
    answers = rng.integers(0, 40, models)
    key = int(rng.integers(labels))
    sets = [rng.multinomial(answers, rng.dirichlet(np.full(labels, 0.3), size=models)) for _ in range(20)]
    one_label = np.zeros((models, labels), dtype=np.int64)
    one_label[:, int(rng.integers(labels))] = answers
    counts = np.stack([*sets, one_label, np.zeros((models, labels), dtype=np.int64)]).astype(float)
    full, _, _ = audit._key_swap_statistic(counts, ability, key)
    np.testing.assert_allclose(audit._null_key_swap_statistic(counts, ability, key), full, rtol=1e-12, atol=1e-9)


def test_audit_command(tmp_path):
    from typer.testing import CliRunner

    from molp2s_stats.cli import app

    _database(tmp_path, defects=True).close()
    result = CliRunner().invoke(app, ["audit", "--db", str(tmp_path / "db.duckdb"), "--format", "csv", "--seed", "1"])
    assert result.exit_code == 0, result.output
    table = pl.read_csv(result.stdout.encode())
    assert table["flag"].to_list() == ["wrong_key", "duplicate_candidates", "indistinguishable", "no_signal"]
    assert "findings: wrong_key 1, duplicate_candidates 1, indistinguishable 1, no_signal 1" in result.output
    assert "without the flagged families, the ranking by pgr " in result.output
    # --impact: every model × channel on the whole cohort and without the flagged families, with its rank
    result = CliRunner().invoke(
        app,
        [
            "audit",
            "--db",
            str(tmp_path / "db.duckdb"),
            "--seed",
            "1",
            "--impact",
            "--bootstrap",
            "100",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    moved = pl.read_csv(result.stdout.encode())
    check_columns(moved.columns)
    assert moved.height == 2 * 6 and moved["exclusion"].to_list() == ["none", "flagged"] * 6
    # the cohort's 11 families (F03 is not input-validated), less F02, F04 and F05
    assert moved.filter(pl.col("exclusion") == "flagged")["n"].unique().to_list() == [8]
    assert sorted(moved.filter(pl.col("exclusion") == "none")["rank"].to_list()) == [1, 2, 3, 4, 5, 6]
    bad = CliRunner().invoke(app, ["audit", "--db", str(tmp_path / "db.duckdb"), "--q", "2"])
    assert bad.exit_code == 2 and "--q must be between 0 and 1" in bad.output


def test_exclude_leaves_the_listed_families_out_of_the_cohort_and_changes_nothing_else(tmp_path):
    from typer.testing import CliRunner

    from molp2s_stats.cli import app
    from molp2s_stats.stats import metrics

    con = _database(tmp_path, defects=True)
    outcomes, channels, models = metrics.read_family_outcomes(con)
    con.close()
    db = str(tmp_path / "db.duckdb")
    runner = CliRunner()
    findings = tmp_path / "findings.csv"
    assert runner.invoke(app, ["audit", "--db", db, "--seed", "1", "--out", str(findings)]).exit_code == 0
    listed = tmp_path / "families.txt"
    listed.write_text("# the audit's wrong key and the family with no signal\nF04\nF05  # every model right\n")
    base = ["metrics", "--db", db, "--metric", "acc_source", "--bootstrap", "200", "--seed", "3", "--format", "csv"]
    for exclude in (listed, findings):
        result = runner.invoke(app, [*base, "--exclude", str(exclude)])
        assert result.exit_code == 0, result.output
        table = pl.read_csv(result.stdout.encode())
        # the cohort (11 families: F03's source and distractor C are indistinguishable, so it is not
        # input-validated) loses the excluded families and nothing else: the metrics of the cohort without them
        gone = {"F04", "F05"} if exclude == listed else {"F02", "F03", "F04", "F05"}
        expected = metrics.compute_metrics(
            outcomes.filter(~pl.col("family_id").is_in(list(gone))),
            channels=channels,
            models=models,
            metrics=("acc_source",),
            draws=200,
            seed=3,
        )
        assert table["n"].unique().to_list() == [11 - len(gone - {"F03"})] == expected["n"].unique().to_list()
        assert table["estimate"].to_list() == pytest.approx(expected["estimate"].to_list())
        assert table["conf_low"].to_list() == pytest.approx(expected["conf_low"].to_list())
        assert f"left out of the cohort: {len(gone)} families listed in" in result.output
    for command in (["ranks", "--bootstrap", "100"], ["stability", "--sizes", "5", "--subsets", "20"]):
        result = runner.invoke(app, [*command, "--db", db, "--exclude", str(listed)])
        assert result.exit_code == 0, result.output
    typo = tmp_path / "typo.txt"
    typo.write_text("F04\n\nF4\n")
    result = runner.invoke(app, [*base, "--exclude", str(typo)])
    assert result.exit_code == 2 and "typo.txt: line 3: family 'F4' is not in the benchmark" in result.output
