-- stg_channel_components: one row per channel × component single channel.
-- Key: (channel, component). A single channel is its own only component;
-- a bundle lists the single channels it combines ('*' means every single channel).
CREATE OR REPLACE VIEW stg_channel_components AS
WITH singles AS (
    SELECT channel FROM channels WHERE components IS NULL
),
bundle_parts AS (
    SELECT channel, unnest(components) AS component FROM channels WHERE components IS NOT NULL
),
final AS (
    SELECT channel, channel AS component FROM singles
    UNION ALL
    SELECT b.channel, s.channel AS component
    FROM bundle_parts AS b JOIN singles AS s ON b.component = '*' OR b.component = s.channel
)
SELECT * FROM final;
