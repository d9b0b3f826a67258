"""Datasets in one canonical form (:mod:`.canonical`: corpus, queries and qrels per split), turned from each source
format by an adapter (:mod:`.adapters`, one module per format) and prepared by :mod:`.prepare`."""
