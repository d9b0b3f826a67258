"""Rule score_pool: a cross-encoder run's model + the miner's ranking of a split + its qrels → the cross-encoder's
probabilities of the pool's candidates and of the split's judged positives (RocketQA's denoising reads them)."""

import torch

from hardneg.io.logs import log_to
from hardneg.pipeline.rerank import score_pool_split

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
given, params = snakemake.input, snakemake.params
# the raw texts a pretrained cross-encoder forms its pairs from: the split's queries, the corpus
texts = (params.queries_file, given.corpus)
score_pool_split(params.method, given.model, given.cache, params.split, given.ranking,
                 params.qrels_file, candidates_path=snakemake.output.candidates,
                 positives_path=snakemake.output.positives, depth=params.depth, batch_size=params.batch_size,
                 device=params.device, method_modules=params.method_modules, texts=texts)
