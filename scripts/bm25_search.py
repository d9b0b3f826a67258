"""Rule bm25_search: Lucene index + one split's queries → BM25 ranking (Parquet and TREC)."""

from hardneg.bm25 import heap_for, retrieve_split
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
search = snakemake.params.search
retrieve_split(snakemake.input.index, snakemake.params.queries_file,
               snakemake.output.ranking, snakemake.output.trec, top_k=search["top_k"], k1=search["k1"], b=search["b"],
               title_weight=search["title_weight"], threads=snakemake.threads, tag=snakemake.wildcards.run,
               max_heap=heap_for(snakemake.resources.mem_mb))
