"""Rule bm25_index: corpus.parquet → Lucene index (Pyserini/Anserini)."""

from hardneg.bm25 import build_index, heap_for
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
build_index(snakemake.input.corpus, snakemake.output.index, threads=snakemake.threads,
            max_heap=heap_for(snakemake.resources.mem_mb), **snakemake.params.index)
