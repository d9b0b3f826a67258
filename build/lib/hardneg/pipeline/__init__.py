"""The workflow layer: the configuration composed and checked against every domain (:mod:`.config`), the run
plan (:mod:`.plan`), runs in episodes (:mod:`.episodes`), rule resources (:mod:`.resources`), the starter config
(:mod:`.starter`) and the stage drivers that dispatch on a run's method (:mod:`.train`, :mod:`.rerank`)."""
