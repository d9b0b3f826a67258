"""Rule false_negatives_effectiveness: the per-query values of the run trained on each policy's negatives → their
means and paired tests against the reference policy's run (results/false_negatives/effectiveness.parquet, .md)."""

from hardneg.io.logs import log_to
from hardneg.experiments.false_negatives_effectiveness import write_effectiveness

log_to(snakemake.log[0])
write_effectiveness(list(snakemake.params.policies), list(snakemake.params.runs), snakemake.input.per_query,
                    list(snakemake.params.measures), snakemake.params.split, snakemake.output.table,
                    snakemake.output.markdown, correction=snakemake.params.correction)
