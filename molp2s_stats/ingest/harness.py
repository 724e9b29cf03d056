"""Evaluation-harness logs as response rows: Inspect AI logs (.eval, .json) and
lm-evaluation-harness sample files (``--log_samples`` JSONL).

Both come out as the loader's standard frame (``_where, _line, model, task_id,
sample, attempt, response, choice, metadata``) and go through the same checks as
any response file: unknown task ids, duplicates and unparseable answers are named
by file and sample or line.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from .errors import InputError
from .files import json_lines
from .staged import rows_frame


def stage_inspect(path: Path, *, task_ids: dict[str, str] | None = None) -> pl.DataFrame:
    """An Inspect AI log, read with inspect_ai's own reader.

    model ← the log's model; task_id ← the sample's ``task_id`` metadata, else the
    sample id (or ``task_ids[sample id]`` when a mapping is given); sample ← epoch − 1
    (epochs count from 1, samples from 0); response ← the final completion (its text
    parts: reasoning parts are never the answer, only their count and length are kept).
    Scores (value and extracted answer per scorer), the sample id, the epoch, the stop
    reason and any sample error or limit are kept as metadata. A sample that errored
    without output is kept as an invalid answer (request_failed); one that stopped on a
    sample limit, or whose generation stopped at the token limit (stop reason
    ``max_tokens`` or ``model_length``), as ``truncated``: nothing is dropped.
    """
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # inspect_ai raises many kinds; the user needs the file and the reason
        raise InputError(path, f"not a readable Inspect AI log ({type(exc).__name__}: {exc})") from exc
    if not log.samples:
        raise InputError(path, f"Inspect AI log holds no samples (status {log.status!r})")
    model = log.eval.model
    rows = []
    for position, sample in enumerate(log.samples, start=1):
        where = f"sample {position} (id {sample.id!r}, epoch {sample.epoch})"
        metadata = sample.metadata or {}
        if task_ids is not None:
            if str(sample.id) not in task_ids:
                raise InputError(path, f"sample id {sample.id!r} is not in the task-id mapping", where=where)
            task_id = task_ids[str(sample.id)]
        else:
            task_id = metadata.get("task_id", sample.id)
        output = sample.output
        completion = output.completion if output is not None else ""
        scores = {name: {"value": score.value, "answer": score.answer} for name, score in (sample.scores or {}).items()}
        extra = {
            "inspect_sample_id": sample.id,
            "epoch": sample.epoch,
            "scores": scores,
            "error": sample.error.message if sample.error is not None else None,
        }
        if output is not None and output.choices:
            extra["stop_reason"] = output.stop_reason  # max_tokens / model_length mark it truncated
            content = output.message.content
            reasoning = (
                [part for part in content if getattr(part, "type", None) == "reasoning"]
                if isinstance(content, list)
                else []
            )
            if reasoning:
                extra.update(reasoning_parts=len(reasoning), reasoning_chars=sum(len(p.reasoning) for p in reasoning))
        if sample.limit is not None:
            extra["limit"] = {"type": sample.limit.type, "limit": sample.limit.limit}
        if "template" in metadata:  # the prompt template the molp2s Inspect task rendered
            extra["template"] = metadata["template"]
        if sample.error is not None and not completion:
            failed = "request_failed"
        elif sample.limit is not None:  # a token, time or message limit stopped the sample before it finished
            failed = "truncated"
        else:
            failed = None
        rows.append(
            {
                "_where": where,
                "_line": position,
                "model": model,
                "task_id": str(task_id),
                "sample": sample.epoch - 1,
                "attempt": 0,
                "response": completion or "",
                "choice": None,
                "_failed": failed,
                "metadata": json.dumps(extra, default=str),
            }
        )
    return rows_frame(rows)


def is_lm_eval_samples(data: bytes) -> bool:
    """Whether a JSONL file looks like lm-evaluation-harness ``--log_samples`` output."""
    first = next((line for line in data.splitlines() if line.strip()), b"")
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and "doc_id" in record and ("resps" in record or "filtered_resps" in record)


def _texts(value) -> list[str] | None:
    """lm-eval nests answers: ``resps`` is [[text], ...] (one list per request, several texts
    with repeats), ``filtered_resps`` [text, ...]. Returns the texts, or None if any is not text."""
    flat = []
    stack = [value]
    while stack:
        item = stack.pop(0)
        if isinstance(item, list):
            stack = list(item) + stack
        elif isinstance(item, str):
            flat.append(item)
        else:
            return None
    return flat


def stage_lm_eval(path: Path, data: bytes, *, model: str | None = None) -> pl.DataFrame:
    """lm-evaluation-harness samples: task_id ← ``doc.task_id``, else ``doc_id``; response ←
    ``filtered_resps`` (the harness's filtered answer), else ``resps``; with repeats,
    the i-th text is sample i.

    The samples file does not name the model; lm-eval writes it under
    ``<output_path>/<model>/samples_<task>_<time>.jsonl``, so the folder name is the
    default and ``model`` overrides it.
    """
    model = model or path.parent.name
    rows = []
    for line, record in json_lines(path, data):
        where = f"line {line}"
        if not isinstance(record, dict):
            raise InputError(path, "expected a JSON object per line", where=where)
        if "doc_id" not in record:
            raise InputError(path, "missing required field 'doc_id'", where=where)
        doc = record.get("doc") if isinstance(record.get("doc"), dict) else {}
        task_id = doc.get("task_id", record["doc_id"])
        # filtered_resps is the harness's extracted answer; resps only where no filter ran
        field = "filtered_resps" if record.get("filtered_resps") is not None else "resps"
        texts = _texts(record.get(field))
        if not texts:
            raise InputError(path, f"no text in {field!r}", where=where)
        # lm-eval does not record why generation stopped; a finish_reason or stop_reason, should a
        # version write one, is kept, and a cut answer then loads as truncated like any other
        extra = {
            k: record[k]
            for k in ("doc_id", "target", "filter", "metrics", "acc", "exact_match", "finish_reason", "stop_reason")
            if k in record
        }
        # several texts (lm-eval's repeats) are several samples of the same task
        for sample, text in enumerate(texts):
            rows.append(
                {
                    "_where": where,
                    "_line": line,
                    "model": model,
                    "task_id": str(task_id),
                    "sample": sample,
                    "attempt": 0,
                    "response": text,
                    "choice": None,
                    "metadata": json.dumps({**extra, "answer_field": field}, default=str),
                }
            )
    return rows_frame(rows)
