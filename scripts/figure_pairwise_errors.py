"""Rule figure_pairwise_errors: each run's per_query.parquet → CDFs of per-query pairwise errors (PNG and data)."""

from hardneg.figures.pairwise_errors import write_pairwise_errors
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
# A named input of one file arrives as a string, of several as a list.
paths = [snakemake.input.per_query] if isinstance(snakemake.input.per_query, str) else list(snakemake.input.per_query)
write_pairwise_errors(dict(zip(snakemake.params.runs, paths)), snakemake.params.measures, snakemake.output.data,
                      snakemake.output.png)
