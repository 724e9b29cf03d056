-- stg_families: one row per family. Key: family_id.
-- Adds K_f, the number of candidates.
CREATE OR REPLACE VIEW stg_families AS
WITH family_size AS (
    SELECT family_id, count(*) AS n_candidates FROM candidates GROUP BY family_id
),
final AS (
    SELECT f.family_id, f.scaffold, f.source AS source_label, s.n_candidates
    FROM families AS f
    JOIN family_size AS s USING (family_id)
)
SELECT * FROM final;
