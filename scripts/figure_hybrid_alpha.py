"""Rule figure_hybrid_alpha: a hybrid run's fusion_tuning.{parquet,json} → its metric against α (PNG and data)."""

from hardneg.figures.hybrid_alpha import write_hybrid_alpha
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
write_hybrid_alpha(snakemake.params.run, snakemake.input.tuning, snakemake.input.summary, snakemake.output.data,
                   snakemake.output.png)
