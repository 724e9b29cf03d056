"""The loader's standard staged frame: what every response format is read into first."""

from __future__ import annotations

import polars as pl

# ``_where`` and ``_line`` say where a row came from (for errors and for the stored line);
# ``_failed`` is an invalid reason the source itself gives, whatever the text says: a harness
# or batch request that failed (request_failed), an API-flagged refusal (refusal), an
# answer cut off by a limit (truncated)
STANDARD_SCHEMA = {
    "_where": pl.String,
    "_line": pl.Int64,
    "model": pl.String,
    "task_id": pl.String,
    "sample": pl.Int64,
    "attempt": pl.Int64,
    "response": pl.String,
    "choice": pl.String,
    "metadata": pl.String,
    "_failed": pl.String,
}

# How APIs say that generation stopped at the token limit (or the context window) rather
# than where the model chose to stop: OpenAI and the servers that copy its API, finish_reason
# "length"; Anthropic, stop_reason "max_tokens" or "model_context_window_exceeded"; Inspect,
# "max_tokens" or "model_length"; Gemini, finishReason "MAX_TOKENS". Compared in lower case.
TRUNCATION_FIELDS = ("finish_reason", "stop_reason", "finishReason")
TRUNCATION_VALUES = ("length", "max_tokens", "model_length", "model_context_window_exceeded")


def rows_frame(rows: list[dict]) -> pl.DataFrame:
    """Staged rows (dicts) as the standard frame; ``_failed`` is optional per row."""
    return pl.DataFrame([{"_failed": None, **row} for row in rows], schema=STANDARD_SCHEMA, orient="row")


def cut_by_limit() -> pl.Expr:
    """Whether a row's metadata says its answer was cut at the token limit.

    Reads ``finish_reason``, ``stop_reason`` or ``finishReason`` at the top of the metadata
    JSON (a raw file's extra columns, or what a batch or harness reader kept), or inside a
    field named ``metadata`` (a raw file that nests its extras there).
    """
    says = [
        pl.col("metadata").str.json_path_match(f"${where}.{field}").str.to_lowercase().is_in(TRUNCATION_VALUES)
        for field in TRUNCATION_FIELDS
        for where in ("", ".metadata")
    ]
    return pl.any_horizontal(says).fill_null(False)


def mark_truncated(staged: pl.DataFrame) -> pl.DataFrame:
    """``_failed`` set to ``truncated`` where the metadata says the limit cut the answer and
    no reader has set a reason already (a failure or a refusal stands)."""
    # one plain substring scan first: a file whose metadata never names the fields (most
    # raw files, and every streamed batch without extras) is spared the JSON reads
    named = staged["metadata"].str.contains("|".join(TRUNCATION_FIELDS)).any()
    if not named:
        return staged
    return staged.with_columns(
        pl.when(pl.col("_failed").is_null() & cut_by_limit())
        .then(pl.lit("truncated"))
        .otherwise(pl.col("_failed"))
        .alias("_failed")
    )
