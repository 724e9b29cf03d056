"""Prompts: golden renderings checked by hand, and the invariants that keep the condition hidden,
over every task of the embedded benchmark."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import hypothesis.strategies as st
import polars as pl
import pytest
from hypothesis import given, settings
from typer.testing import CliRunner

from molp2s_stats import prompts
from molp2s_stats.cli import app
from molp2s_stats.defaults import DEFAULT_BENCHMARK
from molp2s_stats.ingest import read_benchmark
from tests.support import TOY
from tests.support.tiny_benchmark import write_benchmark

runner = CliRunner()

# ------------------------------------------------------------ golden renderings, by kind


@pytest.mark.parametrize(
    ("channel", "value", "expected"),
    [
        ("dipole_norm", 2.346, "Dipole moment: 2.35 D"),  # 2 decimals
        (
            "dipole_vector",
            [1.234, 0.0, 3.0],
            "Dipole moment vector (principal axes of inertia, smallest moment first): x = 1.23 D, y = 0.00 D, z = 3.00 D",
        ),
        # 0.25 Hartree × 27.211386 eV/Hartree = 6.80 eV
        ("gap", 0.25, "HOMO–LUMO gap: 6.80 eV (0.2500 Hartree)"),
        # UV–Vis sorted by energy: 4.5 before 5.25
        (
            "uvvis",
            {"energies": [5.25, 4.5], "strengths": [0.1234, 0.0]},
            "UV–Vis: the lowest 2 excitations (energy in eV, oscillator strength):\n4.50 eV, f = 0.000\n5.25 eV, f = 0.123",
        ),
        ("h1_peaks", {"shieldings": [29.514, 31.2]}, "¹H shieldings (ppm), one per distinct peak: 29.51, 31.20"),
        ("h1_peaks", [29.514, 31.2], "¹H shieldings (ppm), one per distinct peak: 29.51, 31.20"),
        (
            "h1_peaks_int",
            {"shieldings": [29.5, 31.2], "counts": [3, 1]},
            "¹H shieldings (ppm), one per distinct peak, with integrals (nuclei per peak) in parentheses: "
            "29.50 (3H), 31.20 (1H)",
        ),
        (
            "h1_atomwise",
            {"shieldings": [29.5, 29.6, 31.2], "atoms": [2, 2, 4]},
            "¹H shieldings (ppm) of each scaffold hydrogen, labelled with the index of the atom it is bonded to in the "
            "scaffold SMILES (0-based, [*] counted): atom 2: 29.50; atom 2: 29.60; atom 4: 31.20",
        ),
        (
            "c13_peaks_deg",
            {"shieldings": [60.0, 150.25], "counts": [2, 1]},
            "¹³C shieldings (ppm), one per distinct peak, with degeneracies (carbons per peak) in parentheses: "
            "60.00 (×2), 150.25 (×1)",
        ),
        (
            "c13_atomwise",
            {"shieldings": [60.0], "atoms": [1]},
            "¹³C shieldings (ppm) of each scaffold carbon, labelled with the index of the carbon itself in the scaffold "
            "SMILES (0-based, [*] counted): atom 1: 60.00",
        ),
    ],
)
def test_golden_single_channel(channel, value, expected):
    assert prompts.render_property(channel, value) == expected


def test_golden_ir_keeps_the_strongest_peaks_sorted_by_frequency():
    # four peaks, the two strongest are at 1700 (40) and 3000 (10); relative to 40: 100 and 25
    value = {"frequencies": [3000.0, 1700.0, 800.0, 1200.0], "intensities": [10.0, 40.0, 1.0, 2.0]}
    assert prompts.render_property("ir", value, name="IR", max_peaks=2) == (
        "IR spectrum, the 2 strongest peaks, sorted by frequency (frequency in cm⁻¹: IR intensity relative "
        "to the strongest = 100):\n1700: 100.0\n3000: 25.0"
    )


def test_golden_bundle_has_headings_in_channel_order_and_says_when_a_value_is_missing():
    components = [("ir", "IR", "peak_overlap"), ("raman", "Raman", "peak_overlap")]
    block = prompts.property_block(components, {"ir": {"frequencies": [1000.0], "intensities": [5.0]}}, bundle=True)
    assert block == (
        "### IR\nIR spectrum, the 1 strongest peaks, sorted by frequency (frequency in cm⁻¹: "
        "IR intensity relative to the strongest = 100):\n1000: 100.0\n\n### Raman\nRaman: not available"
    )


def test_golden_whole_prompt_of_the_tiny_benchmark(tmp_path):
    # F1: scaffold c1ccc(cc1)[*], candidates A [*]C, B [*]CC, C [*]O; source A with dipole 1.0 D
    tables = read_benchmark(write_benchmark(tmp_path / "bench"))
    rendered = prompts.render_prompts(tables)
    row = rendered.filter(pl.col("task_id") == "F1-dipole_norm-source").row(0, named=True)
    assert row["system"] == prompts.SYSTEM
    assert row["prompt"] == (
        "One fragment of a molecule is masked. In the scaffold SMILES, [*] marks the atom where the masked "
        "fragment attaches.\n\nScaffold: c1ccc(cc1)[*]\n\n"
        "Candidate fragments ([*] marks the atom that bonds to the scaffold):\nA. [*]C\nB. [*]CC\nC. [*]O\n\n"
        "Computed properties of the complete molecule:\nDipole moment: 1.00 D\n\n"
        "Which candidate fragment completes the molecule? Justify your choice in one or two sentences, then give "
        'the letter of your choice alone on the last line, as "Answer: X".'
    )
    p0 = rendered.filter(pl.col("task_id") == "F1-p0").row(0, named=True)
    assert "Computed properties" not in p0["prompt"] and p0["property_text"] is None
    assert row["template"] == prompts.TEMPLATE and re.fullmatch(r"molp2s-prompt-v1@[0-9a-f]{12}", prompts.TEMPLATE)


@settings(max_examples=60, deadline=None)
@given(
    peaks=st.lists(st.tuples(st.floats(100, 4000), st.floats(0.001, 1000)), min_size=1, max_size=60),
    max_peaks=st.integers(1, 30),
)
def test_spectrum_rendering_invariants(peaks, max_peaks):
    value = {"frequencies": [p[0] for p in peaks], "intensities": [p[1] for p in peaks]}
    lines = prompts.render_property("raman", value, name="Raman", max_peaks=max_peaks).split("\n")[1:]
    assert len(lines) == min(max_peaks, len(peaks))
    frequencies = [float(line.split(":")[0]) for line in lines]
    relative = [float(line.split(":")[1]) for line in lines]
    assert frequencies == sorted(frequencies)
    assert max(relative) == 100.0 and all(0 <= r <= 100 for r in relative)


# ------------------------------------------------- invariants over the embedded benchmark


@pytest.fixture(scope="module")
def default_prompts():
    tables = read_benchmark(DEFAULT_BENCHMARK)
    with warnings.catch_warnings():
        # the build deranges each bundle among families with the same components, so a
        # shuffled bundle prompt is exactly its shown family's source text: no warning
        warnings.simplefilter("error")
        return tables, prompts.render_prompts(tables)


def test_a_shuffled_bundle_shown_from_a_family_with_other_components_is_named():
    tables = read_benchmark(DEFAULT_BENCHMARK)
    tasks = tables["tasks"]
    with_nmr = tasks.filter(pl.col("channel") == "h1_peaks")["family_id"].unique().sort()
    without = tasks.filter(~pl.col("family_id").is_in(with_nmr.implode()))["family_id"].unique().sort()
    task = f"{without[0]}-all-shuffled"
    changed = tasks.with_columns(
        pl.when(pl.col("task_id") == task)
        .then(pl.lit(with_nmr[0]))
        .otherwise(pl.col("shown_family"))
        .alias("shown_family")
    )
    with pytest.warns(UserWarning, match=f"1 shuffled bundle task.*{task}"):
        prompts.render_prompts({**tables, "tasks": changed}, channels=["all"], conditions=["shuffled"])


def test_every_task_is_rendered(default_prompts):
    tables, rendered = default_prompts
    assert rendered.height == tables["tasks"].height
    assert rendered["task_id"].n_unique() == rendered.height
    assert rendered.filter(pl.col("condition") != "none")["property_text"].null_count() == 0


_TELLS = re.compile(r"\b(source|shuffled?|counterfactual|cf|condition|target|correct answer)\b", re.I)


def test_no_prompt_names_a_task_a_family_or_a_condition(default_prompts):
    tables, rendered = default_prompts
    assert rendered["system"].n_unique() == 1
    for task_id, family_id, system, prompt in rendered.select("task_id", "family_id", "system", "prompt").iter_rows():
        text = system + prompt
        assert task_id not in text and family_id not in text
        assert not _TELLS.search(text), (task_id, _TELLS.search(text))


def test_conditions_of_a_family_look_alike_outside_the_property_block(default_prompts):
    _, rendered = default_prompts
    shells = rendered.filter(pl.col("condition") != "none").with_columns(
        pl.struct("prompt", "property_text")
        .map_elements(lambda r: r["prompt"].replace(r["property_text"], "<properties>", 1), return_dtype=pl.String)
        .alias("shell")
    )
    per_family = shells.group_by("family_id").agg(pl.col("shell").n_unique().alias("shells"))
    assert per_family["shells"].max() == 1
    p0 = rendered.filter(pl.col("condition") == "none").select("family_id", pl.col("prompt").alias("p0"))
    joined = shells.join(p0, on="family_id")
    # P0 is the same prompt without the property section
    assert all(
        s.replace("Computed properties of the complete molecule:\n<properties>\n\n", "") == p
        for s, p in joined.select("shell", "p0").iter_rows()
    )


def test_a_shuffled_task_shows_its_shown_familys_source_text(default_prompts):
    tables, rendered = default_prompts
    text = dict(rendered.select("task_id", "property_text").iter_rows())
    tasks = tables["tasks"]
    source = {
        (f, c): t
        for t, f, c in tasks.filter(pl.col("condition") == "source")
        .select("task_id", "family_id", "channel")
        .iter_rows()
    }
    shuffled = tasks.filter(pl.col("condition") == "shuffled")
    assert shuffled.height > 0
    for task_id, shown_family, channel in shuffled.select("task_id", "shown_family", "channel").iter_rows():
        assert text[task_id] == text[source[(shown_family, channel)]]


def test_every_channel_of_the_toy_benchmark_renders_its_kind():
    tables = read_benchmark(TOY)
    rendered = prompts.render_prompts(tables, conditions=["source"])
    words = {
        "dipole_norm": "Dipole moment:",
        "dipole_vector": "vector",
        "gap": "eV (",
        "uvvis": "oscillator",
        "ir": "cm⁻¹",
        "raman": "Raman activity",
        "h1_peaks": "¹H",
        "c13_atomwise": "¹³C",
        "nmr_bundle": "### ¹³C atomwise",
        "all": "### Dipole norm",
    }
    for channel, word in words.items():
        texts = rendered.filter(pl.col("channel") == channel)["property_text"].to_list()
        assert texts and all(word in t for t in texts), channel


# ------------------------------------------------------------------ exports


def test_prompts_command_writes_all_five_formats(tmp_path):
    bench = write_benchmark(tmp_path / "bench")
    for fmt in prompts.EXPORT_FORMATS:
        out = tmp_path / f"prompts.{fmt}"
        result = runner.invoke(
            app,
            [
                "prompts",
                "--benchmark",
                str(bench),
                "--format",
                fmt,
                "--model",
                "my-model",
                "--max-tokens",
                "256",
                "--out",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
        assert out.exists()
    table = pl.read_parquet(tmp_path / "prompts.parquet")
    assert table.columns == ["task_id", "system", "prompt", "channel", "condition", "template"]
    assert (
        pl.read_csv(tmp_path / "prompts.csv").height
        == table.height
        == pl.read_ndjson(tmp_path / "prompts.jsonl").height
    )
    openai = [json.loads(line) for line in (tmp_path / "prompts.openai-batch").read_text().splitlines()]
    first = openai[0]
    assert first["method"] == "POST" and first["url"] == "/v1/chat/completions"
    assert first["body"]["model"] == "my-model" and first["body"]["max_completion_tokens"] == 256
    assert [m["role"] for m in first["body"]["messages"]] == ["system", "user"]
    anthropic = [json.loads(line) for line in (tmp_path / "prompts.anthropic-batch").read_text().splitlines()]
    assert anthropic[0]["params"]["max_tokens"] == 256 and anthropic[0]["params"]["system"] == prompts.SYSTEM
    assert {line["custom_id"] for line in anthropic} == set(table["task_id"])
    manifest = json.loads((tmp_path / "prompts.anthropic-batch.manifest.json").read_text())
    assert manifest["template"] == prompts.TEMPLATE and manifest["tasks"] == table.height


def test_prompts_filter_by_channel_and_condition(tmp_path):
    bench = write_benchmark(tmp_path / "bench")
    out = tmp_path / "p.jsonl"
    result = runner.invoke(
        app,
        [
            "prompts",
            "--benchmark",
            str(bench),
            "--channel",
            "none",
            "--channel",
            "dipole_norm",
            "--condition",
            "none",
            "--condition",
            "cf",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert set(pl.read_ndjson(out)["condition"]) == {"none", "cf"}


def test_batch_export_needs_a_model_and_refuses_a_bad_custom_id(tmp_path):
    bench = write_benchmark(tmp_path / "bench")
    result = runner.invoke(
        app, ["prompts", "--benchmark", str(bench), "--format", "openai-batch", "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 2 and "needs --model" in result.output
    tasks = pl.read_csv(bench / "tasks.csv").with_columns(
        pl.when(pl.col("task_id") == "F1-p0")
        .then(pl.lit("F1 p0 (first)"))
        .otherwise(pl.col("task_id"))
        .alias("task_id")
    )
    tasks.write_csv(bench / "tasks.csv")
    result = runner.invoke(
        app,
        [
            "prompts",
            "--benchmark",
            str(bench),
            "--format",
            "anthropic-batch",
            "--model",
            "claude",
            "--out",
            str(tmp_path / "y"),
        ],
    )
    assert result.exit_code == 2 and "'F1 p0 (first)'" in result.output and "custom_id" in result.output


def test_source_and_cf_tasks_without_a_shown_family_show_their_own_candidate(tmp_path):
    # the loader accepts a null shown_family on source and cf tasks: they show the target's values
    tables = read_benchmark(write_benchmark(tmp_path / "bench"))
    blank = tables["tasks"].with_columns(
        pl.when(pl.col("condition").is_in(["source", "cf"])).then(None).otherwise(pl.col(c)).alias(c)
        for c in ("shown_family", "shown_label")
    )
    expected = prompts.render_prompts(tables)
    got = prompts.render_prompts({**tables, "tasks": blank})
    assert got.equals(expected)
    broken = tables["tasks"].with_columns(
        pl.when(pl.col("condition") == "shuffled").then(None).otherwise(pl.col("shown_family")).alias("shown_family")
    )
    with pytest.raises(ValueError, match="shuffled task needs its shown_family"):
        prompts.render_prompts({**tables, "tasks": broken})


def test_a_spectrum_without_a_positive_peak_is_refused_by_channel():
    with pytest.raises(ValueError, match="'ir'"):
        prompts.render_property("ir", {"frequencies": [1000.0], "intensities": [0.0]})
    with pytest.raises(ValueError, match="'raman'"):
        prompts.render_property("raman", {"frequencies": [], "intensities": []})


# ------------------------------------------------------------ reasoning models: requests the SDKs accept


def _strict_validator(request_type):
    """A validator of the SDK's request TypedDict that refuses what the API refuses and pydantic
    lets through by default: unknown keys (at every depth), a number given as text, and the
    items of an ``Iterable`` field (pydantic validates those lazily, i.e. not at all here)."""
    from pydantic import TypeAdapter
    from pydantic_core import SchemaValidator

    schema = TypeAdapter(request_type).core_schema

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "typed-dict":
                node["extra_behavior"] = "forbid"
            elif node.get("type") == "generator":
                node["type"] = "list"
            elif node.get("type") in ("int", "float", "str", "bool"):
                node["strict"] = True
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return SchemaValidator(schema)


@pytest.fixture(scope="module")
def sdk_validators():
    """One validator per batch format, built on the official SDKs' own request types."""
    from typing import Literal, get_type_hints

    from anthropic.types.messages.batch_create_params import Request
    from openai.types import batch_create_params
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from typing_extensions import TypedDict

    # the SDK types the body and the batch's endpoint; a Batch API input line wraps them
    endpoint = get_type_hints(batch_create_params.BatchCreateParams)["endpoint"]
    line_type = TypedDict(  # noqa: UP013 (the url type is read from the SDK at run time)
        "OpenAIBatchLine",
        {
            "custom_id": str,
            "method": Literal["POST"],
            "url": endpoint,
            "body": CompletionCreateParamsNonStreaming,
        },
    )
    return {"openai-batch": _strict_validator(line_type), "anthropic-batch": _strict_validator(Request)}


def _export(tmp_path, *flags, fmt="openai-batch", model="a-model"):
    bench = tmp_path / "bench"
    if not bench.exists():
        write_benchmark(bench)
    out = tmp_path / f"requests-{len(list(tmp_path.glob('requests-*')))}.jsonl"
    result = runner.invoke(
        app, ["prompts", "--benchmark", str(bench), "--format", fmt, "--model", model, "--out", str(out), *flags]
    )
    if result.exit_code != 0:
        return result, None, None
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return result, lines, json.loads(Path(f"{out}.manifest.json").read_text())


@pytest.mark.parametrize(
    ("fmt", "flags"),
    [
        ("openai-batch", []),
        *[("openai-batch", ["--reasoning-effort", effort]) for effort in prompts.REASONING_EFFORTS],
        ("openai-batch", ["--reasoning-effort", "high", "--max-tokens", "64000"]),
        ("anthropic-batch", []),
        ("anthropic-batch", ["--thinking-budget", "1024"]),
        ("anthropic-batch", ["--thinking-budget", "16000", "--max-tokens", "20000"]),
    ],
)
def test_every_request_line_validates_against_the_official_sdk_types(tmp_path, sdk_validators, fmt, flags):
    result, lines, _ = _export(tmp_path, *flags, fmt=fmt)
    assert result.exit_code == 0, result.output
    assert len(lines) == 22  # every task of the tiny benchmark
    for line in lines:
        sdk_validators[fmt].validate_python(line)
        if fmt == "anthropic-batch" and "thinking" in line["params"]:
            # what the SDK's types cannot say: Anthropic's budget is at least 1024 and below max_tokens
            assert 1024 <= line["params"]["thinking"]["budget_tokens"] < line["params"]["max_tokens"]


@pytest.mark.parametrize(
    ("fmt", "spoil"),
    [
        ("openai-batch", lambda line: line["body"].update(max_tokens_to_sample=10)),  # a field it lacks
        ("openai-batch", lambda line: line["body"].update(reasoning_effort="extreme")),  # not an effort
        ("openai-batch", lambda line: line["body"].update(max_completion_tokens="1024")),  # text, not a number
        ("openai-batch", lambda line: line["body"]["messages"][0].update(role="robot")),  # inside an Iterable
        ("openai-batch", lambda line: line.update(url="/v1/chat")),  # not an endpoint
        ("openai-batch", lambda line: line["body"].update(thinking={"type": "enabled", "budget_tokens": 2048})),
        ("anthropic-batch", lambda line: line["params"].update(max_completion_tokens=10)),  # OpenAI's name
        ("anthropic-batch", lambda line: line["params"].update(thinking={"type": "enabled"})),  # no budget
        ("anthropic-batch", lambda line: line["params"].pop("max_tokens")),  # required
        ("anthropic-batch", lambda line: line["params"]["messages"][0].update(role="robot")),
    ],
)
def test_the_sdk_validation_refuses_a_spoilt_line(tmp_path, sdk_validators, fmt, spoil):
    from pydantic_core import ValidationError

    _, lines, _ = _export(tmp_path, fmt=fmt)
    line = json.loads(json.dumps(lines[0]))
    sdk_validators[fmt].validate_python(line)  # as exported: accepted
    spoil(line)
    with pytest.raises(ValidationError):
        sdk_validators[fmt].validate_python(line)


def test_reasoning_efforts_are_values_the_openai_sdk_takes():
    from typing import get_args

    from openai.types.shared.reasoning_effort import ReasoningEffort

    allowed = {value for arg in get_args(ReasoningEffort) for value in get_args(arg)}
    assert {"low", "medium", "high", "minimal"} <= set(prompts.REASONING_EFFORTS) <= allowed


@pytest.mark.parametrize(
    ("fmt", "flags", "max_tokens", "field", "rule"),
    [
        # no reasoning: the short answer alone
        ("openai-batch", [], 1024, "max_completion_tokens", "answer"),
        ("anthropic-batch", [], 1024, "max_tokens", "answer"),
        # "none" asks a reasoning model not to reason: the answer's limit again
        ("openai-batch", ["--reasoning-effort", "none"], 1024, "max_completion_tokens", "answer"),
        ("openai-batch", ["--reasoning-effort", "low"], 32768, "max_completion_tokens", "openai_reasoning"),
        # 8000 thinking + 1024 for the answer = 9024
        ("anthropic-batch", ["--thinking-budget", "8000"], 9024, "max_tokens", "anthropic_thinking"),
    ],
)
def test_the_default_token_limit_leaves_room_for_reasoning(tmp_path, fmt, flags, max_tokens, field, rule):
    result, lines, manifest = _export(tmp_path, *flags, fmt=fmt)
    assert result.exit_code == 0, result.output
    where = "body" if fmt == "openai-batch" else "params"
    assert {line[where][field] for line in lines} == {max_tokens}
    assert manifest["max_tokens"] == max_tokens and manifest["max_tokens_default"] == prompts.MAX_TOKENS_RULES[rule]
    assert f"max tokens {max_tokens}" in result.output


def test_the_manifest_records_the_reasoning_options(tmp_path):
    _, lines, manifest = _export(
        tmp_path, "--thinking-budget", "4000", "--max-tokens", "6000", fmt="anthropic-batch", model="claude-x"
    )
    assert lines[0]["params"]["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert {
        k: manifest[k]
        for k in ("format", "model", "max_tokens", "max_tokens_default", "reasoning_effort", "thinking_budget", "tasks")
    } == {
        "format": "anthropic-batch",
        "model": "claude-x",
        "max_tokens": 6000,
        "max_tokens_default": None,
        "reasoning_effort": None,
        "thinking_budget": 4000,
        "tasks": 22,
    }
    _, lines, manifest = _export(tmp_path, "--reasoning-effort", "high", model="o3")
    assert lines[0]["body"]["reasoning_effort"] == "high" and "thinking" not in lines[0]["body"]
    assert (manifest["reasoning_effort"], manifest["thinking_budget"], manifest["max_tokens"]) == ("high", None, 32768)
    _, lines, _ = _export(tmp_path)  # without the flags, the requests are as before
    assert set(lines[0]["body"]) == {"model", "max_completion_tokens", "messages"}


@pytest.mark.parametrize(
    ("fmt", "flags", "message"),
    [
        (
            "anthropic-batch",
            ["--reasoning-effort", "high"],
            "error: --reasoning-effort is OpenAI's; for Anthropic's extended thinking give --thinking-budget TOKENS",
        ),
        (
            "openai-batch",
            ["--thinking-budget", "2048"],
            "error: --thinking-budget is Anthropic's extended thinking; for OpenAI reasoning models give "
            "--reasoning-effort",
        ),
        (
            "openai-batch",
            ["--reasoning-effort", "extreme"],
            "error: --reasoning-effort must be one of none, minimal, low, medium, high, xhigh, max, got 'extreme'",
        ),
        (
            "anthropic-batch",
            ["--thinking-budget", "1000"],
            "error: --thinking-budget must be at least 1024 tokens (Anthropic's minimum), got 1000",
        ),
        (
            "anthropic-batch",
            ["--thinking-budget", "4096", "--max-tokens", "4096"],
            "error: --thinking-budget (4096) must be less than --max-tokens (4096): thinking counts against max_tokens, "
            "and the answer needs room after it (leave --max-tokens out for 5120)",
        ),
        ("openai-batch", ["--max-tokens", "0"], "error: --max-tokens must be at least 1"),
        (
            "jsonl",
            ["--reasoning-effort", "low"],
            "error: --reasoning-effort goes into batch requests; a table export holds only the prompts (use --format "
            "openai-batch or anthropic-batch, or set it in the harness that sends the prompts)",
        ),
    ],
)
def test_flag_combinations_the_api_would_refuse_are_refused_by_name(tmp_path, fmt, flags, message):
    result, _, _ = _export(tmp_path, *flags, fmt=fmt)
    assert result.exit_code == 2
    assert result.output.strip() == message
    assert not list(tmp_path.glob("requests-*"))  # nothing written


@settings(max_examples=200, deadline=None)
@given(budget=st.integers(1024, 500_000), given_limit=st.one_of(st.none(), st.integers(1, 600_000)))
def test_a_thinking_budget_is_always_below_the_token_limit_or_refused(budget, given_limit):
    from molp2s_stats.errors import UsageError

    try:
        limit = prompts.check_request_options(api="anthropic", max_tokens=given_limit, thinking_budget=budget)
    except UsageError as exc:
        assert given_limit is not None and given_limit <= budget and "must be less than max_tokens" in str(exc)
    else:
        assert budget < limit and limit == (given_limit or budget + prompts.ANSWER_TOKENS)


def test_the_help_states_the_defaults_the_export_uses():
    # the CLI imports prompts lazily, so its help spells the numbers out: they must stay the same
    text = " ".join(runner.invoke(app, ["prompts", "--help"]).output.replace("│", " ").split())
    assert f"Default: {prompts.ANSWER_TOKENS} for the short answer" in text
    assert f"{prompts.OPENAI_REASONING_TOKENS} with --reasoning-effort" in text
    assert f"the thinking budget + {prompts.ANSWER_TOKENS} with --thinking-budget" in text
    assert " | ".join(prompts.REASONING_EFFORTS) in text
