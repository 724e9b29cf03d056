-- model_coverage: one row per model. Key: model.
-- A model is partial when some family × channel has no answer from it to any of the
-- channel's own tasks (source, shuffled, cf): it was run on a subset of the benchmark (a
-- plan, some channels, P0 only). Partial models never shrink the cohort: the complete models
-- define it (every model, when none is complete), and a partial model is scored on the cohort
-- families it answered in full. A complete model that misses a task keeps the paper's rule:
-- that family leaves the cohort of its channel.
CREATE OR REPLACE VIEW model_coverage AS
WITH per_model AS (
    SELECT
        model,
        count(DISTINCT family_id) AS families_total,
        count(DISTINCT family_id) FILTER (WHERE answered_property_tasks > 0) AS families_answered,
        bool_and(answered_property_tasks > 0) AS every_pair_answered
    FROM family_coverage
    GROUP BY model
),
final AS (
    SELECT
        model,
        families_total,
        families_answered,
        NOT every_pair_answered AS partial,
        every_pair_answered OR NOT bool_or(every_pair_answered) OVER () AS defines_cohort
    FROM per_model
)
SELECT * FROM final ORDER BY model;
