"""Rule figure_epoch_curves: the runs' train_log.parquet → each epoch's mean loss and dev MRR@100 (PNG and data)."""

from hardneg.figures.epoch_curves import write_epoch_curves
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
# A named input of one file arrives as a string, of several as a list.
logs = [snakemake.input.train_logs] if isinstance(snakemake.input.train_logs, str) else list(snakemake.input.train_logs)
write_epoch_curves(dict(zip(snakemake.params.runs, logs)), snakemake.params.labels, snakemake.output.data,
                   snakemake.output.png)
