-- separability: one row per channel that has source tasks. Key: channel.
-- How far each source candidate lies from its nearest distractor (the paper's Table 6):
-- the % of source tasks whose source is at least the cutoff away from every distractor,
-- and the median and quartiles of the nearest-distractor distance. Distances are raw
-- (D, Hartree, 1 − M, ppm) except for UV–Vis and bundles, which are divided by the
-- cutoff (scale = 'over_cutoff'). A source task with no verifiable pair counts as not
-- separated: nothing shows that it is.
CREATE OR REPLACE VIEW separability AS
WITH source_tasks AS (
    SELECT task_id, family_id, channel, source_label FROM benchmark_tasks WHERE condition = 'source'
),
scale AS (
    SELECT channel,
           CASE WHEN distance IS NULL OR distance = 'uvvis_l1' THEN 'over_cutoff' ELSE 'raw' END AS scale
    FROM stg_channels
),
per_task AS (
    SELECT
        t.task_id,
        t.channel,
        count(p.label_a) AS distractors_verifiable,
        min(CASE WHEN s.scale = 'raw' THEN p.distance ELSE p.distance_over_cutoff END) AS nearest,
        coalesce(bool_and(p.separated), false) AS separated_from_all
    FROM source_tasks AS t
    JOIN scale AS s USING (channel)
    LEFT JOIN pair_separation AS p
      ON p.family_id = t.family_id AND p.channel = t.channel
     AND t.source_label IN (p.label_a, p.label_b)
    GROUP BY t.task_id, t.channel
),
final AS (
    SELECT
        pt.channel,
        count(*) AS source_tasks,
        count(*) FILTER (WHERE pt.distractors_verifiable > 0) AS verifiable,
        -- this view is the paper's Table 6 as users read it, so its rate is in % here, like
        -- every table the package shows; everything upstream is a proportion or a count
        100.0 * count(*) FILTER (WHERE pt.separated_from_all) / count(*) AS separated,
        quantile_cont(pt.nearest, 0.5) AS nearest_median,
        quantile_cont(pt.nearest, 0.25) AS nearest_q1,
        quantile_cont(pt.nearest, 0.75) AS nearest_q3,
        any_value(s.scale) AS scale
    FROM per_task AS pt
    JOIN scale AS s USING (channel)
    GROUP BY pt.channel
)
SELECT f.*
FROM final AS f
JOIN stg_channels AS ch USING (channel)
ORDER BY ch.position;
