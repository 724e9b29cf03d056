-- benchmark_tasks: one row per task. Key: task_id.
-- Every task with its family's source label and candidate count K_f: what an answer is
-- scored against (the target, and for a cf task whether it stayed with the source).
CREATE OR REPLACE VIEW benchmark_tasks AS
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
    FROM stg_tasks AS t
    JOIN family_candidates AS f USING (family_id)
)
SELECT * FROM final;
