"""Loading response files: JSONL, CSV or Parquet, many per benchmark.

A file is read into one standard frame (``model, task_id, sample, attempt,
response, choice, metadata``), checked row by row against the benchmark, its raw
answers parsed, and appended to ``responses``. A file already loaded (same bytes)
adds nothing. Every problem is an :class:`InputError` naming the file and line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from ..store import fetch_one
from .answers import CandidateIndex, parse_answers
from .batches import batch_format, stage_batch_results
from .errors import InputError, more
from .files import (
    FORMAT_NAMES,
    check_no_nul,
    check_utf8,
    file_format,
    file_sha256,
    parquet_batches,
    read_bytes,
    read_csv_text,
    read_parquet,
)
from .harness import is_lm_eval_samples, stage_inspect, stage_lm_eval
from .staged import STANDARD_SCHEMA, mark_truncated

REQUIRED = ("model", "task_id")
KNOWN = ("model", "task_id", "sample", "attempt", "response", "choice")
KEY = ("model", "task_id", "sample", "attempt")
# Parses kept across the batches of one streamed file; past this many distinct
# (family, text) pairs the cache starts again, so memory stays flat.
MAX_KNOWN_PARSES = 1_000_000


@dataclass
class _KnownParses:
    """The parses of one file so far: by (family, text), and ``parse_answers``' own by (labels, text)."""

    by_pair: dict[tuple[str, str], tuple[str | None, str | None]] = dataclasses.field(default_factory=dict)
    by_labels: dict = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.by_pair) + len(self.by_labels)

    def clear(self) -> None:
        self.by_pair.clear()
        self.by_labels.clear()


@dataclass(frozen=True)
class FileSummary:
    """What loading one response file did.

    ``truncated`` holds (model, answers cut at the token limit, answers) for each model
    with at least one cut answer; ``fmt`` is the format the file was read as.
    """

    path: str
    rows: int
    parsed: int
    invalid: int
    already_loaded: bool
    truncated: tuple[tuple[str, int, int], ...] = ()
    fmt: str | None = None


# What to change when answers come back cut at the token limit, by where they came from.
TRUNCATION_ADVICE = {
    "openai-batch": "export again with a higher `molp2s prompts --max-tokens` (hidden reasoning counts against "
    "it), or a lower --reasoning-effort",
    "anthropic-batch": "export again with a higher `molp2s prompts --max-tokens`, or a lower --thinking-budget "
    "(thinking counts against max_tokens)",
    "inspect": "run again with a higher `inspect eval --max-tokens` (or --token-limit, if the sample limit "
    "stopped it), or a lower --reasoning-effort / --reasoning-tokens",
}
_OTHER_ADVICE = (
    "raise the token limit of the run that wrote these answers (`molp2s prompts --max-tokens` for "
    "a batch export), or lower its reasoning effort or thinking budget"
)


def truncation_advice(fmt: str | None) -> str:
    """Which flag to raise (or lower) when a file's answers were cut at the token limit."""
    return TRUNCATION_ADVICE.get(fmt, _OTHER_ADVICE)


def _fail_first(path: Path, frame: pl.DataFrame, condition: pl.Expr, message: str | callable) -> None:
    """Raise for the first row (in file order) where ``condition`` holds."""
    bad = frame.filter(condition)
    if bad.height:
        first = bad.sort("_line").row(0, named=True)
        text = message(first) if callable(message) else message
        raise InputError(path, text + more(bad.height - 1), where=first["_where"])


# JSONL is typed in DuckDB: it reports each field's JSON type per line, where polars
# would silently coerce a number in a text column (or a text in a number column).
_LINES_SQL = """
SELECT line AS _line, 'line ' || line AS _where, json, json_valid(json) AS valid
FROM raw_lines
WHERE json IS NOT NULL AND NOT regexp_full_match(json, '\\s*')
"""
# Run only once every line is valid JSON: DuckDB evaluates these on every row.
_JSONL_SQL = """
SELECT
    _line,
    _where,
    json,
    json_type(json) AS json_kind,
    json_type(json, '$.model') AS model_type,
    json_type(json, '$.task_id') AS task_id_type,
    json_type(json, '$.sample') AS sample_type,
    json_type(json, '$.attempt') AS attempt_type,
    json_type(json, '$.response') AS response_type,
    json_type(json, '$.choice') AS choice_type
FROM lines
"""
_INTEGER_TYPES = ("UBIGINT", "BIGINT")
_EXTRACT_SQL = """
SELECT
    _where,
    _line,
    json ->> '$.model' AS model,
    json ->> '$.task_id' AS task_id,
    TRY_CAST(json ->> '$.sample' AS BIGINT) AS sample,
    TRY_CAST(json ->> '$.attempt' AS BIGINT) AS attempt,
    sample_type,
    attempt_type,
    json ->> '$.response' AS response,
    json ->> '$.choice' AS choice,
    nullif(json_merge_patch(json, '{"model":null,"task_id":null,"sample":null,"attempt":null,"response":null,"choice":null}')::VARCHAR, '{}') AS metadata
FROM typed
"""


def _stage_jsonl(path: Path, data: bytes) -> pl.DataFrame:
    check_utf8(path, data)
    check_no_nul(path, data)
    # One text column per line (NUL never occurs in valid JSON text), numbered from 1.
    raw_lines = pl.read_csv(  # noqa: F841 (read by DuckDB below)
        io.BytesIO(data),
        has_header=False,
        separator="\x00",
        quote_char=None,
        new_columns=["json"],
        infer_schema=False,
    ).with_row_index("line", offset=1)
    con = duckdb.connect()
    lines = con.sql(_LINES_SQL).pl()
    _fail_first(path, lines, ~pl.col("valid"), lambda r: f"malformed JSON ({_json_error(r['json'])})")
    typed = con.sql(_JSONL_SQL).pl()
    _fail_first(
        path, typed, pl.col("json_kind") != "OBJECT", lambda r: f"expected a JSON object, got {r['json_kind'].lower()}"
    )
    for field in REQUIRED:
        _fail_first(
            path,
            typed,
            pl.col(f"{field}_type").is_null() | (pl.col(f"{field}_type") == "NULL"),
            f"missing required field {field!r}",
        )
    _fail_first(
        path,
        typed,
        pl.col("model_type") != "VARCHAR",
        lambda r: f"field 'model' must be text, got {r['model_type'].lower()}",
    )
    _fail_first(
        path,
        typed,
        ~pl.col("task_id_type").is_in(("VARCHAR",) + _INTEGER_TYPES),
        lambda r: f"field 'task_id' must be text or an integer, got {r['task_id_type'].lower()}",
    )
    for field in ("sample", "attempt"):
        kind = pl.col(f"{field}_type")
        _fail_first(
            path,
            typed,
            kind.is_not_null() & (kind != "NULL") & ~kind.is_in(_INTEGER_TYPES),
            lambda r, f=field: f"field {f!r} must be a non-negative integer, got {r[f + '_type'].lower()}",
        )
    for field in ("response", "choice"):
        kind = pl.col(f"{field}_type")
        _fail_first(
            path,
            typed,
            kind.is_not_null() & ~kind.is_in(("VARCHAR", "NULL")),
            lambda r, f=field: f"field {f!r} must be text, got {r[f + '_type'].lower()}",
        )
    extracted = con.sql(_EXTRACT_SQL).pl()
    for field in ("sample", "attempt"):
        given = pl.col(f"{field}_type").is_not_null() & (pl.col(f"{field}_type") != "NULL")
        _fail_first(path, extracted, given & pl.col(field).is_null(), f"{field!r} is too large")
    return extracted.with_columns(pl.col("sample", "attempt").fill_null(0))


def _json_error(line: str) -> str:
    try:
        json.loads(line)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at column {exc.colno}"
    return "not accepted by the JSON reader"


def _stage_table(path: Path, frame: pl.DataFrame, *, from_text: bool) -> pl.DataFrame:
    """CSV (all text) or Parquet (typed) into the standard frame."""
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(path, f"missing required column {missing[0]!r}")
    if "response" not in frame.columns and "choice" not in frame.columns:
        raise InputError(path, "needs a 'response' or a 'choice' column")
    frame = frame.with_columns(pl.col("_where").str.extract(r"(\d+)$").cast(pl.Int64).alias("_line"))
    schema = frame.schema
    for column in ("model", "response", "choice"):
        if column in frame.columns and schema[column] not in (pl.String, pl.Categorical, pl.Null):
            raise InputError(path, f"column {column!r} must hold text, has type {schema[column]}")
    if not (schema["task_id"] == pl.String or schema["task_id"].is_integer()):
        raise InputError(path, f"column 'task_id' must hold text or integers, has type {schema['task_id']}")
    columns = []
    for column in ("sample", "attempt"):
        if column not in frame.columns:
            columns.append(pl.lit(0, pl.Int64).alias(column))
        elif from_text:
            text = pl.col(column).str.strip_chars()
            _fail_first(
                path,
                frame,
                text.is_not_null() & ~text.str.contains(r"^[0-9]+$"),
                lambda r, c=column: f"column {c!r} must be a non-negative integer, got {r[c]!r}",
            )
            _fail_first(
                path,
                frame,
                text.is_not_null() & text.cast(pl.Int64, strict=False).is_null(),
                lambda r, c=column: f"column {c!r} is too large, got {r[c]!r}",
            )
            columns.append(text.cast(pl.Int64).fill_null(0).alias(column))
        elif schema[column].is_integer() or schema[column] == pl.Null:
            _fail_first(
                path,
                frame,
                pl.col(column).is_not_null() & pl.col(column).cast(pl.Int64, strict=False).is_null(),
                lambda r, c=column: f"{c!r} is too large, got {r[c]}",
            )
            columns.append(pl.col(column).cast(pl.Int64).fill_null(0))
        else:
            raise InputError(path, f"column {column!r} must hold integers, has type {schema[column]}")
    extras = [c for c in frame.columns if c not in KNOWN and not c.startswith("_")]
    for column in extras:
        if schema[column] in (pl.Binary, pl.Object) or schema[column].is_decimal():
            raise InputError(
                path,
                f"column {column!r} has type {schema[column]}, which cannot be kept as "
                "JSON metadata; store it as text or numbers",
            )
    metadata = (pl.struct(extras).struct.json_encode() if extras else pl.lit(None, pl.String)).alias("metadata")
    return frame.with_columns(
        pl.col("model").cast(pl.String),
        pl.col("task_id").cast(pl.String),
        *[
            pl.col(c).cast(pl.String) if c in frame.columns else pl.lit(None, pl.String).alias(c)
            for c in ("response", "choice")
        ],
        *columns,
        metadata,
    )


def resolve_format(path: Path, data: bytes | None, fmt: str | None) -> str:
    """The given format, else the suffix's, with lm-eval samples told apart from plain JSONL by their fields."""
    if fmt is not None:
        if fmt not in FORMAT_NAMES:
            raise InputError(path, f"unknown format {fmt!r}; expected one of {', '.join(FORMAT_NAMES)}")
        return fmt
    fmt = file_format(path)
    if fmt == "jsonl":
        data = data if data is not None else read_bytes(path)
        if is_lm_eval_samples(data):
            return "lm-eval"
        found = batch_format(data)
        if found == "batch-requests":
            raise InputError(
                path,
                "this is a batch request file (what `molp2s prompts` writes); "
                "load the results the batch API returned for it",
            )
        if found is not None:
            return found
    return fmt


def stage_file(
    path: Path,
    data: bytes | None = None,
    *,
    fmt: str | None = None,
    model: str | None = None,
    task_ids: dict[str, str] | None = None,
) -> pl.DataFrame:
    """Read one response file into the standard frame, with every type checked.

    ``fmt`` overrides the format the suffix implies; ``model`` names the model of an
    lm-eval samples file; ``task_ids`` maps Inspect sample ids to task ids.
    """
    fmt = resolve_format(path, data, fmt)
    if fmt == "inspect":
        staged = stage_inspect(path, task_ids=task_ids)
    elif fmt == "lm-eval":
        staged = stage_lm_eval(path, data if data is not None else read_bytes(path), model=model)
    elif fmt in ("openai-batch", "anthropic-batch"):
        staged = stage_batch_results(path, data if data is not None else read_bytes(path), fmt, model=model)
    elif fmt == "jsonl":
        staged = _stage_jsonl(path, data if data is not None else read_bytes(path))
    elif fmt == "csv":
        staged = _stage_table(path, read_csv_text(path, data if data is not None else read_bytes(path)), from_text=True)
    else:
        staged = _stage_table(path, read_parquet(path), from_text=False)
    if staged.height == 0:
        raise InputError(path, "file has no rows")
    return _standardise(path, staged)


def _standardise(path: Path, staged: pl.DataFrame) -> pl.DataFrame:
    """The standard columns and types, and the checks every format shares."""
    if "_failed" not in staged.columns:  # set only by readers that know a request failed
        staged = staged.with_columns(pl.lit(None, pl.String).alias("_failed"))
    staged = staged.select([pl.col(c).cast(t) for c, t in STANDARD_SCHEMA.items()])
    # an answer the API says it cut at the token limit is truncated, whatever its text (see
    # _parse_responses)
    staged = mark_truncated(staged)
    _fail_first(
        path,
        staged,
        pl.col("model").is_null() | (pl.col("model").str.strip_chars() == ""),
        "missing required field 'model'",
    )
    _fail_first(
        path, staged, pl.col("task_id").is_null() | (pl.col("task_id") == ""), "missing required field 'task_id'"
    )
    _fail_first(
        path,
        staged,
        pl.col("response").is_null() & pl.col("choice").is_null(),
        "needs a 'response' or a 'choice' (both are missing)",
    )
    for column in ("sample", "attempt"):
        _fail_first(
            path, staged, pl.col(column) < 0, lambda r, c=column: f"{c!r} must be a non-negative integer, got {r[c]}"
        )
        _fail_first(
            path,
            staged,
            pl.col(column) > 2**31 - 1,
            lambda r, c=column: f"{c!r} is too large (at most 2147483647), got {r[c]}",
        )
    return staged


def _duplicate(key: tuple, twin: str) -> str:
    return f"duplicate (model, task_id, sample, attempt) = {tuple(key)!r}, also at {twin}"


def _already_loaded(key: tuple, earlier_path: str, earlier_line: int) -> str:
    return (
        f"(model, task_id, sample, attempt) = {tuple(key)!r} was already loaded from {earlier_path} "
        f"(line/row {earlier_line})"
    )


def _check_against_database(
    con: duckdb.DuckDBPyConnection, path: Path, staged: pl.DataFrame, *, check_loaded: bool = True
) -> pl.DataFrame:
    """References and duplicates; returns the frame with each row's family_id.

    ``check_loaded=False`` leaves out the check against rows already in the database (a
    streamed file checks that once, over all its rows, in ``_check_file_in_database``).
    """
    # DuckDB reads ``staged`` from this frame's locals (a replacement scan). Not
    # con.register: inside the load's transaction a registered frame stays alive until the
    # commit, so memory grew with every batch (120 bytes a row at 10 M rows).
    with_family = con.sql("SELECT s.*, t.family_id FROM staged AS s LEFT JOIN tasks AS t USING (task_id)").pl()
    _fail_first(path, with_family, pl.col("family_id").is_null(), lambda r: f"unknown task_id {r['task_id']!r}")
    bad_choice = con.sql(
        """SELECT s._where, s._line, s.choice, t.family_id
           FROM staged AS s JOIN tasks AS t USING (task_id)
           LEFT JOIN candidates AS c ON c.family_id = t.family_id AND c.label = s.choice
           WHERE s.choice IS NOT NULL AND c.label IS NULL"""
    ).pl()
    _fail_first(
        path,
        bad_choice,
        pl.lit(True),
        lambda r: f"choice {r['choice']!r} is not a candidate of family {r['family_id']!r}",
    )
    dup = staged.filter(pl.struct(KEY).is_duplicated()).sort("_line")
    if dup.height:
        first = dup.row(0, named=True)
        same_key = pl.all_horizontal([pl.col(k) == first[k] for k in KEY])
        twin = dup.filter(same_key).row(1, named=True)
        raise InputError(path, _duplicate(tuple(first[k] for k in KEY), twin["_where"]), where=first["_where"])
    if not check_loaded:
        return with_family
    clash = con.sql(
        """SELECT s._where, s._line, f.path, r.line, s.model, s.task_id, s.sample, s.attempt
           FROM staged AS s
           JOIN responses AS r USING (model, task_id, sample, attempt)
           JOIN response_files AS f USING (file_id)"""
    ).pl()
    _fail_first(path, clash, pl.lit(True), lambda r: _already_loaded(tuple(r[k] for k in KEY), r["path"], r["line"]))
    return with_family


def _parse_responses(
    con: duckdb.DuckDBPyConnection,
    frame: pl.DataFrame,
    known: _KnownParses | None = None,
) -> pl.DataFrame:
    """Parse each distinct (family, response text) once; rows with a given choice keep it.

    ``known`` carries parses across the batches of one file, and gains this batch's.
    """
    known = _KnownParses() if known is None else known
    if len(known) > MAX_KNOWN_PARSES:
        known.clear()  # a file of mostly distinct texts: keep memory flat, parse again
    todo = frame.filter(pl.col("choice").is_null()).select("family_id", "response").unique()
    if todo.height == 0:
        return frame.with_columns(
            pl.lit(None, pl.String).alias("invalid_reason"),
            pl.lit("given").alias("choice_source"),
            pl.lit(None, pl.String).alias("_parsed_choice"),
            pl.lit(None, pl.String).alias("_parsed_reason"),
        )
    pairs = todo.rows()
    new_pairs = [pair for pair in pairs if pair not in known.by_pair]
    families = sorted({family for family, _ in new_pairs})
    candidates = (
        []
        if not families
        else con.execute(
            "SELECT family_id, label, fragment, molecule FROM candidates WHERE family_id IN (SELECT unnest(?))",
            [families],
        ).fetchall()
    )
    by_family: dict[str, dict[str, tuple[str, str]]] = {}
    for family_id, label, fragment, molecule in candidates:
        by_family.setdefault(family_id, {})[label] = (fragment, molecule)
    indexes = {f: CandidateIndex(c) for f, c in by_family.items()}
    parsed = parse_answers(((text, indexes[family]) for family, text in new_pairs), known.by_labels)
    known.by_pair.update((pair, (answer.choice, answer.reason)) for pair, answer in zip(new_pairs, parsed))
    answers = todo.with_columns(
        pl.Series("parsed_choice", [known.by_pair[pair][0] for pair in pairs], pl.String),
        pl.Series("invalid_reason", [known.by_pair[pair][1] for pair in pairs], pl.String),
    )
    joined = frame.join(answers, on=["family_id", "response"], how="left", nulls_equal=True)
    given = pl.col("choice").is_not_null()
    # A failed request, an API-flagged refusal or an answer cut at the token limit is invalid
    # whatever its text says. For a cut answer that is a choice: the prompt asks for the
    # letter on the last line, so a cut answer has not reached it, and a letter the parser
    # finds in it is the reasoning's, or one the model had not finished weighing. Truncation
    # stays visible as its own reason; what the parser read in the cut text goes into the
    # metadata (``truncated_parse``), for anyone who wants to score it otherwise.
    failed = pl.col("_failed").is_not_null()
    return joined.with_columns(
        pl.when(given)
        .then(pl.col("choice"))
        .when(failed)
        .then(None)
        .otherwise(pl.col("parsed_choice"))
        .alias("choice"),
        pl.when(given)
        .then(None)
        .when(failed)
        .then(pl.col("_failed"))
        .otherwise(pl.col("invalid_reason"))
        .alias("invalid_reason"),
        pl.when(given).then(pl.lit("given")).otherwise(pl.lit("parsed")).alias("choice_source"),
        pl.col("parsed_choice").alias("_parsed_choice"),
        pl.col("invalid_reason").alias("_parsed_reason"),
    ).drop("parsed_choice")


def load_response_file(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    *,
    fmt: str | None = None,
    model: str | None = None,
    task_ids: dict[str, str] | None = None,
) -> FileSummary:
    """Check, parse and append one response file; call inside a transaction."""
    path = Path(path)
    streamed = (fmt or file_format(path)) == "parquet"
    data = None if streamed else read_bytes(path)
    fmt = resolve_format(path, data, fmt)  # an unknown type is refused even when its bytes were loaded before
    sha256 = file_sha256(path) if streamed else hashlib.sha256(data).hexdigest()
    if fetch_one(con, "SELECT 1 FROM response_files WHERE sha256 = ?", [sha256]):
        return FileSummary(str(path), 0, 0, 0, already_loaded=True)
    file_id = fetch_one(con, "SELECT coalesce(max(file_id), 0) + 1 FROM response_files")[0]
    if streamed:
        batches = (_standardise(path, _stage_table(path, frame, from_text=False)) for frame in parquet_batches(path))
    else:
        batches = iter([stage_file(path, data if fmt != "inspect" else None, fmt=fmt, model=model, task_ids=task_ids)])
    rows = parsed = invalid = count = 0
    known = _KnownParses()
    truncated: dict[str, tuple[int, int]] = {}  # model -> (cut answers, answers)
    for count, staged in enumerate(batches, start=1):  # noqa: B007 (count is read after the loop)
        checked = _check_against_database(con, path, staged, check_loaded=not streamed)
        final = _parse_responses(con, checked, known)  # noqa: F841 (read by DuckDB below)
        con.execute(
            """INSERT INTO responses
               SELECT model, task_id, sample::INTEGER, attempt::INTEGER, response, choice, invalid_reason,
                      choice_source,
                      CASE WHEN invalid_reason = 'truncated' THEN json_merge_patch(
                               coalesce(metadata, '{}'),
                               json_object('truncated_parse', json_object('choice', _parsed_choice,
                                                                          'reason', _parsed_reason)))::VARCHAR
                           ELSE metadata END,
                      ?, _line
               FROM final""",
            [file_id],
        )
        rows += final.height
        parsed += int((final["choice_source"] == "parsed").sum())
        invalid += int(final["choice"].is_null().sum())
        for model, cut, answers in (
            final.group_by("model").agg((pl.col("invalid_reason") == "truncated").sum(), pl.len()).iter_rows()
        ):
            before = truncated.get(model, (0, 0))
            truncated[model] = (before[0] + cut, before[1] + answers)
    if streamed:
        _check_file_in_database(con, path, file_id, several_batches=count > 1)
    con.execute(
        "INSERT INTO response_files VALUES (?, ?, ?, ?, ?, ?)",
        [file_id, str(path), sha256, fmt, rows, datetime.now(UTC)],
    )
    cut = tuple((model, n, of) for model, (n, of) in sorted(truncated.items()) if n)
    return FileSummary(str(path), rows, parsed, invalid, already_loaded=False, truncated=cut, fmt=fmt)


def _check_file_in_database(con: duckdb.DuckDBPyConnection, path: Path, file_id: int, *, several_batches: bool) -> None:
    """A streamed file's keys, once all its rows are in: no key twice across its batches,
    none already loaded from another file. Inside the load's transaction, so a refusal
    rolls the file's rows back with everything else."""
    where = "row {}".format
    keys = ", ".join(KEY)
    if several_batches:  # within one batch, _check_against_database has already looked
        # group 64-bit hashes of the keys, not the keys: a tenth of the memory at 100 M rows;
        # a hash seen twice is then checked on the keys themselves
        twice = con.execute(
            f"""
            WITH repeated AS (SELECT hash({keys}) AS h FROM responses WHERE file_id = ?
                              GROUP BY h HAVING count(*) > 1)
            SELECT {keys}, list(line ORDER BY line) AS lines FROM responses
            WHERE file_id = ? AND hash({keys}) IN (SELECT h FROM repeated)
            GROUP BY ALL HAVING count(*) > 1 ORDER BY lines[1] LIMIT 1""",
            [file_id, file_id],
        ).fetchall()
        if twice:
            *key, lines = twice[0]
            raise InputError(path, _duplicate(tuple(key), where(lines[1])), where=where(lines[0]))
    shared_models = fetch_one(
        con,
        """
        SELECT count(*) FROM (SELECT DISTINCT model FROM responses WHERE file_id = ?)
        JOIN (SELECT DISTINCT model FROM responses WHERE file_id <> ?) USING (model)""",
        [file_id, file_id],
    )[0]
    if not shared_models:  # a key holds its model: no other file can have loaded one of these rows
        return
    clash = con.execute(
        f"""
        SELECT n.line, f.path, o.line, {", ".join("n." + k for k in KEY)}, count(*) OVER () AS clashes
        FROM responses AS n
        JOIN responses AS o USING ({keys})
        JOIN response_files AS f ON f.file_id = o.file_id
        WHERE n.file_id = ? AND o.file_id <> ?
        ORDER BY n.line LIMIT 1""",
        [file_id, file_id],
    ).fetchall()
    if clash:
        line, earlier, earlier_line, *key, clashes = clash[0]
        raise InputError(
            path, _already_loaded(tuple(key), earlier, earlier_line) + more(clashes - 1), where=where(line)
        )
