-- invalid_rates: one row per model.
-- Key: model.
-- Terminal answers, those that name no candidate (invalid: choice NULL), and their share
-- (a proportion; pages show it in %).
CREATE OR REPLACE VIEW invalid_rates AS
WITH final AS (
    SELECT
        model,
        count(*) AS answers,
        count(*) FILTER (WHERE choice IS NULL) AS invalid_answers,
        avg(CASE WHEN choice IS NULL THEN 1.0 ELSE 0.0 END) AS invalid_share
    FROM stg_terminal_responses
    GROUP BY model
)
SELECT * FROM final;
