"""The benchmark as an Inspect AI task: ``inspect eval molp2s_stats/molp2s --model PROVIDER/MODEL``.

Installed with the package (the ``inspect_ai`` entry point in pyproject.toml), so it
runs from any folder. Each sample carries the rendered system and user messages
(``molp2s_stats.prompts``), the target label and, in its metadata, the task id, the
template and the family's candidates. The scorer is the project's own answer parser,
so Inspect's accuracy counts exactly the answers ``molp2s metrics`` counts as right.
Epochs become samples when the log is loaded with ``molp2s load``.

Task arguments (``-T name=value``): ``benchmark`` (a benchmark folder; default the
embedded one), ``channel`` and ``condition`` (comma-separated; ``none`` selects the P0
tasks), ``max_peaks`` (IR and Raman peaks shown).

Reasoning models take Inspect's own generation options: ``--max-tokens`` (which
reasoning counts against on OpenAI and Anthropic), ``--reasoning-effort`` (OpenAI) and
``--reasoning-tokens`` (Anthropic's thinking budget, below ``--max-tokens``). An answer
that stopped at the token limit scores as wrong, as ``molp2s load`` marks it
``truncated``.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate

from .defaults import DEFAULT_BENCHMARK
from .errors import UsageError
from .ingest import read_benchmark
from .ingest.answers import CandidateIndex, parse_answer
from .ingest.staged import TRUNCATION_VALUES
from .prompts import DEFAULT_MAX_PEAKS, render_prompts


def _split(value: str | list[str] | None) -> list[str] | None:
    if value is None:
        return None
    parts = value if isinstance(value, list) else str(value).split(",")
    return [p.strip() for p in parts if p.strip()] or None


def samples(
    benchmark: str | None = None,
    channel: str | None = None,
    condition: str | None = None,
    max_peaks: int = DEFAULT_MAX_PEAKS,
) -> list[Sample]:
    """One Inspect sample per benchmark task (in task-id order)."""
    tables = read_benchmark(benchmark or DEFAULT_BENCHMARK)
    rendered = render_prompts(tables, channels=_split(channel), conditions=_split(condition), max_peaks=int(max_peaks))
    if rendered.height == 0:
        raise UsageError(f"no task matches channel={channel!r} and condition={condition!r}")
    candidates = {}
    for family_id, label, fragment, molecule in (
        tables["candidates"].select("family_id", "label", "fragment", "molecule").iter_rows()
    ):
        candidates.setdefault(family_id, {})[label] = [fragment, molecule]
    return [
        Sample(
            id=row["task_id"],
            input=[ChatMessageSystem(content=row["system"]), ChatMessageUser(content=row["prompt"])],
            target=row["target"],
            metadata={
                "task_id": row["task_id"],
                "family_id": row["family_id"],
                "channel": row["channel"],
                "condition": row["condition"],
                "template": row["template"],
                "candidates": candidates[row["family_id"]],
            },
        )
        for row in rendered.iter_rows(named=True)
    ]


@scorer(metrics=[accuracy(), stderr()])
def molp2s_answer():
    """Right when the parsed answer is the target; the parsed label (or the invalid reason) is kept.

    An answer cut at the token limit is wrong whatever its text names (``truncated``), as
    the loader counts it."""

    async def score(state: TaskState, target: Target) -> Score:
        if state.output.choices and state.output.stop_reason in TRUNCATION_VALUES:
            return Score(value=INCORRECT, answer="", explanation="truncated")
        index = CandidateIndex({label: tuple(pair) for label, pair in state.metadata["candidates"].items()})
        parsed = parse_answer(state.output.completion, index)
        return Score(
            value=CORRECT if parsed.choice == target.text else INCORRECT,
            answer=parsed.choice or "",
            explanation=parsed.reason,
        )

    return score


@task
def molp2s(
    benchmark: str | None = None,
    channel: str | None = None,
    condition: str | None = None,
    max_peaks: int = DEFAULT_MAX_PEAKS,
) -> Task:
    """MolP2SBench: pick the candidate fragment that completes the masked molecule."""
    return Task(
        dataset=MemoryDataset(samples(benchmark, channel, condition, max_peaks), name="molp2s"),
        solver=generate(),
        scorer=molp2s_answer(),
    )
