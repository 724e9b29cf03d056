-- stg_terminal_responses: one row per model × task × sample. Key: (model, task_id, sample).
-- The terminal response is the one with the highest attempt. arg_max_null
-- keeps a NULL choice (an invalid terminal answer) rather than skipping to an older one;
-- attempts are unique per (model, task_id, sample), the loader makes sure of that.
CREATE OR REPLACE VIEW stg_terminal_responses AS
WITH final AS (
    SELECT
        model,
        task_id,
        sample,
        max(attempt) AS attempt,
        arg_max_null(choice, attempt) AS choice,
        arg_max_null(invalid_reason, attempt) AS invalid_reason,
        arg_max_null(response, attempt) AS response
    FROM responses
    GROUP BY model, task_id, sample
)
SELECT * FROM final;
