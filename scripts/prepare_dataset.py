"""Rule prepare_dataset: any supported source → canonical dataset folder; its empty documents, if any, are reported
on the console with what dense runs do with them (the dataset's empty_documents setting)."""

import os

from hardneg.datasets.empty_documents import report
from hardneg.datasets.prepare import prepare_dataset
from hardneg.io.logs import console, log_to

log_to(snakemake.log[0])
dataset = snakemake.params.dataset
stats = prepare_dataset(dataset, os.path.dirname(snakemake.output.corpus))
message = report(snakemake.wildcards.dataset, stats, dataset["empty_documents"])
if message:
    console(message)
