"""Rule fuse: the input runs' rankings of one split (+ the tuned α) → the fusion run's ranking (Parquet, TREC)."""

from hardneg.io.logs import log_to
from hardneg.pipeline.fuse import fuse_split

log_to(snakemake.log[0])
# A named input of one file arrives as a string, of several as a list.
rankings = snakemake.input.rankings
rankings = [rankings] if isinstance(rankings, str) else list(rankings)
fuse_split(snakemake.params.method, snakemake.params.fusion, rankings, snakemake.output.ranking, snakemake.output.trec,
           tag=snakemake.wildcards.run, tuning_path=snakemake.input.get("tuning"),
           method_modules=snakemake.params.method_modules)
