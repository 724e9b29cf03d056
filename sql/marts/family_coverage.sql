-- family_coverage: one row per model × family × channel that has tasks for the family.
-- Key: (model, family_id, channel).
-- How many of the tasks the channel reads for the family (channel_tasks: its source,
-- shuffled and cf tasks and its P0 task) the model has a response to, and how many of the
-- channel's own tasks (all but P0, which every channel lists). A family is answered in full
-- by a model in a channel when missing_tasks = 0; the model was run on the pair at all when
-- answered_property_tasks > 0.
CREATE OR REPLACE VIEW family_coverage AS
WITH required_counts AS (
    SELECT family_id, channel, count(*) AS required_tasks
    FROM channel_tasks
    GROUP BY family_id, channel
),
answered AS (
    -- every (model, task) with any response has a terminal one; all responses are cheaper to scan
    SELECT DISTINCT model, task_id FROM stg_responses
),
answered_counts AS (
    SELECT ct.family_id, ct.channel, a.model, count(*) AS answered_tasks,
           count(*) FILTER (WHERE ct.condition <> 'none') AS answered_property_tasks
    FROM channel_tasks AS ct
    JOIN answered AS a USING (task_id)
    GROUP BY ct.family_id, ct.channel, a.model
),
final AS (
    SELECT
        m.model,
        rc.family_id,
        rc.channel,
        rc.required_tasks,
        coalesce(ac.answered_tasks, 0) AS answered_tasks,
        coalesce(ac.answered_property_tasks, 0) AS answered_property_tasks,
        rc.required_tasks - coalesce(ac.answered_tasks, 0) AS missing_tasks
    FROM required_counts AS rc
    CROSS JOIN stg_models AS m
    LEFT JOIN answered_counts AS ac
      ON ac.family_id = rc.family_id AND ac.channel = rc.channel AND ac.model = m.model
)
SELECT * FROM final;
