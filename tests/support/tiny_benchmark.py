"""A benchmark small enough to score by hand, written out as files for the loaders.

Five families in one channel (dipole_norm), scaffold benzene:

  F1  A [*]C   B [*]CC    C [*]O     source A   dipole 1.0, 2.0, 3.0
  F2  A [*]N   B [*]F     C [*]Cl    source B   dipole 1.0, 1.5, 2.5   (B–A = 0.5 >= 0.3)
  F3  A [*]C#N B [*]C=O              source A   dipole 0.5, 0.6        (0.1 < 0.3: not input-validated)
  F4  A [*]OC  B [*]C(C)C            source B   dipole 0.0, 1.0
  F5  A [*]C   B [*]N                source A   dipole 0.0, 1.0        (m2 skips its cf task: incomplete)

Cohort: F1, F2, F4. Each family has a P0 task, a source, a shuffled task and one cf
task per other candidate. The choices of m1 and m2 below are what the golden values
in tests/stats/test_metrics_golden.py are computed from.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from molp2s_stats.chem import complete

SCAFFOLD = "c1ccc(cc1)[*]"
FAMILIES = {
    "F1": ("A", {"A": ("[*]C", 1.0), "B": ("[*]CC", 2.0), "C": ("[*]O", 3.0)}),
    "F2": ("B", {"A": ("[*]N", 1.0), "B": ("[*]F", 1.5), "C": ("[*]Cl", 2.5)}),
    "F3": ("A", {"A": ("[*]C#N", 0.5), "B": ("[*]C=O", 0.6)}),
    "F4": ("B", {"A": ("[*]OC", 0.0), "B": ("[*]C(C)C", 1.0)}),
    "F5": ("A", {"A": ("[*]C", 0.0), "B": ("[*]N", 1.0)}),
}
CHANNEL = "dipole_norm"

# (family, task kind) -> choice; task kinds: p0, source, shuffled, cf-<k>.
# None means an invalid answer (given as raw text that parses to nothing).
M1 = {
    ("F1", "p0"): "A",
    ("F1", "source"): "A",
    ("F1", "shuffled"): "B",
    ("F1", "cf-B"): "B",
    ("F1", "cf-C"): "A",
    ("F2", "p0"): "A",
    ("F2", "source"): "B",
    ("F2", "shuffled"): "B",
    ("F2", "cf-A"): "A",
    ("F2", "cf-C"): None,
    ("F3", "p0"): "A",
    ("F3", "source"): "A",
    ("F3", "shuffled"): "A",
    ("F3", "cf-B"): "B",
    ("F4", "p0"): "B",
    ("F4", "source"): "A",
    ("F4", "shuffled"): "B",
    ("F4", "cf-A"): "B",
    ("F5", "p0"): "A",
    ("F5", "source"): "A",
    ("F5", "shuffled"): "A",
    ("F5", "cf-B"): "B",
}
M2 = {
    ("F1", "p0"): "B",
    ("F1", "source"): "A",
    ("F1", "shuffled"): "A",
    ("F1", "cf-B"): "A",
    ("F1", "cf-C"): "C",
    ("F2", "p0"): "B",
    ("F2", "source"): "A",
    ("F2", "shuffled"): "C",
    ("F2", "cf-A"): "B",
    ("F2", "cf-C"): "C",
    ("F3", "p0"): "B",
    ("F3", "source"): "A",
    ("F3", "shuffled"): "B",
    ("F3", "cf-B"): "B",
    ("F4", "p0"): "A",
    ("F4", "source"): "B",
    ("F4", "shuffled"): "A",
    ("F4", "cf-A"): "A",
    ("F5", "p0"): "A",
    ("F5", "source"): "A",
    ("F5", "shuffled"): "A",  # no ("F5", "cf-B")
}


def task_id(family: str, kind: str) -> str:
    return f"{family}-{'p0' if kind == 'p0' else CHANNEL + '-' + kind}"


def write_benchmark(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    fams, cands, props, tasks = [], [], [], []
    ids = list(FAMILIES)
    for i, (family, (source, members)) in enumerate(FAMILIES.items()):
        fams.append((family, SCAFFOLD, source))
        for label, (fragment, dipole) in members.items():
            cands.append((family, label, fragment, complete(SCAFFOLD, fragment)))
            props.append({"family_id": family, "label": label, "channel": CHANNEL, "value": dipole})
        other = ids[(i + 1) % len(ids)]
        tasks.append((task_id(family, "p0"), family, "none", "none", source, None, None))
        tasks.append((task_id(family, "source"), family, CHANNEL, "source", source, family, source))
        tasks.append((task_id(family, "shuffled"), family, CHANNEL, "shuffled", source, other, FAMILIES[other][0]))
        for k in members:
            if k != source:
                tasks.append((task_id(family, f"cf-{k}"), family, CHANNEL, "cf", k, family, k))
    pl.DataFrame(fams, schema=["family_id", "scaffold", "source"], orient="row").write_csv(directory / "families.csv")
    pl.DataFrame(cands, schema=["family_id", "label", "fragment", "molecule"], orient="row").write_csv(
        directory / "candidates.csv"
    )
    # JSONL with the JSON value itself (a number), as the loader allows.
    (directory / "properties.jsonl").write_text("".join(json.dumps(p) + "\n" for p in props))
    pl.DataFrame(
        tasks,
        schema=["task_id", "family_id", "channel", "condition", "target", "shown_family", "shown_label"],
        orient="row",
    ).write_csv(directory / "tasks.csv")
    return directory


def write_responses(directory: Path) -> list[Path]:
    """m1 as JSONL (two answers as raw text), m2 as CSV with a retry."""
    directory.mkdir(parents=True, exist_ok=True)
    m1_lines = []
    for (family, kind), choice in M1.items():
        row = {"model": "m1", "task_id": task_id(family, kind), "latency_s": 1.0}
        if (family, kind) == ("F1", "cf-B"):
            row["response"] = "The completed molecule is `CCc1ccccc1`."  # ethylbenzene = F1's B
        elif choice is None:
            row["response"] = "I am not sure."
        else:
            row["choice"] = choice
        m1_lines.append(json.dumps(row))
    (directory / "m1.jsonl").write_text("\n".join(m1_lines) + "\n")
    m2_rows = [("m2", task_id(f, k), 0, c) for (f, k), c in M2.items()]
    # A retry: the first attempt at F2's source task was right (B), the terminal one is A.
    m2_rows.append(("m2", task_id("F2", "source"), 1, "A"))
    m2_rows = [r if r[1] != task_id("F2", "source") or r[2] == 1 else (r[0], r[1], 0, "B") for r in m2_rows]
    pl.DataFrame(m2_rows, schema=["model", "task_id", "attempt", "choice"], orient="row").write_csv(
        directory / "m2.csv"
    )
    return [directory / "m1.jsonl", directory / "m2.csv"]
