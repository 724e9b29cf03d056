-- family_candidates: one row per family. Key: family_id.
-- The family with its source label and K_f, its number of candidates (the random
-- baseline's 1/K_f, the model's offsets).
CREATE OR REPLACE VIEW family_candidates AS
WITH family_size AS (
    SELECT family_id, count(*) AS n_candidates FROM stg_candidates GROUP BY family_id
),
final AS (
    SELECT f.family_id, f.scaffold, f.source_label, s.n_candidates
    FROM stg_families AS f
    JOIN family_size AS s USING (family_id)
)
SELECT * FROM final;
