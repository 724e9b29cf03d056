-- stg_pair_distances: one row per family × single channel × candidate pair with values.
-- Key: (family_id, channel, label_a, label_b). The distance the loader computed
-- between the two candidates' property values (label_a < label_b).
CREATE OR REPLACE VIEW stg_pair_distances AS
WITH final AS (
    SELECT family_id, channel, label_a, label_b, distance FROM pair_distances
)
SELECT * FROM final;
