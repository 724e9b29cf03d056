-- stg_candidates: one row per family × candidate label. Key: (family_id, label).
-- The candidates table as loaded.
CREATE OR REPLACE VIEW stg_candidates AS
WITH final AS (
    SELECT family_id, label, fragment, molecule FROM candidates
)
SELECT * FROM final;
