"""Rule leakage_figure: the leakage table → results/false_negatives/leakage.png (leakage against hardness kept)."""

from hardneg.figures.leakage import write_leakage_figure
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
write_leakage_figure(snakemake.input.table, snakemake.output.png)
