-- stg_model_names: one row per model the benchmark names. Key: model.
-- From the optional models table: the name reports show (the model id where none is
-- given) and the group a leaderboard puts the model in (NULL: ungrouped).
CREATE OR REPLACE VIEW stg_model_names AS
WITH final AS (
    SELECT model, coalesce(display_name, model) AS display_name, "group", position
    FROM models
)
SELECT * FROM final;
