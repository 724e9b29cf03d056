-- stg_models: one row per model that has any response. Key: model.
CREATE OR REPLACE VIEW stg_models AS
SELECT DISTINCT model FROM responses;
