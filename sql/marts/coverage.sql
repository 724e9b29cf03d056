-- coverage: one row per family × channel that has tasks for the family.
-- Key: (family_id, channel).
-- Complete coverage: the family has its P0, source and shuffled tasks, and
-- every model that defines the cohort (model_coverage: the complete ones) has a terminal
-- response for the P0 task and for each of the family's source, shuffled and cf tasks in the channel.
CREATE OR REPLACE VIEW coverage AS
WITH required_counts AS (
    SELECT
        family_id,
        channel,
        count(*) AS required_tasks,
        bool_or(condition = 'none') AND bool_or(condition = 'source')
            AND bool_or(condition = 'shuffled') AS has_all_conditions
    FROM channel_tasks
    GROUP BY family_id, channel
),
per_model AS (
    -- only the models that define the cohort: a partial model never shrinks it
    SELECT fc.family_id, fc.channel, fc.model, fc.missing_tasks
    FROM family_coverage AS fc
    JOIN model_coverage AS mc ON mc.model = fc.model AND mc.defines_cohort
),
final AS (
    SELECT
        rc.family_id,
        rc.channel,
        rc.required_tasks,
        rc.has_all_conditions,
        count(pm.model) AS models,
        count(pm.model) FILTER (WHERE pm.missing_tasks > 0) AS models_incomplete,
        coalesce(sum(pm.missing_tasks), 0) AS missing_responses,
        rc.has_all_conditions
            AND count(pm.model) > 0
            AND count(pm.model) FILTER (WHERE pm.missing_tasks > 0) = 0 AS complete_coverage
    FROM required_counts AS rc
    LEFT JOIN per_model AS pm USING (family_id, channel)
    GROUP BY rc.family_id, rc.channel, rc.required_tasks, rc.has_all_conditions
)
SELECT * FROM final;
