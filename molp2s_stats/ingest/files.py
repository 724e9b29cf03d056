"""Reading one table file (.parquet, .jsonl, .csv) into a polars frame with positions.

Every frame comes back with a ``_where`` column ("line 7" for JSONL, "row 7" for CSV
and Parquet, both 1-based, CSV rows counted after the header) so that later checks
can name the offending line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from .errors import InputError

FORMATS = {
    ".parquet": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".eval": "inspect",
    ".json": "inspect",
}
# What `--format` accepts: the suffix-implied ones, and lm-eval (JSONL that auto-detection also recognises).
FORMAT_NAMES = ("jsonl", "csv", "parquet", "inspect", "lm-eval", "openai-batch", "anthropic-batch")


def file_format(path: Path) -> str:
    """The format implied by the file's suffix, or an InputError."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            path,
            f"unknown file type {path.suffix!r}; expected .parquet, .jsonl, .csv, .eval or .json (Inspect AI logs)",
        )
    return fmt


def _looks_like_inspect_log(path: Path) -> bool:
    """A .json file in a folder counts as a response file only if it is an Inspect AI log
    (lm-eval writes its aggregate results_*.json beside the samples)."""
    with path.open("rb") as handle:
        head = handle.read(4096)
    return b'"eval"' in head and b'"version"' in head


def expand(paths: list[Path]) -> list[Path]:
    """Response files: each folder replaced by the response files directly in it, each
    pattern (``runs/*.jsonl``, quoted so that the shell passes it on) by its matches, sorted.

    In a folder, .json files that are not Inspect AI logs are passed over; a path given
    by name is always read, so a wrong file there is an error, not a skip.
    """
    files = []
    for path in paths:
        if not path.exists() and any(c in str(path) for c in "*?["):  # a quoted glob the shell left alone
            root = Path(path.anchor) if path.is_absolute() else Path(".")
            matched = sorted(
                p for p in root.glob(str(path.relative_to(root)) if path.is_absolute() else str(path)) if p.is_file()
            )
            if not matched:
                raise InputError(path, "no file matches this pattern")
            files += matched
            continue
        if path.is_dir() and path.suffix.lower() not in FORMATS:
            found = sorted(
                p
                for p in path.iterdir()
                if p.is_file()
                and p.suffix.lower() in FORMATS
                and (p.suffix.lower() != ".json" or _looks_like_inspect_log(p))
            )
            if not found:
                raise InputError(path, "folder holds no response files (.jsonl, .csv, .parquet, .eval, .json)")
            files += found
        else:
            files.append(path)
    return files


def read_bytes(path: Path) -> bytes:
    """The file's bytes; an empty file is an error."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read file ({exc.strerror})") from exc
    if not data.strip():
        raise InputError(path, "file is empty")
    return data


# No response or benchmark record comes near this; a longer line is a broken or hostile
# file, and decoding and parsing it would cost several times its size in memory.
MAX_LINE_BYTES = 64 * 2**20


def check_line_lengths(path: Path, data: bytes) -> None:
    """Refuse a line longer than MAX_LINE_BYTES, naming it (numpy scans 1 GB in about a second)."""
    if len(data) <= MAX_LINE_BYTES:
        return
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    bounds = np.concatenate(([-1], ends, [len(data)]))
    lengths = np.diff(bounds) - 1
    longest = int(np.argmax(lengths))
    if lengths[longest] > MAX_LINE_BYTES:
        raise InputError(
            path,
            f"line is {lengths[longest]:,} bytes long; at most {MAX_LINE_BYTES:,} are accepted",
            where=f"line {longest + 1}",
        )


def check_utf8(path: Path, data: bytes) -> None:
    """Text formats must be UTF-8; name the line of the first bad byte.

    Every text format comes through here first, so the line-length guard runs here too.
    """
    check_line_lengths(path, data)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            path, f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})", where=f"line {line}"
        ) from None


def json_lines(path: Path, data: bytes) -> list[tuple[int, object]]:
    """Decode a small JSONL file line by line: (line number, JSON value); blank lines skipped."""
    check_utf8(path, data)
    records = []
    # split on "\n" only: str.splitlines() would also break at U+2028, legal inside JSON strings
    for number, line in enumerate(data.decode("utf-8").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(
                path, f"malformed JSON ({exc.msg} at column {exc.colno})", where=f"line {number}"
            ) from None
    return records


def check_no_nul(path: Path, data: bytes) -> None:
    """A NUL byte has no place in a text table; name its line."""
    position = data.find(b"\x00")
    if position >= 0:
        line = data.count(b"\n", 0, position) + 1
        raise InputError(path, "contains a NUL byte", where=f"line {line}")


def read_csv_text(path: Path, data: bytes) -> pl.DataFrame:
    """A CSV file with every column read as text, so that no value is coerced unseen."""
    check_utf8(path, data)
    check_no_nul(path, data)
    try:
        header = next(csv.reader(io.StringIO(data.decode("utf-8-sig").split("\n", 1)[0])), [])
    except csv.Error as exc:  # a lone carriage return inside the first line (old Mac line endings), say
        reason = "a carriage return inside it: lines must end in \\n or \\r\\n" if "new-line" in str(exc) else str(exc)
        raise InputError(path, f"the header is not a CSV line ({reason})", where="line 1") from None
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InputError(path, f"column {repeated[0]!r} appears more than once in the header", where="line 1")
    try:
        frame = pl.read_csv(io.BytesIO(data), infer_schema=False)
    except Exception as exc:  # polars raises several error types for malformed CSV
        raise InputError(path, f"not a readable CSV file ({exc})") from None
    return (
        frame.with_row_index("_row", offset=1)
        .with_columns(("row " + pl.col("_row").cast(pl.String)).alias("_where"))
        .drop("_row")
    )


# A Parquet file is read, checked and appended this many rows at a time, so that memory
# stays flat however large the file.
PARQUET_BATCH_ROWS = 1_000_000


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read in pieces (a response file can be larger than memory)."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            head = handle.read(1024)
            if not head.strip():
                raise InputError(path, "file is empty")
            digest.update(head)
            while chunk := handle.read(8 * 2**20):
                digest.update(chunk)
    except OSError as exc:
        raise InputError(path, f"cannot read file ({exc.strerror})") from exc
    return digest.hexdigest()


def parquet_batches(path: Path, batch_rows: int | None = None) -> Iterator[pl.DataFrame]:
    """A Parquet file ``batch_rows`` rows at a time, each row with its ``_where`` (``row N``).

    The types are those ``read_parquet`` gives, batch after batch; a truncated or
    corrupt file is an InputError, whichever batch finds it.
    """
    batch_rows = batch_rows or PARQUET_BATCH_ROWS
    try:
        scan = pl.scan_parquet(path)
        total = scan.select(pl.len()).collect().item()
    except Exception as exc:  # polars/arrow raise several error types for corrupt files
        raise InputError(path, f"not a readable Parquet file ({exc})") from None
    if total == 0:
        raise InputError(path, "file has no rows")
    for start in range(0, total, batch_rows):
        try:
            frame = scan.slice(start, batch_rows).collect()
        except Exception as exc:
            raise InputError(path, f"not a readable Parquet file ({exc})") from None
        yield (
            frame.with_row_index("_row", offset=start + 1)
            .with_columns(("row " + pl.col("_row").cast(pl.String)).alias("_where"))
            .drop("_row")
        )


def read_parquet(path: Path) -> pl.DataFrame:
    """A Parquet file as stored; a truncated or corrupt file is an InputError."""
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars/arrow raise several error types for corrupt files
        raise InputError(path, f"not a readable Parquet file ({exc})") from None
    if frame.height == 0:
        raise InputError(path, "file has no rows")
    return (
        frame.with_row_index("_row", offset=1)
        .with_columns(("row " + pl.col("_row").cast(pl.String)).alias("_where"))
        .drop("_row")
    )
