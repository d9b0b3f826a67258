"""Rules figure_training_curves and figure_adore_vs_adore_l: the runs' train_log.parquet → dev MRR@10 against
optimiser steps (PNG and data)."""

from hardneg.figures.curves import write_curves
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
# A named input of one file arrives as a string, of several as a list.
logs = [snakemake.input.train_logs] if isinstance(snakemake.input.train_logs, str) else list(snakemake.input.train_logs)
write_curves(snakemake.params.name, dict(zip(snakemake.params.runs, logs)), snakemake.params.labels,
             snakemake.output.data, snakemake.output.png)
