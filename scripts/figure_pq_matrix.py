"""Rule figure_pq_matrix: results/pq_matrix/matrix.parquet → heat map of one measure (PNG and data)."""

from hardneg.figures.pq_matrix import write_pq_matrix_figure
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
write_pq_matrix_figure(snakemake.input.matrix, snakemake.params.measure, snakemake.output.data, snakemake.output.png)
