"""The hierarchical Bayesian model of per-channel property reliance (SPEC §5)."""
