"""Rule hardneg_viewer: a run's hard negatives, their audit, the miner's ranking, positive scores, the corpus, the
training queries and qrels (+ a BM25 ranking, the pool) → one searchable HTML page of the flagged and sampled
queries. An imported list: its own positives' scores and its card, and no ranking or pool."""

from hardneg.io.logs import log_to
from hardneg.report.viewer import viewer_stage

log_to(snakemake.log[0])
split = snakemake.params.split
reference = snakemake.input.reference  # a list: empty when the run has no reference ranking (inputs.bm25)
reference = [reference] if isinstance(reference, str) else list(reference)
# an imported list (PLAN.mining.viewer_inputs) has a card and no miner's ranking or pool
viewer_stage(snakemake.wildcards.run, hardnegs_path=snakemake.input.hardnegs,
             positives_path=snakemake.input.positives, audit_path=snakemake.input.audit,
             audit_summary_path=snakemake.input.audit_summary, mining_ranking_path=snakemake.input.get("ranking"),
             corpus_path=snakemake.input.corpus, queries_path=snakemake.params.queries_file,
             qrels_path=snakemake.params.qrels_file, output_path=snakemake.output.viewer,
             bm25_ranking_path=reference[0] if reference else None, pool_path=snakemake.input.get("pool"),
             card_path=snakemake.input.get("card"), miner=snakemake.params.miner, split=split,
             depth=snakemake.params.depth, seed=snakemake.params.seed, settings=snakemake.params.viewer)
