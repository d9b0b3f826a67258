"""Rule training_time_table: the training log and training-job benchmark record of each trained run of the
summary → results/tables/training_time.{md,parquet}."""

from hardneg.evaluation.timing import write_training_time_table
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
write_training_time_table(list(snakemake.params.runs), dict(snakemake.params.methods),
                          snakemake.input.train_log, list(snakemake.params.benchmarks),
                          snakemake.output.markdown, snakemake.output.table,
                          reference=snakemake.params.reference)
