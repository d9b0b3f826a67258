"""Rule figure_tsne: one query's embeddings and rankings before (the docs run) and after ADORE, the fixed corpus
embeddings and the qrels → t-SNE map (PNG and data)."""

from hardneg.figures.tsne import INPUTS, write_tsne
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
params = snakemake.params
write_tsne({name: snakemake.input[name] for name in INPUTS}, params.split, before=params.docs, after=params.run,
           qid=params.qid, negatives=params.negatives, perplexity=params.perplexity, seed=params.seed,
           data_path=snakemake.output.data, png_path=snakemake.output.png)
