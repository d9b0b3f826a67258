"""Rule figure_gradient_norms: the runs' train_log.parquet → their per-step gradient norms and the ratio of the
reference run's mean norm to each other run's (PNG and data)."""

from hardneg.figures.gradient_norms import write_gradient_norms
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
# A named input of one file arrives as a string, of several as a list.
logs = [snakemake.input.train_logs] if isinstance(snakemake.input.train_logs, str) else list(snakemake.input.train_logs)
write_gradient_norms(dict(zip(snakemake.params.runs, logs)), snakemake.params.labels, snakemake.params.reference,
                     snakemake.output.data, snakemake.output.png)
