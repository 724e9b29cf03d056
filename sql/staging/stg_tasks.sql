-- stg_tasks: one row per task. Key: task_id.
-- Adds the family's source label and candidate count K_f.
CREATE OR REPLACE VIEW stg_tasks AS
WITH final AS (
    SELECT
        t.task_id,
        t.family_id,
        t.channel,
        t.condition,
        t.target,
        t.shown_family,
        t.shown_label,
        f.source_label,
        f.n_candidates
    FROM tasks AS t
    JOIN stg_families AS f USING (family_id)
)
SELECT * FROM final;
