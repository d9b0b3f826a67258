"""Rule near_duplicates: a dataset's corpus → its exact and near-duplicate document pairs (MinHash LSH)."""

from hardneg.io.logs import log_to
from hardneg.mining.duplicates import duplicates_stage

log_to(snakemake.log[0])
options = snakemake.params.duplicates
duplicates_stage(snakemake.input.corpus, snakemake.output.duplicates, threshold=options["threshold"],
                 num_perm=options["num_perm"], shingle_size=options["shingle_size"], seed=snakemake.params.seed)
