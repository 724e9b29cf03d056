"""The hierarchical Bayesian model of per-channel property reliance, with family random effects."""

# Measured with benchmarks/bench_bayes.py at paper size and `molp2s fit` on the default
# data: 300 tuning steps suffice for nutpie's adaptation. With the signed spreads of
# density.py, 4 × 1,200 draws reached a slowest bulk ESS of 451–540 at paper size (seeds
# 1–3, the family × channel spread) and 736 on the default data, tail ESS 720 or more:
# the gate's 400 with a margin (4 × 2,000 were needed on the log scale). Target
# acceptance 0.7 took fewer leapfrog steps but let 1–3 divergences through on the
# default data for some seeds; nutpie's own 0.8 let none.
# DEFAULT_DRAWS is what a fit with PyMC's NUTS draws; nutpie's default fit samples until its
# gate passes (bayes.sampler.sample_until_passed, at most twice DEFAULT_DRAWS a chain in a first run).
DEFAULT_DRAWS, DEFAULT_TUNE, DEFAULT_CHAINS = 1200, 300, 4
TARGET_ACCEPT = 0.8
SAMPLERS = ("nutpie", "pymc")
# nutpie's low-rank mass matrix (measured 2026-12-01): at paper size 4 × 1,000 low-rank
# draws reached the slowest bulk ESS of 4 × 2,000 diagonal ones in about the same time
# (5 ESS/s either way), and on the default data it let one divergence through; the
# diagonal mass matrix stays the default, the low-rank one is `molp2s fit --low-rank`.
LOW_RANK = False
# A fit that misses its gate tries again (bayes.attempts.next_attempt) while the next attempt
# is expected to end within its budget (`molp2s fit --budget`): by default this many seconds
# from the start, or five first attempts' worth by the estimate made before sampling where
# that is longer (bayes.attempts.default_budget: a large leaderboard gets the time it needs).
DEFAULT_BUDGET = 600.0
# Below this many binomial cells (answered model × condition × family × channel cells and the
# models' P0 cells) the CPU gradient is numba's (bayes/numba_density.py), above it JAX's: a JAX call
# costs about 0.2 ms however small the model, while numba's scalar exp and log1p lose to XLA's
# vectorised ones on large grids (benchmarks/bench_density_backends.py: about even at 15,000 cells; 6,000 leaves a margin, as
# the two runs so far put 10,000 cells on either side)
NUMBA_CELLS = 6_000
