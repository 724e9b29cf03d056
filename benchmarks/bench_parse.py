#!/usr/bin/env python
"""Benchmark: the answer parser against a careful reading of real completions (target: ≥ 99.5 %, no wrong letter).

Runs ``parse.parse_answer`` over every completion in ``benchmarks/data/parse_corpus/completions.jsonl``
(real model outputs to chemistry multiple-choice questions, with one engineer's reading of each; see the
README beside it) and prints the agreement, every wrong letter (the parser names a letter the reading
does not, or a letter where the reading is invalid) and the misses by answer style. Figures are given
for the whole corpus and for each split: ``tune`` (the rules were adjusted on its misses), ``holdout``
(read with it, never tuned on) and ``late`` (read after the rules were written).

    .venv/bin/python benchmarks/bench_parse.py [--show-misses]

Exits 1 when a target is missed, so a regression shows in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from molp2s_stats.ingest.answers import CandidateIndex, ParsedAnswer, parse_answer

CORPUS = Path(__file__).resolve().parent / "data" / "parse_corpus" / "completions.jsonl"
TARGET_AGREEMENT = 99.5


def read_corpus(path: Path) -> list[dict]:
    """The corpus items, without the header line."""
    with path.open(encoding="utf-8") as lines:
        return [item for item in map(json.loads, lines) if "_header" not in item]


def expected(item: dict) -> ParsedAnswer:
    return ParsedAnswer(item["expected_choice"], item["expected_reason"])


def run(items: list[dict]) -> list[tuple[dict, ParsedAnswer]]:
    """Parse every item against an index of its offered labels (the options are text, not SMILES)."""
    indexes: dict[tuple[str, ...], CandidateIndex] = {}
    results = []
    for item in items:
        labels = tuple(item["labels"])
        index = indexes.setdefault(labels, CandidateIndex({label: ("", "") for label in labels}))
        results.append((item, parse_answer(item["text"], index)))
    return results


def summarise(name: str, results: list[tuple[dict, ParsedAnswer]]) -> tuple[float, int]:
    agree = sum(expected(item) == got for item, got in results)
    wrong = [(item, got) for item, got in results if got.choice is not None and got.choice != item["expected_choice"]]
    share = 100 * agree / len(results) if results else 100.0
    print(f"  {name:<10} {len(results):4d} items   agreement {share:6.2f} %   wrong letters {len(wrong)}")
    return share, len(wrong)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--show-misses", action="store_true", help="print the tail of every missed completion")
    parser.add_argument(
        "--list", choices=("all", "tune", "holdout", "late"), default="all", help="whose misses to list"
    )
    args = parser.parse_args(argv)

    items = read_corpus(args.corpus)
    started = time.perf_counter()
    results = run(items)
    elapsed = time.perf_counter() - started
    models = {item["model"] for item in items}
    print(f"corpus {args.corpus.name}: {len(items)} completions, {len(models)} models, parsed in {elapsed:.2f} s")
    share, wrong = summarise("all", results)
    for split in ("tune", "holdout", "late"):
        summarise(split, [(item, got) for item, got in results if item["split"] == split])

    print("misses by answer style (missed / items):")
    styles = Counter(item["style"] for item in items)
    missed = Counter(item["style"] for item, got in results if expected(item) != got)
    for style, count in styles.most_common():
        print(f"  {style:<24} {missed[style]:3d} / {count}")

    misses = [(item, got) for item, got in results if expected(item) != got and args.list in ("all", item["split"])]
    if misses:
        print("misses (reading -> parser):")
    for item, got in misses:
        kind = "WRONG LETTER" if got.choice is not None else "miss"
        reading = item["expected_choice"] or item["expected_reason"]
        print(f"  {kind:<12} {item['id']:<36} {reading} -> {got.choice or got.reason}")
        if args.show_misses:
            print("    | " + item["text"][-400:].replace("\n", "\n    | "))
    print(f"targets: agreement >= {TARGET_AGREEMENT} % and no wrong letter")
    return 0 if share >= TARGET_AGREEMENT and wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
