"""The hierarchical Bayesian model of per-channel property reliance, with family random effects."""

# Measured with benchmarks/bench_bayes.py at paper size and `molp2s fit` on the default
# data (issue 5 note): 300 tuning steps suffice for nutpie's adaptation. With 4 × 1,500
# draws the slowest parameter (family_channel_sd, whose truth there is 0) reached bulk
# ESS 555 and 333 for two seeds, so the default is 4 × 2,000 for a margin over the
# gate's 400. Target acceptance 0.7 took fewer leapfrog steps (15 against 21) but let 1–3
# divergences through on the default data for some seeds; nutpie's own 0.8 let none.
DEFAULT_DRAWS, DEFAULT_TUNE, DEFAULT_CHAINS = 2000, 300, 4
TARGET_ACCEPT = 0.8
SAMPLERS = ("nutpie", "pymc")
# nutpie's low-rank mass matrix (measured 2026-12-01): at paper size 4 × 1,000 low-rank
# draws reached the slowest bulk ESS of 4 × 2,000 diagonal ones in about the same time
# (5 ESS/s either way), and on the default data it let one divergence through; the
# diagonal mass matrix stays the default, the low-rank one is `molp2s fit --low-rank`.
LOW_RANK = False
