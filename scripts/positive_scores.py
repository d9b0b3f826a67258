"""Rule positive_scores: the mining run's query and corpus embeddings + training qrels → the mining model's score
of every relevant (query, document) pair of the training split."""

import os

from hardneg.io.logs import log_to
from hardneg.mining.negatives import positive_scores_stage

log_to(snakemake.log[0])
positive_scores_stage(snakemake.input.query_emb, snakemake.input.query_ids, snakemake.input.doc_emb,
                      snakemake.input.doc_ids, os.path.join(snakemake.input.qrels, f"{snakemake.params.split}.parquet"),
                      snakemake.output.positives)
