"""Rule positive_scores: the miner's query and corpus embeddings + the split's qrels → the miner's score of every
relevant (query, document) pair of the split, which its candidate pools of that split read."""

from hardneg.io.logs import log_to
from hardneg.mining.negatives import positive_scores_stage

log_to(snakemake.log[0])
positive_scores_stage(snakemake.input.query_emb, snakemake.input.query_ids, snakemake.input.doc_emb,
                      snakemake.input.doc_ids,
                      snakemake.params.qrels_file,
                      snakemake.output.positives)
