"""Loading a benchmark folder: families, candidates, properties, tasks, channels, models.

Each table is one file, ``<table>.parquet``, ``.jsonl`` or ``.csv``. Every row is
checked before anything is written; pair distances for input validation are
computed here, once, and stored in ``pair_distances``.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from .. import chem
from ..defaults import CONDITIONS
from ..store import fetch_one
from .distances import DISTANCES, PropertyValueError, family_pair_distances, parse_value
from .errors import InputError, more
from .files import file_format, json_lines, read_bytes, read_csv_text, read_parquet

DEFAULT_CHANNELS = Path(__file__).resolve().parent.parent / "channels.csv"
MIN_CANDIDATES, MAX_CANDIDATES = 2, 6

# column -> (kind, required). Kinds: id (text, integers accepted as ids), text,
# number, json (any JSON value; text in CSV/Parquet), list (JSON list or 'a;b' text).
TABLES: dict[str, dict[str, tuple[str, bool]]] = {
    "families": {"family_id": ("id", True), "scaffold": ("text", True), "source": ("text", True)},
    "candidates": {
        "family_id": ("id", True),
        "label": ("text", True),
        "fragment": ("text", True),
        "molecule": ("text", True),
    },
    "properties": {
        "family_id": ("id", True),
        "label": ("text", True),
        "channel": ("text", True),
        "value": ("json", True),
    },
    "tasks": {
        "task_id": ("id", True),
        "family_id": ("id", True),
        "channel": ("text", True),
        "condition": ("text", True),
        "target": ("text", True),
        "shown_family": ("id", False),
        "shown_label": ("text", False),
    },
    "channels": {
        "channel": ("text", True),
        "group": ("text", True),
        "name": ("text", True),
        "distance": ("text", False),
        "cutoff": ("number", False),
        "components": ("list", False),
        # optional: a leaderboard's subgroup spanner and column label (default: the name)
        "subgroup": ("text", False),
        "column_label": ("text", False),
    },
    # optional: how reports name and group the models (the paper: closed- and open-weight)
    "models": {"model": ("text", True), "display_name": ("text", False), "group": ("text", False)},
}
OPTIONAL_TABLES = ("channels", "models")


@dataclass(frozen=True)
class BenchmarkSummary:
    """What a benchmark load did."""

    path: str
    fingerprint: str
    families: int
    tasks: int
    channels: int
    pair_distances: int
    already_loaded: bool


def _find_table(directory: Path, table: str, *, required: bool) -> Path | None:
    found = [directory / f"{table}{suffix}" for suffix in (".parquet", ".jsonl", ".csv")]
    found = [p for p in found if p.exists()]
    if len(found) > 1:
        raise InputError(directory, f"table {table!r} is given twice: {', '.join(p.name for p in found)}")
    if not found:
        if required:
            raise InputError(directory, f"no {table} table ({table}.parquet, {table}.jsonl or {table}.csv)")
        return None
    return found[0]


def _records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(location, row) pairs, whatever the format."""
    fmt = file_format(path)
    if fmt == "parquet":
        frame = read_parquet(path)
    elif fmt == "csv":
        frame = read_csv_text(path, read_bytes(path))
    else:
        out = []
        for line, value in json_lines(path, read_bytes(path)):
            if not isinstance(value, dict):
                raise InputError(path, f"expected a JSON object, got {type(value).__name__}", where=f"line {line}")
            out.append((f"line {line}", value))
        if not out:
            raise InputError(path, "file has no rows")
        return out
    return [(row.pop("_where"), row) for row in frame.to_dicts()]


def _normalise(path: Path, where: str, column: str, kind: str, value: Any, from_text: bool) -> Any:
    """One cell in its stored form, or an InputError saying what is wrong with it."""

    def bad(expected: str) -> InputError:
        return InputError(path, f"column {column!r} must be {expected}, got {value!r}", where=where)

    if kind == "id":
        if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
            raise bad("a non-empty text or integer identifier")
        return str(value)
    if kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise bad("non-empty text")
        return value
    if kind == "number":
        if from_text and isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise bad("a number") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad("a finite number")
        return float(value)
    if kind == "list":
        if isinstance(value, str):
            return [part.strip() for part in value.split(";") if part.strip()]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        raise bad("a list of channel names ('ir;raman' or a JSON list)")
    # json: text must parse; a decoded JSON value (JSONL) is stored as its text
    if isinstance(value, str):
        try:
            json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"column {column!r} is not valid JSON ({exc.msg})", where=where) from None
        return value
    return json.dumps(value)


def read_table(
    path: Path, table: str, *, optional: tuple[str, ...] = (), spec: dict[str, tuple[str, bool]] | None = None
) -> pl.DataFrame:
    """One benchmark table, typed and checked cell by cell, with a ``_where`` column.

    ``optional`` names required columns whose cells may still be empty (null); ``spec`` reads a
    table that is not the benchmark's (a plan's family list) by the same rules.
    """
    spec = spec if spec is not None else TABLES[table]
    from_text = file_format(path) == "csv"
    rows = []
    for where, record in _records(path):
        row = {"_where": where}
        for column, (kind, required) in spec.items():
            value = record.get(column)
            if value is None or (from_text and value == ""):
                if required and (column not in optional or column not in record):
                    raise InputError(path, f"missing required column {column!r}", where=where)
                row[column] = None
                continue
            row[column] = _normalise(path, where, column, kind, value, from_text)
        rows.append(row)
    schema = {"_where": pl.String}
    for column, (kind, _) in spec.items():
        schema[column] = {"number": pl.Float64, "list": pl.List(pl.String)}.get(kind, pl.String)
    return pl.DataFrame(rows, schema=schema, orient="row")


def _first_duplicate(path: Path, frame: pl.DataFrame, key: list[str]) -> None:
    dup = frame.filter(pl.struct(key).is_duplicated())
    if dup.height:
        first = dup.row(0, named=True)
        shown = ", ".join(f"{k}={first[k]!r}" for k in key)
        raise InputError(path, f"duplicate row for {shown}{more(dup.height - 2)}", where=first["_where"])


def _check_in(path: Path, frame: pl.DataFrame, allowed: pl.DataFrame, key: list[str], what: str) -> None:
    """Every row's key must occur in ``allowed``; otherwise name the first row that breaks it."""
    missing = frame.join(allowed.select(key).unique(), on=key, how="anti", nulls_equal=False)
    if missing.height:
        first = missing.row(0, named=True)
        shown = ", ".join(f"{k}={first[k]!r}" for k in key)
        raise InputError(path, f"{what}: {shown}{more(missing.height - 1)}", where=first["_where"])


def _merge_channels(path: Path | None) -> pl.DataFrame:
    """The shipped channel table, overridden or extended by the benchmark's own."""
    sources = [(DEFAULT_CHANNELS, read_table(DEFAULT_CHANNELS, "channels"))]
    if path is not None:
        own = read_table(path, "channels")
        _first_duplicate(path, own, ["channel"])
        sources.append((path, own))
    merged = sources[0][1]
    if len(sources) == 2:
        merged = pl.concat([merged.filter(~pl.col("channel").is_in(own["channel"].implode())), own])
    names = set(merged["channel"])
    bundles = set(merged.filter(pl.col("components").is_not_null())["channel"])
    for source_path, frame in sources:
        for row in frame.iter_rows(named=True):
            _check_channel(source_path, row, names, bundles)
    return merged.with_row_index("position")


def _check_channel(path: Path, row: dict[str, Any], names: set[str], bundles: set[str]) -> None:
    if row["channel"] == "none":
        raise InputError(path, "'none' is reserved for P0 tasks", where=row["_where"])
    if row["components"]:
        unknown = [c for c in row["components"] if c != "*" and c not in names]
        if unknown:
            raise InputError(path, f"bundle {row['channel']!r} names unknown channels {unknown}", where=row["_where"])
        nested = [c for c in row["components"] if c in bundles]
        if nested:
            raise InputError(
                path,
                f"bundle {row['channel']!r} names other bundles {nested}; list their single channels instead",
                where=row["_where"],
            )
    elif row["distance"] not in DISTANCES or row["cutoff"] is None:
        raise InputError(
            path,
            f"channel {row['channel']!r} needs a distance (one of {', '.join(DISTANCES)}) and a cutoff",
            where=row["_where"],
        )


def _check_smiles(path: Path, frame: pl.DataFrame, columns: tuple[str, ...], *, masked: tuple[str, ...] = ()) -> None:
    """Every SMILES parses; the ``masked`` columns (scaffold, fragment) carry an attachment point."""
    for row in frame.iter_rows(named=True):
        for column in columns:
            if not chem.is_valid_smiles(row[column]):
                raise InputError(path, f"column {column!r} is not a valid SMILES: {row[column]!r}", where=row["_where"])
            if column in masked and chem.attachment_points(row[column]) == 0:
                raise InputError(
                    path, f"column {column!r} has no [*] attachment point: {row[column]!r}", where=row["_where"]
                )


def _check_family_sizes(path: Path, candidates: pl.DataFrame) -> None:
    """A candidate set has 2–6 labelled fragments."""
    sizes = candidates.group_by("family_id").len().filter(~pl.col("len").is_between(MIN_CANDIDATES, MAX_CANDIDATES))
    if sizes.height:
        family_id, size = sizes.sort("family_id").row(0)
        raise InputError(
            path,
            f"family {family_id!r} has {size} candidates; a family needs "
            f"{MIN_CANDIDATES} to {MAX_CANDIDATES}{more(sizes.height - 1)}",
        )


def read_benchmark(directory: str | Path) -> dict[str, pl.DataFrame]:
    """Read and cross-check every table of a benchmark folder; raise InputError on the first problem."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(directory, "not a folder")
    paths = {t: _find_table(directory, t, required=t not in OPTIONAL_TABLES) for t in TABLES}
    channels = _merge_channels(paths["channels"])
    families = read_table(paths["families"], "families")
    candidates = read_table(paths["candidates"], "candidates")
    properties = read_table(paths["properties"], "properties", optional=("value",))
    # A null value is a candidate without a value in that channel: its pairs are not
    # verifiable, so there is nothing to store.
    properties = properties.filter(pl.col("value").is_not_null())
    tasks = read_table(paths["tasks"], "tasks")

    _first_duplicate(paths["families"], families, ["family_id"])
    _first_duplicate(paths["candidates"], candidates, ["family_id", "label"])
    _first_duplicate(paths["properties"], properties, ["family_id", "label", "channel"])
    _first_duplicate(paths["tasks"], tasks, ["task_id"])
    _check_in(paths["candidates"], candidates, families, ["family_id"], "unknown family_id")
    _check_in(
        paths["families"],
        families.rename({"source": "label"}),
        candidates,
        ["family_id", "label"],
        "source is not a candidate of the family",
    )
    _check_family_sizes(paths["candidates"], candidates)
    _check_smiles(paths["families"], families, ("scaffold",), masked=("scaffold",))
    _check_smiles(paths["candidates"], candidates, ("fragment", "molecule"), masked=("fragment",))

    singles = channels.filter(pl.col("components").is_null())
    _check_in(paths["properties"], properties, candidates, ["family_id", "label"], "not a candidate")
    _check_in(paths["properties"], properties, singles, ["channel"], "unknown or bundle channel")

    _check_in(paths["tasks"], tasks, families, ["family_id"], "unknown family_id")
    _check_in(
        paths["tasks"],
        tasks.rename({"target": "label"}),
        candidates,
        ["family_id", "label"],
        "target is not a candidate of the family",
    )
    task_channels = pl.concat([channels.select("channel"), pl.DataFrame({"channel": ["none"]})])
    _check_in(paths["tasks"], tasks, task_channels, ["channel"], "unknown channel")
    _check_tasks(paths["tasks"], tasks, families, candidates)
    tables = {
        "channels": channels,
        "families": families,
        "candidates": candidates,
        "properties": properties,
        "tasks": tasks,
    }
    if paths["models"] is not None:  # only when given: the fingerprint of a benchmark without one stays as it was
        models = read_table(paths["models"], "models")
        _first_duplicate(paths["models"], models, ["model"])
        # the file's order is the report's order (of the groups, and of models within one)
        tables["models"] = models.with_columns(pl.int_range(pl.len(), dtype=pl.Int32).alias("position"))
    return tables


def _check_tasks(path: Path, tasks: pl.DataFrame, families: pl.DataFrame, candidates: pl.DataFrame) -> None:
    """Condition rules: what each condition's target and channel must be."""
    source = dict(families.select("family_id", "source").iter_rows())
    labels = set(candidates.select("family_id", "label").iter_rows())
    seen: set[tuple[str, str, str]] = set()
    for row in tasks.iter_rows(named=True):
        where, cond, fam = row["_where"], row["condition"], row["family_id"]
        if cond not in CONDITIONS:
            raise InputError(path, f"condition must be one of {', '.join(CONDITIONS)}, got {cond!r}", where=where)
        if (cond == "none") != (row["channel"] == "none"):
            raise InputError(path, "condition 'none' (P0) goes with channel 'none', and only it", where=where)
        if cond in ("none", "source", "shuffled") and row["target"] != source[fam]:
            raise InputError(
                path, f"a {cond} task's target must be the source {source[fam]!r}, got {row['target']!r}", where=where
            )
        if cond == "cf" and row["target"] == source[fam]:
            raise InputError(path, "a cf task's target must differ from the source", where=where)
        # one P0, source and shuffled task per family and channel; one cf task per (family, channel, k)
        key = (fam, row["channel"], cond, row["target"] if cond == "cf" else None)
        if key in seen:
            what = f"cf task for candidate {row['target']!r}" if cond == "cf" else f"{cond} task"
            raise InputError(path, f"second {what} for family {fam!r} in channel {row['channel']!r}", where=where)
        seen.add(key)
        if cond == "shuffled" and row["shown_family"] == fam:
            raise InputError(path, "a shuffled task must show another family's properties", where=where)
        if (
            cond in ("source", "cf")
            and row["shown_family"] is not None
            and (row["shown_family"], row["shown_label"]) != (fam, row["target"])
        ):
            raise InputError(
                path,
                f"a {cond} task must show its own family's candidate {row['target']!r}, "
                f"shows ({row['shown_family']!r}, {row['shown_label']!r})",
                where=where,
            )
        if row["shown_family"] is not None and (row["shown_family"], row["shown_label"]) not in labels:
            raise InputError(
                path,
                f"shown_family/shown_label ({row['shown_family']!r}, {row['shown_label']!r}) is not a candidate",
                where=where,
            )


def pair_distances(tables: dict[str, pl.DataFrame], path: Path) -> pl.DataFrame:
    """Distances of every within-family pair with values, per single channel."""
    distance_of = dict(
        tables["channels"].filter(pl.col("distance").is_not_null()).select("channel", "distance").iter_rows()
    )
    rows = []
    values: dict[tuple[str, str], dict[str, object]] = {}  # (family, channel) -> label -> parsed value
    # one pass over the rows: a polars group_by gathers each of the ~3,000 groups apart (seconds)
    for family_id, channel, label, value, where in (
        tables["properties"].select("family_id", "channel", "label", "value", "_where").iter_rows()
    ):
        try:
            values.setdefault((family_id, channel), {})[label] = parse_value(distance_of[channel], json.loads(value))
        except PropertyValueError as exc:
            raise InputError(path, f"channel {channel!r} value: {exc}", where=where) from None
    for (family_id, channel), by_label in values.items():
        for a, b, d in family_pair_distances(distance_of[channel], by_label):
            rows.append((family_id, channel, a, b, d))
    return pl.DataFrame(rows, schema=["family_id", "channel", "label_a", "label_b", "distance"], orient="row")


def fingerprint(tables: dict[str, pl.DataFrame]) -> str:
    """Content hash of the normalised tables, independent of row order and file format."""
    digest = hashlib.sha256()
    for name in sorted(tables):
        frame = tables[name].drop("_where", "position", strict=False)
        frame = frame.with_columns(pl.col(pl.List(pl.String)).list.join(";"))
        digest.update(name.encode())
        digest.update(frame.sort(frame.columns).write_csv().encode())
    return digest.hexdigest()


# What the channel table says about how a channel looks, not what it computes: a newer
# package (or channel file) may rename a channel or label it for the leaderboards.
CHANNEL_DISPLAY = ("group", "name", "subgroup", "column_label")
_CHANNEL_COLUMNS = tuple(TABLES["channels"])
# the channel table's columns before the leaderboard labels (subgroup, column_label) existed
_CHANNEL_COLUMNS_BEFORE_LABELS = tuple(c for c in _CHANNEL_COLUMNS if c not in ("subgroup", "column_label"))


def _differs_only_in_channel_display(
    con: duckdb.DuckDBPyConnection, tables: dict[str, pl.DataFrame], stored_digest: str
) -> bool:
    """Whether the database holds these tables except for the channels' display columns.

    The stored fingerprint was computed with the channel table the database holds: put
    it in place of the new one and the digest must match, with the columns of the
    version that wrote it; and every channel must be defined (distance, cutoff,
    components) as before.
    """
    stored = con.sql("SELECT * FROM channels ORDER BY position").pl()
    definition = [c for c in _CHANNEL_COLUMNS if c not in CHANNEL_DISPLAY]
    if not stored.select(definition).sort("channel").equals(tables["channels"].select(definition).sort("channel")):
        return False
    return any(
        fingerprint({**tables, "channels": stored.select(columns)}) == stored_digest
        for columns in (_CHANNEL_COLUMNS, _CHANNEL_COLUMNS_BEFORE_LABELS)
    )


def _update_channel_display(con: duckdb.DuckDBPyConnection, channels: pl.DataFrame, digest: str) -> None:
    """Rewrite the channels' display columns and order, and the fingerprint; nothing else changes."""
    display = channels.select("channel", "position", *CHANNEL_DISPLAY)  # noqa: F841 (read by DuckDB's replacement scan)
    con.execute(
        'UPDATE channels SET "group" = d."group", name = d.name, subgroup = d.subgroup, '
        "column_label = d.column_label, position = d.position FROM display AS d WHERE channels.channel = d.channel"
    )
    con.execute("UPDATE benchmark SET fingerprint = ?", [digest])


def load_benchmark(con: duckdb.DuckDBPyConnection, directory: str | Path) -> BenchmarkSummary:
    """Check and store a benchmark folder; call inside a transaction.

    Loading the same benchmark again adds nothing; a database holds one benchmark.
    """
    directory = Path(directory)
    tables = read_benchmark(directory)
    digest = fingerprint(tables)
    previous = fetch_one(con, "SELECT path, fingerprint FROM benchmark")
    counts = dict(families=tables["families"].height, tasks=tables["tasks"].height, channels=tables["channels"].height)
    if previous is not None:
        if previous[1] != digest:
            if not _differs_only_in_channel_display(con, tables, previous[1]):
                raise InputError(
                    directory,
                    f"the database already holds a different benchmark (loaded from {previous[0]}); use another {{db}}",
                    arguments={"db": "database"},
                )
        # names, labels and order are display: the channel table's current ones apply
        _update_channel_display(con, tables["channels"], digest)
        n_pairs = fetch_one(con, "SELECT count(*) FROM pair_distances")[0]
        return BenchmarkSummary(str(directory), digest, **counts, pair_distances=n_pairs, already_loaded=True)
    distances = pair_distances(tables, _find_table(directory, "properties", required=True))
    for name, frame in {**tables, "pair_distances": distances}.items():
        columns = [c for c in frame.columns if c != "_where"]
        staged = frame.select(columns)  # noqa: F841 (read by DuckDB's replacement scan)
        quoted = ", ".join(f'"{c}"' for c in columns)
        con.execute(f"INSERT INTO {name} ({quoted}) SELECT {quoted} FROM staged")
    con.execute("INSERT INTO benchmark VALUES (?, ?, ?)", [str(directory), digest, datetime.now(UTC)])
    return BenchmarkSummary(str(directory), digest, **counts, pair_distances=distances.height, already_loaded=False)
