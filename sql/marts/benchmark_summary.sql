-- benchmark_summary: one row per database: the benchmark and its answers in numbers.
-- Key: none (a single row).
-- channels counts the channels and bundles with tasks; answers, the terminal answers
-- (one per model × task × sample).
CREATE OR REPLACE VIEW benchmark_summary AS
WITH final AS (
    SELECT
        (SELECT count(*) FROM stg_families) AS families,
        (SELECT count(DISTINCT channel) FROM channel_tasks) AS channels,
        (SELECT count(*) FROM stg_models) AS models,
        (SELECT count(*) FROM stg_tasks) AS tasks,
        (SELECT count(*) FROM stg_terminal_responses) AS answers
)
SELECT * FROM final;
