"""Rule run_config: record the configuration a run actually uses."""

from hardneg.io.logs import log_to
from hardneg.io.provenance import write_resolved

log_to(snakemake.log[0])
write_resolved(snakemake.params.resolved, snakemake.output[0], snakemake.params.loaded_model)
