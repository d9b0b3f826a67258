"""Rule gather_embeddings: shard embeddings → one corpus embedding matrix and its docid table."""

from hardneg.dense.encode import gather_shards
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
gather_shards(snakemake.input.npy, snakemake.input.ids, snakemake.output.npy, snakemake.output.ids)
