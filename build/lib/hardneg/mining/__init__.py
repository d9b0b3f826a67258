"""Hard negatives: mined from a ranking (:mod:`.negatives`) and audited against the qrels and a reference
ranking (:mod:`.audit`)."""
