"""Auditing the benchmark itself: the families that cannot measure what they claim.

Every metric assumes a family is sound: its key is the right answer, its candidates are
different molecules, and the properties shown can tell the source from its
distractors. A pipeline that builds families fails systematically (two fragments that
give the same molecule, a conformer that converged to the source's geometry, a key
written for the wrong label), so the audit looks for each failure and returns one row
per finding: ``family_id, channel, flag, score, evidence`` (``channel`` = ``all`` where
the finding is not channel-specific; ``score`` ranks findings within a flag, higher =
more suspicious; ``evidence`` says what was seen, with numbers). The flags:

- ``wrong_key``: the answers point to another candidate. Each model has an ability
  (the logit of its accuracy over every family), each family a difficulty, and the key
  draws a model's right answers, P = σ(ability − difficulty), its wrong ones spread evenly
  over the other labels. The score is the log likelihood ratio of the best other label
  as the key against the benchmark's key (each at its own best difficulty); its p-value
  is the share of ``replicates`` answer sets drawn under the benchmark's key that score
  as high, and families are flagged at a false-discovery rate ``q`` (Benjamini–Hochberg
  over the families audited).
- ``duplicate_candidates``: two labels of a family are the same molecule (RDKit
  canonical SMILES of the completed molecule, stereochemistry and charge kept as written).
- ``indistinguishable``: on a channel, the source's shown properties and a distractor's
  are closer than the channel's resolution (the cutoff behind the separability table),
  so the task cannot be solved from them.
- ``no_signal``: on a channel, every model is right (or every model wrong) on every
  answer under every condition: the family adds nothing to the reliance measures.
"""

from __future__ import annotations

import functools

import duckdb
import numpy as np
import polars as pl
from scipy.special import expit, logit
from scipy.stats import false_discovery_control

from .. import jit

FLAGS = {
    "wrong_key": "the answers point to another candidate than the key",
    "duplicate_candidates": "two labels are the same molecule",
    "indistinguishable": "the source's shown properties and a distractor's are closer than the channel's resolution",
    "no_signal": "every model right, or every model wrong, on every answer under every condition",
}
AUDIT_SCHEMA = {
    "family_id": pl.String,
    "channel": pl.String,
    "flag": pl.String,
    "score": pl.Float64,
    "evidence": pl.String,
}
FDR_Q = 0.05  # wrong_key: the false-discovery rate over families at which a family is flagged
NULL_REPLICATES = 999  # answer sets drawn under the benchmark's key, per family, for wrong_key's p-value
MIN_ANSWERS = 10  # wrong_key reads a family with at least this many valid answers on key-target tasks
DIFFICULTY_GRID = np.linspace(-12.0, 12.0, 241)  # the difficulties a family's likelihood is maximised over (0.1 apart)
ABILITY_LIMIT = 6.0  # a model right (or wrong) on every answer has ability ±6 on the logit scale, not ±∞


def audit(
    con: duckdb.DuckDBPyConnection, *, q: float = FDR_Q, replicates: int = NULL_REPLICATES, seed: int = 0
) -> pl.DataFrame:
    """Every finding on the loaded benchmark and responses, flag by flag, most suspicious first."""
    parts = [
        wrong_key(con, q=q, replicates=replicates, seed=seed),
        duplicate_candidates(con),
        indistinguishable(con),
        no_signal(con),
    ]
    return pl.concat(parts, how="vertical").select(list(AUDIT_SCHEMA))


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=AUDIT_SCHEMA)


def duplicate_candidates(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Labels of a family whose completed molecules are one molecule; score 2 where the key is among them
    (the task has two right answers), else 1."""
    from rdkit import Chem

    frame = con.sql("""SELECT c.family_id, c.label, c.molecule, f.source_label
                       FROM stg_candidates AS c JOIN stg_families AS f USING (family_id)
                       ORDER BY c.family_id, c.label""").pl()
    if frame.height == 0:
        return _empty()

    def canonical(smiles: str) -> str:
        mol = Chem.MolFromSmiles(smiles)
        return Chem.MolToSmiles(mol, isomericSmiles=True) if mol is not None else f"unreadable:{smiles}"

    frame = frame.with_columns(pl.col("molecule").map_elements(canonical, return_dtype=pl.String).alias("canonical"))
    groups = (
        frame.group_by("family_id", "canonical", maintain_order=True)
        .agg(pl.col("label"), pl.col("source_label").first())
        .filter(pl.col("label").list.len() > 1)
    )
    rows = []
    for family, molecule, labels, key in groups.iter_rows():
        named = ", ".join(labels[:-1]) + f" and {labels[-1]}"
        keyed = key in labels
        evidence = f"labels {named} are the same molecule ({molecule})"
        evidence += f"; {key} is the key, so the task has {len(labels)} right answers" if keyed else ""
        rows.append((family, "all", "duplicate_candidates", 2.0 if keyed else 1.0, evidence))
    return pl.DataFrame(rows, schema=AUDIT_SCHEMA, orient="row") if rows else _empty()


def indistinguishable(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Family × channel cells (with source tasks) whose source lies closer than the channel's cutoff to a
    distractor; score 1 − distance / cutoff for the nearest one (1: identical properties)."""
    frame = con.sql("""
        WITH close AS (
            SELECT p.family_id, p.channel, f.source_label,
                   CASE WHEN p.label_a = f.source_label THEN p.label_b ELSE p.label_a END AS distractor,
                   p.distance, p.cutoff, p.distance_over_cutoff
            FROM pair_separation AS p
            JOIN stg_families AS f USING (family_id)
            WHERE NOT p.separated AND f.source_label IN (p.label_a, p.label_b)
              AND EXISTS (SELECT 1 FROM benchmark_tasks AS t
                          WHERE t.family_id = p.family_id AND t.channel = p.channel AND t.condition = 'source')
        )
        SELECT family_id, channel, any_value(source_label) AS source_label,
               arg_min(distractor, distance_over_cutoff) AS distractor,
               arg_min(distance, distance_over_cutoff) AS distance, any_value(cutoff) AS cutoff,
               min(distance_over_cutoff) AS over, count(*) AS close_distractors,
               coalesce(any_value(c.in_cohort), false) AS in_cohort
        FROM close
        LEFT JOIN cohort AS c USING (family_id, channel)
        GROUP BY family_id, channel
        ORDER BY family_id, channel""").pl()
    rows = []
    for family, channel, key, distractor, distance, cutoff, over, close, in_cohort in frame.iter_rows():
        how_far = (
            f"{distance:.3g} apart, under the cutoff of {cutoff:.3g}"
            if distance is not None
            else f"{over:.2f} of the cutoff apart in every component"
        )
        more = f" ({close - 1} more distractor{'s' if close > 2 else ''} within the cutoff)" if close > 1 else ""
        where = "in the cohort" if in_cohort else "already out of the cohort"
        rows.append(
            (
                family,
                channel,
                "indistinguishable",
                1.0 - float(over),
                f"the source {key} and the distractor {distractor} are {how_far}{more}: the properties "
                f"shown cannot tell them apart ({where})",
            )
        )
    return pl.DataFrame(rows, schema=AUDIT_SCHEMA, orient="row") if rows else _empty()


def no_signal(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Family × channel cells where every answer of every model under every condition is right, or every
    one wrong; score: the answers behind it."""
    frame = con.sql("""
        SELECT family_id, channel, count(DISTINCT model) AS models, sum(samples) AS answers,
               min(y) AS lowest, max(y) AS highest
        FROM task_outcomes
        WHERE condition <> 'none'
        GROUP BY family_id, channel
        HAVING count(DISTINCT model) >= 2 AND (min(y) = 1 OR max(y) = 0)
        ORDER BY family_id, channel""").pl()
    rows = []
    for family, channel, models, answers, lowest, _ in frame.iter_rows():
        verdict = "right" if lowest == 1 else "wrong"
        rows.append(
            (
                family,
                channel,
                "no_signal",
                float(answers),
                f"all {models} models {verdict} on all {answers} answers under source, shuffled and cf",
            )
        )
    return pl.DataFrame(rows, schema=AUDIT_SCHEMA, orient="row") if rows else _empty()


def key_target_choices(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Valid answers on the tasks whose target is the key (P0, source, shuffled): family, model, label, count."""
    return con.sql("""
        SELECT t.family_id, r.model, r.choice AS label, count(*) AS answers
        FROM stg_terminal_responses AS r
        JOIN benchmark_tasks AS t USING (task_id)
        WHERE t.condition IN ('none', 'source', 'shuffled') AND r.choice IS NOT NULL
        GROUP BY ALL""").pl()


def _family_counts(con: duckdb.DuckDBPyConnection):
    """The models' abilities, then per family audited: (family, labels, the key's index, answers as a
    models × labels array of counts) over the key-target tasks' valid answers."""
    choices = key_target_choices(con)
    labels = con.sql("SELECT family_id, label FROM stg_candidates ORDER BY family_id, label").pl()
    keys = dict(con.sql("SELECT family_id, source_label FROM stg_families").fetchall())
    models = sorted(choices["model"].unique().to_list())
    model_at = {m: i for i, m in enumerate(models)}
    # each model's ability: the logit of its accuracy on key-target answers over every family
    right = choices.with_columns((pl.col("label") == pl.col("family_id").replace_strict(keys)).alias("right"))
    accuracy = right.group_by("model").agg((pl.col("answers") * pl.col("right")).sum() / pl.col("answers").sum())
    ability = np.zeros(len(models))
    for model, share in accuracy.iter_rows():
        ability[model_at[model]] = np.clip(logit(share), -ABILITY_LIMIT, ABILITY_LIMIT)
    family_labels = {f: g["label"].to_list() for (f,), g in labels.group_by("family_id")}

    def families():
        for (family,), part in choices.sort("family_id").group_by("family_id", maintain_order=True):
            candidates = family_labels.get(family, [])
            key = keys.get(family)
            if key not in candidates or len(candidates) < 2 or part["answers"].sum() < MIN_ANSWERS:
                continue
            counts = np.zeros((len(models), len(candidates)))
            at = {label: j for j, label in enumerate(candidates)}
            for _, model, label, answers in part.iter_rows():
                if label in at:
                    counts[model_at[model], at[label]] += answers
            yield family, candidates, at[key], counts

    return ability, families()


def key_swap_scores(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every family audited for a wrong key, its statistic (the score of ``wrong_key``) and the label it
    points to; no p-values (for ranking every family, as bench_audit does)."""
    ability, families = _family_counts(con)
    rows = []
    for family, candidates, key, counts in families:
        statistic, best, _ = _key_swap_statistic(counts[None], ability, key)
        rows.append((family, candidates[int(best[0])], float(statistic[0])))
    return pl.DataFrame(rows, schema={"family_id": pl.String, "label": pl.String, "score": pl.Float64}, orient="row")


def wrong_key(
    con: duckdb.DuckDBPyConnection, *, q: float = FDR_Q, replicates: int = NULL_REPLICATES, seed: int = 0
) -> pl.DataFrame:
    """Families whose answers favour another label than the key, flagged at false-discovery rate ``q``."""
    if key_target_choices(con).height == 0:
        return _empty()
    ability, families = _family_counts(con)
    rng = np.random.default_rng(seed)
    found = []
    for family, candidates, key, counts in families:
        statistic, best, difficulty = _key_swap_statistic(counts[None], ability, key)
        p_value = _p_value(
            float(statistic[0]),
            counts.sum(axis=1),
            ability,
            key,
            float(difficulty[0]),
            len(candidates),
            replicates,
            rng,
        )
        found.append(
            (
                family,
                candidates[key],
                candidates[int(best[0])],
                float(statistic[0]),
                p_value,
                counts,
                {label: j for j, label in enumerate(candidates)},
            )
        )
    if not found:
        return _empty()
    q_values = false_discovery_control([p for *_, p, _, _ in found], method="bh")
    rows = []
    for (family, key, other, statistic, p_value, counts, at), q_value in zip(found, q_values):
        if q_value > q:
            continue
        strong = ability > np.median(ability)
        rows.append(
            (
                family,
                "all",
                "wrong_key",
                statistic,
                f"{int(counts[:, at[other]].sum())} of {int(counts.sum())} answers chose {other}, "
                f"{int(counts[:, at[key]].sum())} the key {key} (the stronger half of the models: "
                f"{int(counts[strong, at[other]].sum())} and {int(counts[strong, at[key]].sum())}); "
                f"log likelihood ratio {statistic:.1f} for {other} as the key, p = {p_value:.3g}, "
                f"q = {q_value:.3g}",
            )
        )
    return pl.DataFrame(rows, schema=AUDIT_SCHEMA, orient="row") if rows else _empty()


def _grid_terms(ability: np.ndarray, labels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per model × difficulty on the grid: what an answer adds to the log likelihood of "this label is the
    key" when it names that label (log P − log((1 − P) / (K − 1))), and what every answer adds anyway
    (log((1 − P) / (K − 1))), with P = σ(ability − difficulty)."""
    p = expit(ability[:, None] - DIFFICULTY_GRID[None, :])  # models × grid
    log_wrong = np.log1p(-p) - np.log(labels - 1)
    return np.log(p) - log_wrong, log_wrong


def _key_swap_statistic(counts: np.ndarray, ability: np.ndarray, key: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For answer counts (sets × models × labels): the log likelihood ratio of the best non-key label as the
    key against the key, the best label, and the difficulty fitted under the key; one of each per set.

    Under "label j is the key" a model's answer is j with P = σ(ability − difficulty) and each other label
    with (1 − P) / (K − 1); the difficulty is maximised over ``DIFFICULTY_GRID`` (the log likelihood is
    concave in it, so the grid's maximum is the maximum to the grid's spacing).
    """
    gain, log_wrong = _grid_terms(ability, counts.shape[2])
    labels = counts.shape[2]
    answers = counts.sum(axis=2)  # sets × models
    # sets × labels × grid: Σ_m c_mj log P_m + (n_m − c_mj) log((1 − P_m)/(K − 1))
    # one matrix product (BLAS) over every set and label rather than einsum's own loop: the null's thousands
    # of answer sets a family made this the audit's slowest line (the whole audit of the default data 5.3 →
    # 3.2 s, medians of 3 runs paired in one process, the same findings)
    sets = counts.shape[0]
    per_label = counts.transpose(0, 2, 1).reshape(sets * labels, counts.shape[1]) @ gain
    as_key = per_label.reshape(sets, labels, -1) + (answers @ log_wrong)[:, None, :]
    best_fit = as_key.max(axis=2)  # sets × labels
    under_key = best_fit[:, key]
    others = np.delete(best_fit, key, axis=1)
    best = np.delete(np.arange(labels), key)[others.argmax(axis=1)]
    return others.max(axis=1) - under_key, best, DIFFICULTY_GRID[as_key[:, key].argmax(axis=1)]


def _null_key_swap_statistic(counts: np.ndarray, ability: np.ndarray, key: int) -> np.ndarray:
    """``_key_swap_statistic``'s statistic alone, each label's maximum found by bisection on the grid.

    Each label's log likelihood is concave in the difficulty, so along the grid it rises, then falls:
    its maximum is the first grid point after which it falls, found in log2(241) ≈ 8 halvings of two
    evaluations each instead of 241 evaluations. The maxima are the grid's, equal to the full
    evaluation's up to rounding in the last bits (tests/stats/test_audit.py), at a fraction of the cost
    on the null's thousands of answer sets a family. Compiled by numba: a bisection per set and label is
    a loop no array library or SciPy optimiser runs on a fixed grid without Python per problem.
    """
    gain, base = (np.ascontiguousarray(term.T) for term in _grid_terms(ability, counts.shape[2]))  # grid × models
    chosen = np.ascontiguousarray(counts.transpose(0, 2, 1), dtype=np.float64)  # sets × labels × models
    answers = np.ascontiguousarray(counts.sum(axis=2), dtype=np.float64)
    return _compiled_bisection()(chosen, answers, gain, base, key)


@functools.cache
def _compiled_bisection():
    return jit.compiled(_bisected_statistics)  # on first use: `molp2s audit` imports numba only when it runs


def _bisected_statistics(chosen, answers, gain, base, key):
    sets, labels, models = chosen.shape
    last = gain.shape[0] - 1
    out = np.empty(sets)
    for s in range(sets):
        best_other, under_key = -np.inf, 0.0
        for label in range(labels):
            low, high = 0, last
            while low < high:
                middle = (low + high) // 2
                here, after = 0.0, 0.0
                for m in range(models):
                    here += chosen[s, label, m] * gain[middle, m] + answers[s, m] * base[middle, m]
                    after += chosen[s, label, m] * gain[middle + 1, m] + answers[s, m] * base[middle + 1, m]
                if after > here:
                    low = middle + 1
                else:
                    high = middle
            value = 0.0
            for m in range(models):
                value += chosen[s, label, m] * gain[low, m] + answers[s, m] * base[low, m]
            if label == key:
                under_key = value
            elif value > best_other:
                best_other = value
        out[s] = best_other - under_key
    return out


P_VALUE_EXCEEDANCES = 10  # draw more answer sets while fewer than this many score as high as the family
MAX_REPLICATES = 100_000
NULL_CHUNK = 2000  # answer sets drawn at a time (memory: chunk × labels × grid)


def _p_value(
    statistic: float,
    answers: np.ndarray,
    ability: np.ndarray,
    key: int,
    difficulty: float,
    labels: int,
    replicates: int,
    rng: np.random.Generator,
) -> float:
    """The Monte Carlo p-value of ``statistic`` under the benchmark's key, drawn sequentially.

    ``replicates`` answer sets first; while fewer than P_VALUE_EXCEEDANCES of all drawn score
    as high, ten times as many (at most MAX_REPLICATES): a family whose statistic is far out
    gets a p-value below 1 / (replicates + 1), which a false-discovery control over hundreds
    of families needs, and a clean family costs only the first round (Besag & Clifford 1991
    stop early the other way; this grows the draws where the evidence is strongest).
    """
    drawn, exceed, target = 0, 0, replicates
    while True:
        while drawn < target:
            chunk = min(NULL_CHUNK, target - drawn)
            null = _null_statistics(answers, ability, key, difficulty, labels, chunk, rng)
            exceed += int((null >= statistic - 1e-9).sum())
            drawn += chunk
        if exceed >= P_VALUE_EXCEEDANCES or target >= MAX_REPLICATES:
            return (1 + exceed) / (1 + drawn)
        target = min(MAX_REPLICATES, target * 10 + 9)


def _null_statistics(
    answers: np.ndarray,
    ability: np.ndarray,
    key: int,
    difficulty: float,
    labels: int,
    replicates: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """The statistic on ``replicates`` answer sets drawn under the benchmark's key at its fitted difficulty."""
    p = expit(ability - difficulty)
    probabilities = np.repeat(((1 - p) / (labels - 1))[:, None], labels, axis=1)
    probabilities[:, key] = p
    draws = rng.multinomial(answers.astype(np.int64), probabilities, size=(replicates, len(answers)))
    return _null_key_swap_statistic(draws.astype(float), ability, key)


def read_exclusions(path, known_families: set[str]) -> pl.DataFrame:
    """The (family_id, channel) cells a file leaves out of the cohort; channel ``all`` for every channel.

    The file: the audit's own output (CSV, JSON or Parquet with ``family_id`` and
    ``channel``), any table with a ``family_id`` column, or plain text with one family id a
    line (``#`` starts a comment). A family the benchmark does not have is an error that
    names the file and the row: a typo must not leave the cohort silently as it was.
    """
    from pathlib import Path

    from ..errors import UsageError

    path = Path(path)
    named = {"exclude": "exclusions"}  # the argument, as a front end may name it (the CLI: --exclude)
    if not path.exists():
        raise UsageError(f"{{exclude}} {path}: no such file", arguments=named)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet", ".json"):
        reader = {
            ".csv": lambda p: pl.read_csv(p, infer_schema=False),
            ".parquet": pl.read_parquet,
            ".json": pl.read_json,
        }[suffix]
        table = reader(path)
        if "family_id" not in table.columns:
            raise UsageError(
                f"{{exclude}} {path}: no family_id column (columns: {', '.join(table.columns)})", arguments=named
            )
        if "channel" not in table.columns:
            table = table.with_columns(pl.lit("all").alias("channel"))
        table = table.select(pl.col("family_id").cast(pl.String), pl.col("channel").cast(pl.String).fill_null("all"))
        first_row = 2 if suffix == ".csv" else 1  # a CSV's row 1 is its header
    else:
        lines = [
            (n, line.split("#", 1)[0].strip())
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        ]
        lines = [(n, text) for n, text in lines if text]
        table = pl.DataFrame(
            {"family_id": [t for _, t in lines], "channel": ["all"] * len(lines)},
            schema={"family_id": pl.String, "channel": pl.String},
        )
        rows = [n for n, _ in lines]
    for at, family in enumerate(table["family_id"].to_list()):
        if family not in known_families:
            where = f"line {rows[at]}" if suffix not in (".csv", ".parquet", ".json") else f"row {at + first_row}"
            raise UsageError(f"{{exclude}} {path}: {where}: family {family!r} is not in the benchmark", arguments=named)
    return table.unique(maintain_order=True)


def excluding(outcomes: pl.DataFrame, exclusions: pl.DataFrame) -> pl.DataFrame:
    """``outcomes`` (one row per model × channel × family) without the excluded cells: the cohort, less them."""
    every = exclusions.filter(pl.col("channel") == "all")["family_id"]
    cells = exclusions.filter(pl.col("channel") != "all")
    kept = outcomes.filter(~pl.col("family_id").is_in(every.implode()))
    return kept.join(cells, on=["family_id", "channel"], how="anti") if cells.height else kept


def impact(
    outcomes: pl.DataFrame,
    exclusions: pl.DataFrame,
    *,
    channels: list[str],
    models: list[str],
    metric: str = "pgr",
    draws: int = 2000,
    seed: int = 0,
    conf_level: float = 0.95,
) -> pl.DataFrame:
    """``metric`` per model × channel on the whole cohort (``exclusion`` none) and without the excluded
    families (``exclusion`` flagged), each with its family-level interval and the models' rank on it."""
    from . import metrics

    frames = []
    for name, part in (("none", outcomes), ("flagged", excluding(outcomes, exclusions))):
        table = metrics.compute_metrics(
            part, channels=channels, models=models, metrics=(metric,), draws=draws, seed=seed, conf_level=conf_level
        )
        frames.append(
            table.with_columns(
                pl.lit(name).alias("exclusion"),
                pl.col("estimate").rank("average", descending=True).over("channel").alias("rank"),
            )
        )
    order = {c: i for i, c in enumerate(channels)}
    return (
        pl.concat(frames, how="diagonal")
        .select("exclusion", "model", "channel", "metric", "estimate", "conf_low", "conf_high", "n", "rank")
        .sort(pl.col("channel").replace_strict(order), "model", pl.col("exclusion") != "none")
    )


def rank_changes(table: pl.DataFrame) -> list[str]:
    """One line per channel whose ranking moves when the flagged families leave (from ``impact``'s table)."""
    wide = table.pivot(on="exclusion", index=["channel", "model"], values="rank")
    lines = []
    for (channel,), part in wide.group_by("channel", maintain_order=True):
        moved = part.filter(pl.col("none") != pl.col("flagged"))
        if moved.height:
            lines.append(
                f"{channel}: "
                + ", ".join(
                    f"{m} {a:g} → {b:g}"
                    for _, m, a, b in moved.select("channel", "model", "none", "flagged").iter_rows()
                )
            )
    return lines
