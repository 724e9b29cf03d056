"""The fit's health gate: R-hat, ESS, divergences, BFMI (ArviZ), and LOO from the fit's attrs."""

from __future__ import annotations

import arviz as az
import numpy as np
import polars as pl

R_HAT_MAX = 1.01
ESS_MIN = 400
SAMPLED = ("condition_mean", "channel_sd", "channel_z", "p0_mean", "family_sd", "family_z",
           "family_channel_sd", "family_channel_z")

DIAGNOSTICS_SCHEMA = {
    "r_hat_max": pl.Float64, "ess_bulk_min": pl.Float64, "ess_bulk_min_parameter": pl.String,
    "ess_tail_min": pl.Float64, "divergences": pl.Int64,
    "bfmi_min": pl.Float64, "passed": pl.Boolean, "seconds": pl.Float64, "draws": pl.Int64,
    "draws_per_chain": pl.Int64, "chains": pl.Int64,
    "seed": pl.Int64, "loo_elpd": pl.Float64, "loo_elpd_no_family": pl.Float64, "loo_difference": pl.Float64,
    "loo_difference_se": pl.Float64, "loo_pareto_k_max": pl.Float64,
}


def diagnostics(idata: az.InferenceData) -> pl.DataFrame:
    """One row per fit; ``passed`` needs R-hat ≤ 1.01, bulk and tail ESS ≥ 400 and no divergence."""
    names = [n for n in SAMPLED if n in idata.posterior]
    summary = az.summary(idata, var_names=names, kind="diagnostics")
    divergences = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    bfmi = az.bfmi(idata) if "energy" in idata.sample_stats else np.array([np.nan])
    attrs = idata.posterior.attrs
    r_hat, ess_bulk, ess_tail = float(summary["r_hat"].max()), float(summary["ess_bulk"].min()), float(summary["ess_tail"].min())
    passed = r_hat <= R_HAT_MAX and ess_bulk >= ESS_MIN and ess_tail >= ESS_MIN and divergences == 0
    row = {"r_hat_max": r_hat, "ess_bulk_min": ess_bulk, "ess_bulk_min_parameter": str(summary["ess_bulk"].idxmin()),
           "ess_tail_min": ess_tail, "divergences": divergences,
           "bfmi_min": float(np.min(bfmi)), "passed": passed, "seconds": float(attrs.get("seconds", np.nan)),
           # draws in all, as everywhere; per chain beside it
           "draws": int(idata.posterior.sizes["draw"] * idata.posterior.sizes["chain"]),
           "draws_per_chain": int(idata.posterior.sizes["draw"]), "chains": int(idata.posterior.sizes["chain"]),
           "seed": int(attrs.get("seed", 0))}
    for key in ("loo_elpd", "loo_elpd_no_family", "loo_difference", "loo_difference_se", "loo_pareto_k_max"):
        row[key] = float(attrs[key]) if key in attrs else None
    return pl.DataFrame([row], schema=DIAGNOSTICS_SCHEMA)


def failure_message(row: dict) -> str | None:
    """A loud one-paragraph explanation when the gate fails, else None."""
    if row["passed"]:
        return None
    problems = []
    if not row["r_hat_max"] <= R_HAT_MAX:
        problems.append(f"max R-hat {row['r_hat_max']:.3f} > {R_HAT_MAX}")
    if not row["ess_bulk_min"] >= ESS_MIN:
        problems.append(f"min bulk ESS {row['ess_bulk_min']:.0f} < {ESS_MIN}")
    if not row["ess_tail_min"] >= ESS_MIN:
        problems.append(f"min tail ESS {row['ess_tail_min']:.0f} < {ESS_MIN}")
    if row["divergences"]:
        problems.append(f"{row['divergences']} divergent transitions")
    return ("THE FIT FAILED ITS HEALTH GATE: " + "; ".join(problems)
            + ". Posterior quantities from it are not trustworthy; sample longer or with more chains.")
