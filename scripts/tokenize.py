"""Rule tokenize: corpus and queries of every split → memory-mapped token ids (each text after its side's prompt;
empty documents left out when the dataset's empty_documents is exclude); texts cut at the maximum lengths are
reported on the console."""

from hardneg.dense.tokenized import build_cache
from hardneg.io.logs import log_to

log_to(snakemake.log[0])
cache = snakemake.params.cache
build_cache(cache["tokenizer"], snakemake.input.corpus, dict(snakemake.params.queries_files),
            snakemake.output.cache, doc_max_length=cache["doc_max_length"], query_max_length=cache["query_max_length"],
            exclude_empty=cache["empty_documents"] == "exclude", dataset=snakemake.wildcards.dataset,
            query_prompt=cache["query_prompt"], doc_prompt=cache["doc_prompt"])
