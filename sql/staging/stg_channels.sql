-- stg_channels: one row per channel or bundle. Key: channel.
-- The channel table as loaded: display group and name, the distance and cutoff of a
-- single channel, the components of a bundle, the display position.
CREATE OR REPLACE VIEW stg_channels AS
WITH final AS (
    SELECT channel, "group", name, distance, cutoff, components, position FROM channels
)
SELECT * FROM final;
