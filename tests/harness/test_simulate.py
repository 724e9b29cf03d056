"""The simulator reproduces its own parameters (a test of the simulator, not of any model)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from molp2s_stats import simulate, store
from molp2s_stats.ingest import load
from molp2s_stats.stats import metrics
from tests.support import TOY

FAMILIES = 1500


def big_benchmark(tmp_path):
    """1,500 families of four or two candidates in one channel, written as files."""
    frags = ["[*]CCC", "[*]C(C)C", "[*]OCC", "[*]COC"]
    fams, cands, props, tasks = [], [], [], []
    for i in range(FAMILIES):
        f = f"F{i:04d}"
        fams.append((f, "c1ccc(cc1)[*]", "A"))
        labels = "ABCD" if i % 2 else "AB"  # 4 and 2 candidates: cf pairs weigh differently per family
        for j, label in enumerate(labels):
            cands.append((f, label, frags[j], "c1ccc(cc1)" + frags[j].replace("[*]", "")))
            props.append((f, label, "dipole_norm", str(float(j))))
        tasks.append((f"{f}-p0", f, "none", "none", "A", None, None))
        other = f"F{(i + 1) % FAMILIES:04d}"
        tasks.append((f"{f}-s", f, "dipole_norm", "source", "A", f, "A"))
        tasks.append((f"{f}-sh", f, "dipole_norm", "shuffled", "A", other, "A"))
        for k in labels[1:]:
            tasks.append((f"{f}-cf-{k}", f, "dipole_norm", "cf", k, f, k))
    folder = tmp_path / "bench"
    folder.mkdir()
    pl.DataFrame(fams, schema=["family_id", "scaffold", "source"], orient="row").write_parquet(
        folder / "families.parquet"
    )
    pl.DataFrame(cands, schema=["family_id", "label", "fragment", "molecule"], orient="row").write_parquet(
        folder / "candidates.parquet"
    )
    pl.DataFrame(props, schema=["family_id", "label", "channel", "value"], orient="row").write_parquet(
        folder / "properties.parquet"
    )
    pl.DataFrame(
        tasks,
        schema=["task_id", "family_id", "channel", "condition", "target", "shown_family", "shown_label"],
        orient="row",
    ).write_parquet(folder / "tasks.parquet")
    return folder


def test_simulated_metrics_match_the_truth_within_sampling_error(tmp_path):
    from molp2s_stats.ingest import read_benchmark

    folder = big_benchmark(tmp_path)
    models = (
        # 15 % invalid answers: dropping the (1 − invalid) factor from the truth would miss by ~10 pp
        simulate.SimulatedModel("sim-a", 0.2, {"*": 1.2}, {"*": 0.5}, invalid=0.15, raw_text_share=0.3),
        simulate.SimulatedModel("sim-b", -0.5, {"*": 0.0}, {"*": 0.1}, invalid=0.0, raw_text_share=0.0),
    )
    responses, truth = simulate.simulate(read_benchmark(folder), models=models, seed=11)
    paths = simulate.write(responses, truth, tmp_path / "responses", models=models, seed=11, samples=1)
    con = store.connect(tmp_path / "sim.duckdb")
    load(con, benchmark=folder, responses=paths)
    result = metrics.metrics_from_db(con, draws=0)
    estimate = {(r["model"], r["metric"]): r["estimate"] for r in result.iter_rows(named=True)}
    expected = {(r["model"], r["quantity"]): r["value"] for r in truth.iter_rows(named=True)}
    # Sampling error of a mean of 1,500 Bernoulli draws: at most 100·sqrt(.25/1500) ≈ 1.3 pp;
    # the truth is the expectation over the same families, so 4 SE is a generous bound.
    for model in ("sim-a", "sim-b"):
        for metric, quantity in (
            ("acc_p0", "acc_p0"),
            ("acc_source", "acc_source"),
            ("acc_shuffled", "acc_shuffled"),
            ("reliance_margin", "reliance"),
            ("cf_accuracy", "responsiveness"),
        ):
            assert estimate[(model, metric)] == pytest.approx(
                expected[(model, quantity)], abs=5.5 if metric == "reliance_margin" else 4.0
            ), (model, metric)
    # Parsed raw text: every answer the simulator wrote as text names the intended candidate
    # (an invalid answer was meant to be invalid).
    invalid = con.execute(
        "SELECT model, avg((choice IS NULL)::INT) FROM responses GROUP BY model ORDER BY model"
    ).fetchall()
    assert invalid[0][1] == pytest.approx(0.15, abs=0.015) and invalid[1][1] == 0.0


def test_same_seed_same_responses(tmp_path):
    from molp2s_stats.ingest import read_benchmark

    tables = read_benchmark(big_benchmark(tmp_path))
    first, truth_first = simulate.simulate(tables, seed=3)
    again, truth_again = simulate.simulate(tables, seed=3)
    assert all(first[m].equals(again[m]) for m in first)
    assert truth_first.equals(truth_again)
    assert all(name.startswith("sim-") for name in first)
    assert len(first) == len(simulate.DEFAULT_MODELS) == 8


def test_the_nmr_expert_relies_more_on_1h_yet_follows_it_less():
    # the paper's NMR finding as known truth, on the toy benchmark that has every channel
    from molp2s_stats.ingest import read_benchmark

    _, truth = simulate.simulate(read_benchmark(TOY), seed=1)
    nmr = truth.filter(pl.col("model") == "sim-nmr-expert")
    value = {(c, q): v for c, q, v in nmr.select("channel", "quantity", "value").iter_rows()}
    for form in ("peaks", "atomwise"):
        assert value[(f"h1_{form}", "reliance")] > value[(f"c13_{form}", "reliance")]
        assert value[(f"h1_{form}", "responsiveness")] < value[(f"c13_{form}", "responsiveness")]


def test_every_simulated_justification_that_cites_is_recognised_as_citing():
    """The simulator's citing sentence per channel and the detector that counts citations agree:
    each one is found citing its own channel, and the non-citing sentence is found citing none."""
    from molp2s_stats import simulate
    from molp2s_stats.ingest.benchmark import DEFAULT_CHANNELS
    from molp2s_stats.stats import explanations

    channels = pl.read_csv(DEFAULT_CHANNELS)
    components = {
        row["channel"]: (row["components"].split(";") if row["components"] else [row["channel"]])
        for row in channels.iter_rows(named=True)
    }
    singles = [c for c, parts in components.items() if parts == [c]]
    for channel, parts in components.items():
        parts = singles if parts == ["*"] else parts
        citing = simulate.justification(channel, cites=True)
        assert explanations.cites_property(citing, None, parts), (channel, citing)
        assert not explanations.cites_property(simulate.justification(channel, cites=False), None, parts), channel


def test_draw_answers_follows_its_generative_model():
    """Invariants of the one simulator that every generated answer comes from: a certain answer
    (skill → ∞) is always right; an uncertain one (skill → −∞) never names the right candidate
    and spreads over the other K − 1; samples count per task; cf answers that follow name k."""
    from molp2s_stats.ingest import read_benchmark

    design = simulate.task_design(read_benchmark(TOY))
    difficulty = np.zeros(len(design.candidates))
    counts = np.arange(design.family.size) % 3  # 0, 1 or 2 samples per task
    rng = np.random.default_rng(5)

    def draw(skill, responsiveness=0.0, samples=counts):
        model = simulate.SimulatedModel("sim-x", skill, {"*": 0.0}, {"*": responsiveness}, invalid=0.0)
        return simulate.draw_answers(design, model, difficulty, samples, rng, rng)

    right = np.where(design.conditions == "cf", design.source, design.target)
    sure = draw(50.0)
    assert np.bincount(sure.task, minlength=design.family.size).tolist() == counts.tolist()
    assert (sure.sample < counts[sure.task]).all()
    assert (sure.choice == right[sure.task]).all()
    lost = draw(-50.0, samples=20)
    assert (lost.choice != right[lost.task]).all() and (lost.choice < design.n_candidates[lost.task]).all()
    four = (design.n_candidates[lost.task] == 4) & (design.conditions[lost.task] != "cf")
    shares = np.bincount(lost.choice[four] - (lost.choice[four] > right[lost.task][four]), minlength=3) / four.sum()
    # uniform over the three others: ~4,000 answers, so a share's SE is under 0.01
    assert shares == pytest.approx([1 / 3] * 3, abs=0.04)
    follow = draw(-50.0, responsiveness=1.0)
    cf = design.conditions[follow.task] == "cf"
    assert (follow.choice[cf] == design.target[follow.task][cf]).all()
