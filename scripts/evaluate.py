"""Rule evaluate: run + qrels of the evaluation split → metrics.json and per-query values."""

import os

from hardneg.config import read_resolved
from hardneg.evaluation import evaluate_run
from hardneg.logs import log_to

log_to(snakemake.log[0])
evaluate_run(snakemake.input.run, os.path.join(snakemake.input.qrels, f"{snakemake.params.split}.parquet"),
             read_resolved(snakemake.input.config), snakemake.output.metrics, snakemake.output.per_query,
             measures=snakemake.params.measures)
