-- cohort_tasks: one row per model × channel × task of the channel's cohort families.
-- Key: (model, channel, task_id).
-- What each channel's comparisons and the hierarchical model read: task_outcomes of the
-- tasks in channel_tasks (the P0 task listed under each channel) for the families in the
-- channel's cohort, for each model that answered the family's tasks in full. `channel` is
-- the cohort's channel; a P0 row repeats under each.
CREATE OR REPLACE VIEW cohort_tasks AS
WITH final AS (
    SELECT
        o.model,
        ct.channel,
        o.task_id,
        o.family_id,
        o.condition,
        o.target,
        o.source_label,
        o.samples,
        o.correct_samples,
        o.y,
        o.chose_source,
        o.chose_other,
        o.invalid,
        o.valid_samples,
        o.y_valid,
        o.chose_source_valid,
        o.chose_other_valid
    FROM channel_tasks AS ct
    JOIN cohort AS c ON c.family_id = ct.family_id AND c.channel = ct.channel AND c.in_cohort
    JOIN task_outcomes AS o ON o.task_id = ct.task_id
    -- a partial model enters only the cohort families it answered in full (a complete
    -- model answered every cohort family in full, by the cohort's definition)
    JOIN family_coverage AS fc
      ON fc.model = o.model AND fc.family_id = ct.family_id AND fc.channel = ct.channel AND fc.missing_tasks = 0
)
SELECT * FROM final;
