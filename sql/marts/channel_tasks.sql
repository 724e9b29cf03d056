-- channel_tasks: one row per family × channel × task that the channel reads for the family.
-- Key: (family_id, channel, task_id).
-- The family's source, shuffled and cf tasks in the channel, and its P0 task: P0 shows no
-- property, so it belongs to no channel and is listed under every channel the family has
-- tasks in. Coverage (which families are complete) and the cohort tasks both read this rule.
CREATE OR REPLACE VIEW channel_tasks AS
WITH family_channels AS (
    SELECT DISTINCT family_id, channel FROM stg_tasks WHERE channel <> 'none'
),
final AS (
    SELECT fc.family_id, fc.channel, t.task_id, t.condition
    FROM family_channels AS fc
    JOIN stg_tasks AS t
      ON t.family_id = fc.family_id AND (t.channel = fc.channel OR t.condition = 'none')
)
SELECT * FROM final;
