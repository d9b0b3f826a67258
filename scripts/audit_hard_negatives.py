"""Rule audit_hard_negatives: hard negatives + the miner's ranking + training qrels + positive scores + the
selection and its pool (+ a BM25 ranking of the training split) → Markdown report, per-query AUDIT Parquet and the
summary as JSON. An imported list: its own positives' scores, and no ranking, selection or pool."""

from hardneg.io.logs import log_to
from hardneg.mining.audit import audit_stage

log_to(snakemake.log[0])
reference = snakemake.input.reference  # a list: empty when the run has no reference ranking (inputs.bm25)
reference = [reference] if isinstance(reference, str) else list(reference)
# an imported list (PLAN.mining.audit_inputs) has no miner's ranking, selection or pool
audit_stage(snakemake.input.hardnegs, snakemake.input.get("ranking"),
            snakemake.params.qrels_file, snakemake.input.positives,
            snakemake.output.markdown, snakemake.output.table, bm25_ranking_path=reference[0] if reference else None,
            summary_path=snakemake.output.summary, depth=snakemake.params.depth, corpus_path=snakemake.input.corpus,
            selection_path=snakemake.input.get("selection"), pool_path=snakemake.input.get("pool"))
