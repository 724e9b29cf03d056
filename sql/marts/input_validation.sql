-- input_validation: one row per family × channel that has tasks for the family.
-- Key: (family_id, channel).
-- A family is input-validated in a channel when every verifiable pair is separated;
-- a family with no verifiable pair passes.
CREATE OR REPLACE VIEW input_validation AS
WITH family_channels AS (
    SELECT DISTINCT family_id, channel FROM channel_tasks
),
pair_counts AS (
    SELECT
        family_id,
        channel,
        count(*) AS verifiable_pairs,
        count(*) FILTER (WHERE separated) AS separated_pairs
    FROM pair_separation
    GROUP BY family_id, channel
),
final AS (
    SELECT
        fc.family_id,
        fc.channel,
        coalesce(pc.verifiable_pairs, 0) AS verifiable_pairs,
        coalesce(pc.separated_pairs, 0) AS separated_pairs,
        coalesce(pc.verifiable_pairs = pc.separated_pairs, true) AS input_validated
    FROM family_channels AS fc
    LEFT JOIN pair_counts AS pc USING (family_id, channel)
)
SELECT * FROM final;
