"""Rules figure_<name>: the figure named by the `name` param (hardneg.pipeline.figures.FIGURES) from its inputs and
params → its data (Parquet) and PNG."""

from hardneg.pipeline.figures import FIGURES
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
FIGURES[snakemake.params.name].build(dict(snakemake.input.items()), dict(snakemake.params.items()),
                                     snakemake.output.data, snakemake.output.png)
