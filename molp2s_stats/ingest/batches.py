"""Batch-API results as response rows: OpenAI Batch output files and Anthropic Message
Batches results, both JSONL with one result per request.

custom_id → task_id (``molp2s prompts`` writes the task id there); the assistant text →
response; the model that answered → model (``--model`` renames every line); token
usage, finish reason and request ids → metadata.

Reasoning is never the answer. Anthropic's ``thinking`` and ``redacted_thinking`` blocks
are left out of the response (only ``text`` blocks are), and OpenAI-compatible servers'
``reasoning_content`` / ``reasoning`` fields beside the message content are never read as
it; the metadata keeps how many blocks and characters of reasoning there were, not the
text. An answer that stopped at the token limit (OpenAI ``finish_reason: "length"``,
Anthropic ``stop_reason: "max_tokens"``) loads as invalid, ``truncated`` (the loader reads
that from the metadata, see ``staged.cut_by_limit``). A failed request (OpenAI: ``error``
set or a status other than 200; Anthropic: result ``errored``, ``canceled`` or
``expired``) is kept as an invalid answer with reason ``request_failed`` and the
error in its metadata, never dropped. A failed line names no model, so it takes the
one model of the file's other lines; where those name none or several, ``--model``
is required.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import InputError
from .files import json_lines
from .staged import rows_frame

if TYPE_CHECKING:
    import polars as pl

BATCH_FORMATS = ("openai-batch", "anthropic-batch")
ANTHROPIC_FAILED = ("errored", "canceled", "expired")


def batch_format(data: bytes) -> str | None:
    """``openai-batch`` or ``anthropic-batch`` when the first record looks like one's results."""
    first = next((line for line in data.splitlines() if line.strip()), b"")
    try:
        record = json.loads(first)
    except ValueError:
        return None
    if not isinstance(record, dict) or "custom_id" not in record:
        return None
    if "result" in record:
        return "anthropic-batch"
    if "response" in record and (record["response"] is None or isinstance(record["response"], dict)):
        return "openai-batch"
    if "error" in record and "response" not in record:
        return "openai-batch"
    if "body" in record or "params" in record:
        return "batch-requests"
    return None


def _openai(record: dict) -> tuple[str | None, str, str | None, dict]:
    """(model, text, failure, metadata) of one OpenAI Batch output line."""
    response = record.get("response") if isinstance(record.get("response"), dict) else None
    error = record.get("error")
    status = response.get("status_code") if response else None
    body = response.get("body") if response and isinstance(response.get("body"), dict) else {}
    meta = {
        "batch_request_id": record.get("id"),
        "request_id": response.get("request_id") if response else None,
        "status_code": status,
    }
    if error or status != 200:
        detail = error or body.get("error") or {"message": f"status {status}"}
        return None, "", "request_failed", {**meta, "error": detail}
    choices = body.get("choices") or []
    message = choices[0].get("message", {}) if choices and isinstance(choices[0], dict) else {}
    text = message.get("content") or ""
    meta.update(
        usage=body.get("usage"),
        finish_reason=choices[0].get("finish_reason") if choices else None,
        completion_id=body.get("id"),
    )
    # vLLM, DeepSeek and others return reasoning_content, OpenRouter reasoning: its size, never its text
    reasoning = [message[k] for k in ("reasoning_content", "reasoning") if isinstance(message.get(k), str)]
    if reasoning:
        meta["reasoning_chars"] = sum(len(r) for r in reasoning)
    failure = None
    if message.get("refusal"):
        meta["refusal"] = message["refusal"]
        text = text or message["refusal"]
        failure = "refusal"
    return body.get("model"), text, failure, meta


def _anthropic(record: dict) -> tuple[str | None, str, str | None, dict]:
    """(model, text, failure, metadata) of one Anthropic Message Batches result line."""
    result = record.get("result") if isinstance(record.get("result"), dict) else {}
    kind = result.get("type")
    if kind != "succeeded":
        return None, "", "request_failed", {"result_type": kind, "error": result.get("error")}
    message = result.get("message") or {}
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    meta = {
        "result_type": kind,
        "message_id": message.get("id"),
        "usage": message.get("usage"),
        "stop_reason": message.get("stop_reason"),
    }
    thinking = [b for b in blocks if b.get("type") == "thinking"]
    redacted = sum(b.get("type") == "redacted_thinking" for b in blocks)
    if thinking or redacted:  # extended thinking: how much, never what
        meta.update(
            thinking_blocks=len(thinking),
            redacted_thinking_blocks=redacted,
            thinking_chars=sum(len(b.get("thinking") or "") for b in thinking),
        )
    return message.get("model"), text, "refusal" if message.get("stop_reason") == "refusal" else None, meta


def stage_batch_results(path: Path, data: bytes, fmt: str, *, model: str | None = None) -> pl.DataFrame:
    """One batch results file in the loader's standard frame (with ``_failed`` preset for failures)."""
    read = _anthropic if fmt == "anthropic-batch" else _openai
    rows = []
    for line, record in json_lines(path, data):
        where = f"line {line}"
        if not isinstance(record, dict):
            raise InputError(path, "expected a JSON object per line", where=where)
        custom_id = record.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            raise InputError(path, "missing or empty 'custom_id' (the task id)", where=where)
        if ("body" in record or "params" in record) and "result" not in record and "response" not in record:
            raise InputError(
                path, "this is a batch request line (what `molp2s prompts` writes), not a result", where=where
            )
        found = batch_format(json.dumps(record).encode())
        if found != fmt:
            what = f"looks like {found} results" if found in BATCH_FORMATS else "is not a batch result"
            raise InputError(
                path,
                f"read as {fmt}, but the line {what} (expected "
                + ("'result'" if fmt == "anthropic-batch" else "'response' or 'error'")
                + ")",
                where=where,
            )
        answered_by, text, failure, meta = read(record)
        rows.append(
            {
                "_where": where,
                "_line": line,
                "model": answered_by,
                "task_id": custom_id,
                "sample": 0,
                "attempt": 0,
                "response": text,
                "choice": None,
                "_failed": failure,
                "metadata": {**meta, "batch_format": fmt},
            }
        )
    named = sorted({r["model"] for r in rows if r["model"]})
    for row in rows:
        if row["model"]:
            row["metadata"]["api_model"] = row["model"]
        if model:
            row["model"] = model
        elif row["model"] is None:
            if len(named) != 1:
                found = f"the file names {len(named)} models ({', '.join(named)})" if named else "no line names one"
                raise InputError(
                    path,
                    f"a failed request carries no model and {found}; give {{model}}",
                    where=row["_where"],
                    arguments={"model": "the model's name"},
                )
            row["model"] = named[0]
        row["metadata"] = json.dumps(row["metadata"], default=str)
    return rows_frame(rows)
