-- Tables the loader writes. Everything else in the database is a view over these.

CREATE TABLE IF NOT EXISTS channels (
    channel     VARCHAR PRIMARY KEY,
    "group"     VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,   -- what prompts, row labels and chart panels call it
    distance    VARCHAR,            -- NULL for bundles
    cutoff      DOUBLE,             -- NULL for bundles
    components  VARCHAR[],          -- NULL for single channels
    position    INTEGER NOT NULL,   -- display order
    subgroup    VARCHAR,            -- a leaderboard's second spanner (¹H NMR), if any
    column_label VARCHAR            -- a leaderboard's column label under its spanners (Peaks)
);
-- databases made before the channel table had leaderboard labels
ALTER TABLE channels ADD COLUMN IF NOT EXISTS subgroup VARCHAR;
ALTER TABLE channels ADD COLUMN IF NOT EXISTS column_label VARCHAR;

-- Optional in a benchmark: a model's name in reports and its group (e.g. closed-weight).
CREATE TABLE IF NOT EXISTS models (
    model        VARCHAR PRIMARY KEY,
    display_name VARCHAR,
    "group"      VARCHAR,
    position     INTEGER NOT NULL    -- the file's order
);

CREATE TABLE IF NOT EXISTS families (
    family_id VARCHAR PRIMARY KEY,
    scaffold  VARCHAR NOT NULL,
    source    VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS candidates (
    family_id VARCHAR NOT NULL,
    label     VARCHAR NOT NULL,
    fragment  VARCHAR NOT NULL,
    molecule  VARCHAR NOT NULL,
    PRIMARY KEY (family_id, label)
);

CREATE TABLE IF NOT EXISTS properties (
    family_id VARCHAR NOT NULL,
    label     VARCHAR NOT NULL,
    channel   VARCHAR NOT NULL,
    value     VARCHAR NOT NULL,     -- JSON text, format per channel (README: data model)
    PRIMARY KEY (family_id, label, channel)
);

CREATE TABLE IF NOT EXISTS tasks (
    task_id      VARCHAR PRIMARY KEY,
    family_id    VARCHAR NOT NULL,
    channel      VARCHAR NOT NULL,  -- 'none' for P0
    condition    VARCHAR NOT NULL,  -- none | source | shuffled | cf
    target       VARCHAR NOT NULL,
    shown_family VARCHAR,
    shown_label  VARCHAR
);

-- Distances between the two candidates of a pair, computed in Python at load time
-- for every single (non-bundle) channel where both candidates have a value.
CREATE TABLE IF NOT EXISTS pair_distances (
    family_id VARCHAR NOT NULL,
    channel   VARCHAR NOT NULL,
    label_a   VARCHAR NOT NULL,
    label_b   VARCHAR NOT NULL,
    distance  DOUBLE NOT NULL,
    PRIMARY KEY (family_id, channel, label_a, label_b)
);

CREATE TABLE IF NOT EXISTS benchmark (
    path        VARCHAR NOT NULL,
    fingerprint VARCHAR NOT NULL,
    loaded_at   TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS response_files (
    file_id   INTEGER PRIMARY KEY,
    path      VARCHAR NOT NULL,
    sha256    VARCHAR NOT NULL UNIQUE,
    format    VARCHAR NOT NULL,
    rows      BIGINT NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

-- Every loaded response row, retries and samples included. No index on the key:
-- the loader checks uniqueness itself, and an index would slow 10M-row loads.
CREATE TABLE IF NOT EXISTS responses (
    model          VARCHAR NOT NULL,
    task_id        VARCHAR NOT NULL,
    sample         INTEGER NOT NULL,
    attempt        INTEGER NOT NULL,
    response       VARCHAR,            -- raw text, when the file had it
    choice         VARCHAR,            -- label; NULL when the answer is invalid
    invalid_reason VARCHAR,            -- no_answer | ambiguous | bad_smiles | not_a_candidate | refusal | request_failed | truncated
    choice_source  VARCHAR NOT NULL,   -- given (file had a choice) | parsed (from response)
    metadata       VARCHAR,            -- JSON object of the file's other fields
    file_id        INTEGER NOT NULL,
    line           BIGINT NOT NULL     -- line (JSONL) or row (CSV, Parquet) in that file
);

-- Plans made by `molp2s plan`: which families a new model is to answer. Every family of
-- the plan's cohorts has a row (selected or not), with its stratum, so that `molp2s
-- estimate` can weigh each answered family by the inverse of its inclusion probability.
CREATE TABLE IF NOT EXISTS plans (
    plan_id      VARCHAR PRIMARY KEY,
    created_at   TIMESTAMP NOT NULL,
    seed         BIGINT NOT NULL,
    families     INTEGER NOT NULL,     -- families selected
    channels     VARCHAR[] NOT NULL,   -- channels whose cohorts the plan covers
    models       VARCHAR[] NOT NULL,   -- complete models whose answers shaped the strata
    neyman_share DOUBLE NOT NULL
);

CREATE TABLE IF NOT EXISTS plan_families (
    plan_id               VARCHAR NOT NULL,
    family_id             VARCHAR NOT NULL,
    stratum               INTEGER NOT NULL,
    stratum_families      INTEGER NOT NULL,
    stratum_sampled       INTEGER NOT NULL,
    inclusion_probability DOUBLE NOT NULL,
    selected              BOOLEAN NOT NULL,
    spread                DOUBLE NOT NULL,  -- how badly the complete models predict one another here
    PRIMARY KEY (plan_id, family_id)
);
