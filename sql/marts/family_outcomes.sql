-- family_outcomes: one row per model × channel × cohort family.
-- Key: (model, channel, family_id).
-- The per-family quantities every metric aggregates:
--   y_p0, y_source, y_shuffled   correctness of the P0, source and shuffled tasks
--   cf_tasks, cf_correct         number of cf tasks and the sum of their correctness
--   cf_flip                      mean over cf tasks of 1[choice = k]: the answer follows the
--                                counterfactual's properties (NULL without cf tasks)
--   cf_persist, cf_other         mean over cf tasks of 1[choice = source], of anything else
--   n_candidates                 K_f
--   *_valid                      the same over valid answers only: a task whose answers are
--                                all invalid leaves the family's means (NULL where none is left)
CREATE OR REPLACE VIEW family_outcomes AS
WITH by_condition AS (
    -- cohort_tasks holds the cohort's tasks of each channel, the family's P0 task among them
    SELECT
        model,
        channel,
        family_id,
        avg(y) FILTER (WHERE condition = 'none') AS y_p0,
        avg(y) FILTER (WHERE condition = 'source') AS y_source,
        avg(y) FILTER (WHERE condition = 'shuffled') AS y_shuffled,
        count(*) FILTER (WHERE condition = 'cf') AS cf_tasks,
        coalesce(sum(y) FILTER (WHERE condition = 'cf'), 0) AS cf_correct,
        avg(y) FILTER (WHERE condition = 'cf') AS cf_flip,
        avg(chose_source) FILTER (WHERE condition = 'cf') AS cf_persist,
        avg(chose_other) FILTER (WHERE condition = 'cf') AS cf_other,
        avg(y_valid) FILTER (WHERE condition = 'none') AS y_p0_valid,
        avg(y_valid) FILTER (WHERE condition = 'source') AS y_source_valid,
        avg(y_valid) FILTER (WHERE condition = 'shuffled') AS y_shuffled_valid,
        count(y_valid) FILTER (WHERE condition = 'cf') AS cf_tasks_valid,
        coalesce(sum(y_valid) FILTER (WHERE condition = 'cf'), 0) AS cf_correct_valid,
        avg(y_valid) FILTER (WHERE condition = 'cf') AS cf_flip_valid,
        avg(chose_source_valid) FILTER (WHERE condition = 'cf') AS cf_persist_valid,
        avg(chose_other_valid) FILTER (WHERE condition = 'cf') AS cf_other_valid
    FROM cohort_tasks
    GROUP BY model, channel, family_id
),
final AS (
    SELECT
        b.model,
        b.channel,
        b.family_id,
        b.y_p0,
        b.y_source,
        b.y_shuffled,
        b.cf_tasks,
        b.cf_correct,
        b.cf_flip,
        b.cf_persist,
        b.cf_other,
        f.n_candidates,
        b.y_p0_valid,
        b.y_source_valid,
        b.y_shuffled_valid,
        b.cf_tasks_valid,
        b.cf_correct_valid,
        b.cf_flip_valid,
        b.cf_persist_valid,
        b.cf_other_valid
    FROM by_condition AS b
    JOIN family_candidates AS f USING (family_id)
)
SELECT * FROM final;
