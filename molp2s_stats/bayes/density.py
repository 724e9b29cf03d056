"""The model's log density written directly in JAX, in float32, for nutpie.

The model and priors of ``model.build_model`` (its docstring has the mathematics), which
PyMC's own NUTS samples; nutpie samples this. The tests compare the two log densities
point by point (tests/bayes/test_model.py). Constants are dropped; they do not move the
posterior.

Why not PyMC's own JAX graph: at paper size (7 models × 12 channels × 136 families) one
log density and gradient took 0.70 ms, most of it the float64 binomial kernel over the
grid, and it cannot run in float32 (``ZeroSumNormal`` checks its zero sum at atol 1e-9,
and the jaxified graph promotes to float64). Written here in float32, with the softplus
as ``max(η, 0) + log1p(exp(−|η|))``, it takes 0.25 ms. float32 keeps the log density to
about 1e-7 of its value (4 × 10⁴ at paper size, off by < 0.01); NUTS accepts against this
same function, so the chain targets it, and it differs from the float64 density far
below the Monte Carlo error.

Coordinates. Each zero-sum vector is stored by its first n − 1 coordinates under the
reflection PyMC's ``ZeroSumNormal`` uses. Each block of deviations (the channel effects
of a model × condition, the family intercepts, the family × channel deviations) is
partially centred by its λ (``model.centredness``, ``model.family_centredness``): raw
deviations z ~ Normal(0, σ^λ), effect σ^(1−λ)·z, except that a family × channel pair's
raw coordinate is centred on its shift times its family's intercept (``model.nested_shift``);
the family ones are reported standardised (z / σ^λ, so that σ·z is the effect), as
PyMC's model has them. A spread
whose deviations are wholly non-centred (λ = 0) is *signed*: a real s with spread |s|,
the deviations it scales multiplied by sign(s), and HalfNormal(b) on the spread becoming
Normal(0, b) on s. (s, z) and (−s, −z) give the same spread and effects and half the
density each, so the posterior of what is reported, (|s|, sign(s)·z), is the model's
exactly, whichever sign a chain settles on. Why: on the log scale, a spread whose
posterior reaches 0 has a long left tail that NUTS crawls along; a signed one passes
through 0 smoothly. At paper size (seed 1, 4 × 2,000 draws) the slowest bulk ESS went
from 485 to 907 and the slowest tail ESS from 858 to 1,544. Where λ > 0 the spread
stays on the log scale: its centred part has a log σ term that a signed spread would
cross at 0 (36 divergences on the default data).

Every array is created in the requested dtype and the point is cast on the way in, and
the scalars are Python floats (weakly typed), so the function is float32 whether JAX's
64-bit mode is on or off (PyTensor's JAX backend turns it on when it is imported).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from math import prod, sqrt

import numpy as np

from ..errors import UsageError
from . import points
from .data import MODELLED_CONDITIONS, ModelData
from .model import (
    PRIOR_MEAN_SD,
    SPREAD_SCALE,
    Grid,
    centredness,
    coords,
    family_centredness,
    grid,
    nested_shift,
    prior_centre,
)

# the deviations each spread scales: their sign follows a signed spread's
DEVIATIONS = {"channel_sd": "channel_z", "family_sd": "family_z_raw", "family_channel_sd": "family_channel_z_raw"}
# partially centred deviations are sampled raw and reported standardised (effect = spread · z), as PyMC's model has
# them: per spread, the raw coordinate, its standardised name, and what the raw coordinate is centred on (unpack)
STANDARDISED = {
    "family_sd": ("family_z_raw", "family_z", None),
    "family_channel_sd": ("family_channel_z_raw", "family_channel_z", "family_channel_centre"),
}


def _zero_sum(free, xp):
    """(…, n − 1) free coordinates → (…, n) summing to zero along the last axis.

    The Householder reflection that swaps the last basis vector with −1/√n, applied
    to (free, 0): an isometry onto the zero-sum subspace, so a standard normal on the
    free coordinates is a zero-sum normal with unit scale.
    """
    n = free.shape[-1] + 1
    total = free.sum(axis=-1, keepdims=True)
    shift = total / (sqrt(n) + n)
    return xp.concatenate([free - shift, -total / sqrt(n)], axis=-1)


@dataclass(frozen=True)
class Density:
    """One model's parameters: their layout in the flat point, how each is stored, dims."""

    data: ModelData
    counts: Grid  # the cells on the dense grid (model.grid), built once
    family_effects: bool
    lam_of: dict[str, np.ndarray]  # per spread, the centredness λ of its deviations (float32): see model.centredness
    pair_shift: np.ndarray  # per family × channel pair, model.nested_shift (float32; empty without family effects)
    shapes: dict[str, tuple[int, ...]]  # shape of each sampled parameter, as reported
    kinds: dict[str, str]  # "real", "zerosum", or "spread" (signed where ``signed``, else log scale)
    signed: dict[str, np.ndarray]  # per spread: which entries are signed
    coords: dict[str, list]
    dims: dict[str, tuple[str, ...]]  # every reported variable: the parameters and ``cell``

    @property
    def free_shapes(self) -> dict[str, tuple[int, ...]]:
        return {
            name: shape[:-1] + (shape[-1] - 1,) if self.kinds[name] == "zerosum" else shape
            for name, shape in self.shapes.items()
        }

    @property
    def centre(self) -> float:
        return prior_centre(self.data.n_candidates)

    @property
    def ndim(self) -> int:
        return sum(prod(shape) for shape in self.free_shapes.values())

    def split(self, point) -> dict:
        """The flat point as each parameter's free coordinates (points: any leading axes, the last one flat)."""
        out, at = {}, 0
        for name, shape in self.free_shapes.items():
            out[name] = point[..., at : at + prod(shape)].reshape(point.shape[:-1] + shape)
            at += prod(shape)
        return out

    def unpack(self, point, xp=np) -> dict:
        """What the log density reads: parameters as sampled (deviations not yet sign-matched),
        ``<spread>_free`` and ``<spread>_signed`` (sign(s)·spread) for each spread, and ``cell``. A stack
        of points (leading axes before the flat one) gives each value with those axes first."""
        values = {}
        for name, free in self.split(point).items():
            kind = self.kinds[name]
            if kind == "spread":
                signed_value = xp.where(self.signed[name], free, xp.exp(free))
                values |= {f"{name}_free": free, f"{name}_signed": signed_value, name: xp.abs(signed_value)}
            else:
                values[name] = _zero_sum(free, xp) if kind == "zerosum" else free
        # cell = μ + sign(s)·τ^(1−λ)·z: s itself where signed (λ = 0; smooth through 0), exp((1−λ)·log τ) elsewhere
        values["cell"] = (
            values["condition_mean"][..., None] + self.scale("channel_sd", values, xp)[..., None] * values["channel_z"]
        )
        if self.family_effects:
            values["family"] = self.scale("family_sd", values, xp)[..., None] * values["family_z_raw"]
            # a pair's raw coordinate is centred on its shift × its family's intercept (model.nested_shift)
            values["family_channel_centre"] = (
                self.pair_shift * values["family"][..., self.counts.pair_family] if self.pair_shift.any() else 0.0
            )
            values["family_channel"] = self.scale("family_channel_sd", values, xp) * (
                values["family_channel_z_raw"] - values["family_channel_centre"]
            )
        return values

    def scale(self, spread: str, values: dict, xp=np):
        """What multiplies the raw deviations of ``spread``: s where signed, σ^(1−λ) on the log scale."""
        free = self._free_by_lam(spread, values)
        return xp.where(self.signed[spread], free, xp.exp((1 - self.lam_of[spread]) * free))

    def log_raw_sd(self, spread: str, values: dict):
        """log σ^λ, the log standard deviation of the raw deviations (0 where signed: λ = 0 there)."""
        return self.lam_of[spread] * self._free_by_lam(spread, values)

    def _free_by_lam(self, spread: str, values: dict):
        """The spread's free value with an axis for each axis λ has beyond the spread's own (one spread
        over every family × channel pair has a λ per pair), so that a stack of points broadcasts."""
        free = values[f"{spread}_free"]
        extra = np.ndim(self.lam_of[spread]) - len(self.shapes[spread])
        return free.reshape(free.shape + (1,) * extra) if extra else free

    def reported(self, point) -> dict[str, np.ndarray]:
        """The named draws of one point (or a stack of points, its axes first), as PyMC's model has them:
        spreads ≥ 0, deviations sign-matched."""
        values = self.unpack(np.asarray(point, dtype=np.float64))
        for spread, deviation in DEVIATIONS.items():
            if deviation in values:
                sign = np.sign(values[f"{spread}_signed"])
                values[deviation] = (
                    sign.reshape(sign.shape + (1,) * (values[deviation].ndim - sign.ndim)) * values[deviation]
                )
        for spread, (raw, standardised, centre) in STANDARDISED.items():
            if raw in values:  # effect = spread · z: z = (raw − its centre) / σ^λ
                factor = np.exp(-self.log_raw_sd(spread, values))
                factor = factor.reshape(factor.shape + (1,) * (values[raw].ndim - factor.ndim))
                values[standardised] = (values[raw] - (values[centre] if centre else 0.0)) * factor
        return {name: np.asarray(values[name], dtype=np.float64, order="C") for name in self.dims}


def _zero_sum_free(values: np.ndarray) -> np.ndarray:
    """The inverse of ``_zero_sum``: (…, n) summing to zero → its (…, n − 1) free coordinates."""
    n = values.shape[-1]
    total = -values[..., -1:] * sqrt(n)
    return values[..., :-1] + total / (sqrt(n) + n)


def effects_of(reported: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What ``pack`` reads, from one point's ``Density.reported`` draws: the inverse of reporting."""
    effects = {name: reported[name] for name in ("condition_mean", "p0_mean", "channel_sd")}
    effects["channel_effect"] = reported["cell"] - reported["condition_mean"][..., None]
    if "family_z" in reported:
        effects |= {
            "family_sd": reported["family_sd"],
            "family_channel_sd": reported["family_channel_sd"],
            "family_effect": reported["family_sd"] * reported["family_z"],
            "family_channel_effect": reported["family_channel_sd"] * reported["family_channel_z"],
        }
    return effects


def pack(model: Density, effects: dict[str, np.ndarray]) -> np.ndarray:
    """The flat point of ``model`` whose parameters have these values, on the scale the model reports:
    ``condition_mean``, ``p0_mean`` and the spreads as they are; ``channel_effect`` (cell − mean,
    (model, condition, channel)), ``family_effect`` (families) and ``family_channel_effect`` (pairs) as
    effects on the logit scale. Zero-sum effects are centred first. Spreads are taken positive."""
    free = {"condition_mean": effects["condition_mean"], "p0_mean": effects["p0_mean"]}
    scale = {}
    for spread in [s for s in ("channel_sd", "family_sd", "family_channel_sd") if s in model.shapes]:
        value = np.maximum(np.asarray(effects[spread], dtype=float), 1e-3)
        signed = np.asarray(model.signed[spread])
        free[spread] = np.where(signed, value, np.log(value))
        # the raw deviation is effect / σ^(1 − λ) (s itself where signed)
        scale[spread] = np.where(signed, value, value ** (1 - model.lam_of[spread]))
    channel = effects["channel_effect"] - effects["channel_effect"].mean(axis=-1, keepdims=True)
    free["channel_z"] = _zero_sum_free(channel / scale["channel_sd"][..., None])
    if model.family_effects:
        family = effects["family_effect"] - effects["family_effect"].mean()
        free["family_z_raw"] = _zero_sum_free(family / scale["family_sd"])
        centre = model.pair_shift * family[model.counts.pair_family]  # the raw coordinate's centre (unpack)
        free["family_channel_z_raw"] = effects["family_channel_effect"] / scale["family_channel_sd"] + centre
    return np.concatenate([np.asarray(free[name], dtype=float).reshape(-1) for name in model.free_shapes])


def density(data: ModelData, *, family_effects: bool = True) -> Density:
    models, channels, families = data.models, data.channels, data.families
    m, k, c = len(models), len(MODELLED_CONDITIONS), len(channels)
    counts = grid(data)
    lam = centredness(counts).astype(np.float32)
    lam_of = {"channel_sd": lam}
    shapes = {"condition_mean": (m, k), "channel_sd": (m, k), "channel_z": (m, k, c), "p0_mean": (m,)}
    kinds = {"condition_mean": "real", "channel_sd": "spread", "channel_z": "zerosum", "p0_mean": "real"}
    signed = {"channel_sd": lam == 0}
    pair_shift = np.zeros(0, np.float32)
    dims = {
        "condition_mean": ("model", "condition"),
        "channel_sd": ("model", "condition"),
        "channel_z": ("model", "condition", "channel"),
        "p0_mean": ("model",),
    }
    if family_effects:
        lam_family, lam_pairs = family_centredness(counts)
        lam_of |= {"family_sd": np.float32(lam_family), "family_channel_sd": lam_pairs.astype(np.float32)}
        pair_shift = nested_shift(lam_pairs).astype(np.float32)
        shapes |= {
            "family_sd": (),
            "family_z_raw": (len(families),),
            "family_channel_sd": (),
            "family_channel_z_raw": (len(data.family_channels),),
        }
        kinds |= {
            "family_sd": "spread",
            "family_z_raw": "zerosum",
            "family_channel_sd": "spread",
            "family_channel_z_raw": "real",
        }
        # a spread is signed where its deviations are wholly non-centred (λ = 0)
        signed |= {"family_sd": np.array(lam_family == 0), "family_channel_sd": np.array(not lam_pairs.any())}
        dims |= {
            "family_sd": (),
            "family_z": ("family",),
            "family_channel_sd": (),
            "family_channel_z": ("family_channel",),
        }
    dims["cell"] = ("model", "condition", "channel")
    return Density(data, counts, family_effects, lam_of, pair_shift, shapes, kinds, signed, coords(data), dims)


PAIRS_BELOW = 0.9  # the cells are laid on cohort pairs when these fill less of the channel × family grid


def jax_device(name: str | None):
    """The JAX device a name asks for (``cpu`` or ``gpu``), or None for JAX's default; a clear error
    where JAX sees no such device (a GPU needs JAX built for CUDA: ``pip install -e '.[gpu]'``)."""
    if name is None:
        return None
    import jax

    if name not in ("cpu", "gpu"):
        raise UsageError(f"unknown device {name!r}: choose cpu or gpu")
    try:
        return jax.devices(name)[0]
    except RuntimeError as exc:
        raise UsageError(
            f"JAX sees no {name.upper()} here ({exc}); for a GPU, install JAX with CUDA "
            "(pip install -e '.[gpu]') on a machine with an NVIDIA GPU"
        ) from exc


def log_density_function(model: Density, dtype=np.float32, *, layout: str | None = None, device=None):
    """A jitted ``point -> (log density, gradient)``; float64 needs JAX's 64-bit mode on.

    ``layout`` of the binomial cells (the same density either way): ``"grid"``, the dense
    model × condition × channel × family grid, on which the linear predictor is a
    broadcast sum; or ``"pairs"``, model × condition × cohort (family, channel) pair,
    which drops the cells of families outside a channel's cohort (no answers there). By
    default pairs when they fill less than PAIRS_BELOW of the grid: on the default data
    (59% filled) a gradient took 0.59 ms on the pairs against 0.73 ms on the grid; at
    paper size (every pair in the cohort) 0.37 against 0.35.

    ``device`` (a JAX device, ``jax_device``) holds the counts and evaluates the gradient
    there; each call then moves the point in and the gradient out (nutpie asks for one
    gradient at a time, on the host).
    """
    import jax
    import jax.numpy as jnp

    # nutpie asks each chain's thread for one small gradient at a time: run it on that thread
    # rather than hand it to XLA's dispatch thread and wait (takes effect where this process has
    # not used JAX yet; the same numbers either way). At paper size, blocking 4 × (300 + 750):
    # sampling wall time 0.92× and CPU 0.90× of async dispatch, medians of 5 runs paired in turn.
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    counts = model.counts
    n_channels, n_families = counts.successes.shape[2], counts.successes.shape[3]
    pair_channel, pair_family = counts.pair_channel, counts.pair_family
    if layout is None:
        layout = "pairs" if len(pair_channel) < PAIRS_BELOW * n_channels * n_families else "grid"
    if layout == "pairs":
        if counts.trials.sum() != counts.trials[:, :, pair_channel, pair_family].sum():
            raise ValueError("answers outside the cohort's (family, channel) pairs")
        successes = jnp.asarray(counts.successes[:, :, pair_channel, pair_family], dtype)  # (model, condition, pair)
        trials = jnp.asarray(counts.trials[:, :, pair_channel, pair_family], dtype)
        # each pair's channel as a one-hot matrix: the channel effects reach the pairs by a small
        # matrix product, whose gradient is one too (a gather's would be a scatter)
        channel_of_pair = jnp.asarray(np.eye(n_channels, dtype=dtype)[pair_channel].T)  # (channel, pair)
    else:
        successes, trials = jnp.asarray(counts.successes, dtype), jnp.asarray(counts.trials, dtype)
    pair_channel, pair_family = jnp.asarray(pair_channel), jnp.asarray(pair_family)
    p0_successes, p0_trials = jnp.asarray(counts.p0_successes, dtype), jnp.asarray(counts.p0_trials, dtype)
    if device is not None:
        successes, trials, p0_successes, p0_trials = jax.device_put(
            (successes, trials, p0_successes, p0_trials), device
        )
        if layout == "pairs":
            channel_of_pair = jax.device_put(channel_of_pair, device)
    centre = model.centre

    def softplus(eta):
        return jnp.maximum(eta, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(eta)))

    def binomial(s, n, eta):
        return (s * eta - n * softplus(eta)).sum()

    def normal(x, mean, sd):
        return (-0.5 * ((x - mean) / sd) ** 2).sum()

    def spread_prior(v, name):
        # HalfNormal(b): Normal(0, b) on a signed s; on the log scale, with the transform's Jacobian
        free, b = v[f"{name}_free"], SPREAD_SCALE[name]
        return jnp.where(model.signed[name], -0.5 * (free / b) ** 2, -0.5 * (jnp.exp(free) / b) ** 2 + free).sum()

    def log_density(point):
        v = model.unpack(point, jnp)
        lp = normal(v["condition_mean"], centre, PRIOR_MEAN_SD) + normal(v["p0_mean"], centre, PRIOR_MEAN_SD)
        lp += spread_prior(v, "channel_sd")
        # z ~ ZeroSumNormal(τ^λ) over channels: n − 1 degrees of freedom per model × condition;
        # log τ^λ = λ·free (0 where signed, since λ = 0 there)
        log_sigma = model.log_raw_sd("channel_sd", v)
        lp += (-0.5 * v["channel_z"] ** 2 * jnp.exp(-2 * log_sigma)[:, :, None]).sum()
        lp -= (n_channels - 1) * log_sigma.sum()
        eta = v["cell"] @ channel_of_pair if layout == "pairs" else v["cell"][..., None]
        eta_p0 = jnp.broadcast_to(v["p0_mean"][:, None], p0_successes.shape)
        if model.family_effects:
            lp += spread_prior(v, "family_sd") + spread_prior(v, "family_channel_sd")
            # u ~ ZeroSumNormal(σ_f^λ) over families (n − 1 degrees of freedom),
            # v_i ~ Normal(κ_i·(its family's intercept), σ_fc^λ_i), κ the pair's shift
            log_sigma_f = model.log_raw_sd("family_sd", v)
            lp += -0.5 * (v["family_z_raw"] ** 2).sum() * jnp.exp(-2 * log_sigma_f) - (n_families - 1) * log_sigma_f
            log_sigma_fc = model.log_raw_sd("family_channel_sd", v)
            deviation = v["family_channel_z_raw"] - v["family_channel_centre"]
            lp += (-0.5 * deviation**2 * jnp.exp(-2 * log_sigma_fc) - log_sigma_fc).sum()
            family = v["family"]
            if layout == "pairs":
                eta = eta + (family[pair_family] + v["family_channel"])[None, None]
            else:
                family_channel = (
                    jnp.zeros((n_channels, n_families), dtype).at[pair_channel, pair_family].set(v["family_channel"])
                )
                eta = eta + (family[None, :] + family_channel)[None, None]
            eta_p0 = eta_p0 + family[None, :]
        return lp + binomial(successes, trials, eta) + binomial(p0_successes, p0_trials, eta_p0)

    # one array back, the value first and then the gradient: each array handed back to Python is one
    # more wait for the GIL among the chains' threads. Four threads on the default data, four paired
    # runs of 4 s: 2,171–2,588 → 2,344–3,071 gradients a second, 0.73–0.87 → 0.61–0.81 CPU-ms each,
    # bit for bit the same values
    def value_and_gradient(point):
        value, gradient = jax.value_and_grad(log_density)(point)
        return jnp.concatenate([value[None], gradient])

    joined = jax.jit(value_and_gradient)

    def evaluate(point: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.asarray(point, dtype=dtype)
        out = np.asarray(joined(x if device is None else jax.device_put(x, device)))
        return float(out[0]), out[1:].astype(np.float64)

    return evaluate


def initial_point(model: Density, seed: int) -> np.ndarray:
    """U(−1, 1) jitter around the priors' centres, as PyMC's initialisation for nutpie does."""
    rng = np.random.default_rng(seed)
    point = rng.uniform(-1.0, 1.0, model.ndim)
    at = 0
    for name, shape in model.free_shapes.items():
        if name in ("condition_mean", "p0_mean"):
            point[at : at + prod(shape)] += model.centre
        at += prod(shape)
    return point


@dataclass(frozen=True)
class Compiled:
    """A model's density and its jitted log density and gradient, built once and shared by every
    attempt of a fit (compiling takes seconds on large leaderboards)."""

    model: Density
    evaluate: Callable[[np.ndarray], tuple[float, np.ndarray]]
    gradient: str = "jax"  # which implementation evaluates it: "jax" (this module) or "numba" (numba_density)
    # where nutpie calls the numba gradient without Python: its arrays and address table (native.Kernel)
    native: object | None = None

    def step_seconds(self, chains: int, *, seconds: float = 0.3, windows: int = 3) -> float:
        """Wall time per chain of one leapfrog step with ``chains`` chains running at once, as nutpie runs
        them: one thread a chain, each evaluating the gradient (through Python, or in batches with no
        Python between where nutpie calls it natively: ``native.Kernel.evaluate_repeatedly``), for about
        ``seconds`` in all. Timed this way rather than one gradient alone, which XLA may spread over every
        core and which shares no memory bandwidth: on 2 cores a gradient of 28 models × 5 channels timed
        alone as fast as one of 14, yet sampled half as fast. The fastest of ``windows`` short windows is
        kept, as ``timeit`` advises: a burst of other work on a shared machine slows one window (a single
        0.3 s window once read 3.8 times the fit's own pace), while the fit runs long enough to average
        such bursts out."""
        import threading

        point = initial_point(self.model, 0)
        self.evaluate(point)  # compiles
        batch = 1
        if self.native is not None:
            # in batches of about a millisecond: the GIL is taken once a batch, not once a gradient
            self.native.evaluate_repeatedly(point, 1)  # compiles
            started = time.perf_counter()
            self.native.evaluate_repeatedly(point, 10)
            batch = max(1, round(1e-3 / max((time.perf_counter() - started) / 10, 1e-7)))
        fastest = float("inf")
        for _ in range(windows):
            counts = [0] * chains
            stop = threading.Event()

            def work(at: int) -> None:
                while not stop.is_set():  # noqa: B023 (the threads are joined before the next window)
                    if self.native is not None:
                        self.native.evaluate_repeatedly(point, batch)  # noqa: B023
                    else:
                        self.evaluate(point)
                    counts[at] += batch  # noqa: B023

            threads = [threading.Thread(target=work, args=(at,), daemon=True) for at in range(chains)]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            time.sleep(seconds / windows)
            stop.set()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - started
            fastest = min(fastest, elapsed / max(1, min(counts)))
        return fastest

    def expand_seconds(self, repeats: int = 20) -> float:
        """Wall time of the Python nutpie runs once a draw: none where it calls the gradient natively,
        else the callback that hands it the point to store (``nutpie_model``)."""
        if self.native is not None:
            return 0.0
        point = initial_point(self.model, 0)
        started = time.perf_counter()
        for _ in range(repeats):
            _stored(point)
        return (time.perf_counter() - started) / repeats


def compile_density(data: ModelData, *, family_effects: bool = True, device: str | None = None) -> Compiled:
    """The density of ``data`` and its compiled gradient.

    With no ``device``, a model of fewer than ``bayes.NUMBA_CELLS`` binomial cells gets
    the numba gradient (a JAX call costs about 0.2 ms however small the model; see that module),
    a larger one JAX's on its default device. A named ``device`` (``cpu``, ``gpu``) is JAX's there.
    """
    from . import NUMBA_CELLS, native, numba_density

    model = density(data, family_effects=family_effects)
    if device is None and numba_density.cell_count(model) < NUMBA_CELLS:
        # nutpie calls the kernel as a C function where this nutpie takes one (native.available)
        kernel = native.Kernel(model) if native.available() else None
        return Compiled(model, numba_density.log_density_function(model), "numba", kernel)
    return Compiled(model, log_density_function(model, device=jax_device(device)), "jax")


def _stored(point: np.ndarray) -> dict[str, np.ndarray]:
    """What nutpie stores of a draw: the flat point (a copy: nutpie may reuse its buffer)."""
    return {points.POINT: np.array(point, dtype=np.float64)}


def nutpie_model(compiled: Compiled, *, initial_points: Callable[[int], np.ndarray] | None = None):
    """The density as a nutpie model (``nutpie.sample`` takes it as it takes a compiled PyMC model).

    ``initial_points`` maps a chain's seed to its starting point (flat, unconstrained); by
    default U(−1, 1) jitter around the priors' centres (``initial_point``).

    The numba gradient goes to nutpie as a C function (``native``), JAX's as a Python callback.
    Either way nutpie stores the flat points, named afterwards (``points.reported_trace``), all at
    once, rather than in Python at every draw while the chains wait for the GIL.
    """
    from nutpie.compiled_pyfunc import from_pyfunc

    model = compiled.model
    initial_points = initial_points or (lambda seed: initial_point(model, seed))
    if compiled.native is not None:
        return compiled.native.nutpie_model(initial_points)
    return from_pyfunc(
        ndim=model.ndim,
        make_logp_fn=lambda: compiled.evaluate,
        make_expand_fn=lambda seed1, seed2, chain: _stored,
        expanded_dtypes=[np.dtype("float64")],
        expanded_shapes=[(model.ndim,)],
        expanded_names=[points.POINT],
        coords={points.POINT_DIM: points.point_labels(model.ndim)},
        dims={points.POINT: (points.POINT_DIM,)},
        make_initial_point_fn=initial_points,
    )
