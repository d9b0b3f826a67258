"""Rule summary: each run's metrics.json and per_query.parquet → results/summary.md, summary.parquet and
summary_tests.parquet (the paired t-tests behind the markers, their p-values raw and corrected)."""

from hardneg.evaluation.summary import write_summary
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
write_summary(list(snakemake.params.runs), dict(snakemake.params.methods), snakemake.input.metrics,
              snakemake.input.per_query, dict(snakemake.params.settings), snakemake.output.markdown,
              snakemake.output.table, snakemake.output.tests)
