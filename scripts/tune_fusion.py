"""Rule tune_fusion: the input runs' rankings of the tuning split + its qrels → the α grid's values and the chosen
α of a fusion run (fusion_tuning.parquet, fusion_tuning.json)."""

from hardneg.io.logs import log_to
from hardneg.pipeline.fuse import tune_fusion

log_to(snakemake.log[0])
# A named input of one file arrives as a string, of several as a list.
rankings = snakemake.input.rankings
rankings = [rankings] if isinstance(rankings, str) else list(rankings)
tune_fusion(snakemake.params.method, snakemake.params.fusion, snakemake.params.seed, rankings,
            snakemake.params.qrels_file, snakemake.output.json,
            snakemake.output.parquet, trained_on=snakemake.params.trained_on,
            method_modules=snakemake.params.method_modules, run=snakemake.wildcards.run)
