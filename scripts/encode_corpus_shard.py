"""Rule encode_corpus_shard: trained model + tokenized corpus shard → embeddings of that shard."""

import torch

from hardneg.dense.encode import encode_corpus_shard
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
encode = snakemake.params.encode
encode_corpus_shard(snakemake.input.model, snakemake.input.cache, int(snakemake.wildcards.shard), encode["shards"],
                    snakemake.output.npy, snakemake.output.ids, batch_size=encode["batch_size"], fp16=encode["fp16"],
                    precision=encode["precision"],
                    device=snakemake.params.device)
