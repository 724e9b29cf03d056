"""The fit's health gate: R-hat, ESS (``convergence``) and divergences; beside it, not in it, the
smallest E-BFMI (ArviZ) and LOO from the fit's attrs.

E-BFMI is reported, not gated: below 0.3 (the level at which Stan warns; Betancourt 2016,
arXiv:1604.00695) the sampler explores the energy distribution poorly, and in these models
that shows up as low ESS or high R-hat, which the gate does check. A gate on it as well
would stop fits with no retry that could mend them (the attempts policy has none for it).
"""

from __future__ import annotations

import json

import arviz as az
import numpy as np
import polars as pl

from . import convergence

R_HAT_MAX = 1.01
ESS_MIN = 400
SAMPLED = (
    "condition_mean",
    "channel_sd",
    "channel_z",
    "p0_mean",
    "family_sd",
    "family_z",
    "family_channel_sd",
    "family_channel_z",
)

DIAGNOSTICS_SCHEMA = {
    "r_hat_max": pl.Float64,
    "ess_bulk_min": pl.Float64,
    "ess_bulk_min_parameter": pl.String,
    "ess_tail_min": pl.Float64,
    "divergences": pl.Int64,
    "bfmi_min": pl.Float64,
    "passed": pl.Boolean,
    "seconds": pl.Float64,
    "draws": pl.Int64,
    "draws_per_chain": pl.Int64,
    "chains": pl.Int64,
    "seed": pl.Int64,
    "attempts": pl.Int64,
    "loo_elpd": pl.Float64,
    "loo_elpd_no_family": pl.Float64,
    "loo_difference": pl.Float64,
    "loo_difference_se": pl.Float64,
    "loo_pareto_k_max": pl.Float64,
}


# every parameter but the per-family deviations, a tenth of them: a reading of these that
# fails says the whole gate fails (it is a minimum over a superset) for a fraction of the cost
GLOBAL = tuple(name for name in SAMPLED if name not in ("family_z", "family_channel_z"))


def parameter_diagnostics(idata: az.InferenceData, variables: tuple[str, ...] = SAMPLED) -> pl.DataFrame:
    """R-hat, bulk and tail ESS of every sampled parameter (of ``variables``); one row per parameter (``name[label, …]``)."""
    names, r_hat, bulk, tail = [], [], [], []
    for name in (n for n in variables if n in idata.posterior):
        values = idata.posterior[name]
        x = np.asarray(values.values, dtype=float)
        x = np.moveaxis(x.reshape(x.shape[0], x.shape[1], -1), 2, 0)  # (parameters, chains, draws)
        for out, figures in zip((r_hat, bulk, tail), convergence.summary(x)):
            out.append(figures)
        dims = values.dims[2:]
        if dims:
            labels = [values.coords[d].values.astype(str) for d in dims]
            names += [
                f"{name}[{', '.join(label[i] for label, i in zip(labels, at))}]" for at in np.ndindex(*values.shape[2:])
            ]
        else:
            names.append(name)
    return pl.DataFrame(
        {
            "parameter": names,
            "r_hat": np.concatenate(r_hat),
            "ess_bulk": np.concatenate(bulk),
            "ess_tail": np.concatenate(tail),
        }
    )


def gate(idata: az.InferenceData, variables: tuple[str, ...] = SAMPLED) -> dict:
    """The health gate's figures for a set of draws: max R-hat, min bulk and tail ESS, divergences, BFMI
    (over the parameters of ``variables``: by default all; ``GLOBAL`` for a quick reading)."""
    table = parameter_diagnostics(idata, variables)
    r_hat, ess_bulk, ess_tail = (table[c].to_numpy() for c in ("r_hat", "ess_bulk", "ess_tail"))
    divergences = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    bfmi = az.bfmi(idata) if "energy" in idata.sample_stats else np.array([np.nan])

    # NaN (a constant parameter: a single channel's zero-sum deviation) does not count, as in ArviZ's summary;
    # all NaN (one chain, or too few draws) leaves the figure NaN, and the gate fails
    def worst(values, pick):
        return float(pick(values)) if np.isfinite(values).any() else float("nan")

    row = {
        "r_hat_max": worst(r_hat, np.nanmax),
        "ess_bulk_min": worst(ess_bulk, np.nanmin),
        "ess_bulk_min_parameter": (
            table["parameter"][int(np.nanargmin(ess_bulk))] if np.isfinite(ess_bulk).any() else ""
        ),
        "ess_tail_min": worst(ess_tail, np.nanmin),
        "divergences": divergences,
        "bfmi_min": float(np.min(bfmi)),
    }
    row["passed"] = (
        row["r_hat_max"] <= R_HAT_MAX
        and row["ess_bulk_min"] >= ESS_MIN
        and row["ess_tail_min"] >= ESS_MIN
        and divergences == 0
    )
    return row


def _recorded_attempts(attrs) -> list[dict] | None:
    """The attempts a fit recorded (one dict per attempt), or None for a fit saved before it did."""
    return json.loads(attrs["attempts"]) if "attempts" in attrs else None


def recorded_gate(idata: az.InferenceData) -> dict | None:
    """The gate's figures the fit recorded for the draws it saved (its final attempt), if it recorded them.

    They were computed on the draws before they were saved as float32; recomputing them
    (``gate``) takes seconds at paper size and agrees to well within the Monte Carlo error.
    """
    attrs = idata.posterior.attrs
    recorded = _recorded_attempts(attrs)
    if recorded is None or "final_attempt" not in attrs:
        return None
    final = recorded[int(attrs["final_attempt"]) - 1]
    return {key: final[key] for key in GATE_COLUMNS}


def diagnostics(idata: az.InferenceData) -> pl.DataFrame:
    """One row per fit; ``passed`` needs R-hat ≤ 1.01, bulk and tail ESS ≥ 400 and no divergence."""
    attrs = idata.posterior.attrs
    row = recorded_gate(idata) or gate(idata)
    row = row | {
        "seconds": float(attrs.get("seconds", np.nan)),
        # draws in all, as everywhere; per chain beside it
        "draws": int(idata.posterior.sizes["draw"] * idata.posterior.sizes["chain"]),
        "draws_per_chain": int(idata.posterior.sizes["draw"]),
        "chains": int(idata.posterior.sizes["chain"]),
        "seed": int(attrs.get("seed", 0)),
        "attempts": len(_recorded_attempts(attrs) or [0]),
    }
    for key in LOO_COLUMNS:
        row[key] = float(attrs[key]) if key in attrs else None
    return pl.DataFrame([row], schema=DIAGNOSTICS_SCHEMA)


def attempts(idata: az.InferenceData) -> pl.DataFrame:
    """Every sampling attempt of a fit, in order: one row per attempt, its settings and the gate after it.

    The gate's figures of a row are those of the draws the fit kept after that attempt
    (an extension's chains pooled with the earlier ones); ``final`` marks the fit as
    saved (the last attempt, or the best one when none passed), whose row also carries
    the LOO comparison. A fit saved before attempts were recorded has one row, its own.
    """
    attrs = idata.posterior.attrs
    rows = _recorded_attempts(attrs)
    if rows is None:
        final = diagnostics(idata).row(0, named=True)
        rows = [
            {
                "attempt": 1,
                "action": "first run",
                "seed": final["seed"],
                "chains": final["chains"],
                "tune": int(attrs.get("tune", 0)),
                "draws_per_chain": final["draws_per_chain"],
                "target_accept": float(attrs.get("target_accept", np.nan)),
                "low_rank": bool(attrs.get("low_rank", 0)),
                "seconds": final["seconds"],
                "chains_kept": final["chains"],
                **{k: final[k] for k in GATE_COLUMNS},
            }
        ]
    final = int(attrs.get("final_attempt", len(rows)))
    loo = {key: float(attrs[key]) if key in attrs else None for key in LOO_COLUMNS}
    return (
        pl.DataFrame(rows, schema=ATTEMPT_SCHEMA)
        .with_columns((pl.col("attempt") == final).alias("final"))
        .with_columns(pl.when(pl.col("final")).then(pl.lit(loo[c], dtype=pl.Float64)).alias(c) for c in LOO_COLUMNS)
    )


LOO_COLUMNS = ("loo_elpd", "loo_elpd_no_family", "loo_difference", "loo_difference_se", "loo_pareto_k_max")
GATE_COLUMNS = (
    "r_hat_max",
    "ess_bulk_min",
    "ess_bulk_min_parameter",
    "ess_tail_min",
    "divergences",
    "bfmi_min",
    "passed",
)
ATTEMPT_SCHEMA = {
    "attempt": pl.Int64,
    "action": pl.String,
    "seed": pl.Int64,
    "chains": pl.Int64,
    "tune": pl.Int64,
    "draws_per_chain": pl.Int64,
    "target_accept": pl.Float64,
    "low_rank": pl.Boolean,
    "seconds": pl.Float64,
    "chains_kept": pl.Int64,
    **{k: DIAGNOSTICS_SCHEMA[k] for k in GATE_COLUMNS},
}


def attempt_line(row: dict) -> str:
    """One attempt of a fit in a line: what was tried, how long it took, what the gate saw."""
    verdict = "passed" if row["passed"] else "missed"
    return (
        f"attempt {row['attempt']} ({row['action']}): {row['chains']} chains × ({row['tune']} + "
        f"{row['draws_per_chain']}), target acceptance {row['target_accept']:g}"
        f"{', low-rank' if row['low_rank'] else ''}, {row['seconds']:.0f} s; gate {verdict} on "
        f"{row['chains_kept']} chains: max R-hat {row['r_hat_max']:.3f}, min bulk ESS {row['ess_bulk_min']:.0f} "
        f"({row['ess_bulk_min_parameter']}), min tail ESS {row['ess_tail_min']:.0f}, "
        f"{row['divergences']} divergences"
    )


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
    tried = row.get("attempts") or 1
    return (
        "THE FIT FAILED ITS HEALTH GATE: "
        + "; ".join(problems)
        + f". Posterior quantities from it are not trustworthy. It stopped after {tried} attempt"
        + ("s" if tried != 1 else "")
        + " (`molp2s posterior FIT --what diagnostics` lists them): give it a "
        "longer --budget, or more --draws per chain (few effective draws) or a higher --target-accept "
        "(divergences)."
    )
