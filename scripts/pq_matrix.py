"""Rule pq_matrix: metrics of every (training index, evaluation index) cell → matrix table (Parquet, Markdown)."""

from hardneg.io.logs import log_to
from hardneg.experiments.pq_matrix import write_pq_matrix

log_to(snakemake.log[0])
indexes = snakemake.params.indexes
seeds = iter(snakemake.params.seeds)  # files per cell: the seeds of the run trained with its index
paths = list(snakemake.input)
cells = {}
for cell in [(a, b) for a in indexes for b in indexes]:
    count = next(seeds)
    cells[cell], paths = paths[:count], paths[count:]
write_pq_matrix(cells, indexes, snakemake.params.measures, snakemake.output.table, snakemake.output.markdown)
