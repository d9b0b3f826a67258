"""Rule prepare_dataset: any supported source → canonical dataset folder."""

import os

from hardneg.datasets import prepare_dataset
from hardneg.logs import log_to

log_to(snakemake.log[0])
prepare_dataset(snakemake.params.dataset, os.path.dirname(snakemake.output.corpus))
