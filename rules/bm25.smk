# BM25 with Pyserini: a Lucene index per BM25 run, then top-k retrieval for every split.

BM25_RUNS = names_regex(runs_with_method("bm25"))


rule bm25_index:
    input:
        corpus=lambda w: f"{run_dataset_dir(w)}/corpus.parquet",
    output:
        index=directory(f"{RESULTS}/{{run}}/bm25_index"),
    wildcard_constraints:
        run=BM25_RUNS,
    params:
        index=lambda w: run_params(w.run, "fields", "stemmer"),
    log:
        f"{RESULTS}/{{run}}/logs/bm25_index.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/bm25_index.tsv"
    threads: 2
    resources:
        mem_mb=6000,
        runtime=120,
    conda:
        "../environment.yml"
    script:
        "../scripts/bm25_index.py"


rule bm25_search:
    input:
        index=f"{RESULTS}/{{run}}/bm25_index",
        queries=lambda w: f"{run_dataset_dir(w)}/queries",
    output:
        run=f"{RESULTS}/{{run}}/runs/{{split}}.parquet",
        trec=f"{RESULTS}/{{run}}/runs/{{split}}.trec",
    wildcard_constraints:
        run=BM25_RUNS,
    params:
        search=lambda w: run_params(w.run, "k1", "b", "top_k", "title_weight"),
    log:
        f"{RESULTS}/{{run}}/logs/bm25_search_{{split}}.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/bm25_search_{{split}}.tsv"
    threads: 2
    resources:
        mem_mb=6000,
        runtime=120,
    conda:
        "../environment.yml"
    script:
        "../scripts/bm25_search.py"
