"""The ``molp2s`` command line: parse arguments, call the package, print. Nothing else.

The package's modules are imported lazily (``lazy.lazy_import``): ``molp2s --help``,
``sql`` and ``cohort`` start without scipy, pingouin or PyMC; a command imports what it
calls when it calls it.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import bayes  # constants only: bayes/__init__ imports nothing
from .defaults import (CONDITIONS, DB_ENV_VAR, DEFAULT_BENCHMARK, DEFAULT_DB, DEFAULT_DRAWS, DEFAULT_MAX_PEAKS,
                       DEFAULT_PAIRED_DRAWS, DEFAULT_RESPONSES, INTERVAL_HELP, REPORTS, SIMULATION_SEED)
from .errors import UsageError, require_known
from .glossary import METRICS
from .lazy import lazy_import
from .output import Format, emit, leaderboard, resolve_format

pl = lazy_import("polars")
duckdb = lazy_import("duckdb")
compare = lazy_import("molp2s_stats.stats.compare")
metrics = lazy_import("molp2s_stats.stats.metrics")
power = lazy_import("molp2s_stats.stats.power")
prompts = lazy_import("molp2s_stats.prompts")
simulate = lazy_import("molp2s_stats.simulate")
stability = lazy_import("molp2s_stats.stats.stability")
subsample = lazy_import("molp2s_stats.stats.subsample")
store = lazy_import("molp2s_stats.store")
ingest = lazy_import("molp2s_stats.ingest")

app = typer.Typer(
    help="MolP2SBench statistics: load responses, build cohorts, report metrics with family-level uncertainty.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


DEBUG_ENV_VAR = "MOLP2S_DEBUG"
_debug_flag = False


@app.callback()
def _entry(
    debug: Annotated[bool, typer.Option(
        "--debug", help=f"Show the Python traceback behind an error message (or set {DEBUG_ENV_VAR}=1).")] = False,
) -> None:
    """Before every command: third-party notices known to be harmless stay quiet, and Ctrl-C interrupts."""
    import signal

    global _debug_flag
    _debug_flag = debug  # set on every invocation, so one run's --debug does not outlive it in a test process

    from .notices import silence_known_notices

    silence_known_notices()
    # A shell script's background job starts with SIGINT ignored, so `kill -INT` would not stop a load
    # there: this process asks for it explicitly (the command wrapper turns it into a message and 130).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

DbOption = Annotated[Path, typer.Option("--db", help="DuckDB database file (env MOLP2S_DB).",
                                        envvar=DB_ENV_VAR, show_default=True)]
FormatOption = Annotated[Optional[Format], typer.Option(
    "--format", help="table | csv | json | parquet; default: from the suffix of --out (.csv, .json, .parquet), else table.")]
OutOption = Annotated[Optional[Path], typer.Option("--out", help="Write to this file instead of stdout.")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap; recorded in the output.")]
# one flag for one idea: the channel(s) a command covers; --channels is kept for scripts that use it
ChannelsOption = Annotated[Optional[list[str]], typer.Option(
    "--channel", "--channels", help="Channel(s), repeat for several; default: every channel.")]
LevelOption = Annotated[float, typer.Option("--conf-level", help="Interval coverage, e.g. 0.95.")]
ExcludeOption = Annotated[Optional[Path], typer.Option(
    "--exclude", help="Leave these families out of the cohort: `molp2s audit`'s output (family_id, channel), any "
                      "table with a family_id column, or one family id a line.", show_default=False)]


def _outcomes(con, exclude: Path | None):
    """The cohort's family outcomes, channels and models; without the families ``exclude`` lists (said on stderr)."""
    outcomes, channels, models = metrics.read_family_outcomes(con)
    if exclude is None:
        return outcomes, channels, models
    from .stats import audit

    known = set(con.sql("SELECT family_id FROM stg_families").pl()["family_id"])
    exclusions = audit.read_exclusions(exclude, known)
    kept = audit.excluding(outcomes, exclusions)
    cells = outcomes.select("family_id", "channel").unique().height - kept.select("family_id", "channel").unique().height
    typer.echo(f"left out of the cohort: {exclusions['family_id'].n_unique()} families listed in {exclude} "
               f"({cells} family × channel cells)", err=True)
    return kept, channels, models


def _debugging() -> bool:
    return _debug_flag or os.environ.get(DEBUG_ENV_VAR, "") not in ("", "0")


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    if _debugging() and sys.exc_info()[0] is not None:
        raise  # the line above, then the traceback that led to it (--debug)
    raise typer.Exit(code)


def command(name: str, **options):
    """Register a command whose user errors (``UsageError``, bad input included, and a
    database that cannot be used) print as one line; anything else is a bug and keeps
    its traceback."""
    def register(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except KeyboardInterrupt:
                # a load is one transaction, rolled back; other outputs are written whole or not at all
                # (output.replacing): say so, and exit as shells expect of an interrupt
                left = ("nothing was loaded: the database is as it was" if name == "load"
                        else "no output file was left half-written")
                typer.echo(f"interrupted: {name} stopped; {left}", err=True)
                raise typer.Exit(130) from None
            except Exception as exc:  # StoreError is looked up only on failure: store is imported lazily
                if isinstance(exc, UsageError) or isinstance(exc, store.StoreError):
                    _fail(str(exc))
                duckdb_module = sys.modules.get("duckdb")
                if duckdb_module is not None and isinstance(exc, duckdb_module.Error):
                    message = store.explain_failure(exc, kwargs.get("db"))
                    if message:
                        _fail(message, code=1)
                raise
        return app.command(name, **options)(wrapper)
    return register


def _known_channels(requested: list[str] | None, channels: list[str]) -> list[str]:
    """The requested channels (all by default), refusing unknown ones."""
    if not requested:
        return channels
    require_known("channel", "--channel", requested, channels)
    return [c for c in channels if c in requested]


def _open(db: Path, *, read_only: bool = True, responses: bool = False,
          instead: str | None = None) -> duckdb.DuckDBPyConnection:
    """The database, holding a benchmark (and responses, where the command scores them); a StoreError
    prints as one line, see ``command``. A database that is not there is never created here: the
    error says how to build it, or ``instead`` what else to type."""
    if not Path(db).exists():
        raise store.StoreError(store.missing_database(db, instead=instead))
    con = store.connect(db, read_only=read_only)
    store.require_benchmark(con, str(db))
    if responses:
        store.require_responses(con, str(db))
    return con


@command("load")
def load_command(
    more_files: Annotated[Optional[list[Path]], typer.Argument(
        help="More response files: `--responses a.jsonl b.csv` and `--responses a --responses b` both work.",
        metavar="FILE...", show_default=False)] = None,
    responses: Annotated[Optional[list[Path]], typer.Option("--responses", help="Response files or folders: .jsonl, .csv, .parquet, Inspect AI .eval/.json, lm-eval samples .jsonl.")] = None,
    benchmark: Annotated[Optional[Path], typer.Option("--benchmark", help="Benchmark folder (families, candidates, properties, tasks[, channels]).")] = None,
    db: DbOption = Path(DEFAULT_DB),
    fmt: Annotated[Optional[str], typer.Option("--format", help="jsonl | csv | parquet | inspect | lm-eval | openai-batch | anthropic-batch; default: from the suffix and the fields.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Model name: for lm-eval samples (default: their folder's name); for batch results it renames every line and names failed requests.")] = None,
    task_map: Annotated[Optional[Path], typer.Option("--task-map", help="CSV with columns sample_id, task_id: Inspect sample ids to task ids.")] = None,
    wait: Annotated[float, typer.Option("--wait", help="Seconds to wait for another process writing the database.")] = 300.0,
) -> None:
    """Load a benchmark and response files into the database, all or nothing.

    Example: molp2s load --benchmark data/benchmark --responses data/responses
    """
    files = list(responses or []) + list(more_files or [])
    task_ids = None
    if task_map is not None:
        if not task_map.exists():
            _fail(f"{task_map}: no such file")
        mapping = pl.read_csv(task_map, infer_schema=False)
        if {"sample_id", "task_id"} - set(mapping.columns):
            _fail(f"{task_map}: needs columns sample_id and task_id")
        task_ids = dict(mapping.select("sample_id", "task_id").iter_rows())
    if benchmark is None and not files:
        _fail("nothing to load: give --benchmark DIR and/or --responses FILE ...")
    _require_inputs(benchmark, files)
    # resolved before the load starts: a Ctrl-C during this import is then an interrupt, not a failed lookup.
    # Read off the package: `from .ingest.errors import …` under the lazily imported package would run
    # errors.py a second time, a class the loaders never raise (and a bad file's error escaped this handler).
    InputError = ingest.InputError

    existed = Path(db).exists()
    try:
        con = store.connect(db, wait=wait)
        loads_before = _loads(con)
    except (KeyboardInterrupt, RuntimeError) as exc:  # while the schema was being made: nothing is loaded yet
        _remove_new_database(db, existed)
        if _interrupted(exc):
            raise KeyboardInterrupt from None
        raise
    try:
        summary = ingest.load(con, benchmark=benchmark, responses=files, fmt=fmt, model=model, task_ids=task_ids)
    except (InputError, KeyboardInterrupt, duckdb.Error, RuntimeError) as exc:
        interrupted = _interrupted(exc)
        if isinstance(exc, RuntimeError) and not isinstance(exc, duckdb.Error) and not interrupted:
            raise  # a bug, with its traceback
        # an interrupt may land just after the load's COMMIT: what the database holds says which it was
        if interrupted and _loads(con) != loads_before:
            con.close()
            typer.echo("interrupted after the load was committed: it is in the database whole "
                       "(`molp2s check` lists it)", err=True)
            raise typer.Exit(130) from None
        try:  # otherwise the load's transaction has been rolled back
            con.close()
        except duckdb.Error:  # a store that failed (a full disk) may fail to close too: the file goes below
            pass
        _remove_new_database(db, existed)
        if interrupted:
            raise KeyboardInterrupt from None  # the command wrapper says it in one line, exit 130
        if not isinstance(exc, InputError):
            raise  # a failure of the store: the command wrapper says it in one line
        _fail(f"{exc}; nothing was loaded, the database is unchanged")
    con.close()
    try:
        _report_load(summary)
    except KeyboardInterrupt:
        typer.echo("interrupted after the load was committed: it is in the database whole", err=True)
        raise typer.Exit(130) from None


def _require_inputs(benchmark: Path | None, files: list[Path]) -> None:
    """A benchmark or response path that is not there is named before the database is opened, with
    the path meant where one beside it is close (a quoted pattern is left to the loader)."""
    if benchmark is not None and not benchmark.exists():
        _fail(_no_such_input(benchmark, "--benchmark", "folder", DEFAULT_BENCHMARK))
    for path in files:
        if not path.exists() and not any(c in str(path) for c in "*?["):
            _fail(_no_such_input(path, "--responses", "file or folder", DEFAULT_RESPONSES))


def _no_such_input(path: Path, option: str, what: str, default: Path) -> str:
    """``<path>: no such <what>; did you mean <option> <close path>?`` (or the package's default data)."""
    import difflib

    from .defaults import shown_path

    try:
        names = sorted(p.name for p in path.parent.iterdir())
    except OSError:  # no such folder either, or one that cannot be listed
        names = []
    close = [path.parent / name for name in difflib.get_close_matches(path.name, names, n=2)]
    hint = (f"did you mean {' or '.join(f'{option} {c}' for c in close)}?" if close else
            f"the package's default data is {option} {shown_path(default)};")
    return f"{path}: no such {what}; {hint} nothing was loaded"


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C, also as DuckDB reports it from inside a query ("Query interrupted", or a scan of a Python
    object that failed with KeyboardInterrupt)."""
    return isinstance(exc, KeyboardInterrupt) or any(sign in str(exc) for sign in ("Query interrupted",
                                                                                   "KeyboardInterrupt"))


def _remove_new_database(db: Path, existed: bool) -> None:
    """Leave no half-made database behind: the file (and its WAL) a failed load created, not one it found."""
    if not existed:
        for leftover in (Path(db), Path(f"{db}.wal")):
            leftover.unlink(missing_ok=True)


def _loads(con) -> tuple[int, int]:
    """What the database records of its loads (benchmarks, response files): how a commit shows."""
    try:
        return tuple(con.execute("SELECT (SELECT count(*) FROM benchmark), (SELECT count(*) FROM response_files)")
                     .fetchall()[0])
    except duckdb.Error:
        return (-1, -1)


def _report_load(summary) -> None:
    """What a load added, file by file."""
    if summary.benchmark is not None:
        b = summary.benchmark
        state = "already loaded" if b.already_loaded else "loaded"
        typer.echo(f"benchmark {b.path}: {state} ({b.families} families, {b.tasks} tasks, "
                   f"{b.channels} channels, {b.pair_distances} pair distances)")
    for f in summary.files:
        if f.already_loaded:
            typer.echo(f"{f.path}: already loaded, nothing added")
        else:
            typer.echo(f"{f.path}: {f.rows} rows ({f.parsed} parsed from text, {f.invalid} invalid)")
            for name, cut, answers in f.truncated:
                typer.echo(f"  {name}: {cut} of {answers} answers truncated at the token limit "
                           "(invalid, reason truncated)")
            if f.truncated:
                typer.echo(f"  to let them finish, {ingest.truncation_advice(f.fmt)}")


@command("prompts")
def prompts_command(
    out: Annotated[Path, typer.Option("--out", help="File to write.")],
    benchmark: Annotated[Optional[Path], typer.Option("--benchmark", help="Benchmark folder; default: the embedded benchmark.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="Read the benchmark from this database instead of a folder.")] = None,
    channel: Annotated[Optional[list[str]], typer.Option("--channel", "--channels", help="Only these channels (repeat; `none` for the P0 tasks).")] = None,
    condition: Annotated[Optional[list[str]], typer.Option("--condition", help="Only these conditions: none | source | shuffled | cf (repeat).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="jsonl | csv | parquet (one row per task) | openai-batch | anthropic-batch (request lines).")] = "jsonl",
    model: Annotated[Optional[str], typer.Option("--model", help="Model the batch requests go to (batch formats).")] = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", help=(
        "Token limit of each batch request (reasoning and thinking count against it). Default: 1024 for "
        "the short answer; 32768 with --reasoning-effort (OpenAI's hidden reasoning counts against "
        "max_completion_tokens); the thinking budget + 1024 with --thinking-budget."), show_default=False)] = None,
    reasoning_effort: Annotated[Optional[str], typer.Option("--reasoning-effort", help=(
        "openai-batch: reasoning_effort of OpenAI reasoning models: none | minimal | low | medium | high | "
        "xhigh | max (each model takes some)."))] = None,
    thinking_budget: Annotated[Optional[int], typer.Option("--thinking-budget", help=(
        "anthropic-batch: extended thinking with this budget_tokens (at least 1024, below --max-tokens)."))] = None,
    max_peaks: Annotated[int, typer.Option("--max-peaks", help="IR and Raman: the strongest peaks shown.")] = DEFAULT_MAX_PEAKS,
    families: Annotated[Optional[Path], typer.Option("--families", help=(
        "Only these families' tasks: a CSV, JSONL or Parquet file with a family_id column "
        "(as `molp2s plan` writes it)."))] = None,
) -> None:
    """Write every task as the messages a model reads: a system message and a user prompt.

    The prompts never name the condition, the task or the family: source, shuffled and cf
    prompts of one family differ only in the property block.

    Reasoning models: --format openai-batch --model o3 --reasoning-effort medium, or
    --format anthropic-batch --model claude-sonnet-4-5 --thinking-budget 8000.

    Example: molp2s prompts --format openai-batch --model gpt-4o --channel ir --out requests.jsonl
    """
    if benchmark is not None and db is not None:
        raise UsageError("give --benchmark or --db, not both")
    # flags the API would refuse are refused before the benchmark is read
    prompts.check_request_options(api=prompts.request_api(fmt), max_tokens=max_tokens,
                                  reasoning_effort=reasoning_effort, thinking_budget=thinking_budget)
    for name in condition or []:
        if name not in CONDITIONS:
            raise UsageError(f"--condition must be one of {', '.join(CONDITIONS)}, got {name!r}")
    if db is not None:
        con = _open(db, instead="leave out --db to read the package's benchmark")
        tables = prompts.benchmark_tables(con)
        con.close()
    else:
        tables = ingest.read_benchmark(benchmark or DEFAULT_BENCHMARK)
    _known_channels(channel, ["none", *tables["channels"].sort("position")["channel"]])  # refuses unknown ones
    if families is not None:
        wanted = subsample.read_family_list(families, known=tables["tasks"]["family_id"].unique().to_list())
        tables = {**tables, "tasks": tables["tasks"].filter(pl.col("family_id").is_in(wanted))}
    rendered = prompts.render_prompts(tables, channels=channel, conditions=condition, max_peaks=max_peaks)
    if rendered.height == 0:
        raise UsageError("no task matches the given --channel and --condition")
    manifest = prompts.write_prompts(rendered, out, fmt=fmt, model=model, max_tokens=max_tokens,
                                     reasoning_effort=reasoning_effort, thinking_budget=thinking_budget)
    limit = f", max tokens {manifest['max_tokens']}" if manifest else ""
    typer.echo(f"wrote {rendered.height} prompts ({fmt}, template {prompts.TEMPLATE}{limit}) to {out}")


def _metrics_help() -> str:
    from .glossary import definition

    lines = "\n\n".join(f"{metric}: {definition(metric)}" for metric in METRICS)
    return ("Every metric per model × channel, with family-level intervals (rates in %, differences in pp).\n\n"
            f"{INTERVAL_HELP}\n\n{lines}\n\nExample: molp2s metrics --metric pgr --metric cfr --bootstrap 2000 --seed 1 --format csv "
            "--out metrics.csv")


@command("metrics", help=_metrics_help())
def metrics_command(
    db: DbOption = Path(DEFAULT_DB),
    metric: Annotated[Optional[list[str]], typer.Option("--metric", help=f"One of: {', '.join(METRICS)}; repeat for several. Default: all.")] = None,
    channel: ChannelsOption = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates (0: point estimates only).")] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    invalid: Annotated[str, typer.Option("--invalid", help="Invalid answers: wrong (scored 0, the paper's rule) | exclude (left out; n counts the families that entered).")] = "wrong",
    exclude: ExcludeOption = None,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Every metric (accuracy, RM, CF accuracy, PGR, CFR/Persist/Other) per model × channel with family-bootstrap intervals.

    Example: molp2s metrics --metric pgr --metric cfr --bootstrap 2000 --seed 1 --format csv --out metrics.csv
    """
    con = _open(db, responses=True)
    outcomes, channels, models = _outcomes(con, exclude)
    result = metrics.compute_metrics(outcomes, channels=_known_channels(channel, channels), models=models,
                                     metrics=tuple(metric) if metric else metrics.METRICS,
                                     draws=bootstrap, seed=seed, conf_level=conf_level, invalid=invalid)
    if note := metrics.partial_note(metrics.read_partial_models(con)):
        typer.echo(note, err=True)
    emit(result, fmt, out, title="Metrics (rates in %, differences in pp)")


@command("plan")
def plan_command(
    out: Annotated[Path, typer.Option("--out", help="CSV of the chosen families (one row per family, column family_id).")],
    db: DbOption = Path(DEFAULT_DB),
    fraction: Annotated[Optional[float], typer.Option("--fraction", help="Share of the cohorts' families to evaluate, e.g. 0.15.")] = None,
    families: Annotated[Optional[int], typer.Option("--families", help="Number of families to evaluate (instead of --fraction).")] = None,
    channel: ChannelsOption = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random draw within each stratum; recorded in the plan.")] = 0,
) -> None:
    """Choose the families a new model is to answer, and say what that buys before anything is spent.

    The families are a stratified random sample: the models already answered in full say where a
    model's outcome is hard to predict from theirs, and those families get more of the budget. The
    plan is recorded in the database, so that `molp2s estimate` can weigh each answered family by
    its chance of being chosen. Prints the requests the plan costs and the expected 95% half-width
    of each channel's PGR, at this budget and at others beside it. Then export the chosen families'
    prompts with `molp2s prompts --families plan.csv --format openai-batch --model NEW --out requests.jsonl`.

    Example: molp2s plan --fraction 0.15 --seed 1 --out plan.csv
    """
    con = _open(db, read_only=False, responses=True)
    plan = subsample.plan_from_db(con, fraction=fraction, families=families,
                                  channels=_known_channels(channel, metrics.read_channels_and_models(con)[0]),
                                  seed=seed)
    subsample.save_plan(con, plan)
    con.close()
    chosen = plan.families.filter("selected")
    chosen.select("family_id", "stratum", "inclusion_probability").write_csv(out)
    strata = int(plan.families["stratum"].max())
    typer.echo(f"{plan.plan_id}: {chosen.height} of {plan.families.height} families "
               f"({chosen.height / plan.families.height:.0%}) in {strata} {'stratum' if strata == 1 else 'strata'}, "
               f"seed {seed}; {plan.requests:,} requests (their tasks in {len(plan.channels)} channels and P0); "
               f"wrote {out}")
    only = "".join(f" --channel {c}" for c in plan.channels) if channel else ""
    typer.echo(f"export their prompts with: molp2s prompts --db {db} --families {out}{only} --format … --out …")
    typer.echo("expected 95% half-width of each channel's PGR (pp), for a model like the complete ones:")
    from .units import percent_column

    shown = plan.budgets.with_columns(percent_column("fraction", "percent").round(0).cast(pl.Int64))
    wide = (shown.with_columns(pl.format("{} families ({}%)", "families", "percent").alias("budget"))
            .pivot(on="budget", index="channel", values="half_width", maintain_order=True))
    emit(wide.with_columns(pl.col(pl.Float64).round(1)), None, None)
    chosen_budget = plan.budgets.filter(pl.col("families") == chosen.height)
    typer.echo(f"at {chosen.height} families, from a model as steady as the steadiest complete model to one as "
               "noisy as the noisiest (a model near the ceiling lands at the low end, or below): " + "; ".join(
                   f"{c} {low:.1f}–{high:.1f}" for c, low, high in
                   chosen_budget.select("channel", "half_width_low", "half_width_high").iter_rows()))
    requests = plan.budgets.unique("families", maintain_order=True)
    typer.echo("requests: " + ", ".join(f"{f} families {r:,}" for f, r in requests.select("families", "requests").iter_rows()))


@command("estimate")
def estimate_command(
    model: Annotated[str, typer.Option("--model", help="The partial model (answered on a plan's families).")],
    db: DbOption = Path(DEFAULT_DB),
    plan: Annotated[Optional[str], typer.Option("--plan", help="Plan id (as `molp2s plan` printed it); default: the recorded plan that holds the model's families.")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates of the answered families within their strata for the standard error (0: the design-based one, exact for this estimator up to its linearisation); either way the interval is a score interval that stays off a bound.")] = 0,
    metric: Annotated[Optional[list[str]], typer.Option("--metric", help=f"One of: {', '.join(METRICS)}; repeat for several. Default: all.")] = None,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """A partial model's every metric over the complete cohort: the value it would have had if it had
    answered everything, with a family-level interval (same rows as `molp2s metrics`).

    The complete models predict the families it did not answer; its answered families, weighed by
    the inverse of their chance of being planned, correct that prediction (the AIPW estimator), so the
    estimate stays consistent when the prediction is poor, and the interval says how well it did.
    `method` names the estimator, `n` counts the families answered.

    To try it on the default data, make a partial model from a complete one on the families of the
    latest plan (`molp2s plan --fraction 0.15 --seed 1 --out plan.csv`), then load it:
    `molp2s sql "SELECT 'new-model' AS model, task_id, sample, response, choice FROM responses JOIN tasks
    USING (task_id) JOIN plan_families USING (family_id) WHERE model = 'sim-generalist' AND selected AND
    plan_id = (SELECT plan_id FROM plans ORDER BY created_at DESC LIMIT 1)" --out new-model.parquet`, then
    `molp2s load --responses new-model.parquet`.

    Example: molp2s estimate --model new-model --format csv --out estimate.csv
    """
    con = _open(db, responses=True)
    result, note = subsample.estimate_from_db(con, model, plan_id=plan,
                                              metrics=tuple(metric) if metric else metrics.METRICS,
                                              conf_level=conf_level, seed=seed, draws=bootstrap)
    if note:
        typer.echo(f"note: {note}", err=True)
    emit(result, fmt, out, title=f"Estimated metrics of {model} (rates in %, differences in pp)")


@command("explanations")
def explanations_command(
    db: DbOption = Path(DEFAULT_DB),
    channel: ChannelsOption = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates (0: point estimates only).")] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    per_response: Annotated[bool, typer.Option("--per-response", help="One row per response (cites, persists) instead of the rates.")] = False,
    max_peaks: Annotated[int, typer.Option("--max-peaks", help="The IR and Raman peak cap the prompts were exported with.")] = DEFAULT_MAX_PEAKS,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Do the justifications cite the shown property? Rates per model × channel × condition.

    A response cites the property when its text names the channel's quantity (dipole, gap,
    IR, shielding, ...) or repeats a number the prompt showed. On cf tasks,
    cites_but_persists is the share of answers that cite the property yet keep the source
    candidate. Only responses with text count (a bare label has no justification). Intervals:
    the family bootstrap's percentile interval, or near 0% and 100% Wilson's score interval on the
    effective number of families (the method column says which).

    Example: molp2s explanations --channel ir --bootstrap 2000 --seed 1
    """
    from .stats import explanations

    con = _open(db, responses=True)
    known, _ = metrics.read_channels_and_models(con)
    chosen = _known_channels(channel, known)
    if per_response:
        result = explanations.response_citations(con, max_peaks=max_peaks, channels=chosen)
        emit(result, fmt, out, title="Justifications that cite the shown property, per response")
        return
    result = explanations.explanations_from_db(con, draws=bootstrap, seed=seed, conf_level=conf_level,
                                               max_peaks=max_peaks, channels=chosen)
    emit(result, fmt, out, title="Justifications that cite the shown property (% of answers with text)")


@command("compare-inputs")
def compare_inputs_command(
    from_channel: Annotated[str, typer.Option("--from", help="Input X (a channel or bundle).")],
    to_channel: Annotated[str, typer.Option("--to", help="Input Y.")],
    db: DbOption = Path(DEFAULT_DB),
    model: Annotated[Optional[list[str]], typer.Option("--model", help="Model(s); default: every model.")] = None,
    condition: Annotated[str, typer.Option("--condition", help="none | source | shuffled | cf.")] = "source",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = DEFAULT_PAIRED_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Paired input comparison X → Y per model over the families in both cohorts (Table 12).

    Δ's interval is the family bootstrap's percentile interval while the two inputs' answers differ on
    10 or more families' worth of tasks, else the MOVER interval of the gain and loss shares (the
    method column says which).

    Example: molp2s compare-inputs --from vibrational_bundle --to all --model sim-vibrational-expert
    """
    if condition not in CONDITIONS:
        _fail(f"--condition must be one of {', '.join(CONDITIONS)}")
    con = _open(db, responses=True)
    channels, models = metrics.read_channels_and_models(con)
    require_known("channel", "--from", [from_channel], channels)
    require_known("channel", "--to", [to_channel], channels)
    require_known("model", "--model", model or [], models)
    outcomes = compare.read_condition_outcomes(con, channels=[from_channel, to_channel], condition=condition)
    result = compare.paired_inputs(outcomes, from_channel=from_channel, to_channel=to_channel,
                                   condition=condition, models=model or models, draws=bootstrap,
                                   seed=seed, conf_level=conf_level)
    emit(result, fmt, out, title=f"Paired input comparison {from_channel} → {to_channel} ({condition} tasks)")


@command("transitions")
def transitions_command(
    channel: Annotated[str, typer.Option("--channel", help="Channel whose cohort tasks are compared.")],
    db: DbOption = Path(DEFAULT_DB),
    condition: Annotated[str, typer.Option("--condition", help="none | source | shuffled | cf.")] = "source",
    model_a: Annotated[Optional[str], typer.Option("--model-a", help="First model (with --model-b); default: every pair.")] = None,
    model_b: Annotated[Optional[str], typer.Option("--model-b", help="Second model.")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for the net difference.")] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Model-pair transitions on one channel and condition (Figure 2): both right, A only, B only, both wrong.

    The net's interval is the family bootstrap's percentile interval while the two models disagree on
    10 or more families' worth of tasks, else the MOVER interval of its two discordant shares (the
    method column says which): two models right on every task are not reported as certainly tied.

    Example: molp2s transitions --channel ir --condition source --model-a sim-vibrational-expert --model-b sim-generalist
    """
    if condition not in CONDITIONS:
        _fail(f"--condition must be one of {', '.join(CONDITIONS)}")
    if (model_a is None) != (model_b is None):
        _fail("give both --model-a and --model-b, or neither")
    con = _open(db, responses=True)
    channels, models = metrics.read_channels_and_models(con)
    _known_channels([channel], channels)
    require_known("model", "--model-a", [model_a], models)
    require_known("model", "--model-b", [model_b], models)
    outcomes = compare.read_condition_outcomes(con, channels=[channel], condition=condition)
    if outcomes.height == 0:
        _fail(f"no cohort tasks for channel {channel!r} and condition {condition!r}")
    pairs = [(model_a, model_b)] if model_a else None
    result = compare.model_transitions(outcomes, channel=channel, condition=condition, pairs=pairs,
                                       draws=bootstrap, seed=seed, conf_level=conf_level)
    emit(result, fmt, out, title=f"Model-pair transitions, {channel} / {condition} (% of tasks; net in pp)")


@command("cohort")
def cohort_command(
    db: DbOption = Path(DEFAULT_DB),
    dropped: Annotated[bool, typer.Option("--dropped", help="List the families left out, with the reason.")] = False,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Cohort size per channel and the criteria behind it (Table 5).

    Example: molp2s cohort --dropped
    """
    con = _open(db)
    if dropped:
        result = con.sql(
            """SELECT c.channel, c.family_id, c.input_validated, c.complete_coverage, c.drop_reason
               FROM cohort AS c LEFT JOIN stg_channels AS ch USING (channel)
               WHERE NOT c.in_cohort ORDER BY ch.position NULLS LAST, c.channel, c.family_id"""
        ).pl()
        emit(result, fmt, out, title="Families left out of each channel's cohort")
    else:
        emit(con.sql("SELECT * FROM cohort_summary").pl(), fmt, out, title="Cohort per channel")


@command("stability")
def stability_command(
    db: DbOption = Path(DEFAULT_DB),
    score: Annotated[str, typer.Option("--metric", "--score", help="The metric models are ranked by: pgr | reliance_margin | cfr.")] = "pgr",
    channel: ChannelsOption = None,
    macro: Annotated[bool, typer.Option("--macro", help="Rank by the mean of the metric over the channels.")] = False,
    sizes: Annotated[str, typer.Option("--sizes", help="Subset sizes, comma-separated (capped at the cohort).")] = "25,50,75,100,125",
    draws: Annotated[int, typer.Option("--subsets", "--draws", help="Family subsets drawn per size.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the subsampling; recorded in the output.")] = 0,
    exclude: ExcludeOption = None,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Would the model ranking survive fewer families? Spearman ρ, Exact %, MAD per size (Tables 10–11).

    Example: molp2s stability --metric reliance_margin --macro --sizes 25,50,75,100,125 --subsets 1000 --seed 1
    """
    con = _open(db, responses=True)
    outcomes, channels, models = _outcomes(con, exclude)
    chosen = _known_channels(channel, channels)  # a misspelt channel is said before any note
    models = _ranked(con, models)
    size_list = tuple(int(part) for part in sizes.split(",") if part.strip())
    groups = 1 if macro else len(chosen)
    from rich.progress import Progress

    with Progress(transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task("subsampling", total=groups * len(size_list))
        result = stability.ranking_stability(outcomes, score=score, channels=chosen, models=models, macro=macro,
                                             sizes=size_list, draws=draws, seed=seed,
                                             progress=lambda n: bar.advance(task, n))
    emit(result, fmt, out, title=f"Ranking stability of {score} under family subsampling")


def _ranked(con, models: list[str]) -> list[str]:
    """The complete models, for a ranking; the partial ones left out are named on stderr."""
    ranked, note = stability.ranked_models(models, metrics.read_partial_models(con))
    if note:
        typer.echo(note, err=True)
    return ranked


@command("ranks")
def ranks_command(
    db: DbOption = Path(DEFAULT_DB),
    score: Annotated[str, typer.Option("--metric", "--score", help="The metric models are ranked by, e.g. pgr.")] = "pgr",
    channel: ChannelsOption = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = DEFAULT_DRAWS,
    distribution: Annotated[bool, typer.Option("--distribution", help="Print P(rank) per model instead of the intervals.")] = False,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    exclude: ExcludeOption = None,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Each model's rank range ("2–4") and tie group per channel: what the data can and cannot tell apart.

    Every pair of models is compared on the same family-bootstrap replicates, the p-values
    Holm-adjusted over the channel's pairs; a model's rank range runs from 1 + the models
    significantly ahead of it to the number of models − those significantly behind. Tie group
    (tier) 1 is the best model and every model not separated from it, and so on down. A channel
    whose top tie group holds two or more models at the ceiling is marked saturated: its families
    cannot separate the top models. --distribution prints P(rank) per model instead.

    Example: molp2s ranks --metric pgr --channel ir
    """
    con = _open(db, responses=True)
    outcomes, channels, models = _outcomes(con, exclude)
    chosen = _known_channels(channel, channels)  # a misspelt channel is said before any note
    models = _ranked(con, models)
    ranges, probabilities = stability.rank_intervals(
        outcomes, score=score, channels=chosen, models=models, draws=bootstrap,
        seed=seed, conf_level=conf_level)
    for saturated in stability.saturated_channels(ranges):
        typer.echo(f"saturated: {saturated}: the top models are at the ceiling; these families cannot separate "
                   f"them by {score}", err=True)
    emit(probabilities if distribution else ranges, fmt, out,
         title=f"Rank ranges and tie groups by {score} (1 = best; paired bootstrap, Holm)")


@command("power")
def power_command(
    db: DbOption = Path(DEFAULT_DB),
    channel: ChannelsOption = None,
    families: Annotated[Optional[int], typer.Option("--families", help="Families per channel; default: the cohort size.")] = None,
    difference: Annotated[Optional[float], typer.Option("--difference", help="Also report the families needed for this difference (pp).")] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided test level.")] = 0.05,
    target_power: Annotated[float, typer.Option("--power", help="Power.")] = 0.8,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Minimum detectable RM and PGR difference between two models, with the family design effect.

    Example: molp2s power --families 136 --difference 10
    """
    con = _open(db, responses=True)
    outcomes, channels, _ = metrics.read_family_outcomes(con)
    table = power.power_table(outcomes, channels=_known_channels(channel, channels), families=families,
                              alpha=alpha, power=target_power, difference=difference)
    emit(table, fmt, out, title="Minimum detectable difference between two models (pp)")


@command("frequentist")
def frequentist_command(
    db: DbOption = Path(DEFAULT_DB),
    metric: Annotated[Optional[list[str]], typer.Option("--metric", help="Metric(s); default: all.")] = None,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Wilson intervals and family-clustered standard errors beside the bootstrap ones.

    Example: molp2s frequentist --metric acc_source --format csv
    """
    con = _open(db, responses=True)
    outcomes, channels, models = metrics.read_family_outcomes(con)
    result = metrics.frequentist_companions(outcomes, channels=channels, models=models,
                                            metrics=tuple(metric) if metric else metrics.METRICS,
                                            conf_level=conf_level)
    emit(result, fmt, out, title="Wilson intervals and clustered standard errors (pp)")


@command("separability")
def separability_command(
    db: DbOption = Path(DEFAULT_DB),
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """How far each source candidate lies from its nearest distractor, per channel (Table 6).

    Example: molp2s separability --format csv --out separability.csv
    """
    con = _open(db)
    emit(con.sql("SELECT * FROM separability").pl(), fmt, out,
         title="Separability of source candidates (nearest distractor; UV-Vis and bundles over the cutoff)")


@command("audit")
def audit_command(
    db: DbOption = Path(DEFAULT_DB),
    q: Annotated[float, typer.Option("--q", help="False-discovery rate over families at which wrong_key flags a family (Benjamini–Hochberg).")] = 0.05,
    replicates: Annotated[int, typer.Option("--replicates", help="Answer sets drawn under each family's key for wrong_key's p-value (more where a family's statistic is far out, up to 100,000).")] = 999,
    seed: Annotated[int, typer.Option("--seed", help="Seed of those draws and of the bootstrap.")] = 0,
    impact: Annotated[bool, typer.Option("--impact", help="Print instead how --metric and each model's rank move per channel when the flagged families leave the cohort, with family-level intervals.")] = False,
    metric: Annotated[str, typer.Option("--metric", help="The headline metric --impact reports.")] = "pgr",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for --impact's intervals.")] = DEFAULT_DRAWS,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Audit the benchmark: families whose key the answers contradict (wrong_key), candidates that are one
    molecule (duplicate_candidates), a source whose shown properties match a distractor's within the channel's
    resolution (indistinguishable), and families every model gets right, or wrong, under every condition
    (no_signal). One row per finding, most suspicious first within each flag.

    Then how the ranking by --metric moves without the flagged families (--impact: the metric
    and rank of every model with and without them, with intervals). Leave them out of any
    table with --exclude findings.csv on metrics, ranks and stability.

    Example: molp2s audit --format csv --out findings.csv
    """
    from .stats import audit

    if not 0 < q < 1:
        raise UsageError("--q must be between 0 and 1")
    if replicates < 99:
        raise UsageError("--replicates must be at least 99")
    con = _open(db, responses=True)
    findings = audit.audit(con, q=q, replicates=replicates, seed=seed).sort(
        pl.col("flag").replace_strict({f: i for i, f in enumerate(audit.FLAGS)}), -pl.col("score"), "family_id",
        "channel")
    counts = ", ".join(f"{flag} {findings.filter(pl.col('flag') == flag).height}" for flag in audit.FLAGS)
    typer.echo(f"findings: {counts} (wrong_key at a false-discovery rate of {q:g}, seed {seed})", err=True)
    require_known("metric", "--metric", [metric], list(METRICS))
    outcomes, channels, models = metrics.read_family_outcomes(con)
    moved = audit.impact(outcomes, findings.select("family_id", "channel"), channels=channels,
                         models=_ranked(con, models), metric=metric, draws=bootstrap if impact else 0, seed=seed)
    changes = audit.rank_changes(moved)
    typer.echo(f"without the flagged families, the ranking by {metric} "
               + ("moves: " + "; ".join(changes) if changes else "stays as it is on every channel"), err=True)
    if impact:
        emit(moved, fmt, out, title=f"{metric} with and without the flagged families (exclusion: none | flagged)")
        return
    emit(findings, fmt, out, title="Benchmark audit: families that cannot measure what they claim")


@command("check")
def check_command(
    db: DbOption = Path(DEFAULT_DB),
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Can this database be trusted? Reads every table through (DuckDB checks each block as it reads it),
    compares each response file's answers with the rows it had, and looks for the files on disk (SHA-256 as
    recorded at load). Exit 1 if it cannot be trusted, with the `molp2s load` that rebuilds it.

    Example: molp2s check
    """
    from . import check as checking

    con = store.connect(db, read_only=True)
    result = checking.check(con)
    con.close()
    emit(result, fmt, out, title=f"Database check ({db})")
    if not checking.trusted(result):
        files = result.filter(pl.col("check") == "file").height
        how = (checking.rebuild_command(None, result, str(db)) if files else
               "molp2s load --benchmark BENCHMARK --responses FILES --db NEW.duckdb (its file list cannot be read)")
        typer.secho(f"{db}: cannot be trusted (see the rows marked failed); rebuild it: {how}", err=True, fg="red")
        raise typer.Exit(1)
    gone = result.filter((pl.col("check").is_in(["file", "benchmark"])) & (pl.col("status") != "ok")).height
    typer.echo(f"{db}: can be trusted" + (f"; {gone} of the files it was loaded from are missing or changed: keep "
                                          "copies, they are what it can be rebuilt from" if gone else ""), err=True)


@command("simulate")
def simulate_command(
    out: Annotated[Path, typer.Option("--out", help="Folder for the response files; the truth and parameters go to its simulation/ subfolder.")],
    benchmark: Annotated[Path, typer.Option("--benchmark", help="Benchmark folder to answer.")] = DEFAULT_BENCHMARK,
    params: Annotated[Optional[Path], typer.Option("--params", help="simulation.json-style file with the models; default: the built-in simulated profiles.")] = None,
    samples: Annotated[int, typer.Option("--samples", help="Sampled answers per task.")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated answers; recorded in simulation.json.")] = SIMULATION_SEED,
) -> None:
    """Write responses of simulated models with known reliance and responsiveness.

    Example: molp2s simulate --benchmark data/benchmark --out runs/simulated --seed 7
    """
    tables = ingest.read_benchmark(benchmark)
    models = simulate.load_models(params) if params else simulate.DEFAULT_MODELS
    responses, truth = simulate.simulate(tables, models=models, seed=seed, samples=samples)
    paths = simulate.write(responses, truth, out, models=models, seed=seed, samples=samples)
    for path in paths:
        typer.echo(f"wrote {path}")
    typer.echo(f"wrote {out / 'simulation'}: truth.parquet and simulation.json (seed {seed})")


@command("fit")
def fit_command(
    out: Annotated[Path, typer.Option("--out", help="Where to save the fit (NetCDF InferenceData).")] = Path("fit.nc"),
    db: DbOption = Path(DEFAULT_DB),
    channel: ChannelsOption = None,
    draws: Annotated[Optional[int], typer.Option("--draws", help="Draws per chain (after tuning); default: until the health gate passes, 400 to 2,400 per chain (nutpie; PyMC: 1,200).")] = None,
    tune: Annotated[int, typer.Option("--tune", help="Tuning steps per chain.")] = bayes.DEFAULT_TUNE,
    chains: Annotated[int, typer.Option("--chains", help="Chains.")] = bayes.DEFAULT_CHAINS,
    sampler: Annotated[str, typer.Option("--sampler", help="nutpie (JAX gradient, the fast default) or pymc (PyMC's own NUTS).")] = "nutpie",
    low_rank: Annotated[bool, typer.Option("--low-rank/--diagonal", help="nutpie's mass matrix: low-rank (learns correlations; more ESS per draw, costlier draws) or diagonal.")] = bayes.LOW_RANK,
    loo: Annotated[bool, typer.Option("--loo/--no-loo", help="Also fit the model without family effects and compare by LOO (about doubles the time).")] = False,
    allow_unconverged: Annotated[bool, typer.Option("--allow-unconverged", help="Exit 0 even when the health gate fails.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sampler; saved with the fit.")] = 0,
    target_accept: Annotated[float, typer.Option("--target-accept", help="NUTS target acceptance of the first attempt (higher: smaller steps, fewer divergences, slower).")] = bayes.TARGET_ACCEPT,
    budget: Annotated[Optional[float], typer.Option("--budget", help="Seconds the fit may take: a first run that misses the health gate is extended (more chains) or run again (smaller steps) while the next attempt is expected to end within this. Default: 600 s, or five times the first attempt's estimated time on a larger leaderboard.", show_default=False)] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="Where the gradient is evaluated: cpu or gpu (JAX built for CUDA: pip install -e '.[gpu]'); default: JAX's default device.", show_default=False)] = None,
    warm_start: Annotated[Optional[Path], typer.Option("--warm-start", help="A fit of the same benchmark and channels, typically before a model was added: the chains start from its draws with its step size and a shorter warm-up; the health gate is as strict as ever.")] = None,
) -> None:
    """Fit the hierarchical model of per-channel reliance (with family random effects) and save it.

    A run that misses the health gate is not the end: too few effective draws add
    chains, sized from the ESS it got; divergences start again with smaller steps.
    Every attempt is printed, saved in the fit and shown by `molp2s posterior FIT
    --what diagnostics`.

    Example: molp2s fit --channel ir --seed 1 --out fit.nc
    """
    from .bayes import data as bayes_data
    from .bayes import fit as bayes_fit
    from .bayes import health
    from .bayes.progress import Progress

    if sampler not in bayes.SAMPLERS:  # before the data are read: a misspelt sampler fails at once
        raise UsageError(f"--sampler must be one of {', '.join(bayes.SAMPLERS)}")
    con = _open(db, responses=True)
    if channel:
        _known_channels(channel, metrics.read_channels_and_models(con)[0])
    data = bayes_data.read_model_data(con, channels=channel or None)
    previous = _warm_start_fit(warm_start)
    progress = Progress()
    progress.say(f"fitting {len(data.models)} models × {len(data.channels)} channels × {len(data.families)} families "
                 f"({chains} chains × {tune if previous is None else bayes_fit.WARM_TUNE} warm-up + "
                 f"{draws if draws is not None else 'draws until the health gate passes'})")

    def estimated(estimate) -> None:
        progress.say(estimate.line(budget if budget is not None else bayes_fit.default_budget(estimate)))

    idata = bayes_fit.fit(data, draws=draws, tune=tune, chains=chains, seed=seed, sampler=sampler, loo=loo,
                          low_rank=low_rank, progress=progress, budget=budget, target_accept=target_accept,
                          on_attempt=lambda row: progress.say(health.attempt_line(row)), on_estimate=estimated,
                          warm_start=previous, device=device)
    if previous is not None:
        progress.say(bayes_fit.warm_start_note(idata, previous))
    from .bayes import provenance
    from .output import replacing

    provenance.record(idata, con)  # so that a report can tell when the database has moved on

    with replacing(out) as partial:  # a fit interrupted while saving leaves an earlier fit file whole
        idata.to_netcdf(str(partial))
    row = health.diagnostics(idata)
    emit(row, Format.table, None, title=f"Fit health ({out})")
    message = health.failure_message(row.row(0, named=True))
    if message:
        typer.secho(message, err=True, fg="red", bold=True)
        note = bayes_fit.next_attempt_note(idata)
        if note:
            typer.secho(note, err=True, fg="red")
        if not allow_unconverged:
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
    what: Annotated[str, typer.Option("--what", help="reliance | responsiveness | contrasts | ranks | diagnostics (every sampling attempt, the fit as saved last) | predictive (posterior predictive checks) | prior (prior predictive checks).")] = "reliance",
    fmt: FormatOption = None,
    out: OutOption = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="With --what predictive or prior: also draw the checks (observed against the predictive interval) to this .svg, .png or .html file.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the predictive replicates (--what predictive or prior).")] = 0,
) -> None:
    """Posterior quantities of a saved fit as tidy frames (94% HDIs; every output says if the fit failed its gate).

    Example: molp2s posterior fit.nc --what predictive --plot checks.svg
    """
    import arviz as az

    from .bayes import fit as bayes_fit
    from .bayes import health, posterior, predictive

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
            from .report import charts

            charts.save(charts.predictive_checks(result), plot)
            typer.echo(f"wrote {plot}", err=True)
        typer.echo(predictive.summary_sentence(result), err=True)
    if what != "diagnostics":
        result = result.with_columns(pl.lit(bool(row["passed"][0])).alias("fit_passed"))
    emit(result, fmt, out, title=f"Posterior {what} ({fit_file})")
    message = health.failure_message(row.row(0, named=True))
    if message:
        typer.secho(message, err=True, fg="red", bold=True)
        note = bayes_fit.next_attempt_note(idata)
        if note:
            typer.secho(note, err=True, fg="red")


@command("report")
def report_command(
    db: Annotated[Optional[Path], typer.Option("--db", help="Database to report on; default: the default data, built under reports/_build.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Folder for the site (HTML pages, tables/ with CSV and LaTeX).")] = REPORTS / "_site",
    fit_file: Annotated[Optional[Path], typer.Option("--fit", help="A saved fit for the posterior page; default: <db>.fit.nc, fitted if missing or made on other data than the database holds.")] = None,
    engine: Annotated[str, typer.Option("--engine", help="auto (quarto if on PATH, else jupyter) | quarto | jupyter.")] = "auto",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates on every page.")] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
) -> None:
    """Render the report site (reports/*.qmd) for a database: with Quarto if installed, else on a Jupyter kernel.

    Example: molp2s report --db molp2s.duckdb --fit fit.nc --bootstrap 100 --out site
    """
    from .report import context, prepare, render

    if engine not in ("auto", "quarto", "jupyter"):
        raise UsageError("--engine must be auto, quarto or jupyter")
    if engine == "quarto" and not shutil.which("quarto"):
        raise UsageError("--engine quarto: quarto is not on PATH (use --engine jupyter)")
    env = {"MOLP2S_SEED": str(seed), "MOLP2S_BOOTSTRAP": str(bootstrap)}
    if db is not None and not db.exists():
        raise UsageError(store.missing_database(db, instead="leave out --db to report on the default data"))
    if fit_file is not None and not fit_file.exists():
        raise UsageError(f"{fit_file}: no such fit file (make one with `molp2s fit`)")
    started = time.perf_counter()
    try:
        # MOLP2S_DB / MOLP2S_FIT from the user's environment count as given (as the pages read them)
        prepared = prepare.prepare(db.resolve() if db else context.given_path("MOLP2S_DB", "database", "make one with `molp2s load`"),
                                   fit_file.resolve() if fit_file else context.given_path("MOLP2S_FIT", "fit file", "make one with `molp2s fit`"),
                                   seed=seed, log=lambda line: typer.echo(line, err=True))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    # the pages get absolute paths: Quarto runs each page in reports/, not in the user's folder
    env["MOLP2S_DB"] = str(prepared.database.resolve())
    env["MOLP2S_FIT"] = str(prepared.fit.resolve())
    try:
        # the site is rendered beside --out and takes its place only when every page is done: an
        # interrupted or failed render leaves the previous site whole (tables/ included)
        # on Quarto, the kernels and the post-render script run on this Python (render.quarto_environment)
        used = render.render_site_replacing(REPORTS, out, env, engine=engine, tables_variable="MOLP2S_REPORT_TABLES",
                                            log=lambda line: typer.echo(line, err=True))
    except render.RenderError as exc:
        _fail(f"{exc}; {out} is as it was")
    typer.echo(f"rendered {REPORTS} into {out} with {used} in {time.perf_counter() - started:.0f} s")


@command("sql")
def sql_command(
    query: Annotated[str, typer.Argument(help="SQL to run (read-only).")],
    db: DbOption = Path(DEFAULT_DB),
    timeout: Annotated[float, typer.Option("--timeout", help="Stop the query after this many seconds (0: never).")] = 60.0,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Run a read-only query against the database's tables and views.

    Nothing can be written: the file is opened read-only, and files, other databases
    and extensions are out of reach (no COPY TO, ATTACH, INSTALL or LOAD).

    Example: molp2s sql "SELECT channel, cohort FROM cohort_summary" --timeout 10
    """
    import threading

    con = store.connect(db, read_only=True)
    # No file system, no extensions, and a locked configuration so the query cannot undo it.
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")
    timer = threading.Timer(timeout, con.interrupt) if timeout > 0 else None
    if timer:
        timer.start()
    try:
        relation = con.sql(query)
        result = relation.pl() if relation is not None else None
    except duckdb.InterruptException:
        _fail(f"the query ran longer than --timeout {timeout:g} s and was stopped")
    except duckdb.InvalidInputException as exc:
        if "read-only" in str(exc):
            _fail("the database is opened read-only; `molp2s sql` cannot write (use `molp2s load`)")
        _fail(str(exc))
    except duckdb.Error as exc:
        _fail(str(exc))
    finally:
        if timer:
            timer.cancel()
        con.close()
    if result is None:
        _fail("the statement returned no rows to show")
    emit(result, fmt, out)


@command("demo")
def demo_command(
    db: DbOption = Path("molp2s-demo.duckdb"),
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Load the package's default data and print the PGR leaderboard.

    Example: molp2s demo
    """
    con = store.connect(db)
    from .ingest.default_data import load_default_data

    load_default_data(con)
    result = metrics.metrics_from_db(con, metrics=("pgr", "random_baseline"), draws=bootstrap, seed=seed)
    fmt = resolve_format(fmt, out)
    if fmt is not Format.table:  # machine-readable output: the frame alone on stdout
        emit(result, fmt, out)
        return
    typer.echo(f"database: {db} (benchmark {DEFAULT_BENCHMARK}, responses {DEFAULT_RESPONSES})")
    emit(con.sql("SELECT * FROM cohort_summary").pl(), Format.table, None, title="Cohort per channel")
    wide = leaderboard(result, "pgr")
    # one table per kind of channel, as the paper groups them: fifteen channel columns
    # side by side would not fit a terminal
    for group, channels in metrics.read_channel_groups(con):
        shown = [c for c in channels if c in wide.columns]
        if shown:
            emit(wide.select("model", *shown), fmt, out,
                 title=f"PGR leaderboard, {group.replace('_', ' ')} channels, % "
                       f"[95% family-bootstrap interval, {bootstrap} draws, seed {seed}]")


def main() -> None:  # pragma: no cover
    """The `molp2s` command: an interrupt before a command's own handling starts (while typer parses the
    arguments, say) is a line and status 130 too, not a traceback."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted before the command started; nothing was done\n")
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
