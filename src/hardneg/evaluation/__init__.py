"""Evaluation and comparison of runs: metrics and per-query values of a ranking (:mod:`.metrics`), pairwise
errors (:mod:`.pairwise`), paired significance tests, effect sizes and their correction for the number of tests
(:mod:`.significance`), the summary with significance markers (:mod:`.summary`), runs compared query by query
(:mod:`.compare`), training time (:mod:`.timing`), the results tables (:mod:`.tables`) and seeded query samples
(:mod:`.sampling`)."""
