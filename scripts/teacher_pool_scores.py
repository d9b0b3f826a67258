"""Rule teacher_pool_scores: a teacher run's model (a re-ranking run: the ColBERT teacher) + the miner's ranking of a
split + its qrels → the teacher's scores, as it re-ranks, of the pool's candidates and of the split's judged
positives, which a run that distils from it learns from."""

import torch

from hardneg.io.logs import log_to
from hardneg.pipeline.rerank import score_pool_split

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
given, params = snakemake.input, snakemake.params
# a pair scorer's raw texts (a pretrained cross-encoder forms its pairs from them): the split's queries, the corpus
texts = (params.queries_file, given.corpus) if "corpus" in given.keys() else None
score_pool_split(params.method, given.model, given.cache, params.split, given.ranking,
                 params.qrels_file, candidates_path=snakemake.output.candidates,
                 positives_path=snakemake.output.positives, depth=params.depth, batch_size=params.batch_size,
                 device=params.device, method_modules=params.method_modules, texts=texts, teacher=True)
