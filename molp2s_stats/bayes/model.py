"""The PyMC model: binary correctness on the logit scale with crossed family effects.

For model m, channel c, condition k ∈ {source, shuffled, cf} and family f (cells of
``data.read_model_data``), and P0 per model and family:

    logit P(right | m, c, k, f) = cell[m, k, c] + σ_f · u_f + σ_fc · v_{f,c}
    cell[m, k, c]               = μ[m, k] + τ[m, k] · z[m, k, c]
    logit P(right | P0, m, f)   = μ0[m] + σ_f · u_f

- ``μ[m, k] ~ Normal(logit(1/K̄), 1.5)`` and ``μ0[m]`` alike: centred at a uniform
  guess among K̄ candidates, wide enough on the logit scale (±3 covers 5–95 % accuracy)
  to let the data speak, narrow enough to keep separable cells finite.
- ``z[m, k, ·] ~ ZeroSumNormal(1)`` over channels, ``τ[m, k] ~ HalfNormal(1)``: a
  model's channels share strength within a condition (partial pooling toward μ[m, k],
  which is then the mean over channels). The spread τ is the model's own: a model
  that treats every channel alike is pooled hard, a specialist barely (a spread shared
  by all models pooled neither well; on simulated data the model's own spread raised the
  correlation of posterior reliance with the truth from 0.88 to 0.92, issue 5 note).
  HalfNormal(1) keeps channel differences within a few logits.
- ``u ~ ZeroSumNormal(1)`` over families, ``v_{f,c} ~ Normal(0, 1)``,
  ``σ_f ~ HalfNormal(1)``, ``σ_fc ~ HalfNormal(0.5)``: family intercepts and family ×
  channel deviations. Families are crossed with models and channels (every model
  answers every family), not nested. How centred each is sampled is read off the counts
  (``family_centredness``): a family's intercept is informed by hundreds of answers and
  is sampled nearly centred, a family × channel cell by a few dozen and nearly
  non-centred (wholly centred, it did not mix: R-hat 1.6 at paper size; wholly
  non-centred, the family spread was the slowest parameter with 3 samples a task).
  ``u`` and ``v`` are reported standardised, so that ``σ_f·u`` and ``σ_fc·v`` are the effects.

Nested centring. The data inform a family × channel cell through the sum of its
family's intercept and its own deviation, σ_f·u_f + σ_fc·v_{f,c}; how that sum splits
between the two is left to the priors. Sampled with each pair's raw coordinate centred
on 0, a family's intercept and the mean of its pairs' deviations trade off along a
ridge that narrows as more models answer the family, which a diagonal mass matrix
cannot follow: with large family effects (σ_f 1.5, σ_fc 1.0) and 12 or 15 channels the
family intercepts were the slowest parameters of every such leaderboard of 389
families (1,750 draws a chain at 14 models, two attempts and 681 s at 28 × 15, the
gate missed after 1,033 s at 56 × 12). So a pair's raw coordinate is centred on
κ_i·σ_f·u_f, a shift κ_i times its family's intercept (the nested form of the
variationally inferred parametrisation of Gorinova, Moore & Hoffman):
raw w_i ~ Normal(κ_i·σ_f·u_f, σ_fc^λ_i), deviation σ_fc^(1−λ_i)·(w_i − κ_i·σ_f·u_f),
κ_i = λ_i where λ_i ≥ 0.5 (``nested_shift``), else 0. Wholly centred, w_i is the
cell's whole family effect, which the data pin, and the intercept is the mean its
pairs pull it to; where the pair's data are weaker than its prior it is as before. The
shift is a shear of the sampled coordinates, so the posterior is unchanged. On those
three (seed 3 each, run alone): 91 s, 171 s and 291 s, each in one attempt.

The zero-sum constraints remove the additive trade-off between μ and the mean of z,
and between μ and the mean family intercept.

Layout, for speed: the binomial cells are laid on a dense model × condition × channel
× family grid (cells with no answers have zero trials and add nothing), so the linear
predictor is a broadcast sum rather than a 35,000-element gather whose gradient is a
scatter; and the likelihood is the binomial kernel ``y·η − n·log(1 + e^η)`` as a
Potential, without the normalising constant and the parameter checks of
``pm.Binomial``, which cost about 40 % of each gradient evaluation. Neither changes the
posterior. The pointwise log-likelihood, for LOO, is computed from the draws a block of cells at a time by
``log_likelihood_blocks`` (scipy.special's log_expit).
"""

from __future__ import annotations

from dataclasses import dataclass

import arviz as az
import numpy as np
from scipy.special import expit, gammaln, log_expit, logit
from scipy.stats import chi2

from .data import MODELLED_CONDITIONS, ModelData

PRIOR_MEAN_SD = 1.5  # condition_mean and p0_mean ~ Normal(logit(1/K̄), 1.5)
SPREAD_SCALE = {"channel_sd": 1.0, "family_sd": 1.0, "family_channel_sd": 0.5}  # HalfNormal scale of each spread


@dataclass(frozen=True)
class Grid:
    """Counts on the dense grid, and where each cohort (family, channel) pair sits on it."""

    successes: np.ndarray  # (model, condition, channel, family)
    trials: np.ndarray
    p0_successes: np.ndarray  # (model, family)
    p0_trials: np.ndarray
    pair_channel: np.ndarray  # channel index of each (family, channel) pair
    pair_family: np.ndarray  # family index of each pair


def grid(data: ModelData) -> Grid:
    """Scatter the long cells of ``data`` onto the dense grid."""
    shape = (len(data.models), len(MODELLED_CONDITIONS), len(data.channels), len(data.families))
    successes, trials = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)
    at = tuple(data.cells[c].to_numpy() for c in ("model_index", "condition_index", "channel_index", "family_index"))
    successes[at], trials[at] = data.cells["successes"].to_numpy(), data.cells["trials"].to_numpy()
    p0_successes = np.zeros((len(data.models), len(data.families)), dtype=np.int64)
    p0_trials = np.zeros_like(p0_successes)
    p0_at = (data.p0["model_index"].to_numpy(), data.p0["family_index"].to_numpy())
    p0_successes[p0_at], p0_trials[p0_at] = data.p0["successes"].to_numpy(), data.p0["trials"].to_numpy()
    channel_code = {c: i for i, c in enumerate(data.channels)}
    family_code = {f: i for i, f in enumerate(data.families)}
    pair_channel = np.array([channel_code[c] for _, c in data.family_channels], dtype=np.int64)
    pair_family = np.array([family_code[f] for f, _ in data.family_channels], dtype=np.int64)
    return Grid(successes, trials, p0_successes, p0_trials, pair_channel, pair_family)


def prior_centre(n_candidates: float) -> float:
    """The prior centre of the means: a uniform guess among K̄ candidates, on the logit scale."""
    return float(logit(1.0 / n_candidates))


def coords(data: ModelData) -> dict[str, list[str]]:
    """The dimensions' labels, as both the PyMC model and the JAX density report them."""
    return {
        "model": data.models,
        "condition": list(MODELLED_CONDITIONS),
        "channel": data.channels,
        "family": data.families,
        "family_channel": [f"{f}|{c}" for f, c in data.family_channels],
    }


def centredness(counts: Grid) -> np.ndarray:
    """λ per model × condition for the channel effects: 0 non-centred, 1 centred.

    A model × condition whose channels differ far more than their sampling noise (a
    specialist's cf accuracy, hundreds of answers per channel) mixes badly non-centred:
    at 388 families the slowest spread reached a bulk ESS of 274 in 8,000 draws. One whose
    channels agree (spread near 0) diverges centred. Following the variationally inferred
    parametrisation of Gorinova, Moore & Hoffman (ICML 2020), λ = σ² / (σ² + s²) with s²
    the sampling variance of a channel's logit and σ² the spread of the channels' logits
    beyond it, both read off the empirical counts (a method-of-moments plug-in; only
    the sampler's efficiency depends on it, never the posterior).
    """
    successes = counts.successes.sum(axis=3).astype(float)  # (model, condition, channel)
    trials = counts.trials.sum(axis=3).astype(float)
    observed = trials > 0
    share = (successes + 0.5) / (trials + 1.0)
    empirical_logit = np.log(share / (1 - share))
    noise = 1.0 / ((trials + 1.0) * share * (1 - share))  # delta-method variance of the logit
    lam = np.zeros(successes.shape[:2])
    for m, k in np.ndindex(lam.shape):
        seen = observed[m, k]
        s2 = noise[m, k, seen].mean() if seen.any() else 0.0
        spread = _spread_beyond_noise(empirical_logit[m, k, seen], noise[m, k, seen])
        lam[m, k] = spread / (spread + s2) if spread > 0 else 0.0
    return lam


SPREAD_QUANTILE = 0.99


def _spread_beyond_noise(estimates: np.ndarray, noise: np.ndarray) -> float:
    """A cautious spread of ``estimates`` beyond their mean sampling ``noise``: 0 unless clearly above it.

    The estimates' variance V is about (σ² + s²)·χ²_(n−1)/(n−1); the spread taken is σ²
    at its lower 99% confidence bound, V·(n−1)/χ²_(0.99, n−1) − s², so that λ is large only
    where even a small plausible σ would still be large against the noise. Centring
    deviations whose spread may well be near 0 puts a funnel there: with two channels
    the plain V − s² (counted above 2 s², the rule before) passed 16% of the time with no
    spread at all, and a small study (3 models × 2 channels × 40 families) diverged 176
    times centred against 5 times non-centred; with 24 families the family spread's
    posterior reaches 0 even when V is well above s² (2026-12-01).
    """
    if len(estimates) < 2:
        return 0.0
    observed, s2 = float(np.var(estimates, ddof=1)), float(np.mean(noise))
    dof = len(estimates) - 1
    return max(observed * dof / chi2.ppf(SPREAD_QUANTILE, dof) - s2, 0.0)


def family_centredness(counts: Grid) -> tuple[float, np.ndarray]:
    """λ of the family intercepts (one number) and of each family × channel deviation (per pair).

    The same rule as ``centredness``, λ = σ² / (σ² + s²), with s² how well a family's (or a
    family × channel cell's) own answers pin its effect (the family intercepts: the mean
    over families; each family × channel cell: its own) and σ² the effects' spread beyond
    that noise (``_spread_beyond_noise``). Both are read off the counts by one scoring step from zero: with p̂ the
    share right of each model × condition × channel (and of each model's P0), a family's
    effect is about (observed − expected successes) / information, information
    Σ n·p̂(1 − p̂), its noise 1 / information; family × channel cells likewise, with the
    family's effect added to p̂. On the paper's shape (343 answers a family, 28 a family ×
    channel cell) the family intercepts come out nearly centred and the family × channel
    deviations nearly non-centred; with several samples a task both move toward centred.
    Only the sampler's efficiency depends on λ, never the posterior.
    """
    successes, trials = counts.successes.astype(float), counts.trials.astype(float)
    p0_successes, p0_trials = counts.p0_successes.astype(float), counts.p0_trials.astype(float)
    share = (successes.sum(axis=3) + 0.5) / (trials.sum(axis=3) + 1.0)  # (model, condition, channel)
    p0_share = (p0_successes.sum(axis=1) + 0.5) / (p0_trials.sum(axis=1) + 1.0)  # (model,)
    expected = (trials * share[..., None]).sum(axis=(0, 1, 2)) + (p0_trials * p0_share[:, None]).sum(axis=0)
    information = (trials * (share * (1 - share))[..., None]).sum(axis=(0, 1, 2)) + (
        p0_trials * (p0_share * (1 - p0_share))[:, None]
    ).sum(axis=0)
    observed = successes.sum(axis=(0, 1, 2)) + p0_successes.sum(axis=0)
    seen = information > 0
    family = np.zeros(len(information))
    family[seen] = (observed[seen] - expected[seen]) / information[seen]
    family_spread = _spread_beyond_noise(family[seen], 1.0 / information[seen])
    lam_family = family_spread / (family_spread + float(np.mean(1.0 / information[seen]))) if seen.any() else 0.0
    # family × channel cells, with the family's effect in the expectation
    c, f = counts.pair_channel, counts.pair_family
    p = expit(logit(share)[:, :, c] + family[f][None, None, :])  # (model, condition, pairs)
    pair_trials, pair_successes = trials[:, :, c, f], successes[:, :, c, f]
    pair_information = (pair_trials * p * (1 - p)).sum(axis=(0, 1))
    pair_seen = pair_information > 0
    estimate = np.zeros(len(pair_information))
    estimate[pair_seen] = (pair_successes - pair_trials * p).sum(axis=(0, 1))[pair_seen] / pair_information[pair_seen]
    noise = np.full(len(pair_information), np.inf)
    noise[pair_seen] = 1.0 / pair_information[pair_seen]
    pair_spread = _spread_beyond_noise(estimate[pair_seen], noise[pair_seen])
    lam_pairs = pair_spread / (pair_spread + noise) if pair_spread > 0 else np.zeros(len(noise))
    return float(lam_family), lam_pairs


NESTED_FROM = 0.5  # a pair's raw coordinate is centred on its family's intercept from this λ on


def nested_shift(lam_pairs: np.ndarray) -> np.ndarray:
    """Per family × channel pair, what multiplies its family's intercept in the centre of its raw
    coordinate (see "Nested centring" in the module docstring): its λ where the pair's own answers pin
    its effect at least as well as the spread does (λ ≥ NESTED_FROM, σ² ≥ s²), 0 elsewhere.

    Below, the intercept is pinned by the family's answers over every channel and the pair's
    deviation mostly by its prior, so a shift would only tie them together: on the paper's shape
    (λ about 0.15) shifting by λ took 850–1,300 draws a chain to the gate where no shift took
    700–950 (seeds 1–4 side by side)."""
    return np.where(lam_pairs >= NESTED_FROM, lam_pairs, 0.0)


def build_model(data: ModelData, *, family_effects: bool = True):
    """The model of the module docstring as a ``pm.Model``; ``family_effects=False`` drops u and v (for LOO).

    PyMC's own NUTS samples it (``molp2s fit --sampler pymc``); nutpie samples the same
    density written in JAX (``density``), which the tests compare with this one.
    """
    import pymc as pm
    import pytensor.tensor as pt

    def _binomial_kernel(successes, trials, eta):
        return (successes * eta - trials * pt.softplus(eta)).sum()

    counts = grid(data)
    n_channels, n_families = len(data.channels), len(data.families)
    centre = prior_centre(data.n_candidates)
    with pm.Model(coords=coords(data)) as model:
        condition_mean = pm.Normal("condition_mean", mu=centre, sigma=PRIOR_MEAN_SD, dims=("model", "condition"))
        channel_sd = pm.HalfNormal("channel_sd", sigma=SPREAD_SCALE["channel_sd"], dims=("model", "condition"))
        # τ^(1−λ)·z with z ~ ZeroSumNormal(τ^λ) is ZeroSumNormal(τ) for any fixed λ: the
        # posterior is the same, only the geometry the sampler sees changes (see centredness).
        lam = centredness(counts)[:, :, None]
        spread = channel_sd[:, :, None]
        channel_z = pm.ZeroSumNormal("channel_z", sigma=spread**lam, dims=("model", "condition", "channel"))
        cell = pm.Deterministic(
            "cell", condition_mean[:, :, None] + spread ** (1 - lam) * channel_z, dims=("model", "condition", "channel")
        )
        p0_mean = pm.Normal("p0_mean", mu=centre, sigma=PRIOR_MEAN_SD, dims="model")
        eta = cell[:, :, :, None]
        eta_p0 = pt.repeat(p0_mean[:, None], n_families, axis=1)
        if family_effects:
            # partially centred as the channel effects are (λ from family_centredness); the
            # standardised deviations family_z, family_channel_z (effect = spread · z) are reported
            lam_family, lam_pairs = family_centredness(counts)
            family_sd = pm.HalfNormal("family_sd", sigma=SPREAD_SCALE["family_sd"])
            family_z_raw = pm.ZeroSumNormal("family_z_raw", sigma=family_sd**lam_family, dims="family")
            pm.Deterministic("family_z", family_z_raw * family_sd**-lam_family, dims="family")
            family = family_sd ** (1 - lam_family) * family_z_raw
            family_channel_sd = pm.HalfNormal("family_channel_sd", sigma=SPREAD_SCALE["family_channel_sd"])
            # each pair's raw coordinate centred on its shift × its family's intercept: see "Nested centring" above
            centre = nested_shift(lam_pairs) * family[counts.pair_family]
            family_channel_z_raw = pm.Normal(
                "family_channel_z_raw", centre, family_channel_sd**lam_pairs, dims="family_channel"
            )
            deviation = family_channel_z_raw - centre
            pm.Deterministic("family_channel_z", deviation * family_channel_sd**-lam_pairs, dims="family_channel")
            family_channel = pt.set_subtensor(
                pt.zeros((n_channels, n_families))[counts.pair_channel, counts.pair_family],
                family_channel_sd ** (1 - lam_pairs) * deviation,
            )
            eta = eta + (family[None, :] + family_channel)[None, None, :, :]
            eta_p0 = eta_p0 + family[None, :]
        pm.Potential("y", _binomial_kernel(counts.successes, counts.trials, eta))
        pm.Potential("y_p0", _binomial_kernel(counts.p0_successes, counts.p0_trials, eta_p0))
    return model


def _family_draws(post) -> np.ndarray | None:
    """Draws of the family intercepts ``σ_f·u_f``, shape (draws, families); None without family effects."""
    if "family_z" not in post:
        return None
    draws = post.sizes["chain"] * post.sizes["draw"]
    return post["family_sd"].values.reshape(draws, 1) * post["family_z"].values.reshape(draws, -1)


def pair_effects(idata: az.InferenceData, data_pairs: list[tuple[str, str]]) -> np.ndarray:
    """Draws of ``σ_f·u_f + σ_fc·v_{f,c}`` per cohort pair, shape (draws, pairs); zeros without family effects."""
    post = idata.posterior
    draws = post.sizes["chain"] * post.sizes["draw"]
    family = _family_draws(post)
    if family is None:
        return np.zeros((draws, len(data_pairs)))
    families = {f: i for i, f in enumerate(post.coords["family"].values)}
    family_channel = post["family_channel_sd"].values.reshape(draws, 1) * post["family_channel_z"].values.reshape(
        draws, -1
    )
    return family[:, [families[f] for f, _ in data_pairs]] + family_channel


# draws PSIS-LOO reads: hundreds are needed, thousands cost time and memory (draws × cells). On the
# default fit (2026-12-02) 500 draws against 1,000 moved the elpd difference from 485.0 to 484.3
# (SE 32.3) and the largest Pareto k from 0.41 to 0.56, below 1 − 1/log10(500) = 0.63, the
# threshold at this many draws (Vehtari et al. 2024); it took 43 s against 73 s.
LOO_DRAWS = 500
CELLS_PER_BLOCK = 20_000  # cells at a time in log_likelihood_blocks: 500 draws × 20,000 × 8 bytes = 80 MB


def thinned(idata: az.InferenceData, max_draws: int = LOO_DRAWS) -> az.InferenceData:
    """At most ``max_draws`` draws of ``idata``'s posterior, evenly thinned per chain."""
    post = idata.posterior
    step = max(1, -(-post.sizes["chain"] * post.sizes["draw"] // max_draws))
    return az.InferenceData(posterior=post.isel(draw=slice(None, None, step)))


def log_likelihood_blocks(
    idata: az.InferenceData, data: ModelData, *, max_draws: int = LOO_DRAWS, cells_per_block: int | None = None
):
    """The binomial log-likelihood of every observed cell (cohort cells, then P0), a block of cells at a
    time: arrays of cells × draws (at most ``max_draws``, evenly thinned per chain).

    A block at a time so that memory stays bounded however large the leaderboard: the whole
    array is draws × cells (at 56 models × 15 channels × 389 families, 500 × 1 million × 8 bytes,
    4 GB, for each of the two models LOO compares).
    """
    cells_per_block = cells_per_block or CELLS_PER_BLOCK
    post = thinned(idata, max_draws).posterior
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    cell = post["cell"].values.reshape(chains * draws, *post["cell"].shape[2:])
    effects = pair_effects(az.InferenceData(posterior=post), data.family_channels)
    family = _family_draws(post)
    p0_mean = post["p0_mean"].values.reshape(chains * draws, -1)
    cells = data.cells
    at = [
        np.concatenate([cells[c].to_numpy(), np.full(data.p0.height, -1)])
        for c in ("model_index", "condition_index", "channel_index", "family_channel_index")
    ]
    p0_model = np.concatenate([np.full(cells.height, -1), data.p0["model_index"].to_numpy()])
    p0_family = np.concatenate([np.full(cells.height, -1), data.p0["family_index"].to_numpy()])
    successes = np.concatenate([cells["successes"].to_numpy(), data.p0["successes"].to_numpy()]).astype(float)
    failures = np.concatenate([cells["trials"].to_numpy(), data.p0["trials"].to_numpy()]) - successes
    for start in range(0, len(successes), cells_per_block):
        rows = slice(start, start + cells_per_block)
        cohort = at[0][rows] >= 0
        eta = np.empty((chains * draws, cohort.size))
        eta[:, cohort] = (
            cell[:, at[0][rows][cohort], at[1][rows][cohort], at[2][rows][cohort]] + effects[:, at[3][rows][cohort]]
        )
        eta[:, ~cohort] = p0_mean[:, p0_model[rows][~cohort]]
        if family is not None:
            eta[:, ~cohort] += family[:, p0_family[rows][~cohort]]
        yield binomial_log_pmf(successes[rows], failures[rows], eta).T


def binomial_log_pmf(successes: np.ndarray, failures: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """log Binomial(successes | successes + failures, σ(η)), on the logit scale: stable where σ(η)
    rounds to 0 or 1, unlike ``binom.logpmf`` of σ(η). One log σ a value, from
    log σ(−η) = log σ(η) − η: the logarithms were most of the LOO's log-likelihood time."""
    s, f = successes, failures
    log_choose = gammaln(s + f + 1) - gammaln(s + 1) - gammaln(f + 1)
    return log_choose + (s + f) * log_expit(eta) - f * eta


def pointwise_log_likelihood(
    idata: az.InferenceData, data: ModelData, *, max_draws: int = LOO_DRAWS
) -> az.InferenceData:
    """The binomial log-likelihood of every observed cell (cohort cells, then P0), for ``az.loo``, whole
    (``log_likelihood_blocks`` gives it a block of cells at a time, as the fit's LOO reads it).

    At most ``max_draws`` draws (evenly thinned per chain): the array is draws × cells,
    and PSIS-LOO needs hundreds of draws, not thousands.
    """
    post = thinned(idata, max_draws).posterior
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    log_lik = np.concatenate(list(log_likelihood_blocks(idata, data, max_draws=max_draws)), axis=0).T
    return az.from_dict(
        posterior={"cell": post["cell"].values}, log_likelihood={"y": log_lik.reshape(chains, draws, -1)}
    )
