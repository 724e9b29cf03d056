-- model_coverage: one row per model. Key: model.
-- A model is partial when it has no response at all for some family: it was run on a
-- subset of the benchmark (a plan). Partial models never shrink the cohort: the complete
-- models define it (every model, when none is complete), and a partial model is scored on
-- the cohort families it answered in full. A complete model that misses a task keeps the
-- paper's rule: that family leaves the cohort of its channel.
CREATE OR REPLACE VIEW model_coverage AS
WITH per_model AS (
    SELECT
        model,
        count(DISTINCT family_id) AS families_total,
        count(DISTINCT family_id) FILTER (WHERE answered_tasks > 0) AS families_answered
    FROM family_coverage
    GROUP BY model
),
final AS (
    SELECT
        model,
        families_total,
        families_answered,
        families_answered < families_total AS partial,
        families_answered = families_total
            OR NOT bool_or(families_answered = families_total) OVER () AS defines_cohort
    FROM per_model
)
SELECT * FROM final ORDER BY model;
