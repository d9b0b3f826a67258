"""The I/O contracts every stage shares: where artifacts live (:mod:`.layout`), their declared schemas
(:mod:`.artifacts`), atomic writes (:mod:`.atomic`), ranking files (:mod:`.rankings`), embedding matrices
(:mod:`.npyfile`), line-numbered text readers (:mod:`.readers`), a finished run's files (:mod:`.run_files`),
provenance records (:mod:`.provenance`), job logs (:mod:`.logs`) and stopping on a signal (:mod:`.stop`)."""
