-- stg_terminal_responses: one row per model × task × sample. Key: (model, task_id, sample).
-- The terminal response is the one with the highest attempt (SPEC §2).
CREATE OR REPLACE VIEW stg_terminal_responses AS
WITH ranked AS (
    SELECT
        model, task_id, sample, attempt, choice, invalid_reason,
        row_number() OVER (PARTITION BY model, task_id, sample ORDER BY attempt DESC) AS attempt_rank
    FROM responses
),
final AS (
    SELECT model, task_id, sample, attempt, choice, invalid_reason
    FROM ranked
    WHERE attempt_rank = 1
)
SELECT * FROM final;
