-- stg_channels: one row per channel or bundle. Key: channel.
-- The channel table as loaded: display group, its name (prompts, row labels, chart
-- panels), a leaderboard's subgroup and column label (the name where a channel table
-- gives none), the distance and cutoff of a single channel, the components of a
-- bundle, the display position.
CREATE OR REPLACE VIEW stg_channels AS
WITH final AS (
    SELECT channel, "group", subgroup, coalesce(column_label, name) AS column_label, name, distance, cutoff, components, position
    FROM channels
)
SELECT * FROM final;
