"""Rule leakage_table: the miner's pool + each policy's negatives + the dataset's hidden positives → the leakage and
hardness of each policy (results/false_negatives/leakage.parquet and .md)."""

from hardneg.io.logs import log_to
from hardneg.mining.leakage import write_leakage

log_to(snakemake.log[0])
settings = dict(snakemake.params.settings)
policies = list(settings["policies"])
write_leakage(snakemake.input.pool, dict(zip(policies, snakemake.input.selections, strict=True)),
              snakemake.params.hidden_file, snakemake.output.table,
              snakemake.output.markdown, reference=policies[0], settings=dict(settings["settings"]),
              miner=settings["miner"], dataset=settings["dataset"], split=settings["split"], depth=settings["depth"])
