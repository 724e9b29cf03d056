-- stg_responses: one row per loaded response row, retries and samples included.
-- Key: (model, task_id, sample, attempt). The responses table as loaded, without the
-- file bookkeeping (stg_terminal_responses keeps the last attempt of each sample).
CREATE OR REPLACE VIEW stg_responses AS
WITH final AS (
    SELECT model, task_id, sample, attempt, response, choice, invalid_reason, choice_source FROM responses
)
SELECT * FROM final;
