"""Rule evaluate: the run's ranking of every split + qrels → metrics.json (headline: the evaluation split) and
per-query values of the evaluation split."""

import os

from hardneg.evaluation.metrics import evaluate_run
from hardneg.io.logs import log_to
from hardneg.schema.files import read_resolved

log_to(snakemake.log[0])
# A named input of one file arrives as a string, of several as a list.
paths = snakemake.input.rankings
paths = [paths] if isinstance(paths, str) else list(paths)
rankings = {os.path.basename(path).removesuffix(".parquet"): path for path in paths}
embeddings = {key: snakemake.input[key] for key in ("query_npy", "query_ids", "doc_npy", "doc_ids")
              if key in snakemake.input.keys()}
evaluate_run(rankings, snakemake.input.qrels, read_resolved(snakemake.input.config), snakemake.output.metrics,
             snakemake.output.per_query, measures=snakemake.params.measures, embeddings=embeddings or None)
