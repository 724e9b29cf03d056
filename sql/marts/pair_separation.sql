-- pair_separation: one row per family × channel × verifiable candidate pair.
-- Key: (family_id, channel, label_a, label_b), label_a < label_b.
-- A pair is verifiable in a channel when both candidates have a value in it (for a
-- bundle: in at least one component). It is separated when its distance is at least
-- the channel cutoff (for a bundle: when any component separates it).
-- The 1e-9 relative slack keeps a pair exactly one cutoff apart (1.2 D vs 0.9 D)
-- separated despite binary floating point (|1.2 - 0.9| = 0.29999999999999993).
CREATE OR REPLACE VIEW pair_separation AS
WITH component_pairs AS (
    SELECT
        cc.channel,
        d.family_id,
        d.label_a,
        d.label_b,
        d.distance,
        c.cutoff,
        d.distance >= c.cutoff * (1 - 1e-9) AS separated
    FROM stg_pair_distances AS d
    JOIN stg_channel_components AS cc ON cc.component = d.channel
    JOIN stg_channels AS c ON c.channel = d.channel
),
final AS (
    SELECT
        family_id,
        channel,
        label_a,
        label_b,
        -- distance and cutoff only mean something for a single channel
        CASE WHEN count(*) = 1 THEN max(distance) END AS distance,
        CASE WHEN count(*) = 1 THEN max(cutoff) END AS cutoff,
        max(distance / cutoff) AS distance_over_cutoff,
        bool_or(separated) AS separated
    FROM component_pairs
    GROUP BY family_id, channel, label_a, label_b
)
SELECT * FROM final;
