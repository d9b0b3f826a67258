"""Rule run_config: record the configuration a run actually uses."""

from hardneg.config import write_resolved
from hardneg.logs import log_to

log_to(snakemake.log[0])
write_resolved(snakemake.params.resolved, snakemake.output[0], snakemake.params.loaded_model)
