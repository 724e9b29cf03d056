-- binomial_cells: one row per model × channel × condition × cohort family.
-- Key: (model, channel, condition, family_id).
-- Right answers (successes) out of answers (trials) in the cell's cohort tasks, for the
-- hierarchical model: the cf tasks of a family share their covariates, so they pool into
-- one cell, and so do repeated samples of a task. Condition 'none' holds the family's P0
-- answers, repeated under each channel whose cohort holds the family. An invalid answer
-- is a trial that is not a success, as in every accuracy.
CREATE OR REPLACE VIEW binomial_cells AS
WITH final AS (
    SELECT model, channel, condition, family_id,
           sum(correct_samples)::BIGINT AS successes, sum(samples)::BIGINT AS trials
    FROM cohort_tasks
    GROUP BY model, channel, condition, family_id
)
SELECT * FROM final;
