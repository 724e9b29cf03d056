-- cohort_summary: one row per channel that has tasks. Key: channel.
-- Family counts behind each cohort criterion (the paper's Table 5).
CREATE OR REPLACE VIEW cohort_summary AS
WITH final AS (
    SELECT
        c.channel,
        count(*) AS families_total,
        count(*) FILTER (WHERE c.input_validated) AS input_validated,
        count(*) FILTER (WHERE c.complete_coverage) AS complete_coverage,
        count(*) FILTER (WHERE c.in_cohort) AS cohort
    FROM cohort AS c
    GROUP BY c.channel
)
SELECT f.*
FROM final AS f
LEFT JOIN stg_channels AS ch USING (channel)
ORDER BY ch.position NULLS LAST, f.channel;
