-- stg_tasks: one row per task. Key: task_id.
-- The tasks table as loaded.
CREATE OR REPLACE VIEW stg_tasks AS
WITH final AS (
    SELECT task_id, family_id, channel, condition, target, shown_family, shown_label FROM tasks
)
SELECT * FROM final;
