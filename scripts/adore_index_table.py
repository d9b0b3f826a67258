"""Rule adore_index_table: each ADORE run of the PQ experiment, evaluated with the index it trained with, and
its training time → results/tables/adore_indexes.{md,parquet}."""

from hardneg.io.logs import log_to
from hardneg.experiments.pq_matrix import write_index_table

log_to(snakemake.log[0])
write_index_table(list(snakemake.params.indexes), list(snakemake.params.runs), snakemake.input.metrics,
                  snakemake.input.train_log, list(snakemake.params.benchmarks), list(snakemake.params.measures),
                  snakemake.params.docs, snakemake.output.markdown, snakemake.output.table)
