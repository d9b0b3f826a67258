# Faiss indexes over a run's corpus embeddings, and dense retrieval of every split.


rule build_faiss_index:
    input:
        embeddings=f"{RESULTS}/{{run}}/embeddings/corpus.npy",
    output:
        index=f"{RESULTS}/{{run}}/index/{{index}}.faiss",
    wildcard_constraints:
        run=names_regex(ENCODED_RUNS),
    params:
        factory=lambda w: index_factories(w.run)[w.index],
        train_size=lambda w: dense_params(w.run)["index"]["train_size"],
        seed=lambda w: RUNS[w.run].get("seed", config["seed"]),
    log:
        f"{RESULTS}/{{run}}/logs/build_faiss_index_{{index}}.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/build_faiss_index_{{index}}.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=120,
    conda:
        "../environment.yml"
    script:
        "../scripts/build_faiss_index.py"


rule dense_search:
    input:
        model=f"{RESULTS}/{{run}}/model",
        cache=run_cache_dir,
        index=lambda w: run_index(w.run),
        docids=lambda w: f"{RESULTS}/{doc_run(w.run)}/embeddings/corpus.ids.parquet",
    output:
        run=f"{RESULTS}/{{run}}/runs/{{split}}.parquet",
        trec=f"{RESULTS}/{{run}}/runs/{{split}}.trec",
        query_npy=f"{RESULTS}/{{run}}/embeddings/queries_{{split}}.npy",
        query_ids=f"{RESULTS}/{{run}}/embeddings/queries_{{split}}.ids.parquet",
    wildcard_constraints:
        run=DENSE,
    params:
        search=lambda w: dense_params(w.run)["search"],
        search_params=lambda w: dense_params(w.run)["index"]["search_params"],
        device=lambda w: dense_params(w.run)["train"]["device"],
        precision=lambda w: dense_params(w.run)["encode"]["precision"],
    log:
        f"{RESULTS}/{{run}}/logs/dense_search_{{split}}.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/dense_search_{{split}}.tsv"
    threads: 2
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../scripts/dense_search.py"


rule dense_search_with_index:
    input:
        model=f"{RESULTS}/{{run}}/model",
        cache=run_cache_dir,
        index=lambda w: f"{RESULTS}/{doc_run(w.run)}/index/{w.index}.faiss",
        docids=lambda w: f"{RESULTS}/{doc_run(w.run)}/embeddings/corpus.ids.parquet",
    output:
        run=f"{RESULTS}/{{run}}/by_index/{{index}}/runs/{{split}}.parquet",
        trec=f"{RESULTS}/{{run}}/by_index/{{index}}/runs/{{split}}.trec",
        query_npy=temp(f"{RESULTS}/{{run}}/by_index/{{index}}/embeddings/queries_{{split}}.npy"),
        query_ids=temp(f"{RESULTS}/{{run}}/by_index/{{index}}/embeddings/queries_{{split}}.ids.parquet"),
    wildcard_constraints:
        run=DENSE,
    params:
        search=lambda w: dense_params(w.run)["search"],
        search_params=lambda w: dense_params(w.run)["index"]["search_params"],
        device=lambda w: dense_params(w.run)["train"]["device"],
        precision=lambda w: dense_params(w.run)["encode"]["precision"],
    log:
        f"{RESULTS}/{{run}}/logs/dense_search_{{index}}_{{split}}.log",
    benchmark:
        f"{RESULTS}/{{run}}/benchmarks/dense_search_{{index}}_{{split}}.tsv"
    threads: 2
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../scripts/dense_search.py"
