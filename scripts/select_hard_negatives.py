"""Rule select_hard_negatives: a candidate pool + the run's policy → its hard negatives (hardnegs.parquet) and what
the selection removed (hardnegs_selection.json)."""

from hardneg.io.logs import log_to
from hardneg.mining.selection import select_stage

log_to(snakemake.log[0])
select_stage(snakemake.input.pool, snakemake.output.hardnegs, snakemake.output.selection,
             policy=snakemake.params.policy, seed=snakemake.params.seed, name=snakemake.params.name,
             max_queries_without=snakemake.params.max_queries_without,
             where=snakemake.params.where)
