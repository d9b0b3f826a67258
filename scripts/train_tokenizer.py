"""Rule train_tokenizer: corpus and training queries → WordPiece tokenizer folder (for the built-in model)."""

from hardneg.dense.tokenizer import train_wordpiece
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
train_wordpiece(snakemake.input.corpus, snakemake.output.tokenizer, vocab_size=int(snakemake.wildcards.vocab),
                query_paths=list(snakemake.params.queries_files))
