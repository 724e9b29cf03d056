"""Getting data in and prompts out: ``load``, ``prompts``, ``simulate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..defaults import DEFAULT_BENCHMARK, DEFAULT_DB, DEFAULT_MAX_PEAKS, DEFAULT_RESPONSES, SIMULATION_SEED
from ..errors import UsageError
from ..lazy import lazy_import
from .core import command, fail, in_flags
from .params import DbOption, check_conditions, known_channels, open_database

pl = lazy_import("polars")
ingest = lazy_import("molp2s_stats.ingest")
prompts = lazy_import("molp2s_stats.prompts")
simulate = lazy_import("molp2s_stats.simulate")
subsample = lazy_import("molp2s_stats.stats.subsample")


@command("load")
def load_command(
    more_files: Annotated[
        list[Path] | None,
        typer.Argument(
            help="More response files: `--responses a.jsonl b.csv` and `--responses a --responses b` both work.",
            metavar="FILE...",
            show_default=False,
        ),
    ] = None,
    responses: Annotated[
        list[Path] | None,
        typer.Option(
            "--responses",
            help="Response files or folders: .jsonl, .csv, .parquet, Inspect AI .eval/.json, lm-eval samples .jsonl.",
        ),
    ] = None,
    benchmark: Annotated[
        Path | None,
        typer.Option("--benchmark", help="Benchmark folder (families, candidates, properties, tasks[, channels])."),
    ] = None,
    db: DbOption = Path(DEFAULT_DB),
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="jsonl | csv | parquet | inspect | lm-eval | openai-batch | anthropic-batch; default: from the suffix and the fields.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model name: for lm-eval samples (default: their folder's name); for batch results it renames every line and names failed requests.",
        ),
    ] = None,
    task_map: Annotated[
        Path | None,
        typer.Option("--task-map", help="CSV with columns sample_id, task_id: Inspect sample ids to task ids."),
    ] = None,
    wait: Annotated[
        float, typer.Option("--wait", help="Seconds to wait for another process writing the database.")
    ] = 300.0,
    example: Annotated[
        bool,
        typer.Option(
            "--example",
            help="Load the example study shipped with the package: its benchmark (389 families, 15 channels) "
            "and the answers of eight simulated models (with --responses, yours beside them).",
        ),
    ] = False,
) -> None:
    """Load a benchmark and response files into the database, all or nothing.

    Example: molp2s load --benchmark data/benchmark --responses data/responses
    """
    files = list(responses or []) + list(more_files or [])
    if example:
        if benchmark is not None:
            fail("give --example or --benchmark, not both: --example loads the shipped benchmark")
        from ..ingest.default_data import default_response_files

        benchmark, files = DEFAULT_BENCHMARK, default_response_files() + files
    task_ids = ingest.read_task_map(task_map) if task_map is not None else None
    if benchmark is None and not files:
        fail(
            "nothing to load: give --benchmark DIR and/or --responses FILE ..., "
            "or --example for the example study shipped with the package"
        )
    _require_inputs(benchmark, files)
    # all or nothing, the database file included: ingest.load_into rolls back, and removes a file it made
    try:
        summary = ingest.load_into(
            db, wait=wait, benchmark=benchmark, responses=files, fmt=fmt, model=model, task_ids=task_ids
        )
    except ingest.InterruptedAfterCommit:
        typer.echo(
            "interrupted after the load was committed: it is in the database whole (`molp2s check` lists it)", err=True
        )
        raise typer.Exit(130) from None
    except ingest.InputError as exc:
        fail(f"{in_flags(exc, load_command)}; nothing was loaded, the database is unchanged")
    try:
        _report_load(summary)
    except KeyboardInterrupt:
        typer.echo("interrupted after the load was committed: it is in the database whole", err=True)
        raise typer.Exit(130) from None


def _require_inputs(benchmark: Path | None, files: list[Path]) -> None:
    """A benchmark or response path that is not there is named before the database is opened, with
    the path meant where one beside it is close (a quoted pattern is left to the loader)."""
    if benchmark is not None and not benchmark.exists():
        fail(_no_such_input(benchmark, "--benchmark", "folder", DEFAULT_BENCHMARK))
    for path in files:
        if not path.exists() and not any(c in str(path) for c in "*?["):
            fail(_no_such_input(path, "--responses", "file or folder", DEFAULT_RESPONSES))


def _no_such_input(path: Path, option: str, what: str, default: Path) -> str:
    """``<path>: no such <what>; did you mean <option> <close path>?`` (or the package's default data)."""
    import difflib

    from ..defaults import shown_path

    try:
        names = sorted(p.name for p in path.parent.iterdir())
    except OSError:  # no such folder either, or one that cannot be listed
        names = []
    close = [path.parent / name for name in difflib.get_close_matches(path.name, names, n=2)]
    typed = shown_path(default)
    hint = (
        f"did you mean {' or '.join(f'{option} {c}' for c in close)}?"
        if close
        else f"the package's default data is {option} {typed};"
        if not Path(typed).is_absolute()
        else "the example study shipped with the package loads with --example;"
    )
    return f"{path}: no such {what}; {hint} nothing was loaded"


def _named(path) -> str:
    """A loaded file as the load's lines name it: as given, except the example study of an installed
    package (its files lie deep in site-packages), named ``example/<file in the study>``."""
    from ..defaults import DATA, shown_path

    given = Path(path)
    if given.is_absolute() and given.resolve().is_relative_to(DATA.resolve()) and Path(shown_path(given)).is_absolute():
        return f"example/{given.resolve().relative_to(DATA.resolve()).as_posix()}"
    return str(path)


def _report_load(summary) -> None:
    """What a load added, file by file."""
    if summary.benchmark is not None:
        b = summary.benchmark
        state = "already loaded" if b.already_loaded else "loaded"
        typer.echo(
            f"benchmark {_named(b.path)}: {state} ({b.families} families, {b.tasks} tasks, "
            f"{b.channels} channels, {b.pair_distances} pair distances)"
        )
    for f in summary.files:
        if f.already_loaded:
            typer.echo(f"{_named(f.path)}: already loaded, nothing added")
        else:
            typer.echo(f"{_named(f.path)}: {f.rows} rows ({f.parsed} parsed from text, {f.invalid} invalid)")
            for name, cut, answers in f.truncated:
                typer.echo(
                    f"  {name}: {cut} of {answers} answers truncated at the token limit (invalid, reason truncated)"
                )
            if f.truncated:
                typer.echo(f"  to let them finish, {ingest.truncation_advice(f.fmt)}")


@command("prompts")
def prompts_command(
    out: Annotated[Path, typer.Option("--out", help="File to write.")],
    benchmark: Annotated[
        Path | None, typer.Option("--benchmark", help="Benchmark folder; default: the embedded benchmark.")
    ] = None,
    db: Annotated[
        Path | None, typer.Option("--db", help="Read the benchmark from this database instead of a folder.")
    ] = None,
    channel: Annotated[
        list[str] | None,
        typer.Option("--channel", "--channels", help="Only these channels (repeat; `none` for the P0 tasks)."),
    ] = None,
    condition: Annotated[
        list[str] | None,
        typer.Option("--condition", help="Only these conditions: none | source | shuffled | cf (repeat)."),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="jsonl | csv | parquet (one row per task) | openai-batch | anthropic-batch (request lines).",
        ),
    ] = "jsonl",
    model: Annotated[
        str | None, typer.Option("--model", help="Model the batch requests go to (batch formats).")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            help=(
                "Token limit of each batch request (reasoning and thinking count against it). Default: 1024 for "
                "the short answer; 32768 with --reasoning-effort (OpenAI's hidden reasoning counts against "
                "max_completion_tokens); the thinking budget + 1024 with --thinking-budget."
            ),
            show_default=False,
        ),
    ] = None,
    reasoning_effort: Annotated[
        str | None,
        typer.Option(
            "--reasoning-effort",
            help=(
                "openai-batch: reasoning_effort of OpenAI reasoning models: none | minimal | low | medium | high | "
                "xhigh | max (each model takes some)."
            ),
        ),
    ] = None,
    thinking_budget: Annotated[
        int | None,
        typer.Option(
            "--thinking-budget",
            help=("anthropic-batch: extended thinking with this budget_tokens (at least 1024, below --max-tokens)."),
        ),
    ] = None,
    max_peaks: Annotated[
        int, typer.Option("--max-peaks", help="IR and Raman: the strongest peaks shown.")
    ] = DEFAULT_MAX_PEAKS,
    families: Annotated[
        Path | None,
        typer.Option(
            "--families",
            help=(
                "Only these families' tasks: a CSV, JSONL or Parquet file with a family_id column "
                "(as `molp2s plan` writes it)."
            ),
        ),
    ] = None,
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
    prompts.check_request_options(
        api=prompts.request_api(fmt),
        max_tokens=max_tokens,
        reasoning_effort=reasoning_effort,
        thinking_budget=thinking_budget,
    )
    check_conditions(condition)
    if db is not None:
        con = open_database(db, instead="leave out --db to read the package's benchmark")
        tables = prompts.benchmark_tables(con)
        con.close()
    else:
        tables = ingest.read_benchmark(benchmark or DEFAULT_BENCHMARK)
    known_channels(channel, ["none", *tables["channels"].sort("position")["channel"]])  # refuses unknown ones
    if families is not None:
        wanted = subsample.read_family_list(families, known=tables["tasks"]["family_id"].unique().to_list())
        tables = {**tables, "tasks": tables["tasks"].filter(pl.col("family_id").is_in(wanted))}
    rendered = prompts.render_prompts(tables, channels=channel, conditions=condition, max_peaks=max_peaks)
    if rendered.height == 0:
        raise UsageError("no task matches the given --channel and --condition")
    manifest = prompts.write_prompts(
        rendered,
        out,
        fmt=fmt,
        model=model,
        max_tokens=max_tokens,
        reasoning_effort=reasoning_effort,
        thinking_budget=thinking_budget,
    )
    limit = f", max tokens {manifest['max_tokens']}" if manifest else ""
    typer.echo(f"wrote {rendered.height} prompts ({fmt}, template {prompts.TEMPLATE}{limit}) to {out}")


@command("simulate")
def simulate_command(
    out: Annotated[
        Path,
        typer.Option(
            "--out", help="Folder for the response files; the truth and parameters go to its simulation/ subfolder."
        ),
    ],
    benchmark: Annotated[Path, typer.Option("--benchmark", help="Benchmark folder to answer.")] = DEFAULT_BENCHMARK,
    params: Annotated[
        Path | None,
        typer.Option(
            "--params", help="simulation.json-style file with the models; default: the built-in simulated profiles."
        ),
    ] = None,
    samples: Annotated[int, typer.Option("--samples", help="Sampled answers per task.")] = 1,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the simulated answers; recorded in simulation.json.")
    ] = SIMULATION_SEED,
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
