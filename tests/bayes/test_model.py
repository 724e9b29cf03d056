"""The hierarchical model's data and structure (no sampling here: see the issue 5 note)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from molp2s_stats import bayes, store
from molp2s_stats.bayes import data as bayes_data
from molp2s_stats.bayes import density, numba_density
from molp2s_stats.bayes import model as bayes_model


@pytest.fixture(scope="module")
def tiny(tiny_database):
    con = store.connect(tiny_database, read_only=True)
    try:
        return bayes_data.read_model_data(con)
    finally:
        con.close()


def test_cells_pool_cf_tasks_and_cover_the_cohort(tiny):
    # Cohort F1, F2, F4 in dipole_norm; 2 models. Cells: 2 models × 3 families × 3 conditions = 18;
    # cf cells pool the family's cf tasks: F1 and F2 have 2 each, F4 has 1.
    assert tiny.cells.height == 18
    cf = tiny.cells.filter(tiny.cells["condition"] == "cf").sort("model", "family_id")
    assert cf["trials"].to_list() == [2, 2, 1, 2, 2, 1]
    # m1's cf successes: F1 1 (B right, C→A), F2 1 (A right, C invalid), F4 0
    assert cf.filter(cf["model"] == "m1")["successes"].to_list() == [1, 1, 0]
    # P0 rows: one per model and cohort family
    assert tiny.p0.height == 6 and tiny.p0["trials"].sum() == 6
    assert tiny.n_candidates == pytest.approx((3 + 3 + 2) / 3)


@pytest.mark.parametrize("family_effects", [True, False])
def test_model_builds_with_finite_log_density(tiny, family_effects):
    model = bayes_model.build_model(tiny, family_effects=family_effects)
    point = model.initial_point()
    logp = model.compile_logp()(point)
    assert np.isfinite(logp)
    names = {v.name for v in model.free_RVs}
    assert {"condition_mean", "channel_sd", "channel_z", "p0_mean"} <= names
    assert ("family_z_raw" in names) == family_effects  # sampled raw; family_z is its standardised form
    # zero-sum over channels: one channel leaves no free channel deviation
    assert point["channel_z_zerosum__"].shape == (2, 3, 0)


# ---------------------------------------------------------------- a small real fit


def _small_simulated_db(root):
    """40 families × 2 channels, 2 simulated models: one relies on the properties, one does not."""
    from molp2s_stats import simulate
    from tests.support.simulated_benchmark import write_simulated

    models = (
        simulate.SimulatedModel("sim-relies", 0.0, {"*": 2.5}, {"*": 0.7}, invalid=0.0, raw_text_share=0.0),
        simulate.SimulatedModel("sim-ignores", 0.0, {"*": 0.0}, {"*": 0.05}, invalid=0.0, raw_text_share=0.0),
    )
    return write_simulated(root, families=40, channels=("dipole_norm", "gap"), models=models, seed=5)


@pytest.fixture(scope="module")
def small_fit(tmp_path_factory):
    from molp2s_stats.bayes import fit as bayes_fit

    root = tmp_path_factory.mktemp("fit")
    db, truth = _small_simulated_db(root)
    con = store.connect(db, read_only=True)
    data = bayes_data.read_model_data(con)
    con.close()
    idata = bayes_fit.fit(
        data, draws=250, tune=250, chains=2, seed=3, loo=True, budget=0
    )  # one attempt: made to miss the gate
    path = root / "fit.nc"
    idata.to_netcdf(str(path))
    return idata, truth, path, db


def test_probability_draws_are_computed_once_per_fit(small_fit):
    import arviz as az

    from molp2s_stats.bayes import posterior

    idata, _, path, _ = small_fit
    first = posterior.probability_draws(idata)
    assert posterior.probability_draws(idata) is first  # the page's four tables read one computation
    other = az.from_netcdf(str(path))  # the same fit read again: another object, computed afresh
    again = posterior.probability_draws(other)
    assert again is not first
    for channel, values in first.items():
        np.testing.assert_allclose(again[channel]["reliance"], values["reliance"], rtol=1e-5)  # float32 as saved


def test_posterior_separates_a_reliant_model_from_an_ignoring_one(small_fit):
    import polars as pl

    from molp2s_stats.bayes import posterior
    from molp2s_stats.glossary import check_columns

    idata, truth, _, _ = small_fit
    reliance = posterior.quantities(idata, "reliance")
    check_columns(reliance.columns)
    assert ((reliance["conf_low"] <= reliance["estimate"]) & (reliance["estimate"] <= reliance["conf_high"])).all()
    assert (reliance["method"] == "posterior").all() and (reliance["conf_level"] == 0.94).all()
    by = {(r["model"], r["channel"]): r for r in reliance.iter_rows(named=True)}
    for channel in ("dipole_norm", "gap"):
        strong, none = by[("sim-relies", channel)], by[("sim-ignores", channel)]
        true_strong = truth.filter(
            (pl.col("model") == "sim-relies") & (pl.col("channel") == channel) & (pl.col("quantity") == "reliance")
        )["value"][0]
        assert strong["conf_low"] > none["conf_high"] - 10  # clearly apart, given 40 families
        assert strong["conf_low"] <= true_strong <= strong["conf_high"] + 5
    contrasts = posterior.contrasts(idata)
    p = contrasts.filter((pl.col("model_a") == "sim-relies") & (pl.col("model_b") == "sim-ignores"))
    assert (p["probability"] > 0.95).all()
    ranks = posterior.ranks(idata)
    assert ranks.group_by("model", "channel").agg(pl.col("probability").sum())[
        "probability"
    ].to_list() == pytest.approx([1.0] * 4)


def test_health_gate_reports_loo_and_fails_loudly(small_fit):
    from molp2s_stats.bayes import health

    idata, _, _, _ = small_fit
    row = health.diagnostics(idata).row(0, named=True)
    assert row["draws"] == 500 and row["draws_per_chain"] == 250 and row["chains"] == 2 and row["seed"] == 3
    assert row["loo_elpd"] is not None and row["loo_difference_se"] > 0
    # 2 × 250 draws cannot reach a bulk ESS of 400: the gate must say so.
    assert row["passed"] is False
    assert "HEALTH GATE" in health.failure_message(row)
    assert health.failure_message({**row, "passed": True}) is None
    # the tail ESS is part of the gate: enough bulk ESS does not hide too few tail draws
    tail_only = {
        **row,
        "passed": False,
        "r_hat_max": 1.0,
        "ess_bulk_min": 900.0,
        "ess_tail_min": 350.0,
        "divergences": 0,
    }
    assert health.failure_message(tail_only).startswith("THE FIT FAILED ITS HEALTH GATE: min tail ESS 350 < 400. ")


def test_loo_read_a_block_of_cells_at_a_time_is_loo_of_the_whole(small_fit, monkeypatch):
    from molp2s_stats.bayes import loo

    idata, _, _, db = small_fit
    con = store.connect(db, read_only=True)
    data = bayes_data.read_model_data(con)
    con.close()
    whole = loo.pointwise_loo(bayes_model.pointwise_log_likelihood(idata, data))
    # 2 models × 2 channels × 3 conditions × 40 families + 2 × 40 P0 = 560 cells: 16 blocks of 37, the last 5
    monkeypatch.setattr(bayes_model, "CELLS_PER_BLOCK", 37)
    blocked = loo.blocked_loo(idata, data)
    assert len(blocked[0]) == data.cells.height + data.p0.height == 560
    np.testing.assert_allclose(blocked[0], whole[0], rtol=1e-12)
    np.testing.assert_allclose(blocked[1], whole[1], rtol=1e-12)
    # the fit's recorded LOO is this one's
    assert idata.posterior.attrs["loo_elpd"] == pytest.approx(float(blocked[0].sum()), rel=1e-9)


def test_fit_and_posterior_commands(small_fit, tmp_path):
    from typer.testing import CliRunner

    from molp2s_stats.cli import app

    _, _, path, db = small_fit
    runner = CliRunner()
    result = runner.invoke(app, ["posterior", str(path), "--what", "reliance", "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert "fit_passed" in result.stdout.splitlines()[0]
    # every column of every posterior table is in the glossary
    import polars as pl

    from molp2s_stats.glossary import check_columns

    for what in ("reliance", "responsiveness", "contrasts", "ranks", "diagnostics"):
        result = runner.invoke(app, ["posterior", str(path), "--what", what, "--format", "csv"])
        assert result.exit_code == 0, (what, result.output)
        check_columns(pl.read_csv(result.stdout.encode()).columns)
    result = runner.invoke(
        app,
        [
            "fit",
            "--db",
            str(db),
            "--draws",
            "50",
            "--tune",
            "50",
            "--chains",
            "2",
            "--budget",
            "0",
            "--no-loo",
            "--out",
            str(tmp_path / "quick.nc"),
        ],
    )
    assert result.exit_code == 3  # unconverged: non-zero unless --allow-unconverged
    assert (tmp_path / "quick.nc").exists()
    # before sampling: the size and the estimate; after: what the budget did not leave time for
    assert "binomial cells," in result.output and " parameters; a leapfrog step takes " in result.output
    assert "The next attempt (" in result.output and "would have taken about" in result.output
    # a warm start from a saved fit of the same cells says what it saved
    result = runner.invoke(
        app,
        [
            "fit",
            "--db",
            str(db),
            "--draws",
            "50",
            "--tune",
            "50",
            "--chains",
            "2",
            "--budget",
            "0",
            "--warm-start",
            str(path),
            "--out",
            str(tmp_path / "warm.nc"),
            "--allow-unconverged",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "warm start: the fit took " in result.output and " s saved" in result.output
    result = runner.invoke(app, ["fit", "--db", str(db), "--warm-start", str(tmp_path / "missing.nc")])
    assert result.exit_code != 0 and "missing.nc: no such fit file" in result.output


def _grid(successes, trials):
    """One model × one condition × channels × one family."""
    s = np.array(successes, dtype=np.int64).reshape(1, 1, -1, 1)
    t = np.array(trials, dtype=np.int64).reshape(1, 1, -1, 1)
    return bayes_model.Grid(
        s,
        t,
        np.zeros((1, 1), np.int64),
        np.zeros((1, 1), np.int64),
        np.arange(len(successes)),
        np.zeros(len(successes), np.int64),
    )


def test_centredness_follows_spread_against_noise():
    # Channels that agree (50/100 each): no spread beyond noise, non-centred (λ = 0).
    assert bayes_model.centredness(_grid([50, 50, 50], [100, 100, 100]))[0, 0] == 0.0
    # Channels far apart with 1,000 answers each: spread ≫ noise, nearly centred.
    assert bayes_model.centredness(_grid([100, 500, 900], [1000, 1000, 1000]))[0, 0] > 0.99
    # By hand for 2 channels, 20/40 and 36/40: shares (20.5/41, 36.5/41) = (0.5, 0.8902);
    # logits (0, 2.0932), sample variance V = 2.1908; noise 1/(41·p(1−p)) = 0.0976, 0.2496,
    # mean s² = 0.1736; the spread at its lower 99% bound is V·1/χ²₁(0.99) − s² =
    # 2.1908 / 6.6349 − 0.1736 = 0.1566, so λ = 0.1566 / (0.1566 + 0.1736) = 0.474.
    assert bayes_model.centredness(_grid([20, 36], [40, 40]))[0, 0] == pytest.approx(0.474, abs=0.001)
    # 20/40 and 30/40: logits (0, 1.0664), V = 0.5686, s² = 0.1128: 0.5686 / 6.6349 = 0.0857 < s²,
    # not counted (a spread that a 1-degree-of-freedom variance shows this weakly is often none at all).
    assert bayes_model.centredness(_grid([20, 30], [40, 40]))[0, 0] == 0.0
    # One channel with answers: nothing to pool, λ = 0.
    assert bayes_model.centredness(_grid([20, 0], [40, 0]))[0, 0] == 0.0


# ---------------------------------------------------------------- the JAX density nutpie samples


def _pymc_point(model, point):
    """The PyMC model's value variables for a point of the JAX density, and the log-Jacobian between them.

    A signed spread s is log|s| on PyMC's log scale and flips the sign of its deviations;
    PyMC's density carries the log transform's Jacobian log|s| that the signed one has not.
    """
    free = model.split(point)
    values, jacobian = {}, 0.0
    signs = {}
    for spread, mask in model.signed.items():
        s = free[spread]
        values[f"{spread}_log__"] = np.where(mask, np.log(np.abs(s)), s)
        jacobian += float(np.where(mask, np.log(np.abs(s)), 0.0).sum())
        signs[density.DEVIATIONS.get(spread)] = np.where(mask, np.sign(s), 1.0)
    for name, kind in model.kinds.items():
        if kind == "spread":
            continue
        value = free[name]
        if name in signs:
            sign = signs[name]
            value = sign.reshape(sign.shape + (1,) * (value.ndim - sign.ndim)) * value
        values[f"{name}_zerosum__" if kind == "zerosum" else name] = value
    return values, jacobian


@pytest.fixture(scope="module")
def two_channels(tmp_path_factory):
    db, _ = _small_simulated_db(tmp_path_factory.mktemp("density"))
    con = store.connect(db, read_only=True)
    data = bayes_data.read_model_data(con)
    con.close()
    return data


def _family_lam(kind: str, pairs: int):
    """λ of the family intercepts and of each family × channel pair: both signed, or log scale with λ > 0."""
    if kind == "signed":
        return 0.0, np.zeros(pairs)
    # exact in float32 (the density keeps λ in float32), so the two densities agree to rounding; pairs
    # non-centred, partly centred, and centred enough to be centred on their family's intercept
    return 0.625, np.array([0.0, 0.375, 0.75])[np.arange(pairs) % 3]


def _every_branch(data, family_effects: bool, family_kind: str, monkeypatch, modules) -> density.Density:
    """The density of ``data`` with λ set by hand in ``modules`` so that every branch is taken: one model ×
    condition's channel effects centred (λ = 0.7), the rest signed; the family effects as ``_family_lam``."""
    lam = np.zeros((2, 3))
    lam[0, 2] = 0.7
    family_lam = _family_lam(family_kind, len(data.family_channels))
    for module in modules:
        monkeypatch.setattr(module, "centredness", lambda counts: lam)
        monkeypatch.setattr(module, "family_centredness", lambda counts: family_lam)
    model = density.density(data, family_effects=family_effects)
    assert model.signed["channel_sd"].tolist() == [[True, True, False], [True, True, True]]
    if family_effects:
        assert bool(model.signed["family_sd"]) == bool(model.signed["family_channel_sd"]) == (family_kind == "signed")
        assert model.pair_shift.any() == (family_kind == "centred")
    return model


@pytest.mark.parametrize("layout", ["grid", "pairs"])
@pytest.mark.parametrize("family_effects, family_kind", [(True, "signed"), (True, "centred"), (False, "signed")])
def test_jax_density_equals_the_pymc_model_up_to_a_constant(
    two_channels, family_effects, family_kind, layout, monkeypatch
):
    """The density nutpie samples against PyMC's, at random points, both signed and log-scale spreads.

    λ is set by hand so that every branch is taken: one model × condition's channel effects
    centred (λ = 0.7), the rest non-centred (signed channel spread); the family effects
    wholly non-centred (signed spreads) or partly centred (log-scale spreads, λ 0.625 for the
    intercepts, 0, 0.375 or 0.75 per family × channel pair, the last centred on its family's
    intercept)."""
    import jax

    model = _every_branch(two_channels, family_effects, family_kind, monkeypatch, (bayes_model, density))
    pymc_logp = bayes_model.build_model(two_channels, family_effects=family_effects).compile_logp()
    rng = np.random.default_rng(0)
    points = [density.initial_point(model, seed) + rng.normal(0, 0.3, model.ndim) for seed in range(4)]
    # one jitted function a precision, evaluated at every point
    evaluate32 = density.log_density_function(model, layout=layout)
    ours32 = [evaluate32(x)[0] for x in points]
    del evaluate32  # while it lives, JAX reuses its traced int32 indices in 64-bit mode (a TypeError)
    with jax.enable_x64(True):
        evaluate64 = density.log_density_function(model, np.float64, layout=layout)
        ours64 = [evaluate64(x)[0] for x in points]
    theirs = []
    for x in points:
        values, jacobian = _pymc_point(model, x)
        theirs.append(float(pymc_logp(values)) - jacobian)
    # the same function up to an additive constant: differences between points agree (to 1e-6:
    # λ is float32 in the density)
    assert np.diff(ours64) == pytest.approx(np.diff(theirs), abs=1e-6)
    assert np.diff(ours32) == pytest.approx(np.diff(theirs), abs=2e-3)


@pytest.mark.parametrize("family_effects, family_kind", [(True, "signed"), (True, "centred"), (False, "signed")])
def test_numba_density_equals_the_jax_density_value_and_gradient(
    two_channels, family_effects, family_kind, monkeypatch
):
    """The hand-written gradient (numba_density) against JAX's automatic one, in float64, at random
    points far from the mode, with every branch taken as in the test above (both read the same
    float32 λ, so they agree to rounding). A cell with no answers is left out of numba's sum: it adds 0."""
    import jax

    model = _every_branch(two_channels, family_effects, family_kind, monkeypatch, (density,))
    # a few cells without answers, as a model that skipped some tasks has
    unanswered = np.random.default_rng(1).random(model.counts.trials.shape) < 0.1
    counts = dataclasses.replace(
        model.counts,
        successes=np.where(unanswered, 0, model.counts.successes),
        trials=np.where(unanswered, 0, model.counts.trials),
    )
    model = dataclasses.replace(model, counts=counts)
    assert numba_density.cell_count(model) < counts.trials.size + counts.p0_trials.size
    ours = numba_density.log_density_function(model)
    rng = np.random.default_rng(5)
    points = [density.initial_point(model, seed) + rng.normal(0, 1.0, model.ndim) for seed in range(6)]
    with jax.enable_x64(True):
        for layout in ("grid", "pairs"):
            reference = density.log_density_function(model, np.float64, layout=layout)
            for x in points:
                value, gradient = ours(x)
                expected_value, expected_gradient = reference(x)
                assert value == pytest.approx(expected_value, rel=1e-12)
                np.testing.assert_allclose(
                    gradient, expected_gradient, rtol=1e-9, atol=1e-9 * np.abs(expected_gradient).max()
                )
            del reference  # see the test above: JAX's traced indices outlive 64-bit mode otherwise


def test_small_models_get_the_numba_gradient_and_a_named_device_gets_jax(two_channels):
    compiled = density.compile_density(two_channels)
    assert compiled.gradient == "numba" and numba_density.cell_count(compiled.model) < bayes.NUMBA_CELLS
    assert density.compile_density(two_channels, device="cpu").gradient == "jax"


@pytest.mark.parametrize("family_kind", ["signed", "centred"])
def test_a_mirrored_point_has_the_same_density_and_draws(two_channels, family_kind, monkeypatch):
    """(s, z) and (−s, −z) for a signed spread: same log density, same reported draws."""
    family_lam = _family_lam(family_kind, len(two_channels.family_channels))
    monkeypatch.setattr(density, "family_centredness", lambda counts: family_lam)
    model = density.density(two_channels)
    x = density.initial_point(model, 7)
    parts = model.split(x.copy())
    mirrored = {name: value.copy() for name, value in parts.items()}
    for spread, deviation in density.DEVIATIONS.items():  # mirror every signed spread and its deviations
        mask = np.asarray(model.signed[spread])
        mirrored[spread] = np.where(mask, -mirrored[spread], mirrored[spread])
        mirrored[deviation] = np.where(
            mask.reshape(mask.shape + (1,) * (mirrored[deviation].ndim - mask.ndim)),
            -mirrored[deviation],
            mirrored[deviation],
        )
    y = np.concatenate([mirrored[name].ravel() for name in model.free_shapes])
    evaluate = density.log_density_function(model)
    assert evaluate(y)[0] == pytest.approx(evaluate(x)[0], rel=1e-6)
    first, second = model.reported(x), model.reported(y)
    assert set(first) == set(model.dims) and set(first) >= {"cell", "channel_sd", "family_channel_z"}
    for name in first:
        np.testing.assert_allclose(first[name], second[name], rtol=1e-12, atol=1e-12)
    assert first["family_channel_sd"] >= 0 and (first["channel_sd"] >= 0).all()
    # zero sums hold in what is reported
    np.testing.assert_allclose(first["channel_z"].sum(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(first["family_z"].sum(), 0, atol=1e-12)


def test_centring_pairs_on_their_family_moves_the_coordinates_not_the_density(two_channels, monkeypatch):
    """The nested centring is a shear of the sampled coordinates (unit Jacobian): the same effects have
    the same log density, to float32 rounding, whether the pairs are shifted by their family's intercept
    or not."""
    lam = np.array([0.0, 0.5, 0.75, 1.0])[np.arange(len(two_channels.family_channels)) % 4]
    monkeypatch.setattr(density, "family_centredness", lambda counts: (0.875, lam))
    shifted = density.density(two_channels)
    monkeypatch.setattr(density, "nested_shift", lambda lam_pairs: np.zeros_like(lam_pairs))
    unshifted = density.density(two_channels)
    assert shifted.pair_shift.any() and not unshifted.pair_shift.any()
    rng = np.random.default_rng(4)
    evaluate_shifted, evaluate_unshifted = (
        density.log_density_function(shifted),
        density.log_density_function(unshifted),
    )
    for seed in range(3):
        x = density.initial_point(shifted, seed) + rng.normal(0, 0.4, shifted.ndim)
        reported = shifted.reported(x)
        y = density.pack(unshifted, density.effects_of(reported))
        assert not np.allclose(x, y)  # other coordinates …
        for name, value in unshifted.reported(y).items():  # … of the same effects
            np.testing.assert_allclose(value, reported[name], rtol=1e-9, atol=1e-9, err_msg=name)
        assert evaluate_unshifted(y)[0] == pytest.approx(evaluate_shifted(x)[0], rel=1e-6)


def test_the_binomial_log_pmf_on_the_logit_scale_is_scipys_and_stays_finite_at_the_ends():
    from scipy import stats
    from scipy.special import expit

    successes, failures = np.array([0.0, 1, 3, 7, 0, 12]), np.array([4.0, 0, 2, 1, 9, 3])
    eta = np.linspace(-6, 6, 13)[:, None] + np.zeros(6)
    expected = stats.binom.logpmf(successes, successes + failures, expit(eta))
    np.testing.assert_allclose(bayes_model.binomial_log_pmf(successes, failures, eta), expected, rtol=1e-10)
    # where σ(η) rounds to 1 (η = 40), binom.logpmf of it gives −inf for one failure; the exact value is
    # log σ(−40) = −40 − log(1 + e^−40), −40 to double precision
    at_the_end = bayes_model.binomial_log_pmf(np.array([0.0]), np.array([1.0]), np.array([40.0]))
    assert at_the_end[0] == pytest.approx(-40.0, rel=1e-15)
    assert bayes_model.binomial_log_pmf(np.array([2.0]), np.array([0.0]), np.array([40.0]))[0] == pytest.approx(
        -2 * np.exp(-40.0), abs=1e-30
    )


def test_the_model_without_family_effects_has_the_same_density_on_cells_pooled_over_families(two_channels):
    """LOO's model without family effects is sampled on ``pooled_over_families``: its η does not depend on
    the family, so Σ_f s_f·η − n_f·log(1 + e^η) = S·η − N·log(1 + e^η): the same log density and gradient
    (they would differ by the binomial coefficients, a constant the density leaves out)."""
    pooled = bayes_data.pooled_over_families(two_channels)
    # one cell per model × channel × condition, one P0 cell per model, every answer kept
    assert pooled.cells.height == len(two_channels.models) * len(two_channels.channels) * 3
    assert pooled.p0.height == len(two_channels.models) and pooled.families == [bayes_data.POOLED_FAMILY]
    for name in ("successes", "trials"):
        assert pooled.cells[name].sum() == two_channels.cells[name].sum()
        assert pooled.p0[name].sum() == two_channels.p0[name].sum()
    assert (pooled.models, pooled.channels, pooled.n_candidates) == (
        two_channels.models,
        two_channels.channels,
        two_channels.n_candidates,
    )
    per_family = density.density(two_channels, family_effects=False)
    summed = density.density(pooled, family_effects=False)
    # the same parameters, stored the same way (the channel effects' centring reads the families' sums)
    assert per_family.free_shapes == summed.free_shapes
    np.testing.assert_array_equal(per_family.lam_of["channel_sd"], summed.lam_of["channel_sd"])
    ours, theirs = numba_density.log_density_function(summed), numba_density.log_density_function(per_family)
    rng = np.random.default_rng(3)
    for seed in range(5):
        x = density.initial_point(per_family, seed) + rng.normal(0, 1.0, per_family.ndim)
        (value, gradient), (expected_value, expected_gradient) = ours(x), theirs(x)
        assert value == pytest.approx(expected_value, rel=1e-12)
        np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-9, atol=1e-9 * np.abs(expected_gradient).max())
