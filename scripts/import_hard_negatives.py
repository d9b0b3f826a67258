"""Rule import_hard_negatives: the imported list a run names (inputs.<miner role>: {imported: <folder>}) → the run's
copy of it (hardnegs.parquet, hardnegs_positives.parquet) and its card (hardnegs_card.json)."""

from hardneg.imports.runs import take_imported_list
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
take_imported_list(hardnegs=snakemake.input.hardnegs, positives=snakemake.input.positives, card=snakemake.input.card,
                   run=snakemake.wildcards.run, dataset=snakemake.params.dataset, split=snakemake.params.split,
                   out_hardnegs=snakemake.output.hardnegs, out_positives=snakemake.output.positives,
                   out_card=snakemake.output.card, results=snakemake.params.results)
