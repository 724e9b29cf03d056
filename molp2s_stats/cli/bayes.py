"""The Bayesian model: ``fit`` and ``posterior``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import bayes  # constants only: bayes/__init__ imports nothing
from ..defaults import DEFAULT_DB
from ..errors import UsageError
from ..lazy import lazy_import
from ..output import replacing
from .core import command
from .output import Format, emit
from .params import ChannelsOption, DbOption, FormatOption, OutOption, known_channels, open_database

pl = lazy_import("polars")
metrics = lazy_import("molp2s_stats.stats.metrics")


@command("fit")
def fit_command(
    out: Annotated[Path, typer.Option("--out", help="Where to save the fit (NetCDF InferenceData).")] = Path("fit.nc"),
    db: DbOption = Path(DEFAULT_DB),
    channel: ChannelsOption = None,
    draws: Annotated[
        int | None,
        typer.Option(
            "--draws",
            help="Draws per chain (after tuning); default: until the health gate passes, 400 to 2,400 per chain (nutpie; PyMC: 1,200).",
        ),
    ] = None,
    tune: Annotated[int, typer.Option("--tune", help="Tuning steps per chain.")] = bayes.DEFAULT_TUNE,
    chains: Annotated[int, typer.Option("--chains", help="Chains.")] = bayes.DEFAULT_CHAINS,
    sampler: Annotated[
        str,
        typer.Option("--sampler", help="nutpie (the fast default; JAX or numba gradient) or pymc (PyMC's own NUTS)."),
    ] = "nutpie",
    low_rank: Annotated[
        bool,
        typer.Option(
            "--low-rank/--diagonal",
            help="nutpie's mass matrix: low-rank (learns correlations; more ESS per draw, costlier draws) or diagonal.",
        ),
    ] = bayes.LOW_RANK,
    loo: Annotated[
        bool,
        typer.Option(
            "--loo/--no-loo",
            help="Also fit the model without family effects and compare the two by PSIS-LOO over every cell (about a sixth more time on the default data).",
        ),
    ] = False,
    allow_unconverged: Annotated[
        bool, typer.Option("--allow-unconverged", help="Exit 0 even when the health gate fails.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sampler; saved with the fit.")] = 0,
    target_accept: Annotated[
        float,
        typer.Option(
            "--target-accept",
            help="NUTS target acceptance of the first attempt (higher: smaller steps, fewer divergences, slower).",
        ),
    ] = bayes.TARGET_ACCEPT,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            help="Seconds the fit may take: a first run that misses the health gate is extended (more chains) or run again (smaller steps) while the next attempt is expected to end within this. Default: 600 s, or five times the first attempt's estimated time on a larger leaderboard.",
            show_default=False,
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            help="Where JAX evaluates the gradient: cpu or gpu (JAX built for CUDA: pip install -e '.[gpu]'). "
            f"Default: numba on the CPU for a model of fewer than {bayes.NUMBA_CELLS:,} binomial cells, "
            "else JAX's default device.",
            show_default=False,
        ),
    ] = None,
    warm_start: Annotated[
        Path | None,
        typer.Option(
            "--warm-start",
            help="A fit of the same benchmark and channels, typically before a model was added: the chains start from its draws with its step size and a shorter warm-up; the health gate is as strict as ever.",
        ),
    ] = None,
) -> None:
    """Fit the hierarchical model of per-channel reliance (with family random effects) and save it.

    A run that misses the health gate is not the end: too few effective draws add
    chains, sized from the ESS it got; divergences start again with smaller steps.
    Every attempt is printed, saved in the fit and shown by `molp2s posterior FIT
    --what diagnostics`.

    Example: molp2s fit --channel dipole_norm --seed 1 --out fit.nc
    """
    from ..bayes import data as bayes_data
    from ..bayes import fit as bayes_fit
    from ..bayes import health, provenance
    from ..bayes.progress import Progress

    if sampler not in bayes.SAMPLERS:  # before the data are read: a misspelt sampler fails at once
        raise UsageError(f"--sampler must be one of {', '.join(bayes.SAMPLERS)}")
    con = open_database(db, responses=True)
    if channel:
        known_channels(channel, metrics.read_channels_and_models(con)[0])
    data = bayes_data.read_model_data(con, channels=channel or None)
    previous = _warm_start_fit(warm_start)
    progress = Progress()
    progress.say(
        f"fitting {len(data.models)} models × {len(data.channels)} channels × {len(data.families)} families "
        f"({chains} chains × {tune if previous is None else bayes_fit.WARM_TUNE} warm-up + "
        f"{draws if draws is not None else 'draws until the health gate passes'})"
    )

    def estimated(estimate) -> None:
        progress.say(estimate.line(budget if budget is not None else bayes_fit.default_budget(estimate)))

    idata = bayes_fit.fit(
        data,
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
        sampler=sampler,
        loo=loo,
        low_rank=low_rank,
        progress=progress,
        budget=budget,
        target_accept=target_accept,
        on_attempt=lambda row: progress.say(health.attempt_line(row)),
        on_estimate=estimated,
        warm_start=previous,
        device=device,
    )
    if previous is not None:
        progress.say(bayes_fit.warm_start_note(idata, previous))
    provenance.record(idata, con)  # so that a report can tell when the database has moved on
    with replacing(out) as partial:  # a fit interrupted while saving leaves an earlier fit file whole
        idata.to_netcdf(str(partial))
    row = health.diagnostics(idata)
    emit(row, Format.table, None, title=f"Fit health ({out})")
    if _say_failure(idata, row) and not allow_unconverged:
        raise typer.Exit(3)


def _warm_start_fit(path: Path | None):
    """The saved fit a warm start reads, or None; a clear error where it is missing or not a fit."""
    if path is None:
        return None
    import arviz as az

    if not path.exists():
        raise UsageError(f"--warm-start {path}: no such fit file")
    try:
        return az.from_netcdf(str(path))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--warm-start {path}: not a fit saved by `molp2s fit` ({exc})") from exc


@command("posterior")
def posterior_command(
    fit_file: Annotated[Path, typer.Argument(help="A fit saved by `molp2s fit`.")],
    what: Annotated[
        str,
        typer.Option(
            "--what",
            help="reliance | responsiveness | contrasts | ranks | diagnostics (every sampling attempt, the fit as saved last) | predictive (posterior predictive checks) | prior (prior predictive checks).",
        ),
    ] = "reliance",
    fmt: FormatOption = None,
    out: OutOption = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="With --what predictive or prior: also draw the checks (observed against the predictive interval) to this .svg, .png or .html file.",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the predictive replicates (--what predictive or prior).")
    ] = 0,
) -> None:
    """Posterior quantities of a saved fit as tidy frames (94% HDIs; every output says if the fit failed its gate).

    Example: molp2s posterior fit.nc --what predictive --plot checks.svg
    """
    import arviz as az

    from ..bayes import health, posterior, predictive

    if not fit_file.exists():
        raise UsageError(f"{fit_file}: no such fit file")
    idata = az.from_netcdf(str(fit_file))
    row = health.diagnostics(idata)
    producers = {
        "reliance": lambda: posterior.quantities(idata, "reliance"),
        "responsiveness": lambda: posterior.quantities(idata, "responsiveness"),
        "contrasts": lambda: posterior.contrasts(idata, "reliance"),
        "ranks": lambda: posterior.ranks(idata, "reliance"),
        "diagnostics": lambda: health.attempts(idata),
        "predictive": lambda: predictive.posterior_predictive(idata, seed=seed),
        "prior": lambda: predictive.prior_predictive(predictive.Cells.from_fit(idata), seed=seed),
    }
    if what not in producers:
        raise UsageError(f"--what must be one of {', '.join(producers)}")
    if plot is not None and what not in ("predictive", "prior"):
        raise UsageError("--plot draws the predictive checks: use it with --what predictive or --what prior")
    result = producers[what]()
    if what in ("predictive", "prior"):
        if plot is not None:
            from ..report import charts

            charts.save(charts.predictive_checks(result), plot)
            typer.echo(f"wrote {plot}", err=True)
        typer.echo(predictive.summary_sentence(result), err=True)
    if what != "diagnostics":
        result = result.with_columns(pl.lit(bool(row["passed"][0])).alias("fit_passed"))
    emit(result, fmt, out, title=f"Posterior {what} ({fit_file})")
    _say_failure(idata, row)


def _say_failure(idata, row) -> bool:
    """Say in red on stderr why a fit failed its health gate, and what its next attempt would change;
    whether it failed. ``row`` is the fit's ``health.diagnostics``."""
    from ..bayes import fit as bayes_fit
    from ..bayes import health

    message = health.failure_message(row.row(0, named=True))
    if not message:
        return False
    typer.secho(message, err=True, fg="red", bold=True)
    note = bayes_fit.next_attempt_note(idata)
    if note:
        typer.secho(note, err=True, fg="red")
    return True
