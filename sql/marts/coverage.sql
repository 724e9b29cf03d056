-- coverage: one row per family × channel that has tasks for the family.
-- Key: (family_id, channel).
-- Complete coverage: the family has its P0, source and shuffled tasks, and
-- every model has a terminal response for the P0 task and for each of the family's
-- source, shuffled and cf tasks in the channel.
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
answered AS (
    -- every (model, task) with any response has a terminal one; all responses are cheaper to scan
    SELECT DISTINCT model, task_id FROM stg_responses
),
answered_counts AS (
    SELECT r.family_id, r.channel, a.model, count(*) AS answered_tasks
    FROM channel_tasks AS r
    JOIN answered AS a USING (task_id)
    GROUP BY r.family_id, r.channel, a.model
),
per_model AS (
    SELECT
        rc.family_id,
        rc.channel,
        m.model,
        rc.required_tasks - coalesce(ac.answered_tasks, 0) AS missing_tasks
    FROM required_counts AS rc
    CROSS JOIN stg_models AS m
    LEFT JOIN answered_counts AS ac
      ON ac.family_id = rc.family_id AND ac.channel = rc.channel AND ac.model = m.model
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
