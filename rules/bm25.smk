# BM25 with Pyserini: a Lucene index per BM25 run, then top-k retrieval for every split.

LEXICAL_RUNS = names_regex(PLAN.lexical_runs)


rule bm25_index:
    input:
        corpus=lambda w: LAYOUT.corpus(PLAN.dataset(w.run)),
    output:
        index=update(directory(LAYOUT.bm25_index("{run}"))),
    wildcard_constraints:
        run=LEXICAL_RUNS,
    params:
        index=lambda w: run_params(w.run, "fields", "stemmer"),
    message:
        "build the BM25 index of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "bm25_index"),
    benchmark:
        LAYOUT.benchmark("{run}", "bm25_index")
    threads: 2
    resources:
        **rule_resources("bm25_index", mem_mb=6000, runtime=120),
    conda:
        "../environment.yml"
    script:
        "../scripts/bm25_index.py"


rule bm25_search:
    input:
        index=LAYOUT.bm25_index("{run}"),
        queries=lambda w: LAYOUT.queries_dir(PLAN.dataset(w.run)),
    output:
        ranking=update(LAYOUT.ranking("{run}", "{split}")),
        trec=update(LAYOUT.ranking_trec("{run}", "{split}")),
    wildcard_constraints:
        run=LEXICAL_RUNS,
    params:
        search=lambda w: run_params(w.run, "k1", "b", "top_k", "title_weight"),
        queries_file=split_file_of("queries", lambda w: w.split),
    message:
        "BM25 search of split {wildcards.split}, run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "bm25_search_{split}"),
    benchmark:
        LAYOUT.benchmark("{run}", "bm25_search_{split}")
    threads: 2
    resources:
        **rule_resources("bm25_search", mem_mb=6000, runtime=120),
    conda:
        "../environment.yml"
    script:
        "../scripts/bm25_search.py"
