"""Golden values for every metric on the tiny benchmark of tiny_benchmark.py.

Cohort (dipole_norm): F1, F2, F4. F3 is not input-validated (0.6 − 0.5 = 0.1 D < 0.30 D);
F5 lacks m2's answer to its cf task. Per cohort family (y = 1 when right):

  m1   p0  src  shuf  cf tasks (choice)           m2   p0  src  shuf  cf tasks (choice)
  F1   1   1    0     B→B ✓, C→A (persist)        F1   0   1    1     B→A (persist), C→C ✓
  F2   0   1    1     A→A ✓, C→invalid (other)    F2   1   0    0     A→B (persist), C→C ✓   (src: retry A is terminal)
  F4   1   0    1     A→B (persist)               F4   0   1    0     A→A ✓
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from molp2s_stats import store
from molp2s_stats.stats import compare, metrics

GOLDEN = {
    # m1
    ("m1", "acc_p0"): 100 * 2 / 3,  # (1 + 0 + 1) / 3
    ("m1", "acc_source"): 100 * 2 / 3,  # (1 + 1 + 0) / 3
    ("m1", "acc_shuffled"): 100 * 2 / 3,  # (0 + 1 + 1) / 3
    ("m1", "reliance_margin"): 0.0,  # 66.7 − 66.7
    ("m1", "cf_accuracy"): 100 * 2 / 5,  # cf pairs F1B ✓ F1C ✗ F2A ✓ F2C ✗ F4A ✗
    ("m1", "pgr"): 100 * 1.5 / 3,  # F1 ½·1+½·½ = .75, F2 .75, F4 0
    ("m1", "cfr"): 50.0,  # w = (1, 1, 0): (½ + ½) / 2
    ("m1", "persist"): 25.0,  # (½ + 0) / 2
    ("m1", "other"): 25.0,  # (0 + ½) / 2
    ("m1", "random_baseline"): 100 * 7 / 18,  # (⅓ + ⅓ + ½) / 3
    # m2
    ("m2", "acc_p0"): 100 / 3,  # (0 + 1 + 0) / 3
    ("m2", "acc_source"): 100 * 2 / 3,  # (1 + 0 + 1) / 3
    ("m2", "acc_shuffled"): 100 / 3,  # (1 + 0 + 0) / 3
    ("m2", "reliance_margin"): 100 / 3,  # 66.7 − 33.3
    ("m2", "cf_accuracy"): 100 * 3 / 5,  # F1B ✗ F1C ✓ F2A ✗ F2C ✓ F4A ✓
    ("m2", "pgr"): 100 * 2 / 3,  # F1 .75, F2 ½·0+½·½ = .25, F4 ½+½ = 1
    ("m2", "cfr"): 75.0,  # w = (1, 0, 1): (½ + 1) / 2
    ("m2", "persist"): 25.0,  # (½ + 0) / 2
    ("m2", "other"): 0.0,
    ("m2", "random_baseline"): 100 * 7 / 18,
}
N = {m: {"m1": 2, "m2": 2} for m in ("cfr", "persist", "other")}  # families with a correct source answer


@pytest.fixture(scope="module")
def tiny_db(tiny_database):
    con = store.connect(tiny_database, read_only=True)
    yield con
    con.close()


def test_cohort_is_validated_and_complete_families(tiny_db):
    cohort = tiny_db.sql("SELECT family_id, in_cohort, drop_reason FROM cohort ORDER BY family_id").pl()
    assert cohort["in_cohort"].to_list() == [True, True, False, True, False]
    reasons = dict(zip(cohort["family_id"], cohort["drop_reason"]))
    assert reasons["F3"] == "not input-validated: 1 of 1 verifiable pairs below the cutoff"
    assert reasons["F5"] == "incomplete coverage: 1 model(s) lack 1 terminal response(s)"
    summary = tiny_db.sql("SELECT * FROM cohort_summary").pl().row(0, named=True)
    assert summary == {
        "channel": "dipole_norm",
        "families_total": 5,
        "input_validated": 4,
        "complete_coverage": 4,
        "cohort": 3,
    }


def test_raw_answers_are_parsed(tiny_db):
    rows = dict(
        tiny_db.execute(
            "SELECT task_id, coalesce(choice, invalid_reason) FROM responses WHERE choice_source = 'parsed'"
        ).fetchall()
    )
    assert rows == {"F1-dipole_norm-cf-B": "B", "F2-dipole_norm-cf-C": "no_answer"}


@pytest.mark.parametrize(("model", "metric"), sorted(GOLDEN))
def test_point_estimates(tiny_db, model, metric):
    result = metrics.metrics_from_db(tiny_db, draws=0)
    row = result.filter((pl.col("model") == model) & (pl.col("metric") == metric)).row(0, named=True)
    assert row["estimate"] == pytest.approx(GOLDEN[(model, metric)])
    assert row["channel"] == "dipole_norm"
    assert row["method"] == "point" and row["conf_low"] is None
    assert row["n"] == N.get(metric, {}).get(model, 3)


# A uniform guesser on the cohort: K = 3, 3, 2 and cf tasks 2, 2, 1 (F1, F2, F4); each
# metric's value is Σ E[a_f] / Σ E[b_f], with E[y] = 1/K and, after a right source, a cf
# answer naming the counterfactual or the source with 1/K each, another with (K − 2)/K.
BASELINES = {
    "acc_source": 100 * 7 / 18,  # (⅓ + ⅓ + ½) / 3
    "reliance_margin": 0.0,  # 1/K − 1/K
    "cf_accuracy": 100 * 11 / 30,  # (2·⅓ + 2·⅓ + 1·½) / 5
    "pgr": 100 * 7 / 18,  # ½·1/K + ½·1/K per family
    "cfr": 100 * 17 / 42,  # (⅓·⅓ + ⅓·⅓ + ½·½) / (⅓ + ⅓ + ½) = (17/36) / (7/6)
    "persist": 100 * 17 / 42,  # the same
    "other": 100 * 8 / 42,  # (⅓·⅓ + ⅓·⅓ + ½·0) / (7/6)
    "random_baseline": 100 * 7 / 18,
}


@pytest.mark.parametrize("metric", sorted(BASELINES))
def test_each_metric_has_its_own_random_baseline(tiny_db, metric):
    result = metrics.metrics_from_db(tiny_db, draws=0)
    values = result.filter(pl.col("metric") == metric)["baseline"].to_list()
    assert values == pytest.approx([BASELINES[metric]] * 2)  # the same for both models
    board = metrics.with_random_baseline(result, metric)
    if metric != "random_baseline":
        row = board.filter(pl.col("model") == metrics.BASELINE).row(0, named=True)
        assert row["estimate"] == pytest.approx(BASELINES[metric]) and row["conf_low"] is None


def test_random_baselines_match_a_simulated_uniform_guesser(tiny_db):
    """An independent check: score many uniform guessers with the metric code itself."""
    outcomes = tiny_db.sql("SELECT * FROM family_outcomes WHERE model = 'm1'").pl()
    rng = np.random.default_rng(7)
    guessers = []
    for g in range(4000):
        k = outcomes["n_candidates"].to_numpy()
        cf = outcomes["cf_tasks"].to_numpy()
        picks = [rng.integers(0, kk, size=c) for kk, c in zip(k, cf)]  # 0: the counterfactual, 1: the source
        guessers.append(
            outcomes.with_columns(
                pl.lit(f"g{g}").alias("model"),
                pl.Series("y_source", (rng.integers(0, k) == 0).astype(float)),
                pl.Series("y_shuffled", (rng.integers(0, k) == 0).astype(float)),
                pl.Series("cf_correct", [float((p == 0).sum()) for p in picks]),
                pl.Series("cf_flip", [float((p == 0).mean()) for p in picks]),
                pl.Series("cf_persist", [float((p == 1).mean()) for p in picks]),
                pl.Series("cf_other", [float((p >= 2).mean()) for p in picks]),
            )
        )
    # pooled over guessers, a ratio of sums converges to the ratio of expected sums
    pooled = pl.concat(guessers).with_columns(
        pl.lit("pooled").alias("model"), (pl.col("model") + pl.col("family_id")).alias("family_id")
    )
    result = metrics.compute_metrics(pooled, draws=0, metrics=tuple(BASELINES))
    for row in result.iter_rows(named=True):
        assert row["estimate"] == pytest.approx(BASELINES[row["metric"]], abs=1.5), row["metric"]


def test_cfr_persist_other_sum_to_100(tiny_db):
    result = metrics.metrics_from_db(tiny_db, draws=0, metrics=("cfr", "persist", "other"))
    sums = result.group_by("model").agg(pl.col("estimate").sum())
    assert sums["estimate"].to_list() == pytest.approx([100.0, 100.0])


def test_bootstrap_interval_contains_estimate_and_is_seeded(tiny_db):
    first = metrics.metrics_from_db(tiny_db, draws=500, seed=3)
    again = metrics.metrics_from_db(tiny_db, draws=500, seed=3)
    other = metrics.metrics_from_db(tiny_db, draws=500, seed=4)
    assert first.equals(again)
    assert not first.equals(other)
    assert (first["seed"] == 3).all() and (first["draws"] == 500).all()
    defined = first.filter(pl.col("conf_low").is_not_null())
    assert (defined["conf_low"] <= defined["estimate"] + 1e-9).all()
    assert (defined["estimate"] <= defined["conf_high"] + 1e-9).all()
    # m1's CFR is undefined in a replicate that draws only F4 (its one wrong source):
    # P = (1/3)^3 per replicate, so about 500/27 ≈ 18.5 of 500 are left out.
    cfr = first.filter((pl.col("model") == "m1") & (pl.col("metric") == "cfr")).row(0, named=True)
    assert 5 <= cfr["draws_undefined"] <= 40


def test_paired_input_comparison_counts(tiny_db):
    # dipole_norm → dipole_norm: every family both right or both wrong, Δ = 0.
    outcomes = compare.read_condition_outcomes(tiny_db, channels=["dipole_norm"], condition="source")
    same = compare.paired_inputs(outcomes, from_channel="dipole_norm", to_channel="dipole_norm", draws=100)
    m1 = same.filter(pl.col("model") == "m1").row(0, named=True)
    assert (m1["n"], m1["both_correct"], m1["gain"], m1["loss"], m1["both_wrong"]) == (3, 2, 0, 0, 1)
    assert m1["delta"] == 0.0 and m1["conf_low"] == 0.0 and m1["conf_high"] == 0.0


def test_paired_cf_tasks_meet_their_counterpart_by_target():
    # One family, cf tasks for k1 and k2. Under X, k1 right and k2 wrong; under Y the
    # reverse: one gain and one loss (not four quarter-counts), Δ = 0.
    outcomes = pl.DataFrame(
        {
            "model": ["m"] * 4,
            "channel": ["X", "X", "Y", "Y"],
            "family_id": ["F1"] * 4,
            "target": ["B", "C", "B", "C"],
            "y": [1.0, 0.0, 0.0, 1.0],
        }
    )
    row = compare.paired_inputs(outcomes, from_channel="X", to_channel="Y", condition="cf", draws=0).row(0, named=True)
    assert (row["n"], row["tasks"], row["both_correct"], row["gain"], row["loss"], row["both_wrong"], row["delta"]) == (
        1,
        2,
        0.0,
        1.0,
        1.0,
        0.0,
        0.0,
    )


def test_model_transitions_golden(tiny_db):
    # source tasks of F1, F2, F4: m1 = (1, 1, 0), m2 = (1, 0, 1)
    # both 1/3, m1 only 1/3, m2 only 1/3, both wrong 0; net = 66.7 − 66.7 = 0
    outcomes = compare.read_condition_outcomes(tiny_db, channels=["dipole_norm"], condition="source")
    row = compare.model_transitions(outcomes, channel="dipole_norm", condition="source", draws=0).row(0, named=True)
    assert (row["model_a"], row["model_b"], row["tasks"], row["families"]) == ("m1", "m2", 3, 3)
    assert [row[k] for k in ("both_correct", "a_only", "b_only", "both_wrong", "net")] == pytest.approx(
        [100 / 3, 100 / 3, 100 / 3, 0.0, 0.0]
    )
    # cf tasks (5): m1 = (1, 0, 1, 0, 0), m2 = (0, 1, 0, 1, 1): never both right.
    cf = compare.read_condition_outcomes(tiny_db, channels=["dipole_norm"], condition="cf")
    row = compare.model_transitions(cf, channel="dipole_norm", condition="cf", draws=0).row(0, named=True)
    assert [row[k] for k in ("tasks", "both_correct", "a_only", "b_only", "both_wrong", "net")] == pytest.approx(
        [5, 0.0, 40.0, 60.0, 0.0, 20.0]
    )


def test_paper_check_figure_paired_bootstrap():
    """The paper's check figure: 136 paired families, 9 gains and 16 losses → Δ = −5.1 pp, 95% [−12.5, 2.2].

    Δ = (9 − 16) / 136 = −5.147 pp. The interval is a Monte Carlo quantity; with
    10,000 draws its ends move by a few tenths of a pp from seed to seed.
    """
    x = [1.0] * 16 + [0.0] * 9 + [1.0] * 60 + [0.0] * 51  # 16 losses, 9 gains, 60 both right, 51 both wrong
    y = [0.0] * 16 + [1.0] * 9 + [1.0] * 60 + [0.0] * 51
    families = [f"F{i:03d}" for i in range(136)]
    outcomes = pl.DataFrame(
        {
            "model": ["m"] * 272,
            "channel": ["X"] * 136 + ["Y"] * 136,
            "family_id": families * 2,
            "target": ["A"] * 272,
            "y": x + y,
        }
    )
    row = compare.paired_inputs(outcomes, from_channel="X", to_channel="Y", seed=0).row(0, named=True)
    assert (row["n"], row["gain"], row["loss"], row["both_correct"], row["both_wrong"]) == (136, 9, 16, 60, 51)
    assert row["delta"] == pytest.approx(-700 / 136)
    assert row["conf_low"] == pytest.approx(-12.5, abs=0.8)
    assert row["conf_high"] == pytest.approx(2.2, abs=0.8)
    assert row["draws"] == 10_000


def _discordant(gain: int, loss: int, families: int = 136) -> pl.DataFrame:
    """One task a family under inputs X and Y: ``gain`` families right under Y only, ``loss`` under X only,
    the rest right under both or neither (they do not move the difference's bootstrap)."""
    both = (families - gain - loss) // 2
    rest = families - gain - loss - both
    x = [0.0] * gain + [1.0] * loss + [1.0] * both + [0.0] * rest
    y = [1.0] * gain + [0.0] * loss + [1.0] * both + [0.0] * rest
    names = [f"F{i:03d}" for i in range(families)]
    return pl.DataFrame(
        {
            "model": ["m"] * 2 * families,
            "channel": ["X"] * families + ["Y"] * families,
            "family_id": names * 2,
            "target": ["A"] * 2 * families,
            "y": x + y,
        }
    )


def _exact_percentile_interval(gain: int, loss: int, families: int = 136) -> tuple[float, float]:
    """The paired family bootstrap's percentile interval of Δ = (G − L)/n with infinitely many draws: the
    2.5% and 97.5% quantiles of G − L, where a resample of n families holds G ~ Bin(n, gain/n) gains and,
    given G, L ~ Bin(n − G, loss/(n − gain)) losses (the concordant families do not move it)."""
    from scipy import stats

    pmf: dict[int, float] = {}
    for g in range(families + 1):
        weight = stats.binom.pmf(g, families, gain / families)
        losses = np.arange(families - g + 1)
        for count, p in zip(losses, stats.binom.pmf(losses, families - g, loss / (families - gain))):
            pmf[g - int(count)] = pmf.get(g - int(count), 0.0) + weight * p
    values = np.array(sorted(pmf))
    cumulative = np.cumsum([pmf[v] for v in values])
    low, high = values[np.searchsorted(cumulative, 0.025)], values[np.searchsorted(cumulative, 0.975)]
    return 100 * low / families, 100 * high / families


@pytest.mark.parametrize(
    ("model", "gain", "loss", "paper"),
    [
        ("Luna", 9, 16, (-5.1, -12.5, 2.2)),
        ("Sol", 7, 2, (3.7, -0.7, 8.1)),
        ("Astra", 4, 1, (2.2, -0.7, 5.9)),
    ],
)
def test_the_percentile_rule_reproduces_the_papers_table_12(model, gain, loss, paper):
    """The paper's Table 12 (vibrational bundle → all channels, 136 families): Δ and its paired family
    bootstrap percentile interval. Luna's discordant counts are the paper's (its check figure); Sol's and
    Astra's are not in this repository and are read back from the table: on 136 families Δ = (gain −
    loss)/136 fixes gain − loss (5 and 3), and of the splits with loss 0–5 only 7/2 and 4/1 give the
    paper's interval. Checked two ways: the percentile interval with infinitely many draws (exact, from
    binomial probabilities; an implementation independent of the package's) is the paper's to its
    0.1 pp; and ``interval="percentile"`` at its default 10,000 draws is that exact interval to within
    one step of its lattice, 1/136 = 0.74 pp (a 2.5% quantile from 10,000 draws moves by a step from
    seed to seed). Astra's 4/1 under the score rule (MOVER) gives [−1.7, 6.7], the figure the package
    printed for it before the interval rule was a choice."""
    outcomes = _discordant(gain, loss)
    exact = _exact_percentile_interval(gain, loss)
    assert (round(100 * (gain - loss) / 136, 1), *(round(end, 1) for end in exact)) == paper
    row = compare.paired_inputs(outcomes, from_channel="X", to_channel="Y", interval="percentile").row(0, named=True)
    assert row["method"] == "family_bootstrap_percentile" and row["draws"] == 10_000
    assert row["delta"] == pytest.approx(100 * (gain - loss) / 136)
    step = 100 / 136
    assert abs(row["conf_low"] - exact[0]) <= step + 1e-9 and abs(row["conf_high"] - exact[1]) <= step + 1e-9
    if model == "Astra":
        score = compare.paired_inputs(outcomes, from_channel="X", to_channel="Y", interval="score").row(0, named=True)
        assert (round(score["conf_low"], 1), round(score["conf_high"], 1)) == (-1.7, 6.7)


def test_family_bootstrap_matches_scipy_percentile():
    """For a per-family mean the family bootstrap is scipy's ordinary bootstrap over families."""
    import numpy as np
    from scipy import stats

    rng = np.random.default_rng(11)
    y = (rng.uniform(size=80) < 0.6).astype(float)
    outcomes = pl.DataFrame(
        {
            "model": ["m"] * 80,
            "channel": ["ir"] * 80,
            "family_id": [f"F{i:02d}" for i in range(80)],
            "y_p0": y,
            "y_source": y,
            "y_shuffled": y,
            "cf_tasks": [1] * 80,
            "cf_correct": y,
            "cf_flip": y,
            "cf_persist": 1 - y,
            "cf_other": [0.0] * 80,
            "n_candidates": [4] * 80,
        }
    )
    ours = metrics.compute_metrics(outcomes, metrics=("acc_source",), draws=20_000, seed=5).row(0, named=True)
    ref = stats.bootstrap(
        (y * 100,), np.mean, method="percentile", n_resamples=20_000, random_state=np.random.default_rng(6)
    ).confidence_interval
    # Monte Carlo error of a 2.5% quantile with 20,000 draws is about 0.2 pp here.
    assert ours["conf_low"] == pytest.approx(ref.low, abs=1.0)
    assert ours["conf_high"] == pytest.approx(ref.high, abs=1.0)


def test_empty_cohort_channel_is_reported_not_dropped():
    outcomes = pl.DataFrame(
        schema={
            "model": pl.String,
            "channel": pl.String,
            "family_id": pl.String,
            "y_p0": pl.Float64,
            "y_source": pl.Float64,
            "y_shuffled": pl.Float64,
            "cf_tasks": pl.Int64,
            "cf_correct": pl.Float64,
            "cf_flip": pl.Float64,
            "cf_persist": pl.Float64,
            "cf_other": pl.Float64,
            "n_candidates": pl.Int64,
        }
    )
    result = metrics.compute_metrics(outcomes, channels=["gap"], models=["m"], metrics=("pgr",))
    row = result.row(0, named=True)
    assert row["estimate"] is None and row["n"] == 0 and row["channel"] == "gap"
    assert not math.isnan(row["conf_level"])


def test_separability_golden(tiny_db):
    # Source-to-nearest-distractor dipole distances (D): F1 A=1.0 → B 2.0: 1.0; F2 B=1.5 → A 1.0: 0.5;
    # F3 A=0.5 → B 0.6: 0.1 (below 0.30); F4 B=1.0 → A 0.0: 1.0; F5 A=0.0 → B 1.0: 1.0.
    # Separated 4 of 5 = 80%; sorted 0.1, 0.5, 1, 1, 1: median 1.0, Q1 0.5, Q3 1.0.
    row = tiny_db.sql("SELECT * FROM separability").pl().row(0, named=True)
    assert row["channel"] == "dipole_norm" and row["source_tasks"] == 5 and row["verifiable"] == 5
    assert row["separated"] == pytest.approx(80.0)
    assert (row["nearest_median"], row["nearest_q1"], row["nearest_q3"]) == pytest.approx((1.0, 0.5, 1.0))
    assert row["scale"] == "raw"


def test_frequentist_companions_golden(tiny_db):
    # m1's acc_p0 = 2 of 3. Wilson (z = 1.96): centre (2 + z²/2)/(3 + z²) = 3.9208/6.8416 = 0.5731,
    # half-width z/(3 + z²)·√(3·⅔·⅓ + z²/4) = 0.28648·1.27564 = 0.36545 → [20.77, 93.85] %.
    # Clustered SE: R = ⅔, residuals (⅓, −⅔, ⅓), Σ r² = ⅔, · F/(F−1) = 1.5 → 1, √1 / Σ b (3) = 33.33 pp;
    # independent SE √(⅔·⅓/3) = 27.22 pp; design effect (33.33/27.22)² = 1.5.
    outcomes, channels, models = metrics.read_family_outcomes(tiny_db)
    table = metrics.frequentist_companions(outcomes, channels=channels, models=models, metrics=("acc_p0", "pgr"))
    row = table.filter((pl.col("model") == "m1") & (pl.col("metric") == "acc_p0")).row(0, named=True)
    assert (row["wilson_low"], row["wilson_high"]) == pytest.approx((20.77, 93.85), abs=0.01)
    assert (row["se_clustered"], row["se_independent"], row["design_effect"]) == pytest.approx(
        (100 / 3, 27.2166, 1.5), abs=1e-3
    )
    pgr = table.filter((pl.col("model") == "m1") & (pl.col("metric") == "pgr")).row(0, named=True)
    assert pgr["wilson_low"] is None and pgr["se_clustered"] == pytest.approx(25.0)  # PGR per family .75, .75, 0


def test_holm_over_several_pairs():
    # Three models on 20 tasks of 20 families: m1 right on tasks 0–9, m2 never, m3 on 0–3 and 10.
    # Discordant counts (A only vs B only) and exact two-sided p-values:
    #   m1–m2: 10 vs 0 → 2·0.5^10 = 0.001953;  m1–m3: 6 (4–9) vs 1 (10) → 2·(1 + 7)/128 = 0.125;
    #   m2–m3: 0 vs 5 → 2·0.5^5 = 0.0625.
    # Holm, smallest first: 0.001953·3 = 0.005859; 0.0625·2 = 0.125; max(0.125·1, 0.125) = 0.125.
    m1 = [1.0 if i < 10 else 0.0 for i in range(20)]
    m2 = [0.0] * 20
    m3 = [1.0 if i < 4 or i == 10 else 0.0 for i in range(20)]
    tasks = [f"T{i:02d}" for i in range(20)]
    rows = [
        {"model": name, "task_id": t, "family_id": t, "y": y}
        for name, ys in (("m1", m1), ("m2", m2), ("m3", m3))
        for t, y in zip(tasks, ys)
    ]
    result = compare.model_transitions(pl.DataFrame(rows), channel="ir", condition="source", draws=0)
    p = dict(zip(zip(result["model_a"], result["model_b"]), zip(result["p_value"], result["p_adjusted"])))
    assert p[("m1", "m2")] == pytest.approx((2 * 0.5**10, 3 * 2 * 0.5**10))
    assert p[("m1", "m3")] == pytest.approx((0.125, 0.125))
    assert p[("m2", "m3")] == pytest.approx((0.0625, 0.125))


# With invalid answers left out (--invalid exclude). m1 has one invalid answer in the
# cohort, F2's cf-C; m2 has none, so its figures do not move.
GOLDEN_EXCLUDE = {
    ("m1", "cf_accuracy"): (100 * 2 / 4, 3),  # F1B ✓ F1C ✗ F2A ✓ F4A ✗ (F2C left out)
    ("m1", "pgr"): (100 * 1.75 / 3, 3),  # F1 .75, F2 ½·1 + ½·(1/1) = 1, F4 0
    ("m1", "cfr"): (75.0, 2),  # w = (1, 1, 0): (½ + 1) / 2
    ("m1", "persist"): (25.0, 2),  # (½ + 0) / 2
    ("m1", "other"): (0.0, 2),  # the only "other" answer was the invalid one
    ("m1", "acc_source"): (100 * 2 / 3, 3),  # unchanged: no invalid source answer
    ("m2", "pgr"): (100 * 2 / 3, 3),
}


@pytest.mark.parametrize(("model", "metric"), sorted(GOLDEN_EXCLUDE))
def test_invalid_answers_left_out(tiny_db, model, metric):
    result = metrics.metrics_from_db(tiny_db, draws=0, invalid="exclude")
    row = result.filter((pl.col("model") == model) & (pl.col("metric") == metric)).row(0, named=True)
    estimate, n = GOLDEN_EXCLUDE[(model, metric)]
    assert math.isclose(row["estimate"], estimate, abs_tol=1e-9)
    assert row["n"] == n and row["invalid"] == "exclude"


def test_a_family_without_a_valid_answer_leaves_the_metric():
    # F1's source answer is invalid (y_source_valid null): it leaves acc_source, RM and PGR,
    # and n counts the one family that entered; acc_p0 keeps both.
    base = {"model": ["m", "m"], "channel": ["ir", "ir"], "family_id": ["F1", "F2"], "n_candidates": [2, 2]}
    values = {
        "y_p0": [1.0, 0.0],
        "y_source": [0.0, 1.0],
        "y_shuffled": [0.0, 0.0],
        "cf_tasks": [1, 1],
        "cf_correct": [1.0, 0.0],
        "cf_flip": [1.0, 0.0],
        "cf_persist": [0.0, 1.0],
        "cf_other": [0.0, 0.0],
    }
    valid = {**{f"{k}_valid": v for k, v in values.items()}, "y_source_valid": [None, 1.0]}
    outcomes = pl.DataFrame({**base, **values, **valid})
    result = metrics.compute_metrics(
        outcomes, draws=0, invalid="exclude", metrics=("acc_p0", "acc_source", "reliance_margin", "pgr")
    )
    got = {r["metric"]: (r["estimate"], r["n"]) for r in result.iter_rows(named=True)}
    assert got == {
        "acc_p0": (50.0, 2),
        "acc_source": (100.0, 1),
        "reliance_margin": (100.0, 1),
        "pgr": (50.0, 1),
    }  # F2: ½·1 + ½·0
    wrong = metrics.compute_metrics(outcomes, draws=0, metrics=("acc_source",))
    assert wrong["estimate"].to_list() == [50.0] and wrong["invalid"].to_list() == ["wrong"]


def test_a_frame_with_the_old_cf_recovery_name_still_computes():
    outcomes = pl.DataFrame(
        {
            "model": ["m", "m"],
            "channel": ["ir", "ir"],
            "family_id": ["F1", "F2"],
            "y_p0": [0.0, 1.0],
            "y_source": [1.0, 0.0],
            "y_shuffled": [0.0, 0.0],
            "cf_tasks": [2, 1],
            "cf_correct": [1.0, 1.0],
            "cf_flip": [0.5, 1.0],
            "cf_persist": [0.5, 0.0],
            "cf_other": [0.0, 0.0],
            "n_candidates": [3, 2],
        }
    )
    new = metrics.compute_metrics(outcomes, draws=0, metrics=("pgr", "cfr"))
    old = metrics.compute_metrics(outcomes.rename({"cf_flip": "cf_recovery"}), draws=0, metrics=("pgr", "cfr"))
    assert old.equals(new)
    # cfr: only F1 has its source right, and half its cf answers follow k: 50%
    assert new.filter(pl.col("metric") == "cfr")["estimate"].item() == pytest.approx(50.0)


def test_p0_accuracy_counts_each_cohort_family_once():
    # IR's cohort is F1, F2; the gap's F2, F3; P0 right in F1 and F3, wrong in F2. Over the
    # union {F1, F2, F3}: 2/3 = 66.7 %; over each cohort: 1/2 = 50 %.
    def row(channel, family, y):
        return {
            "model": "m",
            "channel": channel,
            "family_id": family,
            "y_p0": y,
            "y_source": 1.0,
            "y_shuffled": 0.0,
            "cf_tasks": 1,
            "cf_correct": 0.0,
            "cf_flip": 0.0,
            "cf_persist": 1.0,
            "cf_other": 0.0,
            "n_candidates": 2,
        }

    outcomes = pl.DataFrame([row("ir", "F1", 1.0), row("ir", "F2", 0.0), row("gap", "F2", 0.0), row("gap", "F3", 1.0)])
    p0 = metrics.p0_accuracy(outcomes, draws=0)
    assert p0.select("channel", "metric", "n").row(0) == ("none", "acc_p0", 3)
    assert p0["estimate"][0] == pytest.approx(200 / 3)
    per_cohort = metrics.compute_metrics(outcomes, draws=0, metrics=("acc_p0",))
    assert per_cohort["estimate"].to_list() == [50.0, 50.0]
