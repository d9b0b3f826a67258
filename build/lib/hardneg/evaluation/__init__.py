"""Evaluation and comparison of runs: metrics and per-query values of a ranking (:mod:`.metrics`), pairwise
errors (:mod:`.pairwise`), the summary with significance tests (:mod:`.summary`), training time
(:mod:`.timing`), the results tables (:mod:`.tables`) and seeded query samples (:mod:`.sampling`)."""
