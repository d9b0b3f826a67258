"""Rule rerank: a re-ranking model + another run's ranking of one split → the re-ranked run (Parquet, TREC)."""

import torch

from hardneg.io.logs import log_to
from hardneg.pipeline.rerank import rerank_split

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
rerank = snakemake.params.rerank
rerank_split(snakemake.params.method, snakemake.input.model, snakemake.input.cache, snakemake.wildcards.split, snakemake.input.candidates,
             run_path=snakemake.output.run, trec_path=snakemake.output.trec, depth=rerank["depth"],
             batch_size=rerank["batch_size"], tag=snakemake.wildcards.run, device=snakemake.params.device,
             method_modules=snakemake.params.method_modules)
