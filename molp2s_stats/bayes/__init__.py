"""The hierarchical Bayesian model of per-channel property reliance (SPEC §5)."""

# Measured at paper size with benchmarks/bench_bayes.py (issue 5 note): 300 tuning
# steps suffice for nutpie's adaptation. With 4 × 1,500 draws the slowest parameter
# (family_channel_sd, whose truth there is 0) reached bulk ESS 555 and 333 for two
# seeds, so the default is 4 × 2,000 for a margin over the gate's 400. A target
# acceptance of 0.7 (nutpie's default is 0.8) takes fewer leapfrog steps per draw and
# mixed better in those trials; 0.65 let one divergence through.
DEFAULT_DRAWS, DEFAULT_TUNE, DEFAULT_CHAINS = 2000, 300, 4
TARGET_ACCEPT = 0.7
SAMPLERS = ("nutpie", "pymc")
