-- task_outcomes: one row per model × task that has a terminal response.
-- Key: (model, task_id).
-- Shares are means over the task's terminal responses (one per sample), and
-- correct_samples counts the right ones (y = correct_samples / samples); an invalid
-- answer (choice NULL) counts as wrong and as "other". The *_valid columns are the same
-- means over the valid answers only (NULL when the task has none): the sensitivity
-- in which invalid answers are left out instead of counted wrong.
CREATE OR REPLACE VIEW task_outcomes AS
WITH final AS (
    SELECT
        r.model,
        t.task_id,
        t.family_id,
        t.channel,
        t.condition,
        t.target,
        t.source_label,
        count(*) AS samples,
        count(*) FILTER (WHERE r.choice = t.target) AS correct_samples,
        avg(CASE WHEN r.choice = t.target THEN 1.0 ELSE 0.0 END) AS y,
        avg(CASE WHEN r.choice = t.source_label THEN 1.0 ELSE 0.0 END) AS chose_source,
        avg(CASE WHEN r.choice IS NULL OR r.choice NOT IN (t.target, t.source_label)
                 THEN 1.0 ELSE 0.0 END) AS chose_other,
        avg(CASE WHEN r.choice IS NULL THEN 1.0 ELSE 0.0 END) AS invalid,
        count(r.choice) AS valid_samples,
        avg(CASE WHEN r.choice = t.target THEN 1.0 ELSE 0.0 END) FILTER (WHERE r.choice IS NOT NULL) AS y_valid,
        avg(CASE WHEN r.choice = t.source_label THEN 1.0 ELSE 0.0 END)
            FILTER (WHERE r.choice IS NOT NULL) AS chose_source_valid,
        avg(CASE WHEN r.choice NOT IN (t.target, t.source_label) THEN 1.0 ELSE 0.0 END)
            FILTER (WHERE r.choice IS NOT NULL) AS chose_other_valid
    FROM stg_terminal_responses AS r
    JOIN benchmark_tasks AS t USING (task_id)
    GROUP BY r.model, t.task_id, t.family_id, t.channel, t.condition, t.target, t.source_label
)
SELECT * FROM final;
