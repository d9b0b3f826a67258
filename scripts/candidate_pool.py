"""Rule candidate_pool: the miner's ranking of a split + its qrels + the miner's positive scores (+ a BM25 ranking,
a cross-encoder's probabilities, the corpus's duplicate pairs) → the candidate pool its mining runs select from."""

from hardneg.io.logs import log_to
from hardneg.mining.pool import pool_stage

log_to(snakemake.log[0])
given = snakemake.input
pool_stage(given.ranking, snakemake.params.qrels_file, snakemake.output.pool,
           depth=snakemake.params.depth, positives_path=given.positives, bm25_path=given.get("bm25_ranking"),
           ce_path=given.get("ce_candidates"), ce_positives_path=given.get("ce_positives"),
           duplicates_path=given.get("duplicates"))
