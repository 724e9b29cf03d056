-- stg_families: one row per family. Key: family_id.
-- The families table as loaded; its source candidate's label is called source_label.
CREATE OR REPLACE VIEW stg_families AS
WITH final AS (
    SELECT family_id, scaffold, source AS source_label FROM families
)
SELECT * FROM final;
