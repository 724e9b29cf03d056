-- cohort: one row per family × channel that has tasks for the family.
-- Key: (family_id, channel).
-- The cohort is the input-validated families with complete coverage; it is
-- the same for every model. drop_reason says why a family is left out.
CREATE OR REPLACE VIEW cohort AS
WITH final AS (
    SELECT
        iv.family_id,
        iv.channel,
        iv.input_validated,
        cv.complete_coverage,
        iv.input_validated AND cv.complete_coverage AS in_cohort,
        nullif(concat_ws('; ',
            CASE WHEN NOT iv.input_validated THEN
                format('not input-validated: {} of {} verifiable pairs below the cutoff',
                       iv.verifiable_pairs - iv.separated_pairs, iv.verifiable_pairs) END,
            CASE WHEN NOT cv.has_all_conditions THEN
                'missing P0, source or shuffled task' END,
            CASE WHEN cv.models = 0 THEN 'no responses loaded' END,
            CASE WHEN cv.models_incomplete > 0 THEN
                format('incomplete coverage: {} model(s) lack {} terminal response(s)',
                       cv.models_incomplete, cv.missing_responses) END
        ), '') AS drop_reason
    FROM input_validation AS iv
    JOIN coverage AS cv USING (family_id, channel)
)
SELECT * FROM final;
