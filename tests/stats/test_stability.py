"""Ranking stability and rank intervals on hand-built cases."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from molp2s_stats.stats import stability


def outcomes_from(pgr_by_model: dict[str, list[float]], channel: str = "ir") -> pl.DataFrame:
    """family_outcomes rows whose PGR per family is the given value (source = cf recovery = value)."""
    rows = []
    for model, values in pgr_by_model.items():
        for i, v in enumerate(values):
            rows.append(
                {
                    "model": model,
                    "channel": channel,
                    "family_id": f"F{i:03d}",
                    "y_p0": 0.0,
                    "y_source": v,
                    "y_shuffled": 0.0,
                    "cf_tasks": 1,
                    "cf_correct": v,
                    "cf_flip": v,
                    "cf_persist": 1 - v,
                    "cf_other": 0.0,
                    "n_candidates": 4,
                }
            )
    return pl.DataFrame(rows)


def test_a_ranking_that_cannot_change():
    # Every family gives the same score per model (0.9, 0.5, 0.1): any subset ranks them
    # the same and moves no score, so ρ = 1, Exact = 100 %, MAD = 0.
    outcomes = outcomes_from({"m1": [0.9] * 40, "m2": [0.5] * 40, "m3": [0.1] * 40})
    result = stability.ranking_stability(
        outcomes, score="pgr", channels=["ir"], models=["m1", "m2", "m3"], sizes=(5, 20, 60), draws=200, seed=1
    )
    assert result["size"].to_list() == [5, 20, 40]  # 60 is capped at the cohort size
    assert result["spearman_rho"].to_list() == pytest.approx([1.0, 1.0, 1.0])
    assert result["exact"].to_list() == [100.0, 100.0, 100.0]
    assert result["mad"].to_list() == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)


def test_a_ranking_that_must_change():
    # m1 and m2 tie overall (20 of 40 families each, on disjoint halves); m3 is always last.
    # A subset of 5 families almost never splits them 50/50, so the full ranking
    # (m1 = m2 tied at 1.5) is rarely reproduced, and the scores move: MAD > 0.
    m1 = [1.0] * 20 + [0.0] * 20
    m2 = [0.0] * 20 + [1.0] * 20
    outcomes = outcomes_from({"m1": m1, "m2": m2, "m3": [0.0] * 40})
    row = stability.ranking_stability(
        outcomes, score="pgr", channels=["ir"], models=["m1", "m2", "m3"], sizes=(5,), draws=500, seed=2
    ).row(0, named=True)
    assert row["exact"] < 5.0  # a 5-family draw is never a tie: 5 is odd
    assert row["mad"] > 10.0
    assert 0.0 < row["spearman_rho"] < 1.0


def test_subsample_weights_draw_without_replacement():
    weights = stability.subsample_weights(10, 4, 50, np.random.default_rng(0))
    assert weights.shape == (50, 10)
    assert (weights.sum(axis=1) == 4).all() and set(np.unique(weights)) == {0.0, 1.0}


def test_macro_mean_over_channels():
    a = outcomes_from({"m1": [0.9] * 30, "m2": [0.2] * 30}, channel="ir")
    b = outcomes_from({"m1": [0.8] * 20, "m2": [0.1] * 20}, channel="raman")
    row = stability.ranking_stability(
        pl.concat([a, b]),
        score="pgr",
        channels=["ir", "raman"],
        models=["m1", "m2"],
        macro=True,
        sizes=(25,),
        draws=100,
    ).row(0, named=True)
    assert row["channel"] == "macro" and row["size"] == 20  # capped at the smaller cohort
    assert (row["spearman_rho"], row["exact"]) == (1.0, 100.0)


def test_rank_intervals_separate_clear_tiers():
    outcomes = outcomes_from({"m1": [0.9] * 30, "m2": [0.5] * 15 + [0.75] * 15, "m3": [0.625] * 30})
    intervals, distribution = stability.rank_intervals(
        outcomes, channels=["ir"], models=["m1", "m2", "m3"], draws=400, seed=3
    )
    m1 = intervals.filter(pl.col("model") == "m1").row(0, named=True)
    assert (m1["rank"], m1["rank_low"], m1["rank_high"]) == (1.0, 1.0, 1.0)
    # m2 (mean 0.625, varying) and m3 (0.625; binary fractions, so an exact tie) swap in replicates
    m2 = intervals.filter(pl.col("model") == "m2").row(0, named=True)
    assert m2["rank"] == 2.5 and m2["rank_low"] == 2.0 and m2["rank_high"] == 3.0
    sums = distribution.group_by("model").agg(pl.col("probability").sum())
    assert sums["probability"].to_list() == pytest.approx([1.0, 1.0, 1.0])


def test_stability_needs_two_models_and_a_known_score():
    outcomes = outcomes_from({"m1": [0.5] * 5})
    with pytest.raises(ValueError, match="two models"):
        stability.ranking_stability(outcomes, channels=["ir"], models=["m1"])
    with pytest.raises(ValueError, match="score"):
        stability.ranking_stability(outcomes, score="acc", channels=["ir"], models=["m1", "m2"])


def test_two_models_at_the_ceiling_share_the_top_and_the_channel_is_saturated():
    # 80 families: a and b right on all of them (b wrong on one), c right on half. a and b are not
    # separated (rank range 1–2, one tie group), c is behind both (rank 3–3), and both top models'
    # lower ends are above 90% (a: 80 / (80 + t(79)²) = 95.3%), so the channel is saturated.
    outcomes = outcomes_from({"a": [1.0] * 80, "b": [1.0] * 79 + [0.0], "c": [1.0, 0.0] * 40})
    ranks, _ = stability.rank_intervals(outcomes, channels=["ir"], models=["a", "b", "c"], draws=500, seed=1)
    rows = {r["model"]: r for r in ranks.iter_rows(named=True)}
    assert [(rows[m]["rank_low"], rows[m]["rank_high"], rows[m]["tier"]) for m in "abc"] == [
        (1.0, 2.0, 1),
        (1.0, 2.0, 1),
        (3.0, 3.0, 2),
    ]
    assert ranks["saturated"].all() and stability.saturated_channels(ranks) == ["ir"]
    assert (ranks["adjustment"] == stability.ADJUSTMENT).all()


def test_a_tie_below_the_saturation_level_is_not_saturation():
    # the same shape at 75%: a and b not separated, but their lower ends are far below 90%
    outcomes = outcomes_from({"a": [1.0, 1.0, 1.0, 0.0] * 20, "b": [1.0, 1.0, 0.0, 1.0] * 20, "c": [1.0, 0.0] * 40})
    ranks, _ = stability.rank_intervals(outcomes, channels=["ir"], models=["a", "b", "c"], draws=500, seed=1)
    assert ranks.filter(pl.col("tier") == 1).height == 2 and not ranks["saturated"].any()


def test_a_clear_leader_is_not_saturated():
    outcomes = outcomes_from({"a": [1.0] * 40, "b": [1.0, 0.0] * 20})
    ranks, _ = stability.rank_intervals(outcomes, channels=["ir"], models=["a", "b"], draws=500, seed=1)
    assert ranks["tier"].to_list() == [1, 2] and not ranks["saturated"].any()


# --- rank ranges: the error rate they state -------------------------------------------------------------


@pytest.mark.parametrize("discordant", [2, 3, 5, 7, 10, 12])
def test_a_pair_is_never_surer_than_exact_mcnemar(discordant):
    """136 families of one task; model 0 right on `discordant` more than model 1, the rest agree. With
    no clustering the exact McNemar p-value is the binomial test's, 2 · 2^-k (scipy); the package's is
    never below it (the bootstrap alone said 1.5e-3 at k = 7, where McNemar says 0.016)."""
    from scipy import stats

    a = np.zeros((136, 2))
    a[:60] = 1.0
    a[60 : 60 + discordant, 0] = 1.0
    weights = np.random.default_rng(1).multinomial(136, np.full(136, 1 / 136), size=2000).astype(float)
    p = stability.pairwise_p_values(weights, a, np.ones((136, 2)))[0, 1]
    assert p >= stats.binomtest(discordant, discordant, 0.5).pvalue - 1e-12
    assert p >= 1 / 2001  # never 0


def test_the_sign_flip_test_is_exact_mcnemar_without_clustering():
    # 7 discordant families all one way: 2 / 2^7 = 0.015625; 5 one way and 2 the other: P(|S| ≥ 3) over
    # 2^7 patterns = 2 · (1 + 7 + 21) / 128 = 0.453125, scipy's binomial test on 5 of 7
    from scipy import stats

    assert stability.sign_flip_p_value(np.array([1.0] * 7 + [0.0] * 50)) == 0.015625
    mixed = np.array([1.0] * 5 + [-1.0] * 2)
    assert stability.sign_flip_p_value(mixed) == pytest.approx(stats.binomtest(5, 7).pvalue)
    assert stability.sign_flip_p_value(np.zeros(10)) == 1.0


@pytest.mark.parametrize("right, wrong", [(17, 0), (15, 5), (30, 14), (60, 40), (25, 25)])
def test_beyond_exact_enumeration_the_sign_flip_is_still_exact_mcnemar(right, wrong):
    """Past 16 families the sign patterns are counted on a lattice: on one-task families that is still
    the exact binomial test (scipy), 15 vs 5 gives 0.0414."""
    from scipy import stats

    x = np.array([1.0] * right + [-1.0] * wrong)
    assert stability.sign_flip_p_value(x) == pytest.approx(stats.binomtest(right, right + wrong).pvalue, rel=1e-9)


def test_uneven_and_tiny_contributions_never_make_the_sign_flip_surer_than_its_exact_value():
    # two heavy families and 15 light ones (every pattern counted by brute force), and 12 vs 2 discordant
    # families beside ten near-zero contributions, which must not split the McNemar test's ties
    import itertools

    from scipy import stats

    x = np.array([1.0, 1.0] + [0.05] * 8 + [-0.05] * 7)
    patterns = np.array(list(itertools.product([-1.0, 1.0], repeat=len(x))))
    exact = float((np.abs(patterns @ x) >= abs(x.sum()) - 1e-12).mean())
    assert stability.sign_flip_p_value(x) >= exact - 1e-12
    tiny = np.array([1.0] * 12 + [-1.0] * 2 + [1e-4] * 10)
    assert stability.sign_flip_p_value(tiny) == pytest.approx(stats.binomtest(12, 14).pvalue)


@settings(max_examples=25, deadline=None)
@given(
    rates=st.lists(st.floats(0.05, 0.95), min_size=3, max_size=5),
    families=st.integers(8, 40),
    seed=st.integers(0, 1000),
)
def test_separations_are_antisymmetric_and_tie_groups_hold_no_separated_pair(rates, families, seed):
    rng = np.random.default_rng(seed)
    a = (rng.random((families, len(rates))) < np.array(rates)).astype(float)
    b = np.ones_like(a)
    weights = rng.multinomial(families, np.full(families, 1 / families), size=200).astype(float)
    p = stability.pairwise_p_values(weights, a, b)
    assert np.array_equal(p, p.T) and (p >= 1 / 201).all() and (p <= 1).all()
    estimates = a.mean(axis=0)
    separated = (p < 0.05) & (estimates[:, None] > estimates[None, :])
    assert not (separated & separated.T).any()  # A ahead of B and B ahead of A never both
    low, high, tier = stability.rank_ranges(estimates, separated)
    for group in np.unique(tier):
        members = np.flatnonzero(tier == group)
        assert not separated[np.ix_(members, members)].any()
    order = stability._ranks(estimates[None])[0]
    assert ((low <= np.floor(order)) & (np.ceil(order) <= high)).all()


def test_a_model_without_a_score_is_listed_apart_and_leaves_the_others_ranges_alone():
    outcomes = outcomes_from({"a": [1.0] * 30, "b": [1.0, 0.0] * 15, "c": [0.0, 1.0, 0.0] * 10})
    # d answers no cf source right anywhere: its CFR is undefined on the cohort
    undefined = outcomes_from({"d": [0.0] * 30})
    kwargs = dict(score="cfr", channels=["ir"], draws=300, seed=2)
    alone, _ = stability.rank_intervals(outcomes, models=["a", "b", "c"], **kwargs)
    both, distribution = stability.rank_intervals(
        pl.concat([outcomes, undefined]), models=["a", "b", "c", "d"], **kwargs
    )
    assert both["model"].to_list()[-1] == "d"
    row = both.row(-1, named=True)
    assert row["rank"] is None and row["tier"] is None and row["estimate"] is None
    columns = ["model", "rank", "rank_low", "rank_high", "tier"]
    assert both.head(3).select(columns).equals(alone.select(columns))
    assert "d" not in distribution["model"].to_list()


@settings(max_examples=15, deadline=None)
@given(
    rates=st.lists(st.floats(0.05, 0.95), min_size=3, max_size=5),
    families=st.integers(8, 60),
    seed=st.integers(0, 1000),
)
def test_pair_verdicts_are_the_rank_ranges_in_words(rates, families, seed):
    """A pair is 'behind' exactly where the rank ranges separate it: a model's rows as model_a that say
    behind are the models separated below it (M − rank_high), its rows as model_b those above it
    (rank_low − 1); and an 'equivalent' pair's estimate lies inside the margin."""
    rng = np.random.default_rng(seed)
    models = [f"m{k}" for k in range(len(rates))]
    values = {m: (rng.random(families) < r).astype(float).tolist() for m, r in zip(models, rates)}
    outcomes = outcomes_from(values)
    kwargs = dict(channels=["ir"], models=models, draws=200, seed=seed)
    ranks, _ = stability.rank_intervals(outcomes, **kwargs)
    pairs = stability.pair_verdicts(outcomes, margin=0.10, **kwargs)
    assert pairs.height == len(models) * (len(models) - 1) // 2
    assert set(pairs["verdict"]) <= {"behind", "equivalent", "undecided"}
    assert (pairs["estimate"] <= 1e-9).all()  # model_a is the better placed
    behind = pairs.filter(pl.col("verdict") == "behind")
    for row in ranks.iter_rows(named=True):
        below = behind.filter(pl.col("model_a") == row["model"]).height
        above = behind.filter(pl.col("model_b") == row["model"]).height
        assert (below, above) == (len(models) - row["rank_high"], row["rank_low"] - 1)
    same_group = dict(ranks.select("model", "tier").iter_rows())
    assert all(same_group[a] != same_group[b] for a, b in behind.select("model_a", "model_b").iter_rows())
    assert (pairs.filter(pl.col("verdict") == "equivalent")["estimate"].abs() < 10.0).all()


@pytest.mark.parametrize(
    "families, verdict",
    # Both perfect: no family differs, so the 90% interval is MOVER's ±t²/(F + t²) with t = t(F − 1) at
    # 95% one-sided. F = 30: t = 1.6991, 2.8870 / 32.8870 = ±8.78 pp, wider than 2 pp: undecided.
    # F = 1000: t = 1.6464, 2.7107 / 1002.7107 = ±0.27 pp: equivalent within 2 pp.
    [(30, "undecided"), (1000, "equivalent")],
)
def test_two_perfect_models_are_equivalent_only_where_the_families_can_show_it(families, verdict):
    outcomes = outcomes_from({"a": [1.0] * families, "b": [1.0] * families})
    pairs = stability.pair_verdicts(outcomes, channels=["ir"], models=["a", "b"], draws=200, seed=0)
    row = pairs.row(0, named=True)
    assert (row["estimate"], row["verdict"], row["margin"]) == (0.0, verdict, 2.0)
    assert row["method"] == "family_mover_wilson" and row["p_adjusted"] == 1.0
    half = {30: 4.1829 / 34.1829, 1000: 3.8447 / 1003.8447}[families]  # 95%: t(F − 1) at 97.5%, squared
    assert (row["conf_low"], row["conf_high"]) == pytest.approx((-100 * half, 100 * half), abs=2e-3)
    asked = stability.pair_verdicts(
        outcomes, channels=["ir"], models=["a", "b"], draws=200, seed=0, test="non_inferiority"
    )
    assert asked["verdict"][0] == {"undecided": "undecided", "equivalent": "non-inferior"}[verdict]


def test_pair_verdicts_of_a_clear_gap_and_a_ceiling_tie():
    # the saturated example above: a and b not separated (one failure in 80 families), c behind both
    outcomes = outcomes_from({"a": [1.0] * 80, "b": [1.0] * 79 + [0.0], "c": [1.0, 0.0] * 40})
    pairs = stability.pair_verdicts(outcomes, channels=["ir"], models=["a", "b", "c"], draws=500, seed=1)
    words = {(a, b): v for a, b, v in pairs.select("model_a", "model_b", "verdict").iter_rows()}
    assert words[("a", "c")] == words[("b", "c")] == "behind"
    assert words[("a", "b")] == "undecided"  # −1.25 pp, but its 90% interval reaches below −2 pp
    with pytest.raises(ValueError, match="non_inferiority"):
        stability.pair_verdicts(outcomes, channels=["ir"], models=["a", "b"], test="superiority")
