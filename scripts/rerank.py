"""Rule rerank: a re-ranking model + another run's ranking of one split → the new ranking (Parquet, TREC)."""

import torch

from hardneg.io.logs import log_to
from hardneg.pipeline.rerank import rerank_split

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
rerank, given, split = snakemake.params.rerank, snakemake.input, snakemake.wildcards.split
# a pair scorer's raw texts (a pretrained cross-encoder forms its pairs from them): the split's queries, the corpus
texts = (snakemake.params.queries_file, given.corpus) if "corpus" in given.keys() else None
rerank_split(snakemake.params.method, given.model, given.cache, split, given.candidates,
             ranking_path=snakemake.output.ranking, trec_path=snakemake.output.trec, depth=rerank["depth"],
             batch_size=rerank["batch_size"], tag=snakemake.wildcards.run, device=snakemake.params.device,
             method_modules=snakemake.params.method_modules, texts=texts)
