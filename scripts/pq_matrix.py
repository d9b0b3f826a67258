"""Rule pq_matrix: metrics of every (training index, evaluation index) cell → matrix table (Parquet, Markdown)."""

from hardneg.io.logs import log_to
from hardneg.methods.adore.pq_matrix import write_pq_matrix

log_to(snakemake.log[0])
indexes = snakemake.params.indexes
cells = {(a, b): path for (a, b), path in zip([(a, b) for a in indexes for b in indexes], snakemake.input)}
write_pq_matrix(cells, indexes, snakemake.params.measures, snakemake.output.table, snakemake.output.markdown)
