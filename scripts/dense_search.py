"""Rule dense_search: model + index + one split's queries → ranking (Parquet, TREC) and query embeddings."""

import torch

from hardneg.dense.search import dense_search_split
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
search = snakemake.params.search
dense_search_split(snakemake.input.model, snakemake.input.cache, snakemake.wildcards.split, snakemake.input.index,
                   snakemake.input.docids, ranking_path=snakemake.output.ranking, trec_path=snakemake.output.trec,
                   query_npy=snakemake.output.query_npy, query_ids=snakemake.output.query_ids,
                   top_k=search["top_k"], search_params=snakemake.params.search_params,
                   batch_size=search["batch_size"], tag=snakemake.wildcards.run, device=snakemake.params.device,
                   precision=snakemake.params.precision)
