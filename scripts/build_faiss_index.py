"""Rule build_faiss_index: corpus embeddings → a Faiss index from an index_factory string."""

from hardneg.dense.search import build_index_stage
from hardneg.io.logs import log_to
from hardneg.pipeline.index_factories import factory_key

log_to(snakemake.log[0])
build_index_stage(snakemake.input.embeddings, snakemake.params.factory, snakemake.output.index,
                  train_size=snakemake.params.train_size, seed=snakemake.params.seed, threads=snakemake.threads,
                  key=factory_key(snakemake.config, snakemake.wildcards.run, snakemake.params.factory))
