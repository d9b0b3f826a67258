# Faiss indexes over a run's corpus embeddings, and dense retrieval of a split.


rule build_faiss_index:
    input:
        embeddings=LAYOUT.corpus_embeddings("{run}"),
    output:
        index=update(LAYOUT.index("{run}", "{index}")),
    wildcard_constraints:
        run=names_regex(PLAN.encoded_runs),
    params:
        factory=lambda w: PLAN.index_factories(w.run)[w.index],
        train_size=lambda w: run_params(w.run)["index"]["train_size"],
        seed=lambda w: PLAN.seed(w.run),
    message:
        "build index {wildcards.index} of run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "build_faiss_index_{index}"),
    benchmark:
        LAYOUT.benchmark("{run}", "build_faiss_index_{index}")
    threads: 2
    resources:
        **rule_resources("build_faiss_index", mem_mb=8000, runtime=120),
    conda:
        "../environment.yml"
    script:
        "../scripts/build_faiss_index.py"


rule dense_search:
    input:
        # inputs by name, as PLAN.search_inputs gives them for the job: cache, docids, index, model
        unpack(lambda w: PLAN.search_inputs(w.run)),
    output:
        ranking=update(LAYOUT.ranking("{run}", "{split}")),
        trec=update(LAYOUT.ranking_trec("{run}", "{split}")),
        query_npy=update(LAYOUT.query_embeddings("{run}", "{split}")),
        query_ids=update(LAYOUT.query_ids("{run}", "{split}")),
    wildcard_constraints:
        run=names_regex(PLAN.dense_runs),
    params:
        search=lambda w: run_params(w.run)["search"],
        search_params=lambda w: run_params(w.run)["index"]["search_params"],
        device=lambda w: run_params(w.run)["train"]["device"],
        precision=lambda w: run_params(w.run)["encode"]["precision"],
    message:
        "dense search of split {wildcards.split}, run {wildcards.run} (log: {log})"
    log:
        LAYOUT.log("{run}", "dense_search_{split}"),
    benchmark:
        LAYOUT.benchmark("{run}", "dense_search_{split}")
    threads: 2
    resources:
        **rule_resources("dense_search", mem_mb=6000, runtime=60),
        gpu=lambda w: PLAN.inference_gpus(w.run),
    conda:
        "../environment.yml"
    script:
        "../scripts/dense_search.py"


rule dense_search_with_index:
    input:
        # inputs by name, as PLAN.search_inputs gives them for the job: cache, docids, index, model
        unpack(lambda w: PLAN.search_inputs(w.run, w.index)),
    output:
        ranking=update(LAYOUT.ranking("{run}", "{split}", "{index}")),
        trec=update(LAYOUT.ranking_trec("{run}", "{split}", "{index}")),
        query_npy=temp(LAYOUT.query_embeddings("{run}", "{split}", "{index}")),
        query_ids=temp(LAYOUT.query_ids("{run}", "{split}", "{index}")),
    wildcard_constraints:
        run=names_regex(PLAN.dense_runs),
    params:
        search=lambda w: run_params(w.run)["search"],
        search_params=lambda w: run_params(w.run)["index"]["search_params"],
        device=lambda w: run_params(w.run)["train"]["device"],
        precision=lambda w: run_params(w.run)["encode"]["precision"],
    message:
        "dense search of split {wildcards.split}, run {wildcards.run}, index {wildcards.index} (log: {log})"
    log:
        LAYOUT.log("{run}", "dense_search_{index}_{split}"),
    benchmark:
        LAYOUT.benchmark("{run}", "dense_search_{index}_{split}")
    threads: 2
    resources:
        **rule_resources("dense_search_with_index", mem_mb=6000, runtime=60),
        gpu=lambda w: PLAN.inference_gpus(w.run),
    conda:
        "../environment.yml"
    script:
        "../scripts/dense_search.py"
