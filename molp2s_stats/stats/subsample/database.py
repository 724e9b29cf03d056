"""Plans and estimates against the database: the complete models, a plan for a new model drawn
from them and saved (`plan_from_db`, `save_plan`), the plan a partial model was run on
(`find_plan`), its estimate (`estimate_from_db`), a leaderboard's rows with each partial model
estimated (`with_estimates`), and a plan's family list read from a file."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ...errors import UsageError, unknown_name
from ..metrics import METRICS
from .design import MIN_PER_STRATUM, NEYMAN_SHARE, make_plan, predictability, predicted_half_widths, universe
from .estimate import METHOD, METHOD_WITHOUT_PREDICTION, SELECTION_Z, estimate_model, selection_check


def complete_models(con) -> list[str]:
    """The models answered in full: the ones a plan learns from and an estimate predicts with."""
    return con.sql("SELECT model FROM model_coverage WHERE NOT partial ORDER BY model").pl()["model"].to_list()


def _cohort_outcomes(con) -> tuple[pl.DataFrame, list[str]]:
    from ..metrics import read_family_outcomes

    outcomes, channels, _ = read_family_outcomes(con)
    present = set(outcomes["channel"].unique().to_list())
    return outcomes, [c for c in channels if c in present]


def tasks_per_family(con, families: list[str], channels: list[str]) -> dict[str, int]:
    """Requests a family costs: its P0 task and its tasks in the channels (bundles included)."""
    rows = con.execute(
        """SELECT family_id, count(*) FROM stg_tasks
           WHERE list_contains($families, family_id) AND (channel = 'none' OR list_contains($channels, channel))
           GROUP BY family_id""",
        {"families": families, "channels": channels},
    ).fetchall()
    return dict(rows)


#: Budgets printed beside the one asked for, as fractions of the plan's families.
OTHER_FRACTIONS = (0.05, 0.10, 0.15, 0.30, 0.50)


@dataclass(frozen=True)
class Plan:
    plan_id: str
    families: pl.DataFrame  # make_plan's frame
    channels: list[str]
    models: list[str]
    seed: int
    requests: int
    budgets: pl.DataFrame  # families, fraction, requests, strata, channel, half_width (_low, _high)


def plan_from_db(
    con,
    *,
    fraction: float | None = None,
    families: int | None = None,
    half_width: float | None = None,
    channels: list[str] | None = None,
    seed: int = 0,
) -> Plan:
    """Choose the families a new model answers, from the complete models in the database, and
    predict each channel's PGR half-width at that budget and at a few others.

    The budget is a fraction of the cohorts' families, a number of families, or a target: the
    fewest families at which every channel's expected PGR half-width (pp) is at most ``half_width``."""
    if sum(x is not None for x in (fraction, families, half_width)) != 1:
        raise UsageError(
            "give {fraction}, {families} or {half_width} (one of them)",
            arguments={"fraction": "a fraction", "families": "a number of families", "half_width": "a half-width"},
        )
    models = complete_models(con)
    if not models:
        raise UsageError("no complete model in the database: a plan learns from models that answered every family")
    outcomes, all_channels = _cohort_outcomes(con)
    outcomes = outcomes.filter(pl.col("model").is_in(models))
    channels = [c for c in all_channels if c in channels] if channels else all_channels
    if not channels:
        raise UsageError("no channel with a cohort to plan for")
    members = universe(outcomes, channels)
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise UsageError(f"{{fraction}} must be in (0, 1], got {fraction}", arguments={"fraction": "the fraction"})
        families = max(MIN_PER_STRATUM, round(fraction * len(members)))
    known = predictability(outcomes, models, channels)
    if half_width is not None:
        families = families_for_half_width(known, outcomes, members, channels, half_width)
    if families < MIN_PER_STRATUM:
        raise UsageError(f"a plan needs at least {MIN_PER_STRATUM} families for an interval, not {families}")
    frame = make_plan(outcomes, models=models, channels=channels, families=families, seed=seed, known=known)
    chosen = frame.filter("selected")["family_id"].to_list()
    cost = tasks_per_family(con, members, channels)
    per_family = np.mean([cost.get(f, 0) for f in members])
    budgets = sorted({families, *(max(2, round(f * len(members))) for f in OTHER_FRACTIONS)} - {0})
    budgets = [b for b in budgets if b <= len(members)]
    widths = predicted_half_widths(known, members, frame["spread"].to_numpy(), budgets).with_columns(
        (pl.col("families") / len(members)).alias("fraction"),
        pl.when(pl.col("families") == families)
        .then(sum(cost.get(f, 0) for f in chosen))
        .otherwise((pl.col("families") * per_family).round().cast(pl.Int64))
        .alias("requests"),
    )
    plan_id = f"plan-{seed}-{families}-" + _digest(chosen, channels, models)
    return Plan(
        plan_id,
        frame,
        channels,
        models,
        seed,
        sum(cost.get(f, 0) for f in chosen),
        widths.select(
            "families", "fraction", "requests", "strata", "channel", "half_width", "half_width_low", "half_width_high"
        ),
    )


def families_for_half_width(
    known, outcomes: pl.DataFrame, members: list[str], channels: list[str], half_width: float
) -> int:
    """The fewest families at which every channel's expected PGR half-width is at most ``half_width`` (pp).

    Bisection over the budget: the expected half-width falls as families are added (a change in
    the number of strata can nudge it up by a hair, so the answer is checked where it lands)."""
    if not half_width > 0:
        raise UsageError(f"the half-width must be above 0 pp, got {half_width}")
    lookup = dict(zip(known.families, known.spread))
    spread = np.array([lookup.get(f, 1.0) for f in members])

    def widest(n: int) -> tuple[float, str]:
        widths = predicted_half_widths(known, members, spread, [n]).drop_nans("half_width")
        if widths.height == 0:
            return float("inf"), channels[0]
        row = widths.sort("half_width", descending=True).row(0, named=True)
        return row["half_width"], row["channel"]

    # the estimate is of the score over families like these, as a complete model's: even every family
    # answered leaves a complete model's half-width, and a target below it is out of reach
    low, high = MIN_PER_STRATUM, len(members)
    at_fewest, _ = widest(low)
    if not np.isfinite(at_fewest):
        raise UsageError("the complete models give no half-width to plan on (no spread between their families)")
    at_all, channel = widest(high)
    if at_all > half_width:
        raise UsageError(
            f"a half-width of {half_width:g} pp is out of reach: answering all {high} families gives about "
            f"{at_all:.1f} pp on {channel}, a complete model's (only new families would narrow it)"
        )
    if at_fewest <= half_width:
        return low
    while high - low > 1:
        middle = (low + high) // 2
        if widest(middle)[0] <= half_width:
            high = middle
        else:
            low = middle
    return high


def _digest(*parts) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:10]


def save_plan(con, plan: Plan) -> None:
    """Record the plan (every family, selected or not, with its stratum): `estimate` reads it back."""
    from ...store import transaction

    with transaction(con):
        con.execute("DELETE FROM plan_families WHERE plan_id = $id", {"id": plan.plan_id})
        con.execute("DELETE FROM plans WHERE plan_id = $id", {"id": plan.plan_id})
        con.execute(
            "INSERT INTO plans VALUES ($id, now(), $seed, $n, $channels, $models, $share)",
            {
                "id": plan.plan_id,
                "seed": plan.seed,
                "n": int(plan.families["selected"].sum()),
                "channels": plan.channels,
                "models": plan.models,
                "share": NEYMAN_SHARE,
            },
        )
        rows = plan.families.with_columns(pl.lit(plan.plan_id).alias("plan_id")).select(
            "plan_id",
            "family_id",
            "stratum",
            "stratum_families",
            "stratum_sampled",
            "inclusion_probability",
            "selected",
            "spread",
        )
        con.register("new_plan_families", rows.to_arrow())
        con.execute("INSERT INTO plan_families SELECT * FROM new_plan_families")
        con.unregister("new_plan_families")


def find_plan(con, model: str, plan_id: str | None = None) -> tuple[str | None, pl.DataFrame | None, str | None]:
    """The plan a partial model was run on: ``plan_id`` if given, else the recorded plan whose selected
    families hold most of the families the model answered. Returns (plan id, its families, a note
    for the user or None)."""
    plans = [row[0] for row in con.execute("SELECT plan_id FROM plans ORDER BY created_at DESC").fetchall()]
    if plan_id is not None and plan_id not in plans:
        raise UsageError(f"no plan {plan_id!r} in the database (plans: {', '.join(plans) or 'none'})")
    # the plan whose chosen families hold most of the model's, the newest among equals
    found = con.execute(
        """WITH answered AS (SELECT DISTINCT family_id FROM family_coverage WHERE model = $m AND answered_tasks > 0)
           SELECT f.plan_id, count(a.family_id) AS overlap
           FROM plan_families AS f JOIN plans AS p USING (plan_id)
           LEFT JOIN answered AS a ON a.family_id = f.family_id AND f.selected
           WHERE $id IS NULL OR f.plan_id = $id
           GROUP BY f.plan_id, p.created_at ORDER BY overlap DESC, p.created_at DESC LIMIT 1""",
        {"m": model, "id": plan_id},
    ).fetchall()
    answered = {
        row[0]
        for row in con.execute(
            "SELECT DISTINCT family_id FROM family_coverage WHERE model = $m AND answered_tasks > 0", {"m": model}
        ).fetchall()
    }
    # a plan that holds only a few of them is a coincidence, not the model's plan (another model's run
    # of a first-N subset shares families with any plan); one named with --plan is taken as given
    if not found or found[0][1] == 0 or (plan_id is None and 2 * found[0][1] <= len(answered)):
        closest = (
            f" (the closest, {found[0][0]}, holds {found[0][1]} of its {len(answered)})"
            if found and found[0][1]
            else ""
        )
        return (
            None,
            None,
            (
                f"no recorded plan covers {model}'s families{closest}: they are read as a simple random "
                "sample of the cohort (run `molp2s plan` before the model, to weigh its families by design)"
            ),
        )
    best = found[0][0]
    frame = con.sql("SELECT * FROM plan_families WHERE plan_id = $id", params={"id": best}).pl()
    chosen = set(frame.filter("selected")["family_id"])
    notes = []
    if extra := len(answered - chosen):
        notes.append(f"{extra} answered families are outside plan {best} and are left out")
    if missing := len(chosen - answered):
        notes.append(
            f"{missing} planned families have no answer from {model}: read as missing at random within their stratum"
        )
    return best, frame, "; ".join(notes) or None


def estimate_from_db(
    con,
    model: str,
    *,
    plan_id: str | None = None,
    metrics: tuple[str, ...] = METRICS,
    conf_level: float = 0.95,
    seed: int = 0,
    draws: int = 0,
) -> tuple[pl.DataFrame, str | None]:
    """Every metric of a partial model over the complete cohort (`estimate_model`), with the plan
    it was run on found in the database; returns the rows and a note for the user (or None)."""
    coverage = con.sql("SELECT * FROM model_coverage").pl()
    if model not in coverage["model"].to_list():
        raise UsageError(unknown_name("model", None, [model], coverage["model"].to_list()))
    complete = complete_models(con)
    if model in complete:
        raise UsageError(f"{model} answered every family: `molp2s metrics` gives its figures directly")
    if not complete:
        raise UsageError("no complete model in the database to estimate against")
    outcomes, channels = _cohort_outcomes(con)
    found, plan, note = find_plan(con, model, plan_id)
    notes = [note]
    if plan is not None:
        chosen = set(plan.filter("selected")["family_id"])
        outcomes = outcomes.filter((pl.col("model") != model) | pl.col("family_id").is_in(chosen))
        # only the plan's channels: elsewhere a cohort holds families the plan could never draw
        planned = con.execute("SELECT channels FROM plans WHERE plan_id = $id", {"id": found}).fetchall()[0][0]
        if left := [c for c in channels if c not in planned]:
            notes.append(f"plan {found} covers {', '.join(planned)}: {len(left)} other channel(s) not estimated")
        channels = [c for c in channels if c in planned]
    outcomes = outcomes.filter(pl.col("model").is_in([*complete, model]))
    result = estimate_model(
        outcomes,
        plan,
        model=model,
        complete=complete,
        channels=channels,
        metrics=metrics,
        conf_level=conf_level,
        seed=seed,
        draws=draws,
    )
    if silent := [c for c in channels if c not in set(outcomes.filter(pl.col("model") == model)["channel"])]:
        notes.append(
            f"{model} answered no cohort family in {len(silent)} channel(s) ({', '.join(silent)}): no estimate there"
        )
    check = selection_check(outcomes, plan, model=model, complete=complete, channels=channels)
    if check is not None and abs(check[2]) > SELECTION_Z:
        drawn, cohort, z = check
        notes.append(
            f"the families {model} answered are not like a random draw from "
            f"{'plan ' + found if plan is not None else 'the cohort'}: the complete models are right on "
            f"{drawn:.0%} of their tasks there and on {cohort:.0%} over the cohort (z = {z:.1f}); the estimate "
            "corrects for what the complete models' outcomes predict, but its interval assumes a random draw, so "
            "read it with care (`molp2s plan` draws the families at random)"
        )
    return result, "; ".join(filter(None, notes)) or None


def read_family_list(path, *, known: list[str]) -> list[str]:
    """The ``family_id`` column of a CSV, JSONL or Parquet file (a plan), read as the benchmark's
    tables are and every id checked against the benchmark's families; errors name the file and
    the row."""
    from pathlib import Path

    from ...ingest.benchmark import read_table
    from ...ingest.errors import InputError

    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    frame = read_table(path, "family list", spec={"family_id": ("id", True)})
    known_set = set(known)
    for family, where in frame.select("family_id", "_where").iter_rows():
        if family not in known_set:
            raise InputError(path, f"family_id {family!r} is not a family of the benchmark", where=where)
    return list(dict.fromkeys(frame["family_id"].to_list()))


#: The ``method`` values of estimated rows: a leaderboard marks them.
ESTIMATED_METHODS = (METHOD, METHOD_WITHOUT_PREDICTION, f"{METHOD}_bootstrap", f"{METHOD_WITHOUT_PREDICTION}_bootstrap")


def with_estimates(con, result: pl.DataFrame, metrics: tuple[str, ...]) -> tuple[pl.DataFrame, list[str]]:
    """``metrics``' rows with each partial model's rows replaced by its estimate over the complete
    cohort (what a leaderboard shows for it), and the notes the estimates gave."""
    from ..metrics import read_partial_models

    notes = []
    for model in read_partial_models(con)["model"].to_list():
        try:
            estimate, note = estimate_from_db(con, model, metrics=metrics)
        except UsageError as exc:  # no complete model to estimate against: its plain rows stay
            notes.append(f"{model}: not estimated ({exc})")
            continue
        if note:
            notes.append(f"{model}: {note}")
        result = pl.concat(
            [
                result.filter(pl.col("model") != model),
                estimate.select(result.columns).filter(pl.col("metric").is_in(list(metrics))),
            ]
        )
    return result, notes
